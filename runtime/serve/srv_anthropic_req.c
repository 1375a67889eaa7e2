/* POST /v1/messages bodies into a conversation (srv_conv.h), as
 * Anthropic's Messages API defines them: system as a string or text
 * blocks (merged into one leading system message; Claude Code's
 * per-request "x-anthropic-billing-header:" block is dropped, since it
 * changes every request and would defeat prefix reuse), content as a
 * string or blocks (text, thinking, tool_use, tool_result;
 * redacted_thinking and cache_control are accepted and ignored). */
#include "srv_fields.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ft_srv_a_oom(ft_srv_error_t *err)
{
    ft_srv_error_set(err, 500, "server_error", "", "out of memory");
    return 0;
}

static int ft_srv_a_bad(ft_srv_error_t *err, const char *where, const char *what)
{
    ft_srv_error_set(err, 400, "invalid_request_error", where, "%s: %s", where, what);
    return 0;
}

/* s without its first line when that starts with prefix (NULL: none):
 * Claude Code's "x-anthropic-billing-header: cc_version=...; cch=NONCE;"
 * changes with every request, and left in the system text it would make
 * each prompt differ from the last from its first tokens on. */
static const char *ft_srv_a_skip_line(const char *s, const char *prefix)
{
    if (!prefix || strncmp(s, prefix, strlen(prefix)) != 0) return s;
    const char *nl = strchr(s, '\n');
    return nl ? nl + 1 : s + strlen(s);
}

/* Text of a string or an array of text blocks, joined with sep; a first
 * line starting with skip_prefix (when not NULL) is left out of each, and
 * a block that was only that line with it. */
static int ft_srv_a_text(ft_srv_conv_t *c, json_t *v, const char *sep, const char *skip_prefix,
                         const char *where, const char **out, ft_srv_error_t *err)
{
    if (!v || json_is_null(v)) {
        *out = "";
        return 1;
    }
    if (json_is_string(v)) {
        *out = ft_srv_a_skip_line(json_string_value(v), skip_prefix);
        return 1;
    }
    if (!json_is_array(v))
        return ft_srv_a_bad(err, where, "must be a string or an array of blocks");
    ft_srv_buf_t b = {0};
    size_t i, n = 0;
    json_t *blk;
    json_array_foreach(v, i, blk)
    {
        json_t *type = json_object_get(blk, "type"), *text = json_object_get(blk, "text");
        if (!json_is_string(type) || strcmp(json_string_value(type), "text") != 0 ||
            !json_is_string(text)) {
            ft_srv_buf_free(&b);
            return ft_srv_a_bad(err, where,
                                "blocks here must be {\"type\": \"text\", \"text\": string}");
        }
        const char *s = json_string_value(text);
        const char *rest = ft_srv_a_skip_line(s, skip_prefix);
        if (rest != s && !*rest) continue; /* the block was the header alone */
        if (n++) ft_srv_buf_puts(&b, sep);
        ft_srv_buf_put(&b, rest, json_string_length(text) - (size_t)(rest - s));
    }
    char *s = ft_srv_conv_strdup(c, b.data ? b.data : "", b.len);
    const int oom = b.oom;
    ft_srv_buf_free(&b);
    if (!s || oom) return ft_srv_a_oom(err);
    *out = s;
    return 1;
}

static ft_srv_msg_t *ft_srv_a_push(ft_srv_conv_t *c, size_t cap, ft_srv_role_t role)
{
    if (c->n_msgs >= cap) return NULL;
    ft_srv_msg_t *m = &c->msgs[c->n_msgs++];
    memset(m, 0, sizeof(*m));
    m->role = role;
    m->content = "";
    m->tool_call_id = "";
    return m;
}

/* One user message: each tool_result becomes a tool message (in order),
 * then the text blocks one user message. */
static int ft_srv_a_user(ft_srv_conv_t *c, size_t cap, json_t *content, const char *where,
                         ft_srv_error_t *err)
{
    if (json_is_string(content)) {
        ft_srv_a_push(c, cap, FT_SRV_USER)->content = json_string_value(content);
        return 1;
    }
    if (!json_is_array(content))
        return ft_srv_a_bad(err, where, "must be a string or an array of blocks");
    ft_srv_buf_t text = {0};
    int any_text = 0;
    size_t i;
    json_t *blk;
    json_array_foreach(content, i, blk)
    {
        const char *type = json_string_value(json_object_get(blk, "type"));
        if (!type) {
            ft_srv_buf_free(&text);
            return ft_srv_a_bad(err, where, "every block needs a string 'type'");
        }
        if (!strcmp(type, "text")) {
            json_t *t = json_object_get(blk, "text");
            if (!json_is_string(t)) {
                ft_srv_buf_free(&text);
                return ft_srv_a_bad(err, where, "a text block needs a string 'text'");
            }
            if (any_text++) ft_srv_buf_puts(&text, "\n");
            ft_srv_buf_put(&text, json_string_value(t), json_string_length(t));
        } else if (!strcmp(type, "tool_result")) {
            ft_srv_msg_t *m = ft_srv_a_push(c, cap, FT_SRV_TOOL);
            json_t *id = json_object_get(blk, "tool_use_id");
            m->tool_call_id = json_is_string(id) ? json_string_value(id) : "";
            if (!ft_srv_a_text(c, json_object_get(blk, "content"), "\n", NULL, where, &m->content,
                               err)) {
                ft_srv_buf_free(&text);
                return 0;
            }
        } else {
            ft_srv_buf_free(&text);
            ft_srv_error_set(err, 400, "invalid_request_error", where,
                             "%s: blocks of type '%.32s' are not supported in user messages "
                             "(text and tool_result are)",
                             where, type);
            return 0;
        }
    }
    if (any_text) {
        char *s = ft_srv_conv_strdup(c, text.data ? text.data : "", text.len);
        if (!s || text.oom) {
            ft_srv_buf_free(&text);
            return ft_srv_a_oom(err);
        }
        ft_srv_a_push(c, cap, FT_SRV_USER)->content = s;
    }
    ft_srv_buf_free(&text);
    return 1;
}

static int ft_srv_a_assistant(ft_srv_conv_t *c, size_t cap, json_t *content, const char *where,
                              ft_srv_error_t *err)
{
    ft_srv_msg_t *m = ft_srv_a_push(c, cap, FT_SRV_ASSISTANT);
    if (json_is_string(content)) {
        m->content = json_string_value(content);
        return 1;
    }
    if (!json_is_array(content))
        return ft_srv_a_bad(err, where, "must be a string or an array of blocks");
    size_t n_calls = 0, i;
    json_t *blk;
    json_array_foreach(content, i, blk)
    {
        const char *type = json_string_value(json_object_get(blk, "type"));
        if (type && !strcmp(type, "tool_use")) n_calls++;
    }
    m->calls = ft_srv_conv_alloc(c, (n_calls ? n_calls : 1) * sizeof(*m->calls));
    if (!m->calls) return ft_srv_a_oom(err);
    ft_srv_buf_t text = {0};
    json_array_foreach(content, i, blk)
    {
        const char *type = json_string_value(json_object_get(blk, "type"));
        if (!type) {
            ft_srv_buf_free(&text);
            return ft_srv_a_bad(err, where, "every block needs a string 'type'");
        }
        if (!strcmp(type, "text")) {
            json_t *t = json_object_get(blk, "text");
            if (!json_is_string(t)) {
                ft_srv_buf_free(&text);
                return ft_srv_a_bad(err, where, "a text block needs a string 'text'");
            }
            ft_srv_buf_put(&text, json_string_value(t), json_string_length(t));
        } else if (!strcmp(type, "thinking")) {
            json_t *t = json_object_get(blk, "thinking");
            if (json_is_string(t)) m->reasoning = json_string_value(t);
        } else if (!strcmp(type, "tool_use")) {
            json_t *id = json_object_get(blk, "id"), *name = json_object_get(blk, "name");
            json_t *input = json_object_get(blk, "input");
            if (!json_is_string(name) || (input && !json_is_object(input))) {
                ft_srv_buf_free(&text);
                return ft_srv_a_bad(err, where,
                                    "a tool_use block needs a string 'name' and an object 'input'");
            }
            ft_srv_tool_call_t *call = &m->calls[m->n_calls++];
            call->id = json_is_string(id) ? json_string_value(id) : "";
            call->name = json_string_value(name);
            char *args = input ? ft_srv_tojson(input) : strdup("{}");
            call->arguments = args ? ft_srv_conv_strdup(c, args, strlen(args)) : NULL;
            free(args);
            if (!call->arguments) {
                ft_srv_buf_free(&text);
                return ft_srv_a_oom(err);
            }
        } else if (strcmp(type, "redacted_thinking") != 0) {
            ft_srv_buf_free(&text);
            ft_srv_error_set(err, 400, "invalid_request_error", where,
                             "%s: blocks of type '%.32s' are not supported in assistant messages",
                             where, type);
            return 0;
        }
    }
    m->content = ft_srv_conv_strdup(c, text.data ? text.data : "", text.len);
    const int oom = text.oom;
    ft_srv_buf_free(&text);
    if (!m->content || oom) return ft_srv_a_oom(err);
    return 1;
}

static int ft_srv_a_tools(ft_srv_conv_t *c, json_t *v, ft_srv_error_t *err)
{
    if (!v || json_is_null(v)) return 1;
    if (!json_is_array(v)) return ft_srv_a_bad(err, "tools", "must be an array");
    json_t *out = ft_srv_conv_keep(c, json_array());
    if (!out) return ft_srv_a_oom(err);
    size_t i;
    json_t *t;
    json_array_foreach(v, i, t)
    {
        json_t *name = json_object_get(t, "name"), *desc = json_object_get(t, "description");
        json_t *schema = json_object_get(t, "input_schema");
        if (!json_is_string(name))
            return ft_srv_a_bad(err, "tools", "every tool needs a string 'name'");
        json_t *fn = json_pack("{s:O}", "name", name);
        if (fn && json_is_string(desc)) json_object_set(fn, "description", desc);
        if (fn && schema) json_object_set(fn, "parameters", schema);
        json_t *tool = fn ? json_pack("{s:s,s:o}", "type", "function", "function", fn) : NULL;
        if (!tool || json_array_append_new(out, tool) != 0) return ft_srv_a_oom(err);
    }
    if (json_array_size(out)) c->tools = out;
    return 1;
}

static int ft_srv_a_options(ft_srv_conv_t *c, json_t *root, int count_only, ft_srv_error_t *err)
{
    ft_sampler_options_t *s = &c->sampling;
    json_t *mt = json_object_get(root, "max_tokens");
    if (!count_only && !mt) return ft_srv_a_bad(err, "max_tokens", "is required");
    if (!ft_srv_get_string(root, "model", &c->model, err) ||
        !ft_srv_get_bool(root, "stream", &c->stream, err) ||
        !ft_srv_get_u32(root, "max_tokens", 1, UINT32_MAX, &c->max_tokens, err) ||
        !ft_srv_get_number(root, "temperature", 0, 1, &s->temperature, err) ||
        !ft_srv_get_number(root, "top_p", 0, 1, &s->top_p, err) ||
        !ft_srv_get_u32(root, "top_k", 0, UINT32_MAX, &s->top_k, err) ||
        !ft_srv_get_stops(c, root, "stop_sequences", err))
        return 0;
    json_t *tc = json_object_get(root, "tool_choice");
    if (tc && !json_is_null(tc)) {
        const char *type = json_string_value(json_object_get(tc, "type"));
        json_t *name = json_object_get(tc, "name");
        if (type && !strcmp(type, "none"))
            c->tool_choice_none = 1;
        else if (type && !strcmp(type, "any"))
            c->tool_choice_required = 1;
        else if (type && !strcmp(type, "tool") && json_is_string(name)) {
            c->tool_choice_required = 1;
            c->tool_choice_name = json_string_value(name);
        } else if (!type || strcmp(type, "auto") != 0)
            return ft_srv_a_bad(err, "tool_choice",
                                "must be {\"type\": \"auto\"|\"any\"|\"none\"} or {\"type\": "
                                "\"tool\", \"name\": ...}");
        json_t *dp = json_object_get(tc, "disable_parallel_tool_use");
        if (json_is_true(dp)) c->parallel_tool_calls = 0;
    }
    json_t *th = json_object_get(root, "thinking");
    if (th && !json_is_null(th)) {
        const char *type = json_string_value(json_object_get(th, "type"));
        if (!type)
            return ft_srv_a_bad(err, "thinking",
                                "must be {\"type\": \"enabled\"|\"disabled\"|\"adaptive\"}");
        if (!strcmp(type, "disabled"))
            c->enable_thinking = 0;
        else if (!strcmp(type, "enabled") || !strcmp(type, "adaptive"))
            c->enable_thinking = 1;
        else
            return ft_srv_a_bad(err, "thinking", "type must be enabled, disabled or adaptive");
    }
    return 1;
}

int ft_srv_anthropic_parse(json_t *root, int count_only, ft_srv_conv_t *c, ft_srv_error_t *err)
{
    c->root = json_incref(root);
    if (!ft_srv_a_options(c, root, count_only, err)) return 0;
    json_t *msgs = json_object_get(root, "messages");
    if (!json_is_array(msgs) || json_array_size(msgs) == 0)
        return ft_srv_a_bad(err, "messages", "must be a non-empty array");
    if (json_array_size(msgs) > FT_SRV_MAX_MESSAGES)
        return ft_srv_a_bad(err, "messages", "has too many entries");
    /* every block could become a message, plus the system one */
    size_t cap = 1, i;
    json_t *m;
    json_array_foreach(msgs, i, m)
    {
        json_t *content = json_object_get(m, "content");
        cap += json_is_array(content) ? json_array_size(content) + 1 : 1;
    }
    c->msgs = ft_srv_conv_alloc(c, cap * sizeof(*c->msgs));
    if (!c->msgs) return ft_srv_a_oom(err);
    json_t *system = json_object_get(root, "system");
    if (system && !json_is_null(system)) {
        const char *text;
        if (!ft_srv_a_text(c, system, "\n", "x-anthropic-billing-header:", "system", &text, err))
            return 0;
        ft_srv_a_push(c, cap, FT_SRV_SYSTEM)->content = text;
    }
    json_array_foreach(msgs, i, m)
    {
        char where[64];
        snprintf(where, sizeof(where), "messages[%zu]", i);
        const char *role = json_string_value(json_object_get(m, "role"));
        json_t *content = json_object_get(m, "content");
        if (!json_is_object(m) || !role)
            return ft_srv_a_bad(err, where, "must be an object with a string 'role'");
        snprintf(where, sizeof(where), "messages[%zu].content", i);
        if (!strcmp(role, "user")) {
            if (!ft_srv_a_user(c, cap, content, where, err)) return 0;
        } else if (!strcmp(role, "assistant")) {
            if (!ft_srv_a_assistant(c, cap, content, where, err)) return 0;
        } else if (!strcmp(role, "system")) {
            /* Claude Code 2.1 sends its environment notes as a system
             * message after the first user turn: it stays where it is (the
             * templates render a later system message as their model's
             * own template does) */
            ft_srv_msg_t *sm = ft_srv_a_push(c, cap, FT_SRV_SYSTEM);
            if (!ft_srv_a_text(c, content, "\n", NULL, where, &sm->content, err)) return 0;
        } else {
            snprintf(where, sizeof(where), "messages[%zu].role", i);
            return ft_srv_a_bad(err, where, "must be 'user', 'assistant' or 'system'");
        }
    }
    return ft_srv_a_tools(c, json_object_get(root, "tools"), err);
}
