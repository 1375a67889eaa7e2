/* OLMoE (GGUF arch "olmoe" as llama.cpp's converter writes it, HF
 * OlmoeForCausalLM): names and hyperparameters -> IR. The block is the
 * llama family's pre-norm GQA decoder with
 *
 *  - RMSNorm of q and of k over the whole projection before RoPE
 *    (OlmoeAttention's q_norm of hidden_size and k_norm of
 *    n_kv_heads * head_dim; GGUF attn_q_norm / attn_k_norm of the same
 *    lengths), not per head: attn.qk_norm_full;
 *  - NeoX RoPE over the whole head;
 *  - an MoE FFN in every layer: softmax over all experts, top-k, the
 *    chosen probabilities used as they are (norm_topk_prob false in every
 *    published config; llama.cpp's build_olmoe passes norm_w = false and
 *    its GGUF has no key for it), SwiGLU experts of intermediate_size (GGUF
 *    feed_forward_length), no shared expert.
 *
 * The HF tensor names are Qwen3-MoE's (self_attn.{q,k,v,o}_proj,
 * self_attn.{q,k}_norm, mlp.gate, mlp.experts.E.{gate,up,down}_proj). */
#include "model_registry.h"
#include "family_finish.h"

#include <stdio.h>
#include <string.h>

static const char *ft_olmoe_where(const ft_src_model_t *src)
{
    return src->kind == FT_SRC_HF ? "config.json" : src->path;
}

/* The key for this checkpoint kind: GGUF "olmoe.<gguf>", HF <hf>. */
static const char *ft_olmoe_key(const ft_src_model_t *src, const char *gguf, const char *hf, char *buf, size_t n)
{
    if (src->kind == FT_SRC_HF)
        return hf;
    snprintf(buf, n, "olmoe.%s", gguf);
    return buf;
}

/* A count in [lo, hi]; an absent (or null) optional key keeps *out. */
FT_WARN_UNUSED static ft_status_t ft_olmoe_u32(const ft_src_model_t *src, const char *gguf, const char *hf,
                                               uint32_t lo, uint32_t hi, int required, uint32_t *out)
{
    char buf[96];
    const char *key = ft_olmoe_key(src, gguf, hf, buf, sizeof(buf));
    const ft_meta_entry_t *e = ft_meta_find(&src->meta, key);
    if (!required && (!e || e->type == FT_META_NULL))
        return FT_OK;
    ft_status_t st = ft_meta_require_u32(&src->meta, ft_olmoe_where(src), key, lo, hi, out);
    return src->kind == FT_SRC_HF ? ft_status_annotate(st, "%s", src->path) : st;
}

FT_WARN_UNUSED static ft_status_t ft_olmoe_f32(const ft_src_model_t *src, const char *gguf, const char *hf,
                                               double lo, double hi, float *out)
{
    char buf[96];
    const char *key = ft_olmoe_key(src, gguf, hf, buf, sizeof(buf));
    double v;
    if (!ft_meta_get_f64(&src->meta, key, &v))
        return ft_status_make(FT_STATUS_FORMAT, "%s: %s: required number '%s' is missing or not a number",
                              src->path, ft_olmoe_where(src), key);
    if (!(v >= lo && v <= hi))
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: %s: '%s' = %g is outside [%g, %g]", src->path,
                              ft_olmoe_where(src), key, v, lo, hi);
    *out = (float)v;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_olmoe_hparams(const ft_src_model_t *src, ft_ir_model_t *m, ft_ir_block_t *b)
{
    ft_ir_hparams_t *hp = &m->hp;
    ft_ir_attention_t *a = &b->attn;
    ft_ir_moe_t *moe = &b->moe;
    const int hf = src->kind == FT_SRC_HF;
    ft_status_t st;
    if ((st = ft_olmoe_u32(src, "block_count", "num_hidden_layers", 1, 4096, 1, &hp->n_layers)) ||
        (st = ft_olmoe_u32(src, "embedding_length", "hidden_size", 1, 1u << 20, 1, &hp->d_model)) ||
        (st = ft_olmoe_u32(src, "context_length", "max_position_embeddings", 1, 1u << 30, 1, &hp->context_length)) ||
        (st = ft_olmoe_f32(src, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 0.0, 1.0, &hp->norm_eps)) ||
        (st = ft_olmoe_u32(src, "attention.head_count", "num_attention_heads", 1, 1u << 16, 1, &a->n_heads)))
        return st;
    hp->rope_theta = 10000.0f; /* OlmoeConfig's and llama.cpp's default */
    char buf[96];
    if (ft_meta_find(&src->meta, ft_olmoe_key(src, "rope.freq_base", "rope_theta", buf, sizeof(buf))) &&
        (st = ft_olmoe_f32(src, "rope.freq_base", "rope_theta", 1.0, 1e12, &hp->rope_theta)))
        return st;
    a->kind = FT_ATTN_GQA;
    a->n_kv_heads = a->n_heads;
    a->head_dim = hp->d_model / a->n_heads;
    if ((st = ft_olmoe_u32(src, "attention.head_count_kv", "num_key_value_heads", 1, 1u << 16, 0, &a->n_kv_heads)))
        return st;
    if (a->n_heads % a->n_kv_heads || a->head_dim * a->n_heads != hp->d_model || a->head_dim % 2)
        return ft_status_make(FT_STATUS_FORMAT, "%s: %u attention heads over %u KV heads do not split d_model %u "
                              "into even heads", src->path, a->n_heads, a->n_kv_heads, hp->d_model);
    a->value_head_dim = a->head_dim;
    a->qk_norm = 1;
    a->qk_norm_full = 1;
    hp->norm = FT_NORM_RMS;
    hp->rope = FT_ROPE_NEOX;
    hp->rope_dim = a->head_dim;
    if (hf) {
        int flag = 0;
        const ft_meta_entry_t *clip = ft_meta_find(&src->meta, "clip_qkv");
        if (clip && clip->type != FT_META_NULL)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: config.json: clip_qkv is not supported", src->path);
        if (ft_meta_get_bool(&src->meta, "attention_bias", &flag) && flag)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: config.json: attention_bias = true is not supported",
                                  src->path);
        const ft_meta_entry_t *rs = ft_meta_find(&src->meta, "rope_scaling.type");
        if (!rs)
            rs = ft_meta_find(&src->meta, "rope_scaling.rope_type");
        if (rs && rs->type == FT_META_STRING && strcmp(rs->s, "default") != 0)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: config.json: rope_scaling '%s' is not supported",
                                  src->path, rs->s);
    }
    moe->scoring = FT_ROUTER_SOFTMAX;
    moe->norm_topk_prob = 0;
    moe->routed_scaling = 1.0f;
    if (hf)
        ft_meta_get_bool(&src->meta, "norm_topk_prob", &moe->norm_topk_prob);
    else
        ft_meta_get_bool(&src->meta, "olmoe.expert_weights_norm", &moe->norm_topk_prob);
    b->act = FT_ACT_SILU;
    b->is_moe = 1;
    if ((st = ft_olmoe_u32(src, "expert_count", "num_experts", 1, 1u << 16, 1, &moe->n_experts)) ||
        (st = ft_olmoe_u32(src, "expert_used_count", "num_experts_per_tok", 1, moe->n_experts, 1,
                           &moe->n_experts_used)) ||
        (st = ft_olmoe_u32(src, "feed_forward_length", "intermediate_size", 1, 1u << 20, 1, &moe->expert_ffn)))
        return st;
    return FT_OK;
}

ft_status_t ft_olmoe_build(const ft_src_model_t *src, ft_ir_model_t *m)
{
    ft_ir_block_t proto = {0};
    m->hp.arch = FT_ARCH_OLMOE;
    m->hp.arch_name = "olmoe";
    ft_status_t st = ft_olmoe_hparams(src, m, &proto);
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
