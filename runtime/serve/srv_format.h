/* The protocol formatters: turn generation events into OpenAI chat
 * completion or Anthropic messages responses, streamed (SSE frames
 * appended to out as they form) or whole (built at the end). Each
 * formatter's event function is the ft_srv_ev_fn given to the
 * generation. */
#ifndef FT_SERVE_SRV_FORMAT_H
#define FT_SERVE_SRV_FORMAT_H

#include "srv_buf.h"
#include "srv_conv.h"
#include "srv_gen.h"

typedef enum ft_srv_proto {
    FT_SRV_OPENAI = 0,
    FT_SRV_ANTHROPIC = 1,
    FT_SRV_COMPLETIONS = 2, /* OpenAI's legacy /v1/completions: raw text, no template */
    FT_SRV_RESPONSES = 3,   /* OpenAI's Responses API (/v1/responses) */
} ft_srv_proto_t;

typedef struct ft_srv_fmt {
    ft_srv_proto_t proto;
    const ft_srv_conv_t *conv;
    ft_srv_gen_t *gen; /* set before events flow */
    const ft_engine_t *engine;
    int stream;
    char id[48];
    long long created;
    const char *model;
    ft_srv_buf_t out; /* SSE frames not yet sent */
    /* whole responses, and the Anthropic block being streamed */
    ft_srv_buf_t content, reasoning;
    json_t *calls;  /* [{id, name, arguments}] */
    int block_open; /* Anthropic: -1 none, else the kind of the open block */
    unsigned n_blocks;
    uint32_t n_logprobs_sent;
    /* Responses: the open item's ids, and the events' sequence number */
    char item_id[48], call_id[48];
    unsigned seq;
} ft_srv_fmt_t;

void ft_srv_fmt_init(ft_srv_fmt_t *f, ft_srv_proto_t proto, const ft_srv_conv_t *c,
                     const ft_engine_t *e, int stream);
void ft_srv_fmt_free(ft_srv_fmt_t *f);
/* The first frames of a stream (role chunk / message_start + ping),
 * before prefill; n_prompt: the prompt's tokens. */
void ft_srv_fmt_begin(ft_srv_fmt_t *f, uint32_t n_prompt);
void ft_srv_fmt_event(void *fmt, const ft_srv_ev_t *ev);
/* A keepalive frame (a comment for OpenAI, event: ping for Anthropic). */
void ft_srv_fmt_ping(ft_srv_fmt_t *f);
/* After the generation finished: the last frames of a stream, or the
 * whole JSON body (malloc'ed) of a non-streamed response. */
void ft_srv_fmt_end(ft_srv_fmt_t *f);
char *ft_srv_fmt_body(ft_srv_fmt_t *f);

/* An error body in the protocol's shape, malloc'ed. */
char *ft_srv_error_body(ft_srv_proto_t proto, const ft_srv_error_t *err);
/* The same as an SSE frame that ends a stream (appended to out). */
void ft_srv_error_frame(ft_srv_proto_t proto, const ft_srv_error_t *err, ft_srv_buf_t *out);

/* Makes an id: prefix + 24 random hex digits. */
void ft_srv_make_id(char *out, size_t n, const char *prefix);

#endif
