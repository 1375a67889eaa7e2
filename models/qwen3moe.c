/* Qwen3-MoE (GGUF arch "qwen3moe", HF Qwen3MoeForCausalLM): names and
 * hyperparameters -> IR. Both checkpoint layouts produce the same IR: the
 * tensors are taken in one canonical order, under GGUF's names, and HF's
 * per-expert matrices become one [n_experts, rows, cols] stack whose pieces
 * point at each expert's bytes. */
#include "model_registry.h"

#include "model_names.h"

#include <stdio.h>
#include <string.h>

/* Hyperparameter keys: GGUF's (after "qwen3moe.") and HF config.json's. */
typedef struct ft_q3_keys {
    const char *gguf;
    const char *hf;
} ft_q3_keys_t;

static const ft_q3_keys_t K_LAYERS = {"block_count", "num_hidden_layers"};
static const ft_q3_keys_t K_DMODEL = {"embedding_length", "hidden_size"};
static const ft_q3_keys_t K_CTX = {"context_length", "max_position_embeddings"};
static const ft_q3_keys_t K_HEADS = {"attention.head_count", "num_attention_heads"};
static const ft_q3_keys_t K_KV_HEADS = {"attention.head_count_kv", "num_key_value_heads"};
static const ft_q3_keys_t K_HEAD_DIM = {"attention.key_length", "head_dim"};
static const ft_q3_keys_t K_VALUE_DIM = {"attention.value_length", "head_dim"};
static const ft_q3_keys_t K_EXPERTS = {"expert_count", "num_experts"};
static const ft_q3_keys_t K_USED = {"expert_used_count", "num_experts_per_tok"};
static const ft_q3_keys_t K_EXPERT_FFN = {"expert_feed_forward_length", "moe_intermediate_size"};
static const ft_q3_keys_t K_FFN = {"feed_forward_length", "intermediate_size"};
static const ft_q3_keys_t K_EPS = {"attention.layer_norm_rms_epsilon", "rms_norm_eps"};
static const ft_q3_keys_t K_THETA = {"rope.freq_base", "rope_theta"};

static const char *ft_q3_key(const ft_src_model_t *src, ft_q3_keys_t k, char *buf, size_t n)
{
    if (src->kind == FT_SRC_HF)
        return k.hf;
    snprintf(buf, n, "qwen3moe.%s", k.gguf);
    return buf;
}

static const char *ft_q3_where(const ft_src_model_t *src)
{
    return src->kind == FT_SRC_HF ? "config.json" : src->path;
}

FT_WARN_UNUSED static ft_status_t ft_q3_u32(const ft_src_model_t *src, ft_q3_keys_t k, uint32_t max,
                             uint32_t *out)
{
    char buf[96];
    ft_status_t st = ft_meta_require_u32(&src->meta, ft_q3_where(src), ft_q3_key(src, k, buf, sizeof(buf)),
                                         1, max, out);
    return src->kind == FT_SRC_HF ? ft_status_annotate(st, "%s", src->path) : st;
}

/* Optional count: keeps *out when the key is absent. */
FT_WARN_UNUSED static ft_status_t ft_q3_u32_opt(const ft_src_model_t *src, ft_q3_keys_t k, uint32_t max,
                                 uint32_t *out)
{
    char buf[96];
    if (!ft_meta_find(&src->meta, ft_q3_key(src, k, buf, sizeof(buf))))
        return FT_OK;
    return ft_q3_u32(src, k, max, out);
}

FT_WARN_UNUSED static ft_status_t ft_q3_float(const ft_src_model_t *src, ft_q3_keys_t k, double lo, double hi,
                               float *out)
{
    char buf[96];
    const char *key = ft_q3_key(src, k, buf, sizeof(buf));
    double v;
    if (!ft_meta_get_f64(&src->meta, key, &v))
        return ft_status_make(FT_STATUS_FORMAT, "%s: %s: required number '%s' is missing or not a number",
                              src->path, ft_q3_where(src), key);
    if (!(v >= lo && v <= hi))
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: %s: '%s' = %g is outside [%g, %g]",
                              src->path, ft_q3_where(src), key, v, lo, hi);
    *out = (float)v;
    return FT_OK;
}

/* Is layer l an MoE layer? GGUF qwen3moe files have experts in every layer
 * (llama.cpp assumes so); HF configs may exempt layers. */
static int ft_q3_layer_is_moe(const ft_src_model_t *src, uint32_t l)
{
    if (src->kind == FT_SRC_GGUF)
        return 1;
    int64_t step = 1;
    ft_meta_get_i64(&src->meta, "decoder_sparse_step", &step);
    const ft_meta_entry_t *only = ft_meta_find(&src->meta, "mlp_only_layers");
    if (only && only->type == FT_META_ARRAY)
        for (uint64_t i = 0; i < only->len; i++)
            if (only->arr[i] == (double)l)
                return 0;
    return step > 0 && (l + 1) % (uint64_t)step == 0;
}

FT_WARN_UNUSED static ft_status_t ft_q3_hparams(const ft_src_model_t *src, ft_ir_model_t *m, ft_ir_block_t *proto)
{
    ft_ir_hparams_t *hp = &m->hp;
    ft_status_t st;
    hp->arch = FT_ARCH_QWEN3MOE;
    hp->arch_name = "qwen3moe";
    hp->norm = FT_NORM_RMS;
    hp->rope = FT_ROPE_NEOX;
    if ((st = ft_q3_u32(src, K_LAYERS, 4096, &hp->n_layers)) ||
        (st = ft_q3_u32(src, K_DMODEL, 1u << 20, &hp->d_model)) ||
        (st = ft_q3_u32(src, K_CTX, 1u << 30, &hp->context_length)) ||
        (st = ft_q3_float(src, K_EPS, 0.0, 1.0, &hp->norm_eps)) ||
        (st = ft_q3_float(src, K_THETA, 1.0, 1e12, &hp->rope_theta)))
        return st;
    ft_ir_attention_t *a = &proto->attn;
    a->kind = FT_ATTN_GQA;
    a->qk_norm = 1;
    if ((st = ft_q3_u32(src, K_HEADS, 1u << 16, &a->n_heads)))
        return st;
    a->n_kv_heads = a->n_heads;
    a->head_dim = hp->d_model / a->n_heads;
    if ((st = ft_q3_u32_opt(src, K_KV_HEADS, 1u << 16, &a->n_kv_heads)) ||
        (st = ft_q3_u32_opt(src, K_HEAD_DIM, 1u << 16, &a->head_dim)))
        return st;
    a->value_head_dim = a->head_dim;
    if ((st = ft_q3_u32_opt(src, K_VALUE_DIM, 1u << 16, &a->value_head_dim)))
        return st;
    if (a->n_heads % a->n_kv_heads != 0)
        return ft_status_make(FT_STATUS_FORMAT, "%s: %u attention heads are not a multiple of %u KV heads",
                              src->path, a->n_heads, a->n_kv_heads);
    hp->rope_dim = a->head_dim;
    if (src->kind == FT_SRC_HF) {
        int flag = 0;
        if (ft_meta_get_bool(&src->meta, "attention_bias", &flag) && flag)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: config.json: attention_bias = true is not supported",
                                  src->path);
        if (ft_meta_get_bool(&src->meta, "use_sliding_window", &flag) && flag)
            return ft_status_make(FT_STATUS_UNSUPPORTED,
                                  "%s: config.json: use_sliding_window = true is not supported", src->path);
        const ft_meta_entry_t *rs = ft_meta_find(&src->meta, "rope_scaling.type");
        if (!rs)
            rs = ft_meta_find(&src->meta, "rope_scaling.rope_type");
        if (rs && rs->type == FT_META_STRING && strcmp(rs->s, "default") != 0)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: config.json: rope_scaling '%s' is not supported",
                                  src->path, rs->s);
    }
    ft_ir_moe_t *moe = &proto->moe;
    moe->scoring = FT_ROUTER_SOFTMAX;
    moe->norm_topk_prob = 1; /* llama.cpp's qwen3moe always renormalizes */
    moe->routed_scaling = 1.0f;
    if (src->kind == FT_SRC_HF) {
        moe->norm_topk_prob = 0; /* transformers' default */
        ft_meta_get_bool(&src->meta, "norm_topk_prob", &moe->norm_topk_prob);
    } else {
        ft_meta_get_bool(&src->meta, "qwen3moe.expert_weights_norm", &moe->norm_topk_prob);
    }
    if ((st = ft_q3_u32(src, K_EXPERTS, 1u << 16, &moe->n_experts)) ||
        (st = ft_q3_u32(src, K_USED, moe->n_experts, &moe->n_experts_used)) ||
        (st = ft_q3_u32(src, K_EXPERT_FFN, 1u << 20, &moe->expert_ffn)))
        return st;
    proto->act = FT_ACT_SILU;
    return ft_q3_u32_opt(src, K_FFN, 1u << 22, &proto->dense_ffn);
}

ft_status_t ft_qwen3moe_build(const ft_src_model_t *src, ft_ir_model_t *m)
{
    ft_ir_block_t proto = {0};
    ft_status_t st = ft_q3_hparams(src, m, &proto);
    if (st)
        return st;
    m->blocks = ft_arena_array(m->arena, m->hp.n_layers, sizeof(ft_ir_block_t));
    if (!m->blocks)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", src->path);
    for (uint32_t l = 0; l < m->hp.n_layers; l++) {
        m->blocks[l] = proto;
        m->blocks[l].is_moe = ft_q3_layer_is_moe(src, l);
        if (m->blocks[l].is_moe)
            m->blocks[l].dense_ffn = 0; /* meaningful for dense layers only */
        if (!m->blocks[l].is_moe && proto.dense_ffn == 0)
            return ft_status_make(FT_STATUS_FORMAT, "%s: layer %u is dense but the FFN size is missing",
                                  src->path, l);
    }
    if (src->kind == FT_SRC_HF) {
        int tie = 0;
        ft_meta_get_bool(&src->meta, "tie_word_embeddings", &tie);
        m->hp.tie_embeddings = tie;
    } else {
        m->hp.tie_embeddings = ft_src_find_tensor(src, "output.weight") == NULL;
    }
    if ((st = ft_model_names_collect(src, m)))
        return st;
    const ft_ir_tensor_t *embd = ft_ir_find(m, FT_ROLE_TOKEN_EMBD, -1);
    if (!embd || embd->n_dims != 2 || embd->shape[0] > UINT32_MAX)
        return ft_status_make(FT_STATUS_FORMAT, "%s: no usable token embedding tensor", src->path);
    m->hp.vocab_size = (uint32_t)embd->shape[0];
    int64_t cfg_vocab;
    if (src->kind == FT_SRC_HF && ft_meta_get_i64(&src->meta, "vocab_size", &cfg_vocab) &&
        cfg_vocab != (int64_t)m->hp.vocab_size)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: config.json vocab_size %lld disagrees with the embedding's %u rows",
                              src->path, (long long)cfg_vocab, m->hp.vocab_size);
    if (m->tok.n_tokens && m->tok.n_tokens != m->hp.vocab_size)
        return ft_status_make(FT_STATUS_FORMAT, "%s: tokenizer has %u tokens but the embedding has %u rows",
                              src->path, m->tok.n_tokens, m->hp.vocab_size);
    return FT_OK;
}
