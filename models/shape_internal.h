/* Shared pieces of the shape builders (shape_*.c): key lookup with bounds,
 * and overflow-checked byte/parameter accumulation with a sticky flag so
 * that the per-family code reads like the architecture it describes. */
#ifndef FT_MODELS_SHAPE_INTERNAL_H
#define FT_MODELS_SHAPE_INTERNAL_H

#include "shape.h"

#include <stdint.h>

/* Upper bounds on hyperparameters read from untrusted files. Real models
 * are far below each (the largest have ~100 layers, d_model ~16k, 384
 * experts, vocabularies of ~260k). */
#define FT_SHAPE_MAX_LAYERS 4096u
#define FT_SHAPE_MAX_DIM (1u << 20)
#define FT_SHAPE_MAX_HEADS (1u << 16)
#define FT_SHAPE_MAX_EXPERTS (1u << 16)
#define FT_SHAPE_MAX_VOCAB (1u << 24)
#define FT_SHAPE_MAX_WINDOW (1u << 30)

typedef struct ft_shape_ctx {
    const ft_meta_t *meta;
    const char *where;
    const char *prefix; /* prepended to every key: "", "text_config.", "qwen3moe." */
    ft_dtype_t expert_fmt, dense_fmt;
    int overflow; /* sticky: some sum or product overflowed */
} ft_shape_ctx_t;

/* Required count in [min, max]: an error naming where and the full key. */
FT_WARN_UNUSED ft_status_t ft_shape_u32(ft_shape_ctx_t *c, const char *key, uint32_t min, uint32_t max,
                         uint32_t *out);
/* Optional: keeps *out (the default) when the key is absent or null. */
FT_WARN_UNUSED ft_status_t ft_shape_u32_opt(ft_shape_ctx_t *c, const char *key, uint32_t min, uint32_t max,
                             uint32_t *out);
/* Optional boolean; keeps *out when absent. */
void ft_shape_bool_opt(const ft_shape_ctx_t *c, const char *key, int *out);
/* The meta entry for prefix+key, or NULL. */
const ft_meta_entry_t *ft_shape_find(const ft_shape_ctx_t *c, const char *key);
/* layer_types.<l> (a string) when the config lists them, else NULL. */
const char *ft_shape_layer_type(const ft_shape_ctx_t *c, uint32_t l);

/* a * b (and * c) with the sticky overflow flag. */
uint64_t ft_shape_mul(ft_shape_ctx_t *c, uint64_t a, uint64_t b);
uint64_t ft_shape_mul3(ft_shape_ctx_t *c, uint64_t a, uint64_t b, uint64_t d);
uint64_t ft_shape_add(ft_shape_ctx_t *c, uint64_t a, uint64_t b);

/* Bytes of a rows x cols matrix in fmt (with the row fallback of shape.h). */
uint64_t ft_shape_matrix_bytes(ft_shape_ctx_t *c, ft_dtype_t fmt, uint64_t rows, uint64_t cols);

/* Adders: a matrix (out_features x in_features) in the dense format, a
 * 1-D f32 vector of n, or a routed expert's matrix / bf16 bias. */
void ft_shape_dense(ft_shape_ctx_t *c, ft_plan_layer_t *l, uint64_t rows, uint64_t cols);
void ft_shape_vec(ft_shape_ctx_t *c, ft_plan_layer_t *l, uint64_t n);
void ft_shape_expert_matrix(ft_shape_ctx_t *c, ft_plan_layer_t *l, uint64_t rows, uint64_t cols);
void ft_shape_expert_bias(ft_shape_ctx_t *c, ft_plan_layer_t *l, uint64_t n);
/* A SwiGLU FFN (gate, up: ffn x d; down: d x ffn) counted as dense weights. */
void ft_shape_dense_ffn(ft_shape_ctx_t *c, ft_plan_layer_t *l, uint64_t d, uint64_t ffn);

/* Allocates the shape (model + n_layers zeroed layers + the arch string in
 * one block) and fills the global fields. */
FT_WARN_UNUSED ft_status_t ft_shape_alloc(const char *arch, uint32_t n_layers, uint32_t d_model, uint32_t vocab,
                           ft_plan_model_t **out);
/* Embedding and output head: vocab x d each in the dense format; a tied
 * head is counted once, as output_bytes (the embedding rows are read from
 * the same tensor, so embed_bytes = 0). */
void ft_shape_embeddings(ft_shape_ctx_t *c, ft_plan_model_t *m, int tied);
/* An overflow error when the sticky flag is set, else FT_OK. */
FT_WARN_UNUSED ft_status_t ft_shape_finish(ft_shape_ctx_t *c, ft_plan_model_t *m);

/* Per family (shape_qwen.c, shape_gptoss.c, shape_deepseek.c). */
FT_WARN_UNUSED ft_status_t ft_shape_qwen3moe(ft_shape_ctx_t *c, int from_gguf, ft_plan_model_t **out);
FT_WARN_UNUSED ft_status_t ft_shape_qwen3next(ft_shape_ctx_t *c, ft_plan_model_t **out);
FT_WARN_UNUSED ft_status_t ft_shape_gptoss(ft_shape_ctx_t *c, ft_plan_model_t **out);
FT_WARN_UNUSED ft_status_t ft_shape_deepseek3(ft_shape_ctx_t *c, ft_plan_model_t **out);
FT_WARN_UNUSED ft_status_t ft_shape_deepseek4(ft_shape_ctx_t *c, ft_plan_model_t **out);

#endif
