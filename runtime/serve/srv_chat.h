/* From a chat request body to the prompt tokens, shared by the
 * generating endpoints and count_tokens (which must count exactly what
 * /v1/messages would run): parse, render with the model's template,
 * tokenize, check the context. */
#ifndef FT_SERVE_SRV_CHAT_H
#define FT_SERVE_SRV_CHAT_H

#include "srv_conv.h"
#include "srv_format.h"
#include "srv_outparse.h"
#include "srv_template.h"

typedef struct ft_srv_model {
    ft_engine_t *engine;
    ft_srv_family_t family;
    uint32_t n_ctx, n_vocab;
} ft_srv_model_t;

/* Fills m from the engine's template and vocabulary. */
void ft_srv_model_init(ft_srv_model_t *m, ft_engine_t *engine, uint32_t n_ctx);

typedef struct ft_srv_prompt {
    int32_t *ids; /* released with ft_engine_free */
    uint32_t n_ids;
    int reasoning_open;       /* the rendered prompt ends inside <think> */
    int tools;                /* tool calls are parsed from the output */
    ft_srv_dialect_t dialect; /* how the model writes them (its family's) */
    char *call_prefix;        /* a forced tool call: what the prompt already wrote after the call's
                                 opening marker (harmony: of the message header)
                                 (malloc'ed; NULL: none) */
    /* The renderer's message boundaries as token positions, ascending, in
     * (0, n_ids) (malloc'ed; none for raw completions). Only boundaries
     * where tokenizing the text piece by piece gives the whole text's
     * tokens are kept, so a position is always a token boundary of ids. */
    uint32_t *bounds;
    uint32_t n_bounds;
    int side; /* a side request (a title, a summary, a quota probe): its cache entries go
                 first (FT_CACHE_LOW) */
} ft_srv_prompt_t;

/* A side request: no tools and max_tokens at most this. Claude Code's
 * title and summary requests, quota probes and the like. */
#define FT_SRV_SIDE_MAX_TOKENS 512

/* count_only: count_tokens (no context check, max_tokens optional).
 * 0 and *err on a bad request; c must be ft_srv_conv_free'd either way. */
int ft_srv_prepare(const ft_srv_model_t *m, ft_srv_proto_t proto, int count_only, const char *body,
                   size_t n, ft_srv_conv_t *c, ft_srv_prompt_t *out, ft_srv_error_t *err);

void ft_srv_prompt_free(const ft_srv_model_t *m, ft_srv_prompt_t *p);

/* The operations endpoints, each from a request body to a JSON reply
 * (*out, a new reference) or 0 and *err:
 *   POST /tokenize        {"content": str, "add_special": bool, "parse_special": bool}
 *                         -> {"tokens": [ids]}
 *   POST /detokenize      {"tokens": [ids]} -> {"content": str}
 *   POST /apply-template  an OpenAI chat body -> {"prompt": str} (what
 *                         /v1/chat/completions would run) */
int ft_srv_op_tokenize(const ft_srv_model_t *m, const char *body, size_t n, json_t **out,
                       ft_srv_error_t *err);
int ft_srv_op_detokenize(const ft_srv_model_t *m, const char *body, size_t n, json_t **out,
                         ft_srv_error_t *err);
int ft_srv_op_apply_template(const ft_srv_model_t *m, const char *body, size_t n, json_t **out,
                             ft_srv_error_t *err);
#endif
