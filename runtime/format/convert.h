/* Element-format conversions: IEEE half, bfloat16 and ggml's Q8_0 blocks,
 * all bit-identical to ggml's scalar reference code, so that a weight the
 * compiler converts has exactly the bytes llama.cpp's tools would write.
 *
 * fp16: round to nearest even; overflow gives +-inf; subnormals are exact;
 *       NaN becomes the quiet NaN 0x7e00 with the sign kept (as ggml).
 * bf16: round to nearest even; NaN stays NaN (quiet bit forced, as ggml
 *       and torch).
 * Q8_0: blocks of 32 elements: an fp16 scale d = amax / 127 and 32 int8
 *       q = roundf(x / d) (34 bytes a block), as quantize_row_q8_0_ref.
 * Q4_0: blocks of 32: fp16 d = max / -8 (max: the element of largest
 *       magnitude, sign kept) and 16 bytes of 4-bit q = x / d + 8, element j
 *       in the low nibble of byte j and element j + 16 in its high nibble
 *       (18 bytes), as quantize_row_q4_0_ref; x = (q - 8) * d.
 * K-quants (super-blocks of 256 elements, ggml-common.h layouts):
 * Q4_K: fp16 d, fp16 dmin, 12 bytes of eight 6-bit scales and mins, 128
 *       bytes of 4-bit q (144 bytes); x = d * sc * q - dmin * m per 32
 *       elements, fitted by make_qkx2_quants (quantize_row_q4_K_ref).
 * Q6_K: 128 bytes low 4 bits, 64 bytes high 2 bits, 16 int8 scales, fp16 d
 *       at the end (210 bytes); x = d * sc * (q - 32) per 16 elements,
 *       fitted by make_qx_quants (quantize_row_q6_K_ref).
 * Q8_K: float d, 256 int8 q, 16 int16 sums of 16 q each (292 bytes): ggml's
 *       activation format for K-quant dot products (quantize_row_q8_K_ref).
 *
 * Bit identity holds for ggml built without floating-point contraction
 * (this project builds with -std=c11, which implies -ffp-contract=off): the
 * K-quant fitting loops are long float reductions, and a compiler that fuses
 * multiply-adds may round them differently. */
#ifndef FT_FORMAT_CONVERT_H
#define FT_FORMAT_CONVERT_H

#include "freetoken.h"
#include "dtype.h"

#include <stdint.h>

#define FT_Q8_0_BLOCK_ELEMS 32u
#define FT_Q8_0_BLOCK_BYTES 34u
#define FT_Q4_0_BLOCK_ELEMS 32u
#define FT_Q4_0_BLOCK_BYTES 18u
#define FT_QK_K 256u /* elements of a K-quant super-block */
#define FT_Q4_K_BLOCK_BYTES 144u
#define FT_Q6_K_BLOCK_BYTES 210u
#define FT_Q8_K_BLOCK_BYTES 292u

float ft_fp16_to_fp32(uint16_t h);
uint16_t ft_fp32_to_fp16(float f);
float ft_bf16_to_fp32(uint16_t h);
uint16_t ft_fp32_to_bf16(float f);

/* n: elements, a multiple of 32 (the caller checks; see ft_convert_row).
 * y receives n / 32 blocks of 34 bytes; no alignment is required. */
void ft_quantize_row_q8_0(const float *x, void *y, uint64_t n);
void ft_dequantize_row_q8_0(const void *x, float *y, uint64_t n);
void ft_quantize_row_q4_0(const float *x, void *y, uint64_t n);
void ft_dequantize_row_q4_0(const void *x, float *y, uint64_t n);

/* K-quants (quant_k.c): n a multiple of 256. */
void ft_quantize_row_q4_k(const float *x, void *y, uint64_t n);
void ft_dequantize_row_q4_k(const void *x, float *y, uint64_t n);
void ft_quantize_row_q6_k(const float *x, void *y, uint64_t n);
void ft_dequantize_row_q6_k(const void *x, float *y, uint64_t n);
void ft_quantize_row_q8_k(const float *x, void *y, uint64_t n);
void ft_dequantize_row_q8_k(const void *x, float *y, uint64_t n);

/* 1 when ft_quantize_row / ft_dequantize_row handle the format: F32, F16,
 * BF16, Q8_0, Q4_0, Q4_K, Q6_K, Q8_K. */
int ft_quant_supported(ft_dtype_t t);

/* Any supported format from / to f32. n must be a multiple of the format's
 * block size (the caller checks, e.g. with ft_dtype_row_bytes); an
 * unsupported format leaves y untouched. y needs no alignment. */
void ft_quantize_row(ft_dtype_t dst, const float *x, void *y, uint64_t n);
void ft_dequantize_row(ft_dtype_t src, const void *x, float *y, uint64_t n);

/* Converts one row of n_elems elements from src to dst format, through f32.
 * src and dst may each be F32, F16, BF16, Q8_0, Q4_0, Q4_K or Q6_K; the same
 * format is a plain copy. Errors: FT_STATUS_UNSUPPORTED naming both formats for any
 * other pair, FT_STATUS_INVALID_ARGUMENT when n_elems is not a multiple of
 * a block format's block size. The rows must not overlap. Allocates nothing
 * (converts through a small stack buffer). */
ft_status_t ft_convert_row(ft_dtype_t dst, void *dst_row, ft_dtype_t src, const void *src_row,
                           uint64_t n_elems);

#endif
