/* Architecture families: each turns a source model's names and metadata
 * into the IR. */
#ifndef FT_MODELS_MODEL_REGISTRY_H
#define FT_MODELS_MODEL_REGISTRY_H

#include "freetoken.h"
#include "ir.h"
#include "schedule.h"
#include "source.h"

/* Picks the family from GGUF general.architecture or HF architectures[0]
 * and builds a validated IR. The IR keeps no pointer into `src`. */
FT_WARN_UNUSED ft_status_t ft_model_build_ir(const ft_src_model_t *src, ft_ir_model_t **out_model);

/* Lowers a validated IR to its op schedule (ir/schedule.h), the family's
 * lowering chosen by hp.arch; memory in model's arena. */
FT_WARN_UNUSED ft_status_t ft_model_lower(const ft_ir_model_t *model, ft_ir_schedule_t *out);

/* Per family. */
FT_WARN_UNUSED ft_status_t ft_qwen3moe_build(const ft_src_model_t *src, ft_ir_model_t *model);
FT_WARN_UNUSED ft_status_t ft_mixtral_build(const ft_src_model_t *src, ft_ir_model_t *model);
FT_WARN_UNUSED ft_status_t ft_gptoss_build(const ft_src_model_t *src, ft_ir_model_t *model);
FT_WARN_UNUSED ft_status_t ft_glm4moe_build(const ft_src_model_t *src, ft_ir_model_t *model);
FT_WARN_UNUSED ft_status_t ft_qwen35moe_build(const ft_src_model_t *src, ft_ir_model_t *model);
FT_WARN_UNUSED ft_status_t ft_qwen3next_build(const ft_src_model_t *src, ft_ir_model_t *model);
FT_WARN_UNUSED ft_status_t ft_olmoe_build(const ft_src_model_t *src, ft_ir_model_t *model);
FT_WARN_UNUSED ft_status_t ft_deepseek2_build(const ft_src_model_t *src, ft_ir_model_t *model);
FT_WARN_UNUSED ft_status_t ft_minimax_m2_build(const ft_src_model_t *src, ft_ir_model_t *model);

#endif
