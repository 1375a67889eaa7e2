/* CPU expert-GEMV throughput per weight format at real expert shapes:
 * Qwen3-30B-A3B's experts are gate and up [768 x 2048] and down
 * [2048 x 768] (rows x cols), one token at a time as at decode. */
#include "figure.h"
#include "gemv_bench.h"
#include "profiler.h"

#include <stdio.h>
#include <stdlib.h>

const ft_dtype_t ft_hwp_gemv_formats[FT_HWP_N_GEMV_FORMATS] = {
    FT_DTYPE_Q8_0,  FT_DTYPE_Q4_K,    FT_DTYPE_Q6_K,   FT_DTYPE_BF16,    FT_DTYPE_F16,
    FT_DTYPE_F32,   FT_DTYPE_Q4_0,    FT_DTYPE_MXFP4,  FT_DTYPE_NVFP4,   FT_DTYPE_FP8,
    FT_DTYPE_Q2_K,  FT_DTYPE_Q3_K,    FT_DTYPE_Q5_K,   FT_DTYPE_Q4_1,    FT_DTYPE_Q5_0,
    FT_DTYPE_Q5_1,  FT_DTYPE_IQ4_NL,  FT_DTYPE_IQ4_XS, FT_DTYPE_IQ2_XXS, FT_DTYPE_IQ2_XS,
    FT_DTYPE_IQ2_S, FT_DTYPE_IQ3_XXS, FT_DTYPE_IQ3_S,  FT_DTYPE_TQ1_0,   FT_DTYPE_TQ2_0,
    FT_DTYPE_IQ1_S, FT_DTYPE_IQ1_M,
};

static const uint32_t ft_hwp_shapes[][2] = {{768, 2048}, {2048, 768}};

FT_WARN_UNUSED static ft_status_t ft_hwp_gemv_one(ft_threadpool_t *pool, ft_dtype_t t, uint32_t rows, uint32_t cols,
                                   uint64_t bytes, uint32_t n_runs, Fthw__GemvRate **out)
{
    ft_hwp_gemv_t *g = NULL;
    ft_status_t st = ft_hwp_gemv_create(pool, t, rows, cols, bytes, &g);
    if (st)
        return st;
    double gbs[64];
    if (n_runs > 64)
        n_runs = 64;
    ft_hwp_gemv_pass(g); /* warm-up: page faults, TLB, frequency */
    for (uint32_t i = 0; i < n_runs; i++)
        gbs[i] = (double)ft_hwp_gemv_bytes(g) / ft_hwp_gemv_pass(g) / 1e9;
    char note[200];
    snprintf(note, sizeof(note),
             "ft_cpu_matmul, 1 token, %llu matrices of %ux%u (%.1f MiB per pass), %u threads",
             (unsigned long long)ft_hwp_gemv_n_mats(g), rows, cols, (double)ft_hwp_gemv_bytes(g) / (1 << 20),
             ft_threadpool_size(pool));
    ft_hwp_gemv_destroy(g);
    Fthw__GemvRate *r = malloc(sizeof(*r));
    if (!r)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "GEMV figure: out of memory");
    fthw__gemv_rate__init(r);
    r->format = ft_hwp_strdup(ft_dtype_name(t));
    r->rows = rows;
    r->cols = cols;
    r->n_threads = ft_threadpool_size(pool);
    r->weight_gbs = ft_hwp_figure(gbs, n_runs, FTHW__SOURCE__MEASURED, note);
    if (!r->format || !r->weight_gbs) {
        fthw__gemv_rate__free_unpacked(r, NULL);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "GEMV figure: out of memory");
    }
    *out = r;
    return FT_OK;
}

ft_status_t ft_hwp_cpu_gemv(ft_threadpool_t *pool, const ft_profile_options_t *opts, uint64_t bytes,
                            Fthw__Cpu *cpu, double frac0, double frac1)
{
    uint32_t n_runs = opts->n_runs ? opts->n_runs : (opts->quick ? 3 : 7);
    size_t n_shapes = sizeof(ft_hwp_shapes) / sizeof(ft_hwp_shapes[0]);
    size_t total = FT_HWP_N_GEMV_FORMATS * n_shapes, done = 0;
    for (size_t f = 0; f < FT_HWP_N_GEMV_FORMATS; f++) {
        for (size_t s = 0; s < n_shapes; s++, done++) {
            ft_dtype_t t = ft_hwp_gemv_formats[f];
            if (opts->progress) {
                char stage[64];
                snprintf(stage, sizeof(stage), "CPU GEMV %s %ux%u", ft_dtype_name(t), ft_hwp_shapes[s][0],
                         ft_hwp_shapes[s][1]);
                opts->progress(opts->progress_user, stage, frac0 + (frac1 - frac0) * (double)done / (double)total);
            }
            Fthw__GemvRate *r = NULL;
            ft_status_t st = ft_hwp_gemv_one(pool, t, ft_hwp_shapes[s][0], ft_hwp_shapes[s][1], bytes,
                                             n_runs, &r);
            if (st)
                return ft_status_annotate(st, "CPU GEMV %s", ft_dtype_name(t));
            if (ft_hwp_push(&cpu->gemv, &cpu->n_gemv, r, 1))
                return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "GEMV figure: out of memory");
        }
    }
    return FT_OK;
}
