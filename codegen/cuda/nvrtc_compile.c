/* NVRTC compilation of emitted CUDA C: one program per target, a cubin
 * from -arch=sm_XX for each and PTX from -arch=compute_XX of the lowest.
 * nvrtcResult becomes ft_status_t in ft_cg_nvrtc_status only; compile
 * errors are attributed to the template or kernel section of the emitted
 * source that the first error line falls in. */
#include "cuda_codegen.h"

#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Name NVRTC uses in diagnostics: "ft_model.cu(123): error: ...". */
static const char ft_cg_nvrtc_prog_name[] = "ft_model.cu";

int ft_cg_cuda_nvrtc_available(void)
{
    return 1;
}

FT_WARN_UNUSED static ft_status_t ft_cg_nvrtc_status(nvrtcResult rc, const char *what, uint32_t sm)
{
    if (rc == NVRTC_SUCCESS) return FT_OK;
    const ft_status_code_t code = rc == NVRTC_ERROR_OUT_OF_MEMORY    ? FT_STATUS_OUT_OF_MEMORY
                                  : rc == NVRTC_ERROR_COMPILATION    ? FT_STATUS_FORMAT
                                  : rc == NVRTC_ERROR_INVALID_OPTION ? FT_STATUS_INVALID_ARGUMENT
                                  : rc == NVRTC_ERROR_INVALID_INPUT  ? FT_STATUS_INVALID_ARGUMENT
                                                                     : FT_STATUS_INTERNAL;
    return ft_status_make(code, "NVRTC %s for sm_%u: %s (nvrtcResult %d)", what, sm,
                          nvrtcGetErrorString(rc), (int)rc);
}

/* The section holding the first "ft_model.cu(LINE): error" of log. */
static const ft_cg_cuda_section_t *ft_cg_nvrtc_blame(const ft_cg_cuda_source_t *src,
                                                     const char *log)
{
    char pat[32];
    snprintf(pat, sizeof(pat), "%s(", ft_cg_nvrtc_prog_name);
    for (const char *p = strstr(log, pat); p; p = strstr(p + 1, pat)) {
        char *end;
        const unsigned long line = strtoul(p + strlen(pat), &end, 10);
        if (strncmp(end, "): error", 8) != 0) continue;
        for (uint32_t i = 0; i < src->n_sections; i++)
            if (line >= src->sections[i].first_line && line <= src->sections[i].last_line)
                return &src->sections[i];
        return NULL;
    }
    return NULL;
}

FT_WARN_UNUSED static ft_status_t ft_cg_nvrtc_log_error(nvrtcProgram prog, const ft_cg_cuda_source_t *src,
                                         uint32_t sm, int ptx)
{
    size_t n = 0;
    if (nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n == 0) n = 1;
    char *log = calloc(n, 1);
    if (!log)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY,
                              "NVRTC compile for sm_%u failed (no memory for its log)", sm);
    if (nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS) log[0] = 0;
    const ft_cg_cuda_section_t *sec = ft_cg_nvrtc_blame(src, log);
    ft_status_t st = ft_status_make(
        FT_STATUS_FORMAT, "NVRTC compile for %s_%u failed in %s (lines %u-%u of %s):\n%s",
        ptx ? "compute" : "sm", sm, sec ? sec->name : "an unattributed line",
        sec ? sec->first_line : 0, sec ? sec->last_line : 0, ft_cg_nvrtc_prog_name, log);
    free(log);
    return st;
}

/* Compiles src for one target into img (cubin, or PTX when ptx != 0). */
FT_WARN_UNUSED static ft_status_t ft_cg_nvrtc_one(const ft_cg_cuda_source_t *src, uint32_t sm, int ptx,
                                   ft_cg_cuda_image_t *img)
{
    nvrtcProgram prog;
    ft_status_t st = ft_cg_nvrtc_status(
        nvrtcCreateProgram(&prog, src->text, ft_cg_nvrtc_prog_name, 0, NULL, NULL),
        "program creation", sm);
    if (st) return st;
    char arch[32];
    snprintf(arch, sizeof(arch), "-arch=%s_%u", ptx ? "compute" : "sm", sm);
    const char *opts[] = {arch, "-std=c++17"};
    const nvrtcResult rc = nvrtcCompileProgram(prog, (int)(sizeof(opts) / sizeof(opts[0])), opts);
    if (rc == NVRTC_ERROR_COMPILATION)
        st = ft_cg_nvrtc_log_error(prog, src, sm, ptx);
    else
        st = ft_cg_nvrtc_status(rc, "compile", sm);
    size_t n = 0;
    if (!st)
        st = ft_cg_nvrtc_status(ptx ? nvrtcGetPTXSize(prog, &n) : nvrtcGetCUBINSize(prog, &n),
                                "image size", sm);
    if (!st && !n)
        st = ft_status_make(FT_STATUS_INTERNAL, "NVRTC produced an empty image for sm_%u", sm);
    if (!st && !(img->data = malloc(n)))
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "NVRTC image for sm_%u: %zu bytes", sm, n);
    if (!st) {
        img->n_bytes = n;
        img->sm = sm;
        img->is_ptx = ptx;
        st = ft_cg_nvrtc_status(ptx ? nvrtcGetPTX(prog, (char *)img->data)
                                    : nvrtcGetCUBIN(prog, (char *)img->data),
                                "image copy", sm);
    }
    nvrtcDestroyProgram(&prog);
    return st;
}

ft_status_t ft_cg_cuda_compile(const ft_cg_cuda_source_t *source, const uint32_t *archs, uint32_t n,
                               ft_cg_cuda_images_t *out)
{
    memset(out, 0, sizeof(*out));
    if (n == 0 || n > FT_CG_CUDA_MAX_ARCHS)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "CUDA compile: %u targets (1..%d)", n,
                              FT_CG_CUDA_MAX_ARCHS);
    uint32_t lowest = archs[0];
    for (uint32_t i = 0; i < n; i++)
        lowest = archs[i] < lowest ? archs[i] : lowest;
    ft_status_t st = FT_OK;
    for (uint32_t i = 0; i <= n && !st; i++) {
        const int ptx = i == n;
        st = ft_cg_nvrtc_one(source, ptx ? lowest : archs[i], ptx, &out->images[out->n_images]);
        /* A failed image may hold a partial buffer: count it to free it. */
        if (!st || out->images[out->n_images].data) out->n_images++;
    }
    return st;
}
