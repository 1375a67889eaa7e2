/* OpenAI's legacy completions (/v1/completions): text_completion
 * chunks or one text_completion object, logprobs in that API's own shape
 * (tokens, token_logprobs, top_logprobs as {token: logprob}, text_offset).
 * No template and no parsing: the model's text as it comes. */
#include "srv_format_internal.h"

#include <stdlib.h>
#include <string.h>

static const char *ft_srv_completions_finish(ft_srv_finish_t f)
{
    return f == FT_SRV_FINISH_LENGTH ? "length" : "stop";
}

static char *ft_srv_token_text(const ft_engine_t *e, int32_t id, size_t *n)
{
    const char *bytes = "";
    uint32_t len = 0;
    ft_status_t st = ft_engine_token_bytes(e, id, &bytes, &len);
    if (st) {
        ft_status_free(st);
        len = 0;
    }
    json_t *v = ft_srv_json_lossy(bytes, len);
    char *s = v ? strdup(json_string_value(v)) : NULL;
    *n = s ? strlen(s) : 0;
    json_decref(v);
    return s;
}

/* Samples [from, to) in the legacy shape; *offset: text bytes so far. */
static json_t *ft_srv_completions_logprobs(ft_srv_fmt_t *f, uint32_t from, uint32_t to,
                                           size_t *offset)
{
    json_t *tokens = json_array(), *lps = json_array(), *tops = json_array(), *offs = json_array();
    const ft_srv_gen_t *g = f->gen;
    for (uint32_t i = from; i < to && i < g->n_samples_cap; i++) {
        const ft_sample_t *s = &g->samples[i];
        size_t n = 0;
        char *t = ft_srv_token_text(f->engine, s->token, &n);
        json_array_append_new(tokens, json_string(t ? t : ""));
        json_array_append_new(lps, json_real(s->logprob));
        json_array_append_new(offs, json_integer((json_int_t)*offset));
        *offset += n;
        free(t);
        json_t *top = json_object();
        for (uint32_t k = 0; k < s->n_top && k < f->conv->sampling.top_logprobs; k++) {
            size_t tn = 0;
            char *tt = ft_srv_token_text(f->engine, s->top[k].id, &tn);
            if (tt && !json_object_get(top, tt))
                json_object_set_new(top, tt, json_real(s->top[k].logprob));
            free(tt);
        }
        json_array_append_new(tops, top);
    }
    return json_pack("{s:o,s:o,s:o,s:o}", "tokens", tokens, "token_logprobs", lps, "top_logprobs",
                     tops, "text_offset", offs);
}

static json_t *ft_srv_completions_chunk(ft_srv_fmt_t *f, const char *text, size_t n,
                                        const char *finish, json_t *logprobs)
{
    return json_pack("{s:s,s:s,s:I,s:s,s:s,s:[{s:i,s:s%,s:o,s:s?}]}", "id", f->id, "object",
                     "text_completion", "created", (json_int_t)f->created, "model", f->model,
                     "system_fingerprint", "freetoken", "choices", "index", 0, "text", text, n,
                     "logprobs", logprobs ? logprobs : json_null(), "finish_reason", finish);
}

static json_t *ft_srv_completions_pending(ft_srv_fmt_t *f)
{
    if (!f->conv->logprobs || !f->gen || f->gen->n_generated <= f->n_logprobs_sent) return NULL;
    size_t offset = f->content.len; /* text bytes sent before these tokens */
    json_t *lp = ft_srv_completions_logprobs(f, f->n_logprobs_sent, f->gen->n_generated, &offset);
    f->n_logprobs_sent = f->gen->n_generated;
    return lp;
}

void ft_srv_completions_begin(ft_srv_fmt_t *f)
{
    if (f->conv->echo && f->conv->prompt) {
        if (f->stream)
            ft_srv_sse(
                &f->out, NULL,
                ft_srv_completions_chunk(f, f->conv->prompt, f->conv->prompt_len, NULL, NULL));
        /* whole: the reply's start; streamed: counted in the text offsets */
        ft_srv_buf_put(&f->content, f->conv->prompt, f->conv->prompt_len);
    }
}

void ft_srv_completions_event(ft_srv_fmt_t *f, const ft_srv_ev_t *ev)
{
    if (ev->kind != FT_SRV_EV_CONTENT) return; /* raw text: only content comes */
    if (!f->stream) {
        ft_srv_buf_put(&f->content, ev->text, ev->len);
        return;
    }
    json_t *lp = ft_srv_completions_pending(f);
    ft_srv_sse(&f->out, NULL, ft_srv_completions_chunk(f, ev->text, ev->len, NULL, lp));
    ft_srv_buf_put(&f->content, ev->text, ev->len); /* for text_offset */
}

void ft_srv_completions_end(ft_srv_fmt_t *f)
{
    if (f->gen->finish == FT_SRV_FINISH_ERROR) {
        ft_srv_error_t err;
        ft_srv_error_set(&err, 500, "server_error", "", "%s", f->gen->error);
        ft_srv_error_frame(FT_SRV_COMPLETIONS, &err, &f->out);
        return;
    }
    ft_srv_sse(&f->out, NULL,
               ft_srv_completions_chunk(f, "", 0, ft_srv_completions_finish(f->gen->finish),
                                        ft_srv_completions_pending(f)));
    if (f->conv->include_usage)
        ft_srv_sse(&f->out, NULL,
                   json_pack("{s:s,s:s,s:I,s:s,s:[],s:o}", "id", f->id, "object", "text_completion",
                             "created", (json_int_t)f->created, "model", f->model, "choices",
                             "usage", ft_srv_openai_usage(f)));
    ft_srv_buf_puts(&f->out, "data: [DONE]\n\n");
}

char *ft_srv_completions_body(ft_srv_fmt_t *f)
{
    size_t offset = f->conv->echo && f->conv->prompt ? f->conv->prompt_len : 0; /* echoed */
    json_t *lp = f->conv->logprobs ? ft_srv_completions_logprobs(f, 0, f->gen->n_generated, &offset)
                                   : json_null();
    json_t *v = json_pack("{s:s,s:s,s:I,s:s,s:s,s:[{s:i,s:s%,s:o,s:s}],s:o}", "id", f->id, "object",
                          "text_completion", "created", (json_int_t)f->created, "model", f->model,
                          "system_fingerprint", "freetoken", "choices", "index", 0, "text",
                          f->content.data ? f->content.data : "", f->content.len, "logprobs", lp,
                          "finish_reason", ft_srv_completions_finish(f->gen->finish), "usage",
                          ft_srv_openai_usage(f));
    char *s = v ? json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
    json_decref(v);
    return s;
}
