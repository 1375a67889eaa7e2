/* The device interface (DESIGN.md section 8): what the executor and the
 * MoE dispatch need of an accelerator, as a table of functions, in the
 * manner of IREE's HAL. Device memory, page-locked host memory and pinned
 * host ranges; asynchronous copies on streams ordered by events; the
 * kernels of the plan's module looked up by name and launched; memory
 * info for the planner; and, where the device has them, captured graphs
 * of launches for replay.
 *
 * The interface knows kernels, buffers and streams, not ops or models:
 * the executor (exec/) maps the plan's ops to launches through it, and the
 * MoE dispatch issues its expert copies through it (moe/offload_device.c,
 * the same code for every device), and sessions take their memory (KV
 * cache, the schedule's buffers) from the engine's device on every
 * backend. Implementations:
 *  - backends/cuda: the Driver API, through dlopen;
 *  - backends/cpu (cpu_device.h): host memory is device memory (a device
 *    address is the host address), optionally capped at a byte budget;
 *    work runs when issued, so streams and events are trivially in order;
 *    no kernels of its own (function and launch are NULL): the executor
 *    calls the CPU's kernels (the plan's CPU module, bound per matrix at
 *    open, or the reference kernels) itself;
 *  - backends/sim: a modelled GPU on a virtual clock: the cpu device's
 *    memory capped at the GPU's size, and the same absence of kernels: the
 *    numerics run on the CPU's kernels and their cost goes on its streams
 *    through sim_device.h.
 *
 * Handles are opaque to callers. Every function is called on one device
 * from one thread at a time. */
#ifndef FT_BACKENDS_BACKEND_H
#define FT_BACKENDS_BACKEND_H

#include "freetoken.h"

#include <stddef.h>
#include <stdint.h>

typedef uint64_t ft_dptr_t;      /* a device address; 0 is none */
typedef void *ft_dstream_t;      /* an in-order queue of copies and launches */
typedef void *ft_devent_t;       /* a point in a stream other streams can wait for */
typedef void *ft_dfn_t;          /* a kernel of the loaded module */
typedef void *ft_dgraph_t;       /* a captured, instantiated sequence of launches */

typedef struct ft_device ft_device_t;

typedef struct ft_device_info {
    char name[128];
    int cc_major, cc_minor; /* compute capability (CUDA) */
    uint64_t total_bytes;   /* device memory */
} ft_device_info_t;

/* Launch geometry: grid of blocks, threads per block, dynamic shared
 * memory in bytes. */
typedef struct ft_device_launch {
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t shared_bytes;
} ft_device_launch_t;

typedef struct ft_device_vtable {
    const char *name;
    void (*destroy)(ft_device_t *d);
    const ft_device_info_t *(*info)(const ft_device_t *d);
    /* Free and total device memory now (re-planning polls it). */
    ft_status_t (*memory_info)(ft_device_t *d, uint64_t *free_bytes, uint64_t *total_bytes);
    ft_status_t (*alloc)(ft_device_t *d, uint64_t n_bytes, ft_dptr_t *out);
    void (*free)(ft_device_t *d, ft_dptr_t p);
    /* Page-locked host memory: copies from and to it run asynchronously. */
    ft_status_t (*host_alloc)(ft_device_t *d, size_t n_bytes, void **out);
    void (*host_free)(ft_device_t *d, void *p);
    /* Page-locks a read-only, page-aligned host range in place (a mapped
     * weights file) so copies from it run at full speed; UNSUPPORTED when
     * the device cannot (copies from it are then staged: slower, correct).
     * what names the range in errors. */
    ft_status_t (*pin)(ft_device_t *d, const void *p, size_t n_bytes, const char *what);
    void (*unpin)(ft_device_t *d, const void *p);
    ft_status_t (*stream_create)(ft_device_t *d, ft_dstream_t *out);
    void (*stream_destroy)(ft_device_t *d, ft_dstream_t s);
    ft_status_t (*stream_sync)(ft_device_t *d, ft_dstream_t s);
    ft_status_t (*event_create)(ft_device_t *d, ft_devent_t *out);
    void (*event_destroy)(ft_device_t *d, ft_devent_t e);
    ft_status_t (*event_record)(ft_device_t *d, ft_devent_t e, ft_dstream_t s);
    /* Work queued on s after this waits for e. */
    ft_status_t (*stream_wait)(ft_device_t *d, ft_dstream_t s, ft_devent_t e);
    ft_status_t (*copy_h2d)(ft_device_t *d, ft_dptr_t dst, const void *src, size_t n, ft_dstream_t s);
    ft_status_t (*copy_d2h)(ft_device_t *d, void *dst, ft_dptr_t src, size_t n, ft_dstream_t s);
    ft_status_t (*copy_d2d)(ft_device_t *d, ft_dptr_t dst, ft_dptr_t src, size_t n, ft_dstream_t s);
    ft_status_t (*memset)(ft_device_t *d, ft_dptr_t dst, uint8_t value, size_t n, ft_dstream_t s);
    /* A kernel of the plan's module by name; an error names it. NULL
     * with launch for a device that runs no kernels (the sim). */
    ft_status_t (*function)(ft_device_t *d, const char *name, ft_dfn_t *out);
    /* params: a pointer to each argument, in order. */
    ft_status_t (*launch)(ft_device_t *d, ft_dfn_t fn, const ft_device_launch_t *g, ft_dstream_t s,
                          void **params);
    /* Graphs (may be NULL: not supported). Between capture_begin and
     * capture_end the stream records instead of running; capture_end
     * always ends the capture and, when it succeeded, instantiates it. */
    int (*graphs_supported)(const ft_device_t *d);
    ft_status_t (*capture_begin)(ft_device_t *d, ft_dstream_t s);
    ft_status_t (*capture_end)(ft_device_t *d, ft_dstream_t s, ft_dgraph_t *out);
    ft_status_t (*graph_launch)(ft_device_t *d, ft_dgraph_t g, ft_dstream_t s);
    void (*graph_destroy)(ft_device_t *d, ft_dgraph_t g);
} ft_device_vtable_t;

/* Every implementation's object starts with this. */
struct ft_device {
    const ft_device_vtable_t *vt;
};

/* Calls through the table, so callers read like plain function calls. */
static inline void ft_dev_destroy(ft_device_t *d)
{
    if (d) d->vt->destroy(d);
}
static inline const ft_device_info_t *ft_dev_info(const ft_device_t *d)
{
    return d->vt->info(d);
}
FT_WARN_UNUSED static inline ft_status_t ft_dev_memory_info(ft_device_t *d, uint64_t *free_b, uint64_t *total_b)
{
    return d->vt->memory_info(d, free_b, total_b);
}
FT_WARN_UNUSED static inline ft_status_t ft_dev_alloc(ft_device_t *d, uint64_t n, ft_dptr_t *out)
{
    return d->vt->alloc(d, n, out);
}
static inline void ft_dev_free(ft_device_t *d, ft_dptr_t p)
{
    if (p) d->vt->free(d, p);
}
FT_WARN_UNUSED static inline ft_status_t ft_dev_host_alloc(ft_device_t *d, size_t n, void **out)
{
    return d->vt->host_alloc(d, n, out);
}
static inline void ft_dev_host_free(ft_device_t *d, void *p)
{
    if (p) d->vt->host_free(d, p);
}
FT_WARN_UNUSED static inline ft_status_t ft_dev_pin(ft_device_t *d, const void *p, size_t n, const char *what)
{
    return d->vt->pin(d, p, n, what);
}
static inline void ft_dev_unpin(ft_device_t *d, const void *p)
{
    d->vt->unpin(d, p);
}
FT_WARN_UNUSED static inline ft_status_t ft_dev_stream_create(ft_device_t *d, ft_dstream_t *out)
{
    return d->vt->stream_create(d, out);
}
static inline void ft_dev_stream_destroy(ft_device_t *d, ft_dstream_t s)
{
    if (s) d->vt->stream_destroy(d, s);
}
FT_WARN_UNUSED static inline ft_status_t ft_dev_stream_sync(ft_device_t *d, ft_dstream_t s)
{
    return d->vt->stream_sync(d, s);
}
FT_WARN_UNUSED static inline ft_status_t ft_dev_event_create(ft_device_t *d, ft_devent_t *out)
{
    return d->vt->event_create(d, out);
}
static inline void ft_dev_event_destroy(ft_device_t *d, ft_devent_t e)
{
    if (e) d->vt->event_destroy(d, e);
}
FT_WARN_UNUSED static inline ft_status_t ft_dev_event_record(ft_device_t *d, ft_devent_t e, ft_dstream_t s)
{
    return d->vt->event_record(d, e, s);
}
FT_WARN_UNUSED static inline ft_status_t ft_dev_stream_wait(ft_device_t *d, ft_dstream_t s, ft_devent_t e)
{
    return d->vt->stream_wait(d, s, e);
}
FT_WARN_UNUSED static inline ft_status_t ft_dev_copy_h2d(ft_device_t *d, ft_dptr_t dst, const void *src, size_t n,
                                                         ft_dstream_t s)
{
    return d->vt->copy_h2d(d, dst, src, n, s);
}
FT_WARN_UNUSED static inline ft_status_t ft_dev_copy_d2h(ft_device_t *d, void *dst, ft_dptr_t src, size_t n,
                                                         ft_dstream_t s)
{
    return d->vt->copy_d2h(d, dst, src, n, s);
}
FT_WARN_UNUSED static inline ft_status_t ft_dev_copy_d2d(ft_device_t *d, ft_dptr_t dst, ft_dptr_t src, size_t n,
                                                         ft_dstream_t s)
{
    return d->vt->copy_d2d(d, dst, src, n, s);
}
FT_WARN_UNUSED static inline ft_status_t ft_dev_memset(ft_device_t *d, ft_dptr_t dst, uint8_t v, size_t n,
                                                       ft_dstream_t s)
{
    return d->vt->memset(d, dst, v, n, s);
}
FT_WARN_UNUSED static inline ft_status_t ft_dev_function(ft_device_t *d, const char *name, ft_dfn_t *out)
{
    if (!d->vt->function)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "%s device: no kernels of its own (%s)", d->vt->name, name);
    return d->vt->function(d, name, out);
}
FT_WARN_UNUSED static inline ft_status_t ft_dev_launch(ft_device_t *d, ft_dfn_t fn, const ft_device_launch_t *g,
                                                       ft_dstream_t s, void **params)
{
    return d->vt->launch(d, fn, g, s, params);
}
static inline int ft_dev_graphs_supported(const ft_device_t *d)
{
    return d->vt->graphs_supported && d->vt->graphs_supported(d);
}
FT_WARN_UNUSED static inline ft_status_t ft_dev_capture_begin(ft_device_t *d, ft_dstream_t s)
{
    return d->vt->capture_begin(d, s);
}
FT_WARN_UNUSED static inline ft_status_t ft_dev_capture_end(ft_device_t *d, ft_dstream_t s, ft_dgraph_t *out)
{
    return d->vt->capture_end(d, s, out);
}
FT_WARN_UNUSED static inline ft_status_t ft_dev_graph_launch(ft_device_t *d, ft_dgraph_t g, ft_dstream_t s)
{
    return d->vt->graph_launch(d, g, s);
}
static inline void ft_dev_graph_destroy(ft_device_t *d, ft_dgraph_t g)
{
    if (g) d->vt->graph_destroy(d, g);
}

#endif
