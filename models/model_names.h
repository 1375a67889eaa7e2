/* Tensor naming shared by the llama-family layouts (GGUF "blk.N.attn_q",
 * HF "model.layers.N.self_attn.q_proj"): finds each tensor a model's blocks
 * need, in one canonical order, and fills the IR's tensor table, files and
 * tokenizer. */
#ifndef FT_MODELS_MODEL_NAMES_H
#define FT_MODELS_MODEL_NAMES_H

#include "freetoken.h"
#include "ir.h"
#include "source.h"

/* Expects m->hp and m->blocks filled. Copies files, tokenizer and tensors
 * from src into m's arena. Every source tensor must be claimed: a tensor
 * the architecture does not know is an error naming it. */
FT_WARN_UNUSED ft_status_t ft_model_names_collect(const ft_src_model_t *src, ft_ir_model_t *m);

#endif
