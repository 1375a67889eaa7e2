/* The request body as JSON and the conversation it holds (srv_conv.h):
 * ownership helpers, the JSON reader's limits, tojson. */
#include "srv_conv.h"

#include "srv_buf.h"
#include "srv_json_schema.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ft_srv_error_set(ft_srv_error_t *err, int http, const char *type, const char *param,
                      const char *fmt, ...)
{
    err->http = http;
    err->type = type;
    snprintf(err->param, sizeof(err->param), "%s", param ? param : "");
    err->code[0] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
}

void ft_srv_conv_init(ft_srv_conv_t *c)
{
    memset(c, 0, sizeof(*c));
    c->enable_thinking = -1;
    c->parallel_tool_calls = 1;
    ft_sampler_options_init(&c->sampling);
}

void ft_srv_conv_free(ft_srv_conv_t *c)
{
    ft_srv_js_free(c->json_schema);
    for (size_t i = 0; i < c->n_owned; i++)
        free(c->owned[i]);
    free(c->owned);
    json_decref(c->owned_json);
    json_decref(c->root);
    memset(c, 0, sizeof(*c));
}

void *ft_srv_conv_alloc(ft_srv_conv_t *c, size_t n_bytes)
{
    if (c->n_owned == c->cap_owned) {
        const size_t cap = c->cap_owned ? c->cap_owned * 2 : 16;
        void **p = realloc(c->owned, cap * sizeof(*p));
        if (!p) return NULL;
        c->owned = p;
        c->cap_owned = cap;
    }
    void *p = calloc(1, n_bytes ? n_bytes : 1);
    if (p) c->owned[c->n_owned++] = p;
    return p;
}

char *ft_srv_conv_strdup(ft_srv_conv_t *c, const char *s, size_t n)
{
    if (n == (size_t)-1) return NULL;
    char *p = ft_srv_conv_alloc(c, n + 1);
    if (p) memcpy(p, s, n);
    return p;
}

json_t *ft_srv_conv_keep(ft_srv_conv_t *c, json_t *v)
{
    if (!v) return NULL;
    if (!c->owned_json) c->owned_json = json_array();
    if (!c->owned_json || json_array_append(c->owned_json, v) != 0) {
        json_decref(v);
        return NULL;
    }
    json_decref(v); /* the array holds it now */
    return v;
}

static size_t ft_srv_json_depth(const json_t *v, size_t limit)
{
    size_t d = 0;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x)
        {
            const size_t dx = ft_srv_json_depth(x, limit);
            if (dx > d) d = dx;
            if (d > limit) break;
        }
        return d + 1;
    }
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            const size_t dx = ft_srv_json_depth(x, limit);
            if (dx > d) d = dx;
            if (d > limit) break;
        }
        return d + 1;
    }
    return 0;
}

/* A string with U+0000 in it as a new one with U+FFFD there instead; NULL
 * when it has none (or on out of memory: *oom). */
static json_t *ft_srv_json_denul_str(const json_t *x, int *oom)
{
    const char *s = json_string_value(x);
    const size_t n = json_string_length(x);
    if (!memchr(s, 0, n)) return NULL;
    ft_srv_buf_t b = {0};
    for (size_t i = 0; i < n; i++) {
        if (s[i])
            ft_srv_buf_put(&b, s + i, 1);
        else
            ft_srv_buf_puts(&b, "\xef\xbf\xbd");
    }
    json_t *r = b.oom ? NULL : json_stringn(b.data ? b.data : "", b.len);
    ft_srv_buf_free(&b);
    if (!r) *oom = 1;
    return r;
}

/* Every string value holding U+0000 (clients send it back when a model
 * wrote a NUL byte, or in a binary tool result) gets U+FFFD there: the
 * readers and renderers work on C strings. 0 on out of memory. */
static int ft_srv_json_denul(json_t *v)
{
    int oom = 0;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v) && !oom; i++) {
            json_t *x = json_array_get(v, i), *r;
            if (json_is_string(x) && (r = ft_srv_json_denul_str(x, &oom)))
                json_array_set_new(v, i, r);
            else if (!ft_srv_json_denul(x))
                oom = 1;
        }
    } else if (json_is_object(v)) {
        for (void *it = json_object_iter(v); it && !oom; it = json_object_iter_next(v, it)) {
            json_t *x = json_object_iter_value(it), *r;
            if (json_is_string(x) && (r = ft_srv_json_denul_str(x, &oom)))
                json_object_iter_set_new(v, it, r);
            else if (!ft_srv_json_denul(x))
                oom = 1;
        }
    }
    return !oom;
}

int ft_srv_json_parse(const char *body, size_t n, json_t **out_root, ft_srv_error_t *err)
{
    *out_root = NULL;
    json_error_t je;
    json_t *root = json_loadb(body, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!root) {
        ft_srv_error_set(err, 400, "invalid_request_error", "",
                         "the request body is not valid JSON: %s (line %d, column %d, byte %d)",
                         je.text, je.line, je.column, je.position);
        return 0;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        ft_srv_error_set(err, 400, "invalid_request_error", "",
                         "the request body must be a JSON object");
        return 0;
    }
    if (ft_srv_json_depth(root, FT_SRV_MAX_DEPTH) > FT_SRV_MAX_DEPTH) {
        json_decref(root);
        ft_srv_error_set(err, 400, "invalid_request_error", "",
                         "the request body is nested deeper than %d levels", FT_SRV_MAX_DEPTH);
        return 0;
    }
    if (!ft_srv_json_denul(root)) {
        json_decref(root);
        ft_srv_error_set(err, 500, "server_error", "", "out of memory reading the request");
        return 0;
    }
    *out_root = root;
    return 1;
}

/* A double as Python's repr writes it: the shortest digits that read
 * back as the same double; fixed notation for decimal exponents -4..15
 * (with ".0" when integral), else d.ddde+XX. */
static void ft_srv_json_real(ft_srv_buf_t *b, double x)
{
    char digits[40];
    int prec = 0;
    for (; prec < 17; prec++) { /* %.{prec}e: prec+1 significant digits */
        snprintf(digits, sizeof(digits), "%.*e", prec, x);
        if (strtod(digits, NULL) == x) break;
    }
    snprintf(digits, sizeof(digits), "%.*e", prec, x);
    /* digits: [-]d[.ddd]e[+-]XX */
    char *e = strchr(digits, 'e');
    const int exp10 = atoi(e + 1);
    *e = '\0';
    const int neg = digits[0] == '-';
    char mant[24];
    size_t nm = 0;
    for (const char *c = digits + neg; *c; c++)
        if (*c != '.') mant[nm++] = *c;
    while (nm > 1 && mant[nm - 1] == '0')
        nm--; /* repr has no trailing zeros */
    mant[nm] = '\0';
    if (neg) ft_srv_buf_put(b, "-", 1);
    if (exp10 >= -4 && exp10 < 16) {
        if (exp10 < 0) {
            ft_srv_buf_puts(b, "0.");
            for (int i = -1; i > exp10; i--)
                ft_srv_buf_put(b, "0", 1);
            ft_srv_buf_puts(b, mant);
        } else {
            const size_t whole = (size_t)exp10 + 1;
            for (size_t i = 0; i < whole; i++)
                ft_srv_buf_put(b, i < nm ? &mant[i] : "0", 1);
            ft_srv_buf_put(b, ".", 1);
            if (nm > whole)
                ft_srv_buf_puts(b, mant + whole);
            else
                ft_srv_buf_put(b, "0", 1);
        }
        return;
    }
    ft_srv_buf_put(b, mant, 1);
    if (nm > 1) {
        ft_srv_buf_put(b, ".", 1);
        ft_srv_buf_puts(b, mant + 1);
    }
    ft_srv_buf_printf(b, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
}

/* A string as json.dumps(ensure_ascii=False) writes it: quote, backslash
 * and the C0 controls escaped (\n \r \t \b \f by name, others \u00xx in
 * lower case); everything else as it is, UTF-8. */
static void ft_srv_json_str(ft_srv_buf_t *b, const char *s, size_t n)
{
    ft_srv_buf_put(b, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[8];
        switch (c) {
        case '"':
            esc = "\\\"";
            break;
        case '\\':
            esc = "\\\\";
            break;
        case '\n':
            esc = "\\n";
            break;
        case '\r':
            esc = "\\r";
            break;
        case '\t':
            esc = "\\t";
            break;
        case '\b':
            esc = "\\b";
            break;
        case '\f':
            esc = "\\f";
            break;
        default:
            if (c < 0x20) {
                snprintf(u, sizeof(u), "\\u%04x", c);
                esc = u;
            }
        }
        if (!esc) continue;
        ft_srv_buf_put(b, s + run, i - run);
        ft_srv_buf_puts(b, esc);
        run = i + 1;
    }
    ft_srv_buf_put(b, s + run, n - run);
    ft_srv_buf_put(b, "\"", 1);
}

static void ft_srv_json_write(ft_srv_buf_t *b, const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        ft_srv_buf_put(b, "{", 1);
        const char *k;
        json_t *x;
        int first = 1;
        json_object_foreach((json_t *)v, k, x)
        {
            if (!first) ft_srv_buf_puts(b, ", ");
            first = 0;
            ft_srv_json_str(b, k, strlen(k));
            ft_srv_buf_puts(b, ": ");
            ft_srv_json_write(b, x);
        }
        ft_srv_buf_put(b, "}", 1);
        return;
    }
    case JSON_ARRAY: {
        ft_srv_buf_put(b, "[", 1);
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            if (i) ft_srv_buf_puts(b, ", ");
            ft_srv_json_write(b, x);
        }
        ft_srv_buf_put(b, "]", 1);
        return;
    }
    case JSON_STRING:
        ft_srv_json_str(b, json_string_value(v), json_string_length(v));
        return;
    case JSON_INTEGER:
        ft_srv_buf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return;
    case JSON_REAL:
        ft_srv_json_real(b, json_real_value(v));
        return;
    case JSON_TRUE:
        ft_srv_buf_puts(b, "true");
        return;
    case JSON_FALSE:
        ft_srv_buf_puts(b, "false");
        return;
    case JSON_NULL:
        ft_srv_buf_puts(b, "null");
        return;
    }
}

char *ft_srv_tojson(const json_t *v)
{
    /* our own writer: jansson's differs from Python's json.dumps in float
     * digits (17 significant, not the shortest) and \u00XX case */
    ft_srv_buf_t b = {0};
    if (v) ft_srv_json_write(&b, v);
    return v ? ft_srv_buf_take(&b) : NULL;
}

int ft_srv_conv_check_tool_choice(const ft_srv_conv_t *c, const char *param, ft_srv_error_t *err)
{
    if (!c->tool_choice_required) return 1;
    if (!c->tools) {
        ft_srv_error_set(err, 400, "invalid_request_error", param,
                         "'%s' forces a tool call but the request has no tools", param);
        return 0;
    }
    if (!c->tool_choice_name) return 1;
    size_t i;
    json_t *t;
    json_array_foreach(c->tools, i, t)
    {
        const char *name =
            json_string_value(json_object_get(json_object_get(t, "function"), "name"));
        if (name && !strcmp(name, c->tool_choice_name)) return 1;
    }
    ft_srv_error_set(err, 400, "invalid_request_error", param,
                     "'%s' names the tool '%.64s', which is not among the request's tools", param,
                     c->tool_choice_name);
    return 0;
}
