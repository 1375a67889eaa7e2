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
 * Q4_1, Q5_1: blocks of 32 with fp16 d = (max - min) / 15 (31) and m = min,
 *       x = q * d + m; Q5_0: d = max / -16, x = (q - 16) * d; the fifth
 *       bits in a u32 qh (quant_legacy.c; quantize_row_q*_ref).
 * K-quants (super-blocks of 256 elements, ggml-common.h layouts):
 * Q4_K: fp16 d, fp16 dmin, 12 bytes of eight 6-bit scales and mins, 128
 *       bytes of 4-bit q (144 bytes); x = d * sc * q - dmin * m per 32
 *       elements, fitted by make_qkx2_quants (quantize_row_q4_K_ref).
 * Q5_K: as Q4_K with 5-bit q (qh[32] high bits before qs[128]; 176 bytes),
 *       fitted by make_qkx2_quants (quantize_row_q5_K_ref).
 * Q3_K: 3-bit q - 4 with sixteen signed 6-bit scales per 16 elements, fp16
 *       d (110 bytes), fitted by make_q3_quants (quantize_row_q3_K_ref).
 * Q2_K: 2-bit q with 4-bit scales and mins per 16 elements, fp16 d and
 *       dmin (84 bytes), fitted by make_qkx2_quants with absolute error
 *       (quantize_row_q2_K_ref). Layouts: quant_k_low.c.
 * Q6_K: 128 bytes low 4 bits, 64 bytes high 2 bits, 16 int8 scales, fp16 d
 *       at the end (210 bytes); x = d * sc * (q - 32) per 16 elements,
 *       fitted by make_qx_quants (quantize_row_q6_K_ref).
 * Q8_K: float d, 256 int8 q, 16 int16 sums of 16 q each (292 bytes): ggml's
 *       activation format for K-quant dot products (quantize_row_q8_K_ref).
 * IQ4_NL: blocks of 32: fp16 d and 4-bit indices into ggml's 16-value
 *       codebook kvalues_iq4nl (18 bytes); IQ4_XS: 256 elements with eight
 *       6-bit sub-block scales (136 bytes). Fitted as ggml's quantize_iq4_nl
 *       / quantize_iq4_xs without an importance matrix (quant_iq4.c).
 * IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S: groups of 8 (4) magnitudes as
 *       one index into ggml's codebooks (iq_grids.inc), with signs and
 *       scales per 16 or 32 elements (quant_iq_grid.c); quantized here by a
 *       simple nearest-grid fit (ggml's needs an importance matrix).
 * IQ1_S, IQ1_M: groups of 8 values in {-1, 0, 1} as one index into ggml's
 *       2048-point codebook, shifted by +-1/8, 3-bit scales per 32 (16)
 *       elements (quant_iq1.c); quantized by a least-squares grid fit.
 * 4- and 8-bit floats (quant_fp4.c, quant_fp8.c, layouts in dtype.h):
 * MXFP4: E8M0 exponent e = floor(log2(amax)) - 2 + 127 and the E2M1 level
 *       nearest to each x (quantize_row_mxfp4_ref).
 * NVFP4: per 16 elements a UE4M3 scale of amax / 6 and the nearest E2M1
 *       level (quantize_row_nvfp4_ref).
 * FP8:  per 128 elements an f32 d = amax / 448 and E4M3 x / d, rounded to
 *       nearest even. Plain F8_E4M3 rows: each x rounded to nearest even,
 *       saturating at +-448; F8_E5M2 rows are read, not written.
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
#define FT_Q4_1_BLOCK_BYTES 20u /* Q4_1, Q5_0, Q5_1: 32 elements */
#define FT_Q5_0_BLOCK_BYTES 22u
#define FT_IQ4_NL_BLOCK_BYTES 18u  /* 32 elements */
#define FT_IQ4_XS_BLOCK_BYTES 136u /* 256 elements */
#define FT_TQ1_0_BLOCK_BYTES 54u   /* 256 elements */
#define FT_IQ1_S_BLOCK_BYTES 50u   /* 256 elements */
#define FT_IQ1_M_BLOCK_BYTES 56u
#define FT_TQ2_0_BLOCK_BYTES 66u
#define FT_Q5_1_BLOCK_BYTES 24u
#define FT_QK_K 256u /* elements of a K-quant super-block */
#define FT_Q2_K_BLOCK_BYTES 84u
#define FT_Q3_K_BLOCK_BYTES 110u
#define FT_Q4_K_BLOCK_BYTES 144u
#define FT_Q5_K_BLOCK_BYTES 176u
#define FT_Q6_K_BLOCK_BYTES 210u
#define FT_Q8_K_BLOCK_BYTES 292u
#define FT_MXFP4_BLOCK_ELEMS 32u
#define FT_MXFP4_BLOCK_BYTES 17u
#define FT_NVFP4_BLOCK_ELEMS 64u
#define FT_NVFP4_SUB_ELEMS 16u /* elements per UE4M3 scale */
#define FT_NVFP4_BLOCK_BYTES 36u
#define FT_FP8_BLOCK_ELEMS 128u
#define FT_FP8_BLOCK_BYTES 132u

float ft_fp16_to_fp32(uint16_t h);
uint16_t ft_fp32_to_fp16(float f);
float ft_bf16_to_fp32(uint16_t h);
uint16_t ft_fp32_to_bf16(float f);

/* Plain rows of n elements (little-endian, no alignment needed): F32 is a
 * copy, F16 and BF16 round to nearest even as above. */
void ft_quantize_row_f32(const float *x, void *y, uint64_t n);
void ft_dequantize_row_f32(const void *x, float *y, uint64_t n);
void ft_quantize_row_f16(const float *x, void *y, uint64_t n);
void ft_dequantize_row_f16(const void *x, float *y, uint64_t n);
void ft_quantize_row_bf16(const float *x, void *y, uint64_t n);
void ft_dequantize_row_bf16(const void *x, float *y, uint64_t n);

/* n: elements, a multiple of 32 (the caller checks; see ft_convert_row).
 * y receives n / 32 blocks of 34 bytes; no alignment is required. */
void ft_quantize_row_q8_0(const float *x, void *y, uint64_t n);
void ft_dequantize_row_q8_0(const void *x, float *y, uint64_t n);
void ft_quantize_row_q4_0(const float *x, void *y, uint64_t n);
void ft_dequantize_row_q4_0(const void *x, float *y, uint64_t n);
/* quant_legacy.c: Q4_1, Q5_0, Q5_1 (n a multiple of 32). */
void ft_quantize_row_q4_1(const float *x, void *y, uint64_t n);
void ft_dequantize_row_q4_1(const void *x, float *y, uint64_t n);
void ft_quantize_row_q5_0(const float *x, void *y, uint64_t n);
void ft_dequantize_row_q5_0(const void *x, float *y, uint64_t n);
void ft_quantize_row_q5_1(const float *x, void *y, uint64_t n);
void ft_dequantize_row_q5_1(const void *x, float *y, uint64_t n);

/* K-quants (quant_k.c): n a multiple of 256. */
void ft_quantize_row_q4_k(const float *x, void *y, uint64_t n);
void ft_dequantize_row_q4_k(const void *x, float *y, uint64_t n);
void ft_quantize_row_q2_k(const float *x, void *y, uint64_t n);
void ft_dequantize_row_q2_k(const void *x, float *y, uint64_t n);
void ft_quantize_row_q3_k(const float *x, void *y, uint64_t n);
void ft_dequantize_row_q3_k(const void *x, float *y, uint64_t n);
void ft_quantize_row_q5_k(const float *x, void *y, uint64_t n);
void ft_dequantize_row_q5_k(const void *x, float *y, uint64_t n);
void ft_quantize_row_q6_k(const float *x, void *y, uint64_t n);
void ft_dequantize_row_q6_k(const void *x, float *y, uint64_t n);
void ft_quantize_row_q8_k(const float *x, void *y, uint64_t n);
void ft_dequantize_row_q8_k(const void *x, float *y, uint64_t n);

/* IQ4_NL (n a multiple of 32) and IQ4_XS (of 256), quant_iq4.c; their
 * codebook, ggml's kvalues_iq4nl. */
extern const int8_t ft_kvalues_iq4nl[16];
void ft_quantize_row_iq4_nl(const float *x, void *y, uint64_t n);
void ft_dequantize_row_iq4_nl(const void *x, float *y, uint64_t n);
void ft_quantize_row_iq4_xs(const float *x, void *y, uint64_t n);
void ft_dequantize_row_iq4_xs(const void *x, float *y, uint64_t n);

/* The IQ grid formats (quant_iq_grid.c; n a multiple of 256): ggml's
 * layouts and codebooks, our own nearest-grid quantizer. */
void ft_quantize_row_iq2_xxs(const float *x, void *y, uint64_t n);
void ft_dequantize_row_iq2_xxs(const void *x, float *y, uint64_t n);
void ft_quantize_row_iq2_xs(const float *x, void *y, uint64_t n);
void ft_dequantize_row_iq2_xs(const void *x, float *y, uint64_t n);
void ft_quantize_row_iq2_s(const float *x, void *y, uint64_t n);
void ft_dequantize_row_iq2_s(const void *x, float *y, uint64_t n);
void ft_quantize_row_iq3_xxs(const float *x, void *y, uint64_t n);
void ft_dequantize_row_iq3_xxs(const void *x, float *y, uint64_t n);
void ft_quantize_row_iq3_s(const float *x, void *y, uint64_t n);
void ft_dequantize_row_iq3_s(const void *x, float *y, uint64_t n);

/* IQ1_S and IQ1_M (quant_iq1.c; n a multiple of 256): ggml's layouts and
 * its 2048-point codebook, our own least-squares grid fit. */
void ft_quantize_row_iq1_s(const float *x, void *y, uint64_t n);
void ft_dequantize_row_iq1_s(const void *x, float *y, uint64_t n);
void ft_quantize_row_iq1_m(const float *x, void *y, uint64_t n);
void ft_dequantize_row_iq1_m(const void *x, float *y, uint64_t n);

/* The ternary TQ1_0 and TQ2_0 (quant_tq.c; n a multiple of 256), ports of
 * ggml's quantize_row_tq{1,2}_0_ref; the unpackers give a block's 256
 * digits in {-1, 0, 1} (the CPU dot products use them). */
void ft_quantize_row_tq1_0(const float *x, void *y, uint64_t n);
void ft_dequantize_row_tq1_0(const void *x, float *y, uint64_t n);
void ft_quantize_row_tq2_0(const float *x, void *y, uint64_t n);
void ft_dequantize_row_tq2_0(const void *x, float *y, uint64_t n);
void ft_tq1_0_unpack(const uint8_t *blk, int8_t t[256]);
void ft_tq2_0_unpack(const uint8_t *blk, int8_t t[256]);

/* 4- and 8-bit floats: n a multiple of 32 (MXFP4), 64 (NVFP4) or 128
 * (FP8); the plain F8 rows take any n. */
void ft_quantize_row_mxfp4(const float *x, void *y, uint64_t n);
void ft_dequantize_row_mxfp4(const void *x, float *y, uint64_t n);
void ft_quantize_row_nvfp4(const float *x, void *y, uint64_t n);
void ft_dequantize_row_nvfp4(const void *x, float *y, uint64_t n);
void ft_quantize_row_fp8(const float *x, void *y, uint64_t n);
void ft_dequantize_row_fp8(const void *x, float *y, uint64_t n);
/* Plain E4M3 rows: each x rounded to nearest even, saturating at +-448. */
void ft_quantize_row_e4m3(const float *x, void *y, uint64_t n);
void ft_dequantize_row_e4m3(const void *x, float *y, uint64_t n);
void ft_dequantize_row_e5m2(const void *x, float *y, uint64_t n);
/* A plain E4M3 row as FP8 blocks with scale 1: the bytes are kept, so the
 * conversion is exact (a checkpoint's F8 tensor without a scale). */
void ft_fp8_from_e4m3(const void *x, void *y, uint64_t n);

/* 1 when ft_quantize_row / ft_dequantize_row handle the format: those
 * whose dtype.h table row has a quantize (dequantize) function (F32, F16,
 * BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, Q8_K, IQ4_NL, IQ4_XS, the IQ
 * grid formats, IQ1_S, IQ1_M, TQ1_0, TQ2_0, MXFP4,
 * NVFP4, FP8, F8_E4M3, and for
 * dequantizing also F8_E5M2). */
int ft_quant_supported(ft_dtype_t t);
int ft_dequant_supported(ft_dtype_t t);

/* Any supported format from / to f32, through the table's functions. n
 * must be a multiple of the format's block size (the caller checks, e.g.
 * with ft_dtype_row_bytes); an unsupported format leaves y untouched. y
 * needs no alignment. */
void ft_quantize_row(ft_dtype_t dst, const float *x, void *y, uint64_t n);
void ft_dequantize_row(ft_dtype_t src, const void *x, float *y, uint64_t n);

/* Converts one row of n_elems elements from src to dst format, through f32.
 * src and dst may each be any format ft_quant_supported accepts except the
 * activation-only Q8_K (F32, F16, BF16, Q8_0, Q4_0, Q2_K..Q6_K, MXFP4,
 * NVFP4, FP8 or F8_E4M3), src also F8_E5M2; the same format is a plain
 * copy, and F8_E4M3 to FP8 keeps the bytes with scale 1. Errors: FT_STATUS_UNSUPPORTED naming both formats for any
 * other pair, FT_STATUS_INVALID_ARGUMENT when n_elems is not a multiple of
 * a block format's block size. The rows must not overlap. Allocates nothing
 * (converts through a small stack buffer). */
FT_WARN_UNUSED ft_status_t ft_convert_row(ft_dtype_t dst, void *dst_row, ft_dtype_t src, const void *src_row,
                           uint64_t n_elems);

#endif
