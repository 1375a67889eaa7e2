/* freetoken.h's engine and session lifetimes and the synchronous calls,
 * over the executor (exec_api.h) and the scheduler: ft_engine_open starts
 * the scheduler, ft_engine_close refuses while sessions are live, sessions
 * are reference-counted, and ft_session_eval submits a request and waits. */
#include "sched_internal.h"

#include "../base/alloc.h"
#include "../exec/exec_api.h"

#include <string.h>

void ft_engine_options_init(ft_engine_options_t *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->max_queued = 256;
    opts->max_running = 16;
    opts->step_tokens = 512;
}

ft_status_t ft_engine_open(const char *bundle_path, const ft_engine_options_t *opts,
                           ft_engine_t **out_engine)
{
    ft_engine_options_t defaults;
    if (!opts) {
        ft_engine_options_init(&defaults);
        opts = &defaults;
    }
    ft_engine_t *e;
    ft_status_t st = ft_exec_engine_open(bundle_path, opts, &e);
    *out_engine = NULL;
    if (st) return st;
    if ((st = ft_sched_create(e, opts, &e->sched))) {
        ft_exec_engine_close(e);
        return st;
    }
    *out_engine = e;
    return FT_OK;
}

ft_status_t ft_engine_close(ft_engine_t *e)
{
    if (!e) return FT_OK;
    ft_sched_t *sc = e->sched;
    pthread_mutex_lock(&sc->mu);
    const uint32_t live = sc->n_sessions;
    pthread_mutex_unlock(&sc->mu);
    if (live)
        return ft_status_make(FT_STATUS_BUSY,
                              "engine close: %u session%s still live (destroy every session, and "
                              "release its requests, first); the engine stays open",
                              live, live == 1 ? " is" : "s are");
    ft_sched_destroy(sc);
    e->sched = NULL;
    ft_exec_engine_close(e);
    return FT_OK;
}

/* ---- sessions ---------------------------------------------------------------- */

ft_status_t ft_session_create(ft_engine_t *e, const ft_session_options_t *opts,
                              ft_session_t **out_session)
{
    *out_session = NULL;
    ft_session_t *s;
    pthread_mutex_lock(&e->step_lock); /* a device backend allocates device memory */
    ft_status_t st = ft_exec_session_create(e, opts, &s);
    pthread_mutex_unlock(&e->step_lock);
    if (st) return st;
    ft_sched_session_t *ss = ft_mem_calloc(e->a, 1, sizeof(*ss));
    int32_t *hist = ss ? ft_mem_alloc(e->a, (size_t)s->n_ctx * sizeof(int32_t)) : NULL;
    if (!hist) {
        ft_mem_free(e->a, ss);
        pthread_mutex_lock(&e->step_lock);
        ft_exec_session_destroy(s);
        pthread_mutex_unlock(&e->step_lock);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY,
                              "session: out of memory for its token history");
    }
    ss->refs = 1;
    ss->history = hist;
    ss->max_tokens = opts ? opts->max_tokens : 0;
    s->sched = ss;
    pthread_mutex_lock(&e->sched->mu);
    e->sched->n_sessions++;
    pthread_mutex_unlock(&e->sched->mu);
    *out_session = s;
    return FT_OK;
}

void ft_session_retain(ft_session_t *s)
{
    if (!s) return;
    ft_sched_t *sc = s->engine->sched;
    pthread_mutex_lock(&sc->mu);
    s->sched->refs++;
    pthread_mutex_unlock(&sc->mu);
}

int ft_sched_session_unref_locked(ft_sched_t *sc, ft_session_t *s)
{
    if (--s->sched->refs) return 0;
    sc->n_sessions--;
    return 1;
}

void ft_sched_session_free(ft_sched_t *sc, ft_session_t *s)
{
    ft_engine_t *e = sc->e;
    ft_mem_free(e->a, s->sched->history);
    ft_mem_free(e->a, s->sched);
    pthread_mutex_lock(&e->step_lock);
    ft_exec_session_destroy(s);
    pthread_mutex_unlock(&e->step_lock);
}

void ft_session_destroy(ft_session_t *s)
{
    if (!s) return;
    ft_sched_t *sc = s->engine->sched;
    pthread_mutex_lock(&sc->mu);
    const int last = ft_sched_session_unref_locked(sc, s);
    pthread_mutex_unlock(&sc->mu);
    if (last) ft_sched_session_free(sc, s);
}

/* ---- synchronous calls ---------------------------------------------------------- */

ft_status_t ft_session_eval(ft_session_t *s, const int32_t *tokens, uint32_t n,
                            float *out_all_logits)
{
    if (!s) return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "evaluate: no session");
    if (n == 0 || !tokens)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "evaluate: no tokens given");
    ft_sched_t *sc = s->engine->sched;
    if (ft_sched_on_thread(sc))
        return ft_status_make(
            FT_STATUS_INVALID_ARGUMENT,
            "evaluate: called on the scheduler's thread (a request callback), where "
            "it would wait for itself");
    ft_sched_session_t *ss = s->sched;
    ft_request_t *r = &ss->sync;
    pthread_mutex_lock(&sc->mu);
    while (ss->sync_busy) /* another thread's ft_session_eval on this session */
        pthread_cond_wait(&sc->progress, &sc->mu);
    ss->sync_busy = 1;
    memset(r, 0, sizeof(*r));
    r->sched = sc;
    r->session = s;
    r->tokens = tokens;
    r->n_tokens = n;
    r->out_rows = out_all_logits;
    r->pending = -1;
    ft_sched_enqueue_locked(sc, r);
    while (r->state != FT_REQ_DONE)
        pthread_cond_wait(&sc->progress, &sc->mu);
    ft_status_t st = r->error;
    r->error = NULL;
    ss->sync_busy = 0;
    pthread_cond_broadcast(&sc->progress);
    pthread_mutex_unlock(&sc->mu);
    return st;
}

/* A call that changes a session outside a request: refused while it has
 * unfinished requests; under step_lock (the KV pages are the engine's
 * pool's) and then mu. */
typedef ft_status_t (*ft_session_op_fn)(ft_session_t *s, uint32_t arg);

static ft_status_t ft_session_locked_op(ft_session_t *s, uint32_t arg, ft_session_op_fn fn,
                                        const char *what)
{
    ft_engine_t *e = s->engine;
    ft_sched_t *sc = e->sched;
    pthread_mutex_lock(&e->step_lock);
    pthread_mutex_lock(&sc->mu);
    const uint32_t busy = s->sched->n_unfinished;
    ft_status_t st = busy ? ft_status_make(FT_STATUS_BUSY,
                                           "%s %u: the session has %u unfinished request%s "
                                           "(wait for or cancel them first)",
                                           what, arg, busy, busy == 1 ? "" : "s")
                          : fn(s, arg);
    pthread_mutex_unlock(&sc->mu);
    pthread_mutex_unlock(&e->step_lock);
    return st;
}

ft_status_t ft_session_rewind(ft_session_t *s, uint32_t n_past)
{
    return ft_session_locked_op(s, n_past, ft_exec_session_rewind, "rewind to");
}

static ft_status_t ft_session_anchor_op(ft_session_t *s, uint32_t pos)
{
    return ft_exec_session_anchor(s, s->sched->history, pos);
}

ft_status_t ft_session_anchor(ft_session_t *s, uint32_t pos)
{
    if (!s) return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "anchor: no session");
    return ft_session_locked_op(s, pos, ft_session_anchor_op, "anchor at");
}
