/* Qwen3-MoE (GGUF arch "qwen3moe", HF Qwen3MoeForCausalLM) and Mixtral
 * (GGUF arch "llama" with llama.expert_count > 0, HF MixtralForCausalLM):
 * names and hyperparameters -> IR. The two differ only in keys, q/k norm
 * and RoPE; see ft_mixtral_build for how the RoPE style is recorded. Both checkpoint layouts produce the same IR: the
 * tensors are taken in one canonical order, under GGUF's names, and HF's
 * per-expert matrices become one [n_experts, rows, cols] stack whose pieces
 * point at each expert's bytes. */
#include "model_registry.h"
#include "family_finish.h"


#include <stdio.h>
#include <string.h>

/* Hyperparameter keys: GGUF's (after "<general.architecture>.") and HF
 * config.json's. */
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
/* Mixtral: HF names the expert count differently, and llama GGUF files
 * carry the expert FFN width in feed_forward_length (there is no dense FFN). */
static const ft_q3_keys_t K_MX_EXPERTS = {"expert_count", "num_local_experts"};
static const ft_q3_keys_t K_MX_EXPERT_FFN = {"feed_forward_length", "intermediate_size"};

static const char *ft_q3_key(const ft_src_model_t *src, ft_q3_keys_t k, char *buf, size_t n)
{
    if (src->kind == FT_SRC_HF)
        return k.hf;
    /* GGUF prefixes keys with the architecture it declares ("qwen3moe",
     * "llama"); the registry only routes here after checking it. */
    const char *arch = ft_meta_get_string(&src->meta, "general.architecture");
    snprintf(buf, n, "%s.%s", arch ? arch : "", k.gguf);
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

/* Optional count: keeps *out when the key is absent or JSON null
 * (transformers writes "head_dim": null for a MixtralConfig default). */
FT_WARN_UNUSED static ft_status_t ft_q3_u32_opt(const ft_src_model_t *src, ft_q3_keys_t k, uint32_t max,
                                 uint32_t *out)
{
    char buf[96];
    const ft_meta_entry_t *e = ft_meta_find(&src->meta, ft_q3_key(src, k, buf, sizeof(buf)));
    if (!e || e->type == FT_META_NULL)
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
static int ft_q3_layer_is_moe(const ft_src_model_t *src, int mixtral, uint32_t l)
{
    if (src->kind == FT_SRC_GGUF || mixtral)
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

/* Mixtral's sliding window (HF sliding_window; null for 8x7B v0.1, and
 * llama GGUF files carry none) is recorded per block; 0 means full
 * attention. A window shorter than the context changes the logits once a
 * sequence outgrows it; the ATTENTION op carries it and every backend
 * honours it. */
FT_WARN_UNUSED static ft_status_t ft_mx_sliding_window(const ft_src_model_t *src, const ft_ir_hparams_t *hp,
                                        ft_ir_attention_t *a)
{
    a->sliding_window = 0;
    if (src->kind != FT_SRC_HF)
        return FT_OK;
    const ft_meta_entry_t *e = ft_meta_find(&src->meta, "sliding_window");
    if (!e || e->type == FT_META_NULL)
        return FT_OK;
    uint32_t w;
    ft_status_t st = ft_meta_require_u32(&src->meta, "config.json", "sliding_window", 1, UINT32_MAX, &w);
    if (st)
        return ft_status_annotate(st, "%s", src->path);
    if (w < hp->context_length)
        a->sliding_window = w;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_q3_hparams(const ft_src_model_t *src, int mixtral, ft_ir_model_t *m,
                                 ft_ir_block_t *proto)
{
    ft_ir_hparams_t *hp = &m->hp;
    ft_status_t st;
    hp->arch = mixtral ? FT_ARCH_MIXTRAL : FT_ARCH_QWEN3MOE;
    hp->arch_name = mixtral ? "mixtral" : "qwen3moe";
    hp->norm = FT_NORM_RMS;
    /* The IR's RoPE style is that of the q/k weights as stored: the IR's
     * tensors are byte ranges of the source, never rewritten. llama.cpp's
     * converter permutes llama q/k rows so that each head's rotate-half
     * pairs (i, i + d/2) become adjacent pairs (2i, 2i + 1): a llama GGUF
     * is NORM (interleaved) on permuted weights, the HF checkpoint NEOX
     * (rotate-half) on the originals, and both give the same logits. */
    hp->rope = (mixtral && src->kind == FT_SRC_GGUF) ? FT_ROPE_NORM : FT_ROPE_NEOX;
    if ((st = ft_q3_u32(src, K_LAYERS, 4096, &hp->n_layers)) ||
        (st = ft_q3_u32(src, K_DMODEL, 1u << 20, &hp->d_model)) ||
        (st = ft_q3_u32(src, K_CTX, 1u << 30, &hp->context_length)) ||
        (st = ft_q3_float(src, K_EPS, 0.0, 1.0, &hp->norm_eps)) ||
        (st = ft_q3_float(src, K_THETA, 1.0, 1e12, &hp->rope_theta)))
        return st;
    ft_ir_attention_t *a = &proto->attn;
    a->kind = FT_ATTN_GQA;
    a->qk_norm = !mixtral;
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
        /* Qwen3MoeAttention: attention_bias puts a bias on q, k, v and o;
         * model_names.c takes the tensors and wants them present. */
        if (ft_meta_get_bool(&src->meta, "attention_bias", &flag))
            a->has_bias = flag;
        if (!mixtral && ft_meta_get_bool(&src->meta, "use_sliding_window", &flag) && flag)
            return ft_status_make(FT_STATUS_UNSUPPORTED,
                                  "%s: config.json: use_sliding_window = true is not supported", src->path);
        const ft_meta_entry_t *rs = ft_meta_find(&src->meta, "rope_scaling.type");
        if (!rs)
            rs = ft_meta_find(&src->meta, "rope_scaling.rope_type");
        if (rs && rs->type == FT_META_STRING && strcmp(rs->s, "default") != 0)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: config.json: rope_scaling '%s' is not supported",
                                  src->path, rs->s);
    }
    if (mixtral && (st = ft_mx_sliding_window(src, hp, a)))
        return st;
    ft_ir_moe_t *moe = &proto->moe;
    moe->scoring = FT_ROUTER_SOFTMAX;
    moe->norm_topk_prob = 1; /* llama.cpp's qwen3moe always renormalizes */
    moe->routed_scaling = 1.0f;
    if (mixtral) {
        /* MixtralSparseMoeBlock: softmax over all experts, top-k, divide by
         * the chosen weights' sum; llama.cpp's build_llama passes norm_w =
         * true. There is no config switch. */
        proto->act = FT_ACT_SILU;
        if ((st = ft_q3_u32(src, K_MX_EXPERTS, 1u << 16, &moe->n_experts)) ||
            (st = ft_q3_u32(src, K_USED, moe->n_experts, &moe->n_experts_used)))
            return st;
        return ft_q3_u32(src, K_MX_EXPERT_FFN, 1u << 20, &moe->expert_ffn);
    }
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

FT_WARN_UNUSED static ft_status_t ft_q3_build(const ft_src_model_t *src, int mixtral, ft_ir_model_t *m)
{
    ft_ir_block_t proto = {0};
    ft_status_t st = ft_q3_hparams(src, mixtral, m, &proto);
    if (st)
        return st;
    m->blocks = ft_arena_array(m->arena, m->hp.n_layers, sizeof(ft_ir_block_t));
    if (!m->blocks)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", src->path);
    for (uint32_t l = 0; l < m->hp.n_layers; l++) {
        m->blocks[l] = proto;
        m->blocks[l].is_moe = ft_q3_layer_is_moe(src, mixtral, l);
        if (m->blocks[l].is_moe)
            m->blocks[l].dense_ffn = 0; /* meaningful for dense layers only */
        if (!m->blocks[l].is_moe && proto.dense_ffn == 0)
            return ft_status_make(FT_STATUS_FORMAT, "%s: layer %u is dense but the FFN size is missing",
                                  src->path, l);
    }
    m->hp.tie_embeddings = ft_family_tied_embeddings(src);
    return ft_family_collect(src, m);
}

ft_status_t ft_qwen3moe_build(const ft_src_model_t *src, ft_ir_model_t *m)
{
    return ft_q3_build(src, 0, m);
}

ft_status_t ft_mixtral_build(const ft_src_model_t *src, ft_ir_model_t *m)
{
    return ft_q3_build(src, 1, m);
}
