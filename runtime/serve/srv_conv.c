/* The request body as JSON and the conversation it holds (srv_conv.h):
 * ownership helpers, the JSON reader's limits, tojson. */
#include "srv_conv.h"

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

int ft_srv_json_parse(const char *body, size_t n, json_t **out_root, ft_srv_error_t *err)
{
    *out_root = NULL;
    json_error_t je;
    json_t *root = json_loadb(body, n, JSON_REJECT_DUPLICATES, &je);
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
    *out_root = root;
    return 1;
}

char *ft_srv_tojson(const json_t *v)
{
    /* jansson without JSON_COMPACT separates with ", " and ": " as
     * Python's json.dumps does; objects keep their insertion order. */
    return json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
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
