/* Internal to codegen/cuda: the template sources (the .cuh files of templates/),
 * embedded into the library at build time by embed_templates.cmake (the
 * generated cuda_templates_data.c lives in the build tree only). */
#ifndef FT_CODEGEN_CUDA_TEMPLATES_H
#define FT_CODEGEN_CUDA_TEMPLATES_H

#include <stdint.h>

typedef struct ft_cg_cuda_template {
    const char *name; /* file name without .cuh: "common", "matmul", ... */
    const char *text; /* NUL-terminated */
} ft_cg_cuda_template_t;

extern const ft_cg_cuda_template_t ft_cg_cuda_templates[];
extern const uint32_t ft_cg_cuda_n_templates;

#endif
