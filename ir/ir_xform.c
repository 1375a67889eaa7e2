/* Rewriting a tensor's rows as they are read (ir.h: ft_ir_xform_t,
 * ft_ir_tiling_t): what an HF checkpoint stores that the GGUF converters
 * rewrite before writing, done by the packer instead. The arithmetic is
 * f32, one operation per value, as a converter working in f32 does it. */
#include "ir.h"

#include <math.h>
#include <string.h>

int ft_ir_tensor_rewritten(const ft_ir_tensor_t *t)
{
    return t->xform == FT_IR_XFORM_ADD_ONE || t->xform == FT_IR_XFORM_NEG_EXP ||
           t->tiling.tile_elems != 0;
}

uint64_t ft_ir_mxfp4_hf_src_rows(const ft_ir_tensor_t *t)
{
    const uint64_t rows = ft_ir_tensor_elems(t) / t->shape[t->n_dims - 1];
    return t->il.group ? rows / t->il.group * t->il.group * t->il.step : 0;
}

void ft_ir_mxfp4_hf_row(const ft_ir_tensor_t *t, const uint8_t *blocks, const uint8_t *scales,
                        uint64_t r, uint8_t *out)
{
    const uint64_t nb = t->shape[t->n_dims - 1] / 32, g = t->il.group;
    const uint64_t src = r / g * g * t->il.step + r % g * t->il.step + t->il.first;
    const uint8_t *b = blocks + src * nb * 16, *e = scales + src * nb;
    for (uint64_t k = 0; k < nb; k++, b += 16, out += 17) {
        out[0] = e[k]; /* E8M0 both ways: 2^(e - 127) of E2M1 codes */
        for (int j = 0; j < 16; j++) { /* element i: HF byte i/2, nibble i&1; ours j | j+16 */
            const uint8_t lo = (uint8_t)(b[j / 2] >> (4 * (j & 1)) & 15),
                          hi = (uint8_t)(b[(j + 16) / 2] >> (4 * (j & 1)) & 15);
            out[1 + j] = (uint8_t)(lo | hi << 4);
        }
    }
}

void ft_ir_deinterleave_row(const ft_ir_tensor_t *t, const float *src, float *out, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        out[i] = src[i * t->il.step + t->il.first];
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
    default: /* NONE; MXFP4_HF and DEINTERLEAVE are read elsewhere */
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
