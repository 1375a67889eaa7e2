/* Internal to runtime/format and the CPU kernels: ggml's IQ codebooks
 * (iq_grids.inc, the data) and the one decoding step every IQ grid format
 * shares. A super-block of 256 elements is, in each of these formats,
 * x = d * m * sc[g] * q: d the block's fp16 scale, m a power of two of the
 * format (IQ2_*, IQ1_*: 1/8, IQ3_XXS: 1/4, IQ3_S: 1), sc[g] a small odd integer
 * per 16 elements (2 ls + 1 of the stored 3- or 4-bit ls), q a signed grid
 * value (|q| <= 62; IQ1: 8 grid +- 1, grid in {-1, 0, 1}). Every factor is exact in float32 and so
 * is their product (at most 11 + 5 + 6 bits), so ft_iq_unpack describes ggml's dequantized values
 * exactly, and the CPU dot products sum q * a and sc * sum in int32 without rounding. */
#ifndef FT_FORMAT_IQ_GRIDS_H
#define FT_FORMAT_IQ_GRIDS_H

#include "dtype.h"

#include <stdint.h>

extern const uint8_t ft_ksigns_iq2xs[128];
extern const uint64_t ft_iq2xxs_grid[256];
extern const uint64_t ft_iq2xs_grid[512];
extern const uint64_t ft_iq2s_grid[1024];
extern const uint32_t ft_iq3xxs_grid[256];
extern const uint32_t ft_iq3s_grid[512];
/* IQ1_S / IQ1_M: 2 bits per element, value + 1 (ggml's kgrid_1bit_2048). */
extern const uint16_t ft_iq1s_kgrid[2048];

/* The 256 signed grid values q and 16 scales sc of one super-block blk of
 * format t (an IQ grid format: ft_iq_is_grid); returns d * m. */
float ft_iq_unpack(ft_dtype_t t, const uint8_t *blk, int8_t q[256], int16_t sc[16]);
int ft_iq_is_grid(ft_dtype_t t);
/* The same for IQ1_S and IQ1_M (quant_iq1.c; ft_iq_unpack calls it):
 * m = 1/8, q = 8 grid +- 1 (the delta), sc = 2 ls + 1. */
float ft_iq1_unpack(ft_dtype_t t, const uint8_t *blk, int8_t q[256], int16_t sc[16]);

#endif
