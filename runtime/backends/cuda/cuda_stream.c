/* Streams, events, asynchronous copies and kernel launches. */
#include "cuda_device_internal.h"

#include <stdio.h>

ft_status_t ft_cuda_stream_create(ft_cuda_device_t *d, ft_cu_stream *out_stream)
{
    *out_stream = NULL;
    ft_status_t st = ft_cuda_enter(d);
    /* Non-blocking: no implicit ordering against the legacy stream. */
    return st ? st
              : ft_cuda_check(&d->cu, d->cu.cuStreamCreate(out_stream, FT_CU_STREAM_NON_BLOCKING),
                              "cuStreamCreate");
}

void ft_cuda_stream_destroy(ft_cuda_device_t *d, ft_cu_stream stream)
{
    if (stream && !ft_cuda_enter(d)) d->cu.cuStreamDestroy(stream);
}

ft_status_t ft_cuda_stream_sync(ft_cuda_device_t *d, ft_cu_stream stream)
{
    ft_status_t st = ft_cuda_enter(d);
    return st ? st
              : ft_cuda_check(&d->cu, d->cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
}

ft_status_t ft_cuda_event_create(ft_cuda_device_t *d, int timing, ft_cu_event *out_event)
{
    *out_event = NULL;
    ft_status_t st = ft_cuda_enter(d);
    return st ? st
              : ft_cuda_check(
                    &d->cu,
                    d->cu.cuEventCreate(out_event, timing ? 0u : FT_CU_EVENT_DISABLE_TIMING),
                    "cuEventCreate");
}

void ft_cuda_event_destroy(ft_cuda_device_t *d, ft_cu_event event)
{
    if (event && !ft_cuda_enter(d)) d->cu.cuEventDestroy(event);
}

ft_status_t ft_cuda_event_record(ft_cuda_device_t *d, ft_cu_event event, ft_cu_stream stream)
{
    ft_status_t st = ft_cuda_enter(d);
    return st ? st : ft_cuda_check(&d->cu, d->cu.cuEventRecord(event, stream), "cuEventRecord");
}

ft_status_t ft_cuda_stream_wait(ft_cuda_device_t *d, ft_cu_stream stream, ft_cu_event event)
{
    ft_status_t st = ft_cuda_enter(d);
    return st ? st
              : ft_cuda_check(&d->cu, d->cu.cuStreamWaitEvent(stream, event, 0),
                              "cuStreamWaitEvent");
}

ft_status_t ft_cuda_event_sync(ft_cuda_device_t *d, ft_cu_event event)
{
    ft_status_t st = ft_cuda_enter(d);
    return st ? st : ft_cuda_check(&d->cu, d->cu.cuEventSynchronize(event), "cuEventSynchronize");
}

ft_status_t ft_cuda_event_elapsed_ms(ft_cuda_device_t *d, ft_cu_event start, ft_cu_event end,
                                     float *out_ms)
{
    ft_status_t st = ft_cuda_enter(d);
    return st ? st
              : ft_cuda_check(&d->cu, d->cu.cuEventElapsedTime(out_ms, start, end),
                              "cuEventElapsedTime");
}

/* Names a failed copy with its size, so a log says which transfer broke. */
FT_WARN_UNUSED static ft_status_t ft_cuda_copy_status(ft_cuda_device_t *d, ft_cu_result rc, const char *kind,
                                       size_t n_bytes)
{
    if (rc == FT_CU_SUCCESS) return FT_OK;
    char what[64];
    snprintf(what, sizeof(what), "%s copy of %zu bytes", kind, n_bytes);
    return ft_cuda_check(&d->cu, rc, what);
}

ft_status_t ft_cuda_copy_h2d(ft_cuda_device_t *d, ft_cu_deviceptr dst, const void *src,
                             size_t n_bytes, ft_cu_stream stream)
{
    ft_status_t st = ft_cuda_enter(d);
    return st ? st
              : ft_cuda_copy_status(d, d->cu.cuMemcpyHtoDAsync(dst, src, n_bytes, stream),
                                    "host-to-device", n_bytes);
}

ft_status_t ft_cuda_copy_d2h(ft_cuda_device_t *d, void *dst, ft_cu_deviceptr src, size_t n_bytes,
                             ft_cu_stream stream)
{
    ft_status_t st = ft_cuda_enter(d);
    return st ? st
              : ft_cuda_copy_status(d, d->cu.cuMemcpyDtoHAsync(dst, src, n_bytes, stream),
                                    "device-to-host", n_bytes);
}

ft_status_t ft_cuda_copy_d2d(ft_cuda_device_t *d, ft_cu_deviceptr dst, ft_cu_deviceptr src,
                             size_t n_bytes, ft_cu_stream stream)
{
    ft_status_t st = ft_cuda_enter(d);
    return st ? st
              : ft_cuda_copy_status(d, d->cu.cuMemcpyDtoDAsync(dst, src, n_bytes, stream),
                                    "device-to-device", n_bytes);
}

ft_status_t ft_cuda_memset(ft_cuda_device_t *d, ft_cu_deviceptr dst, uint8_t value, size_t n_bytes,
                           ft_cu_stream stream)
{
    ft_status_t st = ft_cuda_enter(d);
    return st ? st
              : ft_cuda_copy_status(d, d->cu.cuMemsetD8Async(dst, value, n_bytes, stream), "memset",
                                    n_bytes);
}

ft_status_t ft_cuda_launch_kernel(ft_cuda_device_t *d, ft_cu_function fn, const ft_cuda_launch_t *g,
                                  ft_cu_stream stream, void **params)
{
    ft_status_t st = ft_cuda_enter(d);
    if (st) return st;
    const ft_cu_result rc =
        d->cu.cuLaunchKernel(fn, g->grid[0], g->grid[1], g->grid[2], g->block[0], g->block[1],
                             g->block[2], g->shared_bytes, stream, params, NULL);
    if (rc == FT_CU_SUCCESS) return FT_OK;
    char what[128];
    snprintf(what, sizeof(what), "cuLaunchKernel grid %ux%ux%u block %ux%ux%u", g->grid[0],
             g->grid[1], g->grid[2], g->block[0], g->block[1], g->block[2]);
    return ft_cuda_check(&d->cu, rc, what);
}
