/* The server's protocol-neutral view of a chat request: what the OpenAI
 * (/v1/chat/completions) and Anthropic (/v1/messages) bodies are parsed
 * into, what the chat template renderer reads, and what generation takes.
 * Strings point into the request's JSON (kept alive by root) or into
 * owned, which the conversation frees. */
#ifndef FT_SERVE_SRV_CONV_H
#define FT_SERVE_SRV_CONV_H

#include "freetoken.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef enum ft_srv_role {
    FT_SRV_SYSTEM = 0,
    FT_SRV_USER = 1,
    FT_SRV_ASSISTANT = 2,
    FT_SRV_TOOL = 3,
} ft_srv_role_t;

typedef struct ft_srv_tool_call {
    const char *id;
    const char *name;
    const char *arguments; /* JSON text, written into the prompt verbatim (as the template
                              writes a string `arguments`) */
} ft_srv_tool_call_t;

typedef struct ft_srv_msg {
    ft_srv_role_t role;
    const char *content;   /* never NULL ("" when the message had none) */
    const char *reasoning; /* NULL: none given (the template then looks for <think> in the
                              content); "" is an empty reasoning */
    ft_srv_tool_call_t *calls;
    size_t n_calls;
    const char *tool_call_id; /* tool messages */
} ft_srv_msg_t;

/* An error in the shape both protocols need: the HTTP status, a type
 * (OpenAI's error.type; the Anthropic formatter maps it), the field it is
 * about ("" when none), a code ("" when none) and the message. */
typedef struct ft_srv_error {
    int http;
    const char *type; /* "invalid_request_error", "authentication_error", "not_found_error",
                         "request_too_large", "server_error", "overloaded_error" */
    char param[96];
    char code[48];
    char message[512];
} ft_srv_error_t;

void ft_srv_error_set(ft_srv_error_t *err, int http, const char *type, const char *param,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

typedef struct ft_srv_conv {
    json_t *root; /* the parsed body (a reference) */
    const char *model;
    ft_srv_msg_t *msgs;
    size_t n_msgs;
    json_t *tools; /* NULL, or an array of {"type":"function","function":{name,description,
                      parameters}} as the template renders them (borrowed from root or owned) */
    int stream;
    int include_usage;        /* OpenAI stream_options.include_usage */
    int enable_thinking;      /* -1: the template's default, 0 off, 1 on */
    int tool_choice_none;     /* tools stay in the prompt, calls are not parsed */
    int tool_choice_required; /* the reply is a tool call (OpenAI "required", Anthropic "any") */
    const char *tool_choice_name; /* the reply is a call of this tool (NULL: any) */
    int parallel_tool_calls;      /* 0: stop after the first call */
    uint32_t max_tokens;          /* 0: up to the context */
    const char **stops;
    size_t n_stops;
    int logprobs;
    int json_object; /* response_format {"type": "json_object"}: the reply is one JSON object */
    struct ft_srv_js_schema *json_schema; /* response_format json_schema, compiled (owned;
                                             srv_json_schema.h); json_object is set too */
    ft_sampler_options_t sampling;
    int has_seed;
    ft_logit_bias_t *bias;
    /* /v1/completions: the prompt as text, or as token ids; no template */
    int raw;
    const char *prompt;
    size_t prompt_len;
    json_t *prompt_ids;
    int echo; /* the reply starts with the prompt's text */
    /* template inputs some families print: the reasoning effort ("low",
     * "medium", "high"; NULL: the template's default) and today's date
     * ("YYYY-MM-DD"; NULL: the UTC date now) */
    const char *reasoning_effort;
    const char *today;
    /* owned strings and arrays, freed with the conversation */
    void **owned;
    size_t n_owned, cap_owned;
    json_t *owned_json; /* an array holding JSON values made while converting */
} ft_srv_conv_t;

void ft_srv_conv_init(ft_srv_conv_t *c);
void ft_srv_conv_free(ft_srv_conv_t *c);
/* Allocations tied to the conversation: NULL on out of memory. */
void *ft_srv_conv_alloc(ft_srv_conv_t *c, size_t n_bytes);
char *ft_srv_conv_strdup(ft_srv_conv_t *c, const char *s, size_t n);
/* Keeps v (a new reference) alive as long as the conversation; returns v. */
json_t *ft_srv_conv_keep(ft_srv_conv_t *c, json_t *v);

/* Most nested levels accepted in a request body, and most messages,
 * tools, stop strings and logit_bias entries. */
#define FT_SRV_MAX_DEPTH 64
#define FT_SRV_MAX_MESSAGES 100000
#define FT_SRV_MAX_STOPS 16

/* Parses a body (n bytes, any content) into root: an object, no deeper
 * than FT_SRV_MAX_DEPTH, no duplicate keys. 0 and *err filled on error. */
int ft_srv_json_parse(const char *body, size_t n, json_t **out_root, ft_srv_error_t *err);

/* POST /v1/chat/completions: fills c from the body (c takes a reference
 * to root). n_vocab bounds logit_bias ids. 0 and *err on a bad request. */
int ft_srv_openai_parse(json_t *root, uint32_t n_vocab, ft_srv_conv_t *c, ft_srv_error_t *err);

/* POST /v1/completions: prompt (a string, one string in an array, or
 * token ids), max_tokens (default 16), echo, logprobs (0..5: the top
 * tokens reported), the sampling fields. */
int ft_srv_completions_parse(json_t *root, uint32_t n_vocab, ft_srv_conv_t *c, ft_srv_error_t *err);

/* POST /v1/responses (srv_responses_req.c): instructions, input items,
 * function tools, max_output_tokens. */
int ft_srv_responses_parse(json_t *root, ft_srv_conv_t *c, ft_srv_error_t *err);

/* POST /v1/messages and /v1/messages/count_tokens: the same for an
 * Anthropic body (count_tokens: max_tokens not required). */
int ft_srv_anthropic_parse(json_t *root, int count_only, ft_srv_conv_t *c, ft_srv_error_t *err);

/* A forced tool call (tool_choice_required) needs tools, and a named one
 * one of them: 0 and *err (400, param) otherwise. */
int ft_srv_conv_check_tool_choice(const ft_srv_conv_t *c, const char *param, ft_srv_error_t *err);

/* JSON text of v as Python's json.dumps(v, ensure_ascii=False) writes it
 * (", " and ": " separators, key order kept, floats in repr's shortest
 * form, controls as lower-case \u00xx), which is what the HF chat
 * templates' tojson gives; malloc'ed, NULL on out of memory. */
char *ft_srv_tojson(const json_t *v);

#endif
