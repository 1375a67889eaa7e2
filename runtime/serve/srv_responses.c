/* OpenAI Responses API replies (srv_format.h), in the event sequence
 * Codex and the SDKs parse: response.created, response.in_progress, then
 * per output item output_item.added, its deltas (reasoning_text,
 * output_text with its content part, function_call_arguments), their
 * .done events and output_item.done, and last response.completed (or
 * .incomplete at max_output_tokens, .failed on an error) carrying every
 * item and a complete usage. Each event has a type and a sequence_number. */
#include "srv_format_internal.h"

#include <stdlib.h>
#include <string.h>

enum { FT_SRV_ITEM_REASONING = 0, FT_SRV_ITEM_MESSAGE = 1, FT_SRV_ITEM_CALL = 2 };

static void ft_srv_r_event(ft_srv_fmt_t *f, const char *type, json_t *v)
{
    if (!v) {
        f->out.oom = 1;
        return;
    }
    json_object_set_new(v, "type", json_string(type));
    json_object_set_new(v, "sequence_number", json_integer(f->seq++));
    ft_srv_sse(&f->out, type, v);
}

static json_t *ft_srv_r_usage(const ft_srv_fmt_t *f)
{
    const ft_srv_gen_t *g = f->gen;
    return json_pack("{s:i,s:{s:i},s:i,s:{s:i},s:i}", "input_tokens", (int)g->n_prompt,
                     "input_tokens_details", "cached_tokens", (int)g->n_cached, "output_tokens",
                     (int)g->n_generated, "output_tokens_details", "reasoning_tokens", 0,
                     "total_tokens", (int)(g->n_prompt + g->n_generated));
}

/* The response object; status: in_progress, completed, incomplete, failed. */
static json_t *ft_srv_r_response(ft_srv_fmt_t *f, const char *status, int final)
{
    json_t *r = json_pack("{s:s,s:s,s:I,s:s,s:s,s:n,s:n}", "id", f->id, "object", "response",
                          "created_at", (json_int_t)f->created, "status", status, "model", f->model,
                          "error", "incomplete_details");
    if (!r) return NULL;
    json_object_set_new(r, "output", final ? json_incref(f->calls) : json_array());
    if (final && f->gen && f->gen->finish != FT_SRV_FINISH_ERROR)
        json_object_set_new(r, "usage", ft_srv_r_usage(f));
    return r;
}

void ft_srv_responses_begin(ft_srv_fmt_t *f)
{
    if (!f->stream) return;
    ft_srv_r_event(f, "response.created",
                   json_pack("{s:o}", "response", ft_srv_r_response(f, "in_progress", 0)));
    ft_srv_r_event(f, "response.in_progress",
                   json_pack("{s:o}", "response", ft_srv_r_response(f, "in_progress", 0)));
}

void ft_srv_responses_ping(ft_srv_fmt_t *f)
{
    ft_srv_r_event(f, "response.in_progress",
                   json_pack("{s:o}", "response", ft_srv_r_response(f, "in_progress", 0)));
}

/* The open item, finished: its .done events, and its final form in the
 * output list. */
static void ft_srv_r_close(ft_srv_fmt_t *f)
{
    if (f->block_open < 0) return;
    const int idx = (int)f->n_blocks - 1;
    json_t *item = NULL;
    const char *text = f->content.data ? f->content.data : "";
    const size_t n = f->content.len;
    if (f->block_open == FT_SRV_ITEM_REASONING) {
        const char *r = f->reasoning.data ? f->reasoning.data : "";
        if (f->stream) {
            ft_srv_r_event(f, "response.reasoning_text.done",
                           json_pack("{s:s,s:i,s:i,s:s%}", "item_id", f->item_id, "output_index",
                                     idx, "content_index", 0, "text", r, f->reasoning.len));
            ft_srv_r_event(f, "response.content_part.done",
                           json_pack("{s:s,s:i,s:i,s:{s:s,s:s%}}", "item_id", f->item_id,
                                     "output_index", idx, "content_index", 0, "part", "type",
                                     "reasoning_text", "text", r, f->reasoning.len));
        }
        item =
            json_pack("{s:s,s:s,s:[],s:[{s:s,s:s%}]}", "id", f->item_id, "type", "reasoning",
                      "summary", "content", "type", "reasoning_text", "text", r, f->reasoning.len);
    } else if (f->block_open == FT_SRV_ITEM_MESSAGE) {
        json_t *part =
            json_pack("{s:s,s:s%,s:[]}", "type", "output_text", "text", text, n, "annotations");
        if (f->stream) {
            ft_srv_r_event(f, "response.output_text.done",
                           json_pack("{s:s,s:i,s:i,s:s%,s:[]}", "item_id", f->item_id,
                                     "output_index", idx, "content_index", 0, "text", text, n,
                                     "logprobs"));
            ft_srv_r_event(f, "response.content_part.done",
                           json_pack("{s:s,s:i,s:i,s:O}", "item_id", f->item_id, "output_index",
                                     idx, "content_index", 0, "part", part));
        }
        item = json_pack("{s:s,s:s,s:s,s:s,s:[o]}", "id", f->item_id, "type", "message", "role",
                         "assistant", "status", "completed", "content", part);
    } else {
        if (f->stream)
            ft_srv_r_event(f, "response.function_call_arguments.done",
                           json_pack("{s:s,s:i,s:s%}", "item_id", f->item_id, "output_index", idx,
                                     "arguments", text, n));
        const char *name =
            json_string_value(json_object_get(json_array_get(f->calls, (size_t)idx), "name"));
        item = json_pack("{s:s,s:s,s:s,s:s,s:s%,s:s}", "id", f->item_id, "type", "function_call",
                         "call_id", f->call_id, "name", name ? name : "", "arguments", text, n,
                         "status", "completed");
    }
    if (item) {
        json_array_set(f->calls, (size_t)idx, item);
        if (f->stream)
            ft_srv_r_event(f, "response.output_item.done",
                           json_pack("{s:i,s:O}", "output_index", idx, "item", item));
        json_decref(item);
    } else {
        f->out.oom = 1;
    }
    ft_srv_buf_free(&f->content);
    ft_srv_buf_free(&f->reasoning);
    f->block_open = -1;
}

/* Opens an item (item: its in-progress form, a new reference). */
static void ft_srv_r_open(ft_srv_fmt_t *f, int kind, json_t *item)
{
    const int idx = (int)f->n_blocks++;
    f->block_open = kind;
    if (!item || json_array_append(f->calls, item) != 0) f->out.oom = 1;
    if (f->stream) {
        ft_srv_r_event(f, "response.output_item.added",
                       json_pack("{s:i,s:O}", "output_index", idx, "item", item));
        if (kind == FT_SRV_ITEM_MESSAGE)
            ft_srv_r_event(f, "response.content_part.added",
                           json_pack("{s:s,s:i,s:i,s:{s:s,s:s,s:[]}}", "item_id", f->item_id,
                                     "output_index", idx, "content_index", 0, "part", "type",
                                     "output_text", "text", "", "annotations"));
        else if (kind == FT_SRV_ITEM_REASONING)
            ft_srv_r_event(f, "response.content_part.added",
                           json_pack("{s:s,s:i,s:i,s:{s:s,s:s}}", "item_id", f->item_id,
                                     "output_index", idx, "content_index", 0, "part", "type",
                                     "reasoning_text", "text", ""));
    }
    json_decref(item);
}

void ft_srv_responses_event(ft_srv_fmt_t *f, const ft_srv_ev_t *ev)
{
    const int idx = (int)f->n_blocks - 1;
    switch (ev->kind) {
    case FT_SRV_EV_REASONING:
        if (f->block_open != FT_SRV_ITEM_REASONING) {
            ft_srv_r_close(f);
            ft_srv_make_id(f->item_id, sizeof(f->item_id), "rs_");
            ft_srv_r_open(
                f, FT_SRV_ITEM_REASONING,
                json_pack("{s:s,s:s,s:[]}", "id", f->item_id, "type", "reasoning", "summary"));
        }
        ft_srv_buf_put(&f->reasoning, ev->text, ev->len);
        if (f->stream)
            ft_srv_r_event(f, "response.reasoning_text.delta",
                           json_pack("{s:s,s:i,s:i,s:s%}", "item_id", f->item_id, "output_index",
                                     (int)f->n_blocks - 1, "content_index", 0, "delta", ev->text,
                                     ev->len));
        return;
    case FT_SRV_EV_CONTENT:
        if (f->block_open != FT_SRV_ITEM_MESSAGE) {
            ft_srv_r_close(f);
            ft_srv_make_id(f->item_id, sizeof(f->item_id), "msg_");
            ft_srv_r_open(f, FT_SRV_ITEM_MESSAGE,
                          json_pack("{s:s,s:s,s:s,s:s,s:[]}", "id", f->item_id, "type", "message",
                                    "role", "assistant", "status", "in_progress", "content"));
        }
        ft_srv_buf_put(&f->content, ev->text, ev->len);
        if (f->stream)
            ft_srv_r_event(f, "response.output_text.delta",
                           json_pack("{s:s,s:i,s:i,s:s%,s:[]}", "item_id", f->item_id,
                                     "output_index", (int)f->n_blocks - 1, "content_index", 0,
                                     "delta", ev->text, ev->len, "logprobs"));
        return;
    case FT_SRV_EV_TOOL_START:
        ft_srv_r_close(f);
        ft_srv_make_id(f->item_id, sizeof(f->item_id), "fc_");
        ft_srv_make_id(f->call_id, sizeof(f->call_id), "call_");
        ft_srv_r_open(f, FT_SRV_ITEM_CALL,
                      json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "id", f->item_id, "type",
                                "function_call", "call_id", f->call_id, "name", ev->name,
                                "arguments", "", "status", "in_progress"));
        return;
    case FT_SRV_EV_TOOL_ARGS:
        ft_srv_buf_put(&f->content, ev->text, ev->len);
        if (f->stream)
            ft_srv_r_event(f, "response.function_call_arguments.delta",
                           json_pack("{s:s,s:i,s:s%}", "item_id", f->item_id, "output_index", idx,
                                     "delta", ev->text, ev->len));
        return;
    case FT_SRV_EV_TOOL_END:
        ft_srv_r_close(f);
        return;
    }
}

void ft_srv_responses_end(ft_srv_fmt_t *f)
{
    ft_srv_r_close(f);
    const ft_srv_gen_t *g = f->gen;
    if (g->finish == FT_SRV_FINISH_ERROR) {
        json_t *r = ft_srv_r_response(f, "failed", 1);
        if (r)
            json_object_set_new(
                r, "error", json_pack("{s:s,s:s}", "code", "server_error", "message", g->error));
        ft_srv_r_event(f, "response.failed", json_pack("{s:o}", "response", r));
        return;
    }
    if (g->finish == FT_SRV_FINISH_LENGTH) {
        json_t *r = ft_srv_r_response(f, "incomplete", 1);
        if (r)
            json_object_set_new(r, "incomplete_details",
                                json_pack("{s:s}", "reason", "max_output_tokens"));
        ft_srv_r_event(f, "response.incomplete", json_pack("{s:o}", "response", r));
        return;
    }
    ft_srv_r_event(f, "response.completed",
                   json_pack("{s:o}", "response", ft_srv_r_response(f, "completed", 1)));
}

char *ft_srv_responses_body(ft_srv_fmt_t *f)
{
    ft_srv_r_close(f);
    const int length = f->gen->finish == FT_SRV_FINISH_LENGTH;
    json_t *r = ft_srv_r_response(f, length ? "incomplete" : "completed", 1);
    if (r && length)
        json_object_set_new(r, "incomplete_details",
                            json_pack("{s:s}", "reason", "max_output_tokens"));
    char *s = r ? json_dumps(r, JSON_COMPACT) : NULL;
    json_decref(r);
    return s;
}
