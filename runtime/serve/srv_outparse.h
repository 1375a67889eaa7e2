/* The incremental output parser: model text in (whole UTF-8 characters,
 * as the detokenizer gives them, in pieces of any size), events out:
 * reasoning text (<think>...</think>), content text, and tool calls
 * (Qwen3: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>).
 * Text that may be the start of a marker is held back until the next
 * piece decides. A tool call starts (its name) as soon as its
 * {"name": "X", "arguments": prefix has arrived; the arguments object then
 * streams as the model writes it, byte for byte (the text the template
 * writes back, so a continued conversation re-tokenizes the same), and
 * the call ends at its </tool_call>. A call in another shape is read
 * whole at </tool_call> and emitted then (arguments re-serialized); one
 * that is not a JSON object with a string name degrades to content text,
 * never an error. */
#ifndef FT_SERVE_SRV_OUTPARSE_H
#define FT_SERVE_SRV_OUTPARSE_H

#include "srv_buf.h"

#include <stddef.h>

typedef enum ft_srv_ev_kind {
    FT_SRV_EV_REASONING = 0,
    FT_SRV_EV_CONTENT = 1,
    FT_SRV_EV_TOOL_START = 2, /* name */
    FT_SRV_EV_TOOL_ARGS = 3,  /* text: arguments JSON (a fragment) */
    FT_SRV_EV_TOOL_END = 4,
} ft_srv_ev_kind_t;

typedef struct ft_srv_ev {
    ft_srv_ev_kind_t kind;
    const char *text; /* not NUL-terminated */
    size_t len;
    const char *name;    /* TOOL_START */
    unsigned tool_index; /* tool events: 0, 1, ... */
} ft_srv_ev_t;

typedef void (*ft_srv_ev_fn)(void *user, const ft_srv_ev_t *ev);

typedef enum ft_srv_parse_state {
    FT_SRV_PS_START = 0, /* nothing but whitespace yet: <think> may open reasoning */
    FT_SRV_PS_REASONING = 1,
    FT_SRV_PS_CONTENT = 2,
    FT_SRV_PS_TOOL = 3, /* inside <tool_call> */
} ft_srv_parse_state_t;

typedef struct ft_srv_outparse {
    ft_srv_parse_state_t state;
    int tools;            /* 0: <tool_call> is plain text (no tools, or tool_choice none) */
    int think_lstrip;     /* drop newlines at the start of reasoning / after </think> */
    ft_srv_buf_t pending; /* text not yet decided (a possible marker start, newlines held) */
    ft_srv_buf_t call;    /* the body of the tool call being read (its head, or all of it
                             when it cannot be streamed) */
    int call_phase;       /* 0 reading the head, 1 streaming the arguments, 2 after them,
                             3 not streamable: read whole */
    int args_depth, args_in_string, args_escape; /* JSON scanner over the arguments */
    unsigned n_calls;
    ft_srv_ev_fn fn;
    void *user;
} ft_srv_outparse_t;

/* reasoning_open: the prompt already opened a <think> block (the
 * generation prompt ends in "<think>\n"); tools: parse <tool_call>. */
void ft_srv_outparse_init(ft_srv_outparse_t *p, int reasoning_open, int tools, ft_srv_ev_fn fn,
                          void *user);
/* The prompt opened a tool call (a forced one) and wrote prefix (n
 * bytes) of it: the output goes on from there. */
void ft_srv_outparse_open_call(ft_srv_outparse_t *p, const char *prefix, size_t n);
void ft_srv_outparse_feed(ft_srv_outparse_t *p, const char *text, size_t n);
/* The end of the output: what is held comes out (an unfinished tool
 * call as content text). */
void ft_srv_outparse_finish(ft_srv_outparse_t *p);
void ft_srv_outparse_free(ft_srv_outparse_t *p);

#endif
