#include "ft_cuda_kernels.h"

#include "../../format/dtype.h"

#include <stddef.h>
#include <stdio.h>

/* The public header names formats by number: ft_dtype_t's, which
 * runtime/format/dtype_mirrors.c _Static_asserts FT_KABI_FMT_* equal to. */

const char *ft_cuda_kernel_format(uint32_t dtype)
{
    const ft_dtype_t t = (ft_dtype_t)dtype;
    /* "f32", "q4_k", "mxfp4", ...: the formats dtype.h's table marks as
     * decoded by the CUDA templates. */
    return dtype < FT_DTYPE_COUNT && ft_dtype_has(t, FT_DTYPE_FLAG_CUDA) ? ft_dtype_name(t) : NULL;
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
