/* Internal to codegen/cpu: kernel requests, templates, source positions. */
#ifndef FT_CG_CPU_INTERNAL_H
#define FT_CG_CPU_INTERNAL_H

#include "cg_cpu.h"
#include "ft_kernel_abi.h"

/* The name the emitted source has in diagnostics, in libclang and cc. */
#define FT_CG_SOURCE_NAME "ft_kernels.c"

/* One kernel to emit (the key of its ABI table entry; cg_cpu.h). */
typedef ft_cg_cpu_kernel_t ft_cg_kreq_t;

/* Template texts by name ("common", "rowloop", "tiled", "avx512", "avx2",
 * "portable", "fused"); a test may substitute one. */
typedef struct ft_cg_template {
    const char *name;
    const char *text;
} ft_cg_template_t;

/* 1 when the generated kernels compute weight format fmt. */
int ft_cg_cpu_format_supported(uint32_t fmt);

/* Emits the kernels reqs[0..n) for isa; override (NULL or n_override
 * entries) replaces templates by name. Checked through libclang. */
FT_WARN_UNUSED ft_status_t ft_cg_cpu_emit_kernels(const ft_cg_kreq_t *reqs, uint32_t n, const char *isa,
                                   const ft_cg_template_t *override, uint32_t n_override,
                                   char **out_source);

/* The name of the kernel or template function around source line `line`
 * (1-based), written into buf; "?" when none. */
void ft_cg_cpu_function_at(const char *source, uint32_t line, char *buf, size_t buf_len);

/* The compiler flags of isa (NULL-terminated, static). */
const char *const *ft_cg_cpu_isa_flags(const char *isa);

/* Entry-table lines built by reading the annotated kernel signatures of
 * source through libclang (cg_cpu_check.c). *out is malloc'd. */
FT_WARN_UNUSED ft_status_t ft_cg_cpu_entry_table(const char *source, const char *isa, char **out);

#endif
