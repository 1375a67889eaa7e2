/* XML tool calls in the output parser (srv_outparse.h), as Qwen3.5/3.6
 * and Qwen3-Coder write them inside <tool_call>:
 *   \n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n...</function>\n
 * streamed as a JSON object: {"P": VALUE, ...}. Text not yet decided sits
 * in p->call; p->xml_state says where in the call it is. */
#include "srv_outparse_internal.h"

#include "srv_conv.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const char ft_xml_fn[] = "<function=", ft_xml_fn_end[] = "</function>";
static const char ft_xml_param[] = "<parameter=", ft_xml_param_end[] = "</parameter>";

/* The longest function or parameter name read before giving up on it. */
#define FT_XML_MAX_NAME 256

static int ft_xml_ws(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* s[0, n) is a proper prefix of m (more text may complete it). */
static int ft_xml_prefix(const char *s, size_t n, const char *m)
{
    const size_t k = strlen(m);
    return n < k && !memcmp(s, m, n);
}

/* s[0, n) JSON-escaped (no quotes) as argument text. */
void ft_srv_op_args_escaped(ft_srv_outparse_t *p, const char *s, size_t n)
{
    ft_srv_buf_t b = {0};
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)s[i];
        if (c != '"' && c != '\\' && c >= 0x20) continue;
        ft_srv_buf_put(&b, s + run, i - run);
        switch (c) {
        case '"':
            ft_srv_buf_puts(&b, "\\\"");
            break;
        case '\\':
            ft_srv_buf_puts(&b, "\\\\");
            break;
        case '\n':
            ft_srv_buf_puts(&b, "\\n");
            break;
        case '\r':
            ft_srv_buf_puts(&b, "\\r");
            break;
        case '\t':
            ft_srv_buf_puts(&b, "\\t");
            break;
        default:
            ft_srv_buf_printf(&b, "\\u%04x", c);
        }
        run = i + 1;
    }
    if (!b.len) { /* nothing to escape: the text itself */
        ft_srv_op_args(p, s, n);
        return;
    }
    ft_srv_buf_put(&b, s + run, n - run);
    if (!b.oom) ft_srv_op_args(p, b.data, b.len);
    ft_srv_buf_free(&b);
}

/* Whether parameter `name` of the called tool is a string (by its schema;
 * a parameter the schema does not type is one too). */
int ft_srv_op_param_is_string(const ft_srv_outparse_t *p, const char *name)
{
    const json_t *type = json_object_get(json_object_get(p->xml_props, name), "type");
    if (!type) return 1;
    if (json_is_string(type)) return !strcmp(json_string_value(type), "string");
    size_t i;
    json_t *t;
    json_array_foreach(type, i, t) if (json_is_string(t) &&
                                       !strcmp(json_string_value(t), "string")) return 1;
    return 0;
}

/* The called tool's parameters.properties, from the request's tools. */
const json_t *ft_srv_op_tool_props(const ft_srv_outparse_t *p, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach(p->tool_defs, i, t)
    {
        const json_t *fn = json_object_get(t, "function");
        const char *n = json_string_value(json_object_get(fn, "name"));
        if (n && !strcmp(n, name))
            return json_object_get(json_object_get(fn, "parameters"), "properties");
    }
    return NULL;
}

/* A value held whole (not a string by the schema): as JSON when it is
 * JSON, else as a string. */
void ft_srv_op_value_whole(ft_srv_outparse_t *p, const char *s, size_t n)
{
    size_t a = 0, z = n;
    while (a < z && ft_xml_ws(s[a]))
        a++;
    while (z > a && ft_xml_ws(s[z - 1]))
        z--;
    json_t *v = z > a ? json_loadb(s + a, z - a, JSON_DECODE_ANY, NULL) : NULL;
    if (v) {
        ft_srv_op_args(p, s + a, z - a);
        json_decref(v);
        return;
    }
    ft_srv_op_args(p, "\"", 1);
    ft_srv_op_args_escaped(p, s, n);
    ft_srv_op_args(p, "\"", 1);
}

/* One step on the front of the held text: bytes consumed (0: wait). */
static size_t ft_xml_step(ft_srv_outparse_t *p, const char *s, size_t n)
{
    if (p->call_phase == 0) { /* the head: ws <function=NAME> */
        size_t i = 0;
        while (i < n && ft_xml_ws(s[i]))
            i++;
        if (i == n) return 0;
        const size_t fl = sizeof(ft_xml_fn) - 1;
        if (ft_xml_prefix(s + i, n - i, ft_xml_fn)) return 0;
        if (memcmp(s + i, ft_xml_fn, fl) != 0) {
            p->call_phase = 3;
            return 0;
        }
        const char *gt = memchr(s + i + fl, '>', n - i - fl);
        const size_t name_len = gt ? (size_t)(gt - (s + i + fl)) : n - i - fl;
        if (name_len > FT_XML_MAX_NAME || memchr(s + i + fl, '<', name_len) ||
            memchr(s + i + fl, '\n', name_len) || (gt && !name_len)) {
            p->call_phase = 3;
            return 0;
        }
        if (!gt) return 0;
        char *name = strndup(s + i + fl, name_len);
        if (!name) {
            p->call_phase = 3;
            return 0;
        }
        ft_srv_op_start(p, name);
        p->xml_props = ft_srv_op_tool_props(p, name);
        free(name);
        p->call_phase = 1;
        p->xml_state = 0;
        p->xml_n_params = 0;
        return (size_t)(gt + 1 - s);
    }
    switch (p->xml_state) {
    case 0: { /* between parameters */
        size_t i = 0;
        while (i < n && ft_xml_ws(s[i]))
            i++;
        if (i == n) return i;
        if (ft_xml_prefix(s + i, n - i, ft_xml_param) || ft_xml_prefix(s + i, n - i, ft_xml_fn_end))
            return i;
        const size_t el = sizeof(ft_xml_fn_end) - 1, pl = sizeof(ft_xml_param) - 1;
        if (n - i >= el && !memcmp(s + i, ft_xml_fn_end, el)) {
            ft_srv_op_args(p, p->xml_n_params ? "}" : "{}", p->xml_n_params ? 1 : 2);
            p->xml_state = 4;
            return i + el;
        }
        if (n - i >= pl && !memcmp(s + i, ft_xml_param, pl)) {
            const char *gt = memchr(s + i + pl, '>', n - i - pl);
            const size_t kl = gt ? (size_t)(gt - (s + i + pl)) : n - i - pl;
            if (kl > FT_XML_MAX_NAME || memchr(s + i + pl, '<', kl)) return i + 1; /* junk */
            if (!gt) return i;
            char *key = strndup(s + i + pl, kl);
            json_t *jk = key ? json_stringn(key, kl) : NULL;
            char *quoted = jk ? ft_srv_tojson(jk) : NULL;
            if (quoted) {
                ft_srv_op_args(p, p->xml_n_params ? ", " : "{", p->xml_n_params ? 2 : 1);
                ft_srv_op_args(p, quoted, strlen(quoted));
                ft_srv_op_args(p, ": ", 2);
                p->xml_n_params++;
                p->xml_state = ft_srv_op_param_is_string(p, key) ? 2 : 3;
                if (p->xml_state == 2) ft_srv_op_args(p, "\"", 1);
                p->xml_lead = 1;
            }
            free(quoted);
            json_decref(jk);
            free(key);
            return (size_t)(gt + 1 - s);
        }
        return i + 1; /* text that is neither: dropped */
    }
    case 2:
    case 3: { /* a value, up to \n</parameter> */
        if (p->xml_lead) {
            if (!n) return 0;
            p->xml_lead = 0;
            if (s[0] == '\n') return 1;
        }
        const size_t at = ft_srv_op_find(s, n, ft_xml_param_end);
        if (at < n) {
            const size_t vn = at && s[at - 1] == '\n' ? at - 1 : at;
            if (p->xml_state == 2) {
                ft_srv_op_args_escaped(p, s, vn);
                ft_srv_op_args(p, "\"", 1);
            } else {
                ft_srv_op_value_whole(p, s, vn);
            }
            p->xml_state = 0;
            return at + sizeof(ft_xml_param_end) - 1;
        }
        if (p->xml_state == 3) return 0; /* held whole */
        size_t keep = n - ft_srv_op_partial(s, n, ft_xml_param_end);
        if (keep && s[keep - 1] == '\n') keep--; /* may be the one before </parameter> */
        ft_srv_op_args_escaped(p, s, keep);
        return keep;
    }
    default: /* after </function>: nothing more belongs to the call */
        return n;
    }
}

void ft_srv_xml_call_feed(ft_srv_outparse_t *p, const char *s, size_t n)
{
    ft_srv_buf_put(&p->call, s, n);
    if (p->call_phase == 3) return;
    for (;;) {
        const int phase = p->call_phase, st = p->xml_state;
        const size_t used = ft_xml_step(p, p->call.data ? p->call.data : "", p->call.len);
        ft_srv_buf_consume(&p->call, used);
        if (p->call_phase == 3) return;
        if (!used && phase == p->call_phase && st == p->xml_state) return;
    }
}

void ft_srv_xml_call_end(ft_srv_outparse_t *p, int closed)
{
    const char *s = p->call.data ? p->call.data : "";
    if (p->call_phase == 1) {
        if (p->xml_state == 2) { /* cut off inside a string value: what there is of it */
            ft_srv_op_args_escaped(p, s, p->call.len);
            ft_srv_op_args(p, "\"", 1);
        } else if (p->xml_state == 3) {
            ft_srv_op_value_whole(p, s, p->call.len);
        }
        if (p->xml_state != 4)
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
