/* CPU reference kernels: the numerics every other backend is checked
 * against. Plain C (written so the compiler vectorizes it), accumulating in
 * float32, over GGUF block layouts.
 *
 * Matrix products follow ggml's scheme: the activation rows are prepared
 * once per op for the weight format (quantized to Q8_0 blocks for
 * Q8_0/Q4_0/MXFP4/NVFP4 weights, to Q8_K blocks for Q2_K..Q6_K, kept as
 * float32 for F32/F16/BF16/FP8), then each weight row is read once and
 * dotted with every prepared activation row using integer dot products
 * within blocks.
 *
 * Weights are row-major [rows, cols]: row r starts at w + r * w_row_bytes,
 * cols a multiple of the format's block size. Threads split rows. */
#ifndef FT_CPU_KERNELS_H
#define FT_CPU_KERNELS_H

#include "../../format/dtype.h"

#include <stddef.h>
#include <stdint.h>

/* 1 when the kernels compute this weight format: it has a row in
 * matmul.c's dot table (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
 * Q2_K, Q3_K, Q4_K,
 * Q5_K, Q6_K, IQ4_NL, IQ4_XS, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M, TQ1_0,
 * TQ2_0, MXFP4,
 * NVFP4, FP8). */
int ft_cpu_supports(ft_dtype_t wtype);

/* The format activations are prepared in for weights of wtype (the
 * cpu_act column of dtype.h's table; FT_DTYPE_INVALID when the kernels do
 * not compute wtype), and the bytes one prepared row of `cols` elements
 * takes (0 then). */
ft_dtype_t ft_cpu_act_type(ft_dtype_t wtype);
size_t ft_cpu_act_row_bytes(ft_dtype_t wtype, uint32_t cols);

/* Prepares n_rows activation rows (x: float32 [n_rows, cols], row stride
 * ldx floats) into out (n_rows * ft_cpu_act_row_bytes bytes). */
void ft_cpu_act_prepare(ft_dtype_t wtype, const float *x, size_t ldx, uint32_t n_rows,
                        uint32_t cols, void *out);

/* y[t * ldy + r] = dot(weight row r, prepared activation row t) for
 * r in [r0, r1) and t in [0, n_tok). xp: n_tok prepared rows, each
 * ft_cpu_act_row_bytes(wtype, cols) bytes. */
void ft_cpu_matmul(ft_dtype_t wtype, const void *w, size_t w_row_bytes, const void *xp,
                   uint32_t n_tok, uint32_t cols, uint32_t r0, uint32_t r1, float *y, size_t ldy);

/* One weight row -> float32 (embedding lookups). */
void ft_cpu_dequantize_row(ft_dtype_t wtype, const void *w_row, float *out, uint32_t cols);

#endif
