/* Portable dot products of the 4-bit non-linear formats with 8-bit
 * activations, as ggml pairs them: IQ4_NL with Q8_0 blocks, IQ4_XS with
 * Q8_K super-blocks (layouts: runtime/format/quant_iq4.c). Each weight
 * index becomes its int8 codebook value (kvalues_iq4nl), whose products
 * with the int8 activations sum exactly in int32 per 32 elements (at most
 * 32 * 127 * 127; IQ4_XS weights that by its 6-bit scale - 32, at most
 * 8 * 32 times more, still within int32); then one float32 multiply-add
 * per block (IQ4_NL: d dx sumi) or super-block (IQ4_XS). */
#include "cpu_dot.h"

#include "../../format/convert.h"

/* sum over the 32 elements of one IQ4 sub-block (qs[16]) of
 * kvalues[q] * a, exact. */
static inline int32_t ft_cpu_iq4_sum(const uint8_t *qs, const int8_t *a)
{
    int32_t s = 0;
    for (int j = 0; j < 16; j++)
        s += ft_kvalues_iq4nl[qs[j] & 0xf] * a[j] + ft_kvalues_iq4nl[qs[j] >> 4] * a[j + 16];
    return s;
}

float ft_cpu_dot_iq4_nl_c(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row, *x = x_row;
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FT_CPU_QK8_0;
         b++, w += FT_CPU_IQ4_NL_BYTES, x += FT_CPU_Q8_0_BYTES)
        sum +=
            (ft_cpu_f16(w) * ft_cpu_f16(x)) * (float)ft_cpu_iq4_sum(w + 2, (const int8_t *)(x + 2));
    return sum;
}

float ft_cpu_dot_iq4_xs_c(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row, *x = x_row;
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FT_CPU_QK_K;
         b++, w += FT_CPU_IQ4_XS_BYTES, x += FT_CPU_Q8_K_BYTES) {
        const unsigned scales_h = (unsigned)w[2] | (unsigned)w[3] << 8;
        const int8_t *q8 = (const int8_t *)(x + 4);
        int32_t sumi = 0;
        for (int ib = 0; ib < FT_CPU_QK_K / 32; ib++) {
            const int ls = ((w[4 + ib / 2] >> 4 * (ib % 2)) & 0xf) | ((scales_h >> 2 * ib) & 3)
                                                                         << 4;
            sumi += (ls - 32) * ft_cpu_iq4_sum(w + 8 + 16 * ib, q8 + 32 * ib);
        }
        sum += ft_cpu_f16(w) * ft_cpu_f32(x) * (float)sumi;
    }
    return sum;
}
