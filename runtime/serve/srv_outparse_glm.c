/* GLM-4.5/4.6 tool calls in the output parser (srv_outparse.h):
 *   <tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n...</tool_call>
 * streamed as a JSON object {"K": V, ...}: string values (by the tool's
 * schema; untyped ones too) escaped as they arrive, others held to their
 * </arg_value> and written as JSON when they parse. Text not yet decided
 * sits in p->call. */
#include "srv_outparse_internal.h"

#include "srv_conv.h"

#include <stdlib.h>
#include <string.h>

static const char ft_glm_key[] = "<arg_key>", ft_glm_key_end[] = "</arg_key>";
static const char ft_glm_val[] = "<arg_value>", ft_glm_val_end[] = "</arg_value>";

/* The longest name or key read before giving up on it. */
#define FT_GLM_MAX_NAME 256

static int ft_glm_ws(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static int ft_glm_prefix(const char *s, size_t n, const char *m)
{
    return n < strlen(m) && !memcmp(s, m, n);
}

/* A name (function or key) s[0, n), whitespace around it dropped: its
 * start and length, 0 when it is empty or holds markup. */
static size_t ft_glm_name(const char *s, size_t n, const char **out)
{
    size_t a = 0, z = n;
    while (a < z && ft_glm_ws(s[a]))
        a++;
    while (z > a && ft_glm_ws(s[z - 1]))
        z--;
    if (z == a || memchr(s + a, '<', z - a) || memchr(s + a, '>', z - a)) return 0;
    *out = s + a;
    return z - a;
}

static void ft_glm_start(ft_srv_outparse_t *p, const char *name, size_t n)
{
    char *s = strndup(name, n);
    if (!s) {
        p->call_phase = 3;
        return;
    }
    ft_srv_op_start(p, s);
    p->xml_props = ft_srv_op_tool_props(p, s);
    free(s);
    p->call_phase = 1;
    p->xml_state = 0;
    p->xml_n_params = 0;
}

/* One step on the front of the held text: bytes consumed (0: wait). */
static size_t ft_glm_step(ft_srv_outparse_t *p, const char *s, size_t n)
{
    if (p->call_phase == 0) { /* the name, up to a newline or <arg_key>, looked for in the
                                 first bytes only so the decision does not depend on the split */
        const size_t lim = FT_GLM_MAX_NAME + sizeof(ft_glm_key) - 1, span = n < lim ? n : lim;
        size_t i = 0;
        while (i < span && ft_glm_ws(s[i]))
            i++;
        const char *nl = memchr(s + i, '\n', span - i);
        const size_t at_nl = nl ? (size_t)(nl - s) : span;
        const size_t at_key = ft_srv_op_find(s + i, span - i, ft_glm_key) + i;
        const size_t at = at_nl < at_key ? at_nl : at_key;
        if (at == span) {
            if (n >= lim) p->call_phase = 3;
            return 0;
        }
        const char *name;
        const size_t nn = ft_glm_name(s, at, &name);
        if (!nn) {
            p->call_phase = 3;
            return 0;
        }
        ft_glm_start(p, name, nn);
        return at;
    }
    switch (p->xml_state) {
    case 0: { /* between arguments: <arg_key> */
        size_t i = 0;
        while (i < n && ft_glm_ws(s[i]))
            i++;
        if (i == n || ft_glm_prefix(s + i, n - i, ft_glm_key)) return i;
        const size_t kl = sizeof(ft_glm_key) - 1;
        if (n - i >= kl && !memcmp(s + i, ft_glm_key, kl)) {
            p->xml_state = 1;
            return i + kl;
        }
        return i + 1; /* text that is no argument: dropped */
    }
    case 1: { /* a key, up to </arg_key> */
        const size_t lim = FT_GLM_MAX_NAME + sizeof(ft_glm_key_end) - 1, span = n < lim ? n : lim;
        const size_t at = ft_srv_op_find(s, span, ft_glm_key_end);
        if (at == span) {
            if (n < lim) return 0;
            p->xml_state = 0; /* no key: dropped */
            return 1;
        }
        const char *key;
        const size_t kn = ft_glm_name(s, at, &key);
        char *k = kn ? strndup(key, kn) : NULL;
        json_t *jk = k ? json_stringn(k, kn) : NULL;
        char *quoted = jk ? ft_srv_tojson(jk) : NULL;
        if (quoted) {
            ft_srv_op_args(p, p->xml_n_params ? ", " : "{", p->xml_n_params ? 2 : 1);
            ft_srv_op_args(p, quoted, strlen(quoted));
            ft_srv_op_args(p, ": ", 2);
            p->xml_n_params++;
            p->glm_string = ft_srv_op_param_is_string(p, k);
            p->xml_state = 5;
        } else {
            p->xml_state = 0; /* an empty or bad key: the pair is dropped */
        }
        free(quoted);
        json_decref(jk);
        free(k);
        return at + sizeof(ft_glm_key_end) - 1;
    }
    case 5: { /* before the value: <arg_value> */
        size_t i = 0;
        while (i < n && ft_glm_ws(s[i]))
            i++;
        if (i == n || ft_glm_prefix(s + i, n - i, ft_glm_val)) return i;
        const size_t vl = sizeof(ft_glm_val) - 1;
        if (n - i >= vl && !memcmp(s + i, ft_glm_val, vl)) {
            p->xml_state = p->glm_string ? 2 : 3;
            if (p->glm_string) ft_srv_op_args(p, "\"", 1);
            return i + vl;
        }
        ft_srv_op_args(p, "null", 4); /* a key without a value */
        p->xml_state = 0;
        return i;
    }
    case 2:
    case 3: { /* a value, up to </arg_value> */
        const size_t at = ft_srv_op_find(s, n, ft_glm_val_end);
        if (at < n) {
            if (p->xml_state == 2) {
                ft_srv_op_args_escaped(p, s, at);
                ft_srv_op_args(p, "\"", 1);
            } else {
                ft_srv_op_value_whole(p, s, at);
            }
            p->xml_state = 0;
            return at + sizeof(ft_glm_val_end) - 1;
        }
        if (p->xml_state == 3) return 0;
        const size_t keep = n - ft_srv_op_partial(s, n, ft_glm_val_end);
        ft_srv_op_args_escaped(p, s, keep);
        return keep;
    }
    default:
        return n;
    }
}

void ft_srv_glm_call_feed(ft_srv_outparse_t *p, const char *s, size_t n)
{
    ft_srv_buf_put(&p->call, s, n);
    if (p->call_phase == 3) return;
    for (;;) {
        const int phase = p->call_phase, st = p->xml_state;
        const size_t used = ft_glm_step(p, p->call.data ? p->call.data : "", p->call.len);
        ft_srv_buf_consume(&p->call, used);
        if (p->call_phase == 3) return;
        if (!used && phase == p->call_phase && st == p->xml_state) return;
    }
}

void ft_srv_glm_call_end(ft_srv_outparse_t *p, int closed)
{
    const char *s = p->call.data ? p->call.data : "";
    const char *name;
    size_t nn;
    /* a call closed right after its name (no arguments) */
    if (p->call_phase == 0 && closed && p->call.len <= FT_GLM_MAX_NAME &&
        (nn = ft_glm_name(s, p->call.len, &name)) > 0) {
        ft_glm_start(p, name, nn);
        ft_srv_buf_consume(&p->call, p->call.len);
        s = "";
    }
    if (p->call_phase == 1) {
        if (p->xml_state == 2) { /* cut off inside a string value: what there is of it */
            ft_srv_op_args_escaped(p, s, p->call.len);
            ft_srv_op_args(p, "\"", 1);
        } else if (p->xml_state == 3) {
            ft_srv_op_value_whole(p, s, p->call.len);
        } else if (p->xml_state == 5) {
            ft_srv_op_args(p, "null", 4);
        }
        ft_srv_op_args(p, p->xml_n_params ? "}" : "{}", p->xml_n_params ? 1 : 2);
        ft_srv_op_end(p);
    } else { /* never named: the text as the model wrote it */
        ft_srv_op_emit(p, FT_SRV_EV_CONTENT, "<tool_call>", 11);
        ft_srv_op_emit(p, FT_SRV_EV_CONTENT, s, p->call.len);
        if (closed) ft_srv_op_emit(p, FT_SRV_EV_CONTENT, "</tool_call>", 12);
    }
    ft_srv_buf_free(&p->call);
    p->call_phase = 0;
    p->xml_state = 0;
}
