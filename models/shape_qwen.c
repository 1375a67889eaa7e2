/* Shapes of the Qwen MoE families: Qwen3-MoE (GGUF qwen3moe, HF
 * Qwen3MoeForCausalLM) and the Gated DeltaNet hybrids (Qwen3-Next,
 * Qwen3.5 / Qwen3.6 MoE: three linear-attention layers, then one gated
 * full-attention layer; 1 shared expert beside the routed ones). */
#include "shape_internal.h"

#include <string.h>

/* Is layer l an MoE layer? HF configs may exempt layers through
 * mlp_only_layers or decoder_sparse_step; GGUF qwen3moe has experts in
 * every layer. */
static int ft_shape_qwen_is_moe(ft_shape_ctx_t *c, int from_gguf, uint32_t l)
{
    if (from_gguf) return 1;
    uint32_t step = 1;
    ft_status_t st = ft_shape_u32_opt(c, "decoder_sparse_step", 0, FT_SHAPE_MAX_LAYERS, &step);
    if (st) {
        /* A malformed step is ignored: it only exempts layers. */
        ft_status_free(st);
        step = 1;
    }
    const ft_meta_entry_t *only = ft_shape_find(c, "mlp_only_layers");
    if (only && only->type == FT_META_ARRAY)
        for (uint64_t i = 0; i < only->len; i++)
            if (only->arr[i] == (double)l) return 0;
    return step > 0 && (l + 1) % step == 0;
}

typedef struct ft_qwen_dims {
    uint32_t n_layers, d, vocab, heads, kv_heads, head_dim, value_dim;
    uint32_t n_experts, n_used, expert_ffn, dense_ffn, shared_ffn;
    int tied;
} ft_qwen_dims_t;

/* Keys: GGUF (after "qwen3moe.") or HF. */
#define FT_QK(gguf_key, hf_key) (from_gguf ? (gguf_key) : (hf_key))

FT_WARN_UNUSED static ft_status_t ft_shape_qwen_dims(ft_shape_ctx_t *c, int from_gguf, ft_qwen_dims_t *q)
{
    ft_status_t st;
    memset(q, 0, sizeof(*q));
    if ((st = ft_shape_u32(c, FT_QK("block_count", "num_hidden_layers"), 1, FT_SHAPE_MAX_LAYERS,
                           &q->n_layers)) ||
        (st = ft_shape_u32(c, FT_QK("embedding_length", "hidden_size"), 1, FT_SHAPE_MAX_DIM,
                           &q->d)) ||
        (st = ft_shape_u32(c, "vocab_size", 1, FT_SHAPE_MAX_VOCAB, &q->vocab)) ||
        (st = ft_shape_u32(c, FT_QK("attention.head_count", "num_attention_heads"), 1,
                           FT_SHAPE_MAX_HEADS, &q->heads)))
        return st;
    q->kv_heads = q->heads;
    q->head_dim = q->d / q->heads;
    if ((st = ft_shape_u32_opt(c, FT_QK("attention.head_count_kv", "num_key_value_heads"), 1,
                               q->heads, &q->kv_heads)) ||
        (st = ft_shape_u32_opt(c, FT_QK("attention.key_length", "head_dim"), 1, FT_SHAPE_MAX_DIM,
                               &q->head_dim)))
        return st;
    q->value_dim = q->head_dim;
    if (from_gguf &&
        (st = ft_shape_u32_opt(c, "attention.value_length", 1, FT_SHAPE_MAX_DIM, &q->value_dim)))
        return st;
    if (q->head_dim == 0)
        return ft_status_make(FT_STATUS_FORMAT, "%s: head_dim is 0 (hidden size %u < %u heads)",
                              c->where, q->d, q->heads);
    if ((st = ft_shape_u32(c, FT_QK("expert_count", "num_experts"), 1, FT_SHAPE_MAX_EXPERTS,
                           &q->n_experts)) ||
        (st = ft_shape_u32(c, FT_QK("expert_used_count", "num_experts_per_tok"), 1, q->n_experts,
                           &q->n_used)) ||
        (st = ft_shape_u32(c, FT_QK("expert_feed_forward_length", "moe_intermediate_size"), 1,
                           FT_SHAPE_MAX_DIM, &q->expert_ffn)) ||
        (st = ft_shape_u32_opt(c, FT_QK("feed_forward_length", "intermediate_size"), 1,
                               FT_SHAPE_MAX_DIM, &q->dense_ffn)) ||
        (st = ft_shape_u32_opt(
             c, FT_QK("expert_shared_feed_forward_length", "shared_expert_intermediate_size"), 0,
             FT_SHAPE_MAX_DIM, &q->shared_ffn)))
        return st;
    ft_shape_bool_opt(c, "tie_word_embeddings", &q->tied);
    return FT_OK;
}

/* The FFN half of a layer: routed experts (+ shared expert and its gate)
 * or a dense SwiGLU FFN, and the norm before it. */
FT_WARN_UNUSED static ft_status_t ft_shape_qwen_ffn(ft_shape_ctx_t *c, const ft_qwen_dims_t *q, int is_moe,
                                     uint32_t l, ft_plan_layer_t *L)
{
    ft_shape_vec(c, L, q->d); /* ffn_norm / post_attention_layernorm */
    if (!is_moe) {
        if (q->dense_ffn == 0)
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: layer %u is dense but 'intermediate_size' is missing",
                                  c->where, l);
        ft_shape_dense_ffn(c, L, q->d, q->dense_ffn);
        return FT_OK;
    }
    L->is_moe = 1;
    L->n_experts = q->n_experts;
    L->n_used = q->n_used;
    ft_shape_dense(c, L, q->n_experts, q->d);          /* router */
    ft_shape_expert_matrix(c, L, q->expert_ffn, q->d); /* gate */
    ft_shape_expert_matrix(c, L, q->expert_ffn, q->d); /* up */
    ft_shape_expert_matrix(c, L, q->d, q->expert_ffn); /* down */
    if (q->shared_ffn) {
        ft_shape_dense_ffn(c, L, q->d, q->shared_ffn);
        ft_shape_dense(c, L, 1, q->d); /* shared_expert_gate */
    }
    return FT_OK;
}

/* Full (GQA) attention with per-head q/k RMS norms; gated = the query
 * projection also yields a sigmoid output gate (Qwen3-Next / 3.5 / 3.6). */
static void ft_shape_qwen_attn(ft_shape_ctx_t *c, const ft_qwen_dims_t *q, int gated,
                               ft_plan_layer_t *L)
{
    uint64_t q_out = (uint64_t)q->heads * q->head_dim;
    ft_shape_vec(c, L, q->d); /* attn_norm */
    ft_shape_dense(c, L, gated ? 2 * q_out : q_out, q->d);
    ft_shape_dense(c, L, (uint64_t)q->kv_heads * q->head_dim, q->d);
    ft_shape_dense(c, L, (uint64_t)q->kv_heads * q->value_dim, q->d);
    ft_shape_dense(c, L, q->d, (uint64_t)q->heads * q->value_dim);
    ft_shape_vec(c, L, q->head_dim); /* q_norm */
    ft_shape_vec(c, L, q->head_dim); /* k_norm */
    L->kv_bytes_per_token = ft_shape_mul(
        c, (uint64_t)q->kv_heads * ((uint64_t)q->head_dim + q->value_dim), FT_SHAPE_KV_ELEM_BYTES);
}

ft_status_t ft_shape_qwen3moe(ft_shape_ctx_t *c, int from_gguf, ft_plan_model_t **out)
{
    ft_qwen_dims_t q;
    ft_status_t st = ft_shape_qwen_dims(c, from_gguf, &q);
    if (st) return st;
    ft_plan_model_t *m = NULL;
    if ((st = ft_shape_alloc("qwen3moe", q.n_layers, q.d, q.vocab, &m))) return st;
    for (uint32_t l = 0; l < q.n_layers && !st; l++) {
        ft_shape_qwen_attn(c, &q, 0, &m->layers[l]);
        st = ft_shape_qwen_ffn(c, &q, ft_shape_qwen_is_moe(c, from_gguf, l), l, &m->layers[l]);
    }
    ft_shape_vec(c, &m->layers[q.n_layers - 1], q.d); /* output_norm */
    ft_shape_embeddings(c, m, q.tied);
    if (!st) st = ft_shape_finish(c, m);
    if (st) {
        ft_model_shape_free(m);
        return st;
    }
    *out = m;
    return FT_OK;
}

typedef struct ft_gdn_dims {
    uint32_t nk, nv, dk, dv, conv_k, interval;
} ft_gdn_dims_t;

/* A Gated DeltaNet layer: q/k/v/z and beta/alpha projections, a causal
 * depthwise convolution over q,k,v, a per-head gated RMS norm and the
 * output projection. Per sequence it keeps an nv x dk x dv f32 state and
 * the last conv_k - 1 inputs of the convolution (f32, as llama.cpp's
 * recurrent cache and freetoken's runtime keep them). */
static void ft_shape_gdn(ft_shape_ctx_t *c, const ft_qwen_dims_t *q, const ft_gdn_dims_t *g,
                         ft_plan_layer_t *L)
{
    uint64_t key_dim = (uint64_t)g->nk * g->dk, value_dim = (uint64_t)g->nv * g->dv;
    uint64_t conv_dim = 2 * key_dim + value_dim;
    ft_shape_vec(c, L, q->d);                                 /* input_layernorm */
    ft_shape_dense(c, L, 2 * key_dim + 2 * value_dim, q->d);  /* in_proj_qkvz */
    ft_shape_dense(c, L, 2 * (uint64_t)g->nv, q->d);          /* in_proj_ba */
    ft_shape_vec(c, L, ft_shape_mul(c, conv_dim, g->conv_k)); /* conv1d */
    ft_shape_vec(c, L, g->nv);                                /* dt_bias */
    ft_shape_vec(c, L, g->nv);                                /* A_log */
    ft_shape_vec(c, L, g->dv);                                /* gated norm */
    ft_shape_dense(c, L, q->d, value_dim);                    /* out_proj */
    uint64_t state = ft_shape_mul3(c, g->nv, (uint64_t)g->dk * g->dv, FT_SHAPE_STATE_ELEM_BYTES);
    uint64_t conv = ft_shape_mul3(c, conv_dim, g->conv_k - 1, FT_SHAPE_STATE_ELEM_BYTES);
    L->state_bytes = ft_shape_add(c, state, conv);
}

FT_WARN_UNUSED static ft_status_t ft_shape_gdn_dims(ft_shape_ctx_t *c, ft_gdn_dims_t *g)
{
    ft_status_t st;
    g->conv_k = 4;
    g->interval = 4;
    if ((st = ft_shape_u32(c, "linear_num_key_heads", 1, FT_SHAPE_MAX_HEADS, &g->nk)) ||
        (st = ft_shape_u32(c, "linear_num_value_heads", 1, FT_SHAPE_MAX_HEADS, &g->nv)) ||
        (st = ft_shape_u32(c, "linear_key_head_dim", 1, FT_SHAPE_MAX_DIM, &g->dk)) ||
        (st = ft_shape_u32(c, "linear_value_head_dim", 1, FT_SHAPE_MAX_DIM, &g->dv)) ||
        (st = ft_shape_u32_opt(c, "linear_conv_kernel_dim", 1, 1024, &g->conv_k)) ||
        (st = ft_shape_u32_opt(c, "full_attention_interval", 1, FT_SHAPE_MAX_LAYERS, &g->interval)))
        return st;
    return FT_OK;
}

/* Is layer l a full-attention layer? layer_types when listed, else every
 * full_attention_interval-th layer. */
FT_WARN_UNUSED static ft_status_t ft_shape_qwen_is_full(ft_shape_ctx_t *c, const ft_gdn_dims_t *g, uint32_t l,
                                         int *full)
{
    const char *t = ft_shape_layer_type(c, l);
    if (!t) {
        *full = (l + 1) % g->interval == 0;
        return FT_OK;
    }
    if (strcmp(t, "full_attention") == 0 || strcmp(t, "linear_attention") == 0) {
        *full = t[0] == 'f';
        return FT_OK;
    }
    return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: %slayer_types[%u] = '%.64s' is not supported",
                          c->where, c->prefix, l, t);
}

ft_status_t ft_shape_qwen3next(ft_shape_ctx_t *c, ft_plan_model_t **out)
{
    ft_qwen_dims_t q;
    ft_gdn_dims_t g;
    ft_status_t st;
    if ((st = ft_shape_qwen_dims(c, 0, &q)) || (st = ft_shape_gdn_dims(c, &g))) return st;
    int gated = 1; /* Qwen3-Next always gates; Qwen3.5/3.6 say so */
    ft_shape_bool_opt(c, "attn_output_gate", &gated);
    ft_plan_model_t *m = NULL;
    if ((st = ft_shape_alloc("qwen3next", q.n_layers, q.d, q.vocab, &m))) return st;
    for (uint32_t l = 0; l < q.n_layers && !st; l++) {
        int full = 0;
        if ((st = ft_shape_qwen_is_full(c, &g, l, &full))) break;
        if (full)
            ft_shape_qwen_attn(c, &q, gated, &m->layers[l]);
        else
            ft_shape_gdn(c, &q, &g, &m->layers[l]);
        st = ft_shape_qwen_ffn(c, &q, ft_shape_qwen_is_moe(c, 0, l), l, &m->layers[l]);
    }
    ft_shape_vec(c, &m->layers[q.n_layers - 1], q.d); /* final norm */
    ft_shape_embeddings(c, m, q.tied);
    if (!st) st = ft_shape_finish(c, m);
    if (st) {
        ft_model_shape_free(m);
        return st;
    }
    *out = m;
    return FT_OK;
}
