/* The GPU test harness: one device, one module (compiled by NVRTC for this
 * GPU from the emitted source, or prebuilt images read from a directory
 * where the machine has no NVRTC), one stream, and helpers that upload, launch
 * by kernel name, download and compare with a normalized error
 * ||y - ref|| / ||ref|| (ggml's test-backend-ops measure). A test program:
 * it prints and exits, unlike library code. */
#ifndef FT_TEST_GPU_HARNESS_H
#define FT_TEST_GPU_HARNESS_H

#include "backends/cuda/cuda_device.h"
#include "format/dtype.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct gk {
    ft_cuda_device_t *dev;
    ft_cuda_module_t *mod;
    ft_cu_stream s;
    int n_checks, n_failures;
    uint64_t rng;
} gk_t;

#define GK_OK(expr)                                                                                \
    do {                                                                                           \
        ft_status_t st_ = (expr);                                                                  \
        if (st_) {                                                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, ft_status_message(st_)); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static inline float gk_randn(gk_t *g)
{
    /* xorshift64*, then a sum of four uniforms: roughly normal, std 1. */
    float sum = 0.0f;
    for (int i = 0; i < 4; i++) {
        g->rng ^= g->rng >> 12, g->rng ^= g->rng << 25, g->rng ^= g->rng >> 27;
        sum += (float)((g->rng * 2685821657736338717ull) >> 40) / (float)(1 << 24) - 0.5f;
    }
    return sum * 1.7320508f;
}

static inline void *gk_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of host memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

static inline ft_cu_deviceptr gk_upload(gk_t *g, const void *host, size_t n)
{
    ft_cu_deviceptr p;
    GK_OK(ft_cuda_alloc(g->dev, n ? n : 1, &p));
    if (n) GK_OK(ft_cuda_copy_h2d(g->dev, p, host, n, g->s));
    GK_OK(ft_cuda_stream_sync(g->dev, g->s));
    return p;
}

static inline void gk_download(gk_t *g, void *host, ft_cu_deviceptr p, size_t n)
{
    GK_OK(ft_cuda_copy_d2h(g->dev, host, p, n, g->s));
    GK_OK(ft_cuda_stream_sync(g->dev, g->s));
}

static inline void gk_launch(gk_t *g, const char *name, uint32_t gx, uint32_t gy, uint32_t block,
                             void **params)
{
    ft_cu_function fn;
    GK_OK(ft_cuda_module_function(g->mod, name, &fn));
    const ft_cuda_launch_t geom = {{gx, gy, 1}, {block, 1, 1}, 0};
    GK_OK(ft_cuda_launch_kernel(g->dev, fn, &geom, g->s, params));
}

static inline double gk_nerr(const float *y, const double *ref, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)y[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
        if (!isfinite(y[i])) return INFINITY;
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

static inline void gk_report(gk_t *g, const char *what, double err, double tol)
{
    const int ok = err <= tol;
    g->n_checks++;
    g->n_failures += !ok;
    printf("%-4s %-44s err %.3e  tol %.1e\n", ok ? "ok" : "FAIL", what, err, tol);
}

/* Qwen3-30B-A3B's shapes: d_model 2048, 32 query / 4 KV heads of 128,
 * 128 experts (8 used) with an expert FFN of 768. Every format gets a GEMV,
 * a grouped expert GEMV and a GEMM over 2048 columns; Q4_K and Q6_K also
 * over 768 (the down projection). MXFP4, NVFP4 and FP8 (float formats of
 * gpt-oss and DeepSeek-V3), IQ4_NL, IQ4_XS and the IQ grid formats over 2048. */
enum {
    GK_D = 2048,
    GK_HEADS = 32,
    GK_KV = 4,
    GK_HD = 128,
    GK_EXPERTS = 128,
    GK_USED = 8,
    GK_FFN = 768
};
static const struct {
    ft_dtype_t wtype;
    uint32_t cols;
} gk_matmuls[] = {
    {FT_DTYPE_F32, GK_D},    {FT_DTYPE_F16, GK_D},     {FT_DTYPE_BF16, GK_D},
    {FT_DTYPE_Q8_0, GK_D},   {FT_DTYPE_Q4_0, GK_D},    {FT_DTYPE_Q4_K, GK_D},
    {FT_DTYPE_Q6_K, GK_D},   {FT_DTYPE_Q4_K, GK_FFN},  {FT_DTYPE_Q6_K, GK_FFN},
    {FT_DTYPE_Q8_0, GK_FFN}, {FT_DTYPE_BF16, GK_FFN},  {FT_DTYPE_MXFP4, GK_D},
    {FT_DTYPE_NVFP4, GK_D},  {FT_DTYPE_FP8, GK_D},     {FT_DTYPE_IQ4_NL, GK_D},
    {FT_DTYPE_IQ4_XS, GK_D}, {FT_DTYPE_IQ2_XXS, GK_D}, {FT_DTYPE_IQ2_XS, GK_D},
    {FT_DTYPE_IQ2_S, GK_D},  {FT_DTYPE_IQ3_XXS, GK_D}, {FT_DTYPE_IQ3_S, GK_D},
    {FT_DTYPE_TQ1_0, GK_D},  {FT_DTYPE_TQ2_0, GK_D},   {FT_DTYPE_IQ1_S, GK_D},
    {FT_DTYPE_IQ1_M, GK_D},
};
enum { GK_N_MATMULS = sizeof(gk_matmuls) / sizeof(gk_matmuls[0]) };

/* Kernel images of the test module (data owned, malloc'ed). */
enum { GK_MAX_IMAGES = 8 };
typedef struct gk_images {
    uint32_t n;
    ft_cuda_image_t im[GK_MAX_IMAGES];
} gk_images_t;

/* gpu_images.c: DIR/images.txt lists one image a line, "sm is_ptx file". */
void gk_images_read(const char *dir, gk_images_t *out);
void gk_images_write(const char *dir, const gk_images_t *images);
void gk_images_free(gk_images_t *images);

/* gpu_nvrtc.c (gpu_kernels) emits the test module's source for the
 * shapes below and compiles it for archs (cubins, plus PTX for the
 * lowest); gpu_no_nvrtc.c (gpu_kernels_prebuilt, which runs where NVRTC
 * is absent) says it cannot and exits. */
void gk_images_compile(const uint32_t *archs, uint32_t n, gk_images_t *out);

/* gpu_matmul.c */
void gk_check_matmuls(gk_t *g);
void gk_bench_matmuls(gk_t *g);
/* gpu_layer.c */
void gk_check_layer_ops(gk_t *g);
/* gpu_variants.c: the op variants' kernels (templates/variants.cuh) */
void gk_check_variants(gk_t *g);

#endif
