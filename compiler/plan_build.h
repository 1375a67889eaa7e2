/* IR + packed weights -> the ftplan.Plan protobuf message. */
#ifndef FT_COMPILER_PLAN_BUILD_H
#define FT_COMPILER_PLAN_BUILD_H

#include "freetoken.h"
#include "ir.h"
#include "plan.pb-c.h"
#include "weights_pack.h"

/* Builds the plan message from the weights' layout (ft_weights_layout);
 * every allocation comes from `arena`, which must outlive the message. The
 * weight file's size and hash are those in pw, which are set once the
 * weights are written: then call ft_plan_set_weights. kv_format: the KV
 * cache's element type the runtime stores, FT_DTYPE_F16 or FT_DTYPE_F32
 * (INVALID_ARGUMENT otherwise). */
FT_WARN_UNUSED ft_status_t ft_plan_build(const ft_ir_model_t *model, const ft_packed_weights_t *pw,
                          ft_dtype_t kv_format, ft_arena_t *arena, Ftplan__Plan **out_plan);

/* Copies the written weight file's size and hash (ft_weights_pack) into
 * the plan ft_plan_build made from pw's layout. */
void ft_plan_set_weights(Ftplan__Plan *plan, const ft_packed_weights_t *pw);

/* Records the XXH3-64 of every ordinary tensor and every expert blob of
 * the written weights file in the plan (weights_hashes.c). */
FT_WARN_UNUSED ft_status_t ft_plan_hash_blobs(Ftplan__Plan *plan, const char *weights_path, ft_arena_t *arena);

/* Lowers the model to its op schedule (models/) and stores it in the plan
 * (plan_schedule.c). */
FT_WARN_UNUSED ft_status_t ft_plan_add_schedule(const ft_ir_model_t *model, Ftplan__Plan *plan, ft_arena_t *arena);

#endif
