/* Portable dot products of the IQ grid formats (IQ2_XXS, IQ2_XS, IQ2_S,
 * IQ3_XXS, IQ3_S, IQ1_S, IQ1_M; runtime/format/quant_iq_grid.c,
 * quant_iq1.c) with Q8_K activations,
 * ggml's pairing. Each super-block is unpacked to signed grid values q and
 * per-16 odd scales sc (runtime/format/iq_grids.h: x = d m sc q, exact);
 * sum over 16 of q a is exact in int32 (|q| <= 62), and so is the sum over
 * the super-block of sc times it (at most 16 * 31 * 16 * 62 * 127); then
 * one float multiply-add per super-block: (d m) dx sumi. */
#include "cpu_dot.h"

#include "../../format/iq_grids.h"

static float ft_cpu_dot_iq_grid(ft_dtype_t t, uint32_t block_bytes, uint32_t cols, const uint8_t *w,
                                const uint8_t *x)
{
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FT_CPU_QK_K; b++, w += block_bytes, x += FT_CPU_Q8_K_BYTES) {
        int8_t q[FT_CPU_QK_K];
        int16_t sc[16];
        const float dm = ft_iq_unpack(t, w, q, sc);
        const int8_t *a = (const int8_t *)(x + 4);
        int32_t sumi = 0;
        for (int g = 0; g < 16; g++) {
            int32_t s = 0;
            for (int l = 0; l < 16; l++)
                s += q[16 * g + l] * a[16 * g + l];
            sumi += sc[g] * s;
        }
        sum += dm * ft_cpu_f32(x) * (float)sumi;
    }
    return sum;
}

float ft_cpu_dot_iq2_xxs_c(uint32_t cols, const void *w_row, const void *x_row)
{
    return ft_cpu_dot_iq_grid(FT_DTYPE_IQ2_XXS, FT_CPU_IQ2_XXS_BYTES, cols, w_row, x_row);
}

float ft_cpu_dot_iq2_xs_c(uint32_t cols, const void *w_row, const void *x_row)
{
    return ft_cpu_dot_iq_grid(FT_DTYPE_IQ2_XS, FT_CPU_IQ2_XS_BYTES, cols, w_row, x_row);
}

float ft_cpu_dot_iq2_s_c(uint32_t cols, const void *w_row, const void *x_row)
{
    return ft_cpu_dot_iq_grid(FT_DTYPE_IQ2_S, FT_CPU_IQ2_S_BYTES, cols, w_row, x_row);
}

float ft_cpu_dot_iq3_xxs_c(uint32_t cols, const void *w_row, const void *x_row)
{
    return ft_cpu_dot_iq_grid(FT_DTYPE_IQ3_XXS, FT_CPU_IQ3_XXS_BYTES, cols, w_row, x_row);
}

float ft_cpu_dot_iq3_s_c(uint32_t cols, const void *w_row, const void *x_row)
{
    return ft_cpu_dot_iq_grid(FT_DTYPE_IQ3_S, FT_CPU_IQ3_S_BYTES, cols, w_row, x_row);
}

float ft_cpu_dot_iq1_s_c(uint32_t cols, const void *w_row, const void *x_row)
{
    return ft_cpu_dot_iq_grid(FT_DTYPE_IQ1_S, FT_CPU_IQ1_S_BYTES, cols, w_row, x_row);
}

float ft_cpu_dot_iq1_m_c(uint32_t cols, const void *w_row, const void *x_row)
{
    return ft_cpu_dot_iq_grid(FT_DTYPE_IQ1_M, FT_CPU_IQ1_M_BYTES, cols, w_row, x_row);
}
