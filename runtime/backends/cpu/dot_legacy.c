/* Portable dot products of the legacy blocks Q4_1, Q5_0 and Q5_1 with
 * activations quantized to Q8_0 blocks (layouts: runtime/format/
 * quant_legacy.c). Per block the weight levels q (stored unsigned) meet
 * the int8 activations in exact int32 sums: sum(q a) and sum(a). Then
 * x = q d + m gives d dx sum(q a) + m dx sum(a), and Q5_0's x = (q - 16) d
 * gives d dx (sum(q a) - 16 sum(a)), in float32. (ggml pairs Q4_1 and
 * Q5_1 with Q8_1 activations, whose fp16 s = dx sum(a) rounds the second
 * term once more; Q8_0 keeps sum(a) exact.) */
#include "cpu_dot.h"

/* sum(q a) and sum(a) of one block: 4-bit q from qs, plus the fifth bits
 * of qh (NULL for Q4_1). */
static inline void ft_cpu_legacy_sums(const uint8_t *qs, const uint8_t *qh, const int8_t *a,
                                      int32_t *out_qa, int32_t *out_a)
{
    uint32_t h = 0;
    if (qh)
        h = (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
    int32_t qa = 0, sa = 0;
    for (int j = 0; j < FT_CPU_QK8_0 / 2; j++) {
        const int lo = (qs[j] & 0x0f) | (int)((h >> j) & 1) << 4;
        const int hi = (qs[j] >> 4) | (int)((h >> (j + 16)) & 1) << 4;
        qa += lo * a[j] + hi * a[j + 16];
    }
    for (int j = 0; j < FT_CPU_QK8_0; j++)
        sa += a[j];
    *out_qa = qa;
    *out_a = sa;
}

float ft_cpu_dot_q4_1_c(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row, *x = x_row;
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FT_CPU_QK8_0;
         b++, w += FT_CPU_Q4_1_BYTES, x += FT_CPU_Q8_0_BYTES) {
        int32_t qa, sa;
        ft_cpu_legacy_sums(w + 4, NULL, (const int8_t *)(x + 2), &qa, &sa);
        const float dx = ft_cpu_f16(x);
        sum += ft_cpu_f16(w) * dx * (float)qa + ft_cpu_f16(w + 2) * dx * (float)sa;
    }
    return sum;
}

float ft_cpu_dot_q5_0_c(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row, *x = x_row;
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FT_CPU_QK8_0;
         b++, w += FT_CPU_Q5_0_BYTES, x += FT_CPU_Q8_0_BYTES) {
        int32_t qa, sa;
        ft_cpu_legacy_sums(w + 6, w + 2, (const int8_t *)(x + 2), &qa, &sa);
        sum += (float)(qa - 16 * sa) * (ft_cpu_f16(w) * ft_cpu_f16(x));
    }
    return sum;
}

float ft_cpu_dot_q5_1_c(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row, *x = x_row;
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FT_CPU_QK8_0;
         b++, w += FT_CPU_Q5_1_BYTES, x += FT_CPU_Q8_0_BYTES) {
        int32_t qa, sa;
        ft_cpu_legacy_sums(w + 8, w + 4, (const int8_t *)(x + 2), &qa, &sa);
        const float dx = ft_cpu_f16(x);
        sum += ft_cpu_f16(w) * dx * (float)qa + ft_cpu_f16(w + 2) * dx * (float)sa;
    }
    return sum;
}
