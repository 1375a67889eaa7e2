/* Shared by the CUDA codegen tests (test_cuda_codegen.c, and the GPU test's
 * build): a Qwen3-MoE-like
 * spec covering every weight format the CUDA templates compute, and the
 * compile check (every target gives a non-empty ELF cubin, the PTX holds
 * an entry point for every emitted kernel). */
#ifndef FT_TEST_CUDA_CODEGEN_H
#define FT_TEST_CUDA_CODEGEN_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "cuda_codegen.h"

#define FT_CG_ASSERT_OK(expr)                                                                      \
    do {                                                                                           \
        ft_status_t st_ = (expr);                                                                  \
        if (st_) fail_msg("%s: %s", #expr, ft_status_message(st_));                                \
    } while (0)

#define FT_CG_ASSERT_STATUS(expr, code, needle)                                                    \
    do {                                                                                           \
        ft_status_t st_ = (expr);                                                                  \
        assert_non_null(st_);                                                                      \
        assert_int_equal(ft_status_code(st_), (code));                                             \
        if (!strstr(ft_status_message(st_), (needle)))                                             \
            fail_msg("'%s' not in: %s", (needle), ft_status_message(st_));                         \
        ft_status_free(st_);                                                                       \
    } while (0)

/* d_model 512, 8 query / 2 KV heads of 64, 16 experts (4 used) with an
 * expert FFN of 256: attention in BF16 and Q8_0, experts in Q4_K (gate,
 * up) and Q6_K (down), plus F32/F16/Q4_0/MXFP4/NVFP4/FP8 so every
 * template format is instantiated. */
static inline void ft_cg_cuda_test_spec(ft_cg_cuda_spec_t *s)
{
    memset(s, 0, sizeof(*s));
    s->d_model = 512;
    s->n_heads = 8;
    s->n_kv_heads = 2;
    s->head_dim = 64;
    s->rope_dim = 64;
    s->rope_theta = 1000000.0;
    s->norm_eps = 1e-6f;
    s->n_experts = 16;
    s->n_experts_used = 4;
    s->norm_topk_prob = 1;
    /* every variant: the default-targets compile covers their kernels */
    s->variants = FT_CG_CUDA_VAR_BIAS | FT_CG_CUDA_VAR_SWIGLU_OAI | FT_CG_CUDA_VAR_SINKS |
                  FT_CG_CUDA_VAR_ROPE_TABLE | FT_CG_CUDA_VAR_ROUTER_EXT | FT_CG_CUDA_VAR_OUT_GATE;
    const ft_cg_cuda_matmul_t m[] = {
        {FT_DTYPE_BF16, 512, 0}, {FT_DTYPE_Q8_0, 512, 0}, {FT_DTYPE_Q4_K, 512, 1},
        {FT_DTYPE_Q6_K, 256, 1}, {FT_DTYPE_Q4_0, 512, 0}, {FT_DTYPE_F32, 512, 0},
        {FT_DTYPE_F16, 512, 0},   {FT_DTYPE_MXFP4, 512, 1}, {FT_DTYPE_NVFP4, 512, 0},
        {FT_DTYPE_FP8, 256, 1},
    };
    s->n_matmuls = sizeof(m) / sizeof(m[0]);
    memcpy(s->matmuls, m, sizeof(m));
}

static inline double ft_cg_test_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline void ft_cg_cuda_test_compile(const uint32_t *archs, uint32_t n)
{
    ft_cg_cuda_spec_t spec;
    ft_cg_cuda_test_spec(&spec);
    ft_cg_cuda_source_t src;
    FT_CG_ASSERT_OK(ft_cg_cuda_emit(&spec, &src));
    ft_cg_cuda_images_t img;
    const double t0 = ft_cg_test_now();
    FT_CG_ASSERT_OK(ft_cg_cuda_compile(&src, archs, n, &img));
    fprintf(stderr, "cuda codegen: %u kernels, %zu bytes of CUDA C, %u targets + PTX in %.1f s\n",
            src.n_kernels, src.len, n, ft_cg_test_now() - t0);
    assert_int_equal(img.n_images, n + 1);
    for (uint32_t i = 0; i < n; i++) {
        const ft_cg_cuda_image_t *c = &img.images[i];
        assert_int_equal(c->sm, archs[i]);
        assert_false(c->is_ptx);
        assert_true(c->n_bytes > 64);
        assert_memory_equal(c->data,
                            "\x7f"
                            "ELF",
                            4);
        fprintf(stderr, "  sm_%u: cubin %zu bytes\n", c->sm, c->n_bytes);
    }
    const ft_cg_cuda_image_t *ptx = &img.images[n];
    assert_true(ptx->is_ptx);
    assert_int_equal(ptx->sm, archs[0]);
    assert_int_equal(ptx->data[ptx->n_bytes - 1], 0);
    char target[32];
    snprintf(target, sizeof(target), ".target sm_%u", archs[0]);
    assert_non_null(strstr((const char *)ptx->data, target));
    for (uint32_t k = 0; k < src.n_kernels; k++) {
        char entry[96];
        snprintf(entry, sizeof(entry), ".entry %s(", src.kernels[k].name);
        if (!strstr((const char *)ptx->data, entry)) fail_msg("PTX lacks %s", entry);
    }
    ft_cg_cuda_images_free(&img);
    ft_cg_cuda_source_free(&src);
}

#endif
