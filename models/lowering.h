/* Lowerings: model IR -> op schedule (ir/schedule.h), one per block shape. */
#ifndef FT_MODELS_LOWERING_H
#define FT_MODELS_LOWERING_H

#include "freetoken.h"
#include "ir.h"
#include "schedule.h"

/* Pre-norm GQA attention + routed MoE FFN per block (lower_decoder.c). */
FT_WARN_UNUSED ft_status_t ft_lower_moe_decoder(const ft_ir_model_t *model, ft_ir_schedule_t *out);

#endif
