/* What the output parser's dialects (srv_outparse*.c) share: the event
 * helpers, marker search, and each dialect's call-body reader. */
#ifndef FT_SERVE_SRV_OUTPARSE_INTERNAL_H
#define FT_SERVE_SRV_OUTPARSE_INTERNAL_H

#include "srv_outparse.h"

/* Text out as kind (newlines at the start dropped while think_lstrip). */
void ft_srv_op_emit(ft_srv_outparse_t *p, ft_srv_ev_kind_t kind, const char *s, size_t n);
/* A call starts (its index: p->n_calls++), gets argument text, ends. */
void ft_srv_op_start(ft_srv_outparse_t *p, const char *name);
void ft_srv_op_args(ft_srv_outparse_t *p, const char *s, size_t n);
void ft_srv_op_end(ft_srv_outparse_t *p);
/* Where marker m starts in s[0, n) (n: nowhere); the bytes at the end of
 * s that are a proper prefix of m. */
size_t ft_srv_op_find(const char *s, size_t n, const char *m);
size_t ft_srv_op_partial(const char *s, size_t n, const char *m);

/* Argument text shared by the XML and GLM dialects (srv_outparse_xml.c):
 * s JSON-escaped (no quotes); a value held whole, as JSON when it parses
 * (whitespace around it dropped), else as a JSON string; the called
 * tool's parameters.properties from p->tool_defs; whether its parameter
 * `name` is a string (or untyped). */
void ft_srv_op_args_escaped(ft_srv_outparse_t *p, const char *s, size_t n);
void ft_srv_op_value_whole(ft_srv_outparse_t *p, const char *s, size_t n);
const json_t *ft_srv_op_tool_props(const ft_srv_outparse_t *p, const char *name);
int ft_srv_op_param_is_string(const ft_srv_outparse_t *p, const char *name);

/* GLM calls (srv_outparse_glm.c): the same as XML calls. */
void ft_srv_glm_call_feed(ft_srv_outparse_t *p, const char *s, size_t n);
void ft_srv_glm_call_end(ft_srv_outparse_t *p, int closed);

/* XML calls (srv_outparse_xml.c): text inside <tool_call>, as it
 * arrives; the call's end (closed: at </tool_call>; else the end of the
 * output). A call that never started comes out as content text. */
void ft_srv_xml_call_feed(ft_srv_outparse_t *p, const char *s, size_t n);
void ft_srv_xml_call_end(ft_srv_outparse_t *p, int closed);
/* DeepSeek calls (srv_outparse_deepseek.c), the same. */
void ft_srv_ds_call_feed(ft_srv_outparse_t *p, const char *s, size_t n);
void ft_srv_ds_call_end(ft_srv_outparse_t *p, int closed);
extern const char ft_srv_ds_call_open[], ft_srv_ds_call_close[], ft_srv_ds_calls_open[],
    ft_srv_ds_calls_close[];

/* Harmony (srv_outparse_harmony.c): one decision on the front of the
 * pending text (bytes consumed; 0: wait, unless the state changed), and
 * the end of the output. */
size_t ft_srv_harmony_step(ft_srv_outparse_t *p, const char *s, size_t n);
void ft_srv_harmony_finish(ft_srv_outparse_t *p, const char *s, size_t n);

#endif
