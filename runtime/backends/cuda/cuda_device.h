/* The CUDA backend's device: one GPU driven through the Driver API table
 * of cuda_api.h (libcuda opened with dlopen, never linked). It owns the
 * device's primary context; streams, events, device memory, pinned host
 * ranges and modules are created through it and must be released before
 * ft_cuda_device_destroy.
 *
 * Where no driver or no GPU is present, ft_cuda_device_create returns
 * FT_STATUS_UNAVAILABLE with a message saying why, and the caller runs on
 * the CPU. Every call makes the device's context current on the calling
 * thread first, so any thread may use the device (one at a time).
 *
 * Status: compile-checked here; exercised only by tests/gpu on a GPU. */
#ifndef FT_BACKENDS_CUDA_DEVICE_H
#define FT_BACKENDS_CUDA_DEVICE_H

#include "cuda_api.h"

#include "../../base/mapped_file.h"

#include <stddef.h>
#include <stdint.h>

typedef struct ft_cuda_device ft_cuda_device_t;
typedef struct ft_cuda_module ft_cuda_module_t;

typedef struct ft_cuda_device_options {
    const char *lib_name; /* NULL: "libcuda.so.1" */
    int ordinal;          /* which GPU, 0-based */
} ft_cuda_device_options_t;

void ft_cuda_device_options_init(ft_cuda_device_options_t *opts);

typedef struct ft_cuda_device_info {
    char name[128];
    int cc_major, cc_minor; /* compute capability: 9.0 for H100/H200 */
    int n_sms;
    int driver_version;     /* 13000 for CUDA 13.0 */
    int read_only_register; /* cuMemHostRegister accepts READ_ONLY */
    size_t total_bytes;     /* device memory */
} ft_cuda_device_info_t;

FT_WARN_UNUSED ft_status_t ft_cuda_device_create(const ft_cuda_device_options_t *opts, ft_cuda_device_t **out_dev);
void ft_cuda_device_destroy(ft_cuda_device_t *dev);
const ft_cuda_device_info_t *ft_cuda_device_info(const ft_cuda_device_t *dev);

/* Free and total device memory now, bytes (the planner's re-plan hook
 * polls this). */
FT_WARN_UNUSED ft_status_t ft_cuda_mem_info(ft_cuda_device_t *dev, size_t *out_free, size_t *out_total);

/* Device memory. */
FT_WARN_UNUSED ft_status_t ft_cuda_alloc(ft_cuda_device_t *dev, size_t n_bytes, ft_cu_deviceptr *out_ptr);
void ft_cuda_free(ft_cuda_device_t *dev, ft_cu_deviceptr ptr);

/* Page-locked host memory (cuMemHostAlloc, portable): copies from and to
 * it run asynchronously at full PCIe speed, where pageable memory is
 * staged by the driver through a bounce buffer. */
FT_WARN_UNUSED ft_status_t ft_cuda_host_alloc(ft_cuda_device_t *dev, size_t n_bytes, void **out_p);
void ft_cuda_host_free(ft_cuda_device_t *dev, void *p);

/* Page-locks an existing host range in place (a mapped FTW file: pin after
 * mapping, never a second copy) so async copies from it run at full PCIe
 * speed, and maps it into the device's address space (out_dev_ptr, may be
 * NULL) for kernels that read it directly (ft_expert_copy). read_only: the
 * range is mapped PROT_READ (needs info.read_only_register). p and n_bytes
 * must be page-aligned. */
FT_WARN_UNUSED ft_status_t ft_cuda_host_register(ft_cuda_device_t *dev, void *p, size_t n_bytes, int read_only,
                                  ft_cu_deviceptr *out_dev_ptr);
void ft_cuda_host_unregister(ft_cuda_device_t *dev, void *p);

/* Pins a whole read-only mapped file (an FTW weights file) in place, the
 * mapping rounded up to whole pages, and returns its device address
 * (out_dev_ptr, may be NULL). Errors name the file. Unpin before closing
 * the file. */
FT_WARN_UNUSED ft_status_t ft_cuda_pin_mapped_file(ft_cuda_device_t *dev, const ft_mapped_file_t *file,
                                    ft_cu_deviceptr *out_dev_ptr);
void ft_cuda_unpin_mapped_file(ft_cuda_device_t *dev, const ft_mapped_file_t *file);

/* Streams and events (events time and order work across streams). */
FT_WARN_UNUSED ft_status_t ft_cuda_stream_create(ft_cuda_device_t *dev, ft_cu_stream *out_stream);
void ft_cuda_stream_destroy(ft_cuda_device_t *dev, ft_cu_stream stream);
FT_WARN_UNUSED ft_status_t ft_cuda_stream_sync(ft_cuda_device_t *dev, ft_cu_stream stream);
FT_WARN_UNUSED ft_status_t ft_cuda_event_create(ft_cuda_device_t *dev, int timing, ft_cu_event *out_event);
void ft_cuda_event_destroy(ft_cuda_device_t *dev, ft_cu_event event);
FT_WARN_UNUSED ft_status_t ft_cuda_event_record(ft_cuda_device_t *dev, ft_cu_event event, ft_cu_stream stream);
/* Work queued on stream after this waits for event. */
FT_WARN_UNUSED ft_status_t ft_cuda_stream_wait(ft_cuda_device_t *dev, ft_cu_stream stream, ft_cu_event event);
FT_WARN_UNUSED ft_status_t ft_cuda_event_sync(ft_cuda_device_t *dev, ft_cu_event event);
/* Milliseconds between two recorded, completed timing events. */
FT_WARN_UNUSED ft_status_t ft_cuda_event_elapsed_ms(ft_cuda_device_t *dev, ft_cu_event start, ft_cu_event end,
                                     float *out_ms);

/* Asynchronous copies on stream; host memory should be registered (or
 * the copy is staged by the driver and runs at pageable speed). */
FT_WARN_UNUSED ft_status_t ft_cuda_copy_h2d(ft_cuda_device_t *dev, ft_cu_deviceptr dst, const void *src,
                             size_t n_bytes, ft_cu_stream stream);
FT_WARN_UNUSED ft_status_t ft_cuda_copy_d2h(ft_cuda_device_t *dev, void *dst, ft_cu_deviceptr src, size_t n_bytes,
                             ft_cu_stream stream);
FT_WARN_UNUSED ft_status_t ft_cuda_copy_d2d(ft_cuda_device_t *dev, ft_cu_deviceptr dst, ft_cu_deviceptr src,
                             size_t n_bytes, ft_cu_stream stream);
FT_WARN_UNUSED ft_status_t ft_cuda_memset(ft_cuda_device_t *dev, ft_cu_deviceptr dst, uint8_t value,
                           size_t n_bytes, ft_cu_stream stream);

/* A compiled image as the plan stores it: a cubin for sm (10 * major +
 * minor) or PTX for compute_sm. */
typedef struct ft_cuda_image {
    uint32_t sm;
    int is_ptx;
    const void *data;
    size_t n_bytes;
} ft_cuda_image_t;

/* The image to load on a device of compute capability major.minor: a
 * cubin of the same major and the highest minor not above the device's
 * (cubins run on later minors of their major), else the PTX of the
 * highest target not above the device (the driver JIT-compiles it).
 * -1 when none fits. Pure: testable without a GPU. */
int ft_cuda_image_pick(const ft_cuda_image_t *images, uint32_t n, int major, int minor);

/* Loads the best image of images (ft_cuda_image_pick) as a module.
 * UNSUPPORTED names the device's capability and the targets on offer. */
FT_WARN_UNUSED ft_status_t ft_cuda_module_load(ft_cuda_device_t *dev, const ft_cuda_image_t *images, uint32_t n,
                                ft_cuda_module_t **out_module);
void ft_cuda_module_unload(ft_cuda_module_t *module);
/* The image the module was loaded from (index into the images given). */
uint32_t ft_cuda_module_image(const ft_cuda_module_t *module);
/* A kernel of the module by its extern "C" name; FORMAT names it when the
 * module lacks it. */
FT_WARN_UNUSED ft_status_t ft_cuda_module_function(ft_cuda_module_t *module, const char *name,
                                    ft_cu_function *out_fn);

/* Launch geometry: grid of blocks, threads per block, dynamic shared
 * memory in bytes. */
typedef struct ft_cuda_launch {
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t shared_bytes;
} ft_cuda_launch_t;

/* Launches fn on stream with params (pointers to each argument, in
 * order, as cuLaunchKernel takes them). */
FT_WARN_UNUSED ft_status_t ft_cuda_launch_kernel(ft_cuda_device_t *dev, ft_cu_function fn,
                                  const ft_cuda_launch_t *geom, ft_cu_stream stream, void **params);

/* CUDA graphs (cuda_graph.c). Supported when the driver has the optional
 * entry points. Between capture_begin and capture_end, work queued on the
 * stream is recorded, not run; capture_end always ends the capture and,
 * when it succeeded, instantiates it into *out_exec (replay with
 * ft_cuda_graph_launch, release with ft_cuda_graph_destroy). */
int ft_cuda_graphs_supported(const ft_cuda_device_t *dev);
FT_WARN_UNUSED ft_status_t ft_cuda_capture_begin(ft_cuda_device_t *dev, ft_cu_stream stream);
FT_WARN_UNUSED ft_status_t ft_cuda_capture_end(ft_cuda_device_t *dev, ft_cu_stream stream, ft_cu_graph_exec *out_exec);
FT_WARN_UNUSED ft_status_t ft_cuda_graph_launch(ft_cuda_device_t *dev, ft_cu_graph_exec exec, ft_cu_stream stream);
void ft_cuda_graph_destroy(ft_cuda_device_t *dev, ft_cu_graph_exec exec);

#endif
