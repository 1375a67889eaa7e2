/* Portable dot products of the 4- and 8-bit float weight formats.
 *
 * MXFP4, NVFP4 with activations quantized to Q8_0 blocks, as ggml's
 * ggml_vec_dot_mxfp4_q8_0 and ggml_vec_dot_nvfp4_q8_0 (ggml-cpu/quants.c):
 * the E2M1 levels, doubled to integers (minifloat.h), multiply the int8
 * activations exactly in int32; each block's (or 16-element sub-block's)
 * sum is scaled by the product of the halved weight scale and the Q8_0
 * scale. An NVFP4 block of 64 spans two Q8_0 blocks: sub-blocks 0, 1 use
 * the first (its elements 0..15, 16..31), sub-blocks 2, 3 the second.
 *
 * FP8 with float32 activations: E4M3 has 3 mantissa bits, so rounding the
 * activations to 8-bit integers would add an error as large as the
 * weights' own; the E4M3 bytes are decoded exactly and each block's float32
 * sum is scaled by its d. Eight partial sums let the compiler vectorize
 * without reordering beyond what the source fixes. */
#include "cpu_dot.h"

#include "../../format/minifloat.h"

float ft_cpu_dot_mxfp4_c(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row, *x = x_row;
    const uint32_t nb = cols / FT_CPU_QK8_0;
    float sum = 0.0f;
    for (uint32_t b = 0; b < nb; b++, w += FT_CPU_MXFP4_BYTES, x += FT_CPU_Q8_0_BYTES) {
        const uint8_t *wq = w + 1;
        const int8_t *xq = (const int8_t *)(x + 2);
        int32_t sumi = 0;
        for (int j = 0; j < FT_CPU_QK8_0 / 2; j++)
            sumi += ft_e2m1_x2[wq[j] & 0x0f] * xq[j] + ft_e2m1_x2[wq[j] >> 4] * xq[j + 16];
        sum += (ft_cpu_f16(x) * ft_e8m0_half(w[0])) * (float)sumi;
    }
    return sum;
}

float ft_cpu_dot_nvfp4_c(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row, *x = x_row;
    const uint32_t nb = cols / FT_CPU_NVFP4_ELEMS;
    float sum = 0.0f;
    for (uint32_t b = 0; b < nb; b++, w += FT_CPU_NVFP4_BYTES, x += 2 * FT_CPU_Q8_0_BYTES) {
        for (int s = 0; s < 4; s++) {
            const uint8_t *xb = x + (s >> 1) * FT_CPU_Q8_0_BYTES;
            const int8_t *xq = (const int8_t *)(xb + 2) + (s & 1) * 16;
            const uint8_t *wq = w + 4 + 8 * s;
            int32_t sumi = 0;
            for (int j = 0; j < 8; j++)
                sumi += ft_e2m1_x2[wq[j] & 0x0f] * xq[j] + ft_e2m1_x2[wq[j] >> 4] * xq[j + 8];
            sum += (ft_cpu_f16(xb) * ft_ue4m3_half(w[s])) * (float)sumi;
        }
    }
    return sum;
}

float ft_cpu_dot_fp8_c(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row;
    const float *x = x_row;
    const uint32_t nb = cols / FT_CPU_FP8_ELEMS;
    float sum = 0.0f;
    for (uint32_t b = 0; b < nb; b++, w += FT_CPU_FP8_BYTES, x += FT_CPU_FP8_ELEMS) {
        float acc[8] = {0};
        for (int j = 0; j < FT_CPU_FP8_ELEMS; j += 8)
            for (int k = 0; k < 8; k++)
                acc[k] += ft_e4m3_to_f32(w[4 + j + k]) * x[j + k];
        for (int width = 4; width > 0; width /= 2)
            for (int k = 0; k < width; k++)
                acc[k] += acc[k + width];
        sum += ft_cpu_f32(w) * acc[0];
    }
    return sum;
}
