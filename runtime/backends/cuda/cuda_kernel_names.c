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

/* snprintf's length, or -1 (and "") when it does not fit. */
static int ft_cuda_name_fit(int n, char *out, size_t n_out)
{
    if (n < 0 || (size_t)n >= n_out) {
        if (n_out) out[0] = 0;
        return -1;
    }
    return n;
}

int ft_cuda_kernel_rope_name(int neox, uint32_t head_dim, uint32_t rope_dim, char *out,
                             size_t n_out)
{
    return ft_cuda_name_fit(snprintf(out, n_out, "ft_rope_%s_h%u_r%u", neox ? "neox" : "norm",
                                     (unsigned)head_dim, (unsigned)rope_dim),
                            out, n_out);
}

int ft_cuda_kernel_rope_table_name(int neox, uint32_t head_dim, uint32_t rope_dim, char *out,
                                   size_t n_out)
{
    return ft_cuda_name_fit(snprintf(out, n_out, "ft_rope_tab_%s_h%u_r%u", neox ? "neox" : "norm",
                                     (unsigned)head_dim, (unsigned)rope_dim),
                            out, n_out);
}

int ft_cuda_kernel_matmul_name(ft_cuda_matmul_kind_t kind, uint32_t dtype, uint32_t cols, char *out,
                               size_t n_out)
{
    static const char *const prefix[] = {"ft_gemv", "ft_gemv_experts", "ft_gemm"};
    const char *f = ft_cuda_kernel_format(dtype);
    if (!f || (unsigned)kind > FT_CUDA_GEMM) return ft_cuda_name_fit(-1, out, n_out);
    return ft_cuda_name_fit(snprintf(out, n_out, "%s_%s_k%u", prefix[kind], f, (unsigned)cols), out,
                            n_out);
}

int ft_cuda_kernel_rmsnorm_name(uint32_t d, char *out, size_t n_out)
{
    return ft_cuda_name_fit(snprintf(out, n_out, "ft_rmsnorm_d%u", (unsigned)d), out, n_out);
}

int ft_cuda_kernel_attn_name(unsigned flags, uint32_t head_dim, uint32_t n_heads,
                             uint32_t n_kv_heads, char *out, size_t n_out)
{
    return ft_cuda_name_fit(snprintf(out, n_out, "ft_attn_decode%s%s%s_h%u_q%u_kv%u",
                                     flags & FT_CUDA_ATTN_POS ? "_pos" : "",
                                     flags & FT_CUDA_ATTN_SINKS ? "_sink" : "",
                                     flags & FT_CUDA_ATTN_F16 ? "_f16" : "", (unsigned)head_dim,
                                     (unsigned)n_heads, (unsigned)n_kv_heads),
                            out, n_out);
}

int ft_cuda_kernel_router_name(int ext, uint32_t n_experts, uint32_t k, char *out, size_t n_out)
{
    return ft_cuda_name_fit(snprintf(out, n_out, "ft_router_%s_e%u_k%u", ext ? "ext" : "topk",
                                     (unsigned)n_experts, (unsigned)k),
                            out, n_out);
}
