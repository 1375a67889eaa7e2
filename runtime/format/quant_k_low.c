/* K-quants Q2_K, Q3_K and Q5_K, ported from ggml's reference code
 * (ggml-quants.c: quantize_row_q2_K_ref and quantize_row_q5_K_ref with
 * make_qkx2_quants, quantize_row_q3_K_ref with make_q3_quants,
 * dequantize_row_*). As in quant_k.c the float expressions keep ggml's
 * operand order, so without FMA contraction the bytes are ggml's.
 *
 * Layouts (ggml-common.h, little-endian, packed):
 *   block_q2_K  (84 B): scales[16] @0 (low nibble scale, high nibble min
 *                       per 16 elements), qs[64] @16, fp16 d @80,
 *                       fp16 dmin @82; x = d * sc * q - dmin * m, q 0..3
 *   block_q3_K (110 B): hmask[32] @0, qs[64] @32, scales[12] @96 (sixteen
 *                       6-bit scales, stored + 32), fp16 d @108;
 *                       x = d * (sc - 32) * (q - 4), q 0..7
 *   block_q5_K (176 B): fp16 d @0, fp16 dmin @2, scales[12] @4 (as Q4_K),
 *                       qh[32] @16, qs[128] @48; x = d * sc * q - dmin * m,
 *                       q 0..31
 * Element order inside Q2_K/Q3_K: element 128h + 32j + l (h 0..1, j 0..3,
 * l 0..31) is bits 2j of qs[32h + l] (and for Q3_K bit 4h + j of
 * hmask[l]); its scale is number 8h + 2j + l / 16 = element / 16. Q5_K:
 * element 64g + 32k + l is nibble k of qs[32g + l] plus bit 2g + k of
 * qh[l] as 16; scale and min number 2g + k = element / 32. */
#include "quant_k_fit.h"

#include <math.h>
#include <string.h>

/* Q2_K's and Q3_K's 2-bit planes: L[128h + 32j + l] into bits 2j of
 * qs[32h + l]. */
static void ft_qk_pack_2bit(const uint8_t *L, uint8_t *qs)
{
    for (int j = 0; j < (int)FT_QK_K; j += 128)
        for (int l = 0; l < 32; ++l)
            qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                      (L[j + l + 96] << 6));
}

static void ft_qk_quantize_block_q2_k(const float *x, uint8_t *blk)
{
    uint8_t L[FT_QK_K], Laux[16], *sc = blk;
    float weights[16], mins[FT_QK_K / 16], scales[FT_QK_K / 16];
    const float q4scale = 15.f;
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < (int)FT_QK_K / 16; ++j) {
        for (int l = 0; l < 16; ++l)
            weights[l] = fabsf(x[16 * j + l]);
        scales[j] = ft_qk_make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux,
                                           -0.5f, 0.1f, 15, true);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    /* nearest_int of at most 15.x: ggml stores it in a uint8_t unclamped. */
    if (max_scale > 0) {
        const float iscale = q4scale / max_scale;
        for (int j = 0; j < (int)FT_QK_K / 16; ++j)
            sc[j] = (uint8_t)ft_qk_nearest_int(iscale * scales[j]);
        ft_qk_put_f16(blk + 80, max_scale / q4scale);
    } else {
        memset(sc, 0, FT_QK_K / 16);
        ft_qk_put_f16(blk + 80, 0.f);
    }
    if (max_min > 0) {
        const float iscale = q4scale / max_min;
        for (int j = 0; j < (int)FT_QK_K / 16; ++j)
            sc[j] |= (uint8_t)((unsigned)ft_qk_nearest_int(iscale * mins[j]) << 4);
        ft_qk_put_f16(blk + 82, max_min / q4scale);
    } else {
        ft_qk_put_f16(blk + 82, 0.f);
    }
    for (int j = 0; j < (int)FT_QK_K / 16; ++j) {
        const float d = ft_qk_get_f16(blk + 80) * (sc[j] & 0xF);
        if (!d) continue;
        const float dm = ft_qk_get_f16(blk + 82) * (sc[j] >> 4);
        for (int ii = 0; ii < 16; ++ii) {
            const int l = ft_qk_nearest_int((x[16 * j + ii] + dm) / d);
            L[16 * j + ii] = (uint8_t)FT_QK_MAX(0, FT_QK_MIN(3, l));
        }
    }
    ft_qk_pack_2bit(L, blk + 16);
}

void ft_quantize_row_q2_k(const float *x, void *y, uint64_t n)
{
    uint8_t *out = y;
    for (uint64_t i = 0; i < n / FT_QK_K; i++)
        ft_qk_quantize_block_q2_k(x + i * FT_QK_K, out + i * FT_Q2_K_BLOCK_BYTES);
}

void ft_dequantize_row_q2_k(const void *x, float *y, uint64_t n)
{
    const uint8_t *in = x;
    for (uint64_t i = 0; i < n / FT_QK_K; i++) {
        const uint8_t *blk = in + i * FT_Q2_K_BLOCK_BYTES, *qs = blk + 16;
        const float d = ft_qk_get_f16(blk + 80), min = ft_qk_get_f16(blk + 82);
        for (int e = 0; e < (int)FT_QK_K; e++) {
            const int h = e / 128, j = (e % 128) / 32, l = e % 32;
            const uint8_t sc = blk[e / 16];
            const int q = (qs[32 * h + l] >> (2 * j)) & 3;
            *y++ = d * (sc & 0xF) * q - min * (sc >> 4);
        }
    }
}

/* make_q3_quants with do_rmse: symmetric levels in [-nmax, nmax) weighted
 * by x^2, refined by up to five passes of coordinate descent; L = l + nmax. */
static float ft_qk_make_q3_quants(int n, int nmax, const float *x, int8_t *L)
{
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < FT_QK_GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    const float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = ft_qk_nearest_int(iscale * x[i]);
        l = FT_QK_MAX(-nmax, FT_QK_MIN(nmax - 1, l));
        L[i] = (int8_t)l;
        const float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * L[i];
            if (slx > 0) {
                float sl2 = suml2 - w * L[i] * L[i];
                int new_l = ft_qk_nearest_int(x[i] * sl2 / slx);
                new_l = FT_QK_MAX(-nmax, FT_QK_MIN(nmax - 1, new_l));
                if (new_l != L[i]) {
                    slx += w * x[i] * new_l;
                    sl2 += w * new_l * new_l;
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    for (int i = 0; i < n; ++i)
        L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* Scale j (0..15) of Q3_K's 12 bytes, stored + 32: low nibble in byte j
 * (j < 8) or the high nibble of byte j - 8, top two bits in byte 8 + j % 4
 * at bit 2 (j / 4). */
static inline int ft_qk_q3_scale(const uint8_t *s, int j)
{
    const int lo = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
    return (lo | (((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
}

static void ft_qk_quantize_block_q3_k(const float *x, uint8_t *blk)
{
    int8_t L[FT_QK_K];
    float scales[FT_QK_K / 16];
    uint8_t *hmask = blk, *s = blk + 96;
    float max_scale = 0, amax = 0;
    for (int j = 0; j < (int)FT_QK_K / 16; ++j) {
        scales[j] = ft_qk_make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
        const float scale = fabsf(scales[j]);
        if (scale > amax) {
            amax = scale;
            max_scale = scales[j];
        }
    }
    memset(s, 0, 12);
    if (max_scale) {
        const float iscale = -32.f / max_scale;
        for (int j = 0; j < (int)FT_QK_K / 16; ++j) {
            /* ggml rounds into an int8_t before clamping. */
            int l = (int8_t)ft_qk_nearest_int(iscale * scales[j]);
            l = FT_QK_MAX(-32, FT_QK_MIN(31, l)) + 32;
            if (j < 8)
                s[j] = (uint8_t)(l & 0xF);
            else
                s[j - 8] |= (uint8_t)((l & 0xF) << 4);
            s[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
        }
        ft_qk_put_f16(blk + 108, 1 / iscale);
    } else {
        ft_qk_put_f16(blk + 108, 0.f);
    }
    for (int j = 0; j < (int)FT_QK_K / 16; ++j) {
        const float d = ft_qk_get_f16(blk + 108) * (float)(int8_t)ft_qk_q3_scale(s, j);
        if (!d) continue;
        for (int ii = 0; ii < 16; ++ii) {
            const int l = ft_qk_nearest_int(x[16 * j + ii] / d);
            L[16 * j + ii] = (int8_t)(FT_QK_MAX(-4, FT_QK_MIN(3, l)) + 4);
        }
    }
    /* The high bit of element 32m + r (m 0..7) is bit m of hmask[r]. */
    memset(hmask, 0, FT_QK_K / 8);
    uint8_t Lu[FT_QK_K];
    for (int j = 0; j < (int)FT_QK_K; ++j) {
        Lu[j] = (uint8_t)L[j];
        if (Lu[j] > 3) {
            hmask[j % 32] |= (uint8_t)(1u << (j / 32));
            Lu[j] = (uint8_t)(Lu[j] - 4);
        }
    }
    ft_qk_pack_2bit(Lu, blk + 32);
}

void ft_quantize_row_q3_k(const float *x, void *y, uint64_t n)
{
    uint8_t *out = y;
    for (uint64_t i = 0; i < n / FT_QK_K; i++)
        ft_qk_quantize_block_q3_k(x + i * FT_QK_K, out + i * FT_Q3_K_BLOCK_BYTES);
}

void ft_dequantize_row_q3_k(const void *x, float *y, uint64_t n)
{
    const uint8_t *in = x;
    for (uint64_t i = 0; i < n / FT_QK_K; i++) {
        const uint8_t *blk = in + i * FT_Q3_K_BLOCK_BYTES, *hmask = blk, *qs = blk + 32;
        const float d_all = ft_qk_get_f16(blk + 108);
        for (int e = 0; e < (int)FT_QK_K; e++) {
            const int h = e / 128, j = (e % 128) / 32, l = e % 32;
            const float dl = d_all * (float)ft_qk_q3_scale(blk + 96, e / 16);
            const int q = ((qs[32 * h + l] >> (2 * j)) & 3) - ((hmask[l] >> (e / 32)) & 1 ? 0 : 4);
            *y++ = dl * (float)q;
        }
    }
}

static void ft_qk_quantize_block_q5_k(const float *x, uint8_t *blk)
{
    uint8_t L[FT_QK_K];
    uint8_t *qh = blk + 16, *ql = blk + 48;
    ft_qk_fit_k4(x, blk, L, 31, -0.5f, 15);
    memset(qh, 0, FT_QK_K / 8);
    uint8_t m1 = 1, m2 = 2;
    for (int n = 0; n < (int)FT_QK_K; n += 64) {
        for (int j = 0; j < 32; ++j) {
            int l1 = L[n + j], l2 = L[n + j + 32];
            if (l1 > 15) {
                l1 -= 16;
                qh[j] |= m1;
            }
            if (l2 > 15) {
                l2 -= 16;
                qh[j] |= m2;
            }
            ql[j] = (uint8_t)(l1 | (l2 << 4));
        }
        m1 = (uint8_t)(m1 << 2);
        m2 = (uint8_t)(m2 << 2);
        ql += 32;
    }
}

void ft_quantize_row_q5_k(const float *x, void *y, uint64_t n)
{
    uint8_t *out = y;
    for (uint64_t i = 0; i < n / FT_QK_K; i++)
        ft_qk_quantize_block_q5_k(x + i * FT_QK_K, out + i * FT_Q5_K_BLOCK_BYTES);
}

void ft_dequantize_row_q5_k(const void *x, float *y, uint64_t n)
{
    const uint8_t *in = x;
    for (uint64_t i = 0; i < n / FT_QK_K; i++) {
        const uint8_t *blk = in + i * FT_Q5_K_BLOCK_BYTES, *qh = blk + 16, *ql = blk + 48;
        const float d = ft_qk_get_f16(blk), min = ft_qk_get_f16(blk + 2);
        for (int sub = 0; sub < 8; sub++) {
            uint8_t sc, m;
            ft_qk_get_scale_min_k4(sub, blk + 4, &sc, &m);
            const float d1 = d * sc, m1 = min * m;
            const int shift = 4 * (sub & 1);
            for (int l = 0; l < 32; ++l) {
                const int q =
                    ((ql[32 * (sub / 2) + l] >> shift) & 0xF) + ((qh[l] >> sub) & 1 ? 16 : 0);
                *y++ = d1 * q - m1;
            }
        }
    }
}
