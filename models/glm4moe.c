/* GLM-4.5 / 4.6 / 4.7 MoE (GGUF arch "glm4moe", HF Glm4MoeForCausalLM):
 * names and hyperparameters -> IR. The block is the llama family's
 * pre-norm GQA decoder with
 *
 *  - q/k/v biases (attention_bias; o has none) and optional per-head q/k
 *    RMSNorm (use_qk_norm);
 *  - NeoX RoPE over the first rope_dim = head_dim * partial_rotary_factor
 *    dimensions of each head (GGUF rope.dimension_count);
 *  - the first first_k_dense_replace blocks (GGUF leading_dense_block_count)
 *    a dense SwiGLU FFN, the others MoE: sigmoid scores, a selection bias
 *    (e_score_correction_bias, GGUF exp_probs_b) for the choice only,
 *    group-limited top-k (n_group / topk_group; GLM-4.5 has one group),
 *    renormalized (norm_topk_prob), times routed_scaling_factor, plus
 *    n_shared_experts ungated shared experts of moe_intermediate_size each;
 *  - num_nextn_predict_layers multi-token-prediction blocks after the
 *    decoder (HF: model.layers.<n_layers ..>, outside num_hidden_layers;
 *    GGUF: counted in block_count), which are skipped.
 *
 * GGUF's expert_gating_func: llama.cpp's loader falls back to softmax when
 * the key is missing (its default is 1), which is wrong for GLM; here a
 * missing key means sigmoid, the model's scoring, and 1 (softmax) is taken
 * only when written. */
#include "model_registry.h"
#include "family_finish.h"


#include <stdio.h>
#include <string.h>

static const char *ft_glm_where(const ft_src_model_t *src)
{
    return src->kind == FT_SRC_HF ? "config.json" : src->path;
}

/* The key for this checkpoint kind: GGUF "glm4moe.<gguf>", HF <hf>. */
static const char *ft_glm_key(const ft_src_model_t *src, const char *gguf, const char *hf, char *buf, size_t n)
{
    if (src->kind == FT_SRC_HF)
        return hf;
    snprintf(buf, n, "glm4moe.%s", gguf);
    return buf;
}

/* A count in [lo, hi]; when the key is absent (or null) *out keeps its
 * default unless required. */
FT_WARN_UNUSED static ft_status_t ft_glm_u32(const ft_src_model_t *src, const char *gguf, const char *hf, uint32_t lo,
                                             uint32_t hi, int required, uint32_t *out)
{
    char buf[96];
    const char *key = ft_glm_key(src, gguf, hf, buf, sizeof(buf));
    const ft_meta_entry_t *e = ft_meta_find(&src->meta, key);
    if (!required && (!e || e->type == FT_META_NULL))
        return FT_OK;
    ft_status_t st = ft_meta_require_u32(&src->meta, ft_glm_where(src), key, lo, hi, out);
    return src->kind == FT_SRC_HF ? ft_status_annotate(st, "%s", src->path) : st;
}

FT_WARN_UNUSED static ft_status_t ft_glm_f32(const ft_src_model_t *src, const char *gguf, const char *hf, double lo,
                                             double hi, int required, float *out)
{
    char buf[96];
    const char *key = ft_glm_key(src, gguf, hf, buf, sizeof(buf));
    double v;
    if (!ft_meta_get_f64(&src->meta, key, &v)) {
        if (!required)
            return FT_OK;
        return ft_status_make(FT_STATUS_FORMAT, "%s: %s: required number '%s' is missing or not a number",
                              src->path, ft_glm_where(src), key);
    }
    if (!(v >= lo && v <= hi))
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: %s: '%s' = %g is outside [%g, %g]", src->path,
                              ft_glm_where(src), key, v, lo, hi);
    *out = (float)v;
    return FT_OK;
}

/* Layers, the MTP blocks after them, and the attention shape. */
FT_WARN_UNUSED static ft_status_t ft_glm_attention(const ft_src_model_t *src, ft_ir_model_t *m, ft_ir_block_t *b)
{
    ft_ir_hparams_t *hp = &m->hp;
    ft_ir_attention_t *a = &b->attn;
    const int hf = src->kind == FT_SRC_HF;
    uint32_t blocks = 0, mtp = 0;
    ft_status_t st;
    if ((st = ft_glm_u32(src, "block_count", "num_hidden_layers", 1, 4096, 1, &blocks)) ||
        (st = ft_glm_u32(src, "nextn_predict_layers", "num_nextn_predict_layers", 0, 64, 0, &mtp)) ||
        (st = ft_glm_u32(src, "embedding_length", "hidden_size", 1, 1u << 20, 1, &hp->d_model)) ||
        (st = ft_glm_u32(src, "context_length", "max_position_embeddings", 1, 1u << 30, 1, &hp->context_length)) ||
        (st = ft_glm_f32(src, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 0.0, 1.0, 1, &hp->norm_eps)) ||
        (st = ft_glm_f32(src, "rope.freq_base", "rope_theta", 1.0, 1e12, 1, &hp->rope_theta)) ||
        (st = ft_glm_u32(src, "attention.head_count", "num_attention_heads", 1, 1u << 16, 1, &a->n_heads)))
        return st;
    /* GGUF counts the MTP blocks in block_count; HF keeps them outside
     * num_hidden_layers. */
    if (!hf && mtp >= blocks)
        return ft_status_make(FT_STATUS_FORMAT, "%s: %u nextn (MTP) layers of %u blocks leave none to run",
                              src->path, mtp, blocks);
    hp->n_layers = hf ? blocks : blocks - mtp;
    hp->n_mtp_layers = mtp;
    a->kind = FT_ATTN_GQA;
    a->n_kv_heads = a->n_heads;
    a->head_dim = hp->d_model / a->n_heads;
    if ((st = ft_glm_u32(src, "attention.head_count_kv", "num_key_value_heads", 1, 1u << 16, 0, &a->n_kv_heads)) ||
        (st = ft_glm_u32(src, "attention.key_length", "head_dim", 2, 1u << 16, 0, &a->head_dim)))
        return st;
    a->value_head_dim = a->head_dim;
    if (!hf && (st = ft_glm_u32(src, "attention.value_length", "", 2, 1u << 16, 0, &a->value_head_dim)))
        return st;
    if (a->n_heads % a->n_kv_heads)
        return ft_status_make(FT_STATUS_FORMAT, "%s: %u attention heads are not a multiple of %u KV heads",
                              src->path, a->n_heads, a->n_kv_heads);
    /* Partial rotary: NeoX halves over the first rope_dim of each head. */
    hp->rope = FT_ROPE_NEOX;
    if (hf) {
        float partial = 0.5f; /* Glm4MoeConfig's default */
        if ((st = ft_glm_f32(src, "", "partial_rotary_factor", 0.0, 1.0, 0, &partial)))
            return st;
        const double dim = (double)a->head_dim * partial;
        hp->rope_dim = (uint32_t)dim;
        if ((double)hp->rope_dim != dim)
            return ft_status_make(FT_STATUS_FORMAT, "%s: config.json: partial_rotary_factor %g of head_dim %u is "
                                  "not a whole number of dimensions", src->path, (double)partial, a->head_dim);
    } else {
        hp->rope_dim = a->head_dim;
        if ((st = ft_glm_u32(src, "rope.dimension_count", "", 2, a->head_dim, 0, &hp->rope_dim)))
            return st;
    }
    if (hp->rope_dim == 0 || hp->rope_dim % 2 || hp->rope_dim > a->head_dim)
        return ft_status_make(FT_STATUS_FORMAT, "%s: rope dimensions %u must be even, in 2..head_dim %u",
                              src->path, hp->rope_dim, a->head_dim);
    /* q/k norms and q/k/v biases: the config's switches (HF); what the
     * file carries (GGUF). model_names.c takes the tensors. */
    int flag = 0;
    if (hf) {
        if (ft_meta_get_bool(&src->meta, "use_qk_norm", &flag))
            a->qk_norm = flag;
        if (ft_meta_get_bool(&src->meta, "attention_bias", &flag))
            a->has_bias = flag;
        const ft_meta_entry_t *rs = ft_meta_find(&src->meta, "rope_scaling.type");
        if (!rs)
            rs = ft_meta_find(&src->meta, "rope_scaling.rope_type");
        if (rs && rs->type == FT_META_STRING && strcmp(rs->s, "default") != 0)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: config.json: rope_scaling '%s' is not supported",
                                  src->path, rs->s);
    } else {
        a->qk_norm = ft_src_find_tensor(src, "blk.0.attn_q_norm.weight") != NULL;
    }
    return FT_OK;
}

/* The router and the experts. */
FT_WARN_UNUSED static ft_status_t ft_glm_moe(const ft_src_model_t *src, ft_ir_block_t *b, uint32_t *n_dense)
{
    ft_ir_moe_t *moe = &b->moe;
    const int hf = src->kind == FT_SRC_HF;
    ft_status_t st;
    uint32_t n_shared = 0, groups = 1, groups_used = 1;
    moe->scoring = FT_ROUTER_SIGMOID;
    moe->norm_topk_prob = 1;
    moe->routed_scaling = 1.0f;
    moe->has_sel_bias = 1; /* llama.cpp requires exp_probs_b; transformers always has it */
    b->act = FT_ACT_SILU;
    *n_dense = hf ? 1 : 0; /* Glm4MoeConfig's first_k_dense_replace default */
    if ((st = ft_glm_u32(src, "expert_count", "n_routed_experts", 1, 1u << 16, 1, &moe->n_experts)) ||
        (st = ft_glm_u32(src, "expert_used_count", "num_experts_per_tok", 1, moe->n_experts, 1,
                         &moe->n_experts_used)) ||
        (st = ft_glm_u32(src, "expert_feed_forward_length", "moe_intermediate_size", 1, 1u << 20, 1,
                         &moe->expert_ffn)) ||
        (st = ft_glm_u32(src, "feed_forward_length", "intermediate_size", 1, 1u << 22, 0, &b->dense_ffn)) ||
        (st = ft_glm_u32(src, "expert_shared_count", "n_shared_experts", 0, 1024, 0, &n_shared)) ||
        (st = ft_glm_u32(src, "leading_dense_block_count", "first_k_dense_replace", 0, 4096, 0, n_dense)) ||
        (st = ft_glm_f32(src, "expert_weights_scale", "routed_scaling_factor", 0.0, 1e6, 0, &moe->routed_scaling)) ||
        (st = ft_glm_u32(src, "expert_group_count", "n_group", 1, moe->n_experts, 0, &groups)) ||
        (st = ft_glm_u32(src, "expert_group_used_count", "topk_group", 1, groups, 0, &groups_used)))
        return st;
    char buf[96];
    ft_meta_get_bool(&src->meta, ft_glm_key(src, "expert_weights_norm", "norm_topk_prob", buf, sizeof(buf)),
                     &moe->norm_topk_prob);
    if (!hf) {
        uint32_t gating = 2;
        if ((st = ft_glm_u32(src, "expert_gating_func", "", 1, UINT32_MAX, 0, &gating)))
            return st;
        if (gating != 1 && gating != 2)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: glm4moe.expert_gating_func = %u (1 softmax and 2 "
                                  "sigmoid are known)", src->path, gating);
        moe->scoring = gating == 1 ? FT_ROUTER_SOFTMAX : FT_ROUTER_SIGMOID;
    }
    if (moe->routed_scaling == 0.0f)
        moe->routed_scaling = 1.0f;
    moe->n_shared_experts = n_shared;
    moe->shared_ffn = n_shared ? moe->expert_ffn : 0;
    if (groups > 1) {
        if (moe->n_experts % groups || (uint64_t)groups_used * (moe->n_experts / groups) < moe->n_experts_used)
            return ft_status_make(FT_STATUS_FORMAT, "%s: %u of %u expert groups cannot hold top-%u of %u experts",
                                  src->path, groups_used, groups, moe->n_experts_used, moe->n_experts);
        moe->n_groups = groups;
        moe->n_groups_used = groups_used;
    }
    return FT_OK;
}

ft_status_t ft_glm4moe_build(const ft_src_model_t *src, ft_ir_model_t *m)
{
    ft_ir_block_t proto = {0};
    uint32_t n_dense = 0;
    m->hp.arch = FT_ARCH_GLM4MOE;
    m->hp.arch_name = "glm4moe";
    m->hp.norm = FT_NORM_RMS;
    ft_status_t st = ft_glm_attention(src, m, &proto);
    if (!st)
        st = ft_glm_moe(src, &proto, &n_dense);
    if (st)
        return st;
    if (n_dense > m->hp.n_layers)
        return ft_status_make(FT_STATUS_FORMAT, "%s: %u leading dense layers of %u", src->path, n_dense,
                              m->hp.n_layers);
    if (n_dense && !proto.dense_ffn)
        return ft_status_make(FT_STATUS_FORMAT, "%s: %u leading dense layers but no dense FFN size", src->path,
                              n_dense);
    m->blocks = ft_arena_array(m->arena, m->hp.n_layers, sizeof(ft_ir_block_t));
    if (!m->blocks)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", src->path);
    for (uint32_t l = 0; l < m->hp.n_layers; l++) {
        ft_ir_block_t *b = &m->blocks[l];
        *b = proto;
        b->is_moe = l >= n_dense;
        if (b->is_moe)
            b->dense_ffn = 0;
        else
            memset(&b->moe, 0, sizeof(b->moe));
    }
    m->hp.tie_embeddings = ft_family_tied_embeddings(src);
    return ft_family_collect(src, m);
}
