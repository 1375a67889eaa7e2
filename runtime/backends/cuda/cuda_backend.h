/* The cuda backend: the device interface (backend.h) on one GPU through
 * the Driver API (libcuda opened with dlopen, never linked).
 *
 * Status: runs here against tests/cuda_fake (a libcuda that emulates the
 * kernels on the CPU and checks every launch against the kernel's
 * parameter list); checked on a GPU only by tests/gpu/run.sh. */
#ifndef FT_BACKENDS_CUDA_BACKEND_H
#define FT_BACKENDS_CUDA_BACKEND_H

#include "freetoken.h"
#include "../backend.h"
#include "../../format/bundle.h"

/* Opens GPU `ordinal` through lib_name (NULL: $FT_CUDA_LIB, else
 * libcuda.so.1) and loads the bundle's CUDA module: the cubin for this
 * GPU, else its PTX. UNAVAILABLE (the caller falls back to the CPU) when
 * there is no driver or GPU or the plan has no CUDA images. */
FT_WARN_UNUSED ft_status_t ft_cuda_backend_create(const ft_bundle_t *bundle, const char *lib_name, int ordinal,
                                                  const ft_allocator_t *alloc, ft_device_t **out);

#endif
