/* Architecture families: each turns a source model's names and metadata
 * into the IR. */
#ifndef FT_MODELS_MODEL_REGISTRY_H
#define FT_MODELS_MODEL_REGISTRY_H

#include "freetoken.h"
#include "ir.h"
#include "source.h"

/* Picks the family from GGUF general.architecture or HF architectures[0]
 * and builds a validated IR. The IR keeps no pointer into `src`. */
FT_WARN_UNUSED ft_status_t ft_model_build_ir(const ft_src_model_t *src, ft_ir_model_t **out_model);

/* Per family. */
FT_WARN_UNUSED ft_status_t ft_qwen3moe_build(const ft_src_model_t *src, ft_ir_model_t *model);

#endif
