/* Activation preparation: once per op, the float32 activation rows are put
 * in the form the weight format's dot product consumes (ggml's
 * vec_dot_type): Q8_0 blocks for Q8_0/Q4_0/MXFP4/NVFP4 weights, Q8_K
 * super-blocks for Q4_K/Q6_K, float32 as they are for F32/F16/BF16/FP8.
 * Quantization uses the reference rounding of runtime/format
 * (bit-identical to ggml's _ref). */
#include "cpu_dot.h"

#include "../../format/convert.h"

int ft_cpu_supports(ft_dtype_t wtype)
{
    return ft_cpu_dot_for(wtype, 1) != NULL;
}

ft_dtype_t ft_cpu_act_type(ft_dtype_t wtype)
{
    switch (wtype) {
    case FT_DTYPE_F32:
    case FT_DTYPE_F16:
    case FT_DTYPE_BF16:
    case FT_DTYPE_FP8:
        return FT_DTYPE_F32;
    case FT_DTYPE_Q8_0:
    case FT_DTYPE_Q4_0:
    case FT_DTYPE_MXFP4:
    case FT_DTYPE_NVFP4:
        return FT_DTYPE_Q8_0;
    case FT_DTYPE_Q4_K:
    case FT_DTYPE_Q6_K:
        return FT_DTYPE_Q8_K;
    default:
        return FT_DTYPE_INVALID;
    }
}

size_t ft_cpu_act_row_bytes(ft_dtype_t wtype, uint32_t cols)
{
    switch (ft_cpu_act_type(wtype)) {
    case FT_DTYPE_F32:
        return (size_t)cols * sizeof(float);
    case FT_DTYPE_Q8_0:
        return (size_t)(cols / FT_CPU_QK8_0) * FT_CPU_Q8_0_BYTES;
    case FT_DTYPE_Q8_K:
        return (size_t)(cols / FT_CPU_QK_K) * FT_CPU_Q8_K_BYTES;
    default:
        return 0;
    }
}

void ft_cpu_act_prepare(ft_dtype_t wtype, const float *x, size_t ldx, uint32_t n_rows,
                        uint32_t cols, void *out)
{
    const ft_dtype_t at = ft_cpu_act_type(wtype);
    const size_t row_bytes = ft_cpu_act_row_bytes(wtype, cols);
    uint8_t *o = out;
    for (uint32_t t = 0; t < n_rows; t++)
        ft_quantize_row(at, x + t * ldx, o + t * row_bytes, cols);
}

void ft_cpu_dequantize_row(ft_dtype_t wtype, const void *w_row, float *out, uint32_t cols)
{
    ft_dequantize_row(wtype, w_row, out, cols);
}
