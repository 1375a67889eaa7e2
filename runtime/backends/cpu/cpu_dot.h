/* Internal to the CPU kernels: the row-by-row dot products that
 * ft_cpu_matmul is built from, in two tiers with one signature:
 *   *_c     portable C (dot_float.c, dot_q8.c, dot_legacy.c, dot_k.c,
 *           dot_k_low.c, dot_iq4.c, dot_iq_grid.c, dot_tq.c, dot_fp.c), always
 *           built, the numerical reference of the x86 path;
 *   *_avx2  AVX2 intrinsics (dot_avx2.c, dot_fp_avx2.c), built when the
 *           compiler targets AVX2 (-march=native on such a machine).
 * ft_cpu_dot_for picks the tier at compile time (matmul.c).
 *
 * A dot takes one weight row of `cols` elements in its storage format and
 * one prepared activation row (float32, Q8_0 blocks or Q8_K blocks, see
 * kernels.h) and returns their dot product, accumulated in float32. Within
 * a block the quantized formats use exact integer sums, as ggml does. */
#ifndef FT_CPU_DOT_H
#define FT_CPU_DOT_H

#include "kernels.h"

#include <stdint.h>
#include <string.h>

#if defined(__F16C__)
#include <immintrin.h>
#endif

typedef float (*ft_cpu_dot_fn)(uint32_t cols, const void *w_row, const void *x_row);

float ft_cpu_dot_f32_c(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_f16_c(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_bf16_c(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_q8_0_c(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_q4_0_c(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_q4_k_c(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_q6_k_c(uint32_t cols, const void *w_row, const void *x_row);
/* dot_k_low.c: Q2_K, Q3_K, Q5_K (Q8_K activations); no AVX2 tier yet. */
float ft_cpu_dot_q2_k_c(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_q3_k_c(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_q5_k_c(uint32_t cols, const void *w_row, const void *x_row);
/* dot_legacy.c: Q4_1, Q5_0, Q5_1 (Q8_0 activations); no AVX2 tier yet. */
float ft_cpu_dot_q4_1_c(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_q5_0_c(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_q5_1_c(uint32_t cols, const void *w_row, const void *x_row);
/* dot_iq4.c: IQ4_NL (Q8_0 activations), IQ4_XS (Q8_K). */
float ft_cpu_dot_iq4_nl_c(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_iq4_xs_c(uint32_t cols, const void *w_row, const void *x_row);
/* dot_iq_grid.c: IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M (Q8_K). */
float ft_cpu_dot_iq2_xxs_c(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_iq2_xs_c(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_iq2_s_c(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_iq3_xxs_c(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_iq3_s_c(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_iq1_s_c(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_iq1_m_c(uint32_t cols, const void *w_row, const void *x_row);
/* dot_tq.c: TQ1_0, TQ2_0 (Q8_K). */
float ft_cpu_dot_tq1_0_c(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_tq2_0_c(uint32_t cols, const void *w_row, const void *x_row);
/* dot_fp.c (and dot_fp_avx2.c): MXFP4, NVFP4 (Q8_0 activations), FP8
 * (float32 activations). */
float ft_cpu_dot_mxfp4_c(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_nvfp4_c(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_fp8_c(uint32_t cols, const void *w_row, const void *x_row);

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define FT_CPU_HAVE_AVX2 1
float ft_cpu_dot_f32_avx2(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_f16_avx2(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_bf16_avx2(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_q8_0_avx2(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_q4_0_avx2(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_q4_k_avx2(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_q6_k_avx2(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_mxfp4_avx2(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_nvfp4_avx2(uint32_t cols, const void *w_row, const void *x_row);
float ft_cpu_dot_fp8_avx2(uint32_t cols, const void *w_row, const void *x_row);
#else
#define FT_CPU_HAVE_AVX2 0
#endif

/* The dot used for wtype (the fastest tier built), or the portable one
 * when portable != 0; NULL for formats the kernels do not compute. */
ft_cpu_dot_fn ft_cpu_dot_for(ft_dtype_t wtype, int portable);

/* Block geometry the kernels rely on (ggml-common.h; FP8: dtype.h). */
enum {
    FT_CPU_QK8_0 = 32,
    FT_CPU_Q8_0_BYTES = 34, /* fp16 d, int8 qs[32] */
    FT_CPU_Q4_0_BYTES = 18, /* fp16 d, uint8 qs[16] */
    FT_CPU_Q4_1_BYTES = 20, /* fp16 d, fp16 m, uint8 qs[16] */
    FT_CPU_Q5_0_BYTES = 22, /* fp16 d, u32 qh, uint8 qs[16] */
    FT_CPU_Q5_1_BYTES = 24, /* fp16 d, fp16 m, u32 qh, uint8 qs[16] */
    FT_CPU_QK_K = 256,
    FT_CPU_Q2_K_BYTES = 84,    /* scales[16], qs[64], fp16 d, fp16 dmin */
    FT_CPU_Q3_K_BYTES = 110,   /* hmask[32], qs[64], scales[12], fp16 d */
    FT_CPU_Q4_K_BYTES = 144,   /* fp16 d, fp16 dmin, scales[12], qs[128] */
    FT_CPU_Q5_K_BYTES = 176,   /* fp16 d, fp16 dmin, scales[12], qh[32], qs[128] */
    FT_CPU_Q6_K_BYTES = 210,   /* ql[128], qh[64], int8 scales[16], fp16 d */
    FT_CPU_Q8_K_BYTES = 292,   /* float d, int8 qs[256], int16 bsums[16] */
    FT_CPU_IQ4_NL_BYTES = 18,  /* fp16 d, qs[16] (32 elements) */
    FT_CPU_IQ4_XS_BYTES = 136, /* fp16 d, u16 scales_h, scales_l[4], qs[128] */
    FT_CPU_IQ2_XXS_BYTES = 66, /* IQ grid formats: quant_iq_grid.c */
    FT_CPU_IQ2_XS_BYTES = 74,
    FT_CPU_IQ2_S_BYTES = 82,
    FT_CPU_IQ3_XXS_BYTES = 98,
    FT_CPU_IQ3_S_BYTES = 110,
    FT_CPU_IQ1_S_BYTES = 50,
    FT_CPU_IQ1_M_BYTES = 56,
    FT_CPU_TQ1_0_BYTES = 54, /* qs[48], qh[4], fp16 d */
    FT_CPU_TQ2_0_BYTES = 66, /* qs[64], fp16 d */
    FT_CPU_MXFP4_BYTES = 17, /* E8M0 e, qs[16] (32 elements) */
    FT_CPU_NVFP4_ELEMS = 64,
    FT_CPU_NVFP4_BYTES = 36, /* UE4M3 d[4], qs[32] */
    FT_CPU_FP8_ELEMS = 128,
    FT_CPU_FP8_BYTES = 132, /* float d, E4M3 qs[128] */
};

/* fp16 -> fp32, exact: the F16C instruction when built for it, else the
 * branch-free bit manipulation of convert.c (inlined here because the dot
 * products convert two scales per 32 elements). */
static inline float ft_cpu_f16(const uint8_t *p)
{
    const uint16_t h = (uint16_t)(p[0] | (p[1] << 8));
#if defined(__F16C__)
    return _cvtsh_ss(h);
#else
    const uint32_t w = (uint32_t)h << 16;
    const uint32_t sign = w & 0x80000000u, two_w = w + w;
    uint32_t u = (two_w >> 4) + (0xE0u << 23);
    float normalized, denormalized;
    memcpy(&normalized, &u, 4);
    normalized *= 0x1.0p-112f;
    u = (two_w >> 17) | (126u << 23);
    memcpy(&denormalized, &u, 4);
    denormalized -= 0.5f;
    uint32_t nb, db;
    memcpy(&nb, &normalized, 4);
    memcpy(&db, &denormalized, 4);
    u = sign | (two_w < (1u << 27) ? db : nb);
    float f;
    memcpy(&f, &u, 4);
    return f;
#endif
}

static inline float ft_cpu_f32(const uint8_t *p)
{
    float f;
    memcpy(&f, p, 4);
    return f;
}

/* Unpacks Q4_K's 12 scale bytes into 8 six-bit scales (out[0..7]) and 8
 * six-bit mins (out[8..15]), as ggml's kmask shuffle does. */
static inline void ft_cpu_q4_k_scales(const uint8_t *packed, uint8_t out[16])
{
    const uint32_t kmask1 = 0x3f3f3f3f, kmask2 = 0x0f0f0f0f, kmask3 = 0x03030303;
    uint32_t utmp[4];
    memcpy(utmp, packed, 12);
    utmp[3] = ((utmp[2] >> 4) & kmask2) | (((utmp[1] >> 6) & kmask3) << 4);
    const uint32_t uaux = utmp[1] & kmask1;
    utmp[1] = (utmp[2] & kmask2) | (((utmp[0] >> 6) & kmask3) << 4);
    utmp[2] = uaux;
    utmp[0] &= kmask1;
    memcpy(out, utmp, 16);
}

#endif
