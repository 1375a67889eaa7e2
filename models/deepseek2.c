/* DeepSeek V3 / R1 (GGUF arch "deepseek2", HF DeepseekV3ForCausalLM):
 * names and hyperparameters -> IR. Per block
 *
 *  - multi-head latent attention (attn.kind FT_ATTN_MLA): q through the
 *    low-rank q_a (q_lora_rank, RMSNorm) and q_b, or a plain q projection
 *    (q_lora_rank 0 / absent: V2-Lite); the compressed KV c = RMSNorm(the
 *    first kv_lora_rank rows of kv_a_proj_with_mqa) and one RoPE key shared
 *    by the heads (its last rope rows); per head k_nope = W_kb c and
 *    v = W_vb c, W_kb / W_vb either kv_b's rows (HF, ik_llama.cpp's GGUF
 *    attn_kv_b: per head [k_nope | v]) or llama.cpp's split attn_k_b
 *    [H, kv_lora, nope] and attn_v_b [H, v, kv_lora] (model_names.c takes
 *    either); RoPE on adjacent pairs (DeepSeek's weights are interleaved;
 *    HF de-interleaves inside apply_rotary_pos_emb) over rope_dim =
 *    qk_rope_head_dim; YaRN with DeepSeek's mscale: the softmax scale
 *    mscale(factor, mscale_all_dim)^2 / sqrt(head_dim) and the cos/sin
 *    scale mscale(factor, mscale) / mscale(factor, mscale_all_dim)
 *    (llama.cpp: yarn_log_multiplier = 0.1 mscale_all_dim, the cos/sin
 *    scale 1);
 *  - the first first_k_dense_replace blocks (GGUF leading_dense_block_count)
 *    a dense SwiGLU FFN, the others MoE: sigmoid scores (V3's
 *    scoring_func; GGUF expert_gating_func 2), the selection bias
 *    e_score_correction_bias (GGUF exp_probs_b, V3's topk_method
 *    "noaux_tc") for the choice only, group-limited top-k (n_group /
 *    topk_group, a group scored by its two best biased scores: what
 *    llama.cpp's deepseek2 graph leaves out), renormalized (norm_topk_prob)
 *    times routed_scaling_factor, plus n_shared_experts ungated shared
 *    experts;
 *  - num_nextn_predict_layers MTP blocks after the decoder, skipped.
 *
 * V2's softmax "greedy" / "group_limited_greedy" top-k methods are taken
 * as what they compute (plain or grouped top-k of the softmax scores; V2's
 * group score is the group's best, not its two best: refused with groups).
 * FP8 checkpoints (DeepSeek's own release: quantization_config quant_method
 * "fp8", fmt "e4m3", weight_block_size [128, 128], activation_scheme
 * "dynamic") are read as they are: model_names.c attaches each matrix's
 * weight_scale_inv and the packer writes FP8 blocks, never widened; any
 * other quantization_config is refused naming its key. */
#include "model_registry.h"
#include "family_finish.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *ft_ds_where(const ft_src_model_t *src)
{
    return src->kind == FT_SRC_HF ? "config.json" : src->path;
}

static const char *ft_ds_key(const ft_src_model_t *src, const char *gguf, const char *hf, char *buf, size_t n)
{
    if (src->kind == FT_SRC_HF)
        return hf;
    snprintf(buf, n, "deepseek2.%s", gguf);
    return buf;
}

/* A count in [lo, hi]; an absent (or null) optional key keeps *out. */
FT_WARN_UNUSED static ft_status_t ft_ds_u32(const ft_src_model_t *src, const char *gguf, const char *hf,
                                            uint32_t lo, uint32_t hi, int required, uint32_t *out)
{
    char buf[96];
    const char *key = ft_ds_key(src, gguf, hf, buf, sizeof(buf));
    const ft_meta_entry_t *e = ft_meta_find(&src->meta, key);
    if (!required && (!e || e->type == FT_META_NULL))
        return FT_OK;
    ft_status_t st = ft_meta_require_u32(&src->meta, ft_ds_where(src), key, lo, hi, out);
    return src->kind == FT_SRC_HF ? ft_status_annotate(st, "%s", src->path) : st;
}

FT_WARN_UNUSED static ft_status_t ft_ds_f32(const ft_src_model_t *src, const char *gguf, const char *hf, double lo,
                                            double hi, int required, float *out)
{
    char buf[96];
    const char *key = ft_ds_key(src, gguf, hf, buf, sizeof(buf));
    double v;
    if (!ft_meta_get_f64(&src->meta, key, &v)) {
        if (!required)
            return FT_OK;
        return ft_status_make(FT_STATUS_FORMAT, "%s: %s: required number '%s' is missing or not a number",
                              src->path, ft_ds_where(src), key);
    }
    if (!(v >= lo && v <= hi))
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: %s: '%s' = %g is outside [%g, %g]", src->path,
                              ft_ds_where(src), key, v, lo, hi);
    *out = (float)v;
    return FT_OK;
}

/* DeepSeek's yarn_get_mscale. */
static double ft_ds_mscale(double factor, double mscale)
{
    return factor <= 1.0 ? 1.0 : 0.1 * mscale * log(factor) + 1.0;
}

/* YaRN: GGUF rope.scaling.* (yarn_log_multiplier = 0.1 mscale_all_dim),
 * HF rope_scaling {type "yarn", factor, original_max_position_embeddings,
 * beta_fast, beta_slow, mscale, mscale_all_dim}. Sets the RoPE frequencies'
 * parameters, the cos/sin scale and *attn_mscale (the softmax scale's
 * factor before squaring). */
FT_WARN_UNUSED static ft_status_t ft_ds_yarn(const ft_src_model_t *src, ft_ir_hparams_t *hp, double *attn_mscale)
{
    const int hf = src->kind == FT_SRC_HF;
    *attn_mscale = 1.0;
    const char *type = hf ? ft_meta_get_string(&src->meta, "rope_scaling.type")
                          : ft_meta_get_string(&src->meta, "deepseek2.rope.scaling.type");
    if (hf && !type)
        type = ft_meta_get_string(&src->meta, "rope_scaling.rope_type");
    if (!type || strcmp(type, "none") == 0 || strcmp(type, "default") == 0)
        return FT_OK;
    if (strcmp(type, "yarn") != 0)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: %s: rope scaling '%s' is not supported (yarn)", src->path,
                              ft_ds_where(src), type);
    ft_status_t st;
    float mscale = 1.0f, mscale_all = 0.0f, log_mul = 0.0f;
    hp->rope_yarn_beta_fast = 32.0f;
    hp->rope_yarn_beta_slow = 1.0f;
    if ((st = ft_ds_f32(src, "rope.scaling.factor", "rope_scaling.factor", 1.0, 1e6, 1, &hp->rope_yarn_factor)) ||
        (st = ft_ds_u32(src, "rope.scaling.original_context_length", "rope_scaling.original_max_position_embeddings",
                        1, 1u << 26, 1, &hp->rope_yarn_orig_ctx)) ||
        (st = ft_ds_f32(src, "rope.scaling.yarn_beta_fast", "rope_scaling.beta_fast", 1e-3, 1e6, 0,
                        &hp->rope_yarn_beta_fast)) ||
        (st = ft_ds_f32(src, "rope.scaling.yarn_beta_slow", "rope_scaling.beta_slow", 1e-3, 1e6, 0,
                        &hp->rope_yarn_beta_slow)))
        return st;
    if (hf) {
        if ((st = ft_ds_f32(src, "", "rope_scaling.mscale", 0.0, 1e3, 0, &mscale)) ||
            (st = ft_ds_f32(src, "", "rope_scaling.mscale_all_dim", 0.0, 1e3, 0, &mscale_all)))
            return st;
    } else {
        if ((st = ft_ds_f32(src, "rope.scaling.yarn_log_multiplier", "", 0.0, 100.0, 0, &log_mul)))
            return st;
        mscale_all = log_mul / 0.1f; /* llama.cpp assumes mscale == mscale_all_dim: cos/sin scale 1 */
        mscale = mscale_all;
    }
    if (hp->rope_yarn_beta_slow > hp->rope_yarn_beta_fast)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: %s: YaRN beta_slow %g above beta_fast %g", src->path,
                              ft_ds_where(src), (double)hp->rope_yarn_beta_slow, (double)hp->rope_yarn_beta_fast);
    const double f = hp->rope_yarn_factor;
    *attn_mscale = mscale_all != 0.0f ? ft_ds_mscale(f, mscale_all) : 1.0;
    hp->rope_yarn_mscale = (float)(ft_ds_mscale(f, mscale) / ft_ds_mscale(f, mscale_all));
    return FT_OK;
}

/* config.json's quantization_config: absent, or DeepSeek's FP8 release.
 * "dynamic" activations are what the runtime does anyway (activations stay
 * float32; the weights' scales are all there is); static activation scales
 * or another block would be silently wrong, so they are refused. */
FT_WARN_UNUSED static ft_status_t ft_ds_quant_config(const ft_src_model_t *src)
{
    const ft_meta_t *meta = &src->meta;
    int any = 0;
    for (uint32_t i = 0; i < meta->n_entries && !any; i++)
        any = strncmp(meta->entries[i].key, "quantization_config", 19) == 0;
    if (!any)
        return FT_OK;
    const char *method = ft_meta_get_string(meta, "quantization_config.quant_method");
    const char *fmt = ft_meta_get_string(meta, "quantization_config.fmt");
    const char *act = ft_meta_get_string(meta, "quantization_config.activation_scheme");
    const ft_meta_entry_t *blk = ft_meta_find(meta, "quantization_config.weight_block_size");
    if (!method || strcmp(method, "fp8") != 0)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: config.json: quantization_config.quant_method '%s' "
                              "(the deepseek2 importer reads DeepSeek's 'fp8' checkpoints only)",
                              src->path, method ? method : "(missing)");
    if (fmt && strcmp(fmt, "e4m3") != 0)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: config.json: quantization_config.fmt '%s' (e4m3 only)",
                              src->path, fmt);
    if (act && strcmp(act, "dynamic") != 0)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: config.json: quantization_config.activation_scheme "
                              "'%s' (dynamic only: static activation scales are not read)", src->path, act);
    if (!blk || blk->type != FT_META_ARRAY || blk->len != 2 || blk->arr[0] != 128.0 || blk->arr[1] != 128.0)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: config.json: quantization_config.weight_block_size "
                              "must be [128, 128] (one weight_scale_inv per 128 x 128 tile)", src->path);
    return FT_OK;
}

/* Layers, MTP blocks, the latent attention's shape and its RoPE. */
FT_WARN_UNUSED static ft_status_t ft_ds_attention(const ft_src_model_t *src, ft_ir_model_t *m, ft_ir_block_t *b)
{
    ft_ir_hparams_t *hp = &m->hp;
    ft_ir_attention_t *a = &b->attn;
    const int hf = src->kind == FT_SRC_HF;
    uint32_t blocks = 0, mtp = 0, rope = 0, v = 0, kdim = 0;
    ft_status_t st;
    if ((st = ft_ds_u32(src, "block_count", "num_hidden_layers", 1, 4096, 1, &blocks)) ||
        (st = ft_ds_u32(src, "nextn_predict_layers", "num_nextn_predict_layers", 0, 64, 0, &mtp)) ||
        (st = ft_ds_u32(src, "embedding_length", "hidden_size", 1, 1u << 20, 1, &hp->d_model)) ||
        (st = ft_ds_u32(src, "context_length", "max_position_embeddings", 1, 1u << 30, 1, &hp->context_length)) ||
        (st = ft_ds_f32(src, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 0.0, 1.0, 1, &hp->norm_eps)) ||
        (st = ft_ds_f32(src, "rope.freq_base", "rope_theta", 1.0, 1e12, 1, &hp->rope_theta)) ||
        (st = ft_ds_u32(src, "attention.head_count", "num_attention_heads", 1, 1u << 16, 1, &a->n_heads)) ||
        (st = ft_ds_u32(src, "attention.kv_lora_rank", "kv_lora_rank", 1, 1u << 16, 1, &a->kv_lora_rank)) ||
        (st = ft_ds_u32(src, "attention.q_lora_rank", "q_lora_rank", 0, 1u << 16, 0, &a->q_lora_rank)))
        return st;
    if (!hf && mtp >= blocks)
        return ft_status_make(FT_STATUS_FORMAT, "%s: %u nextn (MTP) layers of %u blocks leave none to run",
                              src->path, mtp, blocks);
    hp->n_layers = hf ? blocks : blocks - mtp;
    hp->n_mtp_layers = mtp;
    if (hf) {
        if ((st = ft_ds_u32(src, "", "qk_rope_head_dim", 2, 1u << 12, 1, &rope)) ||
            (st = ft_ds_u32(src, "", "qk_nope_head_dim", 0, 1u << 16, 1, &a->nope_head_dim)) ||
            (st = ft_ds_u32(src, "", "v_head_dim", 1, 1u << 16, 1, &v)))
            return st;
        kdim = a->nope_head_dim + rope;
    } else {
        /* ik_llama.cpp's layout: head_count_kv = heads, key_length = nope +
         * rope, value_length = v; llama.cpp's: head_count_kv = 1, key_length
         * = kv_lora + rope, value_length = kv_lora and the per-head sizes in
         * key_length_mla / value_length_mla. */
        uint32_t kv_heads = a->n_heads;
        if ((st = ft_ds_u32(src, "rope.dimension_count", "", 2, 1u << 12, 1, &rope)) ||
            (st = ft_ds_u32(src, "attention.head_count_kv", "", 1, 1u << 16, 0, &kv_heads)) ||
            (st = ft_ds_u32(src, "attention.key_length", "", 2, 1u << 20, 1, &kdim)) ||
            (st = ft_ds_u32(src, "attention.value_length", "", 1, 1u << 20, 1, &v)))
            return st;
        if (kv_heads == 1 && a->n_heads > 1) {
            if (kdim != a->kv_lora_rank + rope || v != a->kv_lora_rank)
                return ft_status_make(FT_STATUS_FORMAT, "%s: deepseek2 with one KV head: key_length %u / "
                                      "value_length %u are not kv_lora_rank %u + rope %u / kv_lora_rank",
                                      src->path, kdim, v, a->kv_lora_rank, rope);
            if ((st = ft_ds_u32(src, "attention.key_length_mla", "", 2, 1u << 20, 1, &kdim)) ||
                (st = ft_ds_u32(src, "attention.value_length_mla", "", 1, 1u << 20, 1, &v)))
                return st;
        } else if (kv_heads != a->n_heads) {
            return ft_status_make(FT_STATUS_FORMAT, "%s: deepseek2.attention.head_count_kv %u: 1 or the %u heads",
                                  src->path, kv_heads, a->n_heads);
        }
        if (kdim <= rope)
            return ft_status_make(FT_STATUS_FORMAT, "%s: key length %u leaves nothing beside RoPE's %u", src->path,
                                  kdim, rope);
        a->nope_head_dim = kdim - rope;
    }
    if (rope % 2 || rope > kdim)
        return ft_status_make(FT_STATUS_FORMAT, "%s: %s: the RoPE part %u of heads of %u is not even or too wide",
                              src->path, ft_ds_where(src), rope, kdim);
    a->kind = FT_ATTN_MLA;
    a->n_kv_heads = 1; /* one compressed row per position, shared by the heads */
    a->head_dim = kdim;
    a->value_head_dim = v;
    hp->rope = FT_ROPE_NORM;
    hp->rope_dim = rope;
    hp->norm = FT_NORM_RMS;
    double attn_mscale;
    if ((st = ft_ds_yarn(src, hp, &attn_mscale)))
        return st;
    a->attn_scale = (float)(attn_mscale * attn_mscale / sqrt((double)kdim));
    if (hf) {
        int flag = 0;
        if (ft_meta_get_bool(&src->meta, "attention_bias", &flag) && flag)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: config.json: attention_bias = true is not supported",
                                  src->path);
        if ((st = ft_ds_quant_config(src)))
            return st;
    }
    return FT_OK;
}

/* The router and the experts. */
FT_WARN_UNUSED static ft_status_t ft_ds_moe(const ft_src_model_t *src, ft_ir_block_t *b, uint32_t *n_dense)
{
    ft_ir_moe_t *moe = &b->moe;
    const int hf = src->kind == FT_SRC_HF;
    ft_status_t st;
    uint32_t n_shared = 0, groups = 1, groups_used = 1;
    moe->scoring = FT_ROUTER_SOFTMAX;
    moe->norm_topk_prob = 0;
    moe->routed_scaling = 1.0f;
    b->act = FT_ACT_SILU;
    if ((st = ft_ds_u32(src, "expert_count", "n_routed_experts", 1, 1u << 16, 1, &moe->n_experts)) ||
        (st = ft_ds_u32(src, "expert_used_count", "num_experts_per_tok", 1, moe->n_experts, 1,
                        &moe->n_experts_used)) ||
        (st = ft_ds_u32(src, "expert_feed_forward_length", "moe_intermediate_size", 1, 1u << 20, 1,
                        &moe->expert_ffn)) ||
        (st = ft_ds_u32(src, "feed_forward_length", "intermediate_size", 1, 1u << 22, 0, &b->dense_ffn)) ||
        (st = ft_ds_u32(src, "expert_shared_count", "n_shared_experts", 0, 1024, 0, &n_shared)) ||
        (st = ft_ds_u32(src, "leading_dense_block_count", "first_k_dense_replace", 0, 4096, 0, n_dense)) ||
        (st = ft_ds_f32(src, "expert_weights_scale", "routed_scaling_factor", 0.0, 1e6, 0, &moe->routed_scaling)) ||
        (st = ft_ds_u32(src, "expert_group_count", "n_group", 1, moe->n_experts, 0, &groups)) ||
        (st = ft_ds_u32(src, "expert_group_used_count", "topk_group", 1, groups, 0, &groups_used)))
        return st;
    char buf[96];
    ft_meta_get_bool(&src->meta, ft_ds_key(src, "expert_weights_norm", "norm_topk_prob", buf, sizeof(buf)),
                     &moe->norm_topk_prob);
    if (hf) {
        const char *scoring = ft_meta_get_string(&src->meta, "scoring_func");
        const char *method = ft_meta_get_string(&src->meta, "topk_method");
        if (scoring && strcmp(scoring, "sigmoid") != 0 && strcmp(scoring, "softmax") != 0)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: config.json: scoring_func '%s' (softmax or sigmoid)",
                                  src->path, scoring);
        moe->scoring = scoring && strcmp(scoring, "sigmoid") == 0 ? FT_ROUTER_SIGMOID : FT_ROUTER_SOFTMAX;
        moe->has_sel_bias = method && strcmp(method, "noaux_tc") == 0;
        if (method && !moe->has_sel_bias && strcmp(method, "greedy") != 0 &&
            strcmp(method, "group_limited_greedy") != 0)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: config.json: topk_method '%s' is not supported",
                                  src->path, method);
        uint32_t freq = 1; /* V2/V3: every layer after the dense ones is MoE */
        if ((st = ft_ds_u32(src, "", "moe_layer_freq", 1, 4096, 0, &freq)))
            return st;
        if (freq != 1)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: config.json: moe_layer_freq %u (MoE in every "
                                  "layer after first_k_dense_replace is supported)", src->path, freq);
        if (method && strcmp(method, "greedy") == 0)
            groups = groups_used = 1;
        if (method && strcmp(method, "group_limited_greedy") == 0 && groups > 1)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: config.json: topk_method 'group_limited_greedy' "
                                  "(groups scored by their best expert) is not supported", src->path);
    } else {
        uint32_t gating = 0;
        if ((st = ft_ds_u32(src, "expert_gating_func", "", 1, UINT32_MAX, 0, &gating)))
            return st;
        if (gating == 0) /* llama.cpp's default for files without the key: softmax (V2) */
            gating = 1;
        if (gating != 1 && gating != 2)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: deepseek2.expert_gating_func = %u (1 softmax and 2 "
                                  "sigmoid are known)", src->path, gating);
        moe->scoring = gating == 1 ? FT_ROUTER_SOFTMAX : FT_ROUTER_SIGMOID;
        /* a selection bias where the file has one (V3; V2 has none) */
        for (uint32_t t = 0; t < src->n_tensors && !moe->has_sel_bias; t++) {
            const char *dot = strstr(src->tensors[t].name, ".exp_probs_b.bias");
            moe->has_sel_bias = dot && dot[strlen(".exp_probs_b.bias")] == '\0';
        }
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

ft_status_t ft_deepseek2_build(const ft_src_model_t *src, ft_ir_model_t *m)
{
    ft_ir_block_t proto = {0};
    uint32_t n_dense = 0;
    m->hp.arch = FT_ARCH_DEEPSEEK2;
    m->hp.arch_name = "deepseek2";
    ft_status_t st = ft_ds_attention(src, m, &proto);
    if (!st)
        st = ft_ds_moe(src, &proto, &n_dense);
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
