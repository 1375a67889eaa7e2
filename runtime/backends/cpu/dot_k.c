/* Portable dot products of K-quant weight rows (Q4_K, Q6_K) with
 * activations quantized to Q8_K super-blocks, as ggml_vec_dot_q4_K_q8_K and
 * ggml_vec_dot_q6_K_q8_K: per super-block of 256 elements an exact int32
 * sum of scale * (q_w . q_x) over the sub-blocks, then one float32
 * multiply-add with the block scales. */
#include "cpu_dot.h"

float ft_cpu_dot_q4_k_c(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row, *x = x_row;
    const uint32_t nb = cols / FT_CPU_QK_K;
    float sum = 0.0f;
    for (uint32_t b = 0; b < nb; b++, w += FT_CPU_Q4_K_BYTES, x += FT_CPU_Q8_K_BYTES) {
        uint8_t sm[16]; /* scales [0, 8), mins [8, 16) */
        ft_cpu_q4_k_scales(w + 4, sm);
        const uint8_t *q4 = w + 16;
        const int8_t *q8 = (const int8_t *)(x + 4);
        int16_t bsums[16];
        memcpy(bsums, x + 4 + FT_CPU_QK_K, sizeof(bsums));
        /* x = d * sc * q - dmin * m, so the dot is
         * d * xd * sum(sc * q.q8) - dmin * xd * sum(m * sum(q8)). */
        int32_t sumi = 0, summ = 0;
        for (int j = 0; j < 4; j++, q4 += 32, q8 += 64) {
            int32_t lo = 0, hi = 0;
            for (int l = 0; l < 32; l++) {
                lo += (q4[l] & 0x0f) * q8[l];
                hi += (q4[l] >> 4) * q8[l + 32];
            }
            sumi += sm[2 * j] * lo + sm[2 * j + 1] * hi;
        }
        for (int j = 0; j < 8; j++)
            summ += sm[8 + j] * (bsums[2 * j] + bsums[2 * j + 1]);
        const float xd = ft_cpu_f32(x);
        sum += ft_cpu_f16(w) * xd * (float)sumi - ft_cpu_f16(w + 2) * xd * (float)summ;
    }
    return sum;
}

float ft_cpu_dot_q6_k_c(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row, *x = x_row;
    const uint32_t nb = cols / FT_CPU_QK_K;
    float sum = 0.0f;
    for (uint32_t b = 0; b < nb; b++, w += FT_CPU_Q6_K_BYTES, x += FT_CPU_Q8_K_BYTES) {
        const uint8_t *ql = w, *qh = w + 128;
        const int8_t *sc = (const int8_t *)(w + 192);
        const int8_t *q8 = (const int8_t *)(x + 4);
        int16_t bsums[16];
        memcpy(bsums, x + 4 + FT_CPU_QK_K, sizeof(bsums));
        /* Levels are stored as q + 32 with q in [-32, 32): the dot is
         * sum(sc * (q + 32) . a) - 32 * sum(sc * sum(a)), the sums of a per
         * group of 16 being Q8_K's bsums. (Writing (q + 32 - 32) * a in one
         * expression makes GCC 12 emit a wrong VNNI dot product with
         * -mavxvnni/-mavx512vnni; this form is also cheaper.) */
        int32_t sumi = 0;
        for (int g = 0; g < 16; g++)
            sumi -= 32 * sc[g] * bsums[g];
        /* Two halves of 128 elements; in each, 32 bytes of qh and 64 of ql
         * give four runs of 32 elements, each with two scales of 16. */
        for (int h = 0; h < 2; h++, ql += 64, qh += 32, sc += 8, q8 += 128) {
            for (int half = 0; half < 2; half++) {
                int32_t s[4] = {0, 0, 0, 0};
                for (int l = 16 * half; l < 16 * half + 16; l++) {
                    s[0] += ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) * q8[l];
                    s[1] += ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) * q8[l + 32];
                    s[2] += ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) * q8[l + 64];
                    s[3] += ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) * q8[l + 96];
                }
                for (int k = 0; k < 4; k++)
                    sumi += sc[half + 2 * k] * s[k];
            }
        }
        sum += ft_cpu_f16(w + 208) * ft_cpu_f32(x) * (float)sumi;
    }
    return sum;
}
