/* The naming contract between codegen/cuda's emitter and the CUDA
 * backend's launcher: the weight formats the CUDA templates compute and
 * the short name each takes in an emitted kernel's name
 * ("ft_gemv_q4_k_k2048"). One table, read by both sides. */
#ifndef FT_BACKENDS_CUDA_KERNEL_NAMES_H
#define FT_BACKENDS_CUDA_KERNEL_NAMES_H

#include "../../format/dtype.h"

/* The format's name in kernel names, or NULL when the CUDA templates do
 * not compute weights of that format. */
const char *ft_cuda_kernel_format(ft_dtype_t t);

#endif
