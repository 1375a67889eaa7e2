/* The device interface (backend.h) on one CUDA GPU: the Driver API calls
 * of cuda_device.c behind the table, with the plan's CUDA module loaded
 * at create (the best cubin for the GPU, else PTX the driver compiles). */
#include "cuda_backend.h"
#include "cuda_device.h"

#include "../../base/alloc.h"

#include <stdlib.h>
#include <string.h>

typedef struct ft_cuda_backend {
    ft_device_t base;
    const ft_allocator_t *a;
    ft_cuda_device_t *dev;
    ft_cuda_module_t *mod;
    ft_device_info_t info;
} ft_cuda_backend_t;

static ft_cuda_device_t *ft_cb(ft_device_t *d)
{
    return ((ft_cuda_backend_t *)d)->dev;
}

static void ft_cb_destroy(ft_device_t *d)
{
    ft_cuda_backend_t *b = (ft_cuda_backend_t *)d;
    ft_cuda_module_unload(b->mod);
    ft_cuda_device_destroy(b->dev);
    ft_mem_free(b->a, b);
}

static const ft_device_info_t *ft_cb_info(const ft_device_t *d)
{
    return &((const ft_cuda_backend_t *)d)->info;
}

FT_WARN_UNUSED static ft_status_t ft_cb_memory_info(ft_device_t *d, uint64_t *free_b, uint64_t *total_b)
{
    size_t f = 0, t = 0;
    ft_status_t st = ft_cuda_mem_info(ft_cb(d), &f, &t);
    *free_b = f;
    *total_b = t;
    return st;
}

FT_WARN_UNUSED static ft_status_t ft_cb_alloc(ft_device_t *d, uint64_t n, ft_dptr_t *out)
{
    *out = 0;
    if (n > SIZE_MAX)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "cuda: %llu bytes of device memory",
                              (unsigned long long)n);
    ft_cu_deviceptr p = 0;
    ft_status_t st = ft_cuda_alloc(ft_cb(d), (size_t)n, &p);
    *out = p;
    return st;
}

static void ft_cb_free(ft_device_t *d, ft_dptr_t p)
{
    ft_cuda_free(ft_cb(d), p);
}

FT_WARN_UNUSED static ft_status_t ft_cb_host_alloc(ft_device_t *d, size_t n, void **out)
{
    return ft_cuda_host_alloc(ft_cb(d), n, out);
}

static void ft_cb_host_free(ft_device_t *d, void *p)
{
    ft_cuda_host_free(ft_cb(d), p);
}

FT_WARN_UNUSED static ft_status_t ft_cb_pin(ft_device_t *d, const void *p, size_t n, const char *what)
{
    ft_mapped_file_t view = {(char *)what, p, n};
    return ft_cuda_pin_mapped_file(ft_cb(d), &view, NULL);
}

static void ft_cb_unpin(ft_device_t *d, const void *p)
{
    ft_cuda_host_unregister(ft_cb(d), (void *)p);
}

FT_WARN_UNUSED static ft_status_t ft_cb_stream_create(ft_device_t *d, ft_dstream_t *out)
{
    ft_cu_stream s = NULL;
    ft_status_t st = ft_cuda_stream_create(ft_cb(d), &s);
    *out = s;
    return st;
}

static void ft_cb_stream_destroy(ft_device_t *d, ft_dstream_t s)
{
    ft_cuda_stream_destroy(ft_cb(d), s);
}

FT_WARN_UNUSED static ft_status_t ft_cb_stream_sync(ft_device_t *d, ft_dstream_t s)
{
    return ft_cuda_stream_sync(ft_cb(d), s);
}

FT_WARN_UNUSED static ft_status_t ft_cb_event_create(ft_device_t *d, ft_devent_t *out)
{
    ft_cu_event e = NULL;
    ft_status_t st = ft_cuda_event_create(ft_cb(d), 0, &e);
    *out = e;
    return st;
}

static void ft_cb_event_destroy(ft_device_t *d, ft_devent_t e)
{
    ft_cuda_event_destroy(ft_cb(d), e);
}

FT_WARN_UNUSED static ft_status_t ft_cb_event_record(ft_device_t *d, ft_devent_t e, ft_dstream_t s)
{
    return ft_cuda_event_record(ft_cb(d), e, s);
}

FT_WARN_UNUSED static ft_status_t ft_cb_stream_wait(ft_device_t *d, ft_dstream_t s, ft_devent_t e)
{
    return ft_cuda_stream_wait(ft_cb(d), s, e);
}

FT_WARN_UNUSED static ft_status_t ft_cb_copy_h2d(ft_device_t *d, ft_dptr_t dst, const void *src, size_t n,
                                                 ft_dstream_t s)
{
    return ft_cuda_copy_h2d(ft_cb(d), dst, src, n, s);
}

FT_WARN_UNUSED static ft_status_t ft_cb_copy_d2h(ft_device_t *d, void *dst, ft_dptr_t src, size_t n,
                                                 ft_dstream_t s)
{
    return ft_cuda_copy_d2h(ft_cb(d), dst, src, n, s);
}

FT_WARN_UNUSED static ft_status_t ft_cb_copy_d2d(ft_device_t *d, ft_dptr_t dst, ft_dptr_t src, size_t n,
                                                 ft_dstream_t s)
{
    return ft_cuda_copy_d2d(ft_cb(d), dst, src, n, s);
}

FT_WARN_UNUSED static ft_status_t ft_cb_memset(ft_device_t *d, ft_dptr_t dst, uint8_t v, size_t n,
                                               ft_dstream_t s)
{
    return ft_cuda_memset(ft_cb(d), dst, v, n, s);
}

FT_WARN_UNUSED static ft_status_t ft_cb_function(ft_device_t *d, const char *name, ft_dfn_t *out)
{
    ft_cu_function f = NULL;
    ft_status_t st = ft_cuda_module_function(((ft_cuda_backend_t *)d)->mod, name, &f);
    *out = f;
    return st;
}

FT_WARN_UNUSED static ft_status_t ft_cb_launch(ft_device_t *d, ft_dfn_t fn, const ft_device_launch_t *g,
                                               ft_dstream_t s, void **params)
{
    const ft_cuda_launch_t cg = {{g->grid[0], g->grid[1], g->grid[2]},
                                 {g->block[0], g->block[1], g->block[2]},
                                 g->shared_bytes};
    return ft_cuda_launch_kernel(ft_cb(d), fn, &cg, s, params);
}

static int ft_cb_graphs_supported(const ft_device_t *d)
{
    return ft_cuda_graphs_supported(((const ft_cuda_backend_t *)d)->dev);
}

FT_WARN_UNUSED static ft_status_t ft_cb_capture_begin(ft_device_t *d, ft_dstream_t s)
{
    return ft_cuda_capture_begin(ft_cb(d), s);
}

FT_WARN_UNUSED static ft_status_t ft_cb_capture_end(ft_device_t *d, ft_dstream_t s, ft_dgraph_t *out)
{
    ft_cu_graph_exec g = NULL;
    ft_status_t st = ft_cuda_capture_end(ft_cb(d), s, &g);
    *out = g;
    return st;
}

FT_WARN_UNUSED static ft_status_t ft_cb_graph_launch(ft_device_t *d, ft_dgraph_t g, ft_dstream_t s)
{
    return ft_cuda_graph_launch(ft_cb(d), g, s);
}

static void ft_cb_graph_destroy(ft_device_t *d, ft_dgraph_t g)
{
    ft_cuda_graph_destroy(ft_cb(d), g);
}

static const ft_device_vtable_t ft_cuda_vtable = {
    .name = "cuda",
    .destroy = ft_cb_destroy,
    .info = ft_cb_info,
    .memory_info = ft_cb_memory_info,
    .alloc = ft_cb_alloc,
    .free = ft_cb_free,
    .host_alloc = ft_cb_host_alloc,
    .host_free = ft_cb_host_free,
    .pin = ft_cb_pin,
    .unpin = ft_cb_unpin,
    .stream_create = ft_cb_stream_create,
    .stream_destroy = ft_cb_stream_destroy,
    .stream_sync = ft_cb_stream_sync,
    .event_create = ft_cb_event_create,
    .event_destroy = ft_cb_event_destroy,
    .event_record = ft_cb_event_record,
    .stream_wait = ft_cb_stream_wait,
    .copy_h2d = ft_cb_copy_h2d,
    .copy_d2h = ft_cb_copy_d2h,
    .copy_d2d = ft_cb_copy_d2d,
    .memset = ft_cb_memset,
    .function = ft_cb_function,
    .launch = ft_cb_launch,
    .graphs_supported = ft_cb_graphs_supported,
    .capture_begin = ft_cb_capture_begin,
    .capture_end = ft_cb_capture_end,
    .graph_launch = ft_cb_graph_launch,
    .graph_destroy = ft_cb_graph_destroy,
};

/* The plan's images as the device API takes them ("sm_90" cubins, PTX for
 * "compute_80"). UNAVAILABLE when the bundle has none. */
FT_WARN_UNUSED static ft_status_t ft_cuda_images(const ft_bundle_t *b, const ft_allocator_t *a,
                                                 ft_cuda_image_t **out, uint32_t *out_n)
{
    const Ftplan__Plan *p = b->plan;
    const size_t n = p->n_cuda_images + p->n_cuda_ptx;
    *out = NULL;
    *out_n = 0;
    if (!n)
        return ft_status_make(
            FT_STATUS_UNAVAILABLE,
            "%s: the bundle has no CUDA kernels (compiled with --cuda-arch none, or by an ftc "
            "without NVRTC)",
            b->plan_file->path);
    ft_cuda_image_t *im = ft_mem_calloc(a, n, sizeof(*im));
    if (!im) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    for (size_t i = 0; i < p->n_cuda_images; i++) {
        const char *u = strchr(p->cuda_images[i]->arch, '_');
        im[i] = (ft_cuda_image_t){u ? (uint32_t)strtoul(u + 1, NULL, 10) : 0, 0,
                                  p->cuda_images[i]->cubin.data, p->cuda_images[i]->cubin.len};
    }
    for (size_t i = 0; i < p->n_cuda_ptx; i++) {
        const char *u = strchr(p->cuda_ptx[i]->arch, '_');
        const char *t = p->cuda_ptx[i]->text;
        im[p->n_cuda_images + i] = (ft_cuda_image_t){u ? (uint32_t)strtoul(u + 1, NULL, 10) : 0, 1,
                                                     t, t ? strlen(t) + 1 : 0};
    }
    *out = im;
    *out_n = (uint32_t)n;
    return FT_OK;
}

ft_status_t ft_cuda_backend_create(const ft_bundle_t *bundle, const char *lib_name, int ordinal,
                                   const ft_allocator_t *alloc, ft_device_t **out)
{
    *out = NULL;
    ft_cuda_backend_t *b = ft_mem_calloc(alloc, 1, sizeof(*b));
    if (!b) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    b->base.vt = &ft_cuda_vtable;
    b->a = alloc;
    ft_cuda_device_options_t dopt;
    ft_cuda_device_options_init(&dopt);
    dopt.lib_name = lib_name;
    dopt.ordinal = ordinal;
    ft_cuda_image_t *im = NULL;
    uint32_t n_im = 0;
    ft_status_t st = ft_cuda_device_create(&dopt, &b->dev);
    if (!st) st = ft_cuda_images(bundle, alloc, &im, &n_im);
    if (!st) st = ft_cuda_module_load(b->dev, im, n_im, &b->mod);
    ft_mem_free(alloc, im);
    if (st) {
        ft_cb_destroy(&b->base);
        return st;
    }
    const ft_cuda_device_info_t *di = ft_cuda_device_info(b->dev);
    memcpy(b->info.name, di->name, sizeof(b->info.name));
    b->info.cc_major = di->cc_major;
    b->info.cc_minor = di->cc_minor;
    b->info.total_bytes = di->total_bytes;
    *out = &b->base;
    return FT_OK;
}
