/* Portable dot products of Q2_K, Q3_K and Q5_K weight rows with
 * activations quantized to Q8_K super-blocks (ggml_vec_dot_q{2,3,5}_K_q8_K's
 * arithmetic): per super-block the weight levels are unpacked to int8 (the
 * layouts are runtime/format/quant_k_low.c's), each group's integer dot
 * with the Q8_K values is exact in int32, and one float32 multiply-add per
 * super-block applies d (and dmin with Q8_K's bsums for the mins). */
#include "cpu_dot.h"

/* Q2_K/Q3_K element 128h + 32j + l is bits 2j of qs[32h + l]. */
static void ft_cpu_unpack_2bit(const uint8_t *qs, int8_t q[FT_CPU_QK_K])
{
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 32; l++)
                q[128 * h + 32 * j + l] = (int8_t)((qs[32 * h + l] >> (2 * j)) & 3);
}

/* sum over l of a[l] * b[l] for n int8 values, exact. */
static inline int32_t ft_cpu_idot(const int8_t *a, const int8_t *b, int n)
{
    int32_t s = 0;
    for (int l = 0; l < n; l++)
        s += a[l] * b[l];
    return s;
}

float ft_cpu_dot_q2_k_c(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row, *x = x_row;
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FT_CPU_QK_K;
         b++, w += FT_CPU_Q2_K_BYTES, x += FT_CPU_Q8_K_BYTES) {
        int8_t q[FT_CPU_QK_K];
        ft_cpu_unpack_2bit(w + 16, q);
        const int8_t *q8 = (const int8_t *)(x + 4);
        int16_t bsums[16];
        memcpy(bsums, x + 4 + FT_CPU_QK_K, sizeof(bsums));
        /* x = d * sc * q - dmin * m per 16 elements. */
        int32_t sumi = 0, summ = 0;
        for (int g = 0; g < 16; g++) {
            sumi += (w[g] & 0xF) * ft_cpu_idot(q + 16 * g, q8 + 16 * g, 16);
            summ += (w[g] >> 4) * bsums[g];
        }
        const float xd = ft_cpu_f32(x);
        sum += ft_cpu_f16(w + 80) * xd * (float)sumi - ft_cpu_f16(w + 82) * xd * (float)summ;
    }
    return sum;
}

float ft_cpu_dot_q3_k_c(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row, *x = x_row;
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FT_CPU_QK_K;
         b++, w += FT_CPU_Q3_K_BYTES, x += FT_CPU_Q8_K_BYTES) {
        int8_t q[FT_CPU_QK_K];
        ft_cpu_unpack_2bit(w + 32, q);
        /* Element 32m + r has its high bit in bit m of hmask[r]; a clear bit
         * means level - 4. */
        for (int e = 0; e < FT_CPU_QK_K; e++)
            q[e] = (int8_t)(q[e] - ((w[e % 32] >> (e / 32)) & 1 ? 0 : 4));
        const uint8_t *s = w + 96;
        const int8_t *q8 = (const int8_t *)(x + 4);
        int32_t sumi = 0;
        for (int g = 0; g < 16; g++) {
            const int lo = g < 8 ? s[g] & 0xF : s[g - 8] >> 4;
            const int sc = (lo | (((s[8 + g % 4] >> (2 * (g / 4))) & 3) << 4)) - 32;
            sumi += sc * ft_cpu_idot(q + 16 * g, q8 + 16 * g, 16);
        }
        sum += ft_cpu_f16(w + 108) * ft_cpu_f32(x) * (float)sumi;
    }
    return sum;
}

float ft_cpu_dot_q5_k_c(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row, *x = x_row;
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FT_CPU_QK_K;
         b++, w += FT_CPU_Q5_K_BYTES, x += FT_CPU_Q8_K_BYTES) {
        uint8_t sm[16]; /* scales [0, 8), mins [8, 16): Q4_K's packing */
        ft_cpu_q4_k_scales(w + 4, sm);
        const uint8_t *qh = w + 16, *ql = w + 48;
        int8_t q[FT_CPU_QK_K];
        /* Sub-block s (32 elements): nibble s & 1 of ql[32 (s / 2) + l],
         * plus 16 when bit s of qh[l] is set. */
        for (int s = 0; s < 8; s++)
            for (int l = 0; l < 32; l++)
                q[32 * s + l] = (int8_t)(((ql[32 * (s / 2) + l] >> (4 * (s & 1))) & 0xF) |
                                         (((qh[l] >> s) & 1) << 4));
        const int8_t *q8 = (const int8_t *)(x + 4);
        int16_t bsums[16];
        memcpy(bsums, x + 4 + FT_CPU_QK_K, sizeof(bsums));
        int32_t sumi = 0, summ = 0;
        for (int s = 0; s < 8; s++) {
            sumi += sm[s] * ft_cpu_idot(q + 32 * s, q8 + 32 * s, 32);
            summ += sm[8 + s] * (bsums[2 * s] + bsums[2 * s + 1]);
        }
        const float xd = ft_cpu_f32(x);
        sum += ft_cpu_f16(w) * xd * (float)sumi - ft_cpu_f16(w + 2) * xd * (float)summ;
    }
    return sum;
}
