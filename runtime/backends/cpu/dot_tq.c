/* Portable dot products of the ternary formats TQ1_0 and TQ2_0
 * (runtime/format/quant_tq.c) with Q8_K activations, ggml's pairing: the
 * digits t in {-1, 0, 1} meet the int8 activations in an exact int32 sum
 * per super-block, then one float multiply-add: d dx sum(t a). */
#include "cpu_dot.h"

#include "../../format/convert.h"

static float ft_cpu_dot_tq(void (*unpack)(const uint8_t *, int8_t *), uint32_t block_bytes,
                           uint32_t d_offset, uint32_t cols, const uint8_t *w, const uint8_t *x)
{
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FT_CPU_QK_K; b++, w += block_bytes, x += FT_CPU_Q8_K_BYTES) {
        int8_t t[FT_CPU_QK_K];
        unpack(w, t);
        const int8_t *a = (const int8_t *)(x + 4);
        int32_t sumi = 0;
        for (int i = 0; i < FT_CPU_QK_K; i++)
            sumi += t[i] * a[i];
        sum += ft_cpu_f16(w + d_offset) * ft_cpu_f32(x) * (float)sumi;
    }
    return sum;
}

float ft_cpu_dot_tq1_0_c(uint32_t cols, const void *w_row, const void *x_row)
{
    return ft_cpu_dot_tq(ft_tq1_0_unpack, FT_CPU_TQ1_0_BYTES, 52, cols, w_row, x_row);
}

float ft_cpu_dot_tq2_0_c(uint32_t cols, const void *w_row, const void *x_row)
{
    return ft_cpu_dot_tq(ft_tq2_0_unpack, FT_CPU_TQ2_0_BYTES, 64, cols, w_row, x_row);
}
