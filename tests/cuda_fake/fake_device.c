/* The fake driver's device and contexts: cuInit reads the environment
 * (FT_CUDA_FAKE_VRAM, FT_CUDA_FAKE_CC, FT_CUDA_FAKE_SMS), one device
 * "FT fake device", a primary context, a current context per thread, and
 * the error strings. */
#include "fake_driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ft_fake_device_t ft_fake_dev = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Context handles only need to be distinct non-NULL pointers. */
static char ft_fake_primary_ctx;
static _Thread_local void *ft_fake_current;

static size_t ft_fake_env_size(const char *name, size_t fallback)
{
    const char *v = getenv(name);
    if (!v || !*v) return fallback;
    char *end;
    const unsigned long long n = strtoull(v, &end, 10);
    return *end || !n ? fallback : (size_t)n;
}

FT_FAKE_API int cuInit(unsigned flags)
{
    if (flags) return FT_FAKE_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&ft_fake_dev.lock);
    if (!ft_fake_dev.initialized) {
        ft_fake_dev.total_bytes = ft_fake_env_size("FT_CUDA_FAKE_VRAM", (size_t)24 << 30);
        ft_fake_dev.n_sms = (int)ft_fake_env_size("FT_CUDA_FAKE_SMS", 132);
        int major = 9, minor = 0;
        const char *cc = getenv("FT_CUDA_FAKE_CC");
        if (cc && (sscanf(cc, "%d.%d", &major, &minor) != 2 || major < 5 || major > 20 ||
                   minor < 0 || minor > 9))
            major = 9, minor = 0;
        ft_fake_dev.cc_major = major;
        ft_fake_dev.cc_minor = minor;
        ft_fake_dev.initialized = 1;
    }
    pthread_mutex_unlock(&ft_fake_dev.lock);
    /* Read at every cuInit, so one process can test both modes. */
    const char *defer = getenv("FT_CUDA_FAKE_DEFER");
    const int on = defer && strcmp(defer, "1") == 0;
    if (ft_fake_defer && !on) ft_fake_flush_stream(NULL);
    ft_fake_defer = on;
    return FT_FAKE_SUCCESS;
}

int ft_fake_ready(void)
{
    if (!ft_fake_dev.initialized) return FT_FAKE_ERROR_NOT_INITIALIZED;
    return ft_fake_current ? FT_FAKE_SUCCESS : FT_FAKE_ERROR_INVALID_CONTEXT;
}

/* Makes another program take (or give back) device memory: cuMemGetInfo
 * reports less free, cuMemAlloc fails sooner. For tests of the re-plan
 * hook; not part of the Driver API. */
FT_FAKE_API void ft_cuda_fake_set_foreign_bytes(size_t n_bytes)
{
    pthread_mutex_lock(&ft_fake_dev.lock);
    ft_fake_dev.foreign_bytes = n_bytes;
    pthread_mutex_unlock(&ft_fake_dev.lock);
}

FT_FAKE_API int cuDriverGetVersion(int *version)
{
    if (!version) return FT_FAKE_ERROR_INVALID_VALUE;
    *version = 13000;
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuDeviceGetCount(int *count)
{
    if (!count) return FT_FAKE_ERROR_INVALID_VALUE;
    if (!ft_fake_dev.initialized) return FT_FAKE_ERROR_NOT_INITIALIZED;
    *count = 1;
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuDeviceGet(int *dev, int ordinal)
{
    if (!dev) return FT_FAKE_ERROR_INVALID_VALUE;
    if (!ft_fake_dev.initialized) return FT_FAKE_ERROR_NOT_INITIALIZED;
    if (ordinal != 0) return FT_FAKE_ERROR_INVALID_DEVICE;
    *dev = 0;
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuDeviceGetName(char *name, int len, int dev)
{
    if (!name || len <= 0) return FT_FAKE_ERROR_INVALID_VALUE;
    if (dev != 0) return FT_FAKE_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "FT fake device");
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuDeviceGetAttribute(int *value, int attr, int dev)
{
    if (!value) return FT_FAKE_ERROR_INVALID_VALUE;
    if (!ft_fake_dev.initialized) return FT_FAKE_ERROR_NOT_INITIALIZED;
    if (dev != 0) return FT_FAKE_ERROR_INVALID_DEVICE;
    /* cuda.h CUdevice_attribute numbers and the values reported. */
    const struct {
        int attr, value;
    } attrs[] = {
        {1, 1024},                  /* MAX_THREADS_PER_BLOCK */
        {8, 49152},                 /* MAX_SHARED_MEMORY_PER_BLOCK */
        {10, 32},                   /* WARP_SIZE */
        {16, ft_fake_dev.n_sms},    /* MULTIPROCESSOR_COUNT */
        {18, 0},                    /* INTEGRATED */
        {19, 1},                    /* CAN_MAP_HOST_MEMORY */
        {31, 1},                    /* CONCURRENT_KERNELS */
        {40, 2},                    /* ASYNC_ENGINE_COUNT */
        {41, 1},                    /* UNIFIED_ADDRESSING */
        {75, ft_fake_dev.cc_major}, /* COMPUTE_CAPABILITY_MAJOR */
        {76, ft_fake_dev.cc_minor}, /* COMPUTE_CAPABILITY_MINOR */
        {113, 1},                   /* READ_ONLY_HOST_REGISTER_SUPPORTED */
    };
    for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
        if (attrs[i].attr == attr) {
            *value = attrs[i].value;
            return FT_FAKE_SUCCESS;
        }
    return FT_FAKE_ERROR_INVALID_VALUE;
}

FT_FAKE_API int cuDeviceTotalMem_v2(size_t *bytes, int dev)
{
    if (!bytes) return FT_FAKE_ERROR_INVALID_VALUE;
    if (!ft_fake_dev.initialized) return FT_FAKE_ERROR_NOT_INITIALIZED;
    if (dev != 0) return FT_FAKE_ERROR_INVALID_DEVICE;
    *bytes = ft_fake_dev.total_bytes;
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
    if (!ctx) return FT_FAKE_ERROR_INVALID_VALUE;
    if (!ft_fake_dev.initialized) return FT_FAKE_ERROR_NOT_INITIALIZED;
    if (dev != 0) return FT_FAKE_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&ft_fake_dev.lock);
    ft_fake_dev.primary_refs++;
    pthread_mutex_unlock(&ft_fake_dev.lock);
    *ctx = &ft_fake_primary_ctx;
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuDevicePrimaryCtxRelease_v2(int dev)
{
    if (dev != 0) return FT_FAKE_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&ft_fake_dev.lock);
    const int rc = ft_fake_dev.primary_refs > 0 ? FT_FAKE_SUCCESS : FT_FAKE_ERROR_INVALID_CONTEXT;
    if (rc == FT_FAKE_SUCCESS) ft_fake_dev.primary_refs--;
    pthread_mutex_unlock(&ft_fake_dev.lock);
    return rc;
}

FT_FAKE_API int cuCtxCreate_v2(void **ctx, unsigned flags, int dev)
{
    if (!ctx) return FT_FAKE_ERROR_INVALID_VALUE;
    if (!ft_fake_dev.initialized) return FT_FAKE_ERROR_NOT_INITIALIZED;
    if (dev != 0) return FT_FAKE_ERROR_INVALID_DEVICE;
    *ctx = malloc(1);
    if (!*ctx) return FT_FAKE_ERROR_OUT_OF_MEMORY;
    ft_fake_current = *ctx;
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuCtxDestroy_v2(void *ctx)
{
    if (!ctx || ctx == &ft_fake_primary_ctx) return FT_FAKE_ERROR_INVALID_CONTEXT;
    if (ft_fake_current == ctx) ft_fake_current = NULL;
    free(ctx);
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuCtxSetCurrent(void *ctx)
{
    if (!ft_fake_dev.initialized) return FT_FAKE_ERROR_NOT_INITIALIZED;
    ft_fake_current = ctx;
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuCtxSynchronize(void)
{
    const int rc = ft_fake_ready();
    return rc ? rc : ft_fake_flush_stream(NULL); /* deferred work, if any */
}

FT_FAKE_API int cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes)
{
    const int rc = ft_fake_ready();
    if (rc) return rc;
    if (!free_bytes || !total_bytes) return FT_FAKE_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&ft_fake_dev.lock);
    const size_t taken = ft_fake_dev.used_bytes + ft_fake_dev.foreign_bytes;
    *total_bytes = ft_fake_dev.total_bytes;
    *free_bytes = taken < ft_fake_dev.total_bytes ? ft_fake_dev.total_bytes - taken : 0;
    pthread_mutex_unlock(&ft_fake_dev.lock);
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuGetErrorString(int rc, const char **str)
{
    static const struct {
        int rc;
        const char *text;
    } texts[] = {
        {FT_FAKE_SUCCESS, "no error"},
        {FT_FAKE_ERROR_INVALID_VALUE, "invalid argument"},
        {FT_FAKE_ERROR_OUT_OF_MEMORY, "out of memory"},
        {FT_FAKE_ERROR_NOT_INITIALIZED, "initialization error"},
        {FT_FAKE_ERROR_NO_DEVICE, "no CUDA-capable device is detected"},
        {FT_FAKE_ERROR_INVALID_DEVICE, "invalid device ordinal"},
        {FT_FAKE_ERROR_INVALID_IMAGE, "device kernel image is invalid"},
        {FT_FAKE_ERROR_INVALID_CONTEXT, "invalid device context"},
        {FT_FAKE_ERROR_INVALID_HANDLE, "invalid resource handle"},
        {FT_FAKE_ERROR_NOT_FOUND, "named symbol not found"},
        {FT_FAKE_ERROR_NOT_READY, "device not ready"},
        {FT_FAKE_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"},
        {FT_FAKE_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
         "part or all of the requested memory range is already mapped"},
        {FT_FAKE_ERROR_HOST_MEMORY_NOT_REGISTERED,
         "pointer does not correspond to a registered memory region"},
        {FT_FAKE_ERROR_MISALIGNED_ADDRESS, "misaligned address"},
        {FT_FAKE_ERROR_LAUNCH_FAILED, "unspecified launch failure"},
        {FT_FAKE_ERROR_NOT_SUPPORTED,
         "operation not supported (fake driver: module lacks ft_spec)"},
        {FT_FAKE_ERROR_STREAM_CAPTURE_UNSUPPORTED,
         "operation not permitted when stream is capturing"},
        {FT_FAKE_ERROR_STREAM_CAPTURE_INVALIDATED,
         "operation failed due to a previous error during capture"},
    };
    if (!str) return FT_FAKE_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
        if (texts[i].rc == rc) {
            *str = texts[i].text;
            return FT_FAKE_SUCCESS;
        }
    *str = NULL;
    return FT_FAKE_ERROR_INVALID_VALUE;
}
