/* The CUDA device: primary context, memory, pinned ranges, streams,
 * events and copies over the dlopen'ed Driver API. Every CUresult goes
 * through ft_cuda_check (cuda_api.c), the one conversion point. */
#include "cuda_device_internal.h"

#include "../../base/alloc.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

void ft_cuda_device_options_init(ft_cuda_device_options_t *opts)
{
    memset(opts, 0, sizeof(*opts));
}

/* Makes the context current on this thread: the Driver API keeps the
 * current context per thread, and the engine may call from several. */
ft_status_t ft_cuda_enter(ft_cuda_device_t *d)
{
    return ft_cuda_check(&d->cu, d->cu.cuCtxSetCurrent(d->ctx), "cuCtxSetCurrent");
}

FT_WARN_UNUSED static ft_status_t ft_cuda_device_query(ft_cuda_device_t *d, int ordinal)
{
    ft_cuda_api_t *cu = &d->cu;
    int count = 0;
    ft_status_t st = ft_cuda_check(cu, cu->cuInit(0), "cuInit");
    if (!st) st = ft_cuda_check(cu, cu->cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (!st && (ordinal < 0 || ordinal >= count))
        st = ft_status_make(FT_STATUS_UNAVAILABLE, "CUDA: GPU %d requested, the driver reports %d",
                            ordinal, count);
    if (!st) st = ft_cuda_check(cu, cu->cuDeviceGet(&d->dev, ordinal), "cuDeviceGet");
    ft_cuda_device_info_t *in = &d->info;
    if (!st)
        st = ft_cuda_check(cu, cu->cuDeviceGetName(in->name, (int)sizeof(in->name), d->dev),
                           "cuDeviceGetName");
    if (!st)
        st = ft_cuda_check(cu, cu->cuDeviceGetAttribute(&in->cc_major, FT_CU_ATTR_CC_MAJOR, d->dev),
                           "compute capability");
    if (!st)
        st = ft_cuda_check(cu, cu->cuDeviceGetAttribute(&in->cc_minor, FT_CU_ATTR_CC_MINOR, d->dev),
                           "compute capability");
    if (!st)
        st = ft_cuda_check(
            cu, cu->cuDeviceGetAttribute(&in->n_sms, FT_CU_ATTR_MULTIPROCESSOR_COUNT, d->dev),
            "SM count");
    if (!st)
        st = ft_cuda_check(cu,
                           cu->cuDeviceGetAttribute(&in->read_only_register,
                                                    FT_CU_ATTR_READ_ONLY_HOST_REGISTER, d->dev),
                           "read-only host register support");
    if (!st)
        st = ft_cuda_check(cu, cu->cuDeviceTotalMem(&in->total_bytes, d->dev), "cuDeviceTotalMem");
    if (!st)
        st = ft_cuda_check(cu, cu->cuDriverGetVersion(&in->driver_version), "cuDriverGetVersion");
    return st;
}

ft_status_t ft_cuda_device_create(const ft_cuda_device_options_t *opts, ft_cuda_device_t **out_dev)
{
    *out_dev = NULL;
    ft_cuda_device_options_t defaults;
    if (!opts) {
        ft_cuda_device_options_init(&defaults);
        opts = &defaults;
    }
    ft_cuda_device_t *d = ft_mem_calloc(NULL, 1, sizeof(*d));
    if (!d) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "CUDA device: no memory");
    ft_status_t st = ft_cuda_api_open(opts->lib_name, &d->cu);
    if (st) {
        ft_mem_free(NULL, d);
        return st;
    }
    st = ft_cuda_device_query(d, opts->ordinal);
    if (!st)
        st = ft_cuda_check(&d->cu, d->cu.cuDevicePrimaryCtxRetain(&d->ctx, d->dev),
                           "cuDevicePrimaryCtxRetain");
    if (!st && (st = ft_cuda_enter(d))) {
        d->cu.cuDevicePrimaryCtxRelease(d->dev);
        d->ctx = NULL;
    }
    if (st) {
        ft_cuda_api_close(&d->cu);
        ft_mem_free(NULL, d);
        return st;
    }
    *out_dev = d;
    return FT_OK;
}

void ft_cuda_device_destroy(ft_cuda_device_t *d)
{
    if (!d) return;
    if (d->ctx) {
        d->cu.cuCtxSetCurrent(d->ctx);
        d->cu.cuCtxSynchronize();
        d->cu.cuCtxSetCurrent(NULL);
        d->cu.cuDevicePrimaryCtxRelease(d->dev);
    }
    ft_cuda_api_close(&d->cu);
    ft_mem_free(NULL, d);
}

const ft_cuda_device_info_t *ft_cuda_device_info(const ft_cuda_device_t *d)
{
    return &d->info;
}

ft_status_t ft_cuda_mem_info(ft_cuda_device_t *d, size_t *out_free, size_t *out_total)
{
    ft_status_t st = ft_cuda_enter(d);
    return st ? st : ft_cuda_check(&d->cu, d->cu.cuMemGetInfo(out_free, out_total), "cuMemGetInfo");
}

ft_status_t ft_cuda_alloc(ft_cuda_device_t *d, size_t n_bytes, ft_cu_deviceptr *out_ptr)
{
    *out_ptr = 0;
    ft_status_t st = ft_cuda_enter(d);
    if (st) return st;
    const ft_cu_result rc = d->cu.cuMemAlloc(out_ptr, n_bytes);
    if (rc == FT_CU_SUCCESS) return FT_OK;
    char what[192];
    snprintf(what, sizeof(what), "cuMemAlloc of %zu bytes on %.128s", n_bytes, d->info.name);
    return ft_cuda_check(&d->cu, rc, what);
}

void ft_cuda_free(ft_cuda_device_t *d, ft_cu_deviceptr ptr)
{
    if (ptr && !ft_cuda_enter(d)) d->cu.cuMemFree(ptr);
}

ft_status_t ft_cuda_host_alloc(ft_cuda_device_t *d, size_t n_bytes, void **out_p)
{
    *out_p = NULL;
    ft_status_t st = ft_cuda_enter(d);
    if (st) return st;
    const ft_cu_result rc = d->cu.cuMemHostAlloc(out_p, n_bytes, FT_CU_MEMHOSTALLOC_PORTABLE);
    if (rc == FT_CU_SUCCESS) return FT_OK;
    *out_p = NULL;
    char what[192];
    snprintf(what, sizeof(what), "cuMemHostAlloc of %zu bytes for %.128s", n_bytes, d->info.name);
    return ft_cuda_check(&d->cu, rc, what);
}

void ft_cuda_host_free(ft_cuda_device_t *d, void *p)
{
    if (p && !ft_cuda_enter(d)) d->cu.cuMemFreeHost(p);
}

ft_status_t ft_cuda_host_register(ft_cuda_device_t *d, void *p, size_t n_bytes, int read_only,
                                  ft_cu_deviceptr *out_dev_ptr)
{
    if (read_only && !d->info.read_only_register)
        return ft_status_make(
            FT_STATUS_UNSUPPORTED,
            "CUDA: %s cannot register read-only host memory (map the FTW file writable-private)",
            d->info.name);
    ft_status_t st = ft_cuda_enter(d);
    if (st) return st;
    const unsigned flags = FT_CU_MEMHOSTREGISTER_PORTABLE | FT_CU_MEMHOSTREGISTER_DEVICEMAP |
                           (read_only ? FT_CU_MEMHOSTREGISTER_READ_ONLY : 0u);
    char what[96];
    snprintf(what, sizeof(what), "cuMemHostRegister of %zu bytes at %p", n_bytes, p);
    st = ft_cuda_check(&d->cu, d->cu.cuMemHostRegister(p, n_bytes, flags), what);
    if (!st && out_dev_ptr) {
        st = ft_cuda_check(&d->cu, d->cu.cuMemHostGetDevicePointer(out_dev_ptr, p, 0),
                           "cuMemHostGetDevicePointer");
        if (st) d->cu.cuMemHostUnregister(p);
    }
    return st;
}

void ft_cuda_host_unregister(ft_cuda_device_t *d, void *p)
{
    if (p && !ft_cuda_enter(d)) d->cu.cuMemHostUnregister(p);
}

ft_status_t ft_cuda_pin_mapped_file(ft_cuda_device_t *d, const ft_mapped_file_t *f,
                                    ft_cu_deviceptr *out_dev_ptr)
{
    if (!f->data || !f->size)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "%s: empty file, nothing to pin",
                              f->path);
    /* mmap maps whole pages, so the range may be rounded up to one. */
    const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    const uint64_t n = (f->size + page - 1) / page * page;
    if (n < f->size || n > SIZE_MAX)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: %llu bytes cannot be pinned", f->path,
                              (unsigned long long)f->size);
    ft_status_t st = ft_cuda_host_register(d, (void *)f->data, (size_t)n, 1, out_dev_ptr);
    if (!st) return FT_OK;
    ft_status_t named = ft_status_make(ft_status_code(st), "%s: pinning %llu mapped bytes: %s",
                                       f->path, (unsigned long long)n, ft_status_message(st));
    ft_status_free(st);
    return named;
}

void ft_cuda_unpin_mapped_file(ft_cuda_device_t *d, const ft_mapped_file_t *f)
{
    if (f->data) ft_cuda_host_unregister(d, (void *)f->data);
}
