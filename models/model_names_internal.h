/* What model_names.c shares with the files that take one family's
 * checkpoint layout apart (model_names_q35_hf.c): the name index and the
 * ways a source tensor becomes an IR tensor. */
#ifndef FT_MODELS_MODEL_NAMES_INTERNAL_H
#define FT_MODELS_MODEL_NAMES_INTERNAL_H

#include "freetoken.h"
#include "ir.h"
#include "source.h"

/* An open-addressing index over source tensor names: real checkpoints have
 * tens of thousands of tensors, too many for linear lookups per name. */
typedef struct ft_name_index {
    uint32_t cap; /* power of two */
    int64_t *slots; /* tensor index, or -1 */
    uint8_t *used;  /* per source tensor: claimed by the model */
    const ft_src_model_t *src;
} ft_name_index_t;

/* Finds and claims a tensor; NULL when absent. */
const ft_src_tensor_t *ft_name_take(ft_name_index_t *ix, const char *name);

/* Appends an IR tensor (name copied into m's arena). */
FT_WARN_UNUSED ft_status_t ft_ir_add_tensor(ft_ir_model_t *m, const char *name,
                                            ft_tensor_role_t role, int32_t layer,
                                            ft_ir_tensor_t **out);

/* A single source tensor -> IR tensor with one piece; *found 0 when absent. */
FT_WARN_UNUSED ft_status_t ft_take_plain(ft_name_index_t *ix, ft_ir_model_t *m,
                                         const char *src_name, const char *ir_name,
                                         ft_tensor_role_t role, int32_t layer, int *found);

/* An IR tensor of `role` made of row ranges of source tensor s: n_ranges
 * ranges, range i rows [first[i], first[i] + count), in order. */
FT_WARN_UNUSED ft_status_t ft_take_rows(ft_ir_model_t *m, const ft_src_tensor_t *s,
                                        uint64_t row_bytes, const char *iname,
                                        ft_tensor_role_t role, uint32_t l, uint32_t n_ranges,
                                        const uint64_t *first, uint64_t count);

/* Qwen3-Next's fused q | k | v | z (in_name, optional) and beta | alpha
 * (ba_name, required) per key head, split into the DeltaNet roles. */
FT_WARN_UNUSED ft_status_t ft_take_ssm_fused(ft_name_index_t *ix, const ft_src_model_t *src,
                                             ft_ir_model_t *m, uint32_t l, const char *in_name,
                                             const char *ba_name, int *out_fused_in);

/* Qwen3.5/3.6 and Qwen3-Next HF layer l's Gated DeltaNet tensors
 * (linear_attn.*), every DeltaNet role with HF's values and head order
 * rewritten as llama.cpp's converter does (model_names_q35_hf.c). */
FT_WARN_UNUSED ft_status_t ft_take_q35_hf_deltanet(ft_name_index_t *ix, const ft_src_model_t *src,
                                                   ft_ir_model_t *m, uint32_t l);

/* Qwen3.5 HF layer l's routed experts as fused mlp.experts.gate_up_proj
 * [E, 2F, d] and mlp.experts.down_proj [E, d, F] (transformers 5),
 * when the checkpoint has them: *found 0 otherwise. */
FT_WARN_UNUSED ft_status_t ft_take_q35_hf_fused_experts(ft_name_index_t *ix,
                                                        const ft_src_model_t *src,
                                                        ft_ir_model_t *m, uint32_t l, int *found);

/* gpt-oss HF layer l's MXFP4 experts and their biases
 * (model_names_oss_hf.c). */
FT_WARN_UNUSED ft_status_t ft_take_oss_hf_experts(ft_name_index_t *ix, const ft_src_model_t *src,
                                                  ft_ir_model_t *m, uint32_t l);

#endif
