/* Emulated matmul templates (codegen/cuda/templates/matmul.cuh): GEMV with
 * one warp per row and FT_GEMV_WARPS (4) rows per block, the grouped
 * expert GEMV (blockIdx.y picks the slot), and the 32 x 32 prefill GEMM
 * tile of 256 threads. Weight rows are expanded with the runtime's
 * ft_dequantize_row (exact, as the templates' dq32), products are summed
 * in float32 in the templates' order: per lane over chunks lane, lane + 32,
 * ..., four products at a time, then the warp's xor butterfly (GEMV); one
 * running sum over the columns in order (GEMM). */
#include "fake_cuda.h"

#include "format/convert.h"

#include <stdlib.h>

enum { FT_FAKE_GEMV_WARPS = 4 };

/* The F32 and BF16 templates read weights with 16-byte vector loads. */
static int ft_fake_vector_weights(ft_dtype_t t)
{
    return t == FT_DTYPE_F32 || t == FT_DTYPE_BF16;
}

static int ft_fake_misaligned(const void *p)
{
    return ((uintptr_t)p & 15) != 0;
}

/* Rows bx * 4 + warp of w (rows in total) times x into y, as ft_gemv_body
 * for every block bx of the grid. v: cols floats of scratch. */
static int ft_fake_gemv_rows(const ft_fake_kernel_t *k, const ft_fake_launch_t *l, const uint8_t *w,
                             const float *x, float *y, int rows, float *v)
{
    const uint32_t cols = k->dims[0], n_warps = ft_fake_block_warps(l);
    uint64_t rb;
    if (!n_warps || !ft_dtype_row_bytes(k->wtype, cols, &rb)) return FT_FAKE_ERROR_INVALID_VALUE;
    if (ft_fake_misaligned(x) || (ft_fake_vector_weights(k->wtype) && ft_fake_misaligned(w)))
        return FT_FAKE_ERROR_MISALIGNED_ADDRESS;
    for (uint64_t bx = 0; bx < l->grid[0]; bx++)
        for (uint32_t warp = 0; warp < n_warps; warp++) {
            const uint64_t r = bx * FT_FAKE_GEMV_WARPS + warp;
            if (rows <= 0 || r >= (uint64_t)rows) continue;
            ft_dequantize_row(k->wtype, w + r * rb, v, cols);
            float acc[32] = {0};
            for (uint32_t lane = 0; lane < 32; lane++)
                for (uint32_t c = lane; c < cols / 32; c += 32) {
                    const float *vc = v + 32 * c, *xc = x + 32 * c;
                    for (int i = 0; i < 8; i++)
                        acc[lane] += vc[4 * i] * xc[4 * i] + vc[4 * i + 1] * xc[4 * i + 1] +
                                     vc[4 * i + 2] * xc[4 * i + 2] + vc[4 * i + 3] * xc[4 * i + 3];
                }
            y[r] = ft_fake_warp_sum(acc);
        }
    return FT_FAKE_SUCCESS;
}

int ft_fake_run_gemv(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    float *v = malloc(sizeof(float) * k->dims[0]);
    if (!v) return FT_FAKE_ERROR_OUT_OF_MEMORY;
    const int rc = ft_fake_gemv_rows(k, l, FT_FAKE_ARG(l, 0, uint8_t *), FT_FAKE_ARG(l, 1, float *),
                                     FT_FAKE_ARG(l, 2, float *), FT_FAKE_ARG(l, 3, int), v);
    free(v);
    return rc;
}

int ft_fake_run_gemv_experts(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    const uint8_t *const *slots = FT_FAKE_ARG(l, 0, const uint8_t *const *);
    const uint64_t w_offset = FT_FAKE_ARG(l, 1, uint64_t), x_stride = FT_FAKE_ARG(l, 3, uint64_t);
    const float *x = FT_FAKE_ARG(l, 2, float *);
    float *y = FT_FAKE_ARG(l, 4, float *);
    const int rows = FT_FAKE_ARG(l, 5, int);
    float *v = malloc(sizeof(float) * k->dims[0]);
    if (!v) return FT_FAKE_ERROR_OUT_OF_MEMORY;
    int rc = FT_FAKE_SUCCESS;
    for (uint64_t e = 0; e < l->grid[1] && rc == FT_FAKE_SUCCESS; e++) {
        if (!slots[e]) {
            rc = FT_FAKE_ERROR_ILLEGAL_ADDRESS;
            break;
        }
        rc = ft_fake_gemv_rows(k, l, slots[e] + w_offset, x + e * x_stride,
                               y + e * (uint64_t)(rows > 0 ? rows : 0), rows, v);
    }
    free(v);
    return rc;
}

int ft_fake_run_gemm(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    const uint8_t *w = FT_FAKE_ARG(l, 0, uint8_t *);
    const float *x = FT_FAKE_ARG(l, 1, float *);
    const int ldx = FT_FAKE_ARG(l, 2, int), ldy = FT_FAKE_ARG(l, 4, int);
    float *y = FT_FAKE_ARG(l, 3, float *);
    const int rows = FT_FAKE_ARG(l, 5, int), n_tok = FT_FAKE_ARG(l, 6, int);
    const uint32_t cols = k->dims[0];
    uint64_t rb;
    /* The tile is 32 x 8 threads, each owning four tokens: 256 exactly. */
    if (l->block[0] != 256 || l->block[1] != 1 || l->block[2] != 1 ||
        !ft_dtype_row_bytes(k->wtype, cols, &rb) || ldx < 0 || ldy < 0)
        return FT_FAKE_ERROR_INVALID_VALUE;
    if (ft_fake_vector_weights(k->wtype) && ft_fake_misaligned(w))
        return FT_FAKE_ERROR_MISALIGNED_ADDRESS;
    const uint64_t r_end = (uint64_t)l->grid[0] * 32, t_end = (uint64_t)l->grid[1] * 32;
    float *v = malloc(sizeof(float) * cols);
    if (!v) return FT_FAKE_ERROR_OUT_OF_MEMORY;
    for (uint64_t r = 0; r < r_end && rows > 0 && r < (uint64_t)rows; r++) {
        ft_dequantize_row(k->wtype, w + r * rb, v, cols);
        for (uint64_t t = 0; t < t_end && n_tok > 0 && t < (uint64_t)n_tok; t++) {
            const float *xt = x + t * (uint64_t)ldx;
            float acc = 0.0f;
            for (uint32_t i = 0; i < cols; i++)
                acc += v[i] * xt[i];
            y[t * (uint64_t)ldy + r] = acc;
        }
    }
    free(v);
    return FT_FAKE_SUCCESS;
}
