/* MiniMax-M2 (GGUF arch "minimax-m2", HF MiniMaxM2ForCausalLM): names and
 * hyperparameters -> IR. The block is the llama family's pre-norm GQA
 * decoder with
 *
 *  - RMSNorm of q and of k over the whole projection before RoPE
 *    (MiniMaxM2Attention's q_norm of n_heads * head_dim and k_norm of
 *    n_kv_heads * head_dim; GGUF attn_q_norm / attn_k_norm of the same
 *    lengths): attn.qk_norm_full;
 *  - NeoX RoPE over the first rotary_dim of each head (GGUF
 *    rope.dimension_count);
 *  - an MoE FFN in every layer: sigmoid scores (scoring_func; GGUF
 *    expert_gating_func 2, which llama.cpp's loader does not default to),
 *    the selection bias e_score_correction_bias (use_routing_bias; GGUF
 *    exp_probs_b, required there) for the choice only, top-k, the chosen
 *    scores renormalized (always, in MiniMaxM2SparseMoeBlock), times
 *    routed_scaling_factor when the config has one; SwiGLU experts
 *    (w1 gate, w3 up, w2 down) of intermediate_size (GGUF
 *    feed_forward_length, as llama.cpp's loader reads it); no shared
 *    expert.
 *
 * Refused: grouped top-k (use_grouped_topk) and sliding-window layers
 * (attn_window_size), which the published configs do not use. The MTP
 * modules (use_mtp) have no tensors in the published checkpoints; any
 * layer past num_hidden_layers is refused as a stray tensor. */
#include "model_registry.h"
#include "family_finish.h"

#include <stdio.h>
#include <string.h>

static const char *ft_mm_where(const ft_src_model_t *src)
{
    return src->kind == FT_SRC_HF ? "config.json" : src->path;
}

static const char *ft_mm_key(const ft_src_model_t *src, const char *gguf, const char *hf, char *buf, size_t n)
{
    if (src->kind == FT_SRC_HF)
        return hf;
    snprintf(buf, n, "minimax-m2.%s", gguf);
    return buf;
}

/* A count in [lo, hi]; an absent (or null) optional key keeps *out. */
FT_WARN_UNUSED static ft_status_t ft_mm_u32(const ft_src_model_t *src, const char *gguf, const char *hf,
                                            uint32_t lo, uint32_t hi, int required, uint32_t *out)
{
    char buf[96];
    const char *key = ft_mm_key(src, gguf, hf, buf, sizeof(buf));
    const ft_meta_entry_t *e = ft_meta_find(&src->meta, key);
    if (!required && (!e || e->type == FT_META_NULL))
        return FT_OK;
    ft_status_t st = ft_meta_require_u32(&src->meta, ft_mm_where(src), key, lo, hi, out);
    return src->kind == FT_SRC_HF ? ft_status_annotate(st, "%s", src->path) : st;
}

FT_WARN_UNUSED static ft_status_t ft_mm_f32(const ft_src_model_t *src, const char *gguf, const char *hf, double lo,
                                            double hi, int required, float *out)
{
    char buf[96];
    const char *key = ft_mm_key(src, gguf, hf, buf, sizeof(buf));
    double v;
    if (!ft_meta_get_f64(&src->meta, key, &v)) {
        if (!required)
            return FT_OK;
        return ft_status_make(FT_STATUS_FORMAT, "%s: %s: required number '%s' is missing or not a number",
                              src->path, ft_mm_where(src), key);
    }
    if (!(v >= lo && v <= hi))
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: %s: '%s' = %g is outside [%g, %g]", src->path,
                              ft_mm_where(src), key, v, lo, hi);
    *out = (float)v;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_mm_hparams(const ft_src_model_t *src, ft_ir_model_t *m, ft_ir_block_t *b)
{
    ft_ir_hparams_t *hp = &m->hp;
    ft_ir_attention_t *a = &b->attn;
    ft_ir_moe_t *moe = &b->moe;
    const int hf = src->kind == FT_SRC_HF;
    ft_status_t st;
    if ((st = ft_mm_u32(src, "block_count", "num_hidden_layers", 1, 4096, 1, &hp->n_layers)) ||
        (st = ft_mm_u32(src, "embedding_length", "hidden_size", 1, 1u << 20, 1, &hp->d_model)) ||
        (st = ft_mm_u32(src, "context_length", "max_position_embeddings", 1, 1u << 30, 1, &hp->context_length)) ||
        (st = ft_mm_f32(src, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 0.0, 1.0, 1, &hp->norm_eps)) ||
        (st = ft_mm_f32(src, "rope.freq_base", "rope_theta", 1.0, 1e12, 1, &hp->rope_theta)) ||
        (st = ft_mm_u32(src, "attention.head_count", "num_attention_heads", 1, 1u << 16, 1, &a->n_heads)))
        return st;
    a->kind = FT_ATTN_GQA;
    a->n_kv_heads = a->n_heads;
    a->head_dim = hp->d_model / a->n_heads;
    if ((st = ft_mm_u32(src, "attention.head_count_kv", "num_key_value_heads", 1, 1u << 16, 0, &a->n_kv_heads)) ||
        (st = ft_mm_u32(src, "attention.key_length", "head_dim", 2, 1u << 16, 0, &a->head_dim)))
        return st;
    a->value_head_dim = a->head_dim;
    if (!hf && (st = ft_mm_u32(src, "attention.value_length", "", 2, 1u << 16, 0, &a->value_head_dim)))
        return st;
    if (a->n_heads % a->n_kv_heads)
        return ft_status_make(FT_STATUS_FORMAT, "%s: %u attention heads are not a multiple of %u KV heads",
                              src->path, a->n_heads, a->n_kv_heads);
    hp->norm = FT_NORM_RMS;
    hp->rope = FT_ROPE_NEOX;
    hp->rope_dim = a->head_dim;
    if ((st = ft_mm_u32(src, "rope.dimension_count", "rotary_dim", 2, a->head_dim, 0, &hp->rope_dim)))
        return st;
    if (hp->rope_dim % 2)
        return ft_status_make(FT_STATUS_FORMAT, "%s: rope dimensions %u must be even", src->path, hp->rope_dim);
    a->qk_norm = 1;
    a->qk_norm_full = 1;
    moe->scoring = FT_ROUTER_SIGMOID;
    moe->norm_topk_prob = 1;
    moe->routed_scaling = 1.0f;
    moe->has_sel_bias = 1;
    b->act = FT_ACT_SILU;
    b->is_moe = 1;
    if (hf) {
        int flag = 1;
        if (ft_meta_get_bool(&src->meta, "use_qk_norm", &flag) && !flag)
            a->qk_norm = a->qk_norm_full = 0;
        flag = 1;
        if (ft_meta_get_bool(&src->meta, "use_routing_bias", &flag))
            moe->has_sel_bias = flag;
        flag = 0;
        if (ft_meta_get_bool(&src->meta, "use_grouped_topk", &flag) && flag)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: config.json: use_grouped_topk is not supported",
                                  src->path);
        const ft_meta_entry_t *win = ft_meta_find(&src->meta, "attn_window_size");
        if (win && win->type != FT_META_NULL)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: config.json: attn_window_size (sliding-window "
                                  "layers) is not supported", src->path);
        const char *scoring = ft_meta_get_string(&src->meta, "scoring_func");
        if (scoring && strcmp(scoring, "sigmoid") != 0 && strcmp(scoring, "softmax") != 0)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: config.json: scoring_func '%s' (softmax or sigmoid)",
                                  src->path, scoring);
        if (scoring && strcmp(scoring, "softmax") == 0)
            moe->scoring = FT_ROUTER_SOFTMAX;
        if ((st = ft_mm_f32(src, "", "routed_scaling_factor", 0.0, 1e6, 0, &moe->routed_scaling)))
            return st;
    } else {
        a->qk_norm = a->qk_norm_full = ft_src_find_tensor(src, "blk.0.attn_q_norm.weight") != NULL;
        uint32_t gating = 2;
        if ((st = ft_mm_u32(src, "expert_gating_func", "", 1, UINT32_MAX, 0, &gating)))
            return st;
        if (gating != 1 && gating != 2)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: minimax-m2.expert_gating_func = %u (1 softmax and 2 "
                                  "sigmoid are known)", src->path, gating);
        moe->scoring = gating == 1 ? FT_ROUTER_SOFTMAX : FT_ROUTER_SIGMOID;
        if ((st = ft_mm_f32(src, "expert_weights_scale", "", 0.0, 1e6, 0, &moe->routed_scaling)))
            return st;
    }
    if (moe->routed_scaling == 0.0f)
        moe->routed_scaling = 1.0f;
    if ((st = ft_mm_u32(src, "expert_count", "num_local_experts", 1, 1u << 16, 1, &moe->n_experts)) ||
        (st = ft_mm_u32(src, "expert_used_count", "num_experts_per_tok", 1, moe->n_experts, 1,
                        &moe->n_experts_used)) ||
        (st = ft_mm_u32(src, "feed_forward_length", "intermediate_size", 1, 1u << 20, 1, &moe->expert_ffn)))
        return st;
    return FT_OK;
}

ft_status_t ft_minimax_m2_build(const ft_src_model_t *src, ft_ir_model_t *m)
{
    ft_ir_block_t proto = {0};
    m->hp.arch = FT_ARCH_MINIMAX_M2;
    m->hp.arch_name = "minimax-m2";
    ft_status_t st = ft_mm_hparams(src, m, &proto);
    if (st)
        return st;
    m->blocks = ft_arena_array(m->arena, m->hp.n_layers, sizeof(ft_ir_block_t));
    if (!m->blocks)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", src->path);
    for (uint32_t l = 0; l < m->hp.n_layers; l++)
        m->blocks[l] = proto;
    m->hp.tie_embeddings = ft_family_tied_embeddings(src);
    return ft_family_collect(src, m);
}
