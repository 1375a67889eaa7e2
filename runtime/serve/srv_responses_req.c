/* POST /v1/responses bodies (OpenAI's Responses API, what Codex speaks)
 * into a conversation (srv_conv.h). Stateless: previous_response_id and
 * background are refused. instructions become the leading system
 * message; input items become messages: message (any role; input_text /
 * output_text parts), function_call (a tool call of the assistant turn),
 * function_call_output (a tool message), reasoning (the reasoning of the
 * next assistant turn). Function tools are taken in their flat shape;
 * hosted tools (web_search, ...) are left out, as a local model cannot
 * run them. */
#include "srv_fields.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ft_srv_r_bad(ft_srv_error_t *err, const char *param, const char *msg)
{
    ft_srv_error_set(err, 400, "invalid_request_error", param, "'%s': %s", param, msg);
    return 0;
}

static int ft_srv_r_oom(ft_srv_error_t *err)
{
    ft_srv_error_set(err, 500, "server_error", "", "out of memory");
    return 0;
}

/* A string, or parts {type: input_text|output_text|text|reasoning_text, text}
 * joined. */
static int ft_srv_r_text(ft_srv_conv_t *c, json_t *v, const char *where, const char **out,
                         ft_srv_error_t *err)
{
    if (!v || json_is_null(v)) {
        *out = "";
        return 1;
    }
    if (json_is_string(v)) {
        *out = json_string_value(v);
        return 1;
    }
    if (!json_is_array(v)) return ft_srv_r_bad(err, where, "must be a string or an array of parts");
    ft_srv_buf_t b = {0};
    size_t i;
    json_t *part;
    json_array_foreach(v, i, part)
    {
        const char *type = json_string_value(json_object_get(part, "type"));
        json_t *text = json_object_get(part, "text");
        if (!type || !json_is_string(text) ||
            (strcmp(type, "input_text") && strcmp(type, "output_text") && strcmp(type, "text") &&
             strcmp(type, "reasoning_text"))) {
            ft_srv_buf_free(&b);
            return ft_srv_r_bad(err, where,
                                "parts must be {\"type\": \"input_text\"|\"output_text\", "
                                "\"text\": string} (images and files are not supported)");
        }
        ft_srv_buf_put(&b, json_string_value(text), json_string_length(text));
    }
    char *s = ft_srv_conv_strdup(c, b.data ? b.data : "", b.len);
    const int oom = b.oom;
    ft_srv_buf_free(&b);
    if (!s || oom) return ft_srv_r_oom(err);
    *out = s;
    return 1;
}

static ft_srv_msg_t *ft_srv_r_push(ft_srv_conv_t *c, size_t cap, ft_srv_role_t role)
{
    if (c->n_msgs >= cap) return NULL;
    ft_srv_msg_t *m = &c->msgs[c->n_msgs++];
    memset(m, 0, sizeof(*m));
    m->role = role;
    m->content = "";
    m->tool_call_id = "";
    return m;
}

static int ft_srv_r_items(ft_srv_conv_t *c, json_t *input, size_t cap, ft_srv_error_t *err)
{
    const char *pending_reasoning = NULL; /* for the next assistant turn */
    size_t i;
    json_t *it;
    json_array_foreach(input, i, it)
    {
        char where[48];
        snprintf(where, sizeof(where), "input[%zu]", i);
        if (!json_is_object(it)) return ft_srv_r_bad(err, where, "must be an object");
        const char *type = json_string_value(json_object_get(it, "type"));
        const char *role = json_string_value(json_object_get(it, "role"));
        if (!type && role) type = "message";
        if (!type) return ft_srv_r_bad(err, where, "needs a 'type'");
        if (!strcmp(type, "message")) {
            ft_srv_role_t r;
            if (!role) return ft_srv_r_bad(err, where, "a message needs a 'role'");
            if (!strcmp(role, "user"))
                r = FT_SRV_USER;
            else if (!strcmp(role, "assistant"))
                r = FT_SRV_ASSISTANT;
            else if (!strcmp(role, "system") || !strcmp(role, "developer"))
                r = FT_SRV_SYSTEM;
            else
                return ft_srv_r_bad(err, where,
                                    "role must be user, assistant, system or developer");
            ft_srv_msg_t *m = ft_srv_r_push(c, cap, r);
            if (!ft_srv_r_text(c, json_object_get(it, "content"), where, &m->content, err))
                return 0;
            if (r == FT_SRV_ASSISTANT) {
                m->reasoning = pending_reasoning;
                pending_reasoning = NULL;
            }
        } else if (!strcmp(type, "function_call")) {
            json_t *name = json_object_get(it, "name"), *args = json_object_get(it, "arguments");
            json_t *id = json_object_get(it, "call_id");
            if (!json_is_string(name) || (args && !json_is_string(args)))
                return ft_srv_r_bad(err, where,
                                    "a function_call needs a string 'name' and string 'arguments'");
            /* calls join the assistant turn they follow, or open one */
            ft_srv_msg_t *m = c->n_msgs ? &c->msgs[c->n_msgs - 1] : NULL;
            if (!m || m->role != FT_SRV_ASSISTANT) {
                m = ft_srv_r_push(c, cap, FT_SRV_ASSISTANT);
                m->reasoning = pending_reasoning;
                pending_reasoning = NULL;
            }
            ft_srv_tool_call_t *calls = ft_srv_conv_alloc(c, (m->n_calls + 1) * sizeof(*calls));
            if (!calls) return ft_srv_r_oom(err);
            if (m->n_calls) memcpy(calls, m->calls, m->n_calls * sizeof(*calls));
            calls[m->n_calls].name = json_string_value(name);
            calls[m->n_calls].arguments = args ? json_string_value(args) : "{}";
            calls[m->n_calls].id = json_is_string(id) ? json_string_value(id) : "";
            m->calls = calls;
            m->n_calls++;
        } else if (!strcmp(type, "function_call_output")) {
            ft_srv_msg_t *m = ft_srv_r_push(c, cap, FT_SRV_TOOL);
            json_t *id = json_object_get(it, "call_id");
            m->tool_call_id = json_is_string(id) ? json_string_value(id) : "";
            if (!ft_srv_r_text(c, json_object_get(it, "output"), where, &m->content, err)) return 0;
        } else if (!strcmp(type, "reasoning")) {
            const char *text = "";
            json_t *content = json_object_get(it, "content");
            if (content && !ft_srv_r_text(c, content, where, &text, err)) return 0;
            pending_reasoning = text;
        } else {
            ft_srv_error_set(err, 400, "invalid_request_error", where,
                             "'%s': items of type '%.40s' are not supported", where, type);
            return 0;
        }
    }
    return 1;
}

static int ft_srv_r_tools(ft_srv_conv_t *c, json_t *v, ft_srv_error_t *err)
{
    if (!v || json_is_null(v)) return 1;
    if (!json_is_array(v)) return ft_srv_r_bad(err, "tools", "must be an array");
    json_t *out = ft_srv_conv_keep(c, json_array());
    if (!out) return ft_srv_r_oom(err);
    size_t i;
    json_t *t;
    json_array_foreach(v, i, t)
    {
        const char *type = json_string_value(json_object_get(t, "type"));
        if (!type || strcmp(type, "function") != 0) continue; /* hosted tools: not ours to run */
        json_t *name = json_object_get(t, "name");
        if (!json_is_string(name))
            return ft_srv_r_bad(err, "tools", "a function tool needs a 'name'");
        json_t *fn = json_pack("{s:O}", "name", name);
        json_t *desc = json_object_get(t, "description"),
               *params = json_object_get(t, "parameters");
        if (fn && json_is_string(desc)) json_object_set(fn, "description", desc);
        if (fn && params && !json_is_null(params)) json_object_set(fn, "parameters", params);
        json_t *tool = fn ? json_pack("{s:s,s:o}", "type", "function", "function", fn) : NULL;
        if (!tool || json_array_append_new(out, tool) != 0) return ft_srv_r_oom(err);
    }
    if (json_array_size(out)) c->tools = out;
    return 1;
}

int ft_srv_responses_parse(json_t *root, ft_srv_conv_t *c, ft_srv_error_t *err)
{
    c->root = json_incref(root);
    ft_sampler_options_t *s = &c->sampling;
    json_t *prev = json_object_get(root, "previous_response_id");
    if (prev && !json_is_null(prev))
        return ft_srv_r_bad(err, "previous_response_id",
                            "this server keeps no responses; send the whole conversation");
    if (json_is_true(json_object_get(root, "background")))
        return ft_srv_r_bad(err, "background", "background responses are not supported");
    if (!ft_srv_get_string(root, "model", &c->model, err) ||
        !ft_srv_get_bool(root, "stream", &c->stream, err) ||
        !ft_srv_get_u32(root, "max_output_tokens", 1, UINT32_MAX, &c->max_tokens, err) ||
        !ft_srv_get_number(root, "temperature", 0, 2, &s->temperature, err) ||
        !ft_srv_get_number(root, "top_p", 0, 1, &s->top_p, err) ||
        !ft_srv_get_bool(root, "parallel_tool_calls", &c->parallel_tool_calls, err))
        return 0;
    json_t *tc = json_object_get(root, "tool_choice");
    json_t *tc_name = json_object_get(tc, "name");
    if (json_is_string(tc) && !strcmp(json_string_value(tc), "none"))
        c->tool_choice_none = 1;
    else if (json_is_string(tc) && !strcmp(json_string_value(tc), "required"))
        c->tool_choice_required = 1;
    else if (json_is_object(tc) && json_is_string(tc_name)) {
        c->tool_choice_required = 1;
        c->tool_choice_name = json_string_value(tc_name);
    } else if (tc && !json_is_null(tc) &&
               !(json_is_string(tc) && !strcmp(json_string_value(tc), "auto")))
        return ft_srv_r_bad(err, "tool_choice",
                            "must be \"auto\", \"none\", \"required\" or {\"type\": "
                            "\"function\", \"name\": ...}");
    const char *effort =
        json_string_value(json_object_get(json_object_get(root, "reasoning"), "effort"));
    if (effort && !strcmp(effort, "none")) c->enable_thinking = 0;
    static const char *const efforts[] = {"low", "medium", "high"}; /* harmony's Reasoning: */
    for (int i = 0; i < 3; i++)
        if (effort && !strcmp(effort, efforts[i])) c->reasoning_effort = efforts[i];
    json_t *input = json_object_get(root, "input");
    const char *instructions = NULL;
    if (!ft_srv_get_string(root, "instructions", &instructions, err)) return 0;
    if (!json_is_string(input) && !(json_is_array(input) && json_array_size(input)))
        return ft_srv_r_bad(err, "input", "must be a string or a non-empty array of items");
    if (json_is_array(input) && json_array_size(input) > FT_SRV_MAX_MESSAGES)
        return ft_srv_r_bad(err, "input", "has too many items");
    const size_t cap = 2 + (json_is_array(input) ? json_array_size(input) : 1);
    c->msgs = ft_srv_conv_alloc(c, cap * sizeof(*c->msgs));
    if (!c->msgs) return ft_srv_r_oom(err);
    if (instructions) ft_srv_r_push(c, cap, FT_SRV_SYSTEM)->content = instructions;
    if (json_is_string(input)) {
        ft_srv_r_push(c, cap, FT_SRV_USER)->content = json_string_value(input);
    } else if (!ft_srv_r_items(c, input, cap, err)) {
        return 0;
    }
    /* several system/developer messages: one leading system message, as the
     * Qwen templates want (a later one would render as its own turn) */
    size_t n_sys = 0;
    for (size_t i = 0; i < c->n_msgs; i++)
        n_sys += c->msgs[i].role == FT_SRV_SYSTEM;
    if (n_sys > 1 || (n_sys == 1 && c->msgs[0].role != FT_SRV_SYSTEM)) {
        ft_srv_buf_t b = {0};
        size_t k = 0, w = 1;
        for (size_t i = 0; i < c->n_msgs; i++)
            if (c->msgs[i].role == FT_SRV_SYSTEM) {
                if (k++) ft_srv_buf_puts(&b, "\n\n");
                ft_srv_buf_puts(&b, c->msgs[i].content);
            }
        char *merged = ft_srv_conv_strdup(c, b.data ? b.data : "", b.len);
        const int oom = b.oom;
        ft_srv_buf_free(&b);
        if (!merged || oom) return ft_srv_r_oom(err);
        ft_srv_msg_t first = {.role = FT_SRV_SYSTEM, .content = merged, .tool_call_id = ""};
        ft_srv_msg_t *rest = ft_srv_conv_alloc(c, cap * sizeof(*rest));
        if (!rest) return ft_srv_r_oom(err);
        rest[0] = first;
        for (size_t i = 0; i < c->n_msgs; i++)
            if (c->msgs[i].role != FT_SRV_SYSTEM) rest[w++] = c->msgs[i];
        c->msgs = rest;
        c->n_msgs = w;
    }
    return ft_srv_r_tools(c, json_object_get(root, "tools"), err);
}
