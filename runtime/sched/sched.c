/* The scheduler: one thread per engine that owns the thread pool and the
 * device and runs every step (DESIGN.md section 10). Each turn of its loop
 *   1. (mu) finishes cancelled requests, starts waiting ones while fewer
 *      than max_running run (each session runs one request at a time, in
 *      submit order), and builds the step (sched_step.c);
 *   2. (step_lock) runs the step;
 *   3. (no lock) calls the token callbacks;
 *   4. (mu) publishes the new tokens and which requests ended;
 *   5. (no lock) makes the ended requests' last callbacks;
 *   6. (mu) marks them done, wakes the waiters, frees the released ones.
 * Cancellation therefore takes effect between steps. */
#include "sched_internal.h"

#include "../base/alloc.h"
#include "../exec/exec_api.h"

#include <string.h>

#define FT_SCHED_MAX_QUEUED 256u
#define FT_SCHED_MAX_RUNNING 16u
#define FT_SCHED_STEP_TOKENS 512u

/* ---- lists ----------------------------------------------------------------- */

static void ft_list_push(ft_request_t **head, ft_request_t **tail, ft_request_t *r)
{
    r->next = NULL;
    r->prev = *tail;
    if (*tail)
        (*tail)->next = r;
    else
        *head = r;
    *tail = r;
}

static void ft_list_remove(ft_request_t **head, ft_request_t **tail, ft_request_t *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        *head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        *tail = r->prev;
    r->next = r->prev = NULL;
}

void ft_sched_enqueue_locked(ft_sched_t *sc, ft_request_t *r)
{
    r->state = FT_REQ_WAITING;
    ft_list_push(&sc->wait_head, &sc->wait_tail, r);
    if (r->owned) sc->n_waiting_async++;
    r->session->sched->n_unfinished++;
    pthread_cond_signal(&sc->work);
}

int ft_sched_on_thread(const ft_sched_t *sc)
{
    return pthread_equal(pthread_self(), sc->thread);
}

/* ---- ending requests ---------------------------------------------------- */

/* Takes r out of its list into `ended` (linked through next), to be
 * published after its last callback. */
static void ft_sched_end_locked(ft_sched_t *sc, ft_request_t *r, ft_finish_reason_t why,
                                ft_status_t error, ft_request_t **ended)
{
    if (r->state == FT_REQ_WAITING) {
        ft_list_remove(&sc->wait_head, &sc->wait_tail, r);
        if (r->owned) sc->n_waiting_async--;
    } else {
        ft_list_remove(&sc->run_head, &sc->run_tail, r);
        sc->n_running--;
        r->session->sched->running = 0;
    }
    r->state = FT_REQ_ENDING;
    r->finish = why;
    r->error = error;
    r->next = *ended;
    *ended = r;
}

/* Cancelled requests end; waiting ones start while there is room. */
static void ft_sched_admit_locked(ft_sched_t *sc, ft_request_t **ended)
{
    for (ft_request_t *r = sc->run_head, *nx; r; r = nx) {
        nx = r->next;
        if (r->cancel) ft_sched_end_locked(sc, r, FT_FINISH_CANCELLED, NULL, ended);
    }
    for (ft_request_t *r = sc->wait_head, *nx; r; r = nx) {
        nx = r->next;
        if (r->cancel) {
            ft_sched_end_locked(sc, r, FT_FINISH_CANCELLED, NULL, ended);
            continue;
        }
        ft_sched_session_t *ss = r->session->sched;
        if (ss->running || sc->n_running >= sc->max_running)
            continue; /* its session's earlier request first, or no room */
        ft_status_t st = ft_sched_start_check(r);
        if (st) {
            ft_sched_end_locked(sc, r, FT_FINISH_ERROR, st, ended);
            continue;
        }
        ft_list_remove(&sc->wait_head, &sc->wait_tail, r);
        if (r->owned) sc->n_waiting_async--;
        ft_list_push(&sc->run_head, &sc->run_tail, r);
        sc->n_running++;
        ss->running = 1;
        r->state = FT_REQ_RUNNING;
    }
}

/* Publishes a step's results: new samples, and the requests it ended. */
static void ft_sched_apply_locked(ft_sched_t *sc, uint32_t n_items, ft_request_t **ended)
{
    for (uint32_t i = 0; i < n_items; i++) {
        ft_sched_item_t *it = &sc->items[i];
        it->r->n_samples = it->r->n_made;
        if (it->finish != FT_FINISH_NONE) ft_sched_end_locked(sc, it->r, it->finish, it->st, ended);
    }
    sc->n_steps++;
    sc->n_items += n_items;
}

/* Marks ended requests done after their last callbacks; frees the released
 * ones. Returns the sessions whose last reference went (linked through
 * their sync request's next), to free without mu. */
static ft_request_t *ft_sched_publish_locked(ft_sched_t *sc, ft_request_t *ended)
{
    ft_request_t *dead_sessions = NULL;
    for (ft_request_t *r = ended, *nx; r; r = nx) {
        nx = r->next;
        r->next = NULL;
        r->state = FT_REQ_DONE;
        ft_session_t *s = r->session;
        s->sched->n_unfinished--;
        if (!r->released) continue;
        if (ft_sched_session_unref_locked(sc, s)) {
            s->sched->sync.next = dead_sessions;
            dead_sessions = &s->sched->sync;
        }
        ft_sched_request_free(sc, r);
    }
    pthread_cond_broadcast(&sc->progress);
    return dead_sessions;
}

static void ft_sched_free_sessions(ft_sched_t *sc, ft_request_t *dead)
{
    for (ft_request_t *r = dead, *nx; r; r = nx) {
        nx = r->next;
        ft_sched_session_free(sc, r->session);
    }
}

/* ---- the loop --------------------------------------------------------------- */

static void *ft_sched_main(void *arg)
{
    ft_sched_t *sc = arg;
    ft_engine_t *e = sc->e;
    pthread_mutex_lock(&sc->mu);
    for (;;) {
        ft_request_t *ended = NULL;
        ft_sched_admit_locked(sc, &ended);
        const uint32_t n_items = ft_sched_build_step_locked(sc);
        if (!n_items && !ended) {
            if (sc->stop) break;
            pthread_cond_wait(&sc->work, &sc->mu);
            continue;
        }
        pthread_mutex_unlock(&sc->mu);
        if (n_items) {
            pthread_mutex_lock(&e->step_lock);
            ft_sched_run_step(sc, n_items);
            pthread_mutex_unlock(&e->step_lock);
            for (uint32_t i = 0; i < n_items; i++) {
                const ft_sched_item_t *it = &sc->items[i];
                if (it->sampled && it->r->on_token)
                    it->r->on_token(it->r->user, it->r, &it->r->samples[it->r->n_made - 1],
                                    it->r->n_made - 1);
            }
            pthread_mutex_lock(&sc->mu);
            ft_sched_apply_locked(sc, n_items, &ended);
            pthread_mutex_unlock(&sc->mu);
        }
        /* ended is ours alone until published: nobody frees an ENDING request */
        for (ft_request_t *r = ended; r; r = r->next)
            if (r->on_token) r->on_token(r->user, r, NULL, r->n_made);
        pthread_mutex_lock(&sc->mu);
        ft_request_t *dead = ft_sched_publish_locked(sc, ended);
        if (dead) {
            pthread_mutex_unlock(&sc->mu);
            ft_sched_free_sessions(sc, dead);
            pthread_mutex_lock(&sc->mu);
        }
    }
    pthread_mutex_unlock(&sc->mu);
    return NULL;
}

/* ---- create / destroy --------------------------------------------------------- */

ft_status_t ft_sched_create(ft_engine_t *e, const ft_engine_options_t *opts, ft_sched_t **out_sched)
{
    *out_sched = NULL;
    ft_sched_t *sc = ft_mem_calloc(e->a, 1, sizeof(*sc));
    if (!sc) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "scheduler: out of memory");
    sc->e = e;
    sc->max_queued = opts->max_queued ? opts->max_queued : FT_SCHED_MAX_QUEUED;
    sc->max_running = opts->max_running ? opts->max_running : FT_SCHED_MAX_RUNNING;
    sc->step_tokens = opts->step_tokens ? opts->step_tokens : FT_SCHED_STEP_TOKENS;
    sc->items = ft_mem_calloc(e->a, sc->max_running, sizeof(ft_sched_item_t));
    sc->exec = ft_mem_calloc(e->a, sc->max_running, sizeof(ft_exec_item_t));
    if (!sc->items || !sc->exec) {
        const uint32_t n = sc->max_running;
        ft_mem_free(e->a, sc->items);
        ft_mem_free(e->a, sc->exec);
        ft_mem_free(e->a, sc);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "scheduler: out of memory for %u step items",
                              n);
    }
    /* The step workspace holds a step's token budget over the sessions a
     * pass carries (more items than that run as several passes). */
    ft_status_t st = ft_exec_reserve(
        e, sc->step_tokens, sc->max_running < FT_EXEC_MAX_ITEMS ? sc->max_running : FT_EXEC_MAX_ITEMS);
    if (st) {
        ft_mem_free(e->a, sc->items);
        ft_mem_free(e->a, sc->exec);
        ft_mem_free(e->a, sc);
        return ft_status_annotate(st, "scheduler");
    }
    int made = 0;
    if (pthread_mutex_init(&sc->mu, NULL) == 0) {
        made = 1;
        if (pthread_cond_init(&sc->work, NULL) == 0) {
            made = 2;
            if (pthread_cond_init(&sc->progress, NULL) == 0) {
                made = 3;
                if (pthread_create(&sc->thread, NULL, ft_sched_main, sc) == 0) made = 4;
            }
        }
    }
    if (made < 4) {
        if (made >= 3) pthread_cond_destroy(&sc->progress);
        if (made >= 2) pthread_cond_destroy(&sc->work);
        if (made >= 1) pthread_mutex_destroy(&sc->mu);
        ft_mem_free(e->a, sc->items);
        ft_mem_free(e->a, sc->exec);
        ft_mem_free(e->a, sc);
        return ft_status_make(FT_STATUS_UNAVAILABLE, "scheduler: cannot start its thread");
    }
    *out_sched = sc;
    return FT_OK;
}

void ft_sched_destroy(ft_sched_t *sc)
{
    if (!sc) return;
    pthread_mutex_lock(&sc->mu);
    sc->stop = 1;
    pthread_cond_signal(&sc->work);
    pthread_mutex_unlock(&sc->mu);
    pthread_join(sc->thread, NULL);
    pthread_cond_destroy(&sc->progress);
    pthread_cond_destroy(&sc->work);
    pthread_mutex_destroy(&sc->mu);
    const ft_allocator_t *a = sc->e->a;
    ft_mem_free(a, sc->items);
    ft_mem_free(a, sc->exec);
    ft_mem_free(a, sc);
}
