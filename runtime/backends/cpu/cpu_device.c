#include "cpu_device.h"

#include "../../base/alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define FT_CPU_DEV_ALIGN 256u /* as the CUDA backend aligns its allocations */

/* A block's header, just below the address handed out. */
typedef struct ft_cpu_block {
    void *raw;
    uint64_t n_bytes;
} ft_cpu_block_t;

/* Streams and events are handles only (work has completed when it is
 * issued); the tag catches one passed for the other. */
typedef enum { FT_CPU_STREAM = 0x5354524d, FT_CPU_EVENT = 0x45564e54 } ft_cpu_handle_kind_t;

typedef struct ft_cpu_handle {
    ft_cpu_handle_kind_t kind;
} ft_cpu_handle_t;

static ft_cpu_device_t *ft_cpu_dev(ft_device_t *d)
{
    return (ft_cpu_device_t *)d;
}

/* ---- the host memory layer (shared with the sim device) ---------------- */

void ft_cpu_device_init(ft_cpu_device_t *d, const ft_device_vtable_t *vt, const char *name,
                        uint64_t cap_bytes, const ft_allocator_t *alloc)
{
    d->base.vt = vt;
    d->a = alloc;
    d->cap = cap_bytes;
    d->used = 0;
    snprintf(d->info.name, sizeof(d->info.name), "%s", name);
    d->info.total_bytes = cap_bytes;
}

const ft_device_info_t *ft_cpu_device_info(const ft_device_t *d)
{
    return &((const ft_cpu_device_t *)d)->info;
}

/* The machine's memory: total, and available now (MemAvailable counts the
 * page cache the kernel would give back; free pages when it is missing). */
FT_WARN_UNUSED static ft_status_t ft_host_memory(uint64_t *avail, uint64_t *total)
{
    const long page = sysconf(_SC_PAGESIZE), pages = sysconf(_SC_PHYS_PAGES);
    *avail = *total = 0;
    if (page <= 0 || pages <= 0)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "cpu device: the machine's memory size is unknown");
    *total = (uint64_t)pages * (uint64_t)page;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        unsigned long long kb;
        while (fgets(line, sizeof(line), f))
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                *avail = (uint64_t)kb << 10;
                break;
            }
        fclose(f);
    }
    if (*avail == 0) {
        const long av = sysconf(_SC_AVPHYS_PAGES);
        *avail = av > 0 ? (uint64_t)av * (uint64_t)page : 0;
    }
    if (*avail > *total) *avail = *total;
    return FT_OK;
}

ft_status_t ft_cpu_device_memory_info(ft_device_t *dev, uint64_t *free_b, uint64_t *total_b)
{
    const ft_cpu_device_t *d = ft_cpu_dev(dev);
    if (!d->cap) return ft_host_memory(free_b, total_b);
    *free_b = d->cap - d->used;
    *total_b = d->cap;
    return FT_OK;
}

ft_status_t ft_cpu_device_alloc(ft_device_t *dev, uint64_t n, ft_dptr_t *out)
{
    ft_cpu_device_t *d = ft_cpu_dev(dev);
    *out = 0;
    const uint64_t pad = FT_CPU_DEV_ALIGN + sizeof(ft_cpu_block_t);
    if (d->cap && n > d->cap - d->used)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY,
                              "%s: %" PRIu64 " bytes of device memory asked, %" PRIu64
                              " of %" PRIu64 " free (the device's cap)",
                              dev->vt->name, n, d->cap - d->used, d->cap);
    uint8_t *raw = n <= SIZE_MAX - pad ? ft_mem_alloc(d->a, (size_t)(n + pad)) : NULL;
    if (!raw)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY,
                              "%s: %" PRIu64 " bytes of device memory (host memory)", dev->vt->name,
                              n);
    const uintptr_t p = ((uintptr_t)raw + sizeof(ft_cpu_block_t) + FT_CPU_DEV_ALIGN - 1) &
                        ~(uintptr_t)(FT_CPU_DEV_ALIGN - 1);
    ft_cpu_block_t *h = (ft_cpu_block_t *)p - 1;
    h->raw = raw;
    h->n_bytes = n;
    d->used += n;
    *out = (ft_dptr_t)p;
    return FT_OK;
}

void ft_cpu_device_free(ft_device_t *dev, ft_dptr_t p)
{
    ft_cpu_device_t *d = ft_cpu_dev(dev);
    const ft_cpu_block_t *h = (const ft_cpu_block_t *)(uintptr_t)p - 1;
    d->used -= h->n_bytes;
    ft_mem_free(d->a, h->raw);
}

ft_status_t ft_cpu_device_host_alloc(ft_device_t *dev, size_t n, void **out)
{
    *out = ft_mem_alloc(ft_cpu_dev(dev)->a, n ? n : 1);
    return *out ? FT_OK
                : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: %zu bytes of host memory",
                                 dev->vt->name, n);
}

void ft_cpu_device_host_free(ft_device_t *dev, void *p)
{
    ft_mem_free(ft_cpu_dev(dev)->a, p);
}

/* Host memory is what the device reads: pinning is a no-op that works. */
ft_status_t ft_cpu_device_pin(ft_device_t *dev, const void *p, size_t n, const char *what)
{
    (void)dev, (void)p, (void)n, (void)what;
    return FT_OK;
}

void ft_cpu_device_unpin(ft_device_t *dev, const void *p)
{
    (void)dev, (void)p;
}

/* ---- the cpu device's own entries ---------------------------------------- */

static void ft_cpu_dev_destroy(ft_device_t *dev)
{
    ft_mem_free(ft_cpu_dev(dev)->a, dev);
}

FT_WARN_UNUSED static ft_status_t ft_cpu_handle_new(ft_device_t *dev, ft_cpu_handle_kind_t kind,
                                                    void **out)
{
    ft_cpu_handle_t *h = ft_mem_alloc(ft_cpu_dev(dev)->a, sizeof(*h));
    *out = h;
    if (!h)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cpu device: a %s",
                              kind == FT_CPU_STREAM ? "stream" : "event");
    h->kind = kind;
    return FT_OK;
}

/* A stream or event handle of the kind asked for, else INVALID_ARGUMENT
 * naming the call. */
FT_WARN_UNUSED static ft_status_t ft_cpu_handle_check(const void *h, ft_cpu_handle_kind_t kind,
                                                      const char *call)
{
    if (h && ((const ft_cpu_handle_t *)h)->kind == kind) return FT_OK;
    return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "cpu device: %s: %s is not a%s", call,
                          h ? "the handle" : "NULL", kind == FT_CPU_STREAM ? " stream" : "n event");
}

static void ft_cpu_handle_free(ft_device_t *dev, void *h)
{
    ft_mem_free(ft_cpu_dev(dev)->a, h);
}

static ft_status_t ft_cpu_stream_create(ft_device_t *dev, ft_dstream_t *out)
{
    return ft_cpu_handle_new(dev, FT_CPU_STREAM, out);
}

/* Everything issued on s has completed. */
static ft_status_t ft_cpu_stream_sync(ft_device_t *dev, ft_dstream_t s)
{
    (void)dev;
    return ft_cpu_handle_check(s, FT_CPU_STREAM, "stream_sync");
}

static ft_status_t ft_cpu_event_create(ft_device_t *dev, ft_devent_t *out)
{
    return ft_cpu_handle_new(dev, FT_CPU_EVENT, out);
}

/* The point recorded has passed when the call returns. */
static ft_status_t ft_cpu_event_record(ft_device_t *dev, ft_devent_t e, ft_dstream_t s)
{
    (void)dev;
    ft_status_t st = ft_cpu_handle_check(e, FT_CPU_EVENT, "event_record");
    return st ? st : ft_cpu_handle_check(s, FT_CPU_STREAM, "event_record");
}

static ft_status_t ft_cpu_stream_wait(ft_device_t *dev, ft_dstream_t s, ft_devent_t e)
{
    (void)dev;
    ft_status_t st = ft_cpu_handle_check(s, FT_CPU_STREAM, "stream_wait");
    return st ? st : ft_cpu_handle_check(e, FT_CPU_EVENT, "stream_wait");
}

static ft_status_t ft_cpu_copy_h2d(ft_device_t *dev, ft_dptr_t dst, const void *src, size_t n,
                                   ft_dstream_t s)
{
    (void)dev;
    ft_status_t st = ft_cpu_handle_check(s, FT_CPU_STREAM, "copy_h2d");
    if (!st && n) memcpy((void *)(uintptr_t)dst, src, n);
    return st;
}

static ft_status_t ft_cpu_copy_d2h(ft_device_t *dev, void *dst, ft_dptr_t src, size_t n,
                                   ft_dstream_t s)
{
    (void)dev;
    ft_status_t st = ft_cpu_handle_check(s, FT_CPU_STREAM, "copy_d2h");
    if (!st && n) memcpy(dst, (const void *)(uintptr_t)src, n);
    return st;
}

/* Overlapping ranges copy as cuMemcpyDtoD would (memmove). */
static ft_status_t ft_cpu_copy_d2d(ft_device_t *dev, ft_dptr_t dst, ft_dptr_t src, size_t n,
                                   ft_dstream_t s)
{
    (void)dev;
    ft_status_t st = ft_cpu_handle_check(s, FT_CPU_STREAM, "copy_d2d");
    if (!st && n) memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return st;
}

static ft_status_t ft_cpu_memset(ft_device_t *dev, ft_dptr_t dst, uint8_t v, size_t n,
                                 ft_dstream_t s)
{
    (void)dev;
    ft_status_t st = ft_cpu_handle_check(s, FT_CPU_STREAM, "memset");
    if (!st && n) memset((void *)(uintptr_t)dst, v, n);
    return st;
}

static const ft_device_vtable_t ft_cpu_vt = {
    .name = "cpu",
    .destroy = ft_cpu_dev_destroy,
    FT_CPU_DEVICE_MEMORY_ENTRIES,
    .stream_create = ft_cpu_stream_create,
    .stream_destroy = ft_cpu_handle_free,
    .stream_sync = ft_cpu_stream_sync,
    .event_create = ft_cpu_event_create,
    .event_destroy = ft_cpu_handle_free,
    .event_record = ft_cpu_event_record,
    .stream_wait = ft_cpu_stream_wait,
    .copy_h2d = ft_cpu_copy_h2d,
    .copy_d2h = ft_cpu_copy_d2h,
    .copy_d2d = ft_cpu_copy_d2d,
    .memset = ft_cpu_memset,
    /* The executor calls the CPU's kernels itself (cpu_device.h says why). */
    .function = NULL,
    .launch = NULL,
    .graphs_supported = NULL,
};

ft_status_t ft_cpu_device_create(uint64_t cap_bytes, const ft_allocator_t *alloc, ft_device_t **out)
{
    *out = NULL;
    ft_cpu_device_t *d = ft_mem_calloc(alloc, 1, sizeof(*d));
    if (!d) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cpu device: out of memory");
    ft_cpu_device_init(d, &ft_cpu_vt, "cpu (host memory)", cap_bytes, alloc);
    if (!cap_bytes) { /* the machine's memory; 0 where unknown (memory_info then says why) */
        uint64_t avail;
        ft_status_free(ft_host_memory(&avail, &d->info.total_bytes));
    }
    *out = &d->base;
    return FT_OK;
}
