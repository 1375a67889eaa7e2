#include "cuda_api.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/* Versioned names where cuda.h maps the plain name to a _v2 entry point. */
static const struct {
    const char *name;
    size_t offset;
} ft_cuda_syms[] = {
#define FT_CU_SYM(field, sym)                                                                      \
    {                                                                                              \
        sym, offsetof(ft_cuda_api_t, field)                                                        \
    }
    FT_CU_SYM(cuInit, "cuInit"),
    FT_CU_SYM(cuDriverGetVersion, "cuDriverGetVersion"),
    FT_CU_SYM(cuDeviceGetCount, "cuDeviceGetCount"),
    FT_CU_SYM(cuDeviceGet, "cuDeviceGet"),
    FT_CU_SYM(cuDeviceGetName, "cuDeviceGetName"),
    FT_CU_SYM(cuDeviceGetAttribute, "cuDeviceGetAttribute"),
    FT_CU_SYM(cuDeviceTotalMem, "cuDeviceTotalMem_v2"),
    FT_CU_SYM(cuCtxCreate, "cuCtxCreate_v2"),
    FT_CU_SYM(cuCtxDestroy, "cuCtxDestroy_v2"),
    FT_CU_SYM(cuMemGetInfo, "cuMemGetInfo_v2"),
    FT_CU_SYM(cuMemAlloc, "cuMemAlloc_v2"),
    FT_CU_SYM(cuMemFree, "cuMemFree_v2"),
    FT_CU_SYM(cuMemHostAlloc, "cuMemHostAlloc"),
    FT_CU_SYM(cuMemFreeHost, "cuMemFreeHost"),
    FT_CU_SYM(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
    FT_CU_SYM(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
    FT_CU_SYM(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
    FT_CU_SYM(cuStreamCreate, "cuStreamCreate"),
    FT_CU_SYM(cuStreamDestroy, "cuStreamDestroy_v2"),
    FT_CU_SYM(cuStreamSynchronize, "cuStreamSynchronize"),
    FT_CU_SYM(cuEventCreate, "cuEventCreate"),
    FT_CU_SYM(cuEventDestroy, "cuEventDestroy_v2"),
    FT_CU_SYM(cuEventRecord, "cuEventRecord"),
    FT_CU_SYM(cuEventQuery, "cuEventQuery"),
    FT_CU_SYM(cuEventSynchronize, "cuEventSynchronize"),
    FT_CU_SYM(cuEventElapsedTime, "cuEventElapsedTime"),
    FT_CU_SYM(cuModuleLoadData, "cuModuleLoadData"),
    FT_CU_SYM(cuModuleUnload, "cuModuleUnload"),
    FT_CU_SYM(cuModuleGetFunction, "cuModuleGetFunction"),
    FT_CU_SYM(cuLaunchKernel, "cuLaunchKernel"),
    FT_CU_SYM(cuGetErrorString, "cuGetErrorString"),
    FT_CU_SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    FT_CU_SYM(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    FT_CU_SYM(cuCtxSetCurrent, "cuCtxSetCurrent"),
    FT_CU_SYM(cuCtxSynchronize, "cuCtxSynchronize"),
    FT_CU_SYM(cuMemHostRegister, "cuMemHostRegister_v2"),
    FT_CU_SYM(cuMemHostUnregister, "cuMemHostUnregister"),
    FT_CU_SYM(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2"),
    FT_CU_SYM(cuStreamWaitEvent, "cuStreamWaitEvent"),
    FT_CU_SYM(cuMemsetD8Async, "cuMemsetD8Async"),
#undef FT_CU_SYM
};

/* Entry points the backend runs without (CUDA graphs): NULL when absent. */
static const struct {
    const char *name;
    size_t offset;
} ft_cuda_optional_syms[] = {
    {"cuStreamBeginCapture_v2", offsetof(ft_cuda_api_t, cuStreamBeginCapture)},
    {"cuStreamEndCapture", offsetof(ft_cuda_api_t, cuStreamEndCapture)},
    {"cuGraphInstantiateWithFlags", offsetof(ft_cuda_api_t, cuGraphInstantiateWithFlags)},
    {"cuGraphLaunch", offsetof(ft_cuda_api_t, cuGraphLaunch)},
    {"cuGraphDestroy", offsetof(ft_cuda_api_t, cuGraphDestroy)},
    {"cuGraphExecDestroy", offsetof(ft_cuda_api_t, cuGraphExecDestroy)},
};

ft_status_t ft_cuda_api_open(const char *lib_name, ft_cuda_api_t *api)
{
    memset(api, 0, sizeof(*api));
    /* FT_CUDA_LIB names another driver library (tests point it at the fake
     * driver, tests/cuda_fake); an explicit lib_name still wins. */
    const char *env = getenv("FT_CUDA_LIB");
    const char *name = lib_name ? lib_name : env && *env ? env : "libcuda.so.1";
    api->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!api->lib) {
        const char *e = dlerror();
        return ft_status_make(FT_STATUS_UNAVAILABLE, "no CUDA driver: dlopen(\"%s\") failed: %s",
                              name, e ? e : "unknown error");
    }
    for (size_t i = 0; i < sizeof(ft_cuda_syms) / sizeof(ft_cuda_syms[0]); i++) {
        void *sym = dlsym(api->lib, ft_cuda_syms[i].name);
        if (!sym) {
            ft_cuda_api_close(api);
            return ft_status_make(FT_STATUS_UNAVAILABLE, "CUDA driver %s lacks %s", name,
                                  ft_cuda_syms[i].name);
        }
        /* POSIX guarantees data and function pointers convert (dlsym). */
        memcpy((char *)api + ft_cuda_syms[i].offset, &sym, sizeof(sym));
    }
    for (size_t i = 0; i < sizeof(ft_cuda_optional_syms) / sizeof(ft_cuda_optional_syms[0]); i++) {
        void *sym = dlsym(api->lib, ft_cuda_optional_syms[i].name);
        memcpy((char *)api + ft_cuda_optional_syms[i].offset, &sym, sizeof(sym));
    }
    return FT_OK;
}

/* libcuda stays loaded once opened (the handle is dropped, not closed):
 * unloading a driver library that keeps thread-local state and threads of
 * its own is unsafe (NVIDIA's libcuda is never unloaded in practice, and
 * LeakSanitizer's scan of the thread-local blocks of an unloaded library
 * crashes), and opening it again takes the same handle. */
void ft_cuda_api_close(ft_cuda_api_t *api)
{
    memset(api, 0, sizeof(*api));
}

ft_status_t ft_cuda_check(const ft_cuda_api_t *api, ft_cu_result rc, const char *what)
{
    if (rc == FT_CU_SUCCESS) return FT_OK;
    const char *text = NULL;
    if (!api->cuGetErrorString || api->cuGetErrorString(rc, &text) != FT_CU_SUCCESS || !text)
        text = "unknown";
    const int absent = rc == FT_CU_ERROR_NO_DEVICE || rc == FT_CU_ERROR_STUB_LIBRARY ||
                       rc == FT_CU_ERROR_INSUFFICIENT_DRIVER;
    return ft_status_make(absent ? FT_STATUS_UNAVAILABLE : FT_STATUS_INTERNAL,
                          "%s: CUDA error %d (%s)", what, rc, text);
}
