/* Model shapes without weights: what the planner needs to know about a
 * model (runtime/plan/planner.h, ft_plan_model_t), computed from its
 * hyperparameters alone (an HF config.json or a GGUF header) or from an
 * imported IR. Lets `ftc plan` answer "will it fit, how fast" before any
 * weight is downloaded.
 *
 * Byte conventions, the same for every family:
 *  - 2-D weight matrices are counted in the requested format, row by row
 *    (ft_dtype_row_bytes). Routed experts use expert_format; every other
 *    matrix uses dense_format. A row whose length is not a multiple of the
 *    format's block is counted in q8_0 (f16 when not a multiple of 32 either),
 *    as llama.cpp's quantizer falls back for such rows.
 *  - 1-D tensors (norms, biases, sinks, gates' scalars) are f32, except
 *    expert biases (gpt-oss), which are counted bf16 as in the published
 *    checkpoint.
 *  - The KV cache is assumed f16: FT_SHAPE_KV_ELEM_BYTES per element. A
 *    full-attention GQA layer appends 2 * n_kv_heads * head_dim * 2 bytes per
 *    token; MLA appends (kv_lora_rank + qk_rope_head_dim) * 2.
 *  - Window-capped caches (sliding-window layers) are reported as a fixed
 *    per-sequence state_bytes = window * bytes per token, with
 *    kv_bytes_per_token = 0: exact when the context is at least the window.
 *  - Recurrent layers (Gated DeltaNet) append nothing per token; their
 *    state (f32 recurrent matrix and f32 convolution tail, as the runtime
 *    keeps them) is state_bytes.
 *  - The vision tower of multimodal checkpoints and multi-token-prediction
 *    heads are not counted: plain text decoding does not read them. */
#ifndef FT_MODELS_SHAPE_H
#define FT_MODELS_SHAPE_H

#include "freetoken.h"
#include "ir.h"
#include "meta.h"
#include "../runtime/plan/planner.h"

/* KV cache element size assumed by every shape (f16), bytes. */
#define FT_SHAPE_KV_ELEM_BYTES 2u
/* Recurrent (linear-attention) state element size (f32), bytes. */
#define FT_SHAPE_STATE_ELEM_BYTES 4u

/* Computes the shape of the model whose hyperparameters are in `meta`.
 * from_gguf = 1: GGUF keys ("qwen3moe.block_count"; the family from
 * general.architecture; the vocabulary size from "<arch>.vocab_size" and
 * tied embeddings from the optional "<arch>.tie_word_embeddings": GGUF
 * files carry neither, so the caller adds them from the tensor table, as
 * compiler/plan_model.c does);
 * from_gguf = 0: a flattened HF config.json (the family from
 * architectures.0 or model_type; multimodal configs' text_config.* is
 * used when present). Families: Qwen3-MoE, Qwen3-Next / Qwen3.5 / Qwen3.6
 * MoE hybrids, gpt-oss, DeepSeek-V3 (MLA) and DeepSeek-V4. `where` names
 * the source in messages. Missing keys, non-integers and sizes outside
 * sane bounds are errors naming the key. *out is one allocation, released
 * with ft_model_shape_free. */
FT_WARN_UNUSED ft_status_t ft_model_shape(const ft_meta_t *meta, const char *where, int from_gguf,
                           ft_dtype_t expert_format, ft_dtype_t dense_format,
                           ft_plan_model_t **out);

/* The same shape computed from an imported model's tensor table (every
 * tensor's element count, re-counted in the given formats by the rules
 * above) and its KV geometry. For a model both can describe, it equals
 * ft_model_shape's. */
FT_WARN_UNUSED ft_status_t ft_model_shape_from_ir(const ft_ir_model_t *model, ft_dtype_t expert_format,
                                   ft_dtype_t dense_format, ft_plan_model_t **out);

/* The same with each tensor's own format: formats[i] for model->tensors[i]
 * (a quantization mix's choice, as the compiler packs it), and each
 * layer's expert_part_format / expert_part_bytes filled, so the planner
 * times every part in its format. expert_format and dense_format are
 * still reported as the shape's formats. formats NULL: as above. */
FT_WARN_UNUSED ft_status_t ft_model_shape_from_ir_formats(const ft_ir_model_t *model, ft_dtype_t expert_format,
                                                          ft_dtype_t dense_format, const ft_dtype_t *formats,
                                                          ft_plan_model_t **out);

void ft_model_shape_free(ft_plan_model_t *shape);

/* Totals over the layers: all weights, the weights one decoded token reads
 * (dense + n_used experts per MoE layer + output head + one embedding
 * row), and the parameters of each. */
typedef struct ft_shape_totals {
    uint64_t weight_bytes, active_bytes;
    uint64_t params, active_params;
    uint64_t kv_bytes_per_token, state_bytes;
} ft_shape_totals_t;

void ft_model_shape_totals(const ft_plan_model_t *shape, ft_shape_totals_t *out);

#endif
