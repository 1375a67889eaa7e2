/* Weight layouts: how a weight matrix's rows are arranged in the FTW file.
 * The format (dtype.h) says how values are encoded in blocks; the layout
 * says where each row's blocks are. `ftc compile` picks a layout per
 * tensor for the kernels that will read it and records it in the plan
 * (Tensor.layout); the runtime's reference kernels and every other reader
 * see rows through ft_wlayout_unpack_group, the generated kernels of the
 * layout read it as it is.
 *
 * FT_WLAYOUT_ROWS: row after row, each row its blocks in order (GGUF's).
 *
 * FT_WLAYOUT_Q8_0_R16 (Q8_0 only, rows a multiple of 16): groups of 16
 *   rows, group g at byte g * 16 * row_bytes (the same size and place as
 *   the 16 rows it holds). In a group, block column b (columns 32b ..
 *   32b + 31 of all 16 rows) is 544 bytes: the 16 rows' fp16 scales (32
 *   bytes, row order), then 8 chunks of 64 bytes, chunk k holding columns
 *   32b + 4k .. 32b + 4k + 3 of rows 0..15 (4 bytes per row, row order),
 *   each quant stored as q ^ 0x80 (q + 128 as an unsigned byte). One
 *   512-bit load is then 4 columns of 16 rows, which an unsigned-by-signed
 *   byte dot product (VNNI dpbusd) against 4 activation bytes broadcast
 *   turns into 16 row sums in 16 lanes: the rows sit in lanes, so a tile
 *   needs no horizontal reductions and one scale multiply per block for 16
 *   rows (ik_llama.cpp repacks Q8_0 rows in the same spirit when it loads;
 *   we do it once, at compile time). */
#ifndef FT_FORMAT_WLAYOUT_H
#define FT_FORMAT_WLAYOUT_H

#include "dtype.h"

#include <stddef.h>
#include <stdint.h>

typedef enum ft_wlayout {
    FT_WLAYOUT_ROWS = 0,
    FT_WLAYOUT_Q8_0_R16 = 1,
    FT_WLAYOUT_COUNT
} ft_wlayout_t;

/* The layout's name ("rows", "q8_0_r16"), or NULL for an unknown one. */
const char *ft_wlayout_name(uint32_t layout);

/* Rows per group: 1 for FT_WLAYOUT_ROWS, 16 for the interleaved ones;
 * 0 for an unknown layout. */
uint32_t ft_wlayout_group_rows(uint32_t layout);

/* The largest group of rows a layout holds (bytes): the reference
 * kernels unpack one group at a time into a buffer of this size. */
#define FT_WLAYOUT_MAX_GROUP_BYTES (256u * 1024u)

/* 1 when a [rows, cols] matrix of format dt can be stored in layout (for
 * the interleaved layouts: a group of rows within
 * FT_WLAYOUT_MAX_GROUP_BYTES). */
int ft_wlayout_fits(uint32_t layout, ft_dtype_t dt, uint64_t rows, uint64_t cols);

/* One group: ft_wlayout_group_rows(layout) rows of row_bytes bytes each,
 * row after row at `rows`, rearranged into `out` (the same number of
 * bytes), and back. `out` and `rows` must not overlap. */
void ft_wlayout_pack_group(uint32_t layout, const uint8_t *rows, size_t row_bytes, uint8_t *out);
void ft_wlayout_unpack_group(uint32_t layout, const uint8_t *group, size_t row_bytes,
                             uint8_t *rows);

#endif
