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
 * never an error.
 *
 * The other families' dialects (ft_srv_outparse_set_dialect) share the
 * reasoning and content handling and differ in their calls:
 *   XML (Qwen3.5/3.6, Qwen3-Coder): <tool_call>\n<function=NAME>\n
 *     <parameter=P>\nVALUE\n</parameter>\n...</function>\n</tool_call>;
 *     the call starts at its <function=NAME>, each parameter streams as
 *     "P": VALUE of a JSON object, string values (by the tool's schema;
 *     unknown ones too) escaped as they arrive, others held until their
 *     </parameter> and written as JSON when they parse (else as a string);
 *   DEEPSEEK (V3.1): <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME
 *     <｜tool▁sep｜>ARGS<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>; the call
 *     starts at the separator, ARGS stream as written;
 *   GLM (GLM-4.5/4.6, srv_outparse_glm.c): <tool_call>NAME\n<arg_key>K
 *     </arg_key>\n<arg_value>V</arg_value>...</tool_call>; the call starts
 *     at the end of its name, values stream as the XML dialect's;
 *   HARMONY (gpt-oss, srv_outparse_harmony.c): messages
 *     [<|start|>assistant]<|channel|>C[ to=functions.NAME][ <|constrain|>json]
 *     <|message|>BODY<|end|> (or <|call|>, <|return|>): channel analysis is
 *     reasoning, final and commentary content, a message to functions.NAME
 *     a call whose body streams as its arguments.
 * A call whose head never forms (no name) degrades to content text; one
 * that started and then breaks ends with what it had. */
#ifndef FT_SERVE_SRV_OUTPARSE_H
#define FT_SERVE_SRV_OUTPARSE_H

#include "srv_buf.h"

#include <jansson.h>
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
    FT_SRV_PS_TOOL = 3,     /* inside <tool_call> */
    FT_SRV_PS_H_HEADER = 4, /* harmony: a message header, up to <|message|> */
    FT_SRV_PS_H_TEXT = 5,   /* harmony: a message body (h_kind) */
    FT_SRV_PS_H_ARGS = 6,   /* harmony: a call's body */
} ft_srv_parse_state_t;

typedef enum ft_srv_dialect {
    FT_SRV_DIALECT_QWEN3 = 0, /* JSON in <tool_call> */
    FT_SRV_DIALECT_XML = 1,   /* <function=NAME><parameter=P> in <tool_call> */
    FT_SRV_DIALECT_DEEPSEEK = 2,
    FT_SRV_DIALECT_HARMONY = 3,
    FT_SRV_DIALECT_GLM = 4, /* <tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value> */
} ft_srv_dialect_t;

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
    ft_srv_dialect_t dialect;
    const json_t *tool_defs; /* the request's tools (borrowed; NULL: none), for parameter types */
    int xml_state;           /* XML, GLM: 0 between parameters, 1 in a key (GLM), 2 in a
                                string value, 3 in another value, 4 after </function>, 5
                                before a value (GLM) */
    int glm_string;          /* GLM: the value that comes next is a string */
    int xml_lead;            /* XML: the newline after <parameter=P> may still come */
    unsigned xml_n_params;
    const json_t *xml_props; /* the called tool's parameters.properties (borrowed) */
    ft_srv_ev_kind_t h_kind; /* harmony: what the current body is */
} ft_srv_outparse_t;

/* reasoning_open: the prompt already opened a <think> block (the
 * generation prompt ends in "<think>\n"); tools: parse <tool_call>. */
void ft_srv_outparse_init(ft_srv_outparse_t *p, int reasoning_open, int tools, ft_srv_ev_fn fn,
                          void *user);
/* Switches p (just initialized) to dialect d; tool_defs: the request's
 * tools array (borrowed, may be NULL), read for parameter types. */
void ft_srv_outparse_set_dialect(ft_srv_outparse_t *p, ft_srv_dialect_t d, const json_t *tool_defs);
/* The prompt opened a tool call (a forced one) and wrote prefix (n
 * bytes) of it: the output goes on from there (Qwen3, XML, DeepSeek: the
 * text after the call's opening marker; harmony: the start of the
 * message header). */
void ft_srv_outparse_open_call(ft_srv_outparse_t *p, const char *prefix, size_t n);
void ft_srv_outparse_feed(ft_srv_outparse_t *p, const char *text, size_t n);
/* The end of the output: what is held comes out (an unfinished tool
 * call as content text). */
void ft_srv_outparse_finish(ft_srv_outparse_t *p);
void ft_srv_outparse_free(ft_srv_outparse_t *p);

#endif
