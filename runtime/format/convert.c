/* Scalar conversions, written to match ggml bit for bit: the fp16 pair is
 * the branch-free FP16 library code ggml uses without F16C (which agrees
 * with F16C hardware rounding), bf16 is ggml_compute_fp32_to_bf16, and Q8_0
 * is quantize_row_q8_0_ref / dequantize_row_q8_0. Also the plain rows,
 * the dispatch through dtype.h's table (Q4_0 lives in quant_q4_0.c, the
 * K-quants in quant_k.c, the small floats in quant_fp4.c and quant_fp8.c)
 * and ft_convert_row. */
#include "convert.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static inline uint32_t ft_cvt_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline float ft_cvt_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

float ft_fp16_to_fp32(uint16_t h)
{
    const uint32_t w = (uint32_t)h << 16;
    const uint32_t sign = w & 0x80000000u;
    const uint32_t two_w = w + w;
    /* Normal and inf/nan: shift exponent+mantissa into place and rebias by
     * scaling with 2^-112 (which also maps the fp16 exponent 31 to 255). */
    const uint32_t exp_offset = 0xE0u << 23;
    const float normalized = ft_cvt_float((two_w >> 4) + exp_offset) * 0x1.0p-112f;
    /* Subnormal: the mantissa as the low bits of 0.5 * 2^k, minus 0.5. */
    const float denormalized = ft_cvt_float((two_w >> 17) | (126u << 23)) - 0.5f;
    const uint32_t cutoff = 1u << 27;
    const uint32_t result =
        sign | (two_w < cutoff ? ft_cvt_bits(denormalized) : ft_cvt_bits(normalized));
    return ft_cvt_float(result);
}

uint16_t ft_fp32_to_fp16(float f)
{
    /* Scaling up then down by powers of two makes the FPU do the rounding
     * to 10 mantissa bits (nearest even) and saturate to inf on overflow. */
    float base = (fabsf(f) * 0x1.0p+112f) * 0x1.0p-110f;
    const uint32_t w = ft_cvt_bits(f);
    const uint32_t shl1_w = w + w;
    const uint32_t sign = w & 0x80000000u;
    uint32_t bias = shl1_w & 0xFF000000u;
    if (bias < 0x71000000u) bias = 0x71000000u;
    base = ft_cvt_float((bias >> 1) + 0x07800000u) + base;
    const uint32_t bits = ft_cvt_bits(base);
    const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
    const uint32_t mantissa_bits = bits & 0x00000FFFu;
    const uint32_t nonsign = exp_bits + mantissa_bits;
    return (uint16_t)((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

float ft_bf16_to_fp32(uint16_t h)
{
    return ft_cvt_float((uint32_t)h << 16);
}

uint16_t ft_fp32_to_bf16(float f)
{
    const uint32_t u = ft_cvt_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: truncate and force quiet */
        return (uint16_t)((u >> 16) | 64u);
    return (uint16_t)((u + (0x7fffu + ((u >> 16) & 1u))) >> 16);
}

/* ggml's MAX macro, kept literally: its NaN behaviour decides amax. */
static inline float ft_cvt_max(float a, float b)
{
    return a > b ? a : b;
}

/* roundf(x) as int8. Finite in-range values are what ggml stores; NaN (from
 * an inf or NaN input, where ggml's cast is undefined) becomes 0. */
static inline int8_t ft_cvt_round_i8(float x)
{
    const float r = roundf(x);
    if (r >= -128.0f && r <= 127.0f) return (int8_t)r;
    return r > 127.0f ? 127 : r < -128.0f ? -128 : 0;
}

void ft_quantize_row_q8_0(const float *x, void *y, uint64_t n)
{
    uint8_t *out = y;
    const uint64_t n_blocks = n / FT_Q8_0_BLOCK_ELEMS;
    for (uint64_t i = 0; i < n_blocks; i++) {
        const float *xb = x + i * FT_Q8_0_BLOCK_ELEMS;
        uint8_t *blk = out + i * FT_Q8_0_BLOCK_BYTES;
        float amax = 0.0f;
        for (uint32_t j = 0; j < FT_Q8_0_BLOCK_ELEMS; j++)
            amax = ft_cvt_max(amax, fabsf(xb[j]));
        const float d = amax / ((1 << 7) - 1);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t dh = ft_fp32_to_fp16(d);
        blk[0] = (uint8_t)(dh & 0xff); /* little-endian ggml_half */
        blk[1] = (uint8_t)(dh >> 8);
        for (uint32_t j = 0; j < FT_Q8_0_BLOCK_ELEMS; j++) {
            const int8_t q = ft_cvt_round_i8(xb[j] * id);
            memcpy(blk + 2 + j, &q, 1);
        }
    }
}

void ft_dequantize_row_q8_0(const void *x, float *y, uint64_t n)
{
    const uint8_t *in = x;
    const uint64_t n_blocks = n / FT_Q8_0_BLOCK_ELEMS;
    for (uint64_t i = 0; i < n_blocks; i++) {
        const uint8_t *blk = in + i * FT_Q8_0_BLOCK_BYTES;
        const float d = ft_fp16_to_fp32((uint16_t)(blk[0] | (blk[1] << 8)));
        for (uint32_t j = 0; j < FT_Q8_0_BLOCK_ELEMS; j++) {
            int8_t q;
            memcpy(&q, blk + 2 + j, 1);
            y[i * FT_Q8_0_BLOCK_ELEMS + j] = q * d;
        }
    }
}

void ft_quantize_row_f32(const float *x, void *y, uint64_t n)
{
    memcpy(y, x, n * sizeof(float));
}

void ft_dequantize_row_f32(const void *x, float *y, uint64_t n)
{
    memcpy(y, x, n * sizeof(float));
}

void ft_quantize_row_f16(const float *x, void *y, uint64_t n)
{
    uint8_t *out = y;
    for (uint64_t i = 0; i < n; i++) {
        const uint16_t h = ft_fp32_to_fp16(x[i]);
        memcpy(out + 2 * i, &h, 2);
    }
}

void ft_dequantize_row_f16(const void *x, float *y, uint64_t n)
{
    const uint8_t *in = x;
    uint16_t h;
    for (uint64_t i = 0; i < n; i++) {
        memcpy(&h, in + 2 * i, 2);
        y[i] = ft_fp16_to_fp32(h);
    }
}

void ft_quantize_row_bf16(const float *x, void *y, uint64_t n)
{
    uint8_t *out = y;
    for (uint64_t i = 0; i < n; i++) {
        const uint16_t h = ft_fp32_to_bf16(x[i]);
        memcpy(out + 2 * i, &h, 2);
    }
}

void ft_dequantize_row_bf16(const void *x, float *y, uint64_t n)
{
    const uint8_t *in = x;
    uint16_t h;
    for (uint64_t i = 0; i < n; i++) {
        memcpy(&h, in + 2 * i, 2);
        y[i] = ft_bf16_to_fp32(h);
    }
}

int ft_quant_supported(ft_dtype_t t)
{
    const ft_dtype_info_t *info = ft_dtype_info(t);
    return info && info->quantize;
}

int ft_dequant_supported(ft_dtype_t t)
{
    const ft_dtype_info_t *info = ft_dtype_info(t);
    return info && info->dequantize;
}

/* The storage formats a row may be converted between (Q8_K is an
 * activation format only; F8_E5M2 rows are only read). */
static int ft_convert_supported(ft_dtype_t t, int as_src)
{
    return (as_src ? ft_dequant_supported(t) : ft_quant_supported(t)) &&
           !ft_dtype_has(t, FT_DTYPE_FLAG_ACT_ONLY);
}

void ft_dequantize_row(ft_dtype_t src, const void *x, float *y, uint64_t n)
{
    const ft_dtype_info_t *info = ft_dtype_info(src);
    if (info && info->dequantize)
        info->dequantize(x, y, n);
}

void ft_quantize_row(ft_dtype_t dst, const float *x, void *y, uint64_t n)
{
    const ft_dtype_info_t *info = ft_dtype_info(dst);
    if (info && info->quantize)
        info->quantize(x, y, n);
}

/* "f32, f16, f8_e5m2 (as a source), ... and fp8": the formats
 * ft_convert_row takes, from the table. */
static const char *ft_convert_list(char *buf, size_t buf_size)
{
    int n_match = 0, seen = 0;
    for (int i = 1; i < FT_DTYPE_COUNT; i++)
        n_match += ft_convert_supported((ft_dtype_t)i, 1);
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 1; i < FT_DTYPE_COUNT; i++) {
        const ft_dtype_t t = (ft_dtype_t)i;
        if (!ft_convert_supported(t, 1))
            continue;
        seen++;
        const char *sep = seen == 1 ? "" : seen == n_match ? " and " : ", ";
        const int n = snprintf(buf + len, buf_size - len, "%s%s%s", sep, ft_dtype_name(t),
                               ft_convert_supported(t, 0) ? "" : " (as a source)");
        if (n < 0 || (size_t)n >= buf_size - len) {
            buf[len] = '\0'; /* cut after the last whole name */
            break;
        }
        len += (size_t)n;
    }
    return buf;
}

ft_status_t ft_convert_row(ft_dtype_t dst, void *dst_row, ft_dtype_t src, const void *src_row,
                           uint64_t n_elems)
{
    if (!ft_convert_supported(dst, 0) || !ft_convert_supported(src, 1)) {
        char list[400];
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "cannot convert a row from %s to %s: only %s are supported",
                              ft_dtype_name(src), ft_dtype_name(dst),
                              ft_convert_list(list, sizeof(list)));
    }
    uint64_t src_bytes, dst_bytes;
    if (!ft_dtype_row_bytes(src, n_elems, &src_bytes) ||
        !ft_dtype_row_bytes(dst, n_elems, &dst_bytes))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "cannot convert a row of %llu elements from %s to %s: rows of %s "
                              "hold a multiple of %u elements and rows of %s a multiple of %u",
                              (unsigned long long)n_elems, ft_dtype_name(src), ft_dtype_name(dst),
                              ft_dtype_name(src), ft_dtype_info(src)->block_elems,
                              ft_dtype_name(dst), ft_dtype_info(dst)->block_elems);
    if (dst == src) {
        memcpy(dst_row, src_row, src_bytes);
        return FT_OK;
    }
    if (src == FT_DTYPE_F8_E4M3 && dst == FT_DTYPE_FP8) {
        ft_fp8_from_e4m3(src_row, dst_row, n_elems);
        return FT_OK;
    }
    /* 256 elements = 8 Q8_0/Q4_0/MXFP4 blocks, 4 NVFP4, 2 FP8 or one
     * K-quant super-block: a chunk never splits a block. */
    enum { CHUNK = 256 };
    float buf[CHUNK];
    const ft_dtype_info_t *si = ft_dtype_info(src), *di = ft_dtype_info(dst);
    const uint8_t *in = src_row;
    uint8_t *out = dst_row;
    for (uint64_t done = 0; done < n_elems; done += CHUNK) {
        const uint64_t n = n_elems - done < CHUNK ? n_elems - done : CHUNK;
        ft_dequantize_row(src, in + done / si->block_elems * si->block_bytes, buf, n);
        ft_quantize_row(dst, buf, out + done / di->block_elems * di->block_bytes, n);
    }
    return FT_OK;
}
