/* The 4-bit non-linear formats IQ4_NL and IQ4_XS (ggml types 20 and 23):
 * each element is a 4-bit index into one 16-entry int8 codebook, times a
 * scale. Layouts (ggml-common.h, little-endian, packed):
 *   block_iq4_nl (18 B, 32 elements): fp16 d @0, qs[16] @2; element j is
 *     the low nibble of qs[j], element j + 16 its high nibble;
 *     x = d * kvalues[q].
 *   block_iq4_xs (136 B, 256 elements): fp16 d @0, u16 scales_h @2,
 *     scales_l[4] @4, qs[128] @8. Sub-block ib (32 elements, qs[16 ib ..]
 *     as an IQ4_NL block's) has the 6-bit scale ls = nibble ib % 2 of
 *     scales_l[ib / 2] | bits 2 ib of scales_h << 4; x = d (ls - 32)
 *     kvalues[q].
 * kvalues is ggml's kvalues_iq4nl (below).
 *
 * The quantizer is a port of ggml's quantize_iq4_nl / quantize_iq4_xs
 * without an importance matrix (what llama-quantize runs without
 * --imatrix): quantize_row_iq4_nl_impl with weights x^2 and ntry 7,
 * keeping ggml's float expressions so that the bytes are ggml's. (ggml's
 * quantize_row_iq4_nl_ref, used only by its own tests, runs the same
 * fit with ntry -1; files come from the former.) */
#include "convert.h"
#include "quant_k_fit.h"

#include <math.h>
#include <string.h>

/* ggml-common.h's kvalues_iq4nl. */
const int8_t ft_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                     1,    13,   25,  38,  53,  69,  89,  113};

enum { FT_IQ4_NTRY = 7, FT_IQ4_SUB = 32 };

/* ggml's best_index_int8: the index of the codebook value nearest x (ties
 * to the upper one), by bisection. NaN lands on the last index. */
static int ft_iq4_best_index(float x)
{
    const int8_t *val = ft_kvalues_iq4nl;
    if (x <= val[0]) return 0;
    if (x >= val[15]) return 15;
    int ml = 0, mu = 15;
    while (mu - ml > 1) {
        const int mav = (ml + mu) / 2;
        if (x < val[mav])
            mu = mav;
        else
            ml = mav;
    }
    return x - val[mu - 1] < val[mu] - x ? mu - 1 : mu;
}

/* The scale of one 32-element sub-block xb, fitted as ggml does (weighted
 * least squares with weights x^2 over 2 ntry + 2 trial scales); its
 * indices in L. 0 (and L untouched) for an all-zero sub-block. */
static float ft_iq4_fit(const float *xb, uint8_t *L)
{
    float weight[FT_IQ4_SUB];
    for (int j = 0; j < FT_IQ4_SUB; ++j)
        weight[j] = xb[j] * xb[j];
    float amax = 0, max = 0;
    for (int j = 0; j < FT_IQ4_SUB; ++j) {
        const float ax = fabsf(xb[j]);
        if (ax > amax) {
            amax = ax;
            max = xb[j];
        }
    }
    if (amax < FT_QK_GROUP_MAX_EPS) {
        memset(L, 0, FT_IQ4_SUB);
        return 0;
    }
    const int8_t *values = ft_kvalues_iq4nl;
    float d = -max / values[0];
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < FT_IQ4_SUB; ++j) {
        const float al = id * xb[j];
        const int l = ft_iq4_best_index(al);
        L[j] = (uint8_t)l;
        const float q = values[l];
        const float w = weight[j];
        sumqx += w * q * xb[j];
        sumq2 += w * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int itry = -FT_IQ4_NTRY; itry <= FT_IQ4_NTRY; ++itry) {
        id = (itry + values[0]) / max;
        sumqx = sumq2 = 0;
        for (int j = 0; j < FT_IQ4_SUB; ++j) {
            const float al = id * xb[j];
            const int l = ft_iq4_best_index(al);
            const float q = values[l];
            const float w = weight[j];
            sumqx += w * q * xb[j];
            sumq2 += w * q * q;
        }
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

/* Element j of the sub-block in the low nibble of qs[j], j + 16 high. */
static void ft_iq4_pack(const uint8_t *L, uint8_t *qs)
{
    for (int j = 0; j < 16; ++j)
        qs[j] = (uint8_t)(L[j] | (L[16 + j] << 4));
}

void ft_quantize_row_iq4_nl(const float *x, void *vy, uint64_t n)
{
    uint8_t *y = vy;
    for (uint64_t b = 0; b < n / FT_IQ4_SUB; b++, x += FT_IQ4_SUB, y += FT_IQ4_NL_BLOCK_BYTES) {
        uint8_t L[FT_IQ4_SUB];
        const float d = ft_iq4_fit(x, L);
        ft_qk_put_f16(y, d);
        /* ntry > 0: the indices again, for the chosen scale */
        const float id = d ? 1 / d : 0;
        for (int j = 0; j < FT_IQ4_SUB; ++j)
            L[j] = (uint8_t)ft_iq4_best_index(id * x[j]);
        ft_iq4_pack(L, y + 2);
    }
}

void ft_quantize_row_iq4_xs(const float *x, void *vy, uint64_t n)
{
    uint8_t *y = vy;
    enum { NB = FT_QK_K / FT_IQ4_SUB };
    for (uint64_t b = 0; b < n / FT_QK_K; b++, x += FT_QK_K, y += FT_IQ4_XS_BLOCK_BYTES) {
        uint8_t L[FT_IQ4_SUB];
        float scales[NB];
        float max_scale = 0, amax_scale = 0;
        for (int ib = 0; ib < NB; ++ib) {
            scales[ib] = ft_iq4_fit(x + FT_IQ4_SUB * ib, L);
            const float abs_d = fabsf(scales[ib]);
            if (abs_d > amax_scale) {
                amax_scale = abs_d;
                max_scale = scales[ib];
            }
        }
        const float d = -max_scale / 32;
        ft_qk_put_f16(y, d);
        const float id = d ? 1 / d : 0.f;
        uint16_t scales_h = 0;
        uint8_t *scales_l = y + 4, *qs = y + 8;
        for (int ib = 0; ib < NB; ++ib) {
            int l = ft_qk_nearest_int(id * scales[ib]);
            l = FT_QK_MAX(-32, FT_QK_MIN(31, l));
            const float dl = d * l;
            const float idl = dl ? 1 / dl : 0.f;
            const float *xb = x + FT_IQ4_SUB * ib;
            for (int j = 0; j < FT_IQ4_SUB; ++j)
                L[j] = (uint8_t)ft_iq4_best_index(idl * xb[j]);
            ft_iq4_pack(L, qs + 16 * ib);
            l += 32;
            const uint8_t l_l = (uint8_t)(l & 0xf), l_h = (uint8_t)(l >> 4);
            if (ib % 2 == 0)
                scales_l[ib / 2] = l_l;
            else
                scales_l[ib / 2] |= (uint8_t)(l_l << 4);
            scales_h |= (uint16_t)(l_h << 2 * ib);
        }
        y[2] = (uint8_t)scales_h;
        y[3] = (uint8_t)(scales_h >> 8);
    }
}

/* One 32-element sub-block: y = dl * kvalues[q] (one float32 rounding). */
static void ft_iq4_dequant_sub(const uint8_t *qs, float dl, float *y)
{
    for (int j = 0; j < 16; ++j) {
        y[j] = dl * ft_kvalues_iq4nl[qs[j] & 0xf];
        y[j + 16] = dl * ft_kvalues_iq4nl[qs[j] >> 4];
    }
}

void ft_dequantize_row_iq4_nl(const void *vx, float *y, uint64_t n)
{
    const uint8_t *x = vx;
    for (uint64_t b = 0; b < n / FT_IQ4_SUB; b++, x += FT_IQ4_NL_BLOCK_BYTES, y += FT_IQ4_SUB)
        ft_iq4_dequant_sub(x + 2, ft_qk_get_f16(x), y);
}

void ft_dequantize_row_iq4_xs(const void *vx, float *y, uint64_t n)
{
    const uint8_t *x = vx;
    for (uint64_t b = 0; b < n / FT_QK_K; b++, x += FT_IQ4_XS_BLOCK_BYTES) {
        const float d = ft_qk_get_f16(x);
        const unsigned scales_h = (unsigned)x[2] | (unsigned)x[3] << 8;
        for (int ib = 0; ib < (int)(FT_QK_K / FT_IQ4_SUB); ++ib, y += FT_IQ4_SUB) {
            const int ls = ((x[4 + ib / 2] >> 4 * (ib % 2)) & 0xf) | ((scales_h >> 2 * ib) & 3)
                                                                         << 4;
            ft_iq4_dequant_sub(x + 8 + 16 * ib, d * (float)(ls - 32), y);
        }
    }
}
