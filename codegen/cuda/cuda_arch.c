/* Target architecture lists and compiled images: the parts of the CUDA
 * compile that do not depend on NVRTC being present. */
#include "cuda_codegen.h"

#include <stdlib.h>
#include <string.h>

const uint32_t ft_cg_cuda_default_archs[6] = {80, 86, 89, 90, 100, 120};

/* One item: "sm_90", "compute_90" is not a cubin target, "90" is. */
static int ft_cg_cuda_parse_one(const char *p, size_t n, uint32_t *out)
{
    if (n > 3 && memcmp(p, "sm_", 3) == 0) p += 3, n -= 3;
    if (n < 2 || n > 3) return 0;
    uint32_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return 0;
        v = v * 10 + (uint32_t)(p[i] - '0');
    }
    /* NVRTC in CUDA 13 targets Turing (sm_75) and newer. */
    if (v < 75 || v > 199) return 0;
    *out = v;
    return 1;
}

ft_status_t ft_cg_cuda_parse_archs(const char *list, uint32_t *archs, uint32_t max, uint32_t *out_n)
{
    uint32_t n = 0;
    const char *p = list;
    while (*p) {
        const char *end = strchr(p, ',');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        uint32_t sm;
        if (!ft_cg_cuda_parse_one(p, len, &sm))
            return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                                  "--cuda-arch: '%.*s' (byte %zu of \"%s\") is not a target like "
                                  "sm_90 (sm_75..sm_199)",
                                  (int)len, p, (size_t)(p - list), list);
        /* Insert sorted, skipping duplicates. */
        uint32_t i = 0;
        while (i < n && archs[i] < sm)
            i++;
        if (i == n || archs[i] != sm) {
            if (n == max)
                return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                                      "--cuda-arch: more than %u targets in \"%s\"", max, list);
            memmove(archs + i + 1, archs + i, (n - i) * sizeof(*archs));
            archs[i] = sm;
            n++;
        }
        if (!end) break;
        p = end + 1;
    }
    if (!n) return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "--cuda-arch: empty target list");
    *out_n = n;
    return FT_OK;
}

void ft_cg_cuda_images_free(ft_cg_cuda_images_t *images)
{
    for (uint32_t i = 0; i < images->n_images; i++)
        free(images->images[i].data);
    memset(images, 0, sizeof(*images));
}
