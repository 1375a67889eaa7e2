/* The scheduler's objects: requests, the per-session state it keeps, and
 * the scheduler itself (one thread per engine that runs every step).
 *
 * Locks. sched->mu guards the queues, the requests' published fields
 * (state, cancel, released, n_samples, finish, error), the sessions'
 * refcounts and queues, and the counters. The engine's step_lock (exec)
 * is held while a step runs on the pool and the device, and while a
 * session's device buffers are made or freed. Nobody takes step_lock while
 * holding mu (a request callback may take mu while the scheduler is
 * between the two), so the order is: step_lock, then mu, never the other
 * way.
 *
 * Ownership. Only the scheduler thread runs the model, writes a session's
 * n_past, logits and token history, samples, and frees requests. A
 * request's unpublished progress (n_done, pending, the samples past
 * n_samples) is the scheduler's alone. */
#ifndef FT_SCHED_SCHED_INTERNAL_H
#define FT_SCHED_SCHED_INTERNAL_H

#include "freetoken.h"
#include "../exec/engine_internal.h"
#include "../exec/exec_api.h"

#include <pthread.h>
#include <stdint.h>

typedef struct ft_sched ft_sched_t;

typedef enum ft_req_state {
    FT_REQ_WAITING = 0, /* in the waiting list */
    FT_REQ_RUNNING = 1, /* in the running list: gets one item per step */
    FT_REQ_ENDING = 2,  /* finished, its last callback not yet made */
    FT_REQ_DONE = 3,    /* finished and published */
} ft_req_state_t;

struct ft_request {
    ft_sched_t *sched;
    ft_session_t *session;
    ft_request_t *prev, *next; /* in the waiting or running list */
    ft_req_state_t state;
    int cancel;   /* asked to stop */
    int released; /* the caller's handle is gone: free it when done */
    int owned;    /* made by ft_request_submit (0: a session's synchronous request) */
    /* What to do (fixed at submit). */
    const int32_t *tokens;
    uint32_t n_tokens;
    float *out_rows;
    uint32_t max_new;
    ft_sampler_t *sampler;
    int stop_at_eog;
    ft_request_fn on_token;
    void *user;
    /* The scheduler's progress. */
    uint32_t n_done;      /* prompt tokens evaluated */
    int32_t pending;      /* a sampled token to evaluate next, or -1 */
    uint32_t n_made;      /* samples written (n_samples publishes them) */
    ft_sample_t *samples; /* [max_new] */
    /* Published under mu. */
    uint32_t n_samples, n_taken;
    ft_finish_reason_t finish;
    ft_status_t error;
};

/* What the scheduler keeps per session (ft_session_t.sched). */
typedef struct ft_sched_session {
    uint32_t refs;         /* the caller's references plus one per unreleased request */
    uint32_t n_unfinished; /* requests submitted and not yet DONE */
    int running;           /* one of its requests is in the running list */
    uint64_t max_tokens;   /* 0: no limit */
    uint64_t n_used;       /* tokens evaluated over its life */
    int32_t *history;      /* [n_ctx] the tokens at positions [0, n_past) */
    ft_request_t sync;     /* ft_session_eval's request (no allocation) */
    int sync_busy;
} ft_sched_session_t;

/* One work item of a step: a session's prefill chunk or decode token
 * (n 0: nothing to evaluate, only a sample to draw). */
typedef struct ft_sched_item {
    ft_request_t *r;
    const int32_t *tokens;
    uint32_t n;
    int prompt;                /* the tokens are prompt tokens (else the pending token) */
    int sampled;               /* a sample was drawn: r->samples[r->n_made - 1] */
    ft_finish_reason_t finish; /* what the item ended, or NONE */
    ft_status_t st;
    uint32_t pos; /* the session's n_past before the step */
} ft_sched_item_t;

struct ft_sched {
    ft_engine_t *e;
    pthread_mutex_t mu;
    pthread_cond_t work;     /* the scheduler waits here for requests */
    pthread_cond_t progress; /* waiters: something was published */
    pthread_t thread;
    int stop;
    ft_request_t *wait_head, *wait_tail, *run_head, *run_tail;
    uint32_t n_running, n_waiting_async, n_sessions;
    uint32_t max_queued, max_running, step_tokens;
    uint32_t rr;               /* round-robin start in the running list */
    ft_sched_item_t *items;    /* [max_running] */
    ft_exec_item_t *exec;      /* [max_running] the step's items as the executor takes them */
    uint64_t n_steps, n_items; /* counters */
};

/* sched.c */
FT_WARN_UNUSED ft_status_t ft_sched_create(ft_engine_t *e, const ft_engine_options_t *opts,
                                           ft_sched_t **out_sched);
/* Stops the thread (no request may be left) and frees. */
void ft_sched_destroy(ft_sched_t *sched);
/* Appends r to the waiting list and wakes the scheduler (mu held). */
void ft_sched_enqueue_locked(ft_sched_t *sched, ft_request_t *r);
/* 1 on the scheduler's own thread. */
int ft_sched_on_thread(const ft_sched_t *sched);
/* Drops a session reference (mu held); returns 1 when it was the last, and
 * the caller (mu released) must then call ft_sched_session_free. */
int ft_sched_session_unref_locked(ft_sched_t *sched, ft_session_t *s);
void ft_sched_session_free(ft_sched_t *sched, ft_session_t *s);
/* Frees a request (mu not needed: it is DONE and nobody else holds it). */
void ft_sched_request_free(ft_sched_t *sched, ft_request_t *r);

/* sched_step.c: the step, built under mu and run outside it. */
uint32_t ft_sched_build_step_locked(ft_sched_t *sched);
void ft_sched_run_step(ft_sched_t *sched, uint32_t n_items);
/* The check a request gets when it starts (mu held, scheduler thread):
 * room in the context and the token limit, logits to sample from. */
FT_WARN_UNUSED ft_status_t ft_sched_start_check(const ft_request_t *r);

#endif
