/* Session pool with prefix reuse (srv_pool.h). */
#include "srv_pool.h"

#include <stdlib.h>
#include <string.h>

ft_status_t ft_srv_pool_init(ft_srv_pool_t *p, ft_engine_t *engine, uint32_t n_ctx,
                             uint32_t n_slots, int prefix_cache)
{
    memset(p, 0, sizeof(*p));
    pthread_mutex_init(&p->mu, NULL);
    p->engine = engine;
    p->n_ctx = n_ctx;
    ft_engine_stats_t es;
    ft_engine_stats(engine, &es);
    p->tree = prefix_cache && es.kv_page_tokens > 0;
    p->page_tokens = es.kv_page_tokens;
    p->recurrent = ft_engine_info(engine)->recurrent_state_bytes > 0;
    if (p->tree && !ft_srv_anchors_init(&p->anchors, 16))
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "serve: the anchor table");
    if (!n_slots) return FT_OK;
    p->slots = calloc(n_slots, sizeof(*p->slots));
    if (!p->slots)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "serve: %u session slots", n_slots);
    p->n_slots = n_slots;
    return FT_OK;
}

void ft_srv_pool_free(ft_srv_pool_t *p)
{
    for (uint32_t i = 0; i < p->n_slots; i++) {
        ft_session_destroy(p->slots[i].session);
        free(p->slots[i].hist);
    }
    free(p->slots);
    if (p->tree) ft_srv_anchors_free(&p->anchors);
    pthread_mutex_destroy(&p->mu);
    memset(p, 0, sizeof(*p));
}

static uint32_t ft_srv_lcp(const int32_t *a, uint32_t na, const int32_t *b, uint32_t nb)
{
    uint32_t i = 0;
    while (i < na && i < nb && a[i] == b[i])
        i++;
    return i;
}

static ft_status_t ft_srv_slot_session(ft_srv_pool_t *p, ft_srv_slot_t *s, int prio)
{
    if (s->session && p->tree && s->prio != prio) { /* made for the other priority */
        ft_session_destroy(s->session);
        s->session = NULL;
    }
    if (s->session) return FT_OK;
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = p->n_ctx;
    so.prefix_cache = p->tree;
    so.cache_priority = prio;
    s->prio = prio;
    if (!s->hist && !(s->hist = malloc((size_t)p->n_ctx * sizeof(*s->hist))))
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "serve: session history");
    s->n_hist = 0;
    return ft_session_create(p->engine, &so, &s->session);
}

ft_status_t ft_srv_pool_acquire(ft_srv_pool_t *p, const int32_t *prompt, uint32_t n_prompt,
                                int prio, ft_srv_slot_t **out_slot, uint32_t *out_keep)
{
    if (p->tree) n_prompt = 0; /* the library restores, not a rewind */
    *out_slot = NULL;
    *out_keep = 0;
    ft_srv_slot_t *best = NULL;
    uint32_t best_lcp = 0;
    pthread_mutex_lock(&p->mu);
    for (uint32_t i = 0; i < p->n_slots; i++) {
        ft_srv_slot_t *s = &p->slots[i];
        if (s->busy) continue;
        const uint32_t lcp = ft_srv_lcp(s->hist, s->n_hist, prompt, n_prompt);
        /* the longest shared prefix; among none shared, one of the same priority, the least
         * recently used */
        const int same = s->session && s->prio == prio, best_same = best && best->session &&
                                                                     best->prio == prio;
        if (!best || lcp > best_lcp ||
            (lcp == best_lcp && (same > best_same ||
                                 (same == best_same && s->last_used < best->last_used)))) {
            best = s;
            best_lcp = lcp;
        }
    }
    if (best) {
        best->busy = 1;
        best->last_used = ++p->clock;
    }
    pthread_mutex_unlock(&p->mu);
    ft_status_t st = FT_OK;
    if (!best) { /* every pooled session in use: one of its own */
        best = calloc(1, sizeof(*best));
        if (!best) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "serve: session slot");
        best->busy = 1;
    } else {
        best->pooled = 1;
    }
    st = ft_srv_slot_session(p, best, prio);
    uint32_t keep = best_lcp < n_prompt ? best_lcp : (n_prompt ? n_prompt - 1 : 0);
    if (keep > best->n_hist) keep = best->n_hist;
    if (!st && best->session && ft_session_n_past(best->session) != keep) {
        st = ft_session_rewind(best->session, keep);
        if (st && keep) {
            /* A model with recurrent (linear-attention) layers rewinds only
             * where it has the state: start this session over instead. */
            ft_status_free(st);
            keep = 0;
            st = ft_session_rewind(best->session, 0);
        }
    }
    if (st) {
        ft_srv_pool_release(p, best, NULL, 0, NULL, 0);
        return st;
    }
    best->n_hist = keep;
    *out_slot = best;
    *out_keep = keep;
    return FT_OK;
}

void ft_srv_pool_release(ft_srv_pool_t *p, ft_srv_slot_t *s, const int32_t *tokens,
                         uint32_t n_tokens, const int32_t *gen, uint32_t n_gen)
{
    if (!s) return;
    if (!s->pooled) {
        ft_session_destroy(s->session);
        free(s->hist);
        free(s);
        return;
    }
    if (p->tree) { /* empty for the next request: its pages stay in the prefix tree */
        if (s->session) ft_status_free(ft_session_rewind(s->session, 0));
        s->n_hist = 0;
        pthread_mutex_lock(&p->mu);
        s->busy = 0;
        pthread_mutex_unlock(&p->mu);
        return;
    }
    /* what the session has evaluated: the submitted tokens, then the generated ones
     * (all but the last, which a request samples and does not evaluate) */
    uint32_t n_past = s->session ? ft_session_n_past(s->session) : 0;
    if (n_past > p->n_ctx) n_past = p->n_ctx;
    uint32_t n = s->n_hist;
    for (uint32_t i = 0; n < n_past && i < n_tokens; i++)
        s->hist[n++] = tokens[i];
    for (uint32_t i = 0; n < n_past && i < n_gen; i++)
        s->hist[n++] = gen[i];
    if (n != n_past && s->session) {
        /* cannot say what it holds: forget it */
        ft_status_free(ft_session_rewind(s->session, 0));
        n = 0;
    }
    s->n_hist = n;
    pthread_mutex_lock(&p->mu);
    s->busy = 0;
    pthread_mutex_unlock(&p->mu);
}
