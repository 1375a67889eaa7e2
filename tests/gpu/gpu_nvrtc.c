/* The test module from source: the emitter specialized to the harness's
 * shapes (Qwen3-30B-A3B, every format), compiled by NVRTC. */
#include "gpu_harness.h"

#include "cuda_codegen.h"

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
    s->variants = FT_CG_CUDA_VAR_BIAS | FT_CG_CUDA_VAR_SWIGLU_OAI | FT_CG_CUDA_VAR_SINKS |
                  FT_CG_CUDA_VAR_ROPE_TABLE |
                  FT_CG_CUDA_VAR_ROUTER_EXT |
                  FT_CG_CUDA_VAR_OUT_GATE | FT_CG_CUDA_VAR_DELTANET |
                  FT_CG_CUDA_VAR_SHARED_GATE; /* gpu_variants.c checks their kernels */
    s->dn_head_dim = GK_HD;
    s->n_matmuls = GK_N_MATMULS;
    for (int i = 0; i < GK_N_MATMULS; i++)
        s->matmuls[i] = (ft_cg_cuda_matmul_t){gk_matmuls[i].wtype, gk_matmuls[i].cols, 1};
}

void gk_images_compile(const uint32_t *archs, uint32_t n, gk_images_t *out)
{
    ft_cg_cuda_spec_t spec;
    ft_cg_cuda_source_t src;
    ft_cg_cuda_images_t img;
    gk_spec(&spec);
    GK_OK(ft_cg_cuda_emit(&spec, &src));
    GK_OK(ft_cg_cuda_compile(&src, archs, n, &img));
    printf("source: %u kernels, %u images\n", src.n_kernels, img.n_images);
    memset(out, 0, sizeof(*out));
    for (uint32_t i = 0; i < img.n_images && i < GK_MAX_IMAGES; i++) {
        ft_cg_cuda_image_t *im = &img.images[i];
        out->im[out->n++] = (ft_cuda_image_t){im->sm, im->is_ptx, im->data, im->n_bytes};
        im->data = NULL; /* now owned by out */
    }
    ft_cg_cuda_images_free(&img);
    ft_cg_cuda_source_free(&src);
}
