/* MXFP4 and NVFP4 blocks: ports of ggml's quantize_row_mxfp4_ref,
 * dequantize_row_mxfp4, quantize_row_nvfp4_ref and dequantize_row_nvfp4
 * (ggml/src/ggml-quants.c, llama.cpp at 01243c58), with ggml's block
 * layouts (ggml-common.h block_mxfp4, block_nvfp4) and scale helpers
 * (ggml-impl.h ggml_e8m0_to_fp32_half, ggml_ue4m3_to_fp32,
 * ggml_fp32_to_ue4m3). Both keep ggml's convention of E2M1 values doubled
 * (minifloat.h) with the scale halved.
 *
 * MXFP4 (17 bytes per 32): u8 e (E8M0), qs[16]: element j in the low
 *   nibble of qs[j], element j + 16 in its high nibble; x = kv[q] * 2^(e-128).
 * NVFP4 (36 bytes per 64): u8 d[4] (UE4M3, one per 16 elements), qs[32]:
 *   sub-block s is qs[8s .. 8s + 8): element j in the low nibble, j + 8 in
 *   the high one; x = kv[q] * ue4m3(d[s]) / 2. */
#include "convert.h"
#include "minifloat.h"

#include <math.h>

/* ggml's best_index_mxfp4: the level nearest to x at scale d, the first
 * (smaller magnitude) on a tie; a NaN x compares false everywhere: 0. */
static uint8_t ft_fp4_best_index(float x, float d)
{
    int best = 0;
    float best_err = fabsf(ft_e2m1_x2[0] * d - x);
    for (int i = 1; i < 16; i++) {
        const float err = fabsf(ft_e2m1_x2[i] * d - x);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return (uint8_t)best;
}

void ft_quantize_row_mxfp4(const float *x, void *y, uint64_t n)
{
    uint8_t *out = y;
    for (uint64_t i = 0; i < n / FT_MXFP4_BLOCK_ELEMS; i++) {
        const float *xb = x + i * FT_MXFP4_BLOCK_ELEMS;
        uint8_t *blk = out + i * FT_MXFP4_BLOCK_BYTES;
        float amax = 0.0f;
        for (uint32_t j = 0; j < FT_MXFP4_BLOCK_ELEMS; j++)
            if (amax < fabsf(xb[j])) amax = fabsf(xb[j]);
        /* ggml: e = (uint8_t)(floorf(log2f(amax)) - 2 + 127): the scale
         * puts amax in [4, 8) of the doubled levels (max 12 = 6 * 2). The
         * cast is undefined in C outside [0, 255] (amax < 2^-125 or inf),
         * so those clamp here; every other block is ggml's byte. */
        uint8_t e = 0;
        if (amax > 0.0f) {
            const float t = floorf(log2f(amax)) - 2 + 127;
            e = t < 0.0f ? 0 : t > 255.0f ? 255 : (uint8_t)t;
        }
        const float d = ft_e8m0_half(e);
        blk[0] = e;
        for (uint32_t j = 0; j < FT_MXFP4_BLOCK_ELEMS / 2; j++)
            blk[1 + j] = (uint8_t)(ft_fp4_best_index(xb[j], d) |
                                   ft_fp4_best_index(xb[j + FT_MXFP4_BLOCK_ELEMS / 2], d) << 4);
    }
}

void ft_dequantize_row_mxfp4(const void *x, float *y, uint64_t n)
{
    const uint8_t *in = x;
    for (uint64_t i = 0; i < n / FT_MXFP4_BLOCK_ELEMS; i++) {
        const uint8_t *blk = in + i * FT_MXFP4_BLOCK_BYTES;
        const float d = ft_e8m0_half(blk[0]);
        float *yb = y + i * FT_MXFP4_BLOCK_ELEMS;
        for (uint32_t j = 0; j < FT_MXFP4_BLOCK_ELEMS / 2; j++) {
            yb[j] = ft_e2m1_x2[blk[1 + j] & 0x0f] * d;
            yb[j + FT_MXFP4_BLOCK_ELEMS / 2] = ft_e2m1_x2[blk[1 + j] >> 4] * d;
        }
    }
}

/* ggml_fp32_to_ue4m3, kept literally: the UE4M3 code of x (clamped to 448)
 * with the mantissa rounded half up. Note its one quirk: every x with a
 * float32 exponent of 8 (256 <= x < 448) becomes 0x7e = 448, so a
 * sub-block whose amax exceeds 6 * 256 = 1536 gets a coarser scale than it
 * could; weights never come near. */
static uint8_t ft_f32_to_ue4m3(float x)
{
    if (!(x > 0.0f)) return 0;
    if (x > 448.0f) x = 448.0f;
    uint32_t bits;
    memcpy(&bits, &x, 4);
    const int fp32_exp = (int)((bits >> 23) & 0xff) - 127;
    const int fp32_man = (int)((bits >> 20) & 0x7);
    int exp = fp32_exp + 7;
    if (exp <= 0) { /* subnormal: man * 2^-9 */
        int man = (int)(x * 512.0f + 0.5f);
        if (man > 7) man = 7;
        return man < 1 ? 0 : (uint8_t)man;
    }
    if (exp >= 15) return 0x7e;
    int man = fp32_man + (int)((bits >> 19) & 1);
    if (man > 7) {
        man = 0;
        if (++exp >= 15) return 0x7e;
    }
    return (uint8_t)((exp << 3) | man);
}

void ft_quantize_row_nvfp4(const float *x, void *y, uint64_t n)
{
    uint8_t *out = y;
    const uint32_t n_sub = FT_NVFP4_BLOCK_ELEMS / FT_NVFP4_SUB_ELEMS;
    for (uint64_t i = 0; i < n / FT_NVFP4_BLOCK_ELEMS; i++) {
        uint8_t *blk = out + i * FT_NVFP4_BLOCK_BYTES;
        for (uint32_t s = 0; s < n_sub; s++) {
            const float *xb = x + i * FT_NVFP4_BLOCK_ELEMS + s * FT_NVFP4_SUB_ELEMS;
            float amax = 0.0f;
            for (uint32_t j = 0; j < FT_NVFP4_SUB_ELEMS; j++)
                if (amax < fabsf(xb[j])) amax = fabsf(xb[j]);
            /* amax / 6 maps the largest E2M1 level (6) onto amax */
            const uint8_t ue = ft_f32_to_ue4m3(amax / 6.0f);
            blk[s] = ue;
            const float d = ft_ue4m3_half(ue);
            uint8_t *qs = blk + n_sub + s * (FT_NVFP4_SUB_ELEMS / 2);
            for (uint32_t j = 0; j < FT_NVFP4_SUB_ELEMS / 2; j++)
                qs[j] = (uint8_t)(ft_fp4_best_index(xb[j], d) |
                                  ft_fp4_best_index(xb[j + FT_NVFP4_SUB_ELEMS / 2], d) << 4);
        }
    }
}

void ft_dequantize_row_nvfp4(const void *x, float *y, uint64_t n)
{
    const uint8_t *in = x;
    const uint32_t n_sub = FT_NVFP4_BLOCK_ELEMS / FT_NVFP4_SUB_ELEMS;
    for (uint64_t i = 0; i < n / FT_NVFP4_BLOCK_ELEMS; i++) {
        const uint8_t *blk = in + i * FT_NVFP4_BLOCK_BYTES;
        for (uint32_t s = 0; s < n_sub; s++) {
            const float d = ft_ue4m3_half(blk[s]);
            const uint8_t *qs = blk + n_sub + s * (FT_NVFP4_SUB_ELEMS / 2);
            float *yb = y + i * FT_NVFP4_BLOCK_ELEMS + s * FT_NVFP4_SUB_ELEMS;
            for (uint32_t j = 0; j < FT_NVFP4_SUB_ELEMS / 2; j++) {
                yb[j] = ft_e2m1_x2[qs[j] & 0x0f] * d;
                yb[j + FT_NVFP4_SUB_ELEMS / 2] = ft_e2m1_x2[qs[j] >> 4] * d;
            }
        }
    }
}
