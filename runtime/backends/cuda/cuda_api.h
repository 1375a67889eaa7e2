/* The CUDA Driver API entry points freetoken uses (the CUDA backend and
 * the profiler), loaded at run time with dlopen("libcuda.so.1") into one
 * symbol table: no cuda.h, no link dependency, and a machine without a
 * driver simply reports FT_STATUS_UNAVAILABLE. The types below mirror
 * cuda.h's ABI (handles are pointers, CUdeviceptr is 64-bit, CUresult an
 * int). */
#ifndef FT_BACKENDS_CUDA_API_H
#define FT_BACKENDS_CUDA_API_H

#include "freetoken.h"

#include <stddef.h>

typedef int ft_cu_result;
typedef int ft_cu_device;
typedef void *ft_cu_context;
typedef void *ft_cu_stream;
typedef void *ft_cu_event;
typedef void *ft_cu_module;
typedef void *ft_cu_function;
typedef unsigned long long ft_cu_deviceptr;
typedef void *ft_cu_graph;
typedef void *ft_cu_graph_exec;

/* cuda.h values used here. */
enum {
    FT_CU_SUCCESS = 0,
    FT_CU_ERROR_STUB_LIBRARY = 34,
    FT_CU_ERROR_INSUFFICIENT_DRIVER = 35,
    FT_CU_ERROR_NO_DEVICE = 100,
    FT_CU_ERROR_NOT_READY = 600,
    FT_CU_ATTR_MULTIPROCESSOR_COUNT = 16,
    FT_CU_ATTR_INTEGRATED = 18,
    FT_CU_ATTR_CC_MAJOR = 75,
    FT_CU_ATTR_CC_MINOR = 76,
    FT_CU_ATTR_READ_ONLY_HOST_REGISTER = 113,
    FT_CU_EVENT_DISABLE_TIMING = 2,
    FT_CU_MEMHOSTREGISTER_PORTABLE = 1,
    FT_CU_MEMHOSTREGISTER_DEVICEMAP = 2,
    FT_CU_MEMHOSTREGISTER_READ_ONLY = 8,
    FT_CU_STREAM_NON_BLOCKING = 1,
    FT_CU_MEMHOSTALLOC_PORTABLE = 1,
    FT_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
};

typedef struct ft_cuda_api {
    void *lib;
    ft_cu_result (*cuInit)(unsigned flags);
    ft_cu_result (*cuDriverGetVersion)(int *version);
    ft_cu_result (*cuDeviceGetCount)(int *count);
    ft_cu_result (*cuDeviceGet)(ft_cu_device *dev, int ordinal);
    ft_cu_result (*cuDeviceGetName)(char *name, int len, ft_cu_device dev);
    ft_cu_result (*cuDeviceGetAttribute)(int *value, int attr, ft_cu_device dev);
    ft_cu_result (*cuDeviceTotalMem)(size_t *bytes, ft_cu_device dev);
    ft_cu_result (*cuCtxCreate)(ft_cu_context *ctx, unsigned flags, ft_cu_device dev);
    ft_cu_result (*cuCtxDestroy)(ft_cu_context ctx);
    ft_cu_result (*cuMemGetInfo)(size_t *free_bytes, size_t *total_bytes);
    ft_cu_result (*cuMemAlloc)(ft_cu_deviceptr *p, size_t bytes);
    ft_cu_result (*cuMemFree)(ft_cu_deviceptr p);
    ft_cu_result (*cuMemHostAlloc)(void **p, size_t bytes, unsigned flags);
    ft_cu_result (*cuMemFreeHost)(void *p);
    ft_cu_result (*cuMemcpyHtoDAsync)(ft_cu_deviceptr dst, const void *src, size_t bytes,
                                      ft_cu_stream s);
    ft_cu_result (*cuMemcpyDtoHAsync)(void *dst, ft_cu_deviceptr src, size_t bytes, ft_cu_stream s);
    ft_cu_result (*cuMemcpyDtoDAsync)(ft_cu_deviceptr dst, ft_cu_deviceptr src, size_t bytes,
                                      ft_cu_stream s);
    ft_cu_result (*cuStreamCreate)(ft_cu_stream *s, unsigned flags);
    ft_cu_result (*cuStreamDestroy)(ft_cu_stream s);
    ft_cu_result (*cuStreamSynchronize)(ft_cu_stream s);
    ft_cu_result (*cuEventCreate)(ft_cu_event *e, unsigned flags);
    ft_cu_result (*cuEventDestroy)(ft_cu_event e);
    ft_cu_result (*cuEventRecord)(ft_cu_event e, ft_cu_stream s);
    ft_cu_result (*cuEventQuery)(ft_cu_event e);
    ft_cu_result (*cuEventSynchronize)(ft_cu_event e);
    ft_cu_result (*cuEventElapsedTime)(float *ms, ft_cu_event start, ft_cu_event end);
    ft_cu_result (*cuModuleLoadData)(ft_cu_module *m, const void *image);
    ft_cu_result (*cuModuleUnload)(ft_cu_module m);
    ft_cu_result (*cuModuleGetFunction)(ft_cu_function *f, ft_cu_module m, const char *name);
    ft_cu_result (*cuLaunchKernel)(ft_cu_function f, unsigned gx, unsigned gy, unsigned gz,
                                   unsigned bx, unsigned by, unsigned bz, unsigned shared_bytes,
                                   ft_cu_stream s, void **params, void **extra);
    ft_cu_result (*cuGetErrorString)(ft_cu_result rc, const char **str);
    ft_cu_result (*cuDevicePrimaryCtxRetain)(ft_cu_context *ctx, ft_cu_device dev);
    ft_cu_result (*cuDevicePrimaryCtxRelease)(ft_cu_device dev);
    ft_cu_result (*cuCtxSetCurrent)(ft_cu_context ctx);
    ft_cu_result (*cuCtxSynchronize)(void);
    ft_cu_result (*cuMemHostRegister)(void *p, size_t bytes, unsigned flags);
    ft_cu_result (*cuMemHostUnregister)(void *p);
    ft_cu_result (*cuMemHostGetDevicePointer)(ft_cu_deviceptr *dev, void *host, unsigned flags);
    ft_cu_result (*cuStreamWaitEvent)(ft_cu_stream s, ft_cu_event e, unsigned flags);
    ft_cu_result (*cuMemsetD8Async)(ft_cu_deviceptr dst, unsigned char value, size_t n,
                                    ft_cu_stream s);
    /* Optional (NULL when the driver lacks them): CUDA graphs. */
    ft_cu_result (*cuStreamBeginCapture)(ft_cu_stream s, int mode);
    ft_cu_result (*cuStreamEndCapture)(ft_cu_stream s, ft_cu_graph *graph);
    ft_cu_result (*cuGraphInstantiateWithFlags)(ft_cu_graph_exec *exec, ft_cu_graph graph,
                                                unsigned long long flags);
    ft_cu_result (*cuGraphLaunch)(ft_cu_graph_exec exec, ft_cu_stream s);
    ft_cu_result (*cuGraphDestroy)(ft_cu_graph graph);
    ft_cu_result (*cuGraphExecDestroy)(ft_cu_graph_exec exec);
} ft_cuda_api_t;

/* Opens the driver library (lib_name NULL: "libcuda.so.1") and resolves
 * every entry point (the optional ones are left NULL when absent). FT_STATUS_UNAVAILABLE, with dlerror's text, when the
 * library or a symbol is missing. */
FT_WARN_UNUSED ft_status_t ft_cuda_api_open(const char *lib_name, ft_cuda_api_t *api);
void ft_cuda_api_close(ft_cuda_api_t *api);

/* The one place a CUresult becomes an ft_status_t: NULL for success, else
 * "<what>: CUDA error <rc> (<driver's text>)", UNAVAILABLE for no device,
 * a stub library or a driver older than the runtime needs, INTERNAL
 * otherwise. */
FT_WARN_UNUSED ft_status_t ft_cuda_check(const ft_cuda_api_t *api, ft_cu_result rc, const char *what);

#endif
