/* gpt-oss (GGUF arch "gpt-oss", HF GptOssForCausalLM): names and
 * hyperparameters -> IR. What makes it gpt-oss is data the one decoder
 * lowering (lower_decoder.c) turns into op parameters:
 *
 *  - q/k/v/o projections with biases, and a sink logit per head
 *    (attn_sinks): the LINEARs' biases and the ATTENTION's weights[0];
 *  - layer l attends through a sliding window of attention.sliding_window
 *    positions when l is even, fully when odd (llama.cpp's
 *    build_openai_moe, HF layer_types starting "sliding_attention");
 *  - NeoX RoPE over head_dim with YaRN (rope.scaling.*; program.c has the
 *    formula);
 *  - the router: logits W_r h + b_r, the top-k of the raw logits, their
 *    weights softmax over those k logits. That is softmax scoring with
 *    norm_topk_prob (softmax is monotonic, so the top-k of the
 *    probabilities are the top-k logits, and p_i / sum_k p_k =
 *    exp(l_i) / sum_k exp(l_k)): the IR says so instead of a new scoring;
 *  - experts with gate/up/down biases and the clamped SwiGLU
 *    (FT_ACT_SWIGLU_OAI, alpha 1.702, limit 7: llama.cpp hard-codes both,
 *    HF has swiglu_limit).
 *
 * llama.cpp's converter de-interleaves HF's gate_up_proj into
 * ffn_gate_exps / ffn_up_exps stacks [E, F, d] (rows = outputs, as every
 * other stack here), with biases [E, F]. The HF import
 * (model_names_oss_hf.c) reads the checkpoint as OpenAI ships it: experts
 * as MXFP4 *_blocks + *_scales [E, rows, ...] with gate and up in
 * alternating rows, moved bit for bit into the same stacks; the
 * dequantized form (gate_up_proj [E, d, 2F], transposed) is refused naming
 * the tensor. MXFP4 tensors (what
 * gpt-oss ships: llama.cpp's converter keeps the experts' blocks, ggml
 * type 39) are imported as they are: ggml's block layout is the
 * runtime's FT_DTYPE_MXFP4. */
#include "model_registry.h"
#include "family_finish.h"

#include <stdio.h>
#include <string.h>

#define FT_OSS_ALPHA 1.702f
#define FT_OSS_LIMIT 7.0f

/* GGUF "gpt-oss.<key>" or, for an HF checkpoint, config.json's hf key. */
static const char *ft_oss_key(const ft_src_model_t *src, const char *key, const char *hf, char *k,
                              size_t cap)
{
    if (src->kind == FT_SRC_HF || !key) return hf;
    snprintf(k, cap, "gpt-oss.%s", key);
    return k;
}

FT_WARN_UNUSED static ft_status_t ft_oss_u32_hf(const ft_src_model_t *src, const char *key,
                                                const char *hf, uint32_t min, uint32_t max,
                                                uint32_t *out)
{
    char k[96];
    ft_status_t st = ft_meta_require_u32(&src->meta, src->kind == FT_SRC_HF ? "config.json" : src->path,
                                         ft_oss_key(src, key, hf, k, sizeof(k)), min, max, out);
    return src->kind == FT_SRC_HF ? ft_status_annotate(st, "%s", src->path) : st;
}

FT_WARN_UNUSED static ft_status_t ft_oss_f32_hf(const ft_src_model_t *src, const char *key,
                                                const char *hf, double lo, double hi, float *out)
{
    char k[96];
    const char *name = ft_oss_key(src, key, hf, k, sizeof(k));
    double v;
    if (!ft_meta_get_f64(&src->meta, name, &v))
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: required number '%s' is missing or not a number", src->path, name);
    if (!(v >= lo && v <= hi))
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: '%s' = %g is outside [%g, %g]",
                              src->path, name, v, lo, hi);
    *out = (float)v;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_oss_u32(const ft_src_model_t *src, const char *key,
                                             uint32_t min, uint32_t max, uint32_t *out)
{
    return ft_oss_u32_hf(src, key, NULL, min, max, out);
}

FT_WARN_UNUSED static ft_status_t ft_oss_f32(const ft_src_model_t *src, const char *key, double lo,
                                             double hi, float *out)
{
    return ft_oss_f32_hf(src, key, NULL, lo, hi, out);
}

/* HF's rope_scaling (GptOssConfig: rope_type "yarn", factor,
 * original_max_position_embeddings, beta_fast, beta_slow). */
FT_WARN_UNUSED static ft_status_t ft_oss_yarn_hf(const ft_src_model_t *src, ft_ir_hparams_t *hp)
{
    const char *type = ft_meta_get_string(&src->meta, "rope_scaling.rope_type");
    if (!type) type = ft_meta_get_string(&src->meta, "rope_scaling.type");
    if (!type) return FT_OK;
    if (strcmp(type, "yarn") != 0)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: config.json: rope_scaling.rope_type '%s' is not supported (yarn)",
                              src->path, type);
    ft_status_t st;
    hp->rope_yarn_beta_fast = 32.0f;
    hp->rope_yarn_beta_slow = 1.0f;
    double v;
    if (ft_meta_get_f64(&src->meta, "rope_scaling.beta_fast", &v)) hp->rope_yarn_beta_fast = (float)v;
    if (ft_meta_get_f64(&src->meta, "rope_scaling.beta_slow", &v)) hp->rope_yarn_beta_slow = (float)v;
    if ((st = ft_oss_f32_hf(src, NULL, "rope_scaling.factor", 1.0, 1e6, &hp->rope_yarn_factor)) ||
        (st = ft_oss_u32_hf(src, NULL, "rope_scaling.original_max_position_embeddings", 1,
                            1u << 26, &hp->rope_yarn_orig_ctx)))
        return st;
    if (!(hp->rope_yarn_beta_fast > 0.0f && hp->rope_yarn_beta_fast < 1e4f &&
          hp->rope_yarn_beta_slow > 0.0f && hp->rope_yarn_beta_slow < 1e4f))
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: config.json: rope_scaling.beta_fast / beta_slow out of range",
                              src->path);
    return FT_OK;
}

/* YaRN from rope.scaling.*: none without a scaling type; only "yarn". */
FT_WARN_UNUSED static ft_status_t ft_oss_yarn(const ft_src_model_t *src, ft_ir_hparams_t *hp)
{
    const char *type = ft_meta_get_string(&src->meta, "gpt-oss.rope.scaling.type");
    if (!type || strcmp(type, "none") == 0) return FT_OK;
    if (strcmp(type, "yarn") != 0)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: gpt-oss.rope.scaling.type '%s' is not supported (yarn)",
                              src->path, type);
    ft_status_t st;
    if ((st = ft_oss_f32(src, "rope.scaling.factor", 1.0, 1e6, &hp->rope_yarn_factor)) ||
        (st = ft_oss_u32(src, "rope.scaling.original_context_length", 1, 1u << 26,
                         &hp->rope_yarn_orig_ctx)))
        return st;
    hp->rope_yarn_beta_fast = 32.0f; /* llama.cpp's yarn_beta_fast / _slow defaults, HF's too */
    hp->rope_yarn_beta_slow = 1.0f;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_oss_hparams(const ft_src_model_t *src, ft_ir_model_t *m,
                                                 ft_ir_block_t *proto, uint32_t *window)
{
    ft_ir_hparams_t *hp = &m->hp;
    hp->arch = FT_ARCH_GPT_OSS;
    hp->arch_name = "gpt-oss";
    hp->norm = FT_NORM_RMS;
    hp->rope = FT_ROPE_NEOX;
    ft_ir_attention_t *a = &proto->attn;
    ft_ir_moe_t *moe = &proto->moe;
    ft_status_t st;
    const int hf = src->kind == FT_SRC_HF;
    if ((st = ft_oss_u32_hf(src, "block_count", "num_hidden_layers", 1, 4096, &hp->n_layers)) ||
        (st = ft_oss_u32_hf(src, "embedding_length", "hidden_size", 1, 1u << 20, &hp->d_model)) ||
        (st = ft_oss_u32_hf(src, "context_length", "max_position_embeddings", 1, 1u << 26,
                            &hp->context_length)) ||
        (st = ft_oss_f32_hf(src, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 0.0, 1.0,
                            &hp->norm_eps)) ||
        (st = ft_oss_f32_hf(src, "rope.freq_base", "rope_theta", 1.0, 1e12, &hp->rope_theta)) ||
        (st = ft_oss_u32_hf(src, "attention.head_count", "num_attention_heads", 1, 1u << 16,
                            &a->n_heads)) ||
        (st = ft_oss_u32_hf(src, "attention.head_count_kv", "num_key_value_heads", 1, a->n_heads,
                            &a->n_kv_heads)) ||
        /* n_embd is not n_heads * head_dim in gpt-oss: key_length is required */
        (st = ft_oss_u32_hf(src, "attention.key_length", "head_dim", 2, 1u << 16, &a->head_dim)) ||
        (st = ft_oss_u32_hf(src, "attention.value_length", "head_dim", 2, 1u << 16,
                            &a->value_head_dim)) ||
        (st = ft_oss_u32_hf(src, "attention.sliding_window", "sliding_window", 1, UINT32_MAX,
                            window)) ||
        (st = ft_oss_u32_hf(src, "expert_count", "num_local_experts", 1, 1u << 16,
                            &moe->n_experts)) ||
        (st = ft_oss_u32_hf(src, "expert_used_count", "num_experts_per_tok", 1, moe->n_experts,
                            &moe->n_experts_used)) ||
        (st = ft_oss_u32_hf(src, "expert_feed_forward_length", "intermediate_size", 1, 1u << 20,
                            &moe->expert_ffn)) ||
        (st = hf ? ft_oss_yarn_hf(src, hp) : ft_oss_yarn(src, hp)))
        return st;
    double limit;
    if (hf && ft_meta_get_f64(&src->meta, "swiglu_limit", &limit) && limit != FT_OSS_LIMIT)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: config.json: swiglu_limit %g (gpt-oss's clamped SwiGLU is "
                              "limit 7)",
                              src->path, limit);
    if (a->n_heads % a->n_kv_heads || a->value_head_dim != a->head_dim)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: %u heads over %u KV heads, key/value lengths %u/%u (GQA with "
                              "equal lengths)",
                              src->path, a->n_heads, a->n_kv_heads, a->head_dim, a->value_head_dim);
    hp->rope_dim = a->head_dim;
    uint32_t rope_dim = hp->rope_dim;
    char k[96];
    snprintf(k, sizeof(k), "gpt-oss.rope.dimension_count");
    if (!hf && ft_meta_find(&src->meta, k) &&
        (st = ft_meta_require_u32(&src->meta, src->path, k, 2, a->head_dim, &rope_dim)))
        return st;
    hp->rope_dim = rope_dim;
    a->kind = FT_ATTN_GQA;
    proto->is_moe = 1;
    proto->act = FT_ACT_SWIGLU_OAI;
    proto->act_alpha = FT_OSS_ALPHA;
    proto->act_limit = FT_OSS_LIMIT;
    moe->scoring = FT_ROUTER_SOFTMAX;
    moe->norm_topk_prob = 1; /* softmax over the chosen logits (see above) */
    moe->routed_scaling = 1.0f;
    return FT_OK;
}

/* Refuses what this importer does not compute: a layer without its
 * biases or sinks. */
FT_WARN_UNUSED static ft_status_t ft_oss_check_tensors(const ft_src_model_t *src,
                                                       const ft_ir_model_t *m)
{
    static const ft_tensor_role_t need[] = {
        FT_ROLE_ATTN_Q_BIAS,        FT_ROLE_ATTN_K_BIAS,      FT_ROLE_ATTN_V_BIAS,
        FT_ROLE_ATTN_O_BIAS,        FT_ROLE_ATTN_SINKS,       FT_ROLE_FFN_ROUTER_BIAS,
        FT_ROLE_FFN_GATE_EXPS_BIAS, FT_ROLE_FFN_UP_EXPS_BIAS, FT_ROLE_FFN_DOWN_EXPS_BIAS};
    for (uint32_t l = 0; l < m->hp.n_layers; l++)
        for (size_t r = 0; r < sizeof(need) / sizeof(need[0]); r++)
            if (!ft_ir_find(m, need[r], (int32_t)l))
                return ft_status_make(FT_STATUS_FORMAT,
                                      "%s: missing tensor 'blk.%u.%s' (gpt-oss has it in every "
                                      "layer)",
                                      src->path, l, ft_tensor_role_name(need[r]));
    return FT_OK;
}

ft_status_t ft_gptoss_build(const ft_src_model_t *src, ft_ir_model_t *m)
{
    ft_ir_block_t proto = {0};
    uint32_t window = 0;
    ft_status_t st = ft_oss_hparams(src, m, &proto, &window);
    if (st) return st;
    m->blocks = ft_arena_array(m->arena, m->hp.n_layers, sizeof(ft_ir_block_t));
    if (!m->blocks) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", src->path);
    for (uint32_t l = 0; l < m->hp.n_layers; l++) {
        m->blocks[l] = proto;
        /* even layers slide (a key is visible while pos_q - pos_k < window);
         * HF's layer_types says so per layer */
        m->blocks[l].attn.sliding_window = l % 2 == 0 ? window : 0;
        char key[48];
        snprintf(key, sizeof(key), "layer_types.%u", l);
        const char *kind = src->kind == FT_SRC_HF ? ft_meta_get_string(&src->meta, key) : NULL;
        if (kind && strcmp(kind, "sliding_attention") == 0) m->blocks[l].attn.sliding_window = window;
        else if (kind && strcmp(kind, "full_attention") == 0) m->blocks[l].attn.sliding_window = 0;
        else if (kind)
            return ft_status_make(FT_STATUS_UNSUPPORTED,
                                  "%s: config.json: %s is '%s' (sliding_attention or "
                                  "full_attention)",
                                  src->path, key, kind);
    }
    m->hp.tie_embeddings = 0; /* output.weight is required */
    if ((st = ft_family_collect(src, m))) return st;
    return ft_oss_check_tensors(src, m);
}
