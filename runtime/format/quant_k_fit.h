/* Internal to the K-quant code (quant_k.c, quant_k_low.c): ggml's fitting
 * helpers (ggml-quants.c), shared so that every K-quant rounds exactly as
 * ggml's quantize_row_*_K_ref does. */
#ifndef FT_FORMAT_QUANT_K_FIT_H
#define FT_FORMAT_QUANT_K_FIT_H

#include "convert.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define FT_QK_MAX(a, b) ((a) > (b) ? (a) : (b))
#define FT_QK_MIN(a, b) ((a) < (b) ? (a) : (b))
#define FT_QK_GROUP_MAX_EPS 1e-15f

/* ggml's nearest_int: round to nearest even via the 1.5 * 2^23 trick.
 * ggml asserts |fval| <= 4194303; hostile or non-finite input gives some
 * int here (no undefined behaviour) that the callers clamp. */
static inline int ft_qk_nearest_int(float fval)
{
    const float val = fval + 12582912.f;
    int i;
    memcpy(&i, &val, sizeof(int));
    return (i & 0x007fffff) - 0x00400000;
}

static inline void ft_qk_put_f16(uint8_t *p, float f)
{
    const uint16_t h = ft_fp32_to_fp16(f);
    p[0] = (uint8_t)(h & 0xff);
    p[1] = (uint8_t)(h >> 8);
}

static inline float ft_qk_get_f16(const uint8_t *p)
{
    return ft_fp16_to_fp32((uint16_t)(p[0] | (p[1] << 8)));
}

/* The 6-bit scale and min of sub-block j (0..7) from Q4_K's and Q5_K's 12
 * packed bytes (ggml's get_scale_min_k4). */
static inline void ft_qk_get_scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m)
{
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
    }
}

/* make_qx_quants: symmetric levels in [-nmax, nmax) for n values,
 * written as L = l + nmax; returns the scale. Weighted by qw, or with
 * rmse_type 1 and qw NULL by x^2 (the only mode Q6_K uses). */
float ft_qk_make_qx_quants(int n, int nmax, const float *x, int8_t *L, int rmse_type,
                           const float *qw);

/* make_qkx2_quants: asymmetric levels L in [0, nmax] with x ~ scale * L -
 * the_min, searched over nstep + 1 candidate scales with weighted least
 * squares (use_mad: absolute instead of squared error). */
float ft_qk_make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                             float *the_min, uint8_t *Laux, float rmin, float rdelta, int nstep,
                             bool use_mad);

/* The part Q4_K (nmax 15, rmin -1, nstep 20) and Q5_K (31, -0.5, 15)
 * share: per 32 elements make_qkx2_quants with weights av_x + |x|, the
 * eight 6-bit scales and mins packed into blk[4..16), fp16 d and dmin into
 * blk[0..4), and the final levels L[256] in [0, nmax] against the rounded
 * scales. The caller packs L. */
void ft_qk_fit_k4(const float *x, uint8_t *blk, uint8_t *L, int nmax, float rmin, int nstep);

#endif
