/* Sessions kept between requests, for prefix reuse: coding agents send
 * the same long context again and again, each request a little longer.
 *
 * On an engine with a KV page pool (cpu, sim) the sessions are
 * prefix_cache sessions: each request starts on an empty one (rewound to
 * 0), and the library restores what its prompt shares with the prefix
 * tree and the anchors (srv_anchor.h); the pool only saves creating
 * sessions, and gives side requests sessions of low cache priority.
 *
 * Otherwise (cuda: the KV lives on the device, outside the prefix cache)
 * the pool keeps up to n_slots idle sessions with the tokens each has
 * evaluated; a request takes the one sharing the longest prefix with its
 * prompt, rewinds it there (ft_session_rewind) and evaluates only the
 * rest (a model with recurrent layers starts over instead).
 *
 * When every pooled session is in use a request gets a fresh one of its
 * own. */
#ifndef FT_SERVE_SRV_POOL_H
#define FT_SERVE_SRV_POOL_H

#include "freetoken.h"
#include "srv_anchor.h"

#include <pthread.h>
#include <stdint.h>

typedef struct ft_srv_slot {
    ft_session_t *session;
    int32_t *hist; /* the tokens the session has evaluated, [n_hist] (== its n_past) */
    uint32_t n_hist;
    int busy;
    int pooled; /* 0: made for one request, destroyed at release */
    int prio;   /* ft_cache_priority_t the session was made with */
    uint64_t last_used;
} ft_srv_slot_t;

typedef struct ft_srv_pool {
    pthread_mutex_t mu;
    ft_engine_t *engine;
    uint32_t n_ctx;
    ft_srv_slot_t *slots;
    uint32_t n_slots;
    uint64_t clock;
    int tree;                  /* prefix_cache sessions and anchors (an engine with a KV pool) */
    uint32_t page_tokens;      /* positions per KV page (tree) */
    int recurrent;             /* the model has recurrent state (anchors only at n_past) */
    ft_srv_anchors_t anchors; /* when tree */
} ft_srv_pool_t;

/* n_slots 0 and prefix_cache 0: no reuse, every request gets a fresh
 * session. prefix_cache 1: the prefix tree and anchors where the engine
 * has a KV page pool. */
FT_WARN_UNUSED ft_status_t ft_srv_pool_init(ft_srv_pool_t *p, ft_engine_t *engine, uint32_t n_ctx,
                                            uint32_t n_slots, int prefix_cache);
void ft_srv_pool_free(ft_srv_pool_t *p);

/* A session for prompt: *out_keep of its first tokens are already
 * evaluated in it (the session is rewound to that point; at most
 * n_prompt - 1, so that the request evaluates at least one token and has
 * fresh logits to sample from). With tree, an empty prefix_cache session
 * of cache priority prio (ft_cache_priority_t) and *out_keep 0: the
 * library restores what it can when the prompt is submitted. */
FT_WARN_UNUSED ft_status_t ft_srv_pool_acquire(ft_srv_pool_t *p, const int32_t *prompt,
                                               uint32_t n_prompt, int prio,
                                               ft_srv_slot_t **out_slot, uint32_t *out_keep);
/* Gives the session back once its request has finished: it has
 * evaluated tokens[0, ft_session_n_past) (tokens: what it evaluated
 * before the request's generated ones, n_tokens of them, then gen). */
void ft_srv_pool_release(ft_srv_pool_t *p, ft_srv_slot_t *slot, const int32_t *tokens,
                         uint32_t n_tokens, const int32_t *gen, uint32_t n_gen);

#endif
