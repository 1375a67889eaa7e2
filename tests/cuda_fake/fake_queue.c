/* Deferred execution (FT_CUDA_FAKE_DEFER=1): each stream queues its work
 * and runs it only at a sync point (stream, event or context
 * synchronization, an event query, freeing memory, unloading a module,
 * destroying the stream), so host code that reads results before
 * synchronizing sees stale data, as it would on a GPU. A wait on an event
 * queues a marker that first runs the recording stream up to the event.
 * The legacy (NULL) stream runs at once after every queue (it
 * synchronizes with all streams). One lock guards every queue; queued
 * work runs under it, on the thread that reached the sync point. */
#include "fake_driver.h"

#include <stdlib.h>
#include <string.h>

int ft_fake_defer;

static pthread_mutex_t ft_fake_queue_lock = PTHREAD_MUTEX_INITIALIZER;
static ft_fake_stream_t **ft_fake_live;
static size_t ft_fake_n_live, ft_fake_cap_live;
static uint64_t ft_fake_next_id = 1;

static ft_fake_stream_t *ft_fake_find(uint64_t id)
{
    for (size_t i = 0; i < ft_fake_n_live; i++)
        if (ft_fake_live[i]->id == id) return ft_fake_live[i];
    return NULL;
}

/* Runs s's queue up to seq ops ever run. Lock held. */
static void ft_fake_run_to(ft_fake_stream_t *s, uint64_t seq, int depth)
{
    while (s->seq_done < seq && s->seq_done < s->seq_base + s->n_queued) {
        ft_fake_op_t *op = &s->queue[s->seq_done - s->seq_base];
        int rc = FT_FAKE_SUCCESS;
        if (op->kind == FT_FAKE_OP_WAIT) {
            ft_fake_stream_t *other = ft_fake_find(op->wait_stream_id);
            /* A cycle of waits is a deadlock on a GPU: report it. */
            if (other && other != s && depth < 64)
                ft_fake_run_to(other, op->wait_seq, depth + 1);
            else if (other && other != s)
                rc = FT_FAKE_ERROR_LAUNCH_FAILED;
        } else {
            rc = ft_fake_execute(op);
        }
        free(op->owned);
        op->owned = NULL;
        if (rc && !s->error) s->error = rc;
        s->seq_done++;
    }
    if (s->seq_done == s->seq_base + s->n_queued) {
        s->seq_base = s->seq_done;
        s->n_queued = 0;
    }
}

static int ft_fake_take_error(ft_fake_stream_t *s)
{
    const int rc = s->error;
    s->error = FT_FAKE_SUCCESS;
    return rc;
}

/* Every queue to its end; the first error. Lock held. */
static int ft_fake_run_all(void)
{
    int rc = FT_FAKE_SUCCESS;
    for (size_t i = 0; i < ft_fake_n_live; i++) {
        ft_fake_run_to(ft_fake_live[i], UINT64_MAX, 0);
        const int e = ft_fake_take_error(ft_fake_live[i]);
        if (!rc) rc = e;
    }
    return rc;
}

static int ft_fake_enqueue(ft_fake_stream_t *s, const ft_fake_op_t *op)
{
    if (s->n_queued == s->cap_queued) {
        const size_t cap = s->cap_queued ? 2 * s->cap_queued : 64;
        ft_fake_op_t *q = realloc(s->queue, cap * sizeof(*q));
        if (!q) return FT_FAKE_ERROR_OUT_OF_MEMORY;
        s->queue = q;
        s->cap_queued = cap;
    }
    ft_fake_op_t *slot = &s->queue[s->n_queued];
    *slot = *op;
    slot->owned = NULL;
    if (op->kind == FT_FAKE_OP_COPY && op->snapshot) {
        if (!(slot->owned = malloc(op->n_bytes))) return FT_FAKE_ERROR_OUT_OF_MEMORY;
        memcpy(slot->owned, (const void *)op->src, op->n_bytes);
        slot->src = (uintptr_t)slot->owned;
    }
    s->n_queued++;
    if (op->kind == FT_FAKE_OP_EVENT) {
        op->event->stream_id = s->id;
        op->event->seq = s->seq_base + s->n_queued;
        op->event->recorded = 0;
    }
    return FT_FAKE_SUCCESS;
}

int ft_fake_queue_submit(ft_fake_stream_t *s, const ft_fake_op_t *op)
{
    int rc;
    pthread_mutex_lock(&ft_fake_queue_lock);
    if (!s) {
        rc = ft_fake_run_all();
        const int e = ft_fake_execute(op);
        if (!rc) rc = e;
    } else if (op->sync_now) {
        ft_fake_run_to(s, UINT64_MAX, 0);
        rc = ft_fake_take_error(s);
        const int e = ft_fake_execute(op);
        if (!rc) rc = e;
    } else {
        rc = ft_fake_enqueue(s, op);
    }
    pthread_mutex_unlock(&ft_fake_queue_lock);
    return rc;
}

void ft_fake_queue_add_stream(ft_fake_stream_t *s)
{
    pthread_mutex_lock(&ft_fake_queue_lock);
    s->id = ft_fake_next_id++;
    if (ft_fake_n_live == ft_fake_cap_live) {
        const size_t cap = ft_fake_cap_live ? 2 * ft_fake_cap_live : 16;
        ft_fake_stream_t **live = realloc(ft_fake_live, cap * sizeof(*live));
        if (live) ft_fake_live = live, ft_fake_cap_live = cap;
    }
    /* Without room the stream is not waitable by id: waits on it pass. */
    if (ft_fake_n_live < ft_fake_cap_live) ft_fake_live[ft_fake_n_live++] = s;
    pthread_mutex_unlock(&ft_fake_queue_lock);
}

void ft_fake_queue_remove_stream(ft_fake_stream_t *s)
{
    pthread_mutex_lock(&ft_fake_queue_lock);
    ft_fake_run_to(s, UINT64_MAX, 0);
    for (size_t i = 0; i < ft_fake_n_live; i++)
        if (ft_fake_live[i] == s) {
            ft_fake_live[i] = ft_fake_live[--ft_fake_n_live];
            break;
        }
    if (!ft_fake_n_live) {
        free(ft_fake_live);
        ft_fake_live = NULL;
        ft_fake_cap_live = 0;
    }
    free(s->queue);
    s->queue = NULL;
    pthread_mutex_unlock(&ft_fake_queue_lock);
}

int ft_fake_event_pending(const ft_fake_event_t *e)
{
    pthread_mutex_lock(&ft_fake_queue_lock);
    const ft_fake_stream_t *s = e->stream_id ? ft_fake_find(e->stream_id) : NULL;
    const int pending = s && s->seq_done < e->seq;
    pthread_mutex_unlock(&ft_fake_queue_lock);
    return pending;
}

int ft_fake_queue_wait(ft_fake_stream_t *s, ft_fake_event_t *e)
{
    if (!ft_fake_event_pending(e)) return FT_FAKE_SUCCESS;
    if (!s) return ft_fake_flush_event(e);
    const ft_fake_op_t op = {
        .kind = FT_FAKE_OP_WAIT, .wait_stream_id = e->stream_id, .wait_seq = e->seq};
    pthread_mutex_lock(&ft_fake_queue_lock);
    const int rc = ft_fake_enqueue(s, &op);
    pthread_mutex_unlock(&ft_fake_queue_lock);
    return rc;
}

int ft_fake_flush_stream(ft_fake_stream_t *s)
{
    int rc;
    pthread_mutex_lock(&ft_fake_queue_lock);
    if (s) {
        ft_fake_run_to(s, UINT64_MAX, 0);
        rc = ft_fake_take_error(s);
    } else {
        rc = ft_fake_run_all();
    }
    pthread_mutex_unlock(&ft_fake_queue_lock);
    return rc;
}

int ft_fake_flush_event(ft_fake_event_t *e)
{
    int rc = FT_FAKE_SUCCESS;
    pthread_mutex_lock(&ft_fake_queue_lock);
    ft_fake_stream_t *s = e->stream_id ? ft_fake_find(e->stream_id) : NULL;
    if (s) {
        ft_fake_run_to(s, e->seq, 0);
        rc = ft_fake_take_error(s);
    }
    pthread_mutex_unlock(&ft_fake_queue_lock);
    return rc;
}
