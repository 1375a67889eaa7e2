/* The planner's inputs and its stored answer, read from a compiled plan
 * (plan.proto). ftc solves the partition with the model description made
 * here from the plan it is about to write, and the runtime solves again
 * (a different budget, a re-plan) with the description made here from the
 * plan it opened: one producer, so both solves see the same bytes (the
 * FTW expert blobs a slot holds, the tensors as packed, the KV element
 * type the plan chose). */
#ifndef FT_PLAN_FROM_PLAN_H
#define FT_PLAN_FROM_PLAN_H

#include "freetoken.h"
#include "planner.h"

#include "../format/dtype.h"
#include "plan.pb-c.h"

#include <stdint.h>

/* The KV cache's element type the plan chose: FT_DTYPE_F32 or
 * FT_DTYPE_F16 (a plan without kv_format: FT_DTYPE_F32). The plan must be
 * validated (ft_plan_validate). */
ft_dtype_t ft_plan_kv_dtype(const Ftplan__Plan *plan);

/* The planner's description of the model in a validated plan:
 *  - per block: is_moe, n_experts and n_used from the block; expert_bytes
 *    the layer's FTW expert blob (ExpertBlock.stride: what one slot holds
 *    and one copy moves), expert_params the elements of one expert's gate,
 *    up and down; dense_bytes / dense_params every other tensor of the
 *    layer as packed (Tensor.size), the output norm counted with the last
 *    layer; kv_bytes_per_token n_kv_heads * (head_dim + value head dim)
 *    elements of the plan's kv_format (a sliding-window layer: that many
 *    bytes per token of the window as fixed state_bytes instead);
 *  - embed_bytes the token embedding, output_bytes the output head (a tied
 *    head: the embedding, and embed_bytes 0); expert_format the first
 *    routed-expert tensor's format, dense_format the first attention q's;
 *  - popularity from the plan's calibration counts (fractions of its
 *    tokens), or NULL without calibration.
 * name names the plan in messages. A MoE block without an expert block,
 * an attention kind with no KV rule, or sizes that overflow 64 bits are
 * errors naming the block. *out is one allocation from alloc (NULL: libc),
 * freed with ft_plan_model_free. */
FT_WARN_UNUSED ft_status_t ft_plan_model_from_plan(const Ftplan__Plan *plan, const char *name,
                                                   const ft_allocator_t *alloc, ft_plan_model_t **out);
void ft_plan_model_free(ft_plan_model_t *model, const ft_allocator_t *alloc);

/* The budgets a plan's partition was solved for (zeros without one). */
void ft_plan_budget_from_plan(const Ftplan__Plan *plan, ft_plan_budget_t *out);

/* The partition, q* table, streaming threshold and predictions stored in a
 * validated plan, as the planner returned them (fits = 1; qstar, hit_rate
 * and pinned malloc'ed: ft_plan_result_release). A plan without a
 * partition is FT_STATUS_INVALID_ARGUMENT. */
FT_WARN_UNUSED ft_status_t ft_plan_result_from_plan(const Ftplan__Plan *plan, const char *name,
                                                    ft_plan_result_t *out);

#endif
