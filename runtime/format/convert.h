/* Element-format conversions: IEEE half, bfloat16 and ggml's Q8_0 blocks,
 * all bit-identical to ggml's scalar reference code, so that a weight the
 * compiler converts has exactly the bytes llama.cpp's tools would write.
 *
 * fp16: round to nearest even; overflow gives +-inf; subnormals are exact;
 *       NaN becomes the quiet NaN 0x7e00 with the sign kept (as ggml).
 * bf16: round to nearest even; NaN stays NaN (quiet bit forced, as ggml
 *       and torch).
 * Q8_0: blocks of 32 elements: an fp16 scale d = amax / 127 and 32 int8
 *       q = roundf(x / d) (34 bytes a block), as quantize_row_q8_0_ref. */
#ifndef FT_FORMAT_CONVERT_H
#define FT_FORMAT_CONVERT_H

#include "freetoken.h"
#include "dtype.h"

#include <stdint.h>

#define FT_Q8_0_BLOCK_ELEMS 32u
#define FT_Q8_0_BLOCK_BYTES 34u

float ft_fp16_to_fp32(uint16_t h);
uint16_t ft_fp32_to_fp16(float f);
float ft_bf16_to_fp32(uint16_t h);
uint16_t ft_fp32_to_bf16(float f);

/* n: elements, a multiple of 32 (the caller checks; see ft_convert_row).
 * y receives n / 32 blocks of 34 bytes; no alignment is required. */
void ft_quantize_row_q8_0(const float *x, void *y, uint64_t n);
void ft_dequantize_row_q8_0(const void *x, float *y, uint64_t n);

/* Converts one row of n_elems elements from src to dst format, through f32.
 * src and dst may each be F32, F16, BF16 or Q8_0; the same format is a
 * plain copy. Errors: FT_STATUS_UNSUPPORTED naming both formats for any
 * other pair, FT_STATUS_INVALID_ARGUMENT when n_elems is not a multiple of
 * a block format's block size. The rows must not overlap. Allocates nothing
 * (converts through a small stack buffer). */
ft_status_t ft_convert_row(ft_dtype_t dst, void *dst_row, ft_dtype_t src, const void *src_row,
                           uint64_t n_elems);

#endif
