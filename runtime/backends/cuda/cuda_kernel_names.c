#include "cuda_kernel_names.h"

#include <stddef.h>

const char *ft_cuda_kernel_format(ft_dtype_t t)
{
    switch (t) {
    case FT_DTYPE_F32:
    case FT_DTYPE_F16:
    case FT_DTYPE_BF16:
    case FT_DTYPE_Q8_0:
    case FT_DTYPE_Q4_0:
    case FT_DTYPE_Q4_K:
    case FT_DTYPE_Q6_K:
    case FT_DTYPE_MXFP4:
    case FT_DTYPE_NVFP4:
    case FT_DTYPE_FP8:
        return ft_dtype_name(t); /* "f32", "q4_k", "mxfp4", ... */
    default:
        return NULL;
    }
}
