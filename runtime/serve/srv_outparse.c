/* Incremental output parser (srv_outparse.h). Everything not yet decided
 * sits in pending; each feed appends to it and then takes off the front
 * what the markers seen so far decide. */
#include "srv_outparse.h"

#include "srv_outparse_internal.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "srv_conv.h"

static const char ft_srv_think_open[] = "<think>", ft_srv_think_close[] = "</think>";
static const char ft_srv_call_open[] = "<tool_call>", ft_srv_call_close[] = "</tool_call>";

void ft_srv_outparse_init(ft_srv_outparse_t *p, int reasoning_open, int tools, ft_srv_ev_fn fn,
                          void *user)
{
    memset(p, 0, sizeof(*p));
    p->state = reasoning_open ? FT_SRV_PS_REASONING : FT_SRV_PS_START;
    p->think_lstrip = reasoning_open;
    p->tools = tools;
    p->fn = fn;
    p->user = user;
}

void ft_srv_outparse_set_dialect(ft_srv_outparse_t *p, ft_srv_dialect_t d, const json_t *tool_defs)
{
    p->dialect = d;
    p->tool_defs = tool_defs;
    if (d == FT_SRV_DIALECT_HARMONY) { /* the reply starts with a message header */
        p->state = FT_SRV_PS_H_HEADER;
        p->think_lstrip = 0;
    }
}

void ft_srv_outparse_free(ft_srv_outparse_t *p)
{
    ft_srv_buf_free(&p->pending);
    ft_srv_buf_free(&p->call);
}

void ft_srv_op_emit(ft_srv_outparse_t *p, ft_srv_ev_kind_t kind, const char *s, size_t n)
{
    if (p->think_lstrip) {
        while (n && (*s == '\n' || (kind == FT_SRV_EV_CONTENT && (*s == ' ' || *s == '\r'))))
            s++, n--;
        if (!n) return;
        p->think_lstrip = 0;
    }
    if (!n) return;
    const ft_srv_ev_t ev = {.kind = kind, .text = s, .len = n};
    p->fn(p->user, &ev);
}

#define ft_srv_emit ft_srv_op_emit

void ft_srv_op_start(ft_srv_outparse_t *p, const char *name)
{
    const ft_srv_ev_t ev = {.kind = FT_SRV_EV_TOOL_START, .name = name, .tool_index = p->n_calls++};
    p->fn(p->user, &ev);
}

void ft_srv_op_args(ft_srv_outparse_t *p, const char *s, size_t n)
{
    if (!n) return;
    const ft_srv_ev_t ev = {
        .kind = FT_SRV_EV_TOOL_ARGS, .text = s, .len = n, .tool_index = p->n_calls - 1};
    p->fn(p->user, &ev);
}

void ft_srv_op_end(ft_srv_outparse_t *p)
{
    const ft_srv_ev_t ev = {.kind = FT_SRV_EV_TOOL_END, .tool_index = p->n_calls - 1};
    p->fn(p->user, &ev);
}

/* Where marker (m, mn bytes) starts in s, or n when it does not occur. */
static size_t ft_srv_find(const char *s, size_t n, const char *m, size_t mn)
{
    for (size_t i = 0; i + mn <= n; i++)
        if (!memcmp(s + i, m, mn)) return i;
    return n;
}

/* Bytes at the end of s that are a proper prefix of marker m. */
static size_t ft_srv_partial(const char *s, size_t n, const char *m, size_t mn)
{
    for (size_t k = mn - 1 < n ? mn - 1 : n; k > 0; k--)
        if (!memcmp(s + n - k, m, k)) return k;
    return 0;
}

size_t ft_srv_op_find(const char *s, size_t n, const char *m)
{
    return ft_srv_find(s, n, m, strlen(m));
}

size_t ft_srv_op_partial(const char *s, size_t n, const char *m)
{
    return ft_srv_partial(s, n, m, strlen(m));
}

/* The markers that open and close a call in p's dialect. */
static const char *ft_srv_call_open_m(const ft_srv_outparse_t *p)
{
    return p->dialect == FT_SRV_DIALECT_DEEPSEEK ? ft_srv_ds_call_open : ft_srv_call_open;
}

static const char *ft_srv_call_close_m(const ft_srv_outparse_t *p)
{
    return p->dialect == FT_SRV_DIALECT_DEEPSEEK ? ft_srv_ds_call_close : ft_srv_call_close;
}

/* Emits s[0, n) minus a tail that may start marker m and trailing
 * newlines (a newline before a marker belongs to the markup); returns
 * the bytes emitted. */
static size_t ft_srv_emit_safe(ft_srv_outparse_t *p, ft_srv_ev_kind_t kind, const char *s, size_t n,
                               const char *m, size_t mn)
{
    size_t keep = n - (m ? ft_srv_partial(s, n, m, mn) : 0);
    while (keep && s[keep - 1] == '\n')
        keep--;
    ft_srv_emit(p, kind, s, keep);
    return keep;
}

/* The head of a streamable call: ws { ws "name" ws : ws "<name>" ws , ws
 * "arguments" ws : ws, followed by '{'. 1 when s holds it all (*name:
 * malloc'ed, *head: its bytes, up to the '{'), 0 when more text is needed,
 * -1 when s cannot start one (another key order, non-object arguments). */
static int ft_srv_call_head(const char *s, size_t n, char **name, size_t *head)
{
    size_t i = 0;
#define FT_WS()                                                                                    \
    while (i < n && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t'))                 \
        i++;                                                                                       \
    if (i == n) return 0
#define FT_LIT(lit)                                                                                \
    for (const char *l = (lit); *l; l++, i++) {                                                    \
        if (i == n) return 0;                                                                      \
        if (s[i] != *l) return -1;                                                                 \
    }
    FT_WS();
    FT_LIT("{");
    FT_WS();
    FT_LIT("\"name\"");
    FT_WS();
    FT_LIT(":");
    FT_WS();
    if (s[i] != '"') return -1;
    const size_t name_at = i++;
    for (int esc = 0;; i++) {
        if (i == n) return 0;
        if (esc)
            esc = 0;
        else if (s[i] == '\\')
            esc = 1;
        else if (s[i] == '"')
            break;
    }
    const size_t name_end = ++i;
    FT_WS();
    FT_LIT(",");
    FT_WS();
    FT_LIT("\"arguments\"");
    FT_WS();
    FT_LIT(":");
    FT_WS();
    if (s[i] != '{') return -1;
#undef FT_WS
#undef FT_LIT
    json_t *v = json_loadb(s + name_at, name_end - name_at, JSON_DECODE_ANY, NULL);
    if (!json_is_string(v)) {
        json_decref(v);
        return -1;
    }
    *name = strdup(json_string_value(v));
    json_decref(v);
    if (!*name) return -1;
    *head = i;
    return 1;
}

/* Streams argument bytes while the object is open; returns how many of
 * s[0, n) belong to it (the rest follows its closing brace). */
static size_t ft_srv_args_stream(ft_srv_outparse_t *p, const char *s, size_t n)
{
    size_t i = 0;
    for (; i < n && p->call_phase == 1; i++) {
        const char c = s[i];
        if (p->args_in_string) {
            if (p->args_escape)
                p->args_escape = 0;
            else if (c == '\\')
                p->args_escape = 1;
            else if (c == '"')
                p->args_in_string = 0;
        } else if (c == '"') {
            p->args_in_string = 1;
        } else if (c == '{' || c == '[') {
            p->args_depth++;
        } else if (c == '}' || c == ']') {
            if (--p->args_depth == 0) p->call_phase = 2;
        }
    }
    if (i) {
        const ft_srv_ev_t ev = {
            .kind = FT_SRV_EV_TOOL_ARGS, .text = s, .len = i, .tool_index = p->n_calls - 1};
        p->fn(p->user, &ev);
    }
    return i;
}

/* Text inside <tool_call>, as it arrives. */
static void ft_srv_call_feed(ft_srv_outparse_t *p, const char *s, size_t n)
{
    if (p->dialect == FT_SRV_DIALECT_XML) {
        ft_srv_xml_call_feed(p, s, n);
        return;
    }
    if (p->dialect == FT_SRV_DIALECT_DEEPSEEK) {
        ft_srv_ds_call_feed(p, s, n);
        return;
    }
    if (p->dialect == FT_SRV_DIALECT_GLM) {
        ft_srv_glm_call_feed(p, s, n);
        return;
    }
    if (p->call_phase == 1) {
        ft_srv_args_stream(p, s, n);
        return;
    }
    if (p->call_phase == 2) return; /* after the arguments: the closing brace, whitespace */
    ft_srv_buf_put(&p->call, s, n);
    if (p->call_phase == 3) return;
    char *name = NULL;
    size_t head = 0;
    const int r = ft_srv_call_head(p->call.data, p->call.len, &name, &head);
    if (r < 0) p->call_phase = 3;
    if (r <= 0) return;
    const ft_srv_ev_t ev = {.kind = FT_SRV_EV_TOOL_START, .name = name, .tool_index = p->n_calls++};
    p->fn(p->user, &ev);
    free(name);
    p->call_phase = 1;
    p->args_depth = p->args_in_string = p->args_escape = 0;
    ft_srv_args_stream(p, p->call.data + head, p->call.len - head);
    ft_srv_buf_free(&p->call);
}

static void ft_srv_call_done(ft_srv_outparse_t *p)
{
    const char *body = p->call.data ? p->call.data : "";
    json_t *v = json_loadb(body, p->call.len, JSON_REJECT_DUPLICATES, NULL);
    json_t *name = json_object_get(v, "name"), *args = json_object_get(v, "arguments");
    char *args_text = NULL;
    if (json_is_string(name) && (!args || json_is_object(args)))
        args_text = args ? ft_srv_tojson(args) : strdup("{}");
    if (args_text) {
        const unsigned idx = p->n_calls++;
        ft_srv_ev_t ev = {
            .kind = FT_SRV_EV_TOOL_START, .name = json_string_value(name), .tool_index = idx};
        p->fn(p->user, &ev);
        ev = (ft_srv_ev_t){.kind = FT_SRV_EV_TOOL_ARGS,
                           .text = args_text,
                           .len = strlen(args_text),
                           .tool_index = idx};
        p->fn(p->user, &ev);
        ev = (ft_srv_ev_t){.kind = FT_SRV_EV_TOOL_END, .tool_index = idx};
        p->fn(p->user, &ev);
    } else {
        /* not a call we can parse: the text as the model wrote it */
        ft_srv_emit(p, FT_SRV_EV_CONTENT, ft_srv_call_open, sizeof(ft_srv_call_open) - 1);
        ft_srv_emit(p, FT_SRV_EV_CONTENT, body, p->call.len);
        ft_srv_emit(p, FT_SRV_EV_CONTENT, ft_srv_call_close, sizeof(ft_srv_call_close) - 1);
    }
    free(args_text);
    json_decref(v);
    ft_srv_buf_free(&p->call);
}

/* At </tool_call> (or the end of the output inside one): a streamed call
 * ends; one read whole is parsed now. */
static void ft_srv_call_end(ft_srv_outparse_t *p)
{
    if (p->dialect != FT_SRV_DIALECT_QWEN3) {
        if (p->dialect == FT_SRV_DIALECT_XML)
            ft_srv_xml_call_end(p, 1);
        else if (p->dialect == FT_SRV_DIALECT_GLM)
            ft_srv_glm_call_end(p, 1);
        else
            ft_srv_ds_call_end(p, 1);
        ft_srv_buf_free(&p->call);
        p->call_phase = 0;
        return;
    }
    if (p->call_phase == 1 || p->call_phase == 2) {
        const ft_srv_ev_t ev = {.kind = FT_SRV_EV_TOOL_END, .tool_index = p->n_calls - 1};
        p->fn(p->user, &ev);
        ft_srv_buf_free(&p->call);
    } else {
        ft_srv_call_done(p);
    }
    p->call_phase = 0;
}

/* One decision on the front of pending: returns bytes consumed, 0 when
 * it must wait for more text. */
static size_t ft_srv_step(ft_srv_outparse_t *p, const char *s, size_t n)
{
    switch (p->state) {
    case FT_SRV_PS_START: {
        size_t ws = 0;
        while (ws < n && (s[ws] == '\n' || s[ws] == ' ' || s[ws] == '\r'))
            ws++;
        const size_t rest = n - ws, tn = sizeof(ft_srv_think_open) - 1;
        if (rest >= tn && !memcmp(s + ws, ft_srv_think_open, tn)) {
            p->state = FT_SRV_PS_REASONING;
            p->think_lstrip = 1;
            return ws + tn;
        }
        if (rest < tn && !memcmp(s + ws, ft_srv_think_open, rest)) return 0;
        p->state = FT_SRV_PS_CONTENT;
        return 0 * ws; /* re-read as content; nothing consumed */
    }
    case FT_SRV_PS_REASONING: {
        const size_t mn = sizeof(ft_srv_think_close) - 1;
        const size_t at = ft_srv_find(s, n, ft_srv_think_close, mn);
        if (at < n) {
            size_t keep = at;
            while (keep && s[keep - 1] == '\n')
                keep--;
            ft_srv_emit(p, FT_SRV_EV_REASONING, s, keep);
            p->state = FT_SRV_PS_CONTENT;
            p->think_lstrip = 1;
            return at + mn;
        }
        return ft_srv_emit_safe(p, FT_SRV_EV_REASONING, s, n, ft_srv_think_close, mn);
    }
    case FT_SRV_PS_CONTENT: {
        if (!p->tools || p->dialect == FT_SRV_DIALECT_HARMONY)
            return ft_srv_emit_safe(p, FT_SRV_EV_CONTENT, s, n, NULL, 0);
        if (p->dialect == FT_SRV_DIALECT_DEEPSEEK) { /* the calls' bracket: markup, dropped */
            const size_t a = ft_srv_op_find(s, n, ft_srv_ds_calls_open);
            const size_t z = ft_srv_op_find(s, n, ft_srv_ds_calls_close);
            const size_t c = ft_srv_op_find(s, n, ft_srv_ds_call_open);
            const size_t at = a < z ? a : z;
            if (at < n && at < c) {
                size_t keep = at;
                while (keep && s[keep - 1] == '\n')
                    keep--;
                ft_srv_emit(p, FT_SRV_EV_CONTENT, s, keep);
                p->think_lstrip = 1;
                return at + strlen(at == a ? ft_srv_ds_calls_open : ft_srv_ds_calls_close);
            }
            if (c == n) {
                size_t hold = ft_srv_op_partial(s, n, ft_srv_ds_calls_open);
                const size_t h2 = ft_srv_op_partial(s, n, ft_srv_ds_calls_close),
                             h3 = ft_srv_op_partial(s, n, ft_srv_ds_call_open);
                if (h2 > hold) hold = h2;
                if (h3 > hold) hold = h3;
                size_t keep = n - hold;
                while (keep && s[keep - 1] == '\n')
                    keep--;
                ft_srv_emit(p, FT_SRV_EV_CONTENT, s, keep);
                return keep;
            }
        }
        const char *om = ft_srv_call_open_m(p);
        const size_t mn = strlen(om);
        const size_t at = ft_srv_find(s, n, om, mn);
        if (at < n) {
            size_t keep = at;
            while (keep && s[keep - 1] == '\n')
                keep--;
            ft_srv_emit(p, FT_SRV_EV_CONTENT, s, keep);
            p->state = FT_SRV_PS_TOOL;
            return at + mn;
        }
        return ft_srv_emit_safe(p, FT_SRV_EV_CONTENT, s, n, om, mn);
    }
    case FT_SRV_PS_TOOL: {
        const char *cm = ft_srv_call_close_m(p);
        const size_t mn = strlen(cm);
        const size_t at = ft_srv_find(s, n, cm, mn);
        if (at < n) {
            ft_srv_call_feed(p, s, at);
            ft_srv_call_end(p);
            p->state = FT_SRV_PS_CONTENT;
            p->think_lstrip = 1; /* the newline between calls */
            return at + mn;
        }
        const size_t take = n - ft_srv_partial(s, n, cm, mn);
        ft_srv_call_feed(p, s, take);
        return take;
    }
    case FT_SRV_PS_H_HEADER:
    case FT_SRV_PS_H_TEXT:
    case FT_SRV_PS_H_ARGS:
        return ft_srv_harmony_step(p, s, n);
    }
    return 0;
}

static void ft_srv_drain(ft_srv_outparse_t *p)
{
    for (;;) {
        const ft_srv_parse_state_t before = p->state;
        const size_t used = ft_srv_step(p, p->pending.data ? p->pending.data : "", p->pending.len);
        ft_srv_buf_consume(&p->pending, used);
        if (!used && p->state == before) return;
    }
}

void ft_srv_outparse_open_call(ft_srv_outparse_t *p, const char *prefix, size_t n)
{
    if (p->dialect == FT_SRV_DIALECT_HARMONY) { /* a header the prompt began */
        p->state = FT_SRV_PS_H_HEADER;
        p->think_lstrip = 0;
        ft_srv_outparse_feed(p, prefix, n);
        return;
    }
    p->state = FT_SRV_PS_TOOL;
    p->think_lstrip = 0;
    p->call_phase = 0;
    ft_srv_call_feed(p, prefix, n);
}

void ft_srv_outparse_feed(ft_srv_outparse_t *p, const char *text, size_t n)
{
    ft_srv_buf_put(&p->pending, text, n);
    ft_srv_drain(p);
}

void ft_srv_outparse_finish(ft_srv_outparse_t *p)
{
    const char *s = p->pending.data ? p->pending.data : "";
    switch (p->state) {
    case FT_SRV_PS_REASONING:
        ft_srv_emit(p, FT_SRV_EV_REASONING, s, p->pending.len);
        break;
    case FT_SRV_PS_H_HEADER:
    case FT_SRV_PS_H_TEXT:
    case FT_SRV_PS_H_ARGS:
        ft_srv_harmony_finish(p, s, p->pending.len);
        break;
    case FT_SRV_PS_TOOL:
        if (p->dialect != FT_SRV_DIALECT_QWEN3) {
            ft_srv_call_feed(p, s, p->pending.len);
            if (p->dialect == FT_SRV_DIALECT_XML)
                ft_srv_xml_call_end(p, 0);
            else if (p->dialect == FT_SRV_DIALECT_GLM)
                ft_srv_glm_call_end(p, 0);
            else
                ft_srv_ds_call_end(p, 0);
            break;
        }
        if (p->call_phase == 1 || p->call_phase == 2) { /* a streamed call cut off: it ends */
            ft_srv_call_feed(p, s, p->pending.len);
            ft_srv_call_end(p);
            break;
        }
        ft_srv_emit(p, FT_SRV_EV_CONTENT, ft_srv_call_open, sizeof(ft_srv_call_open) - 1);
        ft_srv_emit(p, FT_SRV_EV_CONTENT, p->call.data ? p->call.data : "", p->call.len);
        ft_srv_emit(p, FT_SRV_EV_CONTENT, s, p->pending.len);
        break;
    default:
        ft_srv_emit(p, FT_SRV_EV_CONTENT, s, p->pending.len);
        break;
    }
    ft_srv_buf_free(&p->pending);
    ft_srv_buf_free(&p->call);
    p->state = FT_SRV_PS_CONTENT;
    p->call_phase = 0;
}
