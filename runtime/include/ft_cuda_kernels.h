/* ft_cuda_kernels.h: the naming contract between codegen/cuda's emitter
 * and the CUDA backend's launcher: the weight formats the CUDA templates
 * compute and the short name each takes in an emitted kernel's name
 * ("ft_gemv_q4_k_k2048"), and the names of the RoPE kernels (one per pair
 * layout). One table, read by both sides; it lives in the
 * runtime (backends/cuda/cuda_kernel_names.c) because the launcher must
 * find the kernels the compiler emitted.
 *
 * Versioned with the kernel ABI: a change to a name here is a change to
 * what emitted CUDA modules export, and bumps FT_KABI_VERSION
 * (ft_kernel_abi.h). Self-contained: only the C standard headers. */
#ifndef FT_CUDA_KERNELS_H
#define FT_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* The format's name in kernel names, or NULL when the CUDA templates do
 * not compute weights of that format (the formats runtime/format/dtype.c's
 * table flags FT_DTYPE_FLAG_CUDA; the name is the table's). dtype is a
 * weight format number: the value of runtime/format/dtype.h's ft_dtype_t,
 * which ft_kernel_abi.h mirrors as FT_KABI_FMT_* (the numbers are
 * _Static_assert'ed equal in runtime/format/dtype_mirrors.c). */
const char *ft_cuda_kernel_format(uint32_t dtype);

/* The RoPE kernel for heads of head_dim floats whose first rope_dim rotate:
 * "ft_rope_neox_h<head_dim>_r<rope_dim>" when neox != 0 (pairs (i, i +
 * rope_dim / 2), the plan's ROPE_NEOX) or "ft_rope_norm_h<head_dim>_r<rope_dim>"
 * when neox == 0 (adjacent pairs (2i, 2i + 1), ROPE_NORM: GGUF llama and
 * Mixtral). Every CUDA module has both. Both take (float *x, int n_heads,
 * const int *pos, int n_tok) and launch on grid (n_tok, n_heads), block
 * rope_dim / 2: x is [n_tok][n_heads][head_dim] in place, pos[t] token t's
 * position. Writes the NUL-terminated name to out (n_out bytes); returns
 * its length, or -1 when it does not fit (out then holds "" if n_out > 0). */
int ft_cuda_kernel_rope_name(int neox, uint32_t head_dim, uint32_t rope_dim, char *out,
                             size_t n_out);

#endif
