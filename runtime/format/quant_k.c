/* K-quants: Q4_K, Q6_K and the Q8_K activation format (Q2_K, Q3_K and
 * Q5_K: quant_k_low.c, sharing the fitting helpers of quant_k_fit.h), ported from ggml's
 * reference code (ggml-quants.c: quantize_row_q4_K_ref with
 * make_qkx2_quants, quantize_row_q6_K_ref with make_qx_quants,
 * quantize_row_q8_K_ref, dequantize_row_*). The float expressions keep
 * ggml's operand order so that, without FMA contraction, every rounding is
 * the same and the bytes written are identical.
 *
 * Layouts (ggml-common.h, little-endian, packed):
 *   block_q4_K (144 B): fp16 d @0, fp16 dmin @2, scales[12] @4, qs[128] @16
 *   block_q6_K (210 B): ql[128] @0, qh[64] @128, int8 scales[16] @192,
 *                       fp16 d @208
 *   block_q8_K (292 B): float d @0, int8 qs[256] @4, int16 bsums[16] @260 */
#include "quant_k_fit.h"

#include <math.h>
#include <string.h>

float ft_qk_make_qx_quants(int n, int nmax, const float *x, int8_t *L, int rmse_type,
                                  const float *qw)
{
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < FT_QK_GROUP_MAX_EPS) { /* all zero */
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    float iscale = -nmax / max;
    if (rmse_type == 0) {
        for (int i = 0; i < n; ++i) {
            const int l = ft_qk_nearest_int(iscale * x[i]);
            L[i] = (int8_t)(nmax + FT_QK_MAX(-nmax, FT_QK_MIN(nmax - 1, l)));
        }
        return 1 / iscale;
    }
    bool return_early = false;
    if (rmse_type < 0) {
        rmse_type = -rmse_type;
        return_early = true;
    }
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = ft_qk_nearest_int(iscale * x[i]);
        l = FT_QK_MAX(-nmax, FT_QK_MIN(nmax - 1, l));
        L[i] = (int8_t)(l + nmax);
        const float w = qw ? qw[i] : rmse_type == 1 ? x[i] * x[i] : rmse_type == 2 ? 1 : rmse_type == 3 ? fabsf(x[i]) : sqrtf(fabsf(x[i]));
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    if (return_early)
        return suml2 > 0 ? 0.5f * (scale + 1 / iscale) : 1 / iscale;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0)
            continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            int l = ft_qk_nearest_int(iscale * x[i]);
            l = FT_QK_MAX(-nmax, FT_QK_MIN(nmax - 1, l));
            const float w = qw ? qw[i] : rmse_type == 1 ? x[i] * x[i] : rmse_type == 2 ? 1 : rmse_type == 3 ? fabsf(x[i]) : sqrtf(fabsf(x[i]));
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                const int l = ft_qk_nearest_int(iscale * x[i]);
                L[i] = (int8_t)(nmax + FT_QK_MAX(-nmax, FT_QK_MIN(nmax - 1, l)));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

float ft_qk_make_qkx2_quants(int n, int nmax, const float *x, const float *weights,
                                    uint8_t *L, float *the_min, uint8_t *Laux, float rmin,
                                    float rdelta, int nstep, bool use_mad)
{
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *the_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        const int l = ft_qk_nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)FT_QK_MAX(0, FT_QK_MIN(nmax, l));
        float diff = scale * L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        const float w = weights[i];
        best_error += w * diff;
    }
    if (nstep < 1) {
        *the_min = -min;
        return scale;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l = ft_qk_nearest_int(iscale * (x[i] - min));
            l = FT_QK_MAX(0, FT_QK_MIN(nmax, l));
            Laux[i] = (uint8_t)l;
            const float w = weights[i];
            sum_l += w * l;
            sum_l2 += w * l * l;
            sum_xl += w * l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                const float w = weights[i];
                cur_error += w * diff;
            }
            if (cur_error < best_error) {
                memcpy(L, Laux, (size_t)n);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

void ft_qk_fit_k4(const float *x, uint8_t *blk, uint8_t *L, int nmax, float rmin, int nstep)
{
    uint8_t Laux[32];
    float weights[32], mins[FT_QK_K / 32], scales[FT_QK_K / 32];
    uint8_t *sc_bytes = blk + 4;
    float max_scale = 0; /* as we are deducting the min, scales are always positive */
    float max_min = 0;
    for (int j = 0; j < (int)FT_QK_K / 32; ++j) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l)
            sum_x2 += x[32 * j + l] * x[32 * j + l];
        const float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; ++l)
            weights[l] = av_x + fabsf(x[32 * j + l]);
        scales[j] = ft_qk_make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j],
                                           Laux, rmin, 0.1f, nstep, false);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < (int)FT_QK_K / 32; ++j) {
        uint8_t ls = (uint8_t)ft_qk_nearest_int(inv_scale * scales[j]);
        uint8_t lm = (uint8_t)ft_qk_nearest_int(inv_min * mins[j]);
        ls = FT_QK_MIN(63, ls);
        lm = FT_QK_MIN(63, lm);
        if (j < 4) {
            sc_bytes[j] = ls;
            sc_bytes[j + 4] = lm;
        } else {
            sc_bytes[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
            sc_bytes[j - 4] |= (uint8_t)((ls >> 4) << 6);
            sc_bytes[j - 0] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    ft_qk_put_f16(blk, max_scale / 63.f);
    ft_qk_put_f16(blk + 2, max_min / 63.f);
    const float dd = ft_qk_get_f16(blk), dmin = ft_qk_get_f16(blk + 2);
    for (int j = 0; j < (int)FT_QK_K / 32; ++j) {
        uint8_t sc, m;
        ft_qk_get_scale_min_k4(j, sc_bytes, &sc, &m);
        const float d = dd * sc;
        if (!d) continue;
        const float dm = dmin * m;
        for (int ii = 0; ii < 32; ++ii) {
            const int l = ft_qk_nearest_int((x[32 * j + ii] + dm) / d);
            L[32 * j + ii] = (uint8_t)FT_QK_MAX(0, FT_QK_MIN(nmax, l));
        }
    }
}

static void ft_qk_quantize_block_q4_k(const float *x, uint8_t *blk)
{
    uint8_t L[FT_QK_K];
    uint8_t *qs = blk + 16;
    ft_qk_fit_k4(x, blk, L, 15, -1.f, 20);
    for (int j = 0; j < (int)FT_QK_K; j += 64) {
        for (int l = 0; l < 32; ++l)
            qs[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
        qs += 32;
    }
}

void ft_quantize_row_q4_k(const float *x, void *y, uint64_t n)
{
    uint8_t *out = y;
    for (uint64_t i = 0; i < n / FT_QK_K; i++)
        ft_qk_quantize_block_q4_k(x + i * FT_QK_K, out + i * FT_Q4_K_BLOCK_BYTES);
}

void ft_dequantize_row_q4_k(const void *x, float *y, uint64_t n)
{
    const uint8_t *in = x;
    for (uint64_t i = 0; i < n / FT_QK_K; i++) {
        const uint8_t *blk = in + i * FT_Q4_K_BLOCK_BYTES;
        const uint8_t *q = blk + 16;
        const float d = ft_qk_get_f16(blk), min = ft_qk_get_f16(blk + 2);
        int is = 0;
        uint8_t sc, m;
        for (int j = 0; j < (int)FT_QK_K; j += 64) {
            ft_qk_get_scale_min_k4(is + 0, blk + 4, &sc, &m);
            const float d1 = d * sc, m1 = min * m;
            ft_qk_get_scale_min_k4(is + 1, blk + 4, &sc, &m);
            const float d2 = d * sc, m2 = min * m;
            for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
            for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
            q += 32;
            is += 2;
        }
    }
}

static void ft_qk_quantize_block_q6_k(const float *x, uint8_t *blk)
{
    int8_t L[FT_QK_K];
    float scales[FT_QK_K / 16];
    uint8_t *ql = blk, *qh = blk + 128, *sc_bytes = blk + 192;
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < (int)FT_QK_K / 16; ++ib) {
        const float scale = ft_qk_make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1, NULL);
        scales[ib] = scale;
        const float abs_scale = fabsf(scale);
        if (abs_scale > max_abs_scale) {
            max_abs_scale = abs_scale;
            max_scale = scale;
        }
    }
    if (max_abs_scale < FT_QK_GROUP_MAX_EPS) {
        memset(blk, 0, FT_Q6_K_BLOCK_BYTES); /* d = +0 too */
        return;
    }
    const float iscale = -128.f / max_scale;
    ft_qk_put_f16(blk + 208, 1 / iscale);
    for (int ib = 0; ib < (int)FT_QK_K / 16; ++ib) {
        const int8_t s = (int8_t)FT_QK_MIN(127, ft_qk_nearest_int(iscale * scales[ib]));
        memcpy(sc_bytes + ib, &s, 1);
    }
    const float dd = ft_qk_get_f16(blk + 208);
    for (int j = 0; j < (int)FT_QK_K / 16; ++j) {
        int8_t s;
        memcpy(&s, sc_bytes + j, 1);
        const float d = dd * s;
        if (!d) continue;
        for (int ii = 0; ii < 16; ++ii) {
            int l = ft_qk_nearest_int(x[16 * j + ii] / d);
            l = FT_QK_MAX(-32, FT_QK_MIN(31, l));
            L[16 * j + ii] = (int8_t)(l + 32);
        }
    }
    for (int j = 0; j < (int)FT_QK_K; j += 128) {
        for (int l = 0; l < 32; ++l) {
            const uint8_t q1 = L[j + l + 0] & 0xF, q2 = L[j + l + 32] & 0xF;
            const uint8_t q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
            ql[l + 0] = (uint8_t)(q1 | (q3 << 4));
            ql[l + 32] = (uint8_t)(q2 | (q4 << 4));
            qh[l] = (uint8_t)((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                              ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
        }
        ql += 64;
        qh += 32;
    }
}

void ft_quantize_row_q6_k(const float *x, void *y, uint64_t n)
{
    uint8_t *out = y;
    for (uint64_t i = 0; i < n / FT_QK_K; i++)
        ft_qk_quantize_block_q6_k(x + i * FT_QK_K, out + i * FT_Q6_K_BLOCK_BYTES);
}

void ft_dequantize_row_q6_k(const void *x, float *y, uint64_t n)
{
    const uint8_t *in = x;
    for (uint64_t i = 0; i < n / FT_QK_K; i++) {
        const uint8_t *blk = in + i * FT_Q6_K_BLOCK_BYTES;
        const uint8_t *ql = blk, *qh = blk + 128;
        int8_t sc[FT_QK_K / 16];
        memcpy(sc, blk + 192, sizeof(sc));
        const float d = ft_qk_get_f16(blk + 208);
        for (int n128 = 0; n128 < 2; n128++) {
            const int8_t *s = sc + 8 * n128;
            for (int l = 0; l < 32; ++l) {
                const int is = l / 16;
                const int8_t q1 = (int8_t)(((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
                const int8_t q2 = (int8_t)(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
                const int8_t q3 = (int8_t)(((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
                const int8_t q4 = (int8_t)(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
                y[l + 0] = d * s[is + 0] * q1;
                y[l + 32] = d * s[is + 2] * q2;
                y[l + 64] = d * s[is + 4] * q3;
                y[l + 96] = d * s[is + 6] * q4;
            }
            y += 128;
            ql += 64;
            qh += 32;
        }
    }
}

void ft_quantize_row_q8_k(const float *x, void *y, uint64_t n)
{
    uint8_t *out = y;
    for (uint64_t i = 0; i < n / FT_QK_K; i++, x += FT_QK_K) {
        uint8_t *blk = out + i * FT_Q8_K_BLOCK_BYTES;
        int8_t qs[FT_QK_K];
        int16_t bsums[FT_QK_K / 16];
        float max = 0, amax = 0;
        for (int j = 0; j < (int)FT_QK_K; ++j) {
            const float ax = fabsf(x[j]);
            if (ax > amax) {
                amax = ax;
                max = x[j];
            }
        }
        if (!amax) {
            /* ggml leaves bsums unwritten here; zero is what they sum to. */
            memset(blk, 0, FT_Q8_K_BLOCK_BYTES);
            continue;
        }
        const float iscale = -127.f / max;
        for (int j = 0; j < (int)FT_QK_K; ++j) {
            const int v = ft_qk_nearest_int(iscale * x[j]);
            qs[j] = (int8_t)FT_QK_MIN(127, v);
        }
        for (int j = 0; j < (int)FT_QK_K / 16; ++j) {
            int sum = 0;
            for (int ii = 0; ii < 16; ++ii)
                sum += qs[j * 16 + ii];
            bsums[j] = (int16_t)sum;
        }
        const float d = 1 / iscale;
        memcpy(blk, &d, 4);
        memcpy(blk + 4, qs, sizeof(qs));
        memcpy(blk + 4 + FT_QK_K, bsums, sizeof(bsums));
    }
}

void ft_dequantize_row_q8_k(const void *x, float *y, uint64_t n)
{
    const uint8_t *in = x;
    for (uint64_t i = 0; i < n / FT_QK_K; i++) {
        const uint8_t *blk = in + i * FT_Q8_K_BLOCK_BYTES;
        float d;
        int8_t qs[FT_QK_K];
        memcpy(&d, blk, 4);
        memcpy(qs, blk + 4, sizeof(qs));
        for (int j = 0; j < (int)FT_QK_K; ++j)
            *y++ = d * qs[j];
    }
}
