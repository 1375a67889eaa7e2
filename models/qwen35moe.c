/* Qwen3.5 / Qwen3.6 MoE hybrids (GGUF arch "qwen35moe", as llama.cpp's
 * converter writes Qwen3_5MoeForCausalLM) and Qwen3-Next (GGUF arch
 * "qwen3next"): names and hyperparameters -> IR.
 *
 * Every block is a mixer plus a routed MoE with one shared expert whose
 * output is gated by sigmoid(w . h). The mixer is Gated DeltaNet (linear
 * attention with a recurrent state) except in every full_attention_interval-th
 * block ((l + 1) % interval == 0, llama.cpp's hparams.recurrent_layer_arr),
 * which is GQA with per-head q/k RMSNorm, NeoX RoPE over the first
 * rope.dimension_count dims (IMRoPE, whose sections all carry the text
 * position: the same rotation) and the gated output, o = attn * sigmoid(gate)
 * with the gate rows stored interleaved per head in attn_q (model_names.c
 * splits them).
 *
 * HF checkpoints (Qwen3_5MoeForCausalLM, Qwen3NextForCausalLM) give the
 * same IR: config.json's names here, the tensors' rewriting in
 * model_names_q35_hf.c and the packer (ir.h: ft_ir_xform_t).
 *
 * What the GGUF converter already did and we take as stored: norm weights with
 * Qwen's zero-centred "+1" baked in (ssm_norm excepted: it is stored raw and
 * used raw), ssm_a = -exp(A_log), V heads reordered so that value head h
 * reads key head h % n_k_heads (tiled). The MTP block(s) after the decoder
 * (nextn_predict_layers) are skipped.
 *
 * Qwen3-Next differs in data only: every 4th block is full attention
 * whatever full_attention_interval says (llama.cpp hard-codes it), value
 * heads stay grouped (value head h reads key head h / (Hv / Hk)), q | k | v
 * | z may come fused per key head in ssm_in and beta | alpha always come
 * fused per key head in ssm_ba (model_names.c splits both into the same
 * roles), and a block may be a dense FFN. */
#include "model_registry.h"
#include "family_finish.h"

#include <stdio.h>
#include <string.h>

/* A hyperparameter's key: GGUF "<general.architecture>.<gguf>" (the
 * registry routes only qwen35moe and qwen3next files here), HF config.json
 * <hf> (NULL: GGUF only). */
typedef struct ft_q35_keys {
    const char *gguf, *hf;
} ft_q35_keys_t;

static const char *ft_q35_key(const ft_src_model_t *src, ft_q35_keys_t k, char *out, size_t cap)
{
    if (src->kind == FT_SRC_HF) return k.hf;
    const char *arch = ft_meta_get_string(&src->meta, "general.architecture");
    snprintf(out, cap, "%s.%s", arch ? arch : "", k.gguf);
    return out;
}

static const char *ft_q35_where(const ft_src_model_t *src)
{
    return src->kind == FT_SRC_HF ? "config.json" : src->path;
}

/* A required count (an optional one with opt: *out keeps its default when
 * the key is absent or null). */
FT_WARN_UNUSED static ft_status_t ft_q35_u32_k(const ft_src_model_t *src, ft_q35_keys_t keys,
                                               uint32_t lo, uint32_t hi, int opt, uint32_t *out)
{
    char k[96];
    const char *key = ft_q35_key(src, keys, k, sizeof(k));
    if (!key) return FT_OK;
    const ft_meta_entry_t *e = ft_meta_find(&src->meta, key);
    if (opt && (!e || e->type == FT_META_NULL)) return FT_OK;
    ft_status_t st = ft_meta_require_u32(&src->meta, ft_q35_where(src), key, lo, hi, out);
    return src->kind == FT_SRC_HF ? ft_status_annotate(st, "%s", src->path) : st;
}

FT_WARN_UNUSED static ft_status_t ft_q35_u32(const ft_src_model_t *src, ft_q35_keys_t keys,
                                             uint32_t lo, uint32_t hi, uint32_t *out)
{
    return ft_q35_u32_k(src, keys, lo, hi, 0, out);
}

FT_WARN_UNUSED static ft_status_t ft_q35_u32_opt(const ft_src_model_t *src, ft_q35_keys_t keys,
                                                 uint32_t lo, uint32_t hi, uint32_t *out)
{
    return ft_q35_u32_k(src, keys, lo, hi, 1, out);
}

/* A number; HF keys may also sit in the config's rope_parameters
 * (transformers 5 moves rope_theta and partial_rotary_factor there). */
FT_WARN_UNUSED static ft_status_t ft_q35_float(const ft_src_model_t *src, ft_q35_keys_t keys,
                                               double lo, double hi, int required, float *out)
{
    char k[96];
    const char *key = ft_q35_key(src, keys, k, sizeof(k));
    if (!key) return FT_OK;
    double v;
    int have = ft_meta_get_f64(&src->meta, key, &v);
    if (!have && src->kind == FT_SRC_HF) {
        snprintf(k, sizeof(k), "rope_parameters.%s", keys.hf);
        if ((have = ft_meta_get_f64(&src->meta, k, &v))) key = k;
    }
    if (!have) {
        if (!required) return FT_OK;
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: required number '%s' is missing or not a number", src->path, key);
    }
    if (!(v >= lo && v <= hi))
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: '%s' = %g is outside [%g, %g]",
                              src->path, key, v, lo, hi);
    *out = (float)v;
    return FT_OK;
}

static const ft_q35_keys_t K_BLOCKS = {"block_count", "num_hidden_layers"};
static const ft_q35_keys_t K_MTP = {"nextn_predict_layers", NULL}; /* HF: mtp.*, outside */
static const ft_q35_keys_t K_DMODEL = {"embedding_length", "hidden_size"};
static const ft_q35_keys_t K_CTX = {"context_length", "max_position_embeddings"};
static const ft_q35_keys_t K_EPS = {"attention.layer_norm_rms_epsilon", "rms_norm_eps"};
static const ft_q35_keys_t K_THETA = {"rope.freq_base", "rope_theta"};
static const ft_q35_keys_t K_HEADS = {"attention.head_count", "num_attention_heads"};
static const ft_q35_keys_t K_KV_HEADS = {"attention.head_count_kv", "num_key_value_heads"};
static const ft_q35_keys_t K_HEAD_DIM = {"attention.key_length", "head_dim"};
static const ft_q35_keys_t K_VALUE_DIM = {"attention.value_length", NULL};
static const ft_q35_keys_t K_ROPE_DIM = {"rope.dimension_count", NULL}; /* HF: partial_rotary_factor */
static const ft_q35_keys_t K_CONV = {"ssm.conv_kernel", "linear_conv_kernel_dim"};
static const ft_q35_keys_t K_STATE = {"ssm.state_size", "linear_key_head_dim"};
static const ft_q35_keys_t K_V_HEADS = {"ssm.time_step_rank", "linear_num_value_heads"};
static const ft_q35_keys_t K_K_HEADS = {"ssm.group_count", "linear_num_key_heads"};
static const ft_q35_keys_t K_INNER = {"ssm.inner_size", NULL}; /* HF: linear_value_head_dim */
static const ft_q35_keys_t K_INTERVAL = {"full_attention_interval", "full_attention_interval"};
static const ft_q35_keys_t K_EXPERTS = {"expert_count", "num_experts"};
static const ft_q35_keys_t K_USED = {"expert_used_count", "num_experts_per_tok"};
static const ft_q35_keys_t K_EXPERT_FFN = {"expert_feed_forward_length", "moe_intermediate_size"};
static const ft_q35_keys_t K_SCALE = {"expert_weights_scale", NULL};
static const ft_q35_keys_t K_FFN = {"feed_forward_length", "intermediate_size"};
static const ft_q35_keys_t K_SHARED_FFN = {"expert_shared_feed_forward_length",
                                           "shared_expert_intermediate_size"};

/* The full-attention block's and the DeltaNet block's attention, the MoE
 * every block shares. */
typedef struct ft_q35_protos {
    ft_ir_attention_t full, linear;
    ft_ir_moe_t moe;
    uint32_t interval;
    uint32_t dense_ffn; /* feed_forward_length: Qwen3-Next's dense blocks, else 0 */
} ft_q35_protos_t;

FT_WARN_UNUSED static ft_status_t ft_q35_linear(const ft_src_model_t *src, int next,
                                                ft_ir_attention_t *a)
{
    uint32_t inner = 0;
    ft_status_t st;
    a->kind = FT_ATTN_GATED_DELTANET;
    a->heads_tiled = !next; /* Qwen3-Next keeps HF's grouped value heads */
    if ((st = ft_q35_u32(src, K_CONV, 2, 64, &a->conv_kernel)) ||
        (st = ft_q35_u32(src, K_STATE, 1, 4096, &a->head_dim)) ||
        (st = ft_q35_u32(src, K_V_HEADS, 1, 4096, &a->n_heads)) ||
        (st = ft_q35_u32(src, K_K_HEADS, 1, 4096, &a->n_kv_heads)))
        return st;
    a->value_head_dim = a->head_dim; /* llama.cpp's loader: head_v_dim = state_size */
    if (src->kind == FT_SRC_HF) {
        uint32_t vd = 0;
        const ft_q35_keys_t k_vd = {NULL, "linear_value_head_dim"};
        if ((st = ft_q35_u32(src, k_vd, 1, 4096, &vd))) return st;
        if (vd != a->head_dim)
            return ft_status_make(FT_STATUS_UNSUPPORTED,
                                  "%s: config.json: linear_value_head_dim %u differs from "
                                  "linear_key_head_dim %u (the DeltaNet op takes equal sizes)",
                                  src->path, vd, a->head_dim);
        inner = a->n_heads * a->head_dim;
    } else if ((st = ft_q35_u32(src, K_INNER, 1, 1u << 24, &inner))) {
        return st;
    }
    if (inner != a->n_heads * a->head_dim || a->n_heads % a->n_kv_heads)
        return ft_status_make(
            FT_STATUS_FORMAT,
            "%s: ssm.inner_size %u is not ssm.time_step_rank %u x ssm.state_size %u, or the %u "
            "value heads are not whole groups of the %u key heads",
            src->path, inner, a->n_heads, a->head_dim, a->n_heads, a->n_kv_heads);
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_q35_hparams(const ft_src_model_t *src, int next,
                                                 ft_ir_model_t *m, ft_q35_protos_t *p)
{
    ft_ir_hparams_t *hp = &m->hp;
    hp->arch = next ? FT_ARCH_QWEN3NEXT : FT_ARCH_QWEN35MOE;
    hp->arch_name = next ? "qwen3next" : "qwen35moe";
    hp->norm = FT_NORM_RMS;
    hp->rope = FT_ROPE_NEOX;
    hp->rope_theta = 10000.0f;
    uint32_t n_blocks = 0, n_mtp = 0;
    ft_status_t st;
    if ((st = ft_q35_u32(src, K_BLOCKS, 1, 4096, &n_blocks)) ||
        (st = ft_q35_u32_opt(src, K_MTP, 0, 16, &n_mtp)) ||
        (st = ft_q35_u32(src, K_DMODEL, 1, 1u << 20, &hp->d_model)) ||
        (st = ft_q35_u32(src, K_CTX, 1, 1u << 30, &hp->context_length)) ||
        (st = ft_q35_float(src, K_EPS, 0.0, 1.0, 1, &hp->norm_eps)) ||
        (st = ft_q35_float(src, K_THETA, 1.0, 1e12, 0, &hp->rope_theta)))
        return st;
    if (n_mtp >= n_blocks)
        return ft_status_make(FT_STATUS_FORMAT, "%s: %u of %u blocks are MTP blocks", src->path,
                              n_mtp, n_blocks);
    hp->n_layers = n_blocks - n_mtp;
    hp->n_mtp_layers = n_mtp;
    ft_ir_attention_t *a = &p->full;
    a->kind = FT_ATTN_GQA;
    a->qk_norm = 1;
    a->has_out_gate = 1;
    if ((st = ft_q35_u32(src, K_HEADS, 1, 1u << 16, &a->n_heads))) return st;
    a->n_kv_heads = a->n_heads;
    a->head_dim = hp->d_model / a->n_heads;
    if ((st = ft_q35_u32_opt(src, K_KV_HEADS, 1, a->n_heads, &a->n_kv_heads)) ||
        (st = ft_q35_u32_opt(src, K_HEAD_DIM, 1, 1u << 16, &a->head_dim)))
        return st;
    a->value_head_dim = a->head_dim;
    hp->rope_dim = a->head_dim;
    if ((st = ft_q35_u32_opt(src, K_VALUE_DIM, 1, 1u << 16, &a->value_head_dim)) ||
        (st = ft_q35_u32_opt(src, K_ROPE_DIM, 2, a->head_dim, &hp->rope_dim)))
        return st;
    if (src->kind == FT_SRC_HF) { /* rotary dims = head_dim x partial_rotary_factor (0.25) */
        const ft_q35_keys_t k_prf = {NULL, "partial_rotary_factor"};
        float prf = 0.25f;
        if ((st = ft_q35_float(src, k_prf, 1e-6, 1.0, 0, &prf))) return st;
        hp->rope_dim = (uint32_t)((double)a->head_dim * (double)prf);
    }
    if (a->n_heads % a->n_kv_heads || hp->rope_dim % 2 || a->value_head_dim != a->head_dim)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: %u heads over %u KV heads, head size %u/%u, %u rotated dims "
                              "(whole groups, equal sizes, an even rotation)",
                              src->path, a->n_heads, a->n_kv_heads, a->head_dim, a->value_head_dim,
                              hp->rope_dim);
    if ((st = ft_q35_linear(src, next, &p->linear))) return st;
    if (p->linear.head_dim < hp->rope_dim)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: ssm.state_size %u below rope.dimension_count %u", src->path,
                              p->linear.head_dim, hp->rope_dim);
    p->interval = 4; /* llama.cpp's qwen3next ignores the key: every 4th block */
    if ((!next || src->kind == FT_SRC_HF) &&
        (st = ft_q35_u32_opt(src, K_INTERVAL, 1, 4096, &p->interval)))
        return st;
    ft_ir_moe_t *moe = &p->moe;
    moe->scoring = FT_ROUTER_SOFTMAX;
    moe->norm_topk_prob = 1; /* build_qwen35moe: norm_w true */
    moe->routed_scaling = 1.0f;
    moe->n_shared_experts = 1;
    moe->shared_gate = 1;
    if ((st = ft_q35_u32(src, K_EXPERTS, 1, 1u << 16, &moe->n_experts)) ||
        (st = ft_q35_u32(src, K_USED, 1, moe->n_experts, &moe->n_experts_used)) ||
        (st = ft_q35_u32(src, K_EXPERT_FFN, 1, 1u << 20, &moe->expert_ffn)) ||
        (st = ft_q35_float(src, K_SCALE, 0.0, 1e6, 0, &moe->routed_scaling)))
        return st;
    moe->shared_ffn = moe->expert_ffn;
    p->dense_ffn = 0;
    if ((st = ft_q35_u32_opt(src, K_FFN, 1, 1u << 22, &p->dense_ffn))) return st;
    if (p->dense_ffn) moe->shared_ffn = p->dense_ffn;
    if ((st = ft_q35_u32_opt(src, K_SHARED_FFN, 1, 1u << 22, &moe->shared_ffn))) return st;
    int norm_topk = 1;
    if (src->kind == FT_SRC_HF && ft_meta_get_bool(&src->meta, "norm_topk_prob", &norm_topk) &&
        !norm_topk)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: config.json: norm_topk_prob false (these families renormalise "
                              "the top-k weights)",
                              src->path);
    if (moe->routed_scaling == 0.0f) moe->routed_scaling = 1.0f;
    return FT_OK;
}

/* Whether the checkpoint holds layer l's tensor: GGUF blk.<l>.<gguf>, HF
 * model.layers.<l>.<hf>. */
static int ft_q35_has(const ft_src_model_t *src, uint32_t l, const char *gguf, const char *hf)
{
    char name[128];
    if (src->kind == FT_SRC_HF)
        snprintf(name, sizeof(name), "model.layers.%u.%s", l, hf);
    else
        snprintf(name, sizeof(name), "blk.%u.%s", l, gguf);
    return ft_src_find_tensor(src, name) != NULL;
}

/* Layer l's mixer: HF's layer_types list when the config has one, else
 * every interval-th layer full attention. 1: Gated DeltaNet. */
FT_WARN_UNUSED static ft_status_t ft_q35_linear_layer(const ft_src_model_t *src, uint32_t l,
                                                      uint32_t interval, int *out)
{
    *out = (l + 1) % interval != 0;
    if (src->kind != FT_SRC_HF) return FT_OK;
    char key[48];
    snprintf(key, sizeof(key), "layer_types.%u", l);
    const char *kind = ft_meta_get_string(&src->meta, key);
    if (!kind) return FT_OK;
    if (strcmp(kind, "linear_attention") == 0) *out = 1;
    else if (strcmp(kind, "full_attention") == 0) *out = 0;
    else
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: config.json: %s is '%s' (linear_attention or full_attention)",
                              src->path, key, kind);
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_q35_build(const ft_src_model_t *src, int next,
                                               ft_ir_model_t *m)
{
    ft_q35_protos_t p;
    memset(&p, 0, sizeof(p));
    ft_status_t st = ft_q35_hparams(src, next, m, &p);
    if (st) return st;
    m->blocks = ft_arena_array(m->arena, m->hp.n_layers, sizeof(ft_ir_block_t));
    if (!m->blocks) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", src->path);
    for (uint32_t l = 0; l < m->hp.n_layers; l++) {
        ft_ir_block_t *b = &m->blocks[l];
        memset(b, 0, sizeof(*b));
        int linear;
        if ((st = ft_q35_linear_layer(src, l, p.interval, &linear))) return st;
        b->attn = linear ? p.linear : p.full;
        b->is_moe = 1;
        b->moe = p.moe;
        b->act = FT_ACT_SILU;
        if (!next) continue;
        /* Qwen3-Next (llama.cpp's create_qwen3next_tensors): a block without
         * a router is a dense FFN of feed_forward_length; the shared expert
         * and its gate are there when their tensors are. */
        b->is_moe = ft_q35_has(src, l, "ffn_gate_inp.weight", "mlp.gate.weight");
        b->moe.n_shared_experts =
            ft_q35_has(src, l, "ffn_up_shexp.weight", "mlp.shared_expert.up_proj.weight");
        b->moe.shared_gate = b->moe.n_shared_experts &&
                             ft_q35_has(src, l, "ffn_gate_inp_shexp.weight",
                                        "mlp.shared_expert_gate.weight");
        if (!b->is_moe) {
            memset(&b->moe, 0, sizeof(b->moe));
            b->dense_ffn = p.dense_ffn;
            if (!b->dense_ffn)
                return ft_status_make(FT_STATUS_FORMAT,
                                      "%s: layer %u has no router and no feed_forward_length "
                                      "for a dense FFN",
                                      src->path, l);
        }
    }
    m->hp.tie_embeddings = ft_family_tied_embeddings(src);
    return ft_family_collect(src, m);
}

ft_status_t ft_qwen35moe_build(const ft_src_model_t *src, ft_ir_model_t *m)
{
    return ft_q35_build(src, 0, m);
}

ft_status_t ft_qwen3next_build(const ft_src_model_t *src, ft_ir_model_t *m)
{
    return ft_q35_build(src, 1, m);
}
