/* Built instead of nvrtc_compile.c when CMake found no CUDA toolkit: the
 * emitter still works, compiling reports that NVRTC is unavailable. */
#include "cuda_codegen.h"

#include <string.h>

int ft_cg_cuda_nvrtc_available(void)
{
    return 0;
}

ft_status_t ft_cg_cuda_compile(const ft_cg_cuda_source_t *source, const uint32_t *archs, uint32_t n,
                               ft_cg_cuda_images_t *out_images)
{
    memset(out_images, 0, sizeof(*out_images));
    return ft_status_make(
        FT_STATUS_UNAVAILABLE,
        "CUDA compile: this ftc was built without NVRTC (no CUDA toolkit found at configure time)");
}
