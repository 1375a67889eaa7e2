/* Q4_0 blocks, a port of ggml's quantize_row_q4_0_ref and
 * dequantize_row_q4_0 (ggml-quants.c). Layout (block_q4_0, 18 bytes):
 * fp16 d, then 16 bytes holding element j in the low nibble of byte j and
 * element j + 16 in the high nibble. */
#include "convert.h"

#include <math.h>
#include <string.h>

/* ggml's `MIN(15, (int8_t)(v + 8.5f))`. For finite input v + 8.5 lies in
 * [0.5, 16.5]; an inf/NaN input row gives NaN here, where ggml's cast is
 * undefined (x86 yields 0), so NaN becomes 0 rather than undefined behaviour. */
static inline uint8_t ft_q4_0_level(float v)
{
    const float t = v + 8.5f;
    const int q = t >= -128.0f && t < 128.0f ? (int8_t)t : 0;
    return (uint8_t)(q < 15 ? q : 15);
}

void ft_quantize_row_q4_0(const float *x, void *y, uint64_t n)
{
    uint8_t *out = y;
    const uint64_t n_blocks = n / FT_Q4_0_BLOCK_ELEMS;
    for (uint64_t i = 0; i < n_blocks; i++) {
        const float *xb = x + i * FT_Q4_0_BLOCK_ELEMS;
        uint8_t *blk = out + i * FT_Q4_0_BLOCK_BYTES;
        float amax = 0.0f, max = 0.0f; /* max: the element of largest |x|, signed */
        for (uint32_t j = 0; j < FT_Q4_0_BLOCK_ELEMS; j++) {
            if (amax < fabsf(xb[j])) {
                amax = fabsf(xb[j]);
                max = xb[j];
            }
        }
        const float d = max / -8;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t dh = ft_fp32_to_fp16(d);
        blk[0] = (uint8_t)(dh & 0xff);
        blk[1] = (uint8_t)(dh >> 8);
        for (uint32_t j = 0; j < FT_Q4_0_BLOCK_ELEMS / 2; j++) {
            const uint8_t lo = ft_q4_0_level(xb[j] * id);
            const uint8_t hi = ft_q4_0_level(xb[j + FT_Q4_0_BLOCK_ELEMS / 2] * id);
            blk[2 + j] = (uint8_t)(lo | (hi << 4));
        }
    }
}

void ft_dequantize_row_q4_0(const void *x, float *y, uint64_t n)
{
    const uint8_t *in = x;
    const uint64_t n_blocks = n / FT_Q4_0_BLOCK_ELEMS;
    for (uint64_t i = 0; i < n_blocks; i++) {
        const uint8_t *blk = in + i * FT_Q4_0_BLOCK_BYTES;
        const float d = ft_fp16_to_fp32((uint16_t)(blk[0] | (blk[1] << 8)));
        float *yb = y + i * FT_Q4_0_BLOCK_ELEMS;
        for (uint32_t j = 0; j < FT_Q4_0_BLOCK_ELEMS / 2; j++) {
            yb[j] = ((blk[2 + j] & 0x0f) - 8) * d;
            yb[j + FT_Q4_0_BLOCK_ELEMS / 2] = ((blk[2 + j] >> 4) - 8) * d;
        }
    }
}
