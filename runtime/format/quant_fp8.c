/* FP8 weights: plain OCP E4M3 / E5M2 rows (safetensors F8_E4M3, F8_E5M2),
 * and freetoken's block format FT_DTYPE_FP8 (dtype.h): 128 E4M3 values
 * with one float32 scale, x = e4m3(q) * d, the layout of DeepSeek-V3's
 * FP8 weights (one weight_scale_inv per 128 columns of a row).
 *
 * The quantizer is round to nearest: d = amax / 448 maps the block's
 * largest magnitude onto E4M3's largest finite value, q = e4m3(x / d)
 * (round to nearest even, saturating). */
#include "convert.h"
#include "minifloat.h"

#include <math.h>
#include <string.h>

uint8_t ft_f32_to_e4m3(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    const uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    u &= 0x7fffffffu;
    if (u > 0x7f800000u) return sign | 0x7f;
    float a;
    memcpy(&a, &u, 4);
    if (a >= 448.0f) return sign | 0x7e;
    if (a < 0x1.0p-6f) {
        /* Subnormals m * 2^-9, m in [0, 8]: m = 8 is the smallest normal,
         * whose code (exponent 1, mantissa 0) is also 8. a * 512 is exact. */
        const float t = a * 512.0f;
        uint32_t m = (uint32_t)t;
        const float frac = t - (float)m;
        if (frac > 0.5f || (frac == 0.5f && (m & 1u))) m++;
        return sign | (uint8_t)m;
    }
    /* Normal: keep 3 of float32's 23 mantissa bits, rounding the 20 dropped
     * bits to nearest even; a carry moves into the exponent as it should.
     * Rebias the exponent from 127 to 7 (120 << 3 in code units). */
    const uint32_t r = (u + 0x7ffffu + ((u >> 20) & 1u)) >> 20;
    const uint32_t code = r - (120u << 3);
    return sign | (uint8_t)(code > 0x7eu ? 0x7eu : code);
}

void ft_quantize_row_fp8(const float *x, void *y, uint64_t n)
{
    uint8_t *out = y;
    for (uint64_t i = 0; i < n / FT_FP8_BLOCK_ELEMS; i++) {
        const float *xb = x + i * FT_FP8_BLOCK_ELEMS;
        uint8_t *blk = out + i * FT_FP8_BLOCK_BYTES;
        float amax = 0.0f;
        for (uint32_t j = 0; j < FT_FP8_BLOCK_ELEMS; j++)
            if (amax < fabsf(xb[j])) amax = fabsf(xb[j]);
        const float d = amax / 448.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        memcpy(blk, &d, 4);
        for (uint32_t j = 0; j < FT_FP8_BLOCK_ELEMS; j++)
            blk[4 + j] = ft_f32_to_e4m3(xb[j] * id);
    }
}

void ft_dequantize_row_fp8(const void *x, float *y, uint64_t n)
{
    const uint8_t *in = x;
    for (uint64_t i = 0; i < n / FT_FP8_BLOCK_ELEMS; i++) {
        const uint8_t *blk = in + i * FT_FP8_BLOCK_BYTES;
        float d;
        memcpy(&d, blk, 4);
        for (uint32_t j = 0; j < FT_FP8_BLOCK_ELEMS; j++)
            y[i * FT_FP8_BLOCK_ELEMS + j] = ft_e4m3_to_f32(blk[4 + j]) * d;
    }
}

void ft_fp8_from_e4m3(const void *x, void *y, uint64_t n)
{
    const uint8_t *in = x;
    uint8_t *out = y;
    const float one = 1.0f;
    for (uint64_t i = 0; i < n / FT_FP8_BLOCK_ELEMS; i++) {
        memcpy(out + i * FT_FP8_BLOCK_BYTES, &one, 4);
        memcpy(out + i * FT_FP8_BLOCK_BYTES + 4, in + i * FT_FP8_BLOCK_ELEMS, FT_FP8_BLOCK_ELEMS);
    }
}

void ft_quantize_row_e4m3(const float *x, void *y, uint64_t n)
{
    uint8_t *out = y;
    for (uint64_t i = 0; i < n; i++)
        out[i] = ft_f32_to_e4m3(x[i]);
}

void ft_dequantize_row_e4m3(const void *x, float *y, uint64_t n)
{
    const uint8_t *in = x;
    for (uint64_t i = 0; i < n; i++)
        y[i] = ft_e4m3_to_f32(in[i]);
}

void ft_dequantize_row_e5m2(const void *x, float *y, uint64_t n)
{
    const uint8_t *in = x;
    for (uint64_t i = 0; i < n; i++)
        y[i] = ft_fp16_to_fp32((uint16_t)(in[i] << 8));
}
