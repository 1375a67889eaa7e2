/* OpenAI chat completions, streamed as chat.completion.chunk frames or
 * whole as one chat.completion (srv_format.h). Tool calls stream as
 * OpenAI's deltas: the first for a call carries its index, id, type and
 * name with empty arguments, later ones only index and argument text. */
#include "srv_format_internal.h"

#include <stdlib.h>
#include <string.h>

static const char *ft_srv_openai_finish(ft_srv_finish_t f)
{
    switch (f) {
    case FT_SRV_FINISH_LENGTH:
        return "length";
    case FT_SRV_FINISH_TOOL_CALLS:
        return "tool_calls";
    default:
        return "stop";
    }
}

static json_t *ft_srv_openai_chunk(ft_srv_fmt_t *f, json_t *delta, const char *finish,
                                   json_t *logprobs)
{
    return json_pack("{s:s,s:s,s:I,s:s,s:s,s:[{s:i,s:o,s:o,s:s?}]}", "id", f->id, "object",
                     "chat.completion.chunk", "created", (json_int_t)f->created, "model", f->model,
                     "system_fingerprint", "freetoken", "choices", "index", 0, "delta", delta,
                     "logprobs", logprobs ? logprobs : json_null(), "finish_reason", finish);
}

static json_t *ft_srv_token_entry(const ft_engine_t *e, int32_t id, float logprob)
{
    const char *bytes = "";
    uint32_t n = 0;
    ft_status_t st = ft_engine_token_bytes(e, id, &bytes, &n);
    if (st) {
        ft_status_free(st);
        bytes = "";
        n = 0;
    }
    json_t *arr = json_array();
    for (uint32_t i = 0; i < n; i++)
        json_array_append_new(arr, json_integer((unsigned char)bytes[i]));
    return json_pack("{s:o,s:f,s:o}", "token", ft_srv_json_lossy(bytes, n), "logprob",
                     (double)logprob, "bytes", arr);
}

/* {"content": [...]} for samples [from, to). */
static json_t *ft_srv_openai_logprobs(ft_srv_fmt_t *f, uint32_t from, uint32_t to)
{
    json_t *content = json_array();
    const ft_srv_gen_t *g = f->gen;
    for (uint32_t i = from; i < to && i < g->n_samples_cap; i++) {
        const ft_sample_t *s = &g->samples[i];
        json_t *e = ft_srv_token_entry(f->engine, s->token, s->logprob);
        json_t *top = json_array();
        for (uint32_t k = 0; k < s->n_top && k < f->conv->sampling.top_logprobs; k++)
            json_array_append_new(top,
                                  ft_srv_token_entry(f->engine, s->top[k].id, s->top[k].logprob));
        json_object_set_new(e, "top_logprobs", top);
        json_array_append_new(content, e);
    }
    return json_pack("{s:o}", "content", content);
}

/* Logprobs of the tokens made since the last frame that carried some. */
static json_t *ft_srv_openai_pending_logprobs(ft_srv_fmt_t *f)
{
    if (!f->conv->logprobs || !f->gen) return NULL;
    const uint32_t to = f->gen->n_generated;
    if (to <= f->n_logprobs_sent) return NULL;
    json_t *lp = ft_srv_openai_logprobs(f, f->n_logprobs_sent, to);
    f->n_logprobs_sent = to;
    return lp;
}

void ft_srv_openai_begin(ft_srv_fmt_t *f)
{
    if (!f->stream) return;
    ft_srv_sse(&f->out, NULL,
               ft_srv_openai_chunk(f, json_pack("{s:s,s:s}", "role", "assistant", "content", ""),
                                   NULL, NULL));
}

void ft_srv_openai_event(ft_srv_fmt_t *f, const ft_srv_ev_t *ev)
{
    json_t *call = NULL;
    switch (ev->kind) {
    case FT_SRV_EV_REASONING:
        if (!f->stream) {
            ft_srv_buf_put(&f->reasoning, ev->text, ev->len);
            return;
        }
        ft_srv_sse(&f->out, NULL,
                   ft_srv_openai_chunk(f,
                                       json_pack("{s:s%}", "reasoning_content", ev->text, ev->len),
                                       NULL, ft_srv_openai_pending_logprobs(f)));
        return;
    case FT_SRV_EV_CONTENT:
        if (!f->stream) {
            ft_srv_buf_put(&f->content, ev->text, ev->len);
            return;
        }
        ft_srv_sse(&f->out, NULL,
                   ft_srv_openai_chunk(f, json_pack("{s:s%}", "content", ev->text, ev->len), NULL,
                                       ft_srv_openai_pending_logprobs(f)));
        return;
    case FT_SRV_EV_TOOL_START: {
        char id[40];
        ft_srv_make_id(id, sizeof(id), "call_");
        json_array_append_new(
            f->calls, json_pack("{s:s,s:s,s:s}", "id", id, "name", ev->name, "arguments", ""));
        if (!f->stream) return;
        call = json_pack("{s:i,s:s,s:s,s:{s:s,s:s}}", "index", (int)ev->tool_index, "id", id,
                         "type", "function", "function", "name", ev->name, "arguments", "");
        break;
    }
    case FT_SRV_EV_TOOL_ARGS: {
        json_t *c = json_array_get(f->calls, ev->tool_index);
        if (c) {
            const char *old = json_string_value(json_object_get(c, "arguments"));
            ft_srv_buf_t b = {0};
            ft_srv_buf_puts(&b, old ? old : "");
            ft_srv_buf_put(&b, ev->text, ev->len);
            json_object_set_new(c, "arguments", json_stringn(b.data ? b.data : "", b.len));
            ft_srv_buf_free(&b);
        }
        if (!f->stream) return;
        call = json_pack("{s:i,s:{s:s%}}", "index", (int)ev->tool_index, "function", "arguments",
                         ev->text, ev->len);
        break;
    }
    case FT_SRV_EV_TOOL_END:
        return;
    }
    ft_srv_sse(&f->out, NULL,
               ft_srv_openai_chunk(f, json_pack("{s:[o]}", "tool_calls", call), NULL,
                                   ft_srv_openai_pending_logprobs(f)));
}

json_t *ft_srv_openai_usage(const ft_srv_fmt_t *f)
{
    const ft_srv_gen_t *g = f->gen;
    return json_pack("{s:i,s:i,s:i,s:{s:i}}", "prompt_tokens", (int)g->n_prompt,
                     "completion_tokens", (int)g->n_generated, "total_tokens",
                     (int)(g->n_prompt + g->n_generated), "prompt_tokens_details", "cached_tokens",
                     (int)g->n_cached);
}

void ft_srv_openai_end(ft_srv_fmt_t *f)
{
    if (f->gen->finish == FT_SRV_FINISH_ERROR) {
        ft_srv_error_t err;
        ft_srv_error_set(&err, 500, "server_error", "", "%s", f->gen->error);
        ft_srv_error_frame(FT_SRV_OPENAI, &err, &f->out);
        return;
    }
    ft_srv_sse(&f->out, NULL,
               ft_srv_openai_chunk(f, json_object(), ft_srv_openai_finish(f->gen->finish),
                                   ft_srv_openai_pending_logprobs(f)));
    if (f->conv->include_usage) {
        json_t *v = json_pack("{s:s,s:s,s:I,s:s,s:s,s:[],s:o}", "id", f->id, "object",
                              "chat.completion.chunk", "created", (json_int_t)f->created, "model",
                              f->model, "system_fingerprint", "freetoken", "choices", "usage",
                              ft_srv_openai_usage(f));
        ft_srv_sse(&f->out, NULL, v);
    }
    ft_srv_buf_puts(&f->out, "data: [DONE]\n\n");
}

char *ft_srv_openai_body(ft_srv_fmt_t *f)
{
    json_t *msg = json_pack("{s:s}", "role", "assistant");
    const int has_calls = json_array_size(f->calls) > 0;
    if (f->content.len || !has_calls)
        json_object_set_new(msg, "content",
                            json_stringn(f->content.data ? f->content.data : "", f->content.len));
    else
        json_object_set_new(msg, "content", json_null());
    if (f->reasoning.len)
        json_object_set_new(msg, "reasoning_content",
                            json_stringn(f->reasoning.data, f->reasoning.len));
    if (has_calls) {
        json_t *calls = json_array();
        size_t i;
        json_t *c;
        json_array_foreach(f->calls, i, c) json_array_append_new(
            calls, json_pack("{s:O,s:s,s:{s:O,s:O}}", "id", json_object_get(c, "id"), "type",
                             "function", "function", "name", json_object_get(c, "name"),
                             "arguments", json_object_get(c, "arguments")));
        json_object_set_new(msg, "tool_calls", calls);
    }
    json_t *lp =
        f->conv->logprobs ? ft_srv_openai_logprobs(f, 0, f->gen->n_generated) : json_null();
    json_t *v = json_pack("{s:s,s:s,s:I,s:s,s:s,s:[{s:i,s:o,s:o,s:s}],s:o}", "id", f->id, "object",
                          "chat.completion", "created", (json_int_t)f->created, "model", f->model,
                          "system_fingerprint", "freetoken", "choices", "index", 0, "message", msg,
                          "logprobs", lp, "finish_reason", ft_srv_openai_finish(f->gen->finish),
                          "usage", ft_srv_openai_usage(f));
    char *s = v ? json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
    json_decref(v);
    return s;
}
