/* Generated CPU kernel modules at run time: the plan's shared object is
 * loaded from memory (no compiler on the appliance), its ABI version and
 * ISA are checked against this runtime and this CPU, and its table of
 * kernels, keyed by (op, format, rows, cols), becomes a dispatch table.
 * Products with no generated kernel fall back to the reference kernels.
 *
 * The module is code the compiler produced for this plan: loading it runs
 * it, so it must come from a plan the caller trusts (its bytes are checked
 * for shape, not for intent). */
#ifndef FT_CPU_MODULE_H
#define FT_CPU_MODULE_H

#include "ft_kernel_abi.h"
#include "kernels.h"
#include "freetoken.h"

typedef struct ft_cpu_module ft_cpu_module_t;

/* Loads the ELF shared object so[0..len) (memfd_create + dlopen of
 * /proc/self/fd/N, or a private temporary file where memfd is missing).
 * Refuses with FT_STATUS_MISMATCH a module of another FT_KABI_VERSION and
 * with FT_STATUS_UNSUPPORTED one whose ISA this CPU lacks. The bytes may
 * be freed after the call. Free *out with ft_cpu_module_free. */
FT_WARN_UNUSED ft_status_t ft_cpu_module_load(const uint8_t *so, size_t len, ft_cpu_module_t **out);
void ft_cpu_module_free(ft_cpu_module_t *mod);

/* The module's ISA ("avx512", "avx2", "portable") and kernel count. */
const char *ft_cpu_module_isa(const ft_cpu_module_t *mod);
uint32_t ft_cpu_module_count(const ft_cpu_module_t *mod);

/* The generated kernel for this key, or NULL (mod may be NULL). */
ft_kabi_matmul_fn ft_cpu_module_find_matmul(const ft_cpu_module_t *mod, uint32_t wtype,
                                            uint32_t rows, uint32_t cols);
ft_kabi_expert_fn ft_cpu_module_find_expert(const ft_cpu_module_t *mod, uint32_t gate_up,
                                            uint32_t down, uint32_t ffn, uint32_t d_model);

/* The ABI 2 fusions for this key, or NULL (mod may be NULL): RMSNorm +
 * preparation of d-element rows for weights of wtype; the router of
 * [n_experts, d_model] weights of wtype; attention for `group` query heads
 * per KV head of head_dim floats. */
ft_kabi_norm_prepare_fn ft_cpu_module_find_norm_prepare(const ft_cpu_module_t *mod, ft_dtype_t wtype,
                                                        uint32_t d);
ft_kabi_router_fn ft_cpu_module_find_router(const ft_cpu_module_t *mod, ft_dtype_t wtype,
                                            uint32_t n_experts, uint32_t d_model);
ft_kabi_attn_fn ft_cpu_module_find_attn(const ft_cpu_module_t *mod, uint32_t group, uint32_t head_dim);
/* The ABI 3 attention over an f16 KV cache, for the same key, or NULL. */
ft_kabi_attn_f16_fn ft_cpu_module_find_attn_f16(const ft_cpu_module_t *mod, uint32_t group, uint32_t head_dim);
/* The Gated DeltaNet recurrence (ABI 4) for n_v_heads value heads reading
 * n_k_heads key heads (tiled or grouped) of head_dim, or NULL. */
ft_kabi_deltanet_fn ft_cpu_module_find_deltanet(const ft_cpu_module_t *mod, uint32_t n_v_heads,
                                                uint32_t n_k_heads, int tiled, uint32_t head_dim);
/* One head of multi-head latent attention (ABI 5) for q_nope, RoPE,
 * kv_lora_rank and value widths, or NULL. */
ft_kabi_mla_fn ft_cpu_module_find_mla(const ft_cpu_module_t *mod, uint32_t nope, uint32_t rope,
                                      uint32_t kv_lora, uint32_t v);

/* ft_cpu_matmul through the module: the generated kernel for (wtype,
 * rows, cols) when the module has one, else the reference kernel. Same
 * arguments as ft_cpu_matmul plus the matrix's row count. mod may be NULL.
 * To install a module for a model, the engine keeps it and calls this (or
 * caches the find_* results per matrix at load). */
void ft_cpu_module_matmul(const ft_cpu_module_t *mod, ft_dtype_t wtype, const void *w,
                          size_t w_row_bytes, const void *xp, uint32_t n_tok, uint32_t rows,
                          uint32_t cols, uint32_t r0, uint32_t r1, float *y, size_t ldy);

#endif
