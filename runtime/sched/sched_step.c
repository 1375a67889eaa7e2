/* A scheduler step: the list of (session, tokens) work items chosen from
 * the running requests, and running it.
 *
 * Choosing: one item per running request, round-robin from where the last
 * step started, while the items' tokens fit the step's token budget (a
 * step always takes one). A request's item is its next prefill chunk (the
 * session's n_batch tokens or what is left of the prompt: chunk boundaries
 * are the session's own, whatever shares the step, so its logits are those
 * of running it alone), else the token it sampled last, else (an empty
 * prompt) no token, only a sample.
 *
 * A prefix_cache session's request starts by restoring the cached prefix
 * of its prompt (runtime/kv); before the step every item gets the KV pages
 * its tokens need (an item the pool cannot serve fails alone, with
 * FT_STATUS_RESOURCE_EXHAUSTED), and after it every chunk publishes the
 * full pages it filled.
 *
 * Running: the items' tokens go to the executor as one step (ft_exec_step:
 * on cpu and sim one forward pass over all of them where their kernel
 * paths agree, the MoE block reading each routed expert once per pass; on
 * a device one item after another), then each request takes its sample. */
#include "sched_internal.h"

#include "../exec/exec_api.h"

#include <string.h>

static uint32_t ft_item_tokens(const ft_request_t *r, const int32_t **out_tokens, int *out_prompt)
{
    const ft_session_t *s = r->session;
    *out_prompt = 0;
    *out_tokens = NULL;
    if (r->n_done < r->n_tokens) {
        uint32_t left = r->n_tokens - r->n_done;
        *out_prompt = 1;
        *out_tokens = r->tokens + r->n_done;
        return left < s->n_batch ? left : s->n_batch;
    }
    if (r->pending >= 0) {
        *out_tokens = &r->pending;
        return 1;
    }
    return 0; /* an empty prompt: sample from the logits the session has */
}

uint32_t ft_sched_build_step_locked(ft_sched_t *sc)
{
    if (!sc->n_running) return 0;
    ft_request_t *r = sc->run_head;
    for (uint32_t i = 0; i < sc->rr % sc->n_running; i++)
        r = r->next;
    sc->rr++;
    uint32_t n_items = 0, used = 0;
    for (uint32_t k = 0; k < sc->n_running; k++, r = r->next ? r->next : sc->run_head) {
        ft_sched_item_t it = {.r = r};
        it.n = ft_item_tokens(r, &it.tokens, &it.prompt);
        if (n_items && used + it.n > sc->step_tokens)
            continue; /* next step; a smaller item may still fit */
        used += it.n;
        sc->items[n_items++] = it;
    }
    return n_items;
}

/* Draws the request's next token from the session's logits and decides
 * whether it ends the request. */
FT_WARN_UNUSED static ft_status_t ft_item_sample(ft_sched_item_t *it)
{
    ft_request_t *r = it->r;
    ft_session_t *s = r->session;
    const ft_sched_session_t *ss = s->sched;
    ft_sample_t *out = &r->samples[r->n_made];
    ft_status_t st = ft_sampler_next(r->sampler, ft_session_logits(s), ss->history, s->n_past, out);
    if (st) return st;
    r->n_made++;
    it->sampled = 1;
    r->pending = -1;
    if (r->stop_at_eog && ft_engine_is_eog(s->engine, out->token))
        it->finish = FT_FINISH_EOG;
    else if (r->n_made == r->max_new)
        it->finish = FT_FINISH_LENGTH;
    else if (s->n_past == s->n_ctx)
        it->finish = FT_FINISH_CONTEXT;
    else if (ss->max_tokens && ss->n_used >= ss->max_tokens)
        it->finish = FT_FINISH_LIMIT;
    else
        r->pending = out->token;
    return FT_OK;
}

/* A request's first prompt chunk: a prefix_cache session with nothing
 * evaluated restores what the prefix cache holds of the prompt (not when
 * the caller asked for every prompt row's logits), and the item becomes
 * the chunk after it. */
FT_WARN_UNUSED static ft_status_t ft_item_restore(ft_sched_item_t *it)
{
    ft_request_t *r = it->r;
    ft_session_t *s = r->session;
    s->n_restored = 0;
    if (r->out_rows) return FT_OK;
    uint32_t k = 0;
    ft_status_t st = ft_exec_session_restore(s, r->tokens, r->n_tokens, &k);
    if (st || !k) return st;
    memcpy(s->sched->history, r->tokens, k * sizeof(int32_t));
    r->n_done = k;
    it->n = ft_item_tokens(r, &it->tokens, &it->prompt);
    return FT_OK;
}

/* What an item needs before the step: the restored prefix, KV pages for
 * its tokens, its tokens as an executor item (0: none to evaluate, or it
 * failed: it->st). */
static uint32_t ft_item_exec(ft_sched_item_t *it, ft_exec_item_t *out)
{
    const ft_request_t *r = it->r;
    ft_session_t *s = r->session;
    if (it->prompt && r->n_done == 0 && (it->st = ft_item_restore(it))) return 0;
    it->pos = s->n_past;
    if (!it->n) return 0;
    if ((it->st = ft_exec_session_prepare(s, it->n))) return 0;
    float *rows =
        it->prompt && r->out_rows ? r->out_rows + (size_t)r->n_done * s->m->vocab_size : NULL;
    *out = (ft_exec_item_t){s, it->tokens, it->n, rows};
    return 1;
}

/* After the step: the item's tokens joined its session's history; the
 * request samples when its prompt is done. pos: n_past before the step. */
FT_WARN_UNUSED static ft_status_t ft_item_finish(ft_sched_item_t *it, uint32_t pos)
{
    ft_request_t *r = it->r;
    ft_session_t *s = r->session;
    ft_sched_session_t *ss = s->sched;
    if (it->n) {
        memcpy(ss->history + pos, it->tokens, it->n * sizeof(int32_t));
        ss->n_used += it->n;
        if (it->prompt) r->n_done += it->n;
        ft_status_t st = ft_exec_session_publish(s, ss->history);
        if (st) return st;
    }
    if (r->n_done < r->n_tokens) return FT_OK; /* more prompt to come */
    if (!r->max_new) {
        it->finish = FT_FINISH_EVALUATED;
        return FT_OK;
    }
    return ft_item_sample(it);
}

void ft_sched_run_step(ft_sched_t *sc, uint32_t n_items)
{
    sc->e->sched_steps++; /* under step_lock */
    /* Every item's tokens in one executor step (batched passes on cpu and
     * sim), then each request's bookkeeping and sample. */
    uint32_t n_exec = 0;
    for (uint32_t i = 0; i < n_items; i++) {
        ft_sched_item_t *it = &sc->items[i];
        it->st = NULL;
        n_exec += ft_item_exec(it, &sc->exec[n_exec]);
    }
    ft_status_t err = n_exec ? ft_exec_step(sc->e, sc->exec, n_exec) : FT_OK;
    for (uint32_t i = 0; i < n_items; i++) {
        ft_sched_item_t *it = &sc->items[i];
        if (it->st) { /* failed before the step: its restore or its pages */
        } else if (err && it->n) {
            it->st = ft_status_make(ft_status_code(err), "%s", ft_status_message(err));
        } else {
            it->st = ft_item_finish(it, it->pos);
        }
        if (it->st) it->finish = FT_FINISH_ERROR;
    }
    ft_status_free(err);
}

ft_status_t ft_sched_start_check(const ft_request_t *r)
{
    const ft_session_t *s = r->session;
    const ft_sched_session_t *ss = s->sched;
    if (r->n_tokens) {
        ft_status_t st = ft_exec_session_check(s, r->tokens, r->n_tokens);
        if (st) return st;
    } else if (!ft_session_logits(s)) {
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "request: no prompt, and the session has no logits to sample from "
                              "(nothing evaluated yet, or rewound)");
    }
    if (ss->max_tokens && r->n_tokens > ss->max_tokens - ss->n_used)
        return ft_status_make(
            FT_STATUS_OUT_OF_RANGE,
            "evaluate: %u tokens after the %llu the session has evaluated exceed its "
            "token limit of %llu",
            r->n_tokens, (unsigned long long)ss->n_used, (unsigned long long)ss->max_tokens);
    return FT_OK;
}
