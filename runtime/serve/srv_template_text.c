/* The Python string methods and Jinja filters the chat templates call,
 * in C (srv_template_internal.h). */
#include "srv_template_internal.h"

#include <stdlib.h>
#include <string.h>

/* Python's str.isspace for one code point. */
static int ft_srv_py_isspace(unsigned cp)
{
    return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

/* The code point starting at s[0, n) and its length; length 1 and an
 * impossible code point for bytes that do not start a valid sequence. */
static unsigned ft_srv_utf8_at(const unsigned char *s, size_t n, size_t *len)
{
    *len = 1;
    if (s[0] < 0x80) return s[0];
    size_t k = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
    if (!k || k > n) return 0x110000;
    unsigned cp = s[0] & (0x7f >> k);
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0x110000;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    *len = k;
    return cp;
}

void ft_srv_py_strip(const char *s, size_t n, const char **out, size_t *out_n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t a = 0, len;
    while (a < n && ft_srv_py_isspace(ft_srv_utf8_at(u + a, n - a, &len)))
        a += len;
    size_t e = n;
    while (e > a) {
        size_t st = e - 1; /* the last character's first byte */
        while (st > a && (u[st] & 0xc0) == 0x80 && e - st < 4)
            st--;
        const unsigned cp = ft_srv_utf8_at(u + st, e - st, &len);
        if (st + len != e || !ft_srv_py_isspace(cp)) break;
        e = st;
    }
    *out = s + a;
    *out_n = e - a;
}

const char *ft_srv_memstr(const char *s, size_t n, const char *needle)
{
    const size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(s + i, needle, k)) return s + i;
    return NULL;
}

int ft_srv_split_think_text(const char *s, size_t n, const char **r, size_t *rn, const char **ct,
                            size_t *cn)
{
    const char *end = ft_srv_memstr(s, n, "</think>");
    if (!end) return 0;
    const char *head = s; /* [0]: up to the first </think>, rstrip('\n') */
    size_t hn = (size_t)(end - s);
    while (hn && head[hn - 1] == '\n')
        hn--;
    for (const char *p; (p = ft_srv_memstr(head, hn, "<think>"));) { /* split('<think>')[-1] */
        hn -= (size_t)(p + 7 - head);
        head = p + 7;
    }
    while (hn && *head == '\n')
        head++, hn--;
    *r = head;
    *rn = hn;
    const char *last = end; /* [-1]: after the last </think>, lstrip('\n') */
    for (const char *p; (p = ft_srv_memstr(last + 8, n - (size_t)(last + 8 - s), "</think>"));)
        last = p;
    const char *tail = last + 8;
    size_t tn = n - (size_t)(tail - s);
    while (tn && *tail == '\n')
        tail++, tn--;
    *ct = tail;
    *cn = tn;
    return 1;
}

void ft_srv_buf_tojson(ft_srv_buf_t *b, const json_t *v)
{
    char *s = ft_srv_tojson(v);
    if (!s) {
        b->oom = 1;
        return;
    }
    ft_srv_buf_puts(b, s);
    free(s);
}

void ft_srv_py_str(ft_srv_buf_t *b, const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        ft_srv_buf_put(b, json_string_value(v), json_string_length(v));
        return;
    case JSON_TRUE:
        ft_srv_buf_puts(b, "True");
        return;
    case JSON_FALSE:
        ft_srv_buf_puts(b, "False");
        return;
    case JSON_NULL:
        ft_srv_buf_puts(b, "None");
        return;
    default: /* numbers: str() is repr(), which tojson writes; containers: tojson */
        ft_srv_buf_tojson(b, v);
        return;
    }
}

json_t *ft_srv_call_args(const char *arguments)
{
    if (!arguments) return NULL;
    return json_loads(arguments, JSON_DECODE_ANY, NULL);
}

size_t ft_srv_n_tools(const ft_srv_conv_t *c)
{
    return c->tools ? json_array_size(c->tools) : 0;
}

int ft_srv_template_refuse(ft_srv_error_t *err, const char *message)
{
    ft_srv_error_set(err, 400, "invalid_request_error", "messages",
                     "the model's chat template refuses this conversation: %s", message);
    return 0;
}

/* A string as Python's repr writes it: single quotes unless the text has
 * a single quote and no double one; backslash, the quote, \n \r \t and
 * other controls escaped; other characters as they are. */
static void ft_srv_py_repr_str(ft_srv_buf_t *b, const char *s, size_t n)
{
    const char q = memchr(s, '\'', n) && !memchr(s, '"', n) ? '"' : '\'';
    ft_srv_buf_put(b, &q, 1);
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)s[i];
        if (c == '\\' || c == (unsigned char)q) {
            ft_srv_buf_put(b, "\\", 1);
            ft_srv_buf_put(b, s + i, 1);
        } else if (c == '\n') {
            ft_srv_buf_puts(b, "\\n");
        } else if (c == '\r') {
            ft_srv_buf_puts(b, "\\r");
        } else if (c == '\t') {
            ft_srv_buf_puts(b, "\\t");
        } else if (c < 0x20 || c == 0x7f) {
            ft_srv_buf_printf(b, "\\x%02x", c);
        } else {
            ft_srv_buf_put(b, s + i, 1);
        }
    }
    ft_srv_buf_put(b, &q, 1);
}

void ft_srv_py_repr(ft_srv_buf_t *b, const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        ft_srv_py_repr_str(b, json_string_value(v), json_string_length(v));
        return;
    case JSON_ARRAY: {
        size_t i;
        json_t *x;
        ft_srv_buf_puts(b, "[");
        json_array_foreach(v, i, x)
        {
            if (i) ft_srv_buf_puts(b, ", ");
            ft_srv_py_repr(b, x);
        }
        ft_srv_buf_puts(b, "]");
        return;
    }
    case JSON_OBJECT: {
        const char *k;
        json_t *x;
        int first = 1;
        ft_srv_buf_puts(b, "{");
        json_object_foreach((json_t *)v, k, x)
        {
            if (!first) ft_srv_buf_puts(b, ", ");
            first = 0;
            ft_srv_py_repr_str(b, k, strlen(k));
            ft_srv_buf_puts(b, ": ");
            ft_srv_py_repr(b, x);
        }
        ft_srv_buf_puts(b, "}");
        return;
    }
    default:
        ft_srv_py_str(b, v);
        return;
    }
}
