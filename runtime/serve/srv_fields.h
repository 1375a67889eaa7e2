/* Typed reads of request fields with OpenAI-style errors that name the
 * field ("messages[2].content"). Each returns 1 when the field is absent
 * (leaving *out) or valid, 0 with *err filled when it has the wrong type
 * or is out of range. Shared by the OpenAI and Anthropic parsers. */
#ifndef FT_SERVE_SRV_FIELDS_H
#define FT_SERVE_SRV_FIELDS_H

#include "srv_buf.h"
#include "srv_conv.h"

int ft_srv_get_bool(json_t *obj, const char *key, int *out, ft_srv_error_t *err);
int ft_srv_get_number(json_t *obj, const char *key, double lo, double hi, float *out,
                      ft_srv_error_t *err);
int ft_srv_get_u32(json_t *obj, const char *key, uint32_t lo, uint32_t hi, uint32_t *out,
                   ft_srv_error_t *err);
int ft_srv_get_string(json_t *obj, const char *key, const char **out, ft_srv_error_t *err);
/* stop / stop_sequences: a string or an array of non-empty strings. */
int ft_srv_get_stops(ft_srv_conv_t *c, json_t *obj, const char *key, ft_srv_error_t *err);
/* seed: any integer (its two's complement bits are the sampler's seed). */
int ft_srv_get_seed(ft_srv_conv_t *c, json_t *obj, const char *key, ft_srv_error_t *err);

#endif
