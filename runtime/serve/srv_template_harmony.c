/* gpt-oss's harmony chat template in C (srv_template_internal.h): a
 * system message (identity, date, reasoning effort, channels), a
 * developer message with the instructions and the tools as a TypeScript
 * namespace, then <|start|>ROLE...<|message|>...<|end|> turns. The Jinja
 * source this mirrors is tests/data/serve/templates/gpt_oss.jinja
 * (openai/gpt-oss-20b); its quirks (the whitespace inside nested object
 * types, a oneOf's " | \n") are reproduced on purpose. */
#include "srv_template_internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* Jinja truthiness of a JSON value (NULL: undefined). */
static int ft_srv_truthy(const json_t *v)
{
    switch (v ? json_typeof(v) : JSON_NULL) {
    case JSON_OBJECT:
        return json_object_size(v) > 0;
    case JSON_ARRAY:
        return json_array_size(v) > 0;
    case JSON_STRING:
        return json_string_length(v) > 0;
    case JSON_INTEGER:
        return json_integer_value(v) != 0;
    case JSON_REAL:
        return json_real_value(v) != 0.0;
    case JSON_TRUE:
        return 1;
    default:
        return 0;
    }
}

static int ft_srv_is(const json_t *v, const char *s)
{
    return json_is_string(v) && !strcmp(json_string_value(v), s);
}

/* name in (required or []) */
static int ft_srv_required(const json_t *required, const char *name)
{
    size_t i;
    json_t *x;
    json_array_foreach(required, i, x) if (ft_srv_is(x, name)) return 1;
    return 0;
}

/* The string field of an object ("" when absent: the template would fail
 * on it, and a tool without descriptions is common enough to accept). */
static const char *ft_srv_field(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static size_t ft_srv_n_chars(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += ((unsigned char)s[i] & 0xc0) != 0x80;
    return k;
}

/* The template's render_typescript_type macro. */
static void ft_srv_ts_type(ft_srv_buf_t *b, const json_t *spec, int depth)
{
    if (depth > 32) { /* deeper than any schema a person writes: no recursion bomb */
        ft_srv_buf_puts(b, "any");
        return;
    }
    const json_t *type = json_object_get(spec, "type");
    const int nullable = ft_srv_truthy(json_object_get(spec, "nullable"));
    if (ft_srv_is(type, "array")) {
        const json_t *items = json_object_get(spec, "items");
        if (ft_srv_truthy(items)) {
            const json_t *it = json_object_get(items, "type");
            if (ft_srv_is(it, "string"))
                ft_srv_buf_puts(b, "string[]");
            else if (ft_srv_is(it, "number") || ft_srv_is(it, "integer"))
                ft_srv_buf_puts(b, "number[]");
            else if (ft_srv_is(it, "boolean"))
                ft_srv_buf_puts(b, "boolean[]");
            else {
                ft_srv_buf_t inner = {0};
                ft_srv_ts_type(&inner, items, depth + 1);
                const char *s = inner.data ? inner.data : "";
                if (inner.oom) b->oom = 1;
                if (!strcmp(s, "object | object") || ft_srv_n_chars(s, inner.len) > 50) {
                    ft_srv_buf_puts(b, "any[]");
                } else {
                    ft_srv_buf_put(b, s, inner.len);
                    ft_srv_buf_puts(b, "[]");
                }
                ft_srv_buf_free(&inner);
            }
        } else {
            ft_srv_buf_puts(b, "any[]");
        }
        if (nullable) ft_srv_buf_puts(b, " | null");
    } else if (json_is_array(type) && json_array_size(type) > 0) {
        size_t i;
        json_t *x;
        json_array_foreach(type, i, x)
        {
            if (i) ft_srv_buf_puts(b, " | ");
            ft_srv_py_str(b, x);
        }
    } else if (ft_srv_truthy(json_object_get(spec, "oneOf"))) {
        /* the template's has_object_variants never leaves its loop (Jinja
         * scoping), so every oneOf lists its variants */
        const json_t *one = json_object_get(spec, "oneOf");
        const size_t nv = json_is_array(one) ? json_array_size(one) : 0;
        for (size_t i = 0; i < nv; i++) {
            const json_t *v = json_array_get(one, i);
            ft_srv_ts_type(b, v, depth + 1);
            const json_t *d = json_object_get(v, "description");
            if (ft_srv_truthy(d)) {
                ft_srv_buf_puts(b, "// ");
                ft_srv_py_str(b, d);
            }
            const json_t *def = json_object_get(v, "default");
            if (def) {
                ft_srv_buf_puts(b, "                    // default: ");
                ft_srv_buf_tojson(b, def);
            }
            if (i + 1 < nv) ft_srv_buf_puts(b, " | \n");
        }
    } else if (ft_srv_is(type, "string")) {
        const json_t *e = json_object_get(spec, "enum");
        if (ft_srv_truthy(e) && json_is_array(e)) {
            size_t i;
            json_t *x;
            ft_srv_buf_puts(b, "\"");
            json_array_foreach(e, i, x)
            {
                if (i) ft_srv_buf_puts(b, "\" | \"");
                ft_srv_py_str(b, x);
            }
            ft_srv_buf_puts(b, "\"");
        } else {
            ft_srv_buf_puts(b, nullable ? "string | null" : "string");
        }
    } else if (ft_srv_is(type, "number") || ft_srv_is(type, "integer")) {
        ft_srv_buf_puts(b, "number");
    } else if (ft_srv_is(type, "boolean")) {
        ft_srv_buf_puts(b, "boolean");
    } else if (ft_srv_is(type, "object")) {
        const json_t *props = json_object_get(spec, "properties");
        if (ft_srv_truthy(props) && json_is_object(props)) {
            const json_t *req = json_object_get(spec, "required");
            ft_srv_buf_puts(b, "{\n");
            const char *k;
            json_t *p;
            size_t left = json_object_size(props);
            json_object_foreach((json_t *)props, k, p)
            {
                ft_srv_buf_puts(b, k);
                if (!ft_srv_required(req, k)) ft_srv_buf_puts(b, "?");
                ft_srv_buf_puts(b, ": \n                ");
                ft_srv_ts_type(b, p, depth + 1);
                if (--left) ft_srv_buf_puts(b, ", ");
            }
            ft_srv_buf_puts(b, "}");
        } else {
            ft_srv_buf_puts(b, "object");
        }
    } else {
        ft_srv_buf_puts(b, "any");
    }
}

/* The template's render_tool_namespace("functions", tools). */
static void ft_srv_ts_namespace(ft_srv_buf_t *b, const json_t *tools)
{
    ft_srv_buf_puts(b, "## functions\n\nnamespace functions {\n\n");
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
    {
        const json_t *fn = json_object_get(t, "function");
        ft_srv_buf_puts(b, "// ");
        ft_srv_buf_puts(b, ft_srv_field(fn, "description"));
        ft_srv_buf_puts(b, "\ntype ");
        ft_srv_buf_puts(b, ft_srv_field(fn, "name"));
        ft_srv_buf_puts(b, " = (");
        const json_t *params = json_object_get(fn, "parameters");
        const json_t *props = json_object_get(params, "properties");
        if (!ft_srv_truthy(params) || !ft_srv_truthy(props) || !json_is_object(props)) {
            ft_srv_buf_puts(b, "\n}) => any;\n");
            continue;
        }
        const json_t *req = json_object_get(params, "required");
        ft_srv_buf_puts(b, "_: {\n");
        const char *k;
        json_t *p;
        size_t left = json_object_size(props);
        json_object_foreach((json_t *)props, k, p)
        {
            ft_srv_buf_puts(b, "// ");
            ft_srv_buf_puts(b, ft_srv_field(p, "description"));
            ft_srv_buf_puts(b, "\n");
            ft_srv_buf_puts(b, k);
            if (!ft_srv_required(req, k)) ft_srv_buf_puts(b, "?");
            ft_srv_buf_puts(b, ": ");
            ft_srv_ts_type(b, p, 0);
            const json_t *def = json_object_get(p, "default");
            if (def) {
                if (ft_srv_truthy(json_object_get(p, "oneOf"))) {
                    /* string + default: the template can only print a string one */
                    if (json_is_string(def)) {
                        ft_srv_buf_puts(b, "// default: ");
                        ft_srv_py_str(b, def);
                    }
                } else {
                    ft_srv_buf_puts(b, ", // default: ");
                    ft_srv_buf_tojson(b, def);
                }
            }
            if (--left) ft_srv_buf_puts(b, ",\n");
        }
        ft_srv_buf_puts(b, ",\n}) => any;\n");
    }
    ft_srv_buf_puts(b, "\n} // namespace functions");
}

static int ft_srv_has_channel_tags(const char *s)
{
    return s && (strstr(s, "<|channel|>analysis<|message|>") ||
                 strstr(s, "<|channel|>final<|message|>"));
}

static void ft_srv_harmony_msg(ft_srv_buf_t *b, const char *head, const char *text, const char *end)
{
    ft_srv_buf_puts(b, head);
    ft_srv_buf_puts(b, text);
    ft_srv_buf_puts(b, end);
}

int ft_srv_render_harmony(const ft_srv_conv_t *c, int add_generation_prompt, ft_srv_buf_t *b,
                          size_t *ends, ft_srv_error_t *err)
{
    char today[16];
    if (c->today) {
        snprintf(today, sizeof(today), "%.10s", c->today);
    } else {
        const time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(today, sizeof(today), "%Y-%m-%d", &tm);
    }
    ft_srv_buf_puts(b, "<|start|>system<|message|>You are ChatGPT, a large language model "
                       "trained by OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: ");
    ft_srv_buf_puts(b, today);
    ft_srv_buf_puts(b, "\n\nReasoning: ");
    ft_srv_buf_puts(b, c->reasoning_effort ? c->reasoning_effort : "medium");
    ft_srv_buf_puts(b, "\n\n# Valid channels: analysis, commentary, final. Channel must be "
                       "included for every message.\nCalls to these tools must go to the "
                       "commentary channel: 'functions'.<|end|>");
    const int sys0 = c->n_msgs && c->msgs[0].role == FT_SRV_SYSTEM;
    const char *dev = sys0 ? c->msgs[0].content : "";
    if (*dev || ft_srv_n_tools(c)) {
        ft_srv_buf_puts(b, "<|start|>developer<|message|>");
        if (*dev) {
            ft_srv_buf_puts(b, "# Instructions\n\n");
            ft_srv_buf_puts(b, dev);
        }
        if (ft_srv_n_tools(c)) {
            ft_srv_buf_puts(b, "\n\n# Tools\n\n");
            ft_srv_ts_namespace(b, c->tools);
        }
        ft_srv_buf_puts(b, "<|end|>");
    }
    if (sys0 && ends) ends[0] = b->len;
    const char *last_call = NULL;
    for (size_t i = sys0; i < c->n_msgs; i++) {
        const ft_srv_msg_t *m = &c->msgs[i];
        switch (m->role) {
        case FT_SRV_ASSISTANT: {
            if (ft_srv_has_channel_tags(m->content) || ft_srv_has_channel_tags(m->reasoning))
                return ft_srv_template_refuse(
                    err, "an assistant message's content or reasoning holds <|channel|> tags; "
                         "send the analysis as reasoning and the final text as content");
            const char *think = m->reasoning ? m->reasoning : "";
            if (m->n_calls) {
                /* the template renders the first call only */
                const ft_srv_tool_call_t *call = &m->calls[0];
                if (*m->content && *think)
                    return ft_srv_template_refuse(
                        err, "Cannot pass both content and thinking in an assistant message with "
                             "tool calls!");
                if (*m->content || *think)
                    ft_srv_harmony_msg(b, "<|start|>assistant<|channel|>analysis<|message|>",
                                       *m->content ? m->content : think, "<|end|>");
                ft_srv_buf_puts(b, "<|start|>assistant to=functions.");
                ft_srv_buf_puts(b, call->name);
                ft_srv_buf_puts(b, "<|channel|>commentary json<|message|>");
                json_t *args = ft_srv_call_args(call->arguments);
                if (!args) {
                    const char *a = call->arguments ? call->arguments : "";
                    args = json_stringn_nocheck(a, strlen(a));
                }
                ft_srv_buf_tojson(b, args);
                json_decref(args);
                ft_srv_buf_puts(b, "<|end|>");
                last_call = call->name;
            } else if (i + 1 == c->n_msgs && !add_generation_prompt) {
                if (m->reasoning)
                    ft_srv_harmony_msg(b, "<|start|>assistant<|channel|>analysis<|message|>",
                                       m->reasoning, "<|end|>");
                ft_srv_harmony_msg(b, "<|start|>assistant<|channel|>final<|message|>", m->content,
                                   "<|return|>");
            } else {
                ft_srv_harmony_msg(b, "<|start|>assistant<|channel|>final<|message|>", m->content,
                                   "<|end|>");
                last_call = NULL;
            }
            break;
        }
        case FT_SRV_TOOL: {
            if (!last_call)
                return ft_srv_template_refuse(err, "Message has tool role, but there was no "
                                                   "previous assistant message with a tool call!");
            ft_srv_buf_puts(b, "<|start|>functions.");
            ft_srv_buf_puts(b, last_call);
            ft_srv_buf_puts(b, " to=assistant<|channel|>commentary<|message|>");
            json_t *s = json_stringn_nocheck(m->content, strlen(m->content));
            ft_srv_buf_tojson(b, s);
            json_decref(s);
            ft_srv_buf_puts(b, "<|end|>");
            break;
        }
        case FT_SRV_USER:
            ft_srv_harmony_msg(b, "<|start|>user<|message|>", m->content, "<|end|>");
            break;
        case FT_SRV_SYSTEM: /* a later system message: the template drops it */
            break;
        }
        if (ends) ends[i] = b->len;
    }
    if (add_generation_prompt) ft_srv_buf_puts(b, "<|start|>assistant");
    return 1;
}
