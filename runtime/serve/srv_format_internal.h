/* Between srv_format.c (shared pieces, dispatch) and the two protocol
 * formatters, srv_openai.c and srv_anthropic.c. */
#ifndef FT_SERVE_SRV_FORMAT_INTERNAL_H
#define FT_SERVE_SRV_FORMAT_INTERNAL_H

#include "srv_format.h"

/* "data: <json>\n\n" (event NULL) or "event: E\ndata: <json>\n\n";
 * takes the reference to v. */
void ft_srv_sse(ft_srv_buf_t *out, const char *event, json_t *v);
/* A string from bytes that may not be valid UTF-8 (a token's bytes):
 * invalid bytes become U+FFFD. */
json_t *ft_srv_json_lossy(const char *s, size_t n);

void ft_srv_openai_begin(ft_srv_fmt_t *f);
void ft_srv_openai_event(ft_srv_fmt_t *f, const ft_srv_ev_t *ev);
void ft_srv_openai_end(ft_srv_fmt_t *f);
char *ft_srv_openai_body(ft_srv_fmt_t *f);

void ft_srv_completions_begin(ft_srv_fmt_t *f);
void ft_srv_completions_event(ft_srv_fmt_t *f, const ft_srv_ev_t *ev);
void ft_srv_completions_end(ft_srv_fmt_t *f);
char *ft_srv_completions_body(ft_srv_fmt_t *f);
/* OpenAI's usage object of a finished generation. */
json_t *ft_srv_openai_usage(const ft_srv_fmt_t *f);

void ft_srv_responses_begin(ft_srv_fmt_t *f);
void ft_srv_responses_event(ft_srv_fmt_t *f, const ft_srv_ev_t *ev);
void ft_srv_responses_end(ft_srv_fmt_t *f);
char *ft_srv_responses_body(ft_srv_fmt_t *f);
void ft_srv_responses_ping(ft_srv_fmt_t *f);

void ft_srv_anthropic_begin(ft_srv_fmt_t *f, uint32_t n_prompt);
void ft_srv_anthropic_event(ft_srv_fmt_t *f, const ft_srv_ev_t *ev);
void ft_srv_anthropic_end(ft_srv_fmt_t *f);
char *ft_srv_anthropic_body(ft_srv_fmt_t *f);

#endif
