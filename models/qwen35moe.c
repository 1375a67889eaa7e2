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
 * What the converter already did and we take as stored: norm weights with
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

/* "<general.architecture>.<key>": the registry routes only qwen35moe and
 * qwen3next files here. */
static void ft_q35_key(const ft_src_model_t *src, const char *key, char *out, size_t cap)
{
    const char *arch = ft_meta_get_string(&src->meta, "general.architecture");
    snprintf(out, cap, "%s.%s", arch ? arch : "", key);
}

FT_WARN_UNUSED static ft_status_t ft_q35_u32(const ft_src_model_t *src, const char *key,
                                             uint32_t lo, uint32_t hi, uint32_t *out)
{
    char k[96];
    ft_q35_key(src, key, k, sizeof(k));
    return ft_meta_require_u32(&src->meta, src->path, k, lo, hi, out);
}

/* An optional count: *out keeps its default when the key is absent. */
FT_WARN_UNUSED static ft_status_t ft_q35_u32_opt(const ft_src_model_t *src, const char *key,
                                                 uint32_t lo, uint32_t hi, uint32_t *out)
{
    char k[96];
    ft_q35_key(src, key, k, sizeof(k));
    if (!ft_meta_find(&src->meta, k)) return FT_OK;
    return ft_meta_require_u32(&src->meta, src->path, k, lo, hi, out);
}

FT_WARN_UNUSED static ft_status_t ft_q35_float(const ft_src_model_t *src, const char *key,
                                               double lo, double hi, int required, float *out)
{
    char k[96];
    ft_q35_key(src, key, k, sizeof(k));
    double v;
    if (!ft_meta_get_f64(&src->meta, k, &v)) {
        if (!required) return FT_OK;
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: required number '%s' is missing or not a number", src->path, k);
    }
    if (!(v >= lo && v <= hi))
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: '%s' = %g is outside [%g, %g]",
                              src->path, k, v, lo, hi);
    *out = (float)v;
    return FT_OK;
}

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
    if ((st = ft_q35_u32(src, "ssm.conv_kernel", 2, 64, &a->conv_kernel)) ||
        (st = ft_q35_u32(src, "ssm.state_size", 1, 4096, &a->head_dim)) ||
        (st = ft_q35_u32(src, "ssm.time_step_rank", 1, 4096, &a->n_heads)) ||
        (st = ft_q35_u32(src, "ssm.group_count", 1, 4096, &a->n_kv_heads)) ||
        (st = ft_q35_u32(src, "ssm.inner_size", 1, 1u << 24, &inner)))
        return st;
    a->value_head_dim = a->head_dim; /* llama.cpp's loader: head_v_dim = state_size */
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
    if ((st = ft_q35_u32(src, "block_count", 1, 4096, &n_blocks)) ||
        (st = ft_q35_u32_opt(src, "nextn_predict_layers", 0, 16, &n_mtp)) ||
        (st = ft_q35_u32(src, "embedding_length", 1, 1u << 20, &hp->d_model)) ||
        (st = ft_q35_u32(src, "context_length", 1, 1u << 30, &hp->context_length)) ||
        (st = ft_q35_float(src, "attention.layer_norm_rms_epsilon", 0.0, 1.0, 1, &hp->norm_eps)) ||
        (st = ft_q35_float(src, "rope.freq_base", 1.0, 1e12, 0, &hp->rope_theta)))
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
    if ((st = ft_q35_u32(src, "attention.head_count", 1, 1u << 16, &a->n_heads))) return st;
    a->n_kv_heads = a->n_heads;
    a->head_dim = hp->d_model / a->n_heads;
    if ((st = ft_q35_u32_opt(src, "attention.head_count_kv", 1, a->n_heads, &a->n_kv_heads)) ||
        (st = ft_q35_u32_opt(src, "attention.key_length", 1, 1u << 16, &a->head_dim)))
        return st;
    a->value_head_dim = a->head_dim;
    hp->rope_dim = a->head_dim;
    if ((st = ft_q35_u32_opt(src, "attention.value_length", 1, 1u << 16, &a->value_head_dim)) ||
        (st = ft_q35_u32_opt(src, "rope.dimension_count", 2, a->head_dim, &hp->rope_dim)))
        return st;
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
    if (!next && (st = ft_q35_u32_opt(src, "full_attention_interval", 1, 4096, &p->interval)))
        return st;
    ft_ir_moe_t *moe = &p->moe;
    moe->scoring = FT_ROUTER_SOFTMAX;
    moe->norm_topk_prob = 1; /* build_qwen35moe: norm_w true */
    moe->routed_scaling = 1.0f;
    moe->n_shared_experts = 1;
    moe->shared_gate = 1;
    if ((st = ft_q35_u32(src, "expert_count", 1, 1u << 16, &moe->n_experts)) ||
        (st = ft_q35_u32(src, "expert_used_count", 1, moe->n_experts, &moe->n_experts_used)) ||
        (st = ft_q35_u32(src, "expert_feed_forward_length", 1, 1u << 20, &moe->expert_ffn)) ||
        (st = ft_q35_float(src, "expert_weights_scale", 0.0, 1e6, 0, &moe->routed_scaling)))
        return st;
    moe->shared_ffn = moe->expert_ffn;
    p->dense_ffn = 0;
    if ((st = ft_q35_u32_opt(src, "feed_forward_length", 1, 1u << 22, &p->dense_ffn))) return st;
    if (p->dense_ffn) moe->shared_ffn = p->dense_ffn;
    if ((st = ft_q35_u32_opt(src, "expert_shared_feed_forward_length", 1, 1u << 22,
                             &moe->shared_ffn)))
        return st;
    if (moe->routed_scaling == 0.0f) moe->routed_scaling = 1.0f;
    return FT_OK;
}

/* Whether the GGUF holds blk.<l>.<suffix>. */
static int ft_q35_has(const ft_src_model_t *src, uint32_t l, const char *suffix)
{
    char name[128];
    snprintf(name, sizeof(name), "blk.%u.%s", l, suffix);
    return ft_src_find_tensor(src, name) != NULL;
}

FT_WARN_UNUSED static ft_status_t ft_q35_build(const ft_src_model_t *src, int next,
                                               ft_ir_model_t *m)
{
    if (src->kind != FT_SRC_GGUF)
        return ft_status_make(
            FT_STATUS_UNSUPPORTED,
            "%s: %s is imported from GGUF only (the HF checkpoint's A_log, norms and "
            "head order need the converter's rewriting)",
            src->path, next ? "Qwen3-Next" : "Qwen3.5/3.6 MoE");
    ft_q35_protos_t p;
    memset(&p, 0, sizeof(p));
    ft_status_t st = ft_q35_hparams(src, next, m, &p);
    if (st) return st;
    m->blocks = ft_arena_array(m->arena, m->hp.n_layers, sizeof(ft_ir_block_t));
    if (!m->blocks) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", src->path);
    for (uint32_t l = 0; l < m->hp.n_layers; l++) {
        ft_ir_block_t *b = &m->blocks[l];
        memset(b, 0, sizeof(*b));
        b->attn = (l + 1) % p.interval != 0 ? p.linear : p.full;
        b->is_moe = 1;
        b->moe = p.moe;
        b->act = FT_ACT_SILU;
        if (!next) continue;
        /* Qwen3-Next (llama.cpp's create_qwen3next_tensors): a block without
         * a router is a dense FFN of feed_forward_length; the shared expert
         * and its gate are there when their tensors are. */
        b->is_moe = ft_q35_has(src, l, "ffn_gate_inp.weight");
        b->moe.n_shared_experts = ft_q35_has(src, l, "ffn_up_shexp.weight");
        b->moe.shared_gate =
            b->moe.n_shared_experts && ft_q35_has(src, l, "ffn_gate_inp_shexp.weight");
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
