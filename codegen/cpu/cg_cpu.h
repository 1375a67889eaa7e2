/* CPU kernel codegen: C source specialized for one model's matrix shapes
 * and weight formats and for one ISA, checked through libclang and
 * compiled by the system C compiler into a shared object the runtime loads
 * (runtime/backends/cpu/cpu_module.h). The contract between the emitted
 * code and the runtime is runtime/include/ft_kernel_abi.h.
 *
 * ISAs: "avx512" (AVX-512 F/BW/VL + VNNI, -march=x86-64-v4), "avx2"
 * (AVX2 + FMA + F16C, -march=x86-64-v3), "portable" (plain C). */
#ifndef FT_CG_CPU_H
#define FT_CG_CPU_H

#include "freetoken.h"
#include "ir.h"

#include <stddef.h>
#include <stdint.h>

/* The best ISA this machine runs: "avx512", "avx2" or "portable". */
const char *ft_cg_cpu_host_isa(void);

/* 1 when isa is one of the names above. */
int ft_cg_cpu_isa_valid(const char *isa);

/* One generated kernel: the key of its ABI table entry
 * (runtime/include/ft_kernel_abi.h). */
typedef struct ft_cg_cpu_kernel {
    uint32_t op;         /* FT_KABI_OP_* */
    uint32_t format;     /* weights (gate/up for experts), FT_KABI_FMT_* = ft_dtype_t,
                          * | FT_KABI_LAYOUT_R16 for rows interleaved by 16 */
    uint32_t format_aux; /* experts: down's format (and layout bit); else 0 */
    uint32_t rows, cols; /* experts: ffn, d_model */
} ft_cg_cpu_kernel_t;

/* The kernels ft_cg_cpu_emit emits for m and tensor_formats (same rules),
 * in emission order: *out is malloc'd (free()), *out_n entries. */
FT_WARN_UNUSED ft_status_t ft_cg_cpu_kernels(const ft_ir_model_t *m, const ft_dtype_t *tensor_formats,
                              const uint32_t *tensor_layouts, ft_cg_cpu_kernel_t **out, uint32_t *out_n);

/* Emits the kernels m needs: one matmul per distinct (format, rows, cols)
 * of its 2-D projection weights (attention, router, dense FFN, output),
 * one fused expert (gate + up + SwiGLU + down) per distinct expert shape
 * and format pair, and the ABI 2 fusions: RMSNorm + preparation per
 * (format, d_model) of the products after a norm (q/k/v, router, experts,
 * output), the router (matvec + softmax + top-k) per router shape, and
 * attention per (query heads per KV head, head_dim). tensor_formats[i] is the format tensor i of m is stored
 * in by the bundle (NULL: as in the IR), tensor_layouts[i] its layout
 * (runtime/format/wlayout.h; NULL: all rows): a product's kernel over
 * Q8_0 rows interleaved by 16 is keyed with FT_KABI_LAYOUT_R16 (the
 * AVX-512 template has it); tensors in formats the kernels do
 * not compute are skipped (the runtime falls back for them). The source is
 * parsed through libclang before it is returned (errors name the kernel
 * and line). *out_source is malloc'd, NUL-terminated; free() it. */
FT_WARN_UNUSED ft_status_t ft_cg_cpu_emit(const ft_ir_model_t *m, const ft_dtype_t *tensor_formats,
                           const uint32_t *tensor_layouts, const char *isa, char **out_source);

/* Parses source through libclang with the flags of isa; any error becomes
 * a status "ft_kernels.c:LINE:COL: in kernel 'NAME': MESSAGE". */
FT_WARN_UNUSED ft_status_t ft_cg_cpu_check(const char *source, const char *isa);

/* Compiles source with the system compiler (`cc`, or $FT_CC) into a
 * shared object: fixed flags and file names in a private temporary
 * directory, so the same source gives the same bytes. Compiler errors are
 * reported with file:line:col and the kernel's name. *out_so is malloc'd
 * (free()), *out_len its size in bytes. */
FT_WARN_UNUSED ft_status_t ft_cg_cpu_build(const char *source, const char *isa, uint8_t **out_so,
                            size_t *out_len);

#endif
