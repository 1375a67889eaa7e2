/* Portable dot products of float-format weight rows (F32, F16, BF16) with
 * float32 activations. Sixteen independent partial sums: that is what lets
 * the compiler vectorize a float reduction without -ffast-math (the order
 * of additions is fixed by the source, so every build gives the same bits),
 * and it hides the FMA latency. */
#include "cpu_dot.h"

#include <string.h>

enum { FT_DOT_LANES = 16 };

/* Sums the lanes pairwise, then the scalar tail, in a fixed order. */
static float ft_dot_finish(float acc[FT_DOT_LANES], float tail)
{
    for (int width = FT_DOT_LANES / 2; width > 0; width /= 2)
        for (int k = 0; k < width; k++)
            acc[k] += acc[k + width];
    return acc[0] + tail;
}

float ft_cpu_dot_f32_c(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row;
    const float *x = x_row;
    float acc[FT_DOT_LANES] = {0};
    uint32_t i = 0;
    for (; i + FT_DOT_LANES <= cols; i += FT_DOT_LANES) {
        float wv[FT_DOT_LANES];
        memcpy(wv, w + 4 * (size_t)i, sizeof(wv)); /* rows need no alignment */
        for (int k = 0; k < FT_DOT_LANES; k++)
            acc[k] += wv[k] * x[i + k];
    }
    float tail = 0.0f;
    for (; i < cols; i++)
        tail += ft_cpu_f32(w + 4 * (size_t)i) * x[i];
    return ft_dot_finish(acc, tail);
}

float ft_cpu_dot_f16_c(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row;
    const float *x = x_row;
    float acc[FT_DOT_LANES] = {0};
    uint32_t i = 0;
    for (; i + FT_DOT_LANES <= cols; i += FT_DOT_LANES)
        for (int k = 0; k < FT_DOT_LANES; k++)
            acc[k] += ft_cpu_f16(w + 2 * ((size_t)i + k)) * x[i + k];
    float tail = 0.0f;
    for (; i < cols; i++)
        tail += ft_cpu_f16(w + 2 * (size_t)i) * x[i];
    return ft_dot_finish(acc, tail);
}

float ft_cpu_dot_bf16_c(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row;
    const float *x = x_row;
    float acc[FT_DOT_LANES] = {0};
    uint32_t i = 0;
    for (; i + FT_DOT_LANES <= cols; i += FT_DOT_LANES) {
        uint16_t h[FT_DOT_LANES];
        memcpy(h, w + 2 * (size_t)i, sizeof(h));
        for (int k = 0; k < FT_DOT_LANES; k++) {
            const uint32_t u = (uint32_t)h[k] << 16;
            float f;
            memcpy(&f, &u, 4);
            acc[k] += f * x[i + k];
        }
    }
    float tail = 0.0f;
    for (; i < cols; i++) {
        const uint32_t u = (uint32_t)(w[2 * (size_t)i] | (w[2 * (size_t)i + 1] << 8)) << 16;
        float f;
        memcpy(&f, &u, 4);
        tail += f * x[i];
    }
    return ft_dot_finish(acc, tail);
}
