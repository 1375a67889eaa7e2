/* response_format {"type": "json_object"}: output constrained to one JSON
 * object (RFC 8259), through the sampler's token filter (freetoken.h,
 * ft_sampler_options_t.filter).
 *
 * An incremental recognizer over the bytes of the generated text: a
 * pushdown automaton (objects and arrays nested up to FT_SRV_JSON_MAX_DEPTH,
 * strings with escapes and well-formed UTF-8, numbers, true/false/null;
 * \u escapes as the grammar has them, a lone surrogate included), which accepts
 * a prefix of a JSON text whose top-level value is an object. Before each
 * sampled token the filter feeds it the tokens generated since the last
 * call and rules out every token whose bytes cannot continue the text:
 * end-of-generation tokens only once the object is closed, after which
 * nothing else; special tokens (<|im_start|>, <think>, ...) never; runs of
 * whitespace outside strings at most FT_SRV_JSON_MAX_WS bytes (a model
 * cannot pad forever). max_tokens may still cut the object short
 * (finish_reason "length"), as OpenAI's does. */
#ifndef FT_SERVE_SRV_JSON_FILTER_H
#define FT_SERVE_SRV_JSON_FILTER_H

#include "freetoken.h"

#include <stddef.h>
#include <stdint.h>

#define FT_SRV_JSON_MAX_DEPTH 32
#define FT_SRV_JSON_MAX_WS 16

/* Events a schema layer (srv_json_schema.h) sees as the recognizer reads
 * bytes; its hook returns 0 to reject the byte. */
enum ft_srv_json_event {
    FT_SRV_JSON_EV_VSTART, /* a value starts with byte c ({, [, ", -, digit, t, f, n) */
    FT_SRV_JSON_EV_VBYTE,  /* c: a later byte of a string, number or literal value */
    FT_SRV_JSON_EV_VEND,   /* that scalar value is complete (c: unused) */
    FT_SRV_JSON_EV_KSTART, /* an object key starts (its opening quote) */
    FT_SRV_JSON_EV_KBYTE,  /* c: a byte of the key, escapes as written, not the quotes */
    FT_SRV_JSON_EV_KEND,   /* the key's closing quote */
    FT_SRV_JSON_EV_COMMA,  /* a ',' between an object's members */
    FT_SRV_JSON_EV_CLOSE,  /* c: '}' or ']' closes the innermost container */
};

struct ft_srv_json;
typedef int (*ft_srv_json_hook_fn)(struct ft_srv_json *j, int event, unsigned char c);

typedef struct ft_srv_json {
    uint8_t mode;             /* ft_srv_json_mode (srv_json_filter.c) */
    uint8_t depth;            /* open containers */
    uint8_t key;              /* the string being read is an object key */
    uint8_t utf8_left;        /* continuation bytes a string still needs */
    uint8_t utf8_lo, utf8_hi; /* the next one's range (narrower after E0, ED, F0, F4) */
    uint8_t count;            /* \u hex digits read; a literal's bytes matched */
    uint8_t ws;               /* whitespace bytes in a row */
    const char *lit;          /* the literal being matched ("true", "false", "null") */
    uint64_t stack;           /* bit d: container d is an object (1) or an array (0) */
    ft_srv_json_hook_fn hook; /* NULL, or a schema layer's (it finds its state from j) */
} ft_srv_json_t;

void ft_srv_json_init(ft_srv_json_t *j);
/* Feeds n bytes: 1 when the text so far is still a prefix of a JSON
 * object, 0 (state unspecified) when not. */
int ft_srv_json_feed(ft_srv_json_t *j, const char *s, size_t n);
/* 1 once the top-level object is complete. */
int ft_srv_json_done(const ft_srv_json_t *j);

struct ft_srv_js_schema;
struct ft_srv_js_state;

/* The filter's state for one request. */
typedef struct ft_srv_json_filter {
    const ft_engine_t *engine;
    ft_srv_json_t j;
    struct ft_srv_js_state *js; /* json_schema: the schema's recognizer (instead of j) */
    int broken;                 /* the text left JSON (a forced token): constrain no more */
    uint32_t at;                /* history positions fed so far */
    uint8_t *special;           /* [n_vocab] 1: a special token (never allowed) */
    uint32_t n_vocab;
} ft_srv_json_filter_t;

/* start: the history position where generation begins (the prompt's
 * length); schema: NULL (any JSON object) or the compiled json_schema
 * (srv_json_schema.h; it must outlive the filter). 0 on out of memory. */
int ft_srv_json_filter_init(ft_srv_json_filter_t *f, const ft_engine_t *engine, uint32_t start,
                            const struct ft_srv_js_schema *schema);
void ft_srv_json_filter_free(ft_srv_json_filter_t *f);
/* The ft_sampler_options_t.filter callback (user: the filter). */
void ft_srv_json_filter_fn(void *user, const int32_t *history, uint32_t n_history, uint8_t *allowed,
                           uint32_t n_vocab);

#endif
