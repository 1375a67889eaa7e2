/* POST /v1/chat/completions bodies into a conversation (srv_conv.h).
 * Unknown fields are ignored (clients send many); known ones are checked
 * for type and range, and an error names the field as OpenAI does
 * ("messages[1].role"). */
#include "srv_fields.h"
#include "srv_json_schema.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ft_srv_oom(ft_srv_error_t *err)
{
    ft_srv_error_set(err, 500, "server_error", "", "out of memory");
    return 0;
}

/* content: a string, null, or an array of {"type":"text","text":...}
 * parts, joined as they come. */
static int ft_srv_openai_content(ft_srv_conv_t *c, json_t *v, const char *where, const char **out,
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
    if (!json_is_array(v)) {
        ft_srv_error_set(err, 400, "invalid_request_error", where,
                         "'%s' must be a string, null or an array of content parts", where);
        return 0;
    }
    size_t total = 0, i;
    json_t *part;
    json_array_foreach(v, i, part)
    {
        json_t *type = json_object_get(part, "type"), *text = json_object_get(part, "text");
        if (!json_is_object(part) || !json_is_string(type)) {
            ft_srv_error_set(err, 400, "invalid_request_error", where,
                             "'%s[%zu]' must be a content part object with a 'type'", where, i);
            return 0;
        }
        if (strcmp(json_string_value(type), "text") != 0 || !json_is_string(text)) {
            ft_srv_error_set(err, 400, "invalid_request_error", where,
                             "'%s[%zu]': content parts of type '%s' are not supported (only "
                             "'text' with a string 'text')",
                             where, i, json_string_value(type));
            return 0;
        }
        total += json_string_length(text);
    }
    char *s = ft_srv_conv_alloc(c, total + 1);
    if (!s) return ft_srv_oom(err);
    size_t at = 0;
    json_array_foreach(v, i, part)
    {
        json_t *text = json_object_get(part, "text");
        memcpy(s + at, json_string_value(text), json_string_length(text));
        at += json_string_length(text);
    }
    *out = s;
    return 1;
}

static int ft_srv_openai_calls(ft_srv_conv_t *c, json_t *v, size_t mi, ft_srv_msg_t *m,
                               ft_srv_error_t *err)
{
    char where[96];
    snprintf(where, sizeof(where), "messages[%zu].tool_calls", mi);
    if (!v || json_is_null(v)) return 1;
    if (!json_is_array(v)) {
        ft_srv_error_set(err, 400, "invalid_request_error", where, "'%s' must be an array", where);
        return 0;
    }
    m->n_calls = json_array_size(v);
    m->calls = ft_srv_conv_alloc(c, (m->n_calls ? m->n_calls : 1) * sizeof(*m->calls));
    if (!m->calls) return ft_srv_oom(err);
    for (size_t i = 0; i < m->n_calls; i++) {
        json_t *tc = json_array_get(v, i);
        json_t *fn = json_object_get(tc, "function");
        json_t *name = json_object_get(fn, "name"), *args = json_object_get(fn, "arguments");
        json_t *id = json_object_get(tc, "id");
        if (!json_is_object(tc) || !json_is_object(fn) || !json_is_string(name)) {
            ft_srv_error_set(err, 400, "invalid_request_error", where,
                             "'%s[%zu]' must be {\"id\", \"type\": \"function\", \"function\": "
                             "{\"name\": string, \"arguments\": string}}",
                             where, i);
            return 0;
        }
        ft_srv_tool_call_t *call = &m->calls[i];
        call->name = json_string_value(name);
        call->id = json_is_string(id) ? json_string_value(id) : "";
        if (json_is_string(args)) {
            call->arguments = json_string_value(args);
        } else if (json_is_object(args)) {
            char *s = ft_srv_tojson(args);
            if (!s) return ft_srv_oom(err);
            call->arguments = ft_srv_conv_strdup(c, s, strlen(s));
            free(s);
            if (!call->arguments) return ft_srv_oom(err);
        } else if (!args || json_is_null(args)) {
            call->arguments = "{}";
        } else {
            ft_srv_error_set(err, 400, "invalid_request_error", where,
                             "'%s[%zu].function.arguments' must be a JSON string", where, i);
            return 0;
        }
    }
    return 1;
}

static int ft_srv_openai_messages(ft_srv_conv_t *c, json_t *arr, ft_srv_error_t *err)
{
    if (!json_is_array(arr) || json_array_size(arr) == 0) {
        ft_srv_error_set(err, 400, "invalid_request_error", "messages",
                         "'messages' must be a non-empty array");
        return 0;
    }
    const size_t n = json_array_size(arr);
    if (n > FT_SRV_MAX_MESSAGES) {
        ft_srv_error_set(err, 400, "invalid_request_error", "messages",
                         "'messages' has %zu entries; at most %d are accepted", n,
                         FT_SRV_MAX_MESSAGES);
        return 0;
    }
    c->msgs = ft_srv_conv_alloc(c, n * sizeof(*c->msgs));
    if (!c->msgs) return ft_srv_oom(err);
    c->n_msgs = n;
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(arr, i);
        char where[64];
        snprintf(where, sizeof(where), "messages[%zu]", i);
        json_t *role = json_object_get(m, "role");
        if (!json_is_object(m) || !json_is_string(role)) {
            ft_srv_error_set(err, 400, "invalid_request_error", where,
                             "'%s' must be an object with a string 'role'", where);
            return 0;
        }
        const char *r = json_string_value(role);
        ft_srv_msg_t *out = &c->msgs[i];
        if (!strcmp(r, "system") || !strcmp(r, "developer"))
            out->role = FT_SRV_SYSTEM;
        else if (!strcmp(r, "user"))
            out->role = FT_SRV_USER;
        else if (!strcmp(r, "assistant"))
            out->role = FT_SRV_ASSISTANT;
        else if (!strcmp(r, "tool"))
            out->role = FT_SRV_TOOL;
        else {
            snprintf(where, sizeof(where), "messages[%zu].role", i);
            ft_srv_error_set(err, 400, "invalid_request_error", where,
                             "'%s' is '%.64s'; expected system, developer, user, assistant or "
                             "tool",
                             where, r);
            return 0;
        }
        snprintf(where, sizeof(where), "messages[%zu].content", i);
        if (!ft_srv_openai_content(c, json_object_get(m, "content"), where, &out->content, err))
            return 0;
        json_t *rs = json_object_get(m, "reasoning_content");
        if (!rs || json_is_null(rs)) rs = json_object_get(m, "reasoning");
        if (json_is_string(rs))
            out->reasoning = json_string_value(rs);
        else if (rs && !json_is_null(rs)) {
            snprintf(where, sizeof(where), "messages[%zu].reasoning_content", i);
            ft_srv_error_set(err, 400, "invalid_request_error", where, "'%s' must be a string",
                             where);
            return 0;
        }
        if (out->role == FT_SRV_ASSISTANT &&
            !ft_srv_openai_calls(c, json_object_get(m, "tool_calls"), i, out, err))
            return 0;
        json_t *tid = json_object_get(m, "tool_call_id");
        out->tool_call_id = json_is_string(tid) ? json_string_value(tid) : "";
    }
    return 1;
}

/* tools: [{"type": "function", "function": {"name": ..., ...}}]. */
static int ft_srv_openai_tools(ft_srv_conv_t *c, json_t *v, ft_srv_error_t *err)
{
    if (!v || json_is_null(v)) return 1;
    if (!json_is_array(v)) {
        ft_srv_error_set(err, 400, "invalid_request_error", "tools", "'tools' must be an array");
        return 0;
    }
    size_t i;
    json_t *t;
    json_array_foreach(v, i, t)
    {
        json_t *type = json_object_get(t, "type"), *fn = json_object_get(t, "function");
        if (!json_is_object(t) || !json_is_string(type) ||
            strcmp(json_string_value(type), "function") != 0 || !json_is_object(fn) ||
            !json_is_string(json_object_get(fn, "name"))) {
            char where[48];
            snprintf(where, sizeof(where), "tools[%zu]", i);
            ft_srv_error_set(err, 400, "invalid_request_error", where,
                             "'%s' must be {\"type\": \"function\", \"function\": {\"name\": "
                             "string, ...}}",
                             where);
            return 0;
        }
    }
    if (json_array_size(v)) c->tools = v;
    return 1;
}

static int ft_srv_openai_tool_choice(ft_srv_conv_t *c, json_t *v, ft_srv_error_t *err)
{
    if (!v || json_is_null(v)) return 1;
    if (json_is_string(v) && !strcmp(json_string_value(v), "auto")) return 1;
    if (json_is_string(v) && !strcmp(json_string_value(v), "none")) {
        c->tool_choice_none = 1;
        return 1;
    }
    if (json_is_string(v) && !strcmp(json_string_value(v), "required")) {
        c->tool_choice_required = 1;
        return 1;
    }
    json_t *name = json_object_get(json_object_get(v, "function"), "name");
    if (json_is_object(v) && json_is_string(name)) {
        c->tool_choice_required = 1;
        c->tool_choice_name = json_string_value(name);
        return 1;
    }
    ft_srv_error_set(err, 400, "invalid_request_error", "tool_choice",
                     "'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\": "
                     "\"function\", \"function\": {\"name\": ...}}");
    return 0;
}

static int ft_srv_openai_bias(ft_srv_conv_t *c, json_t *v, uint32_t n_vocab, ft_srv_error_t *err)
{
    if (!v || json_is_null(v)) return 1;
    if (!json_is_object(v)) {
        ft_srv_error_set(err, 400, "invalid_request_error", "logit_bias",
                         "'logit_bias' must be an object of token id -> bias");
        return 0;
    }
    const size_t n = json_object_size(v);
    c->bias = ft_srv_conv_alloc(c, (n ? n : 1) * sizeof(*c->bias));
    if (!c->bias) return ft_srv_oom(err);
    const char *k;
    json_t *x;
    size_t i = 0;
    json_object_foreach(v, k, x)
    {
        char *end = NULL;
        const long id = strtol(k, &end, 10);
        if (!*k || *end || id < 0 || (unsigned long)id >= n_vocab || !json_is_number(x) ||
            !(fabs(json_number_value(x)) <= 100.0)) {
            ft_srv_error_set(err, 400, "invalid_request_error", "logit_bias",
                             "'logit_bias' entry '%.32s': keys are token ids below %u, values "
                             "numbers between -100 and 100",
                             k, n_vocab);
            return 0;
        }
        /* OpenAI: -100 "should result in a ban" */
        const double b = json_number_value(x);
        c->bias[i].id = (int32_t)id;
        c->bias[i].bias = b <= -100.0 ? -INFINITY : (float)b;
        i++;
    }
    c->sampling.logit_bias = c->bias;
    c->sampling.n_logit_bias = (uint32_t)n;
    return 1;
}

static int ft_srv_openai_options(ft_srv_conv_t *c, json_t *root, uint32_t n_vocab,
                                 ft_srv_error_t *err)
{
    ft_sampler_options_t *s = &c->sampling;
    uint32_t n = 1, max_tokens = 0, top_logprobs = 0;
    int include_usage = 0;
    json_t *so = json_object_get(root, "stream_options");
    if (so && !json_is_null(so) && !json_is_object(so)) {
        ft_srv_error_set(err, 400, "invalid_request_error", "stream_options",
                         "'stream_options' must be an object");
        return 0;
    }
    if (!ft_srv_get_string(root, "model", &c->model, err) ||
        !ft_srv_get_bool(root, "stream", &c->stream, err) ||
        (so && !ft_srv_get_bool(so, "include_usage", &include_usage, err)) ||
        !ft_srv_get_u32(root, "n", 1, 1, &n, err) ||
        !ft_srv_get_u32(root, "max_tokens", 1, UINT32_MAX, &max_tokens, err) ||
        !ft_srv_get_u32(root, "max_completion_tokens", 1, UINT32_MAX, &max_tokens, err) ||
        !ft_srv_get_number(root, "temperature", 0, 2, &s->temperature, err) ||
        !ft_srv_get_number(root, "top_p", 0, 1, &s->top_p, err) ||
        !ft_srv_get_u32(root, "top_k", 0, UINT32_MAX, &s->top_k, err) ||
        !ft_srv_get_number(root, "min_p", 0, 1, &s->min_p, err) ||
        !ft_srv_get_number(root, "repeat_penalty", 0, 100, &s->repeat_penalty, err) ||
        !ft_srv_get_number(root, "presence_penalty", -2, 2, &s->presence_penalty, err) ||
        !ft_srv_get_number(root, "frequency_penalty", -2, 2, &s->frequency_penalty, err) ||
        !ft_srv_get_seed(c, root, "seed", err) ||
        !ft_srv_get_bool(root, "logprobs", &c->logprobs, err) ||
        !ft_srv_get_u32(root, "top_logprobs", 0, FT_SAMPLER_MAX_TOP_LOGPROBS, &top_logprobs, err) ||
        !ft_srv_get_bool(root, "parallel_tool_calls", &c->parallel_tool_calls, err) ||
        !ft_srv_get_stops(c, root, "stop", err) ||
        !ft_srv_openai_bias(c, json_object_get(root, "logit_bias"), n_vocab, err) ||
        !ft_srv_openai_tool_choice(c, json_object_get(root, "tool_choice"), err))
        return 0;
    c->include_usage = include_usage;
    c->max_tokens = max_tokens;
    if (top_logprobs && !c->logprobs) {
        ft_srv_error_set(err, 400, "invalid_request_error", "top_logprobs",
                         "'top_logprobs' needs 'logprobs': true");
        return 0;
    }
    s->top_logprobs = top_logprobs;
    json_t *rf = json_object_get(root, "response_format");
    if (rf && !json_is_null(rf)) {
        json_t *t = json_object_get(rf, "type");
        const char *type = json_is_object(rf) && json_is_string(t) ? json_string_value(t) : "";
        if (!strcmp(type, "json_object")) {
            c->json_object = 1;
        } else if (!strcmp(type, "json_schema")) {
            json_t *js = json_object_get(rf, "json_schema");
            json_t *schema = json_object_get(js, "schema");
            if (!json_is_object(schema)) {
                ft_srv_error_set(err, 400, "invalid_request_error",
                                 "response_format.json_schema.schema",
                                 "'response_format.json_schema.schema' must be a JSON schema "
                                 "object");
                return 0;
            }
            if (!ft_srv_js_compile(schema, "response_format.json_schema.schema", &c->json_schema,
                                   err))
                return 0;
            c->json_object = 1; /* the reply is one object (and more) */
        } else if (strcmp(type, "text") != 0) {
            ft_srv_error_set(err, 400, "invalid_request_error", "response_format",
                             "'response_format' must be {\"type\": \"text\"}, {\"type\": "
                             "\"json_object\"} or {\"type\": \"json_schema\", ...}");
            return 0;
        }
    }
    json_t *kw = json_object_get(root, "chat_template_kwargs");
    json_t *et = json_object_get(kw, "enable_thinking");
    if (et && !json_is_null(et)) {
        if (!json_is_boolean(et)) {
            ft_srv_error_set(err, 400, "invalid_request_error", "chat_template_kwargs",
                             "'chat_template_kwargs.enable_thinking' must be a boolean");
            return 0;
        }
        c->enable_thinking = json_is_true(et);
    }
    json_t *effort = json_object_get(root, "reasoning_effort");
    if (json_is_string(effort) && !strcmp(json_string_value(effort), "none"))
        c->enable_thinking = 0;
    static const char *const efforts[] = {"low", "medium", "high"};
    for (int i = 0; i < 3; i++)
        if (json_is_string(effort) && !strcmp(json_string_value(effort), efforts[i]))
            c->reasoning_effort = efforts[i];
    if (c->json_object) c->enable_thinking = 0; /* the reply is the JSON object, from its '{' */
    return 1;
}

int ft_srv_openai_parse(json_t *root, uint32_t n_vocab, ft_srv_conv_t *c, ft_srv_error_t *err)
{
    c->root = json_incref(root);
    return ft_srv_openai_options(c, root, n_vocab, err) &&
           ft_srv_openai_messages(c, json_object_get(root, "messages"), err) &&
           ft_srv_openai_tools(c, json_object_get(root, "tools"), err);
}

/* POST /v1/completions (srv_conv.h). */
int ft_srv_completions_parse(json_t *root, uint32_t n_vocab, ft_srv_conv_t *c, ft_srv_error_t *err)
{
    c->root = json_incref(root);
    c->raw = 1;
    c->max_tokens = 16; /* OpenAI's default here */
    ft_sampler_options_t *s = &c->sampling;
    uint32_t n = 1, best_of = 1, lp = 0;
    int include_usage = 0, has_lp = 0;
    json_t *so = json_object_get(root, "stream_options");
    if (so && !json_is_null(so) && !json_is_object(so)) {
        ft_srv_error_set(err, 400, "invalid_request_error", "stream_options",
                         "'stream_options' must be an object");
        return 0;
    }
    json_t *lpv = json_object_get(root, "logprobs");
    has_lp = lpv && !json_is_null(lpv);
    if (!ft_srv_get_string(root, "model", &c->model, err) ||
        !ft_srv_get_bool(root, "stream", &c->stream, err) ||
        (so && !ft_srv_get_bool(so, "include_usage", &include_usage, err)) ||
        !ft_srv_get_u32(root, "n", 1, 1, &n, err) ||
        !ft_srv_get_u32(root, "best_of", 1, 1, &best_of, err) ||
        !ft_srv_get_u32(root, "max_tokens", 1, UINT32_MAX, &c->max_tokens, err) ||
        !ft_srv_get_number(root, "temperature", 0, 2, &s->temperature, err) ||
        !ft_srv_get_number(root, "top_p", 0, 1, &s->top_p, err) ||
        !ft_srv_get_u32(root, "top_k", 0, UINT32_MAX, &s->top_k, err) ||
        !ft_srv_get_number(root, "min_p", 0, 1, &s->min_p, err) ||
        !ft_srv_get_number(root, "repeat_penalty", 0, 100, &s->repeat_penalty, err) ||
        !ft_srv_get_number(root, "presence_penalty", -2, 2, &s->presence_penalty, err) ||
        !ft_srv_get_number(root, "frequency_penalty", -2, 2, &s->frequency_penalty, err) ||
        !ft_srv_get_seed(c, root, "seed", err) || !ft_srv_get_bool(root, "echo", &c->echo, err) ||
        !ft_srv_get_u32(root, "logprobs", 0, 5, &lp, err) ||
        !ft_srv_get_stops(c, root, "stop", err) ||
        !ft_srv_openai_bias(c, json_object_get(root, "logit_bias"), n_vocab, err))
        return 0;
    c->include_usage = include_usage;
    c->logprobs = has_lp;
    s->top_logprobs = lp;
    json_t *suffix = json_object_get(root, "suffix");
    if (suffix && !json_is_null(suffix)) {
        ft_srv_error_set(err, 400, "invalid_request_error", "suffix",
                         "'suffix' (insertion) is not supported");
        return 0;
    }
    json_t *prompt = json_object_get(root, "prompt");
    if (json_is_array(prompt) && json_array_size(prompt) == 1 &&
        json_is_string(json_array_get(prompt, 0)))
        prompt = json_array_get(prompt, 0);
    if (json_is_string(prompt)) {
        c->prompt = json_string_value(prompt);
        c->prompt_len = json_string_length(prompt);
        return 1;
    }
    if (json_is_array(prompt) && json_array_size(prompt) > 0) {
        size_t i;
        json_t *t;
        json_array_foreach(prompt, i, t)
        {
            const json_int_t id = json_is_integer(t) ? json_integer_value(t) : -1;
            if (id < 0 || id >= (json_int_t)n_vocab) {
                ft_srv_error_set(err, 400, "invalid_request_error", "prompt",
                                 "'prompt' must be a string, one string in an array, or token "
                                 "ids below %u (entry %zu is not)",
                                 n_vocab, i);
                return 0;
            }
        }
        c->prompt_ids = prompt;
        return 1;
    }
    ft_srv_error_set(err, 400, "invalid_request_error", "prompt",
                     "'prompt' must be a string, one string in an array, or a non-empty array "
                     "of token ids");
    return 0;
}
