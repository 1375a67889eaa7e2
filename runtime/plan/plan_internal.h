/* Pieces of the planner shared by its files (planner.c calls them in
 * order: partition, experts, q* table, predictions). Not public API, but
 * the unit tests use them. */
#ifndef FT_PLAN_PLAN_INTERNAL_H
#define FT_PLAN_PLAN_INTERNAL_H

#include "planner.h"

#include <stdint.h>

/* Sizes the solver bounds its inputs by (it allocates per expert). */
#define FT_PLAN_MAX_LAYERS 4096u
#define FT_PLAN_MAX_EXPERTS 65536u
#define FT_PLAN_MAX_ITEMS (1u << 22) /* layers x experts */

/* Scratch estimate (docs/planner.md): activations of a prefill chunk of
 * FT_PLAN_PREFILL_TOKENS tokens, FT_PLAN_SCRATCH_ACT_BUFFERS fp32 vectors
 * of d_model each (residual, norm, q, k, v, attention out, FFN out, spare),
 * the routed experts' gate and up products of the chunk in fp32, the
 * logits of the batch, and a fixed workspace for kernels' reductions. */
#define FT_PLAN_SCRATCH_ACT_BUFFERS 8u
#define FT_PLAN_SCRATCH_WORKSPACE (32ull << 20)

/* Totals of a validated model, bytes. */
typedef struct ft_planner_totals {
    uint64_t weights;       /* embed + output + dense + every expert */
    uint64_t dense;         /* sum of dense_bytes */
    uint64_t experts;       /* sum of n_experts * expert_bytes */
    uint64_t kv;            /* KV for ctx tokens of every sequence + recurrent state */
    uint32_t max_experts;   /* the largest n_experts */
} ft_planner_totals_t;

/* Checks every field and computes the totals with overflow checks. */
FT_WARN_UNUSED ft_status_t ft_planner_validate(const ft_plan_model_t *m, const ft_hw_t *hw,
                             const ft_plan_budget_t *b, ft_planner_totals_t *out);

/* One layer's KV + state bytes for the budget's ctx and batch (validated). */
uint64_t ft_planner_layer_kv(const ft_plan_layer_t *l, const ft_plan_budget_t *b);
uint64_t ft_planner_scratch_bytes(const ft_plan_model_t *m, const ft_plan_budget_t *b);

/* Appends "; "-separated text to res->note (truncating). */
void ft_planner_note(ft_plan_result_t *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The VRAM and RAM regions, the GPU layers and the streaming buffers;
 * calls ft_planner_experts for the expert region. */
FT_WARN_UNUSED ft_status_t ft_planner_partition(const ft_plan_model_t *m, const ft_hw_t *hw,
                              const ft_plan_budget_t *b, const ft_planner_totals_t *tot,
                              ft_plan_result_t *res, int allow_stream);

/* Splits `region` bytes between pinned experts and LRU slots of the GPU
 * layers' MoE experts and sets hit_rate (allocated [n_layers]), pinned,
 * n_pinned, n_slots, vram_pinned, vram_slots. */
FT_WARN_UNUSED ft_status_t ft_planner_experts(const ft_plan_model_t *m, uint64_t region, ft_plan_result_t *res);

/* Fills res->qstar (allocated [n_layers][n_buckets]) and the buckets. */
FT_WARN_UNUSED ft_status_t ft_planner_qstar_table(const ft_plan_model_t *m, const ft_hw_t *hw,
                                ft_plan_result_t *res);

/* Decode and prefill predictions, the streaming threshold, the
 * bottleneck. Needs the partition and the hit rates. */
void ft_planner_predict(const ft_plan_model_t *m, const ft_hw_t *hw, const ft_plan_budget_t *b,
                     ft_plan_result_t *res);

#endif
