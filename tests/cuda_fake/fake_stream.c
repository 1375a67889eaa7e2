/* The fake driver's streams, events and graphs. Every stream executes
 * its work at the call, in call order, so waits are already satisfied
 * and events hold the time their record call ran (clock_gettime); with
 * FT_CUDA_FAKE_DEFER=1 the work waits in a queue for a sync point
 * (fake_queue.c).
 *
 * Capture (cuStreamBeginCapture .. cuStreamEndCapture) records work into
 * a graph instead of running it; a stream that waits on an event recorded
 * inside the capture joins it, as in CUDA. cuGraphLaunch replays the
 * recorded work in order. Synchronizing a capturing stream invalidates
 * the capture (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED). */
#include "fake_driver.h"

#include <stdlib.h>
#include <string.h>

enum { FT_FAKE_MAX_JOINED = 16 };

struct ft_fake_graph {
    ft_fake_op_t *ops;
    size_t n_ops, cap_ops;
    int invalid;
    ft_fake_stream_t *origin;
    ft_fake_stream_t *joined[FT_FAKE_MAX_JOINED];
    uint32_t n_joined;
};

int ft_fake_execute(const ft_fake_op_t *op)
{
    switch (op->kind) {
    case FT_FAKE_OP_LAUNCH: {
        void *params[FT_FAKE_MAX_ARGS];
        for (int i = 0; i < FT_FAKE_MAX_ARGS; i++)
            params[i] = (void *)&op->args[i];
        const ft_fake_launch_t l = {{op->grid[0], op->grid[1], op->grid[2]},
                                    {op->block[0], op->block[1], op->block[2]},
                                    params};
        return ft_fake_kernel_run(&op->fn->kernel, &l);
    }
    case FT_FAKE_OP_COPY:
        memmove((void *)op->dst, (const void *)op->src, op->n_bytes);
        return FT_FAKE_SUCCESS;
    case FT_FAKE_OP_MEMSET:
        memset((void *)op->dst, op->value, op->n_bytes);
        return FT_FAKE_SUCCESS;
    case FT_FAKE_OP_EVENT:
        clock_gettime(CLOCK_MONOTONIC, &op->event->when);
        op->event->recorded = 1;
        return FT_FAKE_SUCCESS;
    case FT_FAKE_OP_WAIT: /* fake_queue.c runs waits itself */
        return FT_FAKE_SUCCESS;
    }
    return FT_FAKE_ERROR_INVALID_VALUE;
}

static int ft_fake_graph_append(ft_fake_graph_t *g, const ft_fake_op_t *op)
{
    if (g->n_ops == g->cap_ops) {
        const size_t cap = g->cap_ops ? 2 * g->cap_ops : 32;
        ft_fake_op_t *ops = realloc(g->ops, cap * sizeof(*ops));
        if (!ops) {
            g->invalid = 1;
            return FT_FAKE_ERROR_OUT_OF_MEMORY;
        }
        g->ops = ops;
        g->cap_ops = cap;
    }
    g->ops[g->n_ops++] = *op;
    return FT_FAKE_SUCCESS;
}

int ft_fake_submit(ft_fake_stream_t *s, const ft_fake_op_t *op)
{
    if (!s || !s->capture) return ft_fake_defer ? ft_fake_queue_submit(s, op) : ft_fake_execute(op);
    if (op->kind == FT_FAKE_OP_EVENT) op->event->capture = s->capture;
    return ft_fake_graph_append(s->capture, op);
}

FT_FAKE_API int cuStreamCreate(ft_fake_stream_t **s, unsigned flags)
{
    const int rc = ft_fake_ready();
    if (rc) return rc;
    if (!s || flags > 1) return FT_FAKE_ERROR_INVALID_VALUE;
    *s = calloc(1, sizeof(**s));
    if (!*s) return FT_FAKE_ERROR_OUT_OF_MEMORY;
    (*s)->flags = flags;
    ft_fake_queue_add_stream(*s);
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuStreamDestroy_v2(ft_fake_stream_t *s)
{
    const int rc = ft_fake_ready();
    if (rc) return rc;
    if (!s) return FT_FAKE_ERROR_INVALID_HANDLE;
    if (s->capture) s->capture->invalid = 1;
    ft_fake_queue_remove_stream(s); /* its queued work completes first */
    free(s);
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuStreamSynchronize(ft_fake_stream_t *s)
{
    const int rc = ft_fake_ready();
    if (rc) return rc;
    if (s && s->capture) {
        s->capture->invalid = 1;
        return FT_FAKE_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    return ft_fake_defer ? ft_fake_flush_stream(s) : FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuStreamWaitEvent(ft_fake_stream_t *s, ft_fake_event_t *e, unsigned flags)
{
    const int rc = ft_fake_ready();
    if (rc) return rc;
    if (!e) return FT_FAKE_ERROR_INVALID_HANDLE;
    ft_fake_graph_t *g = e->capture;
    if (!g) return ft_fake_defer ? ft_fake_queue_wait(s, e) : FT_FAKE_SUCCESS;
    if (!s || s->capture == g) return FT_FAKE_SUCCESS;
    if (s->capture || g->n_joined == FT_FAKE_MAX_JOINED) return FT_FAKE_ERROR_INVALID_VALUE;
    s->capture = g; /* joins the capture, as in CUDA */
    g->joined[g->n_joined++] = s;
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuEventCreate(ft_fake_event_t **e, unsigned flags)
{
    const int rc = ft_fake_ready();
    if (rc) return rc;
    if (!e || flags > 7) return FT_FAKE_ERROR_INVALID_VALUE;
    *e = calloc(1, sizeof(**e));
    if (!*e) return FT_FAKE_ERROR_OUT_OF_MEMORY;
    (*e)->flags = flags;
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuEventDestroy_v2(ft_fake_event_t *e)
{
    if (!e) return FT_FAKE_ERROR_INVALID_HANDLE;
    if (ft_fake_event_pending(e)) ft_fake_flush_event(e); /* its record still runs */
    free(e);
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuEventRecord(ft_fake_event_t *e, ft_fake_stream_t *s)
{
    const int rc = ft_fake_ready();
    if (rc) return rc;
    if (!e) return FT_FAKE_ERROR_INVALID_HANDLE;
    e->capture = NULL;
    const ft_fake_op_t op = {.kind = FT_FAKE_OP_EVENT, .event = e};
    return ft_fake_submit(s, &op);
}

/* Deferred: a pending event reports NOT_READY once, and its work runs, so
 * a polling loop ends. */
FT_FAKE_API int cuEventQuery(ft_fake_event_t *e)
{
    if (!e) return FT_FAKE_ERROR_INVALID_HANDLE;
    if (e->capture) return FT_FAKE_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (!ft_fake_event_pending(e)) return FT_FAKE_SUCCESS;
    const int rc = ft_fake_flush_event(e);
    return rc ? rc : FT_FAKE_ERROR_NOT_READY;
}

FT_FAKE_API int cuEventSynchronize(ft_fake_event_t *e)
{
    if (!e) return FT_FAKE_ERROR_INVALID_HANDLE;
    if (e->capture) return FT_FAKE_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    return ft_fake_flush_event(e);
}

FT_FAKE_API int cuEventElapsedTime(float *ms, ft_fake_event_t *start, ft_fake_event_t *end)
{
    if (!ms || !start || !end) return FT_FAKE_ERROR_INVALID_VALUE;
    if (ft_fake_event_pending(start) || ft_fake_event_pending(end)) return FT_FAKE_ERROR_NOT_READY;
    if (!start->recorded || !end->recorded || (start->flags & 2) || (end->flags & 2))
        return FT_FAKE_ERROR_INVALID_HANDLE; /* never recorded, or DISABLE_TIMING */
    *ms = (float)((double)(end->when.tv_sec - start->when.tv_sec) * 1e3 +
                  (double)(end->when.tv_nsec - start->when.tv_nsec) / 1e6);
    return FT_FAKE_SUCCESS;
}

/* Capture and graphs. */
FT_FAKE_API int cuStreamBeginCapture_v2(ft_fake_stream_t *s, int mode)
{
    const int rc = ft_fake_ready();
    if (rc) return rc;
    if (!s) return FT_FAKE_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the legacy stream */
    if (s->capture) return FT_FAKE_ERROR_INVALID_VALUE;
    if (!(s->capture = calloc(1, sizeof(*s->capture)))) return FT_FAKE_ERROR_OUT_OF_MEMORY;
    s->capture->origin = s;
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuStreamBeginCapture(ft_fake_stream_t *s, int mode)
{
    return cuStreamBeginCapture_v2(s, mode);
}

FT_FAKE_API int cuStreamIsCapturing(ft_fake_stream_t *s, int *status)
{
    if (!status) return FT_FAKE_ERROR_INVALID_VALUE;
    *status = s && s->capture ? (s->capture->invalid ? 2 : 1) : 0;
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuGraphDestroy(ft_fake_graph_t *g)
{
    if (!g) return FT_FAKE_ERROR_INVALID_VALUE;
    free(g->ops);
    free(g);
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuStreamEndCapture(ft_fake_stream_t *s, ft_fake_graph_t **out)
{
    const int rc = ft_fake_ready();
    if (rc) return rc;
    if (!s || !out || !s->capture || s->capture->origin != s) return FT_FAKE_ERROR_INVALID_VALUE;
    ft_fake_graph_t *g = s->capture;
    s->capture = NULL;
    for (uint32_t i = 0; i < g->n_joined; i++)
        g->joined[i]->capture = NULL;
    g->n_joined = 0;
    /* Events recorded in the capture are plain events again. */
    for (size_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].kind == FT_FAKE_OP_EVENT && g->ops[i].event->capture == g)
            g->ops[i].event->capture = NULL;
    if (g->invalid) {
        cuGraphDestroy(g);
        *out = NULL;
        return FT_FAKE_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    *out = g;
    return FT_FAKE_SUCCESS;
}

/* An executable graph is a copy of the recorded work. */
FT_FAKE_API int cuGraphInstantiateWithFlags(ft_fake_graph_t **exec, ft_fake_graph_t *g,
                                            unsigned long long flags)
{
    if (!exec || !g) return FT_FAKE_ERROR_INVALID_VALUE;
    ft_fake_graph_t *x = calloc(1, sizeof(*x));
    if (!x) return FT_FAKE_ERROR_OUT_OF_MEMORY;
    if (g->n_ops && !(x->ops = malloc(g->n_ops * sizeof(*x->ops)))) {
        free(x);
        return FT_FAKE_ERROR_OUT_OF_MEMORY;
    }
    if (g->n_ops) memcpy(x->ops, g->ops, g->n_ops * sizeof(*x->ops));
    x->n_ops = x->cap_ops = g->n_ops;
    *exec = x;
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuGraphInstantiate_v2(ft_fake_graph_t **exec, ft_fake_graph_t *g, void **err_node,
                                      char *log, size_t log_bytes)
{
    if (log && log_bytes) log[0] = 0;
    return cuGraphInstantiateWithFlags(exec, g, 0);
}

FT_FAKE_API int cuGraphLaunch(ft_fake_graph_t *exec, ft_fake_stream_t *s)
{
    int rc = ft_fake_ready();
    if (rc) return rc;
    if (!exec) return FT_FAKE_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < exec->n_ops && !rc; i++)
        rc = ft_fake_submit(s, &exec->ops[i]);
    return rc;
}

FT_FAKE_API int cuGraphExecDestroy(ft_fake_graph_t *exec)
{
    return cuGraphDestroy(exec);
}
