/* Activation preparation: once per op, the float32 activation rows are put
 * in the form the weight format's dot product consumes (ggml's
 * vec_dot_type, the cpu_act column of dtype.h's table): Q8_0 blocks for
 * Q8_0/Q4_0/Q4_1/Q5_0/Q5_1/IQ4_NL/MXFP4/NVFP4 weights, Q8_K super-blocks for
 * Q2_K..Q6_K, IQ4_XS and the IQ grid formats, float32
 * as they are for F32/F16/BF16/FP8. Quantization uses the reference
 * rounding of runtime/format (bit-identical to ggml's _ref). */
#include "cpu_dot.h"

#include "../../format/convert.h"

/* cpu_dot.h's block geometry is convert.h's (and so the dtype table's). */
_Static_assert(
    FT_CPU_QK8_0 == FT_Q8_0_BLOCK_ELEMS && FT_CPU_Q8_0_BYTES == FT_Q8_0_BLOCK_BYTES &&
        FT_CPU_Q4_0_BYTES == FT_Q4_0_BLOCK_BYTES && FT_CPU_Q4_1_BYTES == FT_Q4_1_BLOCK_BYTES &&
        FT_CPU_Q5_0_BYTES == FT_Q5_0_BLOCK_BYTES && FT_CPU_Q5_1_BYTES == FT_Q5_1_BLOCK_BYTES &&
        FT_CPU_QK_K == FT_QK_K && FT_CPU_IQ4_NL_BYTES == FT_IQ4_NL_BLOCK_BYTES &&
        FT_CPU_IQ4_XS_BYTES == FT_IQ4_XS_BLOCK_BYTES && FT_CPU_Q4_K_BYTES == FT_Q4_K_BLOCK_BYTES &&
        FT_CPU_Q2_K_BYTES == FT_Q2_K_BLOCK_BYTES && FT_CPU_Q3_K_BYTES == FT_Q3_K_BLOCK_BYTES &&
        FT_CPU_Q5_K_BYTES == FT_Q5_K_BLOCK_BYTES && FT_CPU_Q6_K_BYTES == FT_Q6_K_BLOCK_BYTES &&
        FT_CPU_Q8_K_BYTES == FT_Q8_K_BLOCK_BYTES && FT_CPU_MXFP4_BYTES == FT_MXFP4_BLOCK_BYTES &&
        FT_CPU_NVFP4_ELEMS == FT_NVFP4_BLOCK_ELEMS && FT_CPU_NVFP4_BYTES == FT_NVFP4_BLOCK_BYTES &&
        FT_CPU_FP8_ELEMS == FT_FP8_BLOCK_ELEMS && FT_CPU_FP8_BYTES == FT_FP8_BLOCK_BYTES,
    "cpu_dot.h block sizes must match convert.h");

int ft_cpu_supports(ft_dtype_t wtype)
{
    return ft_cpu_dot_for(wtype, 1) != NULL;
}

ft_dtype_t ft_cpu_act_type(ft_dtype_t wtype)
{
    const ft_dtype_info_t *info = ft_dtype_info(wtype);
    return info ? info->cpu_act : FT_DTYPE_INVALID;
}

size_t ft_cpu_act_row_bytes(ft_dtype_t wtype, uint32_t cols)
{
    const ft_dtype_info_t *ai = ft_dtype_info(ft_cpu_act_type(wtype));
    return ai ? (size_t)(cols / ai->block_elems) * ai->block_bytes : 0;
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
