/* The ternary formats TQ1_0 and TQ2_0 (ggml types 34, 35; BitNet b1.58
 * and TriLM weights): every element is d * t, t in {-1, 0, 1}, one fp16 d
 * per 256 elements. Layouts (ggml-common.h):
 *   block_tq1_0 (54 B): qs[48] @0, qh[4] @48, fp16 d @52. Base-3 digits
 *     packed 5 a byte (4 in qh) as a fixed-point fraction: byte b holds
 *     digits t0..t4 as ceil((t0 3^4 + t1 3^3 + .. + t4) 256 / 243), and
 *     digit n is ((uint8)(b 3^n) 3) >> 8. Elements 0..159 are digit n of
 *     qs[m] for element 32n + m; 160..239 digit n of qs[32 + m] for 160 +
 *     16n + m; 240..255 digit n of qh[j] for 240 + 4n + j.
 *   block_tq2_0 (66 B): qs[64] @0, fp16 d @64; element 128h + 32l + m is
 *     bits 2l of qs[32h + m], t + 1.
 * The quantizers are ports of ggml's quantize_row_tq{1,2}_0_ref: d = amax,
 * t = lroundf(x / d) (non-finite input, whose lroundf ggml leaves
 * unspecified, gives 0). */
#include "convert.h"
#include "quant_k_fit.h"

#include <math.h>

enum { FT_TQ_QK = 256 };

/* lroundf(v) + 1 for |v| <= 1 (half away from zero), NaN: 1. */
static inline int ft_tq_digit(float v)
{
    return v >= 0.5f ? 2 : v <= -0.5f ? 0 : 1;
}

static inline float ft_tq_scale(const float *x, float *id)
{
    float amax = 0.0f;
    for (int j = 0; j < FT_TQ_QK; j++)
        amax = FT_QK_MAX(amax, fabsf(x[j]));
    *id = amax ? 1.0f / amax : 0.0f;
    return amax;
}

/* ceil(q 256 / 243): the digits as a fraction of 256. */
static inline uint8_t ft_tq_pack(unsigned q)
{
    return (uint8_t)((q * 256 + (243 - 1)) / 243);
}

void ft_quantize_row_tq1_0(const float *x, void *vy, uint64_t n)
{
    uint8_t *y = vy;
    for (uint64_t b = 0; b < n / FT_TQ_QK; b++, y += FT_TQ1_0_BLOCK_BYTES) {
        float id;
        ft_qk_put_f16(y + 52, ft_tq_scale(x, &id));
        for (int m = 0; m < 32; m++) {
            unsigned q = 0;
            for (int k = 0; k < 5; k++)
                q = q * 3 + (unsigned)ft_tq_digit(x[m + 32 * k] * id);
            y[m] = ft_tq_pack(q);
        }
        x += 160;
        for (int m = 0; m < 16; m++) {
            unsigned q = 0;
            for (int k = 0; k < 5; k++)
                q = q * 3 + (unsigned)ft_tq_digit(x[m + 16 * k] * id);
            y[32 + m] = ft_tq_pack(q);
        }
        x += 80;
        for (int j = 0; j < 4; j++) {
            unsigned q = 0;
            for (int m = 0; m < 4; m++)
                q = q * 3 + (unsigned)ft_tq_digit(x[j + 4 * m] * id);
            y[48 + j] = ft_tq_pack(q * 3); /* the first digit as the most significant */
        }
        x += 16;
    }
}

/* Digit k of a TQ1_0 byte, minus 1. */
static inline int ft_tq1_trit(uint8_t byte, int k)
{
    static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
    const uint8_t q = (uint8_t)(byte * pow3[k]);
    return (((unsigned)q * 3) >> 8) - 1;
}

void ft_tq1_0_unpack(const uint8_t *b, int8_t t[256])
{
    for (int k = 0; k < 5; k++)
        for (int m = 0; m < 32; m++)
            t[32 * k + m] = (int8_t)ft_tq1_trit(b[m], k);
    for (int k = 0; k < 5; k++)
        for (int m = 0; m < 16; m++)
            t[160 + 16 * k + m] = (int8_t)ft_tq1_trit(b[32 + m], k);
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 4; j++)
            t[240 + 4 * k + j] = (int8_t)ft_tq1_trit(b[48 + j], k);
}

void ft_dequantize_row_tq1_0(const void *vx, float *y, uint64_t n)
{
    const uint8_t *x = vx;
    for (uint64_t b = 0; b < n / FT_TQ_QK; b++, x += FT_TQ1_0_BLOCK_BYTES, y += FT_TQ_QK) {
        int8_t t[256];
        ft_tq1_0_unpack(x, t);
        const float d = ft_qk_get_f16(x + 52);
        for (int i = 0; i < FT_TQ_QK; i++)
            y[i] = (float)t[i] * d;
    }
}

void ft_quantize_row_tq2_0(const float *x, void *vy, uint64_t n)
{
    uint8_t *y = vy;
    for (uint64_t b = 0; b < n / FT_TQ_QK; b++, y += FT_TQ2_0_BLOCK_BYTES, x += FT_TQ_QK) {
        float id;
        ft_qk_put_f16(y + 64, ft_tq_scale(x, &id));
        for (int h = 0; h < 2; h++)
            for (int m = 0; m < 32; m++) {
                unsigned q = 0;
                for (int l = 0; l < 4; l++)
                    q |= (unsigned)ft_tq_digit(x[128 * h + 32 * l + m] * id) << (2 * l);
                y[32 * h + m] = (uint8_t)q;
            }
    }
}

void ft_tq2_0_unpack(const uint8_t *b, int8_t t[256])
{
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 4; l++)
            for (int m = 0; m < 32; m++)
                t[128 * h + 32 * l + m] = (int8_t)(((b[32 * h + m] >> (2 * l)) & 3) - 1);
}

void ft_dequantize_row_tq2_0(const void *vx, float *y, uint64_t n)
{
    const uint8_t *x = vx;
    for (uint64_t b = 0; b < n / FT_TQ_QK; b++, x += FT_TQ2_0_BLOCK_BYTES, y += FT_TQ_QK) {
        int8_t t[256];
        ft_tq2_0_unpack(x, t);
        const float d = ft_qk_get_f16(x + 64);
        for (int i = 0; i < FT_TQ_QK; i++)
            y[i] = (float)t[i] * d;
    }
}
