/* Anthropic Messages responses (srv_format.h): the stream's event
 * sequence (message_start, ping, content_block_start / _delta / _stop per
 * thinking, text or tool_use block, message_delta with stop_reason and
 * usage, message_stop), or one message object. */
#include "srv_format_internal.h"

#include <stdlib.h>
#include <string.h>

enum { FT_SRV_BLOCK_THINKING = 0, FT_SRV_BLOCK_TEXT = 1, FT_SRV_BLOCK_TOOL = 2 };

/* Thinking blocks must carry a signature; ours is an opaque marker
 * (signatures on input are ignored). */
static const char ft_srv_signature[] = "ft1.freetoken-local";

/* Anthropic counts the prompt tokens read from the cache apart:
 * input_tokens are the ones evaluated. */
static json_t *ft_srv_a_usage(const ft_srv_fmt_t *f, uint32_t n_prompt, uint32_t n_out)
{
    const uint32_t cached = f->gen && f->gen->n_cached <= n_prompt ? f->gen->n_cached : 0;
    return json_pack("{s:i,s:i,s:i,s:i}", "input_tokens", (int)(n_prompt - cached),
                     "cache_creation_input_tokens", 0, "cache_read_input_tokens", (int)cached,
                     "output_tokens", (int)n_out);
}

void ft_srv_anthropic_begin(ft_srv_fmt_t *f, uint32_t n_prompt)
{
    if (!f->stream) return;
    ft_srv_sse(&f->out, "message_start",
               json_pack("{s:s,s:{s:s,s:s,s:s,s:s,s:[],s:n,s:n,s:o}}", "type", "message_start",
                         "message", "id", f->id, "type", "message", "role", "assistant", "model",
                         f->model, "content", "stop_reason", "stop_sequence", "usage",
                         ft_srv_a_usage(f, n_prompt, 0)));
    ft_srv_sse(&f->out, "ping", json_pack("{s:s}", "type", "ping"));
}

/* Closes the open block: streamed, its stop event (a thinking block its
 * signature first); whole, its text goes into the block list. */
static void ft_srv_a_close(ft_srv_fmt_t *f)
{
    if (f->block_open < 0) return;
    const int idx = (int)f->n_blocks - 1;
    if (f->stream) {
        if (f->block_open == FT_SRV_BLOCK_THINKING)
            ft_srv_sse(&f->out, "content_block_delta",
                       json_pack("{s:s,s:i,s:{s:s,s:s}}", "type", "content_block_delta", "index",
                                 idx, "delta", "type", "signature_delta", "signature",
                                 ft_srv_signature));
        ft_srv_sse(&f->out, "content_block_stop",
                   json_pack("{s:s,s:i}", "type", "content_block_stop", "index", idx));
    } else {
        json_t *blk = json_array_get(f->calls, (size_t)idx);
        if (f->block_open == FT_SRV_BLOCK_THINKING)
            json_object_set_new(
                blk, "thinking",
                json_stringn(f->reasoning.data ? f->reasoning.data : "", f->reasoning.len));
        else if (f->block_open == FT_SRV_BLOCK_TEXT)
            json_object_set_new(
                blk, "text", json_stringn(f->content.data ? f->content.data : "", f->content.len));
        else {
            json_error_t je;
            json_t *input = json_loadb(f->content.data ? f->content.data : "{}",
                                       f->content.data ? f->content.len : 2, 0, &je);
            json_object_set_new(blk, "input", json_is_object(input) ? input : json_object());
            if (input && !json_is_object(input)) json_decref(input);
        }
        ft_srv_buf_free(&f->content);
        ft_srv_buf_free(&f->reasoning);
    }
    f->block_open = -1;
}

static void ft_srv_a_open(ft_srv_fmt_t *f, int kind, json_t *block)
{
    ft_srv_a_close(f);
    const int idx = (int)f->n_blocks++;
    f->block_open = kind;
    if (f->stream) {
        ft_srv_sse(&f->out, "content_block_start",
                   json_pack("{s:s,s:i,s:o}", "type", "content_block_start", "index", idx,
                             "content_block", block));
    } else {
        json_array_append_new(f->calls, block);
    }
}

static void ft_srv_a_delta(ft_srv_fmt_t *f, const char *type, const char *field, const char *s,
                           size_t n)
{
    ft_srv_sse(&f->out, "content_block_delta",
               json_pack("{s:s,s:i,s:{s:s,s:s%}}", "type", "content_block_delta", "index",
                         (int)f->n_blocks - 1, "delta", "type", type, field, s, n));
}

void ft_srv_anthropic_event(ft_srv_fmt_t *f, const ft_srv_ev_t *ev)
{
    switch (ev->kind) {
    case FT_SRV_EV_REASONING:
        if (f->block_open != FT_SRV_BLOCK_THINKING)
            ft_srv_a_open(f, FT_SRV_BLOCK_THINKING,
                          f->stream ? json_pack("{s:s,s:s,s:s}", "type", "thinking", "thinking", "",
                                                "signature", "")
                                    : json_pack("{s:s,s:s,s:s}", "type", "thinking", "thinking", "",
                                                "signature", ft_srv_signature));
        if (f->stream)
            ft_srv_a_delta(f, "thinking_delta", "thinking", ev->text, ev->len);
        else
            ft_srv_buf_put(&f->reasoning, ev->text, ev->len);
        return;
    case FT_SRV_EV_CONTENT:
        if (f->block_open != FT_SRV_BLOCK_TEXT)
            ft_srv_a_open(f, FT_SRV_BLOCK_TEXT, json_pack("{s:s,s:s}", "type", "text", "text", ""));
        if (f->stream)
            ft_srv_a_delta(f, "text_delta", "text", ev->text, ev->len);
        else
            ft_srv_buf_put(&f->content, ev->text, ev->len);
        return;
    case FT_SRV_EV_TOOL_START: {
        char id[40];
        ft_srv_make_id(id, sizeof(id), "toolu_");
        ft_srv_a_open(f, FT_SRV_BLOCK_TOOL,
                      json_pack("{s:s,s:s,s:s,s:{}}", "type", "tool_use", "id", id, "name",
                                ev->name, "input"));
        return;
    }
    case FT_SRV_EV_TOOL_ARGS:
        if (f->stream)
            ft_srv_a_delta(f, "input_json_delta", "partial_json", ev->text, ev->len);
        else
            ft_srv_buf_put(&f->content, ev->text, ev->len);
        return;
    case FT_SRV_EV_TOOL_END:
        ft_srv_a_close(f);
        return;
    }
}

static const char *ft_srv_a_stop_reason(const ft_srv_gen_t *g)
{
    switch (g->finish) {
    case FT_SRV_FINISH_LENGTH:
        return "max_tokens";
    case FT_SRV_FINISH_TOOL_CALLS:
        return "tool_use";
    default:
        return g->stop_index >= 0 ? "stop_sequence" : "end_turn";
    }
}

static const char *ft_srv_a_stop_sequence(const ft_srv_fmt_t *f)
{
    const int i = f->gen->stop_index;
    return i >= 0 && (size_t)i < f->conv->n_stops ? f->conv->stops[i] : NULL;
}

void ft_srv_anthropic_end(ft_srv_fmt_t *f)
{
    const ft_srv_gen_t *g = f->gen;
    ft_srv_a_close(f);
    if (g->finish == FT_SRV_FINISH_ERROR) {
        ft_srv_error_t err;
        ft_srv_error_set(&err, 500, "server_error", "", "%s", g->error);
        ft_srv_error_frame(FT_SRV_ANTHROPIC, &err, &f->out);
        return;
    }
    ft_srv_sse(&f->out, "message_delta",
               json_pack("{s:s,s:{s:s,s:s?},s:o}", "type", "message_delta", "delta", "stop_reason",
                         ft_srv_a_stop_reason(g), "stop_sequence", ft_srv_a_stop_sequence(f),
                         "usage", ft_srv_a_usage(f, g->n_prompt, g->n_generated)));
    ft_srv_sse(&f->out, "message_stop", json_pack("{s:s}", "type", "message_stop"));
}

char *ft_srv_anthropic_body(ft_srv_fmt_t *f)
{
    const ft_srv_gen_t *g = f->gen;
    ft_srv_a_close(f);
    json_t *v =
        json_pack("{s:s,s:s,s:s,s:s,s:O,s:s,s:s?,s:o}", "id", f->id, "type", "message", "role",
                  "assistant", "model", f->model, "content", f->calls, "stop_reason",
                  ft_srv_a_stop_reason(g), "stop_sequence", ft_srv_a_stop_sequence(f), "usage",
                  ft_srv_a_usage(f, g->n_prompt, g->n_generated));
    char *s = v ? json_dumps(v, JSON_COMPACT) : NULL;
    json_decref(v);
    return s;
}
