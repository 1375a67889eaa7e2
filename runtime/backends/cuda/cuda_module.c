/* Modules: choosing the plan's image for this GPU (a cubin of its major
 * architecture, else PTX to JIT) and loading it. */
#include "cuda_device_internal.h"

#include "../../base/alloc.h"

#include <stdio.h>
#include <string.h>

struct ft_cuda_module {
    ft_cuda_device_t *dev;
    ft_cu_module mod;
    uint32_t image;
};

int ft_cuda_image_pick(const ft_cuda_image_t *images, uint32_t n, int major, int minor)
{
    const uint32_t dev_sm = (uint32_t)(10 * major + minor);
    int best_cubin = -1, best_ptx = -1;
    for (uint32_t i = 0; i < n; i++) {
        const ft_cuda_image_t *im = &images[i];
        if (!im->data || !im->n_bytes || im->sm > dev_sm) continue;
        if (!im->is_ptx && im->sm / 10 == (uint32_t)major &&
            (best_cubin < 0 || im->sm > images[best_cubin].sm))
            best_cubin = (int)i;
        if (im->is_ptx && (best_ptx < 0 || im->sm > images[best_ptx].sm)) best_ptx = (int)i;
    }
    return best_cubin >= 0 ? best_cubin : best_ptx;
}

ft_status_t ft_cuda_module_load(ft_cuda_device_t *d, const ft_cuda_image_t *images, uint32_t n,
                                ft_cuda_module_t **out_module)
{
    *out_module = NULL;
    const int pick = ft_cuda_image_pick(images, n, d->info.cc_major, d->info.cc_minor);
    if (pick < 0) {
        char offer[256] = "";
        size_t used = 0;
        for (uint32_t i = 0; i < n && used < sizeof(offer); i++) {
            const int w = snprintf(offer + used, sizeof(offer) - used, "%s%s_%u", i ? ", " : "",
                                   images[i].is_ptx ? "compute" : "sm", images[i].sm);
            used += w > 0 ? (size_t)w : 0;
        }
        return ft_status_make(
            FT_STATUS_UNSUPPORTED,
            "CUDA: no kernel image for %s (sm_%d%d); the plan has %s (recompile with --cuda-arch)",
            d->info.name, d->info.cc_major, d->info.cc_minor, n ? offer : "none");
    }
    ft_cuda_module_t *m = ft_mem_calloc(NULL, 1, sizeof(*m));
    if (!m) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "CUDA module: no memory");
    ft_status_t st = ft_cuda_enter(d);
    if (!st) {
        char what[96];
        snprintf(what, sizeof(what), "cuModuleLoadData (%s_%u, %zu bytes)",
                 images[pick].is_ptx ? "compute" : "sm", images[pick].sm, images[pick].n_bytes);
        st = ft_cuda_check(&d->cu, d->cu.cuModuleLoadData(&m->mod, images[pick].data), what);
    }
    if (st) {
        ft_mem_free(NULL, m);
        return st;
    }
    m->dev = d;
    m->image = (uint32_t)pick;
    *out_module = m;
    return FT_OK;
}

void ft_cuda_module_unload(ft_cuda_module_t *m)
{
    if (!m) return;
    if (!ft_cuda_enter(m->dev)) m->dev->cu.cuModuleUnload(m->mod);
    ft_mem_free(NULL, m);
}

uint32_t ft_cuda_module_image(const ft_cuda_module_t *m)
{
    return m->image;
}

ft_status_t ft_cuda_module_function(ft_cuda_module_t *m, const char *name, ft_cu_function *out_fn)
{
    *out_fn = NULL;
    ft_status_t st = ft_cuda_enter(m->dev);
    if (st) return st;
    const ft_cu_result rc = m->dev->cu.cuModuleGetFunction(out_fn, m->mod, name);
    if (rc == FT_CU_SUCCESS) return FT_OK;
    if (rc == 500 /* CUDA_ERROR_NOT_FOUND */)
        return ft_status_make(FT_STATUS_FORMAT, "CUDA module: no kernel '%s' in the plan's image",
                              name);
    return ft_cuda_check(&m->dev->cu, rc, "cuModuleGetFunction");
}
