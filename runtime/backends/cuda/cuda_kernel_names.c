#include "ft_cuda_kernels.h"

#include "ft_kernel_abi.h"

#include "../../format/dtype.h"

#include <stddef.h>
#include <stdio.h>

/* The public header names formats by number; these are the same numbers. */
_Static_assert((int)FT_KABI_FMT_F32 == (int)FT_DTYPE_F32 && (int)FT_KABI_FMT_F16 == (int)FT_DTYPE_F16 &&
                   (int)FT_KABI_FMT_BF16 == (int)FT_DTYPE_BF16 && (int)FT_KABI_FMT_Q4_0 == (int)FT_DTYPE_Q4_0 &&
                   (int)FT_KABI_FMT_Q8_0 == (int)FT_DTYPE_Q8_0 && (int)FT_KABI_FMT_Q4_K == (int)FT_DTYPE_Q4_K &&
                   (int)FT_KABI_FMT_Q6_K == (int)FT_DTYPE_Q6_K,
               "ft_kernel_abi.h format numbers must equal ft_dtype_t");

const char *ft_cuda_kernel_format(uint32_t dtype)
{
    const ft_dtype_t t = (ft_dtype_t)dtype;
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

int ft_cuda_kernel_rope_name(int neox, uint32_t head_dim, uint32_t rope_dim, char *out,
                             size_t n_out)
{
    const int n = snprintf(out, n_out, "ft_rope_%s_h%u_r%u", neox ? "neox" : "norm",
                           (unsigned)head_dim, (unsigned)rope_dim);
    if (n < 0 || (size_t)n >= n_out) {
        if (n_out) out[0] = 0;
        return -1;
    }
    return n;
}
