/* freetoken.h's asynchronous requests: submit, stream the tokens out
 * (ft_request_next), wait, cancel, release. */
#include "sched_internal.h"

#include "../base/alloc.h"

#include <string.h>

void ft_request_options_init(ft_request_options_t *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->stop_at_eog = 1;
}

void ft_sched_request_free(ft_sched_t *sc, ft_request_t *r)
{
    const ft_allocator_t *a = sc->e->a;
    ft_status_free(r->error);
    ft_mem_free(a, (void *)r->tokens);
    ft_mem_free(a, r->samples);
    ft_mem_free(a, r);
}

FT_WARN_UNUSED static ft_status_t ft_request_check(const ft_session_t *s,
                                                   const ft_request_options_t *o)
{
    if (!o->tokens && o->n_tokens)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "request: %u prompt tokens but no array",
                              o->n_tokens);
    if (!o->n_tokens && !o->max_new_tokens)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "request: nothing to do (no prompt tokens and max_new_tokens 0)");
    if (o->max_new_tokens && !o->sampler)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "request: max_new_tokens %u needs a sampler", o->max_new_tokens);
    if (o->max_new_tokens > s->n_ctx)
        return ft_status_make(
            FT_STATUS_OUT_OF_RANGE,
            "request: max_new_tokens %u exceeds the session's context of %u tokens",
            o->max_new_tokens, s->n_ctx);
    if (o->out_all_logits && !o->n_tokens)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "request: out_all_logits without prompt tokens to fill it");
    for (uint32_t i = 0; i < o->n_tokens; i++)
        if (o->tokens[i] < 0 || (uint32_t)o->tokens[i] >= s->m->vocab_size)
            return ft_status_make(
                FT_STATUS_INVALID_ARGUMENT,
                "request: prompt token %u is id %d, outside the vocabulary [0, %u)", i,
                o->tokens[i], s->m->vocab_size);
    return FT_OK;
}

ft_status_t ft_request_submit(ft_session_t *s, const ft_request_options_t *o, ft_request_t **out)
{
    if (out) *out = NULL;
    if (!s || !o || !out)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "request: NULL session, options or result");
    ft_status_t st = ft_request_check(s, o);
    if (st) return st;
    ft_sched_t *sc = s->engine->sched;
    const ft_allocator_t *a = s->engine->a;
    ft_request_t *r = ft_mem_calloc(a, 1, sizeof(*r));
    int32_t *toks =
        r && o->n_tokens ? ft_mem_alloc(a, (size_t)o->n_tokens * sizeof(int32_t)) : NULL;
    ft_sample_t *samples =
        r && o->max_new_tokens ? ft_mem_alloc(a, o->max_new_tokens * sizeof(ft_sample_t)) : NULL;
    if (!r || (o->n_tokens && !toks) || (o->max_new_tokens && !samples)) {
        ft_mem_free(a, samples);
        ft_mem_free(a, toks);
        ft_mem_free(a, r);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY,
                              "request: out of memory for %u prompt tokens and %u samples",
                              o->n_tokens, o->max_new_tokens);
    }
    if (o->n_tokens) memcpy(toks, o->tokens, o->n_tokens * sizeof(int32_t));
    *r = (ft_request_t){.sched = sc,
                        .session = s,
                        .owned = 1,
                        .tokens = toks,
                        .n_tokens = o->n_tokens,
                        .out_rows = o->out_all_logits,
                        .max_new = o->max_new_tokens,
                        .sampler = o->sampler,
                        .stop_at_eog = o->stop_at_eog,
                        .on_token = o->on_token,
                        .user = o->user,
                        .pending = -1,
                        .samples = samples};
    pthread_mutex_lock(&sc->mu);
    if (sc->n_waiting_async >= sc->max_queued) {
        const uint32_t q = sc->n_waiting_async;
        pthread_mutex_unlock(&sc->mu);
        ft_sched_request_free(sc, r);
        return ft_status_make(
            FT_STATUS_BUSY,
            "request: the queue is full (%u requests waiting, max_queued %u); retry "
            "later",
            q, sc->max_queued);
    }
    s->sched->refs++;
    ft_sched_enqueue_locked(sc, r);
    pthread_mutex_unlock(&sc->mu);
    *out = r;
    return FT_OK;
}

ft_status_t ft_request_next(ft_request_t *r, int wait, ft_sample_t *out, int *out_got)
{
    if (out_got) *out_got = 0;
    if (!r || !out || !out_got)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "request next: NULL argument");
    ft_sched_t *sc = r->sched;
    if (wait && ft_sched_on_thread(sc))
        return ft_status_make(
            FT_STATUS_INVALID_ARGUMENT,
            "request next: waiting on the scheduler's thread (a request callback)");
    pthread_mutex_lock(&sc->mu);
    while (wait && r->n_taken == r->n_samples && r->state != FT_REQ_DONE)
        pthread_cond_wait(&sc->progress, &sc->mu);
    if (r->n_taken < r->n_samples) {
        *out = r->samples[r->n_taken++];
        *out_got = 1;
    }
    pthread_mutex_unlock(&sc->mu);
    return FT_OK;
}

ft_status_t ft_request_wait(ft_request_t *r)
{
    if (!r) return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "request wait: NULL request");
    ft_sched_t *sc = r->sched;
    if (ft_sched_on_thread(sc))
        return ft_status_make(
            FT_STATUS_INVALID_ARGUMENT,
            "request wait: called on the scheduler's thread (a request callback)");
    pthread_mutex_lock(&sc->mu);
    while (r->state != FT_REQ_DONE)
        pthread_cond_wait(&sc->progress, &sc->mu);
    ft_status_t st = FT_OK;
    if (r->finish == FT_FINISH_CANCELLED)
        st = ft_status_make(FT_STATUS_CANCELLED,
                            "request cancelled after %u prompt tokens and %u generated", r->n_done,
                            r->n_samples);
    else if (r->error)
        st = ft_status_make(ft_status_code(r->error), "%s", ft_status_message(r->error));
    pthread_mutex_unlock(&sc->mu);
    return st;
}

void ft_request_cancel(ft_request_t *r)
{
    if (!r) return;
    ft_sched_t *sc = r->sched;
    pthread_mutex_lock(&sc->mu);
    if (r->state < FT_REQ_ENDING) {
        r->cancel = 1;
        pthread_cond_signal(&sc->work);
    }
    pthread_mutex_unlock(&sc->mu);
}

ft_finish_reason_t ft_request_finish_reason(const ft_request_t *r)
{
    ft_sched_t *sc = r->sched;
    pthread_mutex_lock(&sc->mu);
    const ft_finish_reason_t f = r->state == FT_REQ_DONE ? r->finish : FT_FINISH_NONE;
    pthread_mutex_unlock(&sc->mu);
    return f;
}

uint32_t ft_request_n_generated(const ft_request_t *r)
{
    ft_sched_t *sc = r->sched;
    pthread_mutex_lock(&sc->mu);
    const uint32_t n = r->n_samples;
    pthread_mutex_unlock(&sc->mu);
    return n;
}

uint32_t ft_request_tokens(const ft_request_t *r, int32_t *ids, uint32_t n)
{
    ft_sched_t *sc = r->sched;
    pthread_mutex_lock(&sc->mu);
    const uint32_t k = r->n_samples < n ? r->n_samples : n;
    for (uint32_t i = 0; i < k; i++)
        ids[i] = r->samples[i].token;
    pthread_mutex_unlock(&sc->mu);
    return k;
}

void ft_request_release(ft_request_t *r)
{
    if (!r) return;
    ft_sched_t *sc = r->sched;
    ft_session_t *s = r->session;
    pthread_mutex_lock(&sc->mu);
    if (r->state != FT_REQ_DONE) { /* the scheduler frees it when it has stopped */
        r->released = 1;
        r->cancel = 1;
        pthread_cond_signal(&sc->work);
        pthread_mutex_unlock(&sc->mu);
        return;
    }
    const int last = ft_sched_session_unref_locked(sc, s);
    pthread_mutex_unlock(&sc->mu);
    ft_sched_request_free(sc, r);
    if (last) ft_sched_session_free(sc, s);
}
