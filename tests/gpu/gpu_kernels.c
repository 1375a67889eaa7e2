/* gpu_kernels: every emitted CUDA kernel against the CPU reference, then
 * GEMV bandwidth. Compiles the emitted source with NVRTC for this GPU's
 * architecture (and PTX), loads it through the CUDA backend, and prints one
 * line per check. Without a CUDA driver it prints "skipped: no CUDA driver"
 * and exits 0, so it is safe anywhere; exits 1 on any failed check.
 * Usage: gpu_kernels [--no-bench | --bench-only] */
#include "gpu_harness.h"

#include <string.h>

static void gk_spec(ft_cg_cuda_spec_t *s)
{
    memset(s, 0, sizeof(*s));
    s->d_model = GK_D;
    s->n_heads = GK_HEADS;
    s->n_kv_heads = GK_KV;
    s->head_dim = GK_HD;
    s->rope_dim = GK_HD;
    s->rope_theta = 1000000.0;
    s->norm_eps = 1e-6f;
    s->n_experts = GK_EXPERTS;
    s->n_experts_used = GK_USED;
    s->norm_topk_prob = 1;
    s->n_matmuls = GK_N_MATMULS;
    for (int i = 0; i < GK_N_MATMULS; i++)
        s->matmuls[i] = (ft_cg_cuda_matmul_t){gk_matmuls[i].wtype, gk_matmuls[i].cols, 1};
}

/* Emits, compiles for this GPU (cubin + PTX) and loads the module. */
static void gk_build(gk_t *g)
{
    const ft_cuda_device_info_t *in = ft_cuda_device_info(g->dev);
    ft_cg_cuda_spec_t spec;
    gk_spec(&spec);
    GK_OK(ft_cg_cuda_emit(&spec, &g->src));
    uint32_t sm = (uint32_t)(10 * in->cc_major + in->cc_minor);
    ft_cg_cuda_images_t img;
    GK_OK(ft_cg_cuda_compile(&g->src, &sm, 1, &img));
    ft_cuda_image_t images[2];
    for (uint32_t i = 0; i < img.n_images; i++)
        images[i] = (ft_cuda_image_t){img.images[i].sm, img.images[i].is_ptx, img.images[i].data,
                                      img.images[i].n_bytes};
    GK_OK(ft_cuda_module_load(g->dev, images, img.n_images, &g->mod));
    printf("module: %u kernels, loaded the %s_%u image\n", g->src.n_kernels,
           images[ft_cuda_module_image(g->mod)].is_ptx ? "compute" : "sm",
           images[ft_cuda_module_image(g->mod)].sm);
    /* The PTX alone must load too (the JIT path of a newer GPU). */
    ft_cuda_module_t *ptx_mod;
    GK_OK(ft_cuda_module_load(g->dev, &images[1], 1, &ptx_mod));
    ft_cu_function fn;
    GK_OK(ft_cuda_module_function(ptx_mod, g->src.kernels[0].name, &fn));
    ft_cuda_module_unload(ptx_mod);
    /* The module stays loaded; cuModuleLoadData copied the images. */
    ft_cg_cuda_images_free(&img);
}

int main(int argc, char **argv)
{
    const int bench = !(argc > 1 && strcmp(argv[1], "--no-bench") == 0);
    const int check = !(argc > 1 && strcmp(argv[1], "--bench-only") == 0);
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
    gk_build(&g);
    if (check) {
        gk_check_matmuls(&g);
        gk_check_layer_ops(&g);
        printf("%d checks, %d failed\n", g.n_checks, g.n_failures);
    }
    if (bench) gk_bench_matmuls(&g);
    ft_cuda_module_unload(g.mod);
    ft_cuda_stream_destroy(g.dev, g.s);
    ft_cg_cuda_source_free(&g.src);
    ft_cuda_device_destroy(g.dev);
    return g.n_failures ? 1 : 0;
}
