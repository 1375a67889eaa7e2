/* Rewriting a tensor's rows as they are read (ir.h: ft_ir_xform_t,
 * ft_ir_tiling_t): what an HF checkpoint stores that the GGUF converters
 * rewrite before writing, done by the packer instead. The arithmetic is
 * f32, one operation per value, as a converter working in f32 does it. */
#include "ir.h"

#include <math.h>
#include <string.h>

int ft_ir_tensor_rewritten(const ft_ir_tensor_t *t)
{
    return t->xform != FT_IR_XFORM_NONE || t->tiling.tile_elems != 0;
}

void ft_ir_rewrite_row(const ft_ir_tensor_t *t, float *row, float *scratch, uint64_t n)
{
    switch (t->xform) {
    case FT_IR_XFORM_ADD_ONE:
        for (uint64_t i = 0; i < n; i++)
            row[i] = row[i] + 1.0f;
        break;
    case FT_IR_XFORM_NEG_EXP:
        for (uint64_t i = 0; i < n; i++)
            row[i] = -expf(row[i]);
        break;
    case FT_IR_XFORM_NONE:
        break;
    }
    const ft_ir_tiling_t *g = &t->tiling;
    const uint64_t e = g->tile_elems, K = g->tile_k, R = g->tile_r;
    if (!e || K * R * e != n) return; /* validated: the tiling covers the row */
    memcpy(scratch, row, n * sizeof(float));
    for (uint64_t r = 0; r < R; r++)
        for (uint64_t k = 0; k < K; k++)
            memcpy(row + (r * K + k) * e, scratch + (k * R + r) * e, e * sizeof(float));
}
