/* Shape of gpt-oss (HF GptOssForCausalLM): GQA attention with biases and
 * per-head attention sinks, alternating sliding-window (128 tokens) and
 * full-attention layers, and MoE layers whose experts carry biases (the
 * experts ship in MXFP4, their biases in bf16). */
#include "shape_internal.h"

#include <string.h>

typedef struct ft_oss_dims {
    uint32_t n_layers, d, vocab, heads, kv_heads, head_dim;
    uint32_t n_experts, n_used, ffn, window;
} ft_oss_dims_t;

/* The HF key, or the name the original (non-transformers) config uses. */
FT_WARN_UNUSED static ft_status_t ft_oss_u32_either(ft_shape_ctx_t *c, const char *hf, const char *orig,
                                     uint32_t min, uint32_t max, uint32_t *out)
{
    if (!ft_shape_find(c, hf) && ft_shape_find(c, orig))
        return ft_shape_u32(c, orig, min, max, out);
    return ft_shape_u32(c, hf, min, max, out);
}

FT_WARN_UNUSED static ft_status_t ft_oss_dims(ft_shape_ctx_t *c, ft_oss_dims_t *o)
{
    ft_status_t st;
    memset(o, 0, sizeof(*o));
    if ((st = ft_shape_u32(c, "num_hidden_layers", 1, FT_SHAPE_MAX_LAYERS, &o->n_layers)) ||
        (st = ft_shape_u32(c, "hidden_size", 1, FT_SHAPE_MAX_DIM, &o->d)) ||
        (st = ft_shape_u32(c, "vocab_size", 1, FT_SHAPE_MAX_VOCAB, &o->vocab)) ||
        (st = ft_shape_u32(c, "num_attention_heads", 1, FT_SHAPE_MAX_HEADS, &o->heads)) ||
        (st = ft_shape_u32(c, "num_key_value_heads", 1, o->heads, &o->kv_heads)) ||
        (st = ft_shape_u32(c, "head_dim", 1, FT_SHAPE_MAX_DIM, &o->head_dim)) ||
        (st = ft_oss_u32_either(c, "num_local_experts", "num_experts", 1, FT_SHAPE_MAX_EXPERTS,
                                &o->n_experts)) ||
        (st = ft_oss_u32_either(c, "num_experts_per_tok", "experts_per_token", 1, o->n_experts,
                                &o->n_used)) ||
        (st = ft_shape_u32(c, "intermediate_size", 1, FT_SHAPE_MAX_DIM, &o->ffn)) ||
        (st = ft_shape_u32(c, "sliding_window", 1, FT_SHAPE_MAX_WINDOW, &o->window)))
        return st;
    return FT_OK;
}

/* layer_types when listed; else transformers' default: even layers slide. */
FT_WARN_UNUSED static ft_status_t ft_oss_sliding(ft_shape_ctx_t *c, uint32_t l, int *sliding)
{
    const char *t = ft_shape_layer_type(c, l);
    if (!t) {
        *sliding = l % 2 == 0;
        return FT_OK;
    }
    if (strcmp(t, "sliding_attention") != 0 && strcmp(t, "full_attention") != 0)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: %slayer_types[%u] = '%.64s' is not supported", c->where,
                              c->prefix, l, t);
    *sliding = t[0] == 's';
    return FT_OK;
}

static void ft_oss_layer(ft_shape_ctx_t *c, const ft_oss_dims_t *o, int sliding, ft_plan_layer_t *L)
{
    uint64_t q_out = (uint64_t)o->heads * o->head_dim, kv_out = (uint64_t)o->kv_heads * o->head_dim;
    ft_shape_vec(c, L, o->d); /* input_layernorm */
    ft_shape_dense(c, L, q_out, o->d);
    ft_shape_vec(c, L, q_out);
    ft_shape_dense(c, L, kv_out, o->d);
    ft_shape_vec(c, L, kv_out);
    ft_shape_dense(c, L, kv_out, o->d);
    ft_shape_vec(c, L, kv_out);
    ft_shape_dense(c, L, o->d, q_out);
    ft_shape_vec(c, L, o->d);
    ft_shape_vec(c, L, o->heads);             /* sinks */
    ft_shape_vec(c, L, o->d);                 /* post_attention_layernorm */
    ft_shape_dense(c, L, o->n_experts, o->d); /* router */
    ft_shape_vec(c, L, o->n_experts);         /* router bias */
    L->is_moe = 1;
    L->n_experts = o->n_experts;
    L->n_used = o->n_used;
    ft_shape_expert_matrix(c, L, o->ffn, o->d); /* gate */
    ft_shape_expert_matrix(c, L, o->ffn, o->d); /* up */
    ft_shape_expert_bias(c, L, 2 * (uint64_t)o->ffn);
    ft_shape_expert_matrix(c, L, o->d, o->ffn); /* down */
    ft_shape_expert_bias(c, L, o->d);
    uint64_t per_token = ft_shape_mul3(c, 2, kv_out, FT_SHAPE_KV_ELEM_BYTES);
    if (sliding)
        L->state_bytes = ft_shape_mul(c, per_token, o->window);
    else
        L->kv_bytes_per_token = per_token;
}

ft_status_t ft_shape_gptoss(ft_shape_ctx_t *c, ft_plan_model_t **out)
{
    ft_oss_dims_t o;
    ft_status_t st = ft_oss_dims(c, &o);
    if (st) return st;
    ft_plan_model_t *m = NULL;
    if ((st = ft_shape_alloc("gpt-oss", o.n_layers, o.d, o.vocab, &m))) return st;
    for (uint32_t l = 0; l < o.n_layers; l++) {
        int sliding = 0;
        if ((st = ft_oss_sliding(c, l, &sliding))) break;
        ft_oss_layer(c, &o, sliding, &m->layers[l]);
    }
    ft_shape_vec(c, &m->layers[o.n_layers - 1], o.d); /* final norm */
    int tied = 0;
    ft_shape_bool_opt(c, "tie_word_embeddings", &tied);
    ft_shape_embeddings(c, m, tied);
    if (!st) st = ft_shape_finish(c, m);
    if (st) {
        ft_model_shape_free(m);
        return st;
    }
    *out = m;
    return FT_OK;
}
