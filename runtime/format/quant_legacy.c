/* The legacy 32-element blocks Q4_1, Q5_0 and Q5_1, ports of ggml's
 * quantize_row_q{4_1,5_0,5_1}_ref and dequantize_row_* (ggml-quants.c),
 * keeping ggml's float expressions so that the bytes are ggml's.
 *
 * Layouts (ggml-common.h, little-endian, packed; element j in the low
 * nibble of qs[j], element j + 16 in the high nibble):
 *   block_q4_1 (20 B): fp16 d @0, fp16 m @2, qs[16] @4; x = q * d + m
 *   block_q5_0 (22 B): fp16 d @0, u32 qh @2, qs[16] @6; bit j of qh is
 *                      the fifth bit of element j; x = (q - 16) * d
 *   block_q5_1 (24 B): fp16 d @0, fp16 m @2, u32 qh @4, qs[16] @8;
 *                      x = q * d + m */
#include "convert.h"

#include <float.h>
#include <math.h>
#include <string.h>

enum { FT_QL_QK = 32 };

/* ggml's `(int8_t)(v + bias)` capped at cap: for finite input the sum is
 * within int8's range; NaN and inf (whose cast ggml leaves undefined)
 * become 0 here. */
static inline uint8_t ft_ql_level(float v, float bias, int cap)
{
    const float t = v + bias;
    const int q = t >= -128.0f && t < 128.0f ? (int8_t)t : 0;
    return (uint8_t)(q < cap ? q : cap);
}

/* ggml's `(uint8_t)(v + 0.5f)` (Q5_1 has no cap; finite input gives at
 * most 31.5), with NaN/inf as 0. */
static inline uint8_t ft_ql_level_u(float v)
{
    const float t = v + 0.5f;
    return t >= 0.0f && t < 256.0f ? (uint8_t)t : 0;
}

static inline void ft_ql_put_f16(uint8_t *p, float f)
{
    const uint16_t h = ft_fp32_to_fp16(f);
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

static inline float ft_ql_get_f16(const uint8_t *p)
{
    return ft_fp16_to_fp32((uint16_t)(p[0] | (p[1] << 8)));
}

static inline void ft_ql_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t ft_ql_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* min and max of a block, as ggml's Q4_1/Q5_1 find them. */
static void ft_ql_min_max(const float *x, float *out_min, float *out_max)
{
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < FT_QL_QK; j++) {
        if (x[j] < min) min = x[j];
        if (x[j] > max) max = x[j];
    }
    *out_min = min;
    *out_max = max;
}

/* The signed element of largest magnitude (Q4_0's and Q5_0's `max`). */
static float ft_ql_signed_max(const float *x)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < FT_QL_QK; j++)
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    return max;
}

void ft_quantize_row_q4_1(const float *x, void *y, uint64_t n)
{
    uint8_t *out = y;
    for (uint64_t i = 0; i < n / FT_QL_QK; i++, x += FT_QL_QK) {
        uint8_t *blk = out + i * FT_Q4_1_BLOCK_BYTES;
        float min, max;
        ft_ql_min_max(x, &min, &max);
        const float d = (max - min) / ((1 << 4) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        ft_ql_put_f16(blk, d);
        ft_ql_put_f16(blk + 2, min);
        for (int j = 0; j < FT_QL_QK / 2; j++) {
            const uint8_t lo = ft_ql_level((x[j] - min) * id, 0.5f, 15);
            const uint8_t hi = ft_ql_level((x[j + FT_QL_QK / 2] - min) * id, 0.5f, 15);
            blk[4 + j] = (uint8_t)(lo | (hi << 4));
        }
    }
}

void ft_dequantize_row_q4_1(const void *x, float *y, uint64_t n)
{
    const uint8_t *in = x;
    for (uint64_t i = 0; i < n / FT_QL_QK; i++, y += FT_QL_QK) {
        const uint8_t *blk = in + i * FT_Q4_1_BLOCK_BYTES;
        const float d = ft_ql_get_f16(blk), m = ft_ql_get_f16(blk + 2);
        for (int j = 0; j < FT_QL_QK / 2; j++) {
            y[j] = (blk[4 + j] & 0x0F) * d + m;
            y[j + FT_QL_QK / 2] = (blk[4 + j] >> 4) * d + m;
        }
    }
}

/* Q5_0 and Q5_1 share the packing of 5-bit levels: the low nibbles into
 * qs, the fifth bits into qh. */
static void ft_ql_pack5(const uint8_t *lv, uint8_t *qh_at, uint8_t *qs)
{
    uint32_t qh = 0;
    for (int j = 0; j < FT_QL_QK / 2; j++) {
        const uint8_t a = lv[j], b = lv[j + FT_QL_QK / 2];
        qs[j] = (uint8_t)((a & 0x0F) | ((b & 0x0F) << 4));
        qh |= (uint32_t)((a & 0x10u) >> 4) << j;
        qh |= (uint32_t)((b & 0x10u) >> 4) << (j + FT_QL_QK / 2);
    }
    ft_ql_put_u32(qh_at, qh);
}

/* The 5-bit level of element j (0..31) from qh and qs. */
static inline int ft_ql_level5(uint32_t qh, const uint8_t *qs, int j)
{
    const int lo = j < FT_QL_QK / 2 ? qs[j] & 0x0F : qs[j - FT_QL_QK / 2] >> 4;
    return lo | (int)((qh >> j) & 1) << 4;
}

void ft_quantize_row_q5_0(const float *x, void *y, uint64_t n)
{
    uint8_t *out = y;
    for (uint64_t i = 0; i < n / FT_QL_QK; i++, x += FT_QL_QK) {
        uint8_t *blk = out + i * FT_Q5_0_BLOCK_BYTES;
        const float d = ft_ql_signed_max(x) / -16;
        const float id = d ? 1.0f / d : 0.0f;
        ft_ql_put_f16(blk, d);
        uint8_t lv[FT_QL_QK];
        for (int j = 0; j < FT_QL_QK; j++)
            lv[j] = ft_ql_level(x[j] * id, 16.5f, 31);
        ft_ql_pack5(lv, blk + 2, blk + 6);
    }
}

void ft_dequantize_row_q5_0(const void *x, float *y, uint64_t n)
{
    const uint8_t *in = x;
    for (uint64_t i = 0; i < n / FT_QL_QK; i++, y += FT_QL_QK) {
        const uint8_t *blk = in + i * FT_Q5_0_BLOCK_BYTES;
        const float d = ft_ql_get_f16(blk);
        const uint32_t qh = ft_ql_get_u32(blk + 2);
        for (int j = 0; j < FT_QL_QK; j++)
            y[j] = (ft_ql_level5(qh, blk + 6, j) - 16) * d;
    }
}

void ft_quantize_row_q5_1(const float *x, void *y, uint64_t n)
{
    uint8_t *out = y;
    for (uint64_t i = 0; i < n / FT_QL_QK; i++, x += FT_QL_QK) {
        uint8_t *blk = out + i * FT_Q5_1_BLOCK_BYTES;
        float min, max;
        ft_ql_min_max(x, &min, &max);
        const float d = (max - min) / ((1 << 5) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        ft_ql_put_f16(blk, d);
        ft_ql_put_f16(blk + 2, min);
        uint8_t lv[FT_QL_QK];
        for (int j = 0; j < FT_QL_QK; j++)
            lv[j] = ft_ql_level_u((x[j] - min) * id);
        ft_ql_pack5(lv, blk + 4, blk + 8);
    }
}

void ft_dequantize_row_q5_1(const void *x, float *y, uint64_t n)
{
    const uint8_t *in = x;
    for (uint64_t i = 0; i < n / FT_QL_QK; i++, y += FT_QL_QK) {
        const uint8_t *blk = in + i * FT_Q5_1_BLOCK_BYTES;
        const float d = ft_ql_get_f16(blk), m = ft_ql_get_f16(blk + 2);
        const uint32_t qh = ft_ql_get_u32(blk + 4);
        for (int j = 0; j < FT_QL_QK; j++)
            y[j] = ft_ql_level5(qh, blk + 8, j) * d + m;
    }
}
