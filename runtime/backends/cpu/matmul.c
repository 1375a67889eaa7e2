/* ft_cpu_matmul: y = W x for a range of weight rows and n_tok prepared
 * activation rows.
 *
 * Decode (n_tok = 1) streams each weight row once from memory: the job is
 * purely bandwidth, so the loop is just row after row through the fastest
 * dot product. Prefill tiles both ways so that every weight byte still
 * comes from DRAM once: a block of weight rows small enough to stay in L2
 * (FT_MM_W_BLOCK bytes) is dotted with a tile of activation rows that also
 * stays in L2 (FT_MM_X_TILE bytes), tile after tile. */
#include "cpu_dot.h"

enum {
    FT_MM_W_BLOCK = 64 * 1024,  /* bytes of weight rows kept hot */
    FT_MM_X_TILE = 256 * 1024,  /* bytes of prepared activations kept hot */
};

/* The dot products, one row per weight format: the portable one and the
 * AVX2 one where it is built. Formats without a row have no CPU kernel
 * (and must have cpu_act FT_DTYPE_INVALID in dtype.h's table, which
 * test_dtype_table checks). */
#if FT_CPU_HAVE_AVX2
#define FT_DOTS(f) {ft_cpu_dot_##f##_c, ft_cpu_dot_##f##_avx2}
#else
#define FT_DOTS(f) {ft_cpu_dot_##f##_c, NULL}
#endif
#define FT_DOTS_C(f) {ft_cpu_dot_##f##_c, NULL} /* no AVX2 tier */

static const struct {
    ft_cpu_dot_fn portable, avx2;
} ft_cpu_dots[FT_DTYPE_COUNT] = {
    [FT_DTYPE_F32] = FT_DOTS(f32),           [FT_DTYPE_F16] = FT_DOTS(f16),
    [FT_DTYPE_BF16] = FT_DOTS(bf16),         [FT_DTYPE_Q8_0] = FT_DOTS(q8_0),
    [FT_DTYPE_Q4_0] = FT_DOTS(q4_0),         [FT_DTYPE_Q4_K] = FT_DOTS(q4_k),
    [FT_DTYPE_Q6_K] = FT_DOTS(q6_k),         [FT_DTYPE_MXFP4] = FT_DOTS(mxfp4),
    [FT_DTYPE_NVFP4] = FT_DOTS(nvfp4),       [FT_DTYPE_FP8] = FT_DOTS(fp8),
    [FT_DTYPE_Q2_K] = FT_DOTS_C(q2_k),       [FT_DTYPE_Q3_K] = FT_DOTS_C(q3_k),
    [FT_DTYPE_Q5_K] = FT_DOTS_C(q5_k),       [FT_DTYPE_Q4_1] = FT_DOTS_C(q4_1),
    [FT_DTYPE_Q5_0] = FT_DOTS_C(q5_0),       [FT_DTYPE_Q5_1] = FT_DOTS_C(q5_1),
    [FT_DTYPE_IQ4_NL] = FT_DOTS_C(iq4_nl),   [FT_DTYPE_IQ4_XS] = FT_DOTS_C(iq4_xs),
    [FT_DTYPE_IQ2_XXS] = FT_DOTS_C(iq2_xxs), [FT_DTYPE_IQ2_XS] = FT_DOTS_C(iq2_xs),
    [FT_DTYPE_IQ2_S] = FT_DOTS_C(iq2_s),     [FT_DTYPE_IQ3_XXS] = FT_DOTS_C(iq3_xxs),
    [FT_DTYPE_IQ3_S] = FT_DOTS_C(iq3_s),     [FT_DTYPE_TQ1_0] = FT_DOTS_C(tq1_0),
    [FT_DTYPE_TQ2_0] = FT_DOTS_C(tq2_0),     [FT_DTYPE_IQ1_S] = FT_DOTS_C(iq1_s),
    [FT_DTYPE_IQ1_M] = FT_DOTS_C(iq1_m),
};

ft_cpu_dot_fn ft_cpu_dot_for(ft_dtype_t wtype, int portable)
{
    if ((int)wtype <= FT_DTYPE_INVALID || wtype >= FT_DTYPE_COUNT)
        return NULL;
    if (!portable && ft_cpu_dots[wtype].avx2)
        return ft_cpu_dots[wtype].avx2;
    return ft_cpu_dots[wtype].portable;
}

void ft_cpu_matmul(ft_dtype_t wtype, const void *w, size_t w_row_bytes, const void *xp,
                   uint32_t n_tok, uint32_t cols, uint32_t r0, uint32_t r1, float *y, size_t ldy)
{
    const ft_cpu_dot_fn dot = ft_cpu_dot_for(wtype, 0);
    if (!dot || r0 >= r1 || n_tok == 0)
        return;
    const uint8_t *wb = w;
    const uint8_t *xb = xp;
    if (n_tok == 1) {
        for (uint32_t r = r0; r < r1; r++)
            y[r] = dot(cols, wb + (size_t)r * w_row_bytes, xb);
        return;
    }
    const size_t x_row_bytes = ft_cpu_act_row_bytes(wtype, cols);
    const uint32_t rows_per_block =
        w_row_bytes == 0 || w_row_bytes >= FT_MM_W_BLOCK ? 1 : (uint32_t)(FT_MM_W_BLOCK / w_row_bytes);
    const uint32_t toks_per_tile =
        x_row_bytes == 0 || x_row_bytes >= FT_MM_X_TILE ? 1 : (uint32_t)(FT_MM_X_TILE / x_row_bytes);
    for (uint32_t rb = r0; rb < r1; rb += rows_per_block) {
        const uint32_t re = r1 - rb < rows_per_block ? r1 : rb + rows_per_block;
        for (uint32_t t0 = 0; t0 < n_tok; t0 += toks_per_tile) {
            const uint32_t t1 = n_tok - t0 < toks_per_tile ? n_tok : t0 + toks_per_tile;
            for (uint32_t r = rb; r < re; r++) {
                const uint8_t *wr = wb + (size_t)r * w_row_bytes;
                for (uint32_t t = t0; t < t1; t++)
                    y[(size_t)t * ldy + r] = dot(cols, wr, xb + (size_t)t * x_row_bytes);
            }
        }
    }
}
