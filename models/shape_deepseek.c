/* Shapes of the DeepSeek families.
 *
 * DeepSeek-V3 (HF DeepseekV3ForCausalLM): multi-head latent attention
 * (low-rank q and kv projections; the cache holds the kv_lora_rank latent
 * plus the shared rope key per token), the first first_k_dense_replace
 * layers dense, then MoE layers with n_shared_experts always-on experts.
 *
 * DeepSeek-V4 (HF DeepseekV4ForCausalLM): one 512-wide latent that is both
 * key and value (num_key_value_heads = 1), low-rank query and grouped
 * low-rank output projections, per-head sinks, and per layer a compress
 * ratio r: every layer keeps a sliding window of raw latents; r = 4 layers
 * (CSA) add one compressed latent per 4 tokens plus a lightning indexer
 * with its own compressed keys; r = 128 layers (HCA) add one compressed
 * latent per 128 tokens. Hyper-connections keep hc_mult copies of the
 * residual stream, mixed by small f32 matrices. The first num_hash_layers
 * route by a token-id -> expert table instead of a learned gate. Every
 * layer is MoE (256 routed + 1 shared). */
#include "shape_internal.h"

#include <string.h>

typedef struct ft_ds3_dims {
    uint32_t n_layers, d, vocab, heads, q_lora, kv_lora, nope, rope, v_dim;
    uint32_t n_experts, n_used, expert_ffn, n_shared, dense_ffn, first_dense, moe_freq;
} ft_ds3_dims_t;

FT_WARN_UNUSED static ft_status_t ft_ds3_dims(ft_shape_ctx_t *c, ft_ds3_dims_t *s)
{
    ft_status_t st;
    memset(s, 0, sizeof(*s));
    s->moe_freq = 1;
    if ((st = ft_shape_u32(c, "num_hidden_layers", 1, FT_SHAPE_MAX_LAYERS, &s->n_layers)) ||
        (st = ft_shape_u32(c, "hidden_size", 1, FT_SHAPE_MAX_DIM, &s->d)) ||
        (st = ft_shape_u32(c, "vocab_size", 1, FT_SHAPE_MAX_VOCAB, &s->vocab)) ||
        (st = ft_shape_u32(c, "num_attention_heads", 1, FT_SHAPE_MAX_HEADS, &s->heads)) ||
        (st = ft_shape_u32_opt(c, "q_lora_rank", 1, FT_SHAPE_MAX_DIM, &s->q_lora)) ||
        (st = ft_shape_u32(c, "kv_lora_rank", 1, FT_SHAPE_MAX_DIM, &s->kv_lora)) ||
        (st = ft_shape_u32(c, "qk_nope_head_dim", 1, FT_SHAPE_MAX_DIM, &s->nope)) ||
        (st = ft_shape_u32(c, "qk_rope_head_dim", 1, FT_SHAPE_MAX_DIM, &s->rope)) ||
        (st = ft_shape_u32(c, "v_head_dim", 1, FT_SHAPE_MAX_DIM, &s->v_dim)) ||
        (st = ft_shape_u32(c, "n_routed_experts", 1, FT_SHAPE_MAX_EXPERTS, &s->n_experts)) ||
        (st = ft_shape_u32(c, "num_experts_per_tok", 1, s->n_experts, &s->n_used)) ||
        (st = ft_shape_u32(c, "moe_intermediate_size", 1, FT_SHAPE_MAX_DIM, &s->expert_ffn)) ||
        (st = ft_shape_u32_opt(c, "n_shared_experts", 0, 1024, &s->n_shared)) ||
        (st = ft_shape_u32_opt(c, "intermediate_size", 1, FT_SHAPE_MAX_DIM, &s->dense_ffn)) ||
        (st = ft_shape_u32_opt(c, "first_k_dense_replace", 0, s->n_layers, &s->first_dense)) ||
        (st = ft_shape_u32_opt(c, "moe_layer_freq", 1, FT_SHAPE_MAX_LAYERS, &s->moe_freq)))
        return st;
    if (s->first_dense && !s->dense_ffn)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: first_k_dense_replace = %u but 'intermediate_size' is missing",
                              c->where, s->first_dense);
    return FT_OK;
}

/* Routed experts, the shared experts (one wide dense FFN) and the router. */
static void ft_ds_moe(ft_shape_ctx_t *c, ft_plan_layer_t *L, uint32_t d, uint32_t n_experts,
                      uint32_t n_used, uint32_t ffn, uint32_t n_shared)
{
    L->is_moe = 1;
    L->n_experts = n_experts;
    L->n_used = n_used;
    ft_shape_expert_matrix(c, L, ffn, d); /* gate */
    ft_shape_expert_matrix(c, L, ffn, d); /* up */
    ft_shape_expert_matrix(c, L, d, ffn); /* down */
    if (n_shared) ft_shape_dense_ffn(c, L, d, (uint64_t)n_shared * ffn);
}

static void ft_ds3_layer(ft_shape_ctx_t *c, const ft_ds3_dims_t *s, uint32_t l, ft_plan_layer_t *L)
{
    uint64_t qk = (uint64_t)s->nope + s->rope;
    ft_shape_vec(c, L, s->d); /* input_layernorm */
    if (s->q_lora) {
        ft_shape_dense(c, L, s->q_lora, s->d);
        ft_shape_vec(c, L, s->q_lora);
        ft_shape_dense(c, L, s->heads * qk, s->q_lora);
    } else {
        ft_shape_dense(c, L, s->heads * qk, s->d);
    }
    ft_shape_dense(c, L, (uint64_t)s->kv_lora + s->rope, s->d); /* kv_a_proj_with_mqa */
    ft_shape_vec(c, L, s->kv_lora);                             /* kv_a_layernorm */
    ft_shape_dense(c, L, (uint64_t)s->heads * (s->nope + s->v_dim), s->kv_lora); /* kv_b_proj */
    ft_shape_dense(c, L, s->d, (uint64_t)s->heads * s->v_dim);                   /* o_proj */
    L->kv_bytes_per_token = ft_shape_mul(c, (uint64_t)s->kv_lora + s->rope, FT_SHAPE_KV_ELEM_BYTES);
    ft_shape_vec(c, L, s->d); /* post_attention_layernorm */
    int is_moe = l >= s->first_dense && l % s->moe_freq == 0;
    if (!is_moe) {
        ft_shape_dense_ffn(c, L, s->d, s->dense_ffn ? s->dense_ffn : s->expert_ffn);
        return;
    }
    ft_shape_dense(c, L, s->n_experts, s->d); /* router */
    ft_shape_vec(c, L, s->n_experts);         /* e_score_correction_bias */
    ft_ds_moe(c, L, s->d, s->n_experts, s->n_used, s->expert_ffn, s->n_shared);
}

FT_WARN_UNUSED static ft_status_t ft_ds_done(ft_shape_ctx_t *c, ft_plan_model_t *m, ft_status_t st,
                              ft_plan_model_t **out)
{
    if (!st) st = ft_shape_finish(c, m);
    if (st) {
        ft_model_shape_free(m);
        return st;
    }
    *out = m;
    return FT_OK;
}

ft_status_t ft_shape_deepseek3(ft_shape_ctx_t *c, ft_plan_model_t **out)
{
    ft_ds3_dims_t s;
    ft_status_t st = ft_ds3_dims(c, &s);
    if (st) return st;
    ft_plan_model_t *m = NULL;
    if ((st = ft_shape_alloc("deepseek3", s.n_layers, s.d, s.vocab, &m))) return st;
    for (uint32_t l = 0; l < s.n_layers; l++)
        ft_ds3_layer(c, &s, l, &m->layers[l]);
    ft_shape_vec(c, &m->layers[s.n_layers - 1], s.d); /* final norm */
    int tied = 0;
    ft_shape_bool_opt(c, "tie_word_embeddings", &tied);
    ft_shape_embeddings(c, m, tied);
    return ft_ds_done(c, m, st, out);
}

typedef struct ft_ds4_dims {
    uint32_t n_layers, d, vocab, heads, head_dim, q_lora, o_lora, o_groups, window;
    uint32_t n_experts, n_used, expert_ffn, n_shared, n_hash, hc;
    uint32_t index_heads, index_dim;
    const ft_meta_entry_t *ratios;
} ft_ds4_dims_t;

FT_WARN_UNUSED static ft_status_t ft_ds4_dims(ft_shape_ctx_t *c, ft_ds4_dims_t *s)
{
    ft_status_t st;
    memset(s, 0, sizeof(*s));
    s->o_groups = 1;
    s->hc = 1;
    s->n_shared = 1;
    if ((st = ft_shape_u32(c, "num_hidden_layers", 1, FT_SHAPE_MAX_LAYERS, &s->n_layers)) ||
        (st = ft_shape_u32(c, "hidden_size", 1, FT_SHAPE_MAX_DIM, &s->d)) ||
        (st = ft_shape_u32(c, "vocab_size", 1, FT_SHAPE_MAX_VOCAB, &s->vocab)) ||
        (st = ft_shape_u32(c, "num_attention_heads", 1, FT_SHAPE_MAX_HEADS, &s->heads)) ||
        (st = ft_shape_u32(c, "head_dim", 1, FT_SHAPE_MAX_DIM, &s->head_dim)) ||
        (st = ft_shape_u32(c, "q_lora_rank", 1, FT_SHAPE_MAX_DIM, &s->q_lora)) ||
        (st = ft_shape_u32(c, "o_lora_rank", 1, FT_SHAPE_MAX_DIM, &s->o_lora)) ||
        (st = ft_shape_u32_opt(c, "o_groups", 1, s->heads, &s->o_groups)) ||
        (st = ft_shape_u32(c, "sliding_window", 1, FT_SHAPE_MAX_WINDOW, &s->window)) ||
        (st = ft_shape_u32(c, "n_routed_experts", 1, FT_SHAPE_MAX_EXPERTS, &s->n_experts)) ||
        (st = ft_shape_u32(c, "num_experts_per_tok", 1, s->n_experts, &s->n_used)) ||
        (st = ft_shape_u32(c, "moe_intermediate_size", 1, FT_SHAPE_MAX_DIM, &s->expert_ffn)) ||
        (st = ft_shape_u32_opt(c, "n_shared_experts", 0, 1024, &s->n_shared)) ||
        (st = ft_shape_u32_opt(c, "num_hash_layers", 0, s->n_layers, &s->n_hash)) ||
        (st = ft_shape_u32_opt(c, "hc_mult", 1, 64, &s->hc)) ||
        (st = ft_shape_u32_opt(c, "index_n_heads", 1, FT_SHAPE_MAX_HEADS, &s->index_heads)) ||
        (st = ft_shape_u32_opt(c, "index_head_dim", 1, FT_SHAPE_MAX_DIM, &s->index_dim)))
        return st;
    if (s->heads % s->o_groups != 0)
        return ft_status_make(FT_STATUS_FORMAT, "%s: %u heads are not a multiple of o_groups %u",
                              c->where, s->heads, s->o_groups);
    s->ratios = ft_shape_find(c, "compress_ratios");
    if (!s->ratios || s->ratios->type != FT_META_ARRAY || s->ratios->len < s->n_layers)
        return ft_status_make(
            FT_STATUS_FORMAT,
            "%s: '%scompress_ratios' must be an array of at least %u numbers (one per layer)",
            c->where, c->prefix, s->n_layers);
    return FT_OK;
}

/* The compress ratio of layer l: 0 (window only) or a positive integer. */
FT_WARN_UNUSED static ft_status_t ft_ds4_ratio(ft_shape_ctx_t *c, const ft_ds4_dims_t *s, uint32_t l, uint32_t *r)
{
    double v = s->ratios->arr[l];
    if (!(v >= 0 && v <= 65536) || v != (double)(uint32_t)v)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: %scompress_ratios[%u] = %g is not an integer in [0, 65536]",
                              c->where, c->prefix, l, v);
    *r = (uint32_t)v;
    return FT_OK;
}

/* A compressor: projections to `width` latents (coff of them per token
 * when windows overlap), a learned position bias per slot, and a norm. */
static void ft_ds4_compressor(ft_shape_ctx_t *c, ft_plan_layer_t *L, uint32_t d, uint32_t r,
                              uint64_t width, uint32_t coff)
{
    ft_shape_dense(c, L, coff * width, d);                /* wkv */
    ft_shape_dense(c, L, coff * width, d);                /* wgate */
    ft_shape_vec(c, L, ft_shape_mul3(c, r, coff, width)); /* ape */
    ft_shape_vec(c, L, width);                            /* norm */
    /* Pending tokens not yet compressed: kv and gate scores, f32. */
    L->state_bytes =
        ft_shape_add(c, L->state_bytes, ft_shape_mul3(c, 2 * (uint64_t)r * coff, width, 4));
}

FT_WARN_UNUSED static ft_status_t ft_ds4_layer(ft_shape_ctx_t *c, const ft_ds4_dims_t *s, uint32_t l,
                                ft_plan_layer_t *L)
{
    uint32_t r = 0;
    ft_status_t st = ft_ds4_ratio(c, s, l, &r);
    if (st) return st;
    uint64_t q_out = (uint64_t)s->heads * s->head_dim;
    uint64_t mix = (uint64_t)(2 + s->hc) * s->hc; /* hyper-connection mixing weights */
    for (int k = 0; k < 2; k++) {                 /* before attention, before the FFN */
        ft_shape_vec(c, L, ft_shape_mul3(c, mix, s->hc, s->d));
        ft_shape_vec(c, L, mix + 3);
        ft_shape_vec(c, L, s->d); /* norm */
    }
    ft_shape_dense(c, L, s->q_lora, s->d); /* wq_a */
    ft_shape_vec(c, L, s->q_lora);
    ft_shape_dense(c, L, q_out, s->q_lora);  /* wq_b */
    ft_shape_dense(c, L, s->head_dim, s->d); /* wkv: the one latent, K = V */
    ft_shape_vec(c, L, s->head_dim);
    ft_shape_dense(c, L, (uint64_t)s->o_groups * s->o_lora, q_out / s->o_groups); /* wo_a */
    ft_shape_dense(c, L, s->d, (uint64_t)s->o_groups * s->o_lora);                /* wo_b */
    ft_shape_vec(c, L, s->heads);                                                 /* sinks */
    uint64_t latent = ft_shape_mul(c, s->head_dim, FT_SHAPE_KV_ELEM_BYTES);
    L->state_bytes = ft_shape_mul(c, latent, s->window); /* the raw sliding window */
    if (r > 0) {
        uint32_t coff = r == 4 ? 2 : 1; /* CSA windows overlap */
        ft_ds4_compressor(c, L, s->d, r, s->head_dim, coff);
        uint64_t per_token = latent;
        if (r == 4 && s->index_heads && s->index_dim) {
            ft_shape_dense(c, L, (uint64_t)s->index_heads * s->index_dim, s->q_lora);
            ft_shape_dense(c, L, s->index_heads, s->d); /* head weights */
            ft_ds4_compressor(c, L, s->d, r, s->index_dim, coff);
            per_token += (uint64_t)s->index_dim * FT_SHAPE_KV_ELEM_BYTES;
        }
        L->kv_bytes_per_token = (per_token + r - 1) / r; /* one entry per r tokens */
    }
    if (l < s->n_hash) /* token id -> expert ids table, int32 */
        ft_shape_vec(c, L, ft_shape_mul(c, s->vocab, s->n_used));
    else {
        ft_shape_dense(c, L, s->n_experts, s->d);
        ft_shape_vec(c, L, s->n_experts);
    }
    ft_ds_moe(c, L, s->d, s->n_experts, s->n_used, s->expert_ffn, s->n_shared);
    return FT_OK;
}

ft_status_t ft_shape_deepseek4(ft_shape_ctx_t *c, ft_plan_model_t **out)
{
    ft_ds4_dims_t s;
    ft_status_t st = ft_ds4_dims(c, &s);
    if (st) return st;
    ft_plan_model_t *m = NULL;
    if ((st = ft_shape_alloc("deepseek4", s.n_layers, s.d, s.vocab, &m))) return st;
    for (uint32_t l = 0; l < s.n_layers && !st; l++)
        st = ft_ds4_layer(c, &s, l, &m->layers[l]);
    ft_plan_layer_t *last = &m->layers[s.n_layers - 1];
    ft_shape_vec(c, last, s.d);                                          /* final norm */
    ft_shape_vec(c, last, ft_shape_mul3(c, s.hc, s.hc, s.d) + s.hc + 1); /* hc head */
    int tied = 0;
    ft_shape_bool_opt(c, "tie_word_embeddings", &tied);
    ft_shape_embeddings(c, m, tied);
    return ft_ds_done(c, m, st, out);
}
