/* What the per-family chat template renderers (srv_template_*.c) share:
 * the Python string methods and Jinja filters the templates call, and
 * each family's renderer. A renderer writes c's messages into b; when
 * ends is not NULL it also records, for each message i, the byte offset
 * in b where that message's text ends (messages a template merges or
 * drops end where the text written so far ends), so a caller can map
 * message boundaries to tokens. 0 and *err when the template would
 * refuse the conversation (its raise_exception). */
#ifndef FT_SERVE_SRV_TEMPLATE_INTERNAL_H
#define FT_SERVE_SRV_TEMPLATE_INTERNAL_H

#include "srv_buf.h"
#include "srv_conv.h"

#include <stddef.h>

/* Python's str.strip() (all Unicode whitespace, as str.isspace) on
 * s[0, n): *out, *out_n. */
void ft_srv_py_strip(const char *s, size_t n, const char **out, size_t *out_n);

/* Where needle first occurs in s[0, n), or NULL. */
const char *ft_srv_memstr(const char *s, size_t n, const char *needle);

/* The reasoning split the Qwen templates apply to content that holds a
 * "</think>": reasoning = content.split('</think>')[0].rstrip('\n')
 * .split('<think>')[-1].lstrip('\n'), content = content.split('</think>')
 * [-1].lstrip('\n'). 0 (nothing set) when there is no "</think>". */
int ft_srv_split_think_text(const char *s, size_t n, const char **r, size_t *rn, const char **ct,
                            size_t *cn);

/* Python's str(v) for a JSON scalar (True, None, 3, 0.5, the string
 * itself); arrays and objects as tojson. Appended to b. */
void ft_srv_py_str(ft_srv_buf_t *b, const json_t *v);

/* Python's repr(v) (and so str() of a list or dict): strings quoted. */
void ft_srv_py_repr(ft_srv_buf_t *b, const json_t *v);

/* Appends tojson(v) (ft_srv_tojson) to b. */
void ft_srv_buf_tojson(ft_srv_buf_t *b, const json_t *v);

/* A tool call's arguments text as the value a template sees: the JSON
 * parsed (a new reference), or NULL when it is not JSON. */
json_t *ft_srv_call_args(const char *arguments);

/* The tools a template iterates: NULL when c has none (an empty array is
 * "no tools" to Jinja too). */
size_t ft_srv_n_tools(const ft_srv_conv_t *c);

int ft_srv_render_qwen35(const ft_srv_conv_t *c, int add_generation_prompt, ft_srv_buf_t *b,
                         size_t *ends, ft_srv_error_t *err);
int ft_srv_render_harmony(const ft_srv_conv_t *c, int add_generation_prompt, ft_srv_buf_t *b,
                          size_t *ends, ft_srv_error_t *err);
int ft_srv_render_qwen3_coder(const ft_srv_conv_t *c, int add_generation_prompt, ft_srv_buf_t *b,
                              size_t *ends, ft_srv_error_t *err);
int ft_srv_render_glm(const ft_srv_conv_t *c, int add_generation_prompt, ft_srv_buf_t *b,
                      size_t *ends, ft_srv_error_t *err);
int ft_srv_render_deepseek(const ft_srv_conv_t *c, int add_generation_prompt, ft_srv_buf_t *b,
                           size_t *ends, ft_srv_error_t *err);

/* The template's refusal: 400 on "messages" with its message. */
int ft_srv_template_refuse(ft_srv_error_t *err, const char *message);

#endif
