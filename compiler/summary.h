/* What `ftc inspect` reports: one summary filled either from a model's IR
 * or from a compiled bundle's plan, printed for people or as JSON. */
#ifndef FT_COMPILER_SUMMARY_H
#define FT_COMPILER_SUMMARY_H

#include "freetoken.h"
#include "ir.h"
#include "plan.pb-c.h"

#include <stdint.h>
#include <stdio.h>

/* Tensor roles grouped for the formats-per-role report: embeddings,
 * attention, recurrent (Gated DeltaNet), experts, shared experts, dense
 * FFN, router, output, norms, other (biases, sinks). */
enum { FT_SUMMARY_N_GROUPS = 10 };
const char *ft_summary_group_name(int group);
int ft_summary_role_group(ft_tensor_role_t role);

typedef struct ft_summary_tensor {
    const char *name;
    ft_tensor_role_t role;
    ft_dtype_t dtype;
    uint32_t n_dims;
    uint64_t shape[FT_MAX_DIMS];
    uint64_t bytes;  /* whole tensor */
    uint64_t offset; /* in the FTW file (bundles), else 0 */
    uint32_t layout; /* bundles: ft_wlayout_t, how the rows are arranged */
} ft_summary_tensor_t;

typedef struct ft_summary {
    int is_bundle;
    const char *source_format, *source_name, *arch;
    uint32_t n_layers, d_model, n_heads, n_kv_heads, head_dim, n_experts, n_experts_used,
        expert_ffn, vocab_size, context_length;
    float rope_theta, norm_eps;
    /* latent attention (DeepSeek): the KV's compressed rank (0: none), the
     * low-rank q's, and the part of each head without RoPE */
    uint32_t kv_lora_rank, q_lora_rank, nope_head_dim;
    uint64_t total_params, active_params;
    uint32_t format_counts[FT_DTYPE_COUNT];
    /* the same per group of roles (ft_summary_group_name) */
    uint32_t group_format_counts[FT_SUMMARY_N_GROUPS][FT_DTYPE_COUNT];
    uint64_t weight_bytes; /* sum of tensor bytes */
    uint32_t n_tensors;
    ft_summary_tensor_t *tensors; /* [n_tensors], malloc'ed */
    const char *tok_model, *tok_pre;
    uint32_t n_tokens, n_merges;
    int32_t bos_id, eos_id;
    /* bundles */
    uint64_t plan_bytes, weights_file_bytes;
    char plan_hash[17];    /* XXH3-64 of plan.ftp, hex */
    char weights_hash[33]; /* XXH3-128 content hash of weights.ftw, hex */
    uint32_t n_expert_blocks;
    const Ftplan__Plan *plan; /* bundles: the plan, for its partition (plan_report.h) */
} ft_summary_t;

FT_WARN_UNUSED ft_status_t ft_summary_from_ir(const ft_ir_model_t *model, ft_summary_t *out);
/* plan_file: the plan file's bytes (for its hash). Strings point into plan. */
FT_WARN_UNUSED ft_status_t ft_summary_from_plan(const Ftplan__Plan *plan, const uint8_t *plan_file,
                                 uint64_t plan_bytes, ft_summary_t *out);
void ft_summary_release(ft_summary_t *s);

/* Human-readable; with_tensors adds one line per tensor. */
void ft_summary_print(const ft_summary_t *s, int with_tensors, FILE *out);
/* One JSON object (keys documented in the README). */
FT_WARN_UNUSED ft_status_t ft_summary_print_json(const ft_summary_t *s, int with_tensors, FILE *out);

#endif
