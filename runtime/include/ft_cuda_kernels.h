/* ft_cuda_kernels.h: the naming contract between codegen/cuda's emitter
 * and the CUDA backend's launcher: the weight formats the CUDA templates
 * compute and the short name each takes in an emitted kernel's name
 * ("ft_gemv_q4_k_k2048"). One table, read by both sides; it lives in the
 * runtime (backends/cuda/cuda_kernel_names.c) because the launcher must
 * find the kernels the compiler emitted.
 *
 * Versioned with the kernel ABI: a change to a name here is a change to
 * what emitted CUDA modules export, and bumps FT_KABI_VERSION
 * (ft_kernel_abi.h). Self-contained: only the C standard headers. */
#ifndef FT_CUDA_KERNELS_H
#define FT_CUDA_KERNELS_H

#include <stdint.h>

/* The format's name in kernel names, or NULL when the CUDA templates do
 * not compute weights of that format (the formats runtime/format/dtype.c's
 * table flags FT_DTYPE_FLAG_CUDA; the name is the table's). dtype is a
 * weight format number: the value of runtime/format/dtype.h's ft_dtype_t,
 * which ft_kernel_abi.h mirrors as FT_KABI_FMT_* (the numbers are
 * _Static_assert'ed equal in runtime/format/dtype_mirrors.c). */
const char *ft_cuda_kernel_format(uint32_t dtype);

#endif
