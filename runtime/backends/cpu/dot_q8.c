/* Portable dot products of 32-element block formats (Q8_0, Q4_0) with
 * activations quantized to Q8_0 blocks, as ggml_vec_dot_q8_0_q8_0 and
 * ggml_vec_dot_q4_0_q8_0: an exact int32 sum per block, scaled by the
 * product of the two fp16 scales and accumulated in float32. */
#include "cpu_dot.h"

float ft_cpu_dot_q8_0_c(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row, *x = x_row;
    const uint32_t nb = cols / FT_CPU_QK8_0;
    float sum = 0.0f;
    for (uint32_t b = 0; b < nb; b++, w += FT_CPU_Q8_0_BYTES, x += FT_CPU_Q8_0_BYTES) {
        const int8_t *wq = (const int8_t *)(w + 2), *xq = (const int8_t *)(x + 2);
        int32_t sumi = 0;
        for (int j = 0; j < FT_CPU_QK8_0; j++)
            sumi += wq[j] * xq[j];
        sum += (float)sumi * (ft_cpu_f16(w) * ft_cpu_f16(x));
    }
    return sum;
}

float ft_cpu_dot_q4_0_c(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row, *x = x_row;
    const uint32_t nb = cols / FT_CPU_QK8_0;
    float sum = 0.0f;
    for (uint32_t b = 0; b < nb; b++, w += FT_CPU_Q4_0_BYTES, x += FT_CPU_Q8_0_BYTES) {
        const uint8_t *wq = w + 2;
        const int8_t *xq = (const int8_t *)(x + 2);
        /* Element j is in the low nibble of byte j, element j + 16 in the
         * high one, both stored as q + 8: the dot is sum(nibble * a) -
         * 8 * sum(a). (The form ((nibble - 8) * a) is what GCC 12
         * mis-vectorizes with VNNI, see dot_k.c.) */
        int32_t sumi = 0, suma = 0;
        for (int j = 0; j < FT_CPU_QK8_0 / 2; j++)
            sumi += (wq[j] & 0x0f) * xq[j] + (wq[j] >> 4) * xq[j + 16];
        for (int j = 0; j < FT_CPU_QK8_0; j++)
            suma += xq[j];
        sumi -= 8 * suma;
        sum += (float)sumi * (ft_cpu_f16(w) * ft_cpu_f16(x));
    }
    return sum;
}
