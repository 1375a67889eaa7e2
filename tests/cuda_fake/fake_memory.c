/* The fake driver's memory: device allocations (host memory, 256-byte
 * aligned, counted against FT_CUDA_FAKE_VRAM), pinned host allocations,
 * registered host ranges (a device pointer is the host address), and
 * copies and memsets, which must stay inside one known range on their
 * device side (else CUDA_ERROR_INVALID_VALUE, as a real driver reports
 * for a bad device pointer). */
#include "fake_driver.h"

#include <stdlib.h>
#include <string.h>

/* New device allocations are filled with 0xff bytes (float NaN) so that
 * reading memory nobody wrote shows; past this size they are left as
 * malloc gives them (untouched pages cost nothing). */
#define FT_FAKE_POISON_MAX ((size_t)256 << 20)

/* Index of the range starting at base with this kind, or -1. Lock held. */
static long ft_fake_range_find(uintptr_t base, ft_fake_range_kind_t kind)
{
    for (size_t i = 0; i < ft_fake_dev.n_ranges; i++)
        if (ft_fake_dev.ranges[i].base == base && ft_fake_dev.ranges[i].kind == kind)
            return (long)i;
    return -1;
}

/* Lock held. */
static int ft_fake_range_add(uintptr_t base, size_t n, ft_fake_range_kind_t kind)
{
    ft_fake_device_t *d = &ft_fake_dev;
    if (d->n_ranges == d->cap_ranges) {
        const size_t cap = d->cap_ranges ? 2 * d->cap_ranges : 64;
        ft_fake_range_t *r = realloc(d->ranges, cap * sizeof(*r));
        if (!r) return 0;
        d->ranges = r;
        d->cap_ranges = cap;
    }
    d->ranges[d->n_ranges++] = (ft_fake_range_t){base, n, kind};
    return 1;
}

static void ft_fake_range_remove(size_t i)
{
    ft_fake_dev.ranges[i] = ft_fake_dev.ranges[--ft_fake_dev.n_ranges];
    if (!ft_fake_dev.n_ranges) {
        free(ft_fake_dev.ranges);
        ft_fake_dev.ranges = NULL;
        ft_fake_dev.cap_ranges = 0;
    }
}

int ft_fake_range_ok(uintptr_t p, size_t n)
{
    int ok = 0;
    pthread_mutex_lock(&ft_fake_dev.lock);
    for (size_t i = 0; i < ft_fake_dev.n_ranges && !ok; i++) {
        const ft_fake_range_t *r = &ft_fake_dev.ranges[i];
        ok = p >= r->base && p - r->base <= r->n_bytes && n <= r->n_bytes - (p - r->base);
    }
    pthread_mutex_unlock(&ft_fake_dev.lock);
    return ok;
}

FT_FAKE_API int cuMemAlloc_v2(ft_fake_dptr *p, size_t n)
{
    int rc = ft_fake_ready();
    if (rc) return rc;
    if (!p || !n || n > SIZE_MAX - 255) return FT_FAKE_ERROR_INVALID_VALUE;
    *p = 0;
    pthread_mutex_lock(&ft_fake_dev.lock);
    const size_t taken = ft_fake_dev.used_bytes + ft_fake_dev.foreign_bytes;
    void *mem = NULL;
    if (taken > ft_fake_dev.total_bytes || n > ft_fake_dev.total_bytes - taken)
        rc = FT_FAKE_ERROR_OUT_OF_MEMORY;
    else if (!(mem = aligned_alloc(256, (n + 255) & ~(size_t)255)))
        rc = FT_FAKE_ERROR_OUT_OF_MEMORY;
    else if (!ft_fake_range_add((uintptr_t)mem, n, FT_FAKE_RANGE_DEVICE)) {
        free(mem);
        rc = FT_FAKE_ERROR_OUT_OF_MEMORY;
    } else
        ft_fake_dev.used_bytes += n;
    pthread_mutex_unlock(&ft_fake_dev.lock);
    if (rc) return rc;
    if (n <= FT_FAKE_POISON_MAX) memset(mem, 0xff, n);
    *p = (ft_fake_dptr)(uintptr_t)mem;
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuMemFree_v2(ft_fake_dptr p)
{
    int rc = ft_fake_ready();
    if (rc) return rc;
    ft_fake_flush_stream(NULL); /* queued work may still use it */
    pthread_mutex_lock(&ft_fake_dev.lock);
    const long i = ft_fake_range_find((uintptr_t)p, FT_FAKE_RANGE_DEVICE);
    if (i < 0)
        rc = FT_FAKE_ERROR_INVALID_VALUE;
    else {
        ft_fake_dev.used_bytes -= ft_fake_dev.ranges[i].n_bytes;
        ft_fake_range_remove((size_t)i);
    }
    pthread_mutex_unlock(&ft_fake_dev.lock);
    if (!rc) free((void *)(uintptr_t)p);
    return rc;
}

FT_FAKE_API int cuMemHostAlloc(void **p, size_t n, unsigned flags)
{
    int rc = ft_fake_ready();
    if (rc) return rc;
    if (!p || !n || n > SIZE_MAX - 4095 || flags > 7) return FT_FAKE_ERROR_INVALID_VALUE;
    void *mem = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
    if (!mem) return FT_FAKE_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&ft_fake_dev.lock);
    const int ok = ft_fake_range_add((uintptr_t)mem, n, FT_FAKE_RANGE_HOST);
    pthread_mutex_unlock(&ft_fake_dev.lock);
    if (!ok) {
        free(mem);
        return FT_FAKE_ERROR_OUT_OF_MEMORY;
    }
    *p = mem;
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuMemFreeHost(void *p)
{
    int rc = ft_fake_ready();
    if (rc) return rc;
    ft_fake_flush_stream(NULL); /* queued work may still use it */
    pthread_mutex_lock(&ft_fake_dev.lock);
    const long i = ft_fake_range_find((uintptr_t)p, FT_FAKE_RANGE_HOST);
    if (i < 0)
        rc = FT_FAKE_ERROR_INVALID_VALUE;
    else
        ft_fake_range_remove((size_t)i);
    pthread_mutex_unlock(&ft_fake_dev.lock);
    if (!rc) free(p);
    return rc;
}

FT_FAKE_API int cuMemHostRegister_v2(void *p, size_t n, unsigned flags)
{
    int rc = ft_fake_ready();
    if (rc) return rc;
    if (!p || !n || flags > 15) return FT_FAKE_ERROR_INVALID_VALUE;
    const uintptr_t base = (uintptr_t)p;
    pthread_mutex_lock(&ft_fake_dev.lock);
    for (size_t i = 0; i < ft_fake_dev.n_ranges && !rc; i++) {
        const ft_fake_range_t *r = &ft_fake_dev.ranges[i];
        if (r->kind != FT_FAKE_RANGE_DEVICE && base < r->base + r->n_bytes && r->base < base + n)
            rc = FT_FAKE_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
    if (!rc && !ft_fake_range_add(base, n, FT_FAKE_RANGE_REGISTERED))
        rc = FT_FAKE_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&ft_fake_dev.lock);
    return rc;
}

FT_FAKE_API int cuMemHostUnregister(void *p)
{
    int rc = ft_fake_ready();
    if (rc) return rc;
    ft_fake_flush_stream(NULL); /* queued work may still use it */
    pthread_mutex_lock(&ft_fake_dev.lock);
    const long i = ft_fake_range_find((uintptr_t)p, FT_FAKE_RANGE_REGISTERED);
    if (i < 0)
        rc = FT_FAKE_ERROR_HOST_MEMORY_NOT_REGISTERED;
    else
        ft_fake_range_remove((size_t)i);
    pthread_mutex_unlock(&ft_fake_dev.lock);
    return rc;
}

FT_FAKE_API int cuMemHostGetDevicePointer_v2(ft_fake_dptr *dev, void *host, unsigned flags)
{
    int rc = ft_fake_ready();
    if (rc) return rc;
    if (!dev || flags) return FT_FAKE_ERROR_INVALID_VALUE;
    const uintptr_t h = (uintptr_t)host;
    rc = FT_FAKE_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&ft_fake_dev.lock);
    for (size_t i = 0; i < ft_fake_dev.n_ranges && rc; i++) {
        const ft_fake_range_t *r = &ft_fake_dev.ranges[i];
        if (r->kind != FT_FAKE_RANGE_DEVICE && h >= r->base && h - r->base < r->n_bytes)
            rc = FT_FAKE_SUCCESS;
    }
    pthread_mutex_unlock(&ft_fake_dev.lock);
    if (!rc) *dev = (ft_fake_dptr)h;
    return rc;
}

/* A copy whose device ends (dst_dev, src_dev) must lie in known ranges. */
static int ft_fake_copy(uintptr_t dst, int dst_dev, uintptr_t src, int src_dev, size_t n,
                        void *stream)
{
    int rc = ft_fake_ready();
    if (rc) return rc;
    if (!n) return FT_FAKE_SUCCESS;
    if (!dst || !src || (dst_dev && !ft_fake_range_ok(dst, n)) ||
        (src_dev && !ft_fake_range_ok(src, n)))
        return FT_FAKE_ERROR_INVALID_VALUE;
    /* Pageable host memory (no known range): the driver stages it, so the
     * call has read the source, or written the destination, on return. */
    const ft_fake_op_t op = {.kind = FT_FAKE_OP_COPY,
                             .dst = dst,
                             .src = src,
                             .n_bytes = n,
                             .snapshot = !src_dev && !ft_fake_range_ok(src, n),
                             .sync_now = !dst_dev && !ft_fake_range_ok(dst, n)};
    return ft_fake_submit(stream, &op);
}

FT_FAKE_API int cuMemcpyHtoDAsync_v2(ft_fake_dptr dst, const void *src, size_t n, void *stream)
{
    return ft_fake_copy((uintptr_t)dst, 1, (uintptr_t)src, 0, n, stream);
}

FT_FAKE_API int cuMemcpyDtoHAsync_v2(void *dst, ft_fake_dptr src, size_t n, void *stream)
{
    return ft_fake_copy((uintptr_t)dst, 0, (uintptr_t)src, 1, n, stream);
}

FT_FAKE_API int cuMemcpyDtoDAsync_v2(ft_fake_dptr dst, ft_fake_dptr src, size_t n, void *stream)
{
    return ft_fake_copy((uintptr_t)dst, 1, (uintptr_t)src, 1, n, stream);
}

FT_FAKE_API int cuMemsetD8Async(ft_fake_dptr dst, unsigned char value, size_t n, void *stream)
{
    int rc = ft_fake_ready();
    if (rc) return rc;
    if (!n) return FT_FAKE_SUCCESS;
    if (!ft_fake_range_ok((uintptr_t)dst, n)) return FT_FAKE_ERROR_INVALID_VALUE;
    const ft_fake_op_t op = {
        .kind = FT_FAKE_OP_MEMSET, .dst = (uintptr_t)dst, .n_bytes = n, .value = value};
    return ft_fake_submit(stream, &op);
}
