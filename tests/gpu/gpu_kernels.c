/* gpu_kernels: every emitted CUDA kernel against the CPU reference, then
 * GEMV bandwidth. Compiles the emitted source with NVRTC for this GPU's
 * architecture (and PTX), or reads prebuilt images (--images DIR, for a
 * GPU machine without NVRTC: gpu_kernels_prebuilt), loads them through
 * the CUDA backend, and prints one line per check. Without a CUDA driver
 * it prints "skipped: no CUDA driver" and exits 0, so it is safe
 * anywhere; exits 1 on any failed check.
 * Usage: gpu_kernels [--no-bench | --bench-only] [--images DIR]
 *        gpu_kernels --write-images DIR   (no GPU needed: sm_80, sm_90
 *                                          cubins and compute_80 PTX) */
#include "gpu_harness.h"

#include <string.h>

/* The module from prebuilt images or compiled for this GPU (cubin + PTX). */
static void gk_build(gk_t *g, const char *images_dir)
{
    const ft_cuda_device_info_t *in = ft_cuda_device_info(g->dev);
    gk_images_t img;
    if (images_dir) {
        gk_images_read(images_dir, &img);
    } else {
        const uint32_t sm = (uint32_t)(10 * in->cc_major + in->cc_minor);
        gk_images_compile(&sm, 1, &img);
    }
    GK_OK(ft_cuda_module_load(g->dev, img.im, img.n, &g->mod));
    const ft_cuda_image_t *picked = &img.im[ft_cuda_module_image(g->mod)];
    printf("module: %u images, loaded the %s_%u image\n", img.n, picked->is_ptx ? "compute" : "sm",
           picked->sm);
    /* The PTX alone must load too (the JIT path of a newer GPU). */
    for (uint32_t i = 0; i < img.n; i++) {
        if (!img.im[i].is_ptx) continue;
        ft_cuda_module_t *ptx_mod;
        GK_OK(ft_cuda_module_load(g->dev, &img.im[i], 1, &ptx_mod));
        ft_cu_function fn;
        GK_OK(ft_cuda_module_function(ptx_mod, "ft_swiglu", &fn));
        ft_cuda_module_unload(ptx_mod);
    }
    /* The module stays loaded; cuModuleLoadData copied the images. */
    gk_images_free(&img);
}

static int gk_write_images(const char *dir)
{
    static const uint32_t archs[] = {80, 90};
    gk_images_t img;
    gk_images_compile(archs, 2, &img);
    gk_images_write(dir, &img);
    for (uint32_t i = 0; i < img.n; i++)
        printf("wrote %s_%u (%zu bytes)\n", img.im[i].is_ptx ? "compute" : "sm", img.im[i].sm,
               img.im[i].n_bytes);
    gk_images_free(&img);
    return 0;
}

int main(int argc, char **argv)
{
    int bench = 1, check = 1;
    const char *images = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-bench") == 0)
            bench = 0;
        else if (strcmp(argv[i], "--bench-only") == 0)
            check = 0;
        else if (strcmp(argv[i], "--images") == 0 && i + 1 < argc)
            images = argv[++i];
        else if (strcmp(argv[i], "--write-images") == 0 && i + 1 < argc)
            return gk_write_images(argv[i + 1]);
        else {
            fprintf(stderr,
                    "usage: %s [--no-bench | --bench-only] [--images DIR] | "
                    "--write-images DIR\n",
                    argv[0]);
            return 2;
        }
    }
    gk_t g = {.rng = 0x9e3779b97f4a7c15ull};
    ft_status_t st = ft_cuda_device_create(NULL, &g.dev);
    if (st) {
        printf("skipped: no CUDA driver (%s)\n", ft_status_message(st));
        ft_status_free(st);
        return 0;
    }
    const ft_cuda_device_info_t *in = ft_cuda_device_info(g.dev);
    size_t free_b = 0, total_b = 0;
    GK_OK(ft_cuda_mem_info(g.dev, &free_b, &total_b));
    printf("device: %s, sm_%d%d, %d SMs, driver %d, %.1f of %.1f GiB free\n", in->name,
           in->cc_major, in->cc_minor, in->n_sms, in->driver_version, free_b / 1073741824.0,
           total_b / 1073741824.0);
    GK_OK(ft_cuda_stream_create(g.dev, &g.s));
    gk_build(&g, images);
    if (check) {
        gk_check_matmuls(&g);
        gk_check_layer_ops(&g);
        gk_check_variants(&g);
        printf("%d checks, %d failed\n", g.n_checks, g.n_failures);
    }
    if (bench) gk_bench_matmuls(&g);
    ft_cuda_module_unload(g.mod);
    ft_cuda_stream_destroy(g.dev, g.s);
    ft_cuda_device_destroy(g.dev);
    return g.n_failures ? 1 : 0;
}
