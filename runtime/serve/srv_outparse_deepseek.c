/* DeepSeek V3.1's tool calls in the output parser (srv_outparse.h):
 * <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>. The head
 * (up to the separator) is held in p->call; the call starts at the
 * separator and its arguments stream as the model writes them. */
#include "srv_outparse_internal.h"

#include <stdlib.h>
#include <string.h>

#define FT_DS_BAR "\xef\xbd\x9c"
#define FT_DS_SP "\xe2\x96\x81"
const char ft_srv_ds_call_open[] =
    "<" FT_DS_BAR "tool" FT_DS_SP "call" FT_DS_SP "begin" FT_DS_BAR ">";
const char ft_srv_ds_call_close[] =
    "<" FT_DS_BAR "tool" FT_DS_SP "call" FT_DS_SP "end" FT_DS_BAR ">";
const char ft_srv_ds_calls_open[] =
    "<" FT_DS_BAR "tool" FT_DS_SP "calls" FT_DS_SP "begin" FT_DS_BAR ">";
const char ft_srv_ds_calls_close[] =
    "<" FT_DS_BAR "tool" FT_DS_SP "calls" FT_DS_SP "end" FT_DS_BAR ">";
static const char ft_srv_ds_sep[] = "<" FT_DS_BAR "tool" FT_DS_SP "sep" FT_DS_BAR ">";

/* The longest head (name) read before giving up on the call. */
#define FT_DS_MAX_HEAD 512

void ft_srv_ds_call_feed(ft_srv_outparse_t *p, const char *s, size_t n)
{
    if (p->call_phase == 1) {
        ft_srv_op_args(p, s, n);
        return;
    }
    ft_srv_buf_put(&p->call, s, n);
    if (p->call_phase == 3) return;
    const char *h = p->call.data ? p->call.data : "";
    /* the separator is looked for in the first FT_DS_MAX_HEAD bytes only, so
     * the decision does not depend on how the text arrives */
    const size_t lim = FT_DS_MAX_HEAD + sizeof(ft_srv_ds_sep) - 1;
    const size_t span = p->call.len < lim ? p->call.len : lim;
    const size_t at = ft_srv_op_find(h, span, ft_srv_ds_sep);
    if (at == span) {
        if (p->call.len >= lim) p->call_phase = 3;
        return;
    }
    size_t a = 0, z = at; /* the name, whitespace around it dropped */
    while (a < z && (h[a] == ' ' || h[a] == '\n' || h[a] == '\t' || h[a] == '\r'))
        a++;
    while (z > a && (h[z - 1] == ' ' || h[z - 1] == '\n' || h[z - 1] == '\t' || h[z - 1] == '\r'))
        z--;
    int ok = z > a;
    for (size_t i = a; i < z && ok; i++)
        ok = h[i] != '<' && h[i] != '>' && h[i] != '\n';
    if (!ok) {
        p->call_phase = 3;
        return;
    }
    char *name = strndup(h + a, z - a);
    if (!name) {
        p->call_phase = 3;
        return;
    }
    ft_srv_op_start(p, name);
    free(name);
    p->call_phase = 1;
    const size_t body = at + sizeof(ft_srv_ds_sep) - 1;
    ft_srv_op_args(p, h + body, p->call.len - body);
    ft_srv_buf_free(&p->call);
}

void ft_srv_ds_call_end(ft_srv_outparse_t *p, int closed)
{
    if (p->call_phase == 1) {
        ft_srv_op_end(p);
    } else { /* never named: the text as the model wrote it */
        ft_srv_op_emit(p, FT_SRV_EV_CONTENT, ft_srv_ds_call_open, sizeof(ft_srv_ds_call_open) - 1);
        ft_srv_op_emit(p, FT_SRV_EV_CONTENT, p->call.data ? p->call.data : "", p->call.len);
        if (closed)
            ft_srv_op_emit(p, FT_SRV_EV_CONTENT, ft_srv_ds_call_close,
                           sizeof(ft_srv_ds_call_close) - 1);
    }
    ft_srv_buf_free(&p->call);
    p->call_phase = 0;
}
