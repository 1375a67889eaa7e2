/* gpu_kernels_prebuilt runs where NVRTC is absent: it only loads images. */
#include "gpu_harness.h"

void gk_images_compile(const uint32_t *archs, uint32_t n, gk_images_t *out)
{
    fprintf(stderr, "built without NVRTC: pass --images DIR (written by gpu_kernels "
                    "--write-images DIR)\n");
    exit(2);
}
