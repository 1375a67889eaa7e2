#include "model_names.h"
#include "model_names_internal.h"

#include "../runtime/base/checked.h"

#include <inttypes.h>

#define FT_PLAN_SPLIT_MAX_GROUPS 1024u /* key heads of a fused Qwen3-Next projection */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GGUF suffix and HF suffix for each per-layer role. HF expert names carry
 * a %u for the expert index. */
typedef struct ft_role_names {
    ft_tensor_role_t role;
    const char *gguf;
    const char *hf;
} ft_role_names_t;

static const ft_role_names_t ft_layer_roles[] = {
    {FT_ROLE_ATTN_NORM, "attn_norm", "input_layernorm"},
    {FT_ROLE_ATTN_Q, "attn_q", "self_attn.q_proj"},
    {FT_ROLE_ATTN_K, "attn_k", "self_attn.k_proj"},
    {FT_ROLE_ATTN_V, "attn_v", "self_attn.v_proj"},
    {FT_ROLE_ATTN_O, "attn_output", "self_attn.o_proj"},
    {FT_ROLE_ATTN_Q_NORM, "attn_q_norm", "self_attn.q_norm"},
    {FT_ROLE_ATTN_K_NORM, "attn_k_norm", "self_attn.k_norm"},
    {FT_ROLE_FFN_NORM, "ffn_norm", "post_attention_layernorm"},
    {FT_ROLE_FFN_ROUTER, "ffn_gate_inp", "mlp.gate"},
    {FT_ROLE_FFN_GATE_EXPS, "ffn_gate_exps", "mlp.experts.%u.gate_proj"},
    {FT_ROLE_FFN_UP_EXPS, "ffn_up_exps", "mlp.experts.%u.up_proj"},
    {FT_ROLE_FFN_DOWN_EXPS, "ffn_down_exps", "mlp.experts.%u.down_proj"},
    {FT_ROLE_FFN_GATE, "ffn_gate", "mlp.gate_proj"},
    {FT_ROLE_FFN_UP, "ffn_up", "mlp.up_proj"},
    {FT_ROLE_FFN_DOWN, "ffn_down", "mlp.down_proj"},
    {FT_ROLE_FFN_GATE_SHEXP, "ffn_gate_shexp", "mlp.shared_experts.gate_proj"},
    {FT_ROLE_FFN_UP_SHEXP, "ffn_up_shexp", "mlp.shared_experts.up_proj"},
    {FT_ROLE_FFN_DOWN_SHEXP, "ffn_down_shexp", "mlp.shared_experts.down_proj"},
    /* Gated DeltaNet blocks (GGUF qwen35moe; HF's A_log would need the
     * converter's -exp, which a byte range cannot express: GGUF only) */
    {FT_ROLE_SSM_QKV, "attn_qkv", NULL},
    {FT_ROLE_ATTN_GATE, "attn_gate", NULL},
    {FT_ROLE_SSM_CONV, "ssm_conv1d", NULL},
    {FT_ROLE_SSM_BETA, "ssm_beta", NULL},
    {FT_ROLE_SSM_ALPHA, "ssm_alpha", NULL},
    {FT_ROLE_SSM_NORM, "ssm_norm", NULL},
    {FT_ROLE_SSM_OUT, "ssm_out", NULL},
    {FT_ROLE_FFN_GATE_INP_SHEXP, "ffn_gate_inp_shexp", NULL},
};

/* Optional per-layer biases of the attention projections (Qwen2's q/k/v,
 * gpt-oss's four), as "<name>.bias" beside the weight: taken when present,
 * and a block with any has attn.has_bias. */
static const ft_role_names_t ft_bias_roles[] = {
    {FT_ROLE_ATTN_Q_BIAS, "attn_q", "self_attn.q_proj"},
    {FT_ROLE_ATTN_K_BIAS, "attn_k", "self_attn.k_proj"},
    {FT_ROLE_ATTN_V_BIAS, "attn_v", "self_attn.v_proj"},
    {FT_ROLE_ATTN_O_BIAS, "attn_output", "self_attn.o_proj"},
    /* gpt-oss's router and expert biases (GGUF; HF keeps the experts'
     * fused, see gptoss.c) */
    {FT_ROLE_FFN_ROUTER_BIAS, "ffn_gate_inp", "mlp.router"},
    {FT_ROLE_FFN_GATE_EXPS_BIAS, "ffn_gate_exps", NULL},
    {FT_ROLE_FFN_UP_EXPS_BIAS, "ffn_up_exps", NULL},
    {FT_ROLE_FFN_DOWN_EXPS_BIAS, "ffn_down_exps", NULL},
};

/* The GGUF name of a per-layer role where an architecture's converter
 * writes another than the canonical one (gpt-oss, glm4moe:
 * post_attention_norm). */
static const char *ft_role_gguf_src_name(const ft_ir_model_t *m, const ft_role_names_t *rn)
{
    if ((m->hp.arch == FT_ARCH_GPT_OSS || m->hp.arch == FT_ARCH_GLM4MOE ||
         m->hp.arch == FT_ARCH_QWEN35MOE || m->hp.arch == FT_ARCH_QWEN3NEXT) &&
        rn->role == FT_ROLE_FFN_NORM)
        return "post_attention_norm";
    return rn->gguf;
}

/* Mixtral's HF MoE block (MixtralSparseMoeBlock) under its own names:
 * w1 is the gate projection, w3 the up, w2 the down. */
static const ft_role_names_t ft_mixtral_hf_roles[] = {
    {FT_ROLE_FFN_ROUTER, "ffn_gate_inp", "block_sparse_moe.gate"},
    {FT_ROLE_FFN_GATE_EXPS, "ffn_gate_exps", "block_sparse_moe.experts.%u.w1"},
    {FT_ROLE_FFN_UP_EXPS, "ffn_up_exps", "block_sparse_moe.experts.%u.w3"},
    {FT_ROLE_FFN_DOWN_EXPS, "ffn_down_exps", "block_sparse_moe.experts.%u.w2"},
};

/* Qwen3.5/3.6 and Qwen3-Next's HF shared expert (Qwen2MoeSparseMoeBlock's
 * names: one shared_expert, its sigmoid gate a [1, d] linear). */
static const ft_role_names_t ft_q35_hf_roles[] = {
    {FT_ROLE_FFN_GATE_SHEXP, "ffn_gate_shexp", "mlp.shared_expert.gate_proj"},
    {FT_ROLE_FFN_UP_SHEXP, "ffn_up_shexp", "mlp.shared_expert.up_proj"},
    {FT_ROLE_FFN_DOWN_SHEXP, "ffn_down_shexp", "mlp.shared_expert.down_proj"},
    {FT_ROLE_FFN_GATE_INP_SHEXP, "ffn_gate_inp_shexp", "mlp.shared_expert_gate"},
};

/* The HF name of a per-layer role in this architecture. */
static const char *ft_role_hf_name(const ft_ir_model_t *m, const ft_role_names_t *rn)
{
    if (m->hp.arch == FT_ARCH_GPT_OSS && rn->role == FT_ROLE_FFN_ROUTER)
        return "mlp.router"; /* GptOssTopKRouter */
    if (m->hp.arch == FT_ARCH_QWEN35MOE || m->hp.arch == FT_ARCH_QWEN3NEXT)
        for (size_t i = 0; i < sizeof(ft_q35_hf_roles) / sizeof(ft_q35_hf_roles[0]); i++)
            if (ft_q35_hf_roles[i].role == rn->role)
                return ft_q35_hf_roles[i].hf;
    if (m->hp.arch == FT_ARCH_MIXTRAL || m->hp.arch == FT_ARCH_MINIMAX_M2) /* MiniMax-M2 names its MoE block as Mixtral does */
        for (size_t i = 0; i < sizeof(ft_mixtral_hf_roles) / sizeof(ft_mixtral_hf_roles[0]); i++)
            if (ft_mixtral_hf_roles[i].role == rn->role)
                return ft_mixtral_hf_roles[i].hf;
    return rn->hf;
}

/* The GGUF (and canonical) name of a per-layer role in this architecture:
 * llama.cpp's glm4moe calls the FFN norm post_attention_norm. */
static const char *ft_role_gguf_name(const ft_ir_model_t *m, const ft_role_names_t *rn)
{
    if (m->hp.arch == FT_ARCH_GLM4MOE && rn->role == FT_ROLE_FFN_NORM)
        return "post_attention_norm";
    return rn->gguf;
}

static const ft_role_names_t ft_global_roles[] = {
    {FT_ROLE_TOKEN_EMBD, "token_embd", "model.embed_tokens"},
    {FT_ROLE_OUTPUT_NORM, "output_norm", "model.norm"},
    {FT_ROLE_OUTPUT, "output", "lm_head"},
};

static uint64_t ft_name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

FT_WARN_UNUSED static ft_status_t ft_name_index_build(ft_name_index_t *ix, const ft_src_model_t *src)
{
    memset(ix, 0, sizeof(*ix));
    ix->src = src;
    uint32_t cap = 16;
    while (cap < 2ull * src->n_tensors && cap < (1u << 30))
        cap <<= 1;
    ix->cap = cap;
    ix->slots = malloc((size_t)cap * sizeof(*ix->slots));
    ix->used = calloc(src->n_tensors ? src->n_tensors : 1, 1);
    if (!ix->slots || !ix->used)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory indexing tensors", src->path);
    for (uint32_t i = 0; i < cap; i++)
        ix->slots[i] = -1;
    for (uint32_t t = 0; t < src->n_tensors; t++) {
        uint32_t h = (uint32_t)ft_name_hash(src->tensors[t].name) & (cap - 1);
        while (ix->slots[h] >= 0) {
            if (strcmp(src->tensors[ix->slots[h]].name, src->tensors[t].name) == 0)
                return ft_status_make(FT_STATUS_FORMAT, "%s: tensor '%s' appears twice", src->path,
                                      src->tensors[t].name);
            h = (h + 1) & (cap - 1);
        }
        ix->slots[h] = t;
    }
    return FT_OK;
}

static void ft_name_index_free(ft_name_index_t *ix)
{
    free(ix->slots);
    free(ix->used);
}

/* Finds and claims a tensor; NULL when absent. */
const ft_src_tensor_t *ft_name_take(ft_name_index_t *ix, const char *name)
{
    uint32_t h = (uint32_t)ft_name_hash(name) & (ix->cap - 1);
    while (ix->slots[h] >= 0) {
        int64_t t = ix->slots[h];
        if (strcmp(ix->src->tensors[t].name, name) == 0) {
            ix->used[t] = 1;
            return &ix->src->tensors[t];
        }
        h = (h + 1) & (ix->cap - 1);
    }
    return NULL;
}

static int ft_role_is_expert(ft_tensor_role_t r)
{
    return r == FT_ROLE_FFN_GATE_EXPS || r == FT_ROLE_FFN_UP_EXPS || r == FT_ROLE_FFN_DOWN_EXPS;
}

/* Does block b use this role? */
static int ft_role_wanted(const ft_ir_block_t *b, ft_tensor_role_t r)
{
    const int dn = b->attn.kind == FT_ATTN_GATED_DELTANET, mla = b->attn.kind == FT_ATTN_MLA;
    switch (r) {
    case FT_ROLE_ATTN_Q:
    case FT_ROLE_ATTN_K:
    case FT_ROLE_ATTN_V:
        return !dn && !mla; /* MLA: ft_take_mla */
    case FT_ROLE_ATTN_O:
        return !dn;
    case FT_ROLE_ATTN_Q_NORM:
    case FT_ROLE_ATTN_K_NORM:
        return !dn && !mla && b->attn.qk_norm;
    case FT_ROLE_SSM_QKV:
    case FT_ROLE_ATTN_GATE: /* in this table: z; a full-attention gate is split from attn_q */
    case FT_ROLE_SSM_CONV:
    case FT_ROLE_SSM_BETA:
    case FT_ROLE_SSM_ALPHA:
    case FT_ROLE_SSM_NORM:
    case FT_ROLE_SSM_OUT:
        return dn;
    case FT_ROLE_FFN_GATE_INP_SHEXP:
        return b->is_moe && b->moe.shared_gate;
    case FT_ROLE_FFN_ROUTER:
    case FT_ROLE_FFN_GATE_EXPS:
    case FT_ROLE_FFN_UP_EXPS:
    case FT_ROLE_FFN_DOWN_EXPS: return b->is_moe;
    case FT_ROLE_FFN_GATE:
    case FT_ROLE_FFN_UP:
    case FT_ROLE_FFN_DOWN: return !b->is_moe;
    case FT_ROLE_FFN_GATE_SHEXP:
    case FT_ROLE_FFN_UP_SHEXP:
    case FT_ROLE_FFN_DOWN_SHEXP: return b->is_moe && b->moe.n_shared_experts;
    default: return 1;
    }
}

FT_WARN_UNUSED ft_status_t ft_ir_add_tensor(ft_ir_model_t *m, const char *name, ft_tensor_role_t role,
                                    int32_t layer, ft_ir_tensor_t **out)
{
    ft_ir_tensor_t *t = &m->tensors[m->n_tensors++];
    t->name = ft_arena_strdup(m->arena, name);
    t->role = role;
    t->layer = layer;
    *out = t;
    return t->name ? FT_OK : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
}

/* "[a, b, ...]" of a source tensor's shape into buf. */
static const char *ft_shape_str(const ft_src_tensor_t *s, char *buf, size_t cap)
{
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (uint32_t d = 0; d < s->n_dims && k < cap; d++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%" PRIu64, d ? ", " : "", s->shape[d]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
    return buf;
}

/* The scales of a scaled FP8 matrix (ir.h, ft_ir_scale_kind_t): for the HF
 * tensor "X.weight", "X.weight_scale_inv" (DeepSeek, a float per 128 x 128
 * tile) or "X.weight_scale" (compressed-tensors, per row [rows, 1] or per
 * tensor [] / [1] / [1, 1]), F32, BF16 or F16. Claimed when found; *kind
 * NONE when neither exists. A scale of another shape or type, both kinds
 * at once, or a scale beside a weight that is not a 2-D F8_E4M3 matrix is
 * an error naming the tensors. */
FT_WARN_UNUSED static ft_status_t ft_take_fp8_scale(ft_name_index_t *ix, const ft_src_tensor_t *w,
                                                    const char *wname, ft_ir_scale_kind_t *kind,
                                                    ft_dtype_t *sdt, ft_ir_piece_t *piece,
                                                    const char **sname)
{
    const char *path = ix->src->path;
    char inv_name[300], sc_name[300];
    *kind = FT_IR_SCALE_NONE;
    if (ix->src->kind != FT_SRC_HF) return FT_OK;
    snprintf(inv_name, sizeof(inv_name), "%s_scale_inv", wname);
    snprintf(sc_name, sizeof(sc_name), "%s_scale", wname);
    const ft_src_tensor_t *inv = ft_name_take(ix, inv_name), *sc = ft_name_take(ix, sc_name);
    if (!inv && !sc) return FT_OK;
    if (inv && sc)
        return ft_status_make(FT_STATUS_FORMAT, "%s: tensor '%s' has both '%s' and '%s'", path,
                              wname, inv_name, sc_name);
    const ft_src_tensor_t *s = inv ? inv : sc;
    if (sc && w->dtype == FT_DTYPE_U8 && sc->dtype == FT_DTYPE_F8_E4M3) {
        /* NVIDIA ModelOpt NVFP4: packed E2M1 + E4M3 scales per 16 + an F32
         * "weight_scale_2" per tensor. The runtime's NVFP4 (ggml's block)
         * has no per-tensor scale to put it in, and widening is refused. */
        char s2_name[310];
        snprintf(s2_name, sizeof(s2_name), "%s_scale_2", wname);
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: tensor '%s' is an NVIDIA ModelOpt NVFP4 matrix (U8 packed E2M1, "
                              "F8_E4M3 '%s' per 16 elements, per-tensor '%s'%s): not supported yet: "
                              "freetoken's NVFP4 blocks carry no per-tensor second scale, and it "
                              "does not widen 4-bit checkpoints",
                              path, wname, sc_name, s2_name,
                              ft_src_find_tensor(ix->src, s2_name) ? "" : ", missing here");
    }
    if (w->dtype != FT_DTYPE_F8_E4M3 || w->n_dims != 2)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: tensor '%s' has FP8 scales '%s', but it is %s with %u "
                              "dimensions, not a 2-D F8_E4M3 matrix",
                              path, wname, s->name, ft_dtype_name(w->dtype), w->n_dims);
    if (s->dtype != FT_DTYPE_F32 && s->dtype != FT_DTYPE_BF16 && s->dtype != FT_DTYPE_F16)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: FP8 scale tensor '%s' is %s (expected F32, BF16 or F16)", path,
                              s->name, ft_dtype_name(s->dtype));
    const uint64_t rows = w->shape[0], cols = w->shape[1];
    char shp[96];
    uint64_t n = 1;
    for (uint32_t d = 0; d < s->n_dims; d++)
        n *= s->shape[d] ? s->shape[d] : 1;
    if (inv) {
        if (s->n_dims != 2 || s->shape[0] != (rows + 127) / 128 || s->shape[1] != (cols + 127) / 128)
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: FP8 scale tensor '%s' has shape %s, expected [%" PRIu64
                                  ", %" PRIu64 "] (one per 128 x 128 tile of '%s' [%" PRIu64
                                  ", %" PRIu64 "])",
                                  path, s->name, ft_shape_str(s, shp, sizeof(shp)),
                                  (rows + 127) / 128, (cols + 127) / 128, wname, rows, cols);
        *kind = FT_IR_SCALE_TILE128;
    } else if (s->n_dims == 2 && s->shape[0] == rows && s->shape[1] == 1 && rows > 1) {
        *kind = FT_IR_SCALE_ROW;
    } else if (s->n_dims <= 2 && n == 1 && (s->n_dims == 0 || s->shape[0] == 1)) {
        *kind = FT_IR_SCALE_TENSOR;
    } else {
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: FP8 scale tensor '%s' has shape %s; expected [%" PRIu64
                              ", 1] (per row of '%s') or one value (per tensor)",
                              path, s->name, ft_shape_str(s, shp, sizeof(shp)), rows, wname);
    }
    *sdt = s->dtype;
    *piece = (ft_ir_piece_t){s->file, s->offset, s->n_bytes};
    *sname = s->name;
    return FT_OK;
}

/* A single source tensor -> IR tensor with one piece. */
FT_WARN_UNUSED ft_status_t ft_take_plain(ft_name_index_t *ix, ft_ir_model_t *m, const char *src_name,
                                 const char *ir_name, ft_tensor_role_t role, int32_t layer, int *found)
{
    const ft_src_tensor_t *s = ft_name_take(ix, src_name);
    *found = s != NULL;
    if (!s)
        return FT_OK;
    ft_ir_tensor_t *t;
    ft_status_t st = ft_ir_add_tensor(m, ir_name, role, layer, &t);
    if (st)
        return st;
    t->dtype = s->dtype;
    t->n_dims = s->n_dims;
    memcpy(t->shape, s->shape, sizeof(t->shape));
    t->n_pieces = 1;
    t->pieces = ft_arena_alloc(m->arena, sizeof(ft_ir_piece_t));
    if (!t->pieces)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    t->pieces[0] = (ft_ir_piece_t){s->file, s->offset, s->n_bytes};
    ft_ir_piece_t sp;
    if ((st = ft_take_fp8_scale(ix, s, src_name, &t->scale_kind, &t->scale_dtype, &sp,
                                &t->scale_name)))
        return st;
    if (t->scale_kind != FT_IR_SCALE_NONE) {
        if (!(t->scale_pieces = ft_arena_alloc(m->arena, sizeof(ft_ir_piece_t))))
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
        t->scale_pieces[0] = sp;
    }
    return FT_OK;
}

/* Per-expert 2-D matrices -> one [n_experts, rows, cols] stack: HF's
 * "model.layers.L.<fmt % E>.weight", or with gguf_split set the split
 * experts older llama GGUF files (Mixtral) carry, "blk.L.<fmt>.E.weight",
 * which llama.cpp still loads as views of the merged stack. */
FT_WARN_UNUSED static ft_status_t ft_take_expert_stack(ft_name_index_t *ix, ft_ir_model_t *m, const char *fmt,
                                        int gguf_split, uint32_t layer, uint32_t n_experts,
                                        const char *ir_name, ft_tensor_role_t role, int *found)
{
    const ft_src_model_t *src = ix->src;
    char name[256];
    *found = 0;
    ft_ir_piece_t *pieces = ft_arena_array(m->arena, n_experts, sizeof(ft_ir_piece_t));
    ft_ir_piece_t *scales = ft_arena_array(m->arena, n_experts, sizeof(ft_ir_piece_t));
    if (!pieces || !scales)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    const ft_src_tensor_t *first = NULL;
    ft_ir_scale_kind_t kind0 = FT_IR_SCALE_NONE;
    ft_dtype_t sdt0 = FT_DTYPE_INVALID;
    const char *sname0 = NULL;
    for (uint32_t e = 0; e < n_experts; e++) {
        char suffix[128];
        if (gguf_split) {
            snprintf(name, sizeof(name), "blk.%u.%s.%u.weight", layer, fmt, e);
        } else {
            snprintf(suffix, sizeof(suffix), fmt, e);
            snprintf(name, sizeof(name), "model.layers.%u.%s.weight", layer, suffix);
        }
        const ft_src_tensor_t *s = ft_name_take(ix, name);
        if (!s) {
            if (e == 0)
                return FT_OK; /* the whole stack is absent: the caller reports it */
            return ft_status_make(FT_STATUS_FORMAT, "%s: missing tensor '%s' (expert %u of %u)",
                                  src->path, name, e, n_experts);
        }
        if (!first) {
            first = s;
            if (s->n_dims != 2)
                return ft_status_make(FT_STATUS_FORMAT, "%s: expert tensor '%s' has %u dimensions, not 2",
                                      src->path, name, s->n_dims);
        } else if (s->dtype != first->dtype || s->n_dims != 2 || s->shape[0] != first->shape[0] ||
                   s->shape[1] != first->shape[1]) {
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: expert tensor '%s' differs in format or shape from expert 0",
                                  src->path, name);
        }
        pieces[e] = (ft_ir_piece_t){s->file, s->offset, s->n_bytes};
        ft_ir_scale_kind_t kind;
        ft_dtype_t sdt = FT_DTYPE_INVALID;
        const char *sname = NULL;
        ft_status_t sst = ft_take_fp8_scale(ix, s, name, &kind, &sdt, &scales[e], &sname);
        if (sst) return sst;
        if (e == 0) {
            kind0 = kind;
            sdt0 = sdt;
            sname0 = sname;
        } else if (kind != kind0 || sdt != sdt0) {
            if (kind == FT_IR_SCALE_NONE)
                return ft_status_make(FT_STATUS_FORMAT,
                                      "%s: expert tensor '%s' lacks the FP8 scale tensor expert 0 "
                                      "has ('%s'): missing scale tensor",
                                      src->path, name, sname0);
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: expert tensor '%s' has FP8 scales ('%s') %s", src->path,
                                  name, sname,
                                  kind0 == FT_IR_SCALE_NONE
                                      ? "while expert 0 has none"
                                      : "of another layout or type than expert 0's");
        }
    }
    ft_ir_tensor_t *t;
    ft_status_t st = ft_ir_add_tensor(m, ir_name, role, (int32_t)layer, &t);
    if (st)
        return st;
    t->dtype = first->dtype;
    t->n_dims = 3;
    t->shape[0] = n_experts;
    t->shape[1] = first->shape[0];
    t->shape[2] = first->shape[1];
    t->n_pieces = n_experts;
    t->pieces = pieces;
    t->scale_kind = kind0;
    t->scale_dtype = sdt0;
    t->scale_name = sname0;
    t->scale_pieces = kind0 != FT_IR_SCALE_NONE ? scales : NULL;
    *found = 1;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_copy_tokenizer(const ft_src_model_t *src, ft_ir_model_t *m)
{
    const ft_ir_tokenizer_t *s = &src->tok;
    ft_ir_tokenizer_t *d = &m->tok;
    *d = *s;
    d->model = s->model ? ft_arena_strdup(m->arena, s->model) : NULL;
    d->pre = s->pre ? ft_arena_strdup(m->arena, s->pre) : NULL;
    d->chat_template = s->chat_template ? ft_arena_strdup(m->arena, s->chat_template) : NULL;
    const char **tokens = ft_arena_array(m->arena, s->n_tokens, sizeof(char *));
    uint32_t *lens = ft_arena_array(m->arena, s->n_tokens, sizeof(uint32_t));
    uint8_t *types = ft_arena_array(m->arena, s->n_tokens, 1);
    const char **merges = ft_arena_array(m->arena, s->n_merges, sizeof(char *));
    if (!tokens || !lens || !types || !merges)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory copying the tokenizer", src->path);
    for (uint32_t i = 0; i < s->n_tokens; i++) {
        tokens[i] = ft_arena_strndup(m->arena, s->tokens[i], s->token_lens[i]);
        if (!tokens[i])
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", src->path);
    }
    if (s->n_tokens) {
        memcpy(lens, s->token_lens, (size_t)s->n_tokens * sizeof(uint32_t));
        memcpy(types, s->token_types, s->n_tokens);
    }
    for (uint32_t i = 0; i < s->n_merges; i++)
        if (!(merges[i] = ft_arena_strdup(m->arena, s->merges[i])))
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", src->path);
    d->tokens = tokens;
    d->token_lens = lens;
    d->token_types = types;
    d->merges = merges;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_copy_files(const ft_src_model_t *src, ft_ir_model_t *m)
{
    m->source_format = src->kind == FT_SRC_GGUF ? "gguf" : "safetensors";
    const char *base = strrchr(src->path, '/');
    size_t len = strlen(src->path);
    while (base && base[1] == '\0' && base > src->path) { /* "dir/" */
        len = (size_t)(base - src->path);
        const char *prev = base - 1;
        while (prev > src->path && *prev != '/')
            prev--;
        base = *prev == '/' ? prev : NULL;
    }
    const char *start = base ? base + 1 : src->path;
    m->source_name = ft_arena_strndup(m->arena, start, len - (size_t)(start - src->path));
    m->files = ft_arena_array(m->arena, src->n_files, sizeof(ft_src_file_t));
    if (!m->files || !m->source_name)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", src->path);
    m->n_files = src->n_files;
    for (uint32_t i = 0; i < src->n_files; i++) {
        m->files[i].size = src->files[i].size;
        if (!(m->files[i].path = ft_arena_strdup(m->arena, src->files[i].path)))
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", src->path);
    }
    return FT_OK;
}

/* Block l's router selection bias (GGUF blk.L.exp_probs_b.bias, HF
 * mlp.gate.e_score_correction_bias), when the block has one. */
FT_WARN_UNUSED static ft_status_t ft_take_sel_bias(ft_name_index_t *ix, const ft_src_model_t *src, ft_ir_model_t *m,
                                                   uint32_t l)
{
    if (!m->blocks[l].is_moe || !m->blocks[l].moe.has_sel_bias)
        return FT_OK;
    char sname[256], iname[256];
    snprintf(iname, sizeof(iname), "blk.%u.exp_probs_b.bias", l);
    if (src->kind == FT_SRC_HF)
        snprintf(sname, sizeof(sname),
                 m->hp.arch == FT_ARCH_MINIMAX_M2 ? "model.layers.%u.block_sparse_moe.e_score_correction_bias"
                                                 : "model.layers.%u.mlp.gate.e_score_correction_bias",
                 l);
    else
        snprintf(sname, sizeof(sname), "%s", iname);
    int found;
    ft_status_t st = ft_take_plain(ix, m, sname, iname, FT_ROLE_FFN_EXP_PROBS_B, (int32_t)l, &found);
    if (!st && !found)
        st = ft_status_make(FT_STATUS_FORMAT, "%s: missing tensor '%s' (the router's selection bias)", src->path,
                            sname);
    return st;
}

/* Qwen3.5/3.6's full-attention q projection holds each head's query rows
 * followed by its output gate's ([q_h | gate_h] per head, llama.cpp's
 * attn_q {d, 2 * H * hd}): split into ATTN_Q and ATTN_GATE, each a piece
 * per head of the same bytes. */
FT_WARN_UNUSED static ft_status_t ft_take_q_gate(ft_name_index_t *ix, const ft_src_model_t *src,
                                                 ft_ir_model_t *m, uint32_t l)
{
    const ft_ir_attention_t *a = &m->blocks[l].attn;
    char name[256];
    if (src->kind == FT_SRC_HF) /* Qwen3_5MoeAttention's q_proj: the same [q_h | gate_h] rows */
        snprintf(name, sizeof(name), "model.layers.%u.self_attn.q_proj.weight", l);
    else
        snprintf(name, sizeof(name), "blk.%u.attn_q.weight", l);
    const ft_src_tensor_t *s = ft_name_take(ix, name);
    if (!s) return ft_status_make(FT_STATUS_FORMAT, "%s: missing tensor '%s'", src->path, name);
    const uint64_t hd = a->head_dim, H = a->n_heads;
    uint64_t row_bytes;
    if (s->n_dims != 2 || s->shape[0] != 2 * H * hd ||
        !ft_dtype_row_bytes(s->dtype, s->shape[1], &row_bytes) ||
        s->n_bytes != s->shape[0] * row_bytes)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: tensor '%s' is not the [%" PRIu64 ", d_model] of %" PRIu64
                              " heads' query and gate rows",
                              src->path, name, 2 * H * hd, H);
    static const ft_tensor_role_t roles[2] = {FT_ROLE_ATTN_Q, FT_ROLE_ATTN_GATE};
    static const char *const names[2] = {"attn_q", "attn_gate"};
    for (int j = 0; j < 2; j++) {
        ft_ir_tensor_t *t;
        char iname[256];
        snprintf(iname, sizeof(iname), "blk.%u.%s.weight", l, names[j]);
        ft_status_t st = ft_ir_add_tensor(m, iname, roles[j], (int32_t)l, &t);
        if (st) return st;
        t->dtype = s->dtype;
        t->n_dims = 2;
        t->shape[0] = H * hd;
        t->shape[1] = s->shape[1];
        t->n_pieces = (uint32_t)H;
        t->pieces = ft_arena_array(m->arena, H, sizeof(ft_ir_piece_t));
        if (!t->pieces) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
        for (uint64_t h = 0; h < H;
             h++) /* head h: rows [2h hd, +hd) query, [(2h+1) hd, +hd) gate */
            t->pieces[h] = (ft_ir_piece_t){
                s->file, s->offset + (2 * h + (uint64_t)j) * hd * row_bytes, hd * row_bytes};
    }
    return FT_OK;
}

/* An IR tensor of `role` made of row ranges of source tensor s: n_ranges
 * ranges, range i rows [first[i], first[i] + count), in order. */
FT_WARN_UNUSED ft_status_t ft_take_rows(ft_ir_model_t *m, const ft_src_tensor_t *s,
                                               uint64_t row_bytes, const char *iname,
                                               ft_tensor_role_t role, uint32_t l, uint32_t n_ranges,
                                               const uint64_t *first, uint64_t count)
{
    ft_ir_tensor_t *t;
    ft_status_t st = ft_ir_add_tensor(m, iname, role, (int32_t)l, &t);
    if (st) return st;
    t->dtype = s->dtype;
    t->n_dims = 2;
    t->shape[0] = n_ranges * count;
    t->shape[1] = s->shape[1];
    t->n_pieces = n_ranges;
    t->pieces = ft_arena_array(m->arena, n_ranges, sizeof(ft_ir_piece_t));
    if (!t->pieces) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    for (uint32_t i = 0; i < n_ranges; i++)
        t->pieces[i] =
            (ft_ir_piece_t){s->file, s->offset + first[i] * row_bytes, count * row_bytes};
    return FT_OK;
}

/* Qwen3-Next's fused projections (llama.cpp's build_qkvz / build_beta_gate),
 * per key head g of Hk, with R = Hv / Hk value heads each:
 *   ssm_in [Hk * (2 hd + 2 R hd), d]: q_g (hd) | k_g (hd) | v_g (R hd) | z_g (R hd)
 *   ssm_ba [2 Hv, d]:                 b_g (R) | a_g (R)
 * into SSM_QKV (every q_g, every k_g, every v_g: the conv's channels),
 * ATTN_GATE (every z_g), SSM_BETA and SSM_ALPHA, each range a piece of the
 * same bytes. ssm_in is optional (attn_qkv + attn_gate instead: *out_fused_in
 * 0), ssm_ba required. */
FT_WARN_UNUSED ft_status_t ft_take_ssm_fused(ft_name_index_t *ix, const ft_src_model_t *src,
                                             ft_ir_model_t *m, uint32_t l, const char *in_name,
                                             const char *ba_name, int *out_fused_in)
{
    const ft_ir_attention_t *a = &m->blocks[l].attn;
    const uint64_t hd = a->head_dim, Hk = a->n_kv_heads, R = a->n_heads / a->n_kv_heads;
    const uint64_t G = 2 * hd + 2 * R * hd; /* one key head's rows of ssm_in */
    uint64_t first[3 * FT_PLAN_SPLIT_MAX_GROUPS];
    char name[256], iname[256];
    uint64_t row_bytes;
    *out_fused_in = 0;
    if (Hk > FT_PLAN_SPLIT_MAX_GROUPS)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: layer %u: %llu key heads (at most %u)",
                              src->path, l, (unsigned long long)Hk, FT_PLAN_SPLIT_MAX_GROUPS);
    snprintf(name, sizeof(name), "%s", in_name);
    const ft_src_tensor_t *in = ft_name_take(ix, name);
    ft_status_t st;
    if (in) {
        if (in->n_dims != 2 || in->shape[0] != Hk * G ||
            !ft_dtype_row_bytes(in->dtype, in->shape[1], &row_bytes) ||
            in->n_bytes != in->shape[0] * row_bytes)
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: tensor '%s' is not [%llu, d_model]: q | k | v | z of %llu "
                                  "key heads",
                                  src->path, name, (unsigned long long)(Hk * G),
                                  (unsigned long long)Hk);
        for (uint64_t g = 0; g < Hk; g++) {
            first[g] = g * G;                   /* q_g */
            first[Hk + g] = g * G + hd;         /* k_g */
            first[2 * Hk + g] = g * G + 2 * hd; /* v_g: R heads */
        }
        snprintf(iname, sizeof(iname), "blk.%u.attn_qkv.weight", l);
        /* q and k ranges are hd rows, v ranges R hd: two tensors' worth of
         * ranges of different lengths, so SSM_QKV is built in two steps. */
        if ((st = ft_take_rows(m, in, row_bytes, iname, FT_ROLE_SSM_QKV, l, (uint32_t)(2 * Hk),
                               first, hd)))
            return st;
        ft_ir_tensor_t *qkv = &m->tensors[m->n_tensors - 1];
        ft_ir_piece_t *pieces = ft_arena_array(m->arena, 3 * Hk, sizeof(ft_ir_piece_t));
        if (!pieces) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
        memcpy(pieces, qkv->pieces, 2 * Hk * sizeof(ft_ir_piece_t));
        for (uint64_t g = 0; g < Hk; g++)
            pieces[2 * Hk + g] = (ft_ir_piece_t){
                in->file, in->offset + first[2 * Hk + g] * row_bytes, R * hd * row_bytes};
        qkv->pieces = pieces;
        qkv->n_pieces = (uint32_t)(3 * Hk);
        qkv->shape[0] = (2 * Hk + Hk * R) * hd;
        for (uint64_t g = 0; g < Hk; g++)
            first[g] = g * G + 2 * hd + R * hd; /* z_g */
        snprintf(iname, sizeof(iname), "blk.%u.attn_gate.weight", l);
        if ((st = ft_take_rows(m, in, row_bytes, iname, FT_ROLE_ATTN_GATE, l, (uint32_t)Hk, first,
                               R * hd)))
            return st;
        *out_fused_in = 1;
    }
    snprintf(name, sizeof(name), "%s", ba_name);
    const ft_src_tensor_t *ba = ft_name_take(ix, name);
    if (!ba) return ft_status_make(FT_STATUS_FORMAT, "%s: missing tensor '%s'", src->path, name);
    if (ba->n_dims != 2 || ba->shape[0] != 2 * Hk * R ||
        !ft_dtype_row_bytes(ba->dtype, ba->shape[1], &row_bytes) ||
        ba->n_bytes != ba->shape[0] * row_bytes)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: tensor '%s' is not [%llu, d_model]: beta | alpha of %llu key "
                              "heads",
                              src->path, name, (unsigned long long)(2 * Hk * R),
                              (unsigned long long)Hk);
    static const ft_tensor_role_t roles[2] = {FT_ROLE_SSM_BETA, FT_ROLE_SSM_ALPHA};
    static const char *const names[2] = {"ssm_beta", "ssm_alpha"};
    for (int j = 0; j < 2; j++) {
        for (uint64_t g = 0; g < Hk; g++)
            first[g] = g * 2 * R + (uint64_t)j * R;
        snprintf(iname, sizeof(iname), "blk.%u.%s.weight", l, names[j]);
        if ((st = ft_take_rows(m, ba, row_bytes, iname, roles[j], l, (uint32_t)Hk, first, R)))
            return st;
    }
    return FT_OK;
}

/* A scaled FP8 matrix s (HF name src_name) split into n IR tensors of row
 * ranges (ft_take_rows; out[k] with n_ranges[k] ranges from firsts[k]):
 * its scale tensor claimed once and attached to each range, with the
 * source row each range starts at (ir.h: scale_row0). Nothing when s has
 * no scales. */
FT_WARN_UNUSED static ft_status_t ft_take_split_scales(ft_name_index_t *ix, ft_ir_model_t *m,
                                                       const ft_src_tensor_t *s, const char *src_name,
                                                       uint32_t n, ft_ir_tensor_t *const *out,
                                                       const uint32_t *n_ranges,
                                                       const uint64_t *const *firsts)
{
    ft_ir_scale_kind_t kind;
    ft_dtype_t sdt = FT_DTYPE_INVALID;
    ft_ir_piece_t sp;
    const char *sname = NULL;
    ft_status_t st = ft_take_fp8_scale(ix, s, src_name, &kind, &sdt, &sp, &sname);
    if (st || kind == FT_IR_SCALE_NONE) return st;
    for (uint32_t k = 0; k < n; k++) {
        ft_ir_tensor_t *t = out[k];
        t->scale_kind = kind;
        t->scale_dtype = sdt;
        t->scale_name = sname;
        t->scale_pieces = ft_arena_array(m->arena, n_ranges[k], sizeof(ft_ir_piece_t));
        t->scale_row0 = ft_arena_array(m->arena, n_ranges[k], sizeof(uint64_t));
        if (!t->scale_pieces || !t->scale_row0)
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
        for (uint32_t i = 0; i < n_ranges[k]; i++) {
            t->scale_pieces[i] = sp; /* the whole scale tensor: rows are found through scale_row0 */
            t->scale_row0[i] = firsts[k][i];
        }
    }
    return FT_OK;
}

/* A source tensor that must be there: 2-D (or n_dims) with rows of whole
 * blocks, its row length in *row_bytes. */
FT_WARN_UNUSED static ft_status_t ft_take_matrix(ft_name_index_t *ix, const ft_src_model_t *src,
                                                 const char *name, uint32_t n_dims,
                                                 const ft_src_tensor_t **out, uint64_t *row_bytes)
{
    const ft_src_tensor_t *s = ft_name_take(ix, name);
    *out = s;
    if (!s) return ft_status_make(FT_STATUS_FORMAT, "%s: missing tensor '%s'", src->path, name);
    uint64_t rows = 1;
    for (uint32_t i = 0; i + 1 < s->n_dims; i++)
        rows *= s->shape[i];
    if (s->n_dims != n_dims || !ft_dtype_row_bytes(s->dtype, s->shape[s->n_dims - 1], row_bytes) ||
        s->n_bytes != rows * *row_bytes)
        return ft_status_make(FT_STATUS_FORMAT, "%s: tensor '%s' is not a %u-D tensor of whole rows", src->path,
                              name, n_dims);
    return FT_OK;
}

/* A multi-head latent attention block's projections (DeepSeek V2/V3):
 *   q: q_a, q_a_norm and q_b (or q alone without q_lora_rank);
 *   kv_a_proj_with_mqa [kv_lora + rope, d]: rows c | k_rope, split into
 *     ATTN_KV_A and ATTN_K_ROPE (row ranges of the same bytes);
 *   kv_a_norm;
 *   W_kb and W_vb: kv_b [H (nope + v), kv_lora] (per head k_nope | v rows,
 *     split into ATTN_K_B and ATTN_V_B, a piece per head), or llama.cpp's
 *     attn_k_b [H, kv_lora, nope] and attn_v_b [H, v, kv_lora] as they are
 *     (a file with both keeps kv_b and claims the split pair unused).
 * HF names: self_attn.{q_a_proj, q_a_layernorm, q_b_proj, q_proj,
 * kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj}. */
FT_WARN_UNUSED static ft_status_t ft_take_mla(ft_name_index_t *ix, const ft_src_model_t *src, ft_ir_model_t *m,
                                              uint32_t l)
{
    const ft_ir_attention_t *a = &m->blocks[l].attn;
    const int hf = src->kind == FT_SRC_HF;
    const uint64_t H = a->n_heads, nope = a->nope_head_dim, v = a->value_head_dim, r = a->kv_lora_rank;
    const uint64_t rope = m->hp.rope_dim;
    char name[256], iname[256];
    ft_status_t st;
    int found;
    static const struct {
        ft_tensor_role_t role;
        const char *gguf, *hf;
        int lora; /* 1: with q_lora_rank only, -1: without, 0: always */
    } plain[] = {
        {FT_ROLE_ATTN_Q_A, "attn_q_a.weight", "self_attn.q_a_proj.weight", 1},
        {FT_ROLE_ATTN_Q_A_NORM, "attn_q_a_norm.weight", "self_attn.q_a_layernorm.weight", 1},
        {FT_ROLE_ATTN_Q_B, "attn_q_b.weight", "self_attn.q_b_proj.weight", 1},
        {FT_ROLE_ATTN_Q, "attn_q.weight", "self_attn.q_proj.weight", -1},
        {FT_ROLE_ATTN_KV_A_NORM, "attn_kv_a_norm.weight", "self_attn.kv_a_layernorm.weight", 0},
    };
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
        if (plain[i].lora && (plain[i].lora > 0) != (a->q_lora_rank > 0)) continue;
        snprintf(name, sizeof(name), hf ? "model.layers.%u.%s" : "blk.%u.%s", l, hf ? plain[i].hf : plain[i].gguf);
        snprintf(iname, sizeof(iname), "blk.%u.%s", l, plain[i].gguf);
        if ((st = ft_take_plain(ix, m, name, iname, plain[i].role, (int32_t)l, &found))) return st;
        if (!found) return ft_status_make(FT_STATUS_FORMAT, "%s: missing tensor '%s'", src->path, name);
    }
    const ft_src_tensor_t *s;
    uint64_t rb, first;
    snprintf(name, sizeof(name), hf ? "model.layers.%u.self_attn.kv_a_proj_with_mqa.weight"
                                    : "blk.%u.attn_kv_a_mqa.weight", l);
    if ((st = ft_take_matrix(ix, src, name, 2, &s, &rb))) return st;
    if (s->shape[0] != r + rope)
        return ft_status_make(FT_STATUS_FORMAT, "%s: tensor '%s' has %" PRIu64 " rows, not kv_lora_rank %" PRIu64
                              " + rope %" PRIu64, src->path, name, s->shape[0], r, rope);
    const uint64_t kv_first[2] = {0, r};
    ft_ir_tensor_t *parts[2];
    snprintf(iname, sizeof(iname), "blk.%u.attn_kv_a.weight", l);
    if ((st = ft_take_rows(m, s, rb, iname, FT_ROLE_ATTN_KV_A, l, 1, &kv_first[0], r))) return st;
    parts[0] = &m->tensors[m->n_tensors - 1];
    snprintf(iname, sizeof(iname), "blk.%u.attn_k_rope.weight", l);
    if ((st = ft_take_rows(m, s, rb, iname, FT_ROLE_ATTN_K_ROPE, l, 1, &kv_first[1], rope))) return st;
    parts[1] = &m->tensors[m->n_tensors - 1];
    {
        const uint32_t one[2] = {1, 1};
        const uint64_t *const fs[2] = {&kv_first[0], &kv_first[1]};
        if ((st = ft_take_split_scales(ix, m, s, name, 2, parts, one, fs))) return st;
    }
    char kb_name[128], vb_name[128];
    snprintf(kb_name, sizeof(kb_name), "blk.%u.attn_k_b.weight", l);
    snprintf(vb_name, sizeof(vb_name), "blk.%u.attn_v_b.weight", l);
    snprintf(name, sizeof(name), hf ? "model.layers.%u.self_attn.kv_b_proj.weight" : "blk.%u.attn_kv_b.weight", l);
    if (hf || ft_src_find_tensor(src, name)) {
        if ((st = ft_take_matrix(ix, src, name, 2, &s, &rb))) return st;
        if (s->shape[0] != H * (nope + v) || s->shape[1] != r || H > 65536)
            return ft_status_make(FT_STATUS_FORMAT, "%s: tensor '%s' is [%" PRIu64 ", %" PRIu64 "], not the [%" PRIu64
                                  ", %" PRIu64 "] of %" PRIu64 " heads' k_nope | v rows",
                                  src->path, name, s->shape[0], s->shape[1], H * (nope + v), r, H);
        uint64_t *kf = ft_arena_array(m->arena, H, sizeof(uint64_t));
        uint64_t *vf = ft_arena_array(m->arena, H, sizeof(uint64_t));
        if (!kf || !vf) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
        uint32_t n_parts = 0;
        ft_ir_tensor_t *kv_parts[2];
        const uint64_t *fs[2];
        for (uint64_t h = 0; h < H; h++) kf[h] = h * (nope + v);
        if (nope) {
            if ((st = ft_take_rows(m, s, rb, kb_name, FT_ROLE_ATTN_K_B, l, (uint32_t)H, kf, nope))) return st;
            kv_parts[n_parts] = &m->tensors[m->n_tensors - 1];
            fs[n_parts++] = kf;
        }
        for (uint64_t h = 0; h < H; h++) vf[h] = h * (nope + v) + nope;
        if ((st = ft_take_rows(m, s, rb, vb_name, FT_ROLE_ATTN_V_B, l, (uint32_t)H, vf, v))) return st;
        kv_parts[n_parts] = &m->tensors[m->n_tensors - 1];
        fs[n_parts++] = vf;
        const uint32_t heads[2] = {(uint32_t)H, (uint32_t)H};
        if ((st = ft_take_split_scales(ix, m, s, name, n_parts, kv_parts, heads, fs))) return st;
        if (!hf) { /* the same weights split, where a converter wrote both */
            ft_name_take(ix, kb_name);
            ft_name_take(ix, vb_name);
        }
        return FT_OK;
    }
    /* llama.cpp's split pair, 3-D [H, kv_lora, nope] and [H, v, kv_lora]:
     * as the 2-D matrices of the same bytes, W_kb's transposed per head */
    const char *names[2] = {kb_name, vb_name};
    const ft_tensor_role_t roles[2] = {FT_ROLE_ATTN_K_B_T, FT_ROLE_ATTN_V_B};
    const uint64_t want[2][2] = {{r, nope}, {v, r}};
    for (int j = 0; j < 2; j++) {
        if ((st = ft_take_matrix(ix, src, names[j], 3, &s, &rb)))
            return ft_status_annotate(st, "(or blk.%u.attn_kv_b.weight)", l);
        if (s->shape[0] != H || s->shape[1] != want[j][0] || s->shape[2] != want[j][1])
            return ft_status_make(FT_STATUS_FORMAT, "%s: tensor '%s' is [%" PRIu64 ", %" PRIu64 ", %" PRIu64
                                  "], not [%" PRIu64 ", %" PRIu64 ", %" PRIu64 "]", src->path, names[j], s->shape[0],
                                  s->shape[1], s->shape[2], H, want[j][0], want[j][1]);
        first = 0;
        if ((st = ft_take_rows(m, s, rb, names[j], roles[j], l, 1, &first, H * want[j][0]))) return st;
        m->tensors[m->n_tensors - 1].shape[1] = want[j][1];
    }
    return FT_OK;
}

/* A Gated DeltaNet block's two vectors without the ".weight" suffix, as
 * llama.cpp names them: blk.L.ssm_dt.bias and blk.L.ssm_a. */
FT_WARN_UNUSED static ft_status_t
ft_take_ssm_vectors(ft_name_index_t *ix, const ft_src_model_t *src, ft_ir_model_t *m, uint32_t l)
{
    static const struct {
        ft_tensor_role_t role;
        const char *fmt;
    } v[2] = {{FT_ROLE_SSM_DT_BIAS, "blk.%u.ssm_dt.bias"}, {FT_ROLE_SSM_A, "blk.%u.ssm_a"}};
    for (int j = 0; j < 2; j++) {
        char name[256];
        int found;
        snprintf(name, sizeof(name), v[j].fmt, l);
        ft_status_t st = ft_take_plain(ix, m, name, name, v[j].role, (int32_t)l, &found);
        if (!st && !found)
            st = ft_status_make(FT_STATUS_FORMAT, "%s: missing tensor '%s'", src->path, name);
        if (st) return st;
    }
    return FT_OK;
}

/* After the per-layer roles: the selection biases, and the tensors of the
 * multi-token-prediction blocks after the decoder, claimed unused. */
FT_WARN_UNUSED static ft_status_t ft_take_layer_extras(ft_name_index_t *ix, const ft_src_model_t *src,
                                                       ft_ir_model_t *m)
{
    ft_status_t st;
    for (uint32_t l = 0; l < m->hp.n_layers; l++)
        if ((st = ft_take_sel_bias(ix, src, m, l)))
            return st;
    for (uint32_t k = 0; k < m->hp.n_mtp_layers; k++) {
        char prefix[64];
        snprintf(prefix, sizeof(prefix), src->kind == FT_SRC_HF ? "model.layers.%u." : "blk.%u.",
                 m->hp.n_layers + k);
        const size_t n = strlen(prefix);
        for (uint32_t t = 0; t < src->n_tensors; t++)
            if (strncmp(src->tensors[t].name, prefix, n) == 0)
                ix->used[t] = 1;
    }
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_collect_tensors(ft_name_index_t *ix, const ft_src_model_t *src, ft_ir_model_t *m)
{
    const int hf = src->kind == FT_SRC_HF;
    const size_t n_layer_roles = sizeof(ft_layer_roles) / sizeof(ft_layer_roles[0]);
    const size_t n_bias_roles = sizeof(ft_bias_roles) / sizeof(ft_bias_roles[0]);
    /* + sinks, exp_probs_b, a split gate, ssm_dt.bias and ssm_a */
    uint64_t cap = 3 + (uint64_t)m->hp.n_layers * (n_layer_roles + n_bias_roles + 5 + 8 /* MLA */);
    m->tensors = ft_arena_array(m->arena, cap, sizeof(ft_ir_tensor_t));
    if (!m->tensors)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", src->path);
    char sname[256], iname[256];
    ft_status_t st;
    int found;
    for (size_t r = 0; r < 3; r++) {
        const ft_role_names_t *rn = &ft_global_roles[r];
        snprintf(sname, sizeof(sname), "%s.weight", hf ? rn->hf : rn->gguf);
        snprintf(iname, sizeof(iname), "%s.weight", rn->gguf);
        if (rn->role == FT_ROLE_OUTPUT && m->hp.tie_embeddings) {
            ft_name_take(ix, sname); /* a tied copy some checkpoints still carry */
            continue;
        }
        if ((st = ft_take_plain(ix, m, sname, iname, rn->role, -1, &found)))
            return st;
        if (!found)
            return ft_status_make(FT_STATUS_FORMAT, "%s: missing tensor '%s'", src->path, sname);
    }
    for (uint32_t l = 0; l < m->hp.n_layers; l++) {
        const int want_bias = m->blocks[l].attn.has_bias; /* an HF config says so (attention_bias) */
        m->blocks[l].attn.has_bias = 0;
        for (size_t r = 0; r < n_bias_roles; r++) {
            const ft_role_names_t *rn = &ft_bias_roles[r];
            if (hf && !rn->hf)
                continue;
            if (hf)
                snprintf(sname, sizeof(sname), "model.layers.%u.%s.bias", l, rn->hf);
            else
                snprintf(sname, sizeof(sname), "blk.%u.%s.bias", l, rn->gguf);
            snprintf(iname, sizeof(iname), "blk.%u.%s.bias", l, rn->gguf);
            if ((st = ft_take_plain(ix, m, sname, iname, rn->role, (int32_t)l, &found)))
                return st;
            if (rn->role == FT_ROLE_FFN_ROUTER_BIAS)
                m->blocks[l].moe.has_router_bias |= found;
            else if (rn->role <= FT_ROLE_ATTN_O_BIAS)
                m->blocks[l].attn.has_bias |= found;
        }
        /* Attention sinks (gpt-oss): one logit per head, HF "self_attn.sinks"
         * without a ".weight"; a block with them has attn.has_sinks. */
        if (hf)
            snprintf(sname, sizeof(sname), "model.layers.%u.self_attn.sinks", l);
        else
            snprintf(sname, sizeof(sname), "blk.%u.attn_sinks.weight", l);
        snprintf(iname, sizeof(iname), "blk.%u.attn_sinks.weight", l);
        if ((st = ft_take_plain(ix, m, sname, iname, FT_ROLE_ATTN_SINKS, (int32_t)l, &found)))
            return st;
        m->blocks[l].attn.has_sinks |= found;
        if (want_bias && !m->blocks[l].attn.has_bias)
            return ft_status_make(FT_STATUS_FORMAT, "%s: the config asks for attention biases, but layer %u has "
                                  "none (no 'model.layers.%u.self_attn.q_proj.bias')", src->path, l, l);
        const ft_ir_block_t *b = &m->blocks[l];
        const int qwen = m->hp.arch == FT_ARCH_QWEN35MOE || m->hp.arch == FT_ARCH_QWEN3NEXT;
        const int q_gate = qwen && b->attn.kind == FT_ATTN_GQA && b->attn.has_out_gate;
        const int dn = b->attn.kind == FT_ATTN_GATED_DELTANET;
        int fused_in = 0, fused_ba = 0; /* Qwen3-Next's ssm_in and ssm_ba, split */
        if (q_gate && (st = ft_take_q_gate(ix, src, m, l))) return st;
        if (b->attn.kind == FT_ATTN_MLA && (st = ft_take_mla(ix, src, m, l))) return st;
        if (dn && !hf && (st = ft_take_ssm_vectors(ix, src, m, l))) return st;
        if (dn && hf && qwen) { /* every DeltaNet role, HF's layout rewritten */
            if ((st = ft_take_q35_hf_deltanet(ix, src, m, l))) return st;
            fused_in = fused_ba = 1;
        } else if (dn && m->hp.arch == FT_ARCH_QWEN3NEXT) {
            char in_name[64], ba_name[64];
            snprintf(in_name, sizeof(in_name), "blk.%u.ssm_in.weight", l);
            snprintf(ba_name, sizeof(ba_name), "blk.%u.ssm_ba.weight", l);
            if ((st = ft_take_ssm_fused(ix, src, m, l, in_name, ba_name, &fused_in))) return st;
            fused_ba = 1;
        }
        int fused_exps = 0; /* Qwen3.5 HF's mlp.experts.gate_up_proj / down_proj, gpt-oss's MXFP4 */
        if (hf && qwen && b->is_moe &&
            (st = ft_take_q35_hf_fused_experts(ix, src, m, l, &fused_exps)))
            return st;
        if (hf && m->hp.arch == FT_ARCH_GPT_OSS && b->is_moe) {
            if ((st = ft_take_oss_hf_experts(ix, src, m, l))) return st;
            fused_exps = 1;
        }
        for (size_t r = 0; r < n_layer_roles; r++) {
            const ft_role_names_t *rn = &ft_layer_roles[r];
            if (!ft_role_wanted(b, rn->role) || (q_gate && rn->role == FT_ROLE_ATTN_Q)) continue;
            if ((fused_in && (rn->role == FT_ROLE_SSM_QKV || rn->role == FT_ROLE_ATTN_GATE)) ||
                (fused_ba && (rn->role == FT_ROLE_SSM_BETA || rn->role == FT_ROLE_SSM_ALPHA)) ||
                (fused_exps && ft_role_is_expert(rn->role)) ||
                (dn && hf && qwen && (rn->role == FT_ROLE_SSM_CONV || rn->role == FT_ROLE_SSM_NORM ||
                                      rn->role == FT_ROLE_SSM_OUT)))
                continue;
            const char *hf_name = ft_role_hf_name(m, rn);
            if (hf && !hf_name)
                return ft_status_make(FT_STATUS_UNSUPPORTED,
                                      "%s: layer %u: no safetensors name for %s", src->path, l,
                                      ft_tensor_role_name(rn->role));
            snprintf(iname, sizeof(iname), "blk.%u.%s.weight", l, ft_role_gguf_name(m, rn));
            if (hf && ft_role_is_expert(rn->role)) {
                st = ft_take_expert_stack(ix, m, hf_name, 0, l, b->moe.n_experts, iname, rn->role,
                                          &found);
                snprintf(sname, sizeof(sname), "model.layers.%u.%s.weight", l, hf_name);
            } else {
                if (hf)
                    snprintf(sname, sizeof(sname), "model.layers.%u.%s.weight", l, hf_name);
                else
                    snprintf(sname, sizeof(sname), "blk.%u.%s.weight", l, ft_role_gguf_src_name(m, rn));
                st = ft_take_plain(ix, m, sname, iname, rn->role, (int32_t)l, &found);
                if (!st && found && rn->role == FT_ROLE_FFN_GATE_INP_SHEXP) {
                    /* GGUF's vector [d] is the one-row matrix [1, d] of the gate's LINEAR */
                    ft_ir_tensor_t *t = &m->tensors[m->n_tensors - 1];
                    if (t->n_dims == 1) {
                        t->n_dims = 2;
                        t->shape[1] = t->shape[0];
                        t->shape[0] = 1;
                    }
                }
                if (!st && !found && m->hp.arch == FT_ARCH_MIXTRAL && ft_role_is_expert(rn->role)) {
                    /* "ffn_gate_exps" -> split names "blk.L.ffn_gate.E.weight" */
                    char base[64];
                    snprintf(base, sizeof(base), "%.*s", (int)(strlen(rn->gguf) - 5), rn->gguf);
                    st = ft_take_expert_stack(ix, m, base, 1, l, b->moe.n_experts, iname, rn->role,
                                              &found);
                }
            }
            if (st)
                return st;
            if (!found) {
                if (hf && ft_role_is_expert(rn->role)) {
                    char e0[256];
                    snprintf(e0, sizeof(e0), sname, 0u);
                    return ft_status_make(FT_STATUS_FORMAT, "%s: missing tensor '%s'", src->path, e0);
                }
                return ft_status_make(FT_STATUS_FORMAT, "%s: missing tensor '%s'", src->path, sname);
            }
        }
    }
    if ((st = ft_take_layer_extras(ix, src, m)))
        return st;
    /* a scaled FP8 checkpoint scales every FP8 matrix: one without its
     * scale tensor would silently read with scale 1 */
    const ft_ir_tensor_t *scaled = NULL;
    for (uint32_t i = 0; i < m->n_tensors && !scaled; i++)
        if (m->tensors[i].scale_kind != FT_IR_SCALE_NONE) scaled = &m->tensors[i];
    for (uint32_t i = 0; scaled && i < m->n_tensors; i++)
        if (m->tensors[i].dtype == FT_DTYPE_F8_E4M3 && m->tensors[i].scale_kind == FT_IR_SCALE_NONE)
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: tensor '%s' is F8_E4M3 without a scale tensor, while '%s' "
                                  "has one ('%s'): missing scale tensor",
                                  src->path, m->tensors[i].name, scaled->name, scaled->scale_name);
    if (hf && (m->hp.arch == FT_ARCH_QWEN35MOE || m->hp.arch == FT_ARCH_QWEN3NEXT)) {
        /* Qwen3NextRMSNorm / Qwen3_5MoeRMSNorm scale by 1 + w (the gated
         * norm of the DeltaNet excepted): llama.cpp's converter stores
         * 1 + w, the packer adds it here. The MTP module (mtp.*) and a
         * multimodal release's vision tower (model.visual.*) are skipped. */
        for (uint32_t i = 0; i < m->n_tensors; i++) {
            const ft_tensor_role_t r = m->tensors[i].role;
            if (r == FT_ROLE_ATTN_NORM || r == FT_ROLE_FFN_NORM || r == FT_ROLE_ATTN_Q_NORM ||
                r == FT_ROLE_ATTN_K_NORM || r == FT_ROLE_OUTPUT_NORM)
                m->tensors[i].xform = FT_IR_XFORM_ADD_ONE;
        }
        for (uint32_t t = 0; t < src->n_tensors; t++) /* the vision tower of a multimodal release */
            if (strncmp(src->tensors[t].name, "mtp.", 4) == 0 ||
                strncmp(src->tensors[t].name, "model.visual.", 13) == 0)
                ix->used[t] = 1;
    }
    for (uint32_t t = 0; t < src->n_tensors; t++)
        if (!ix->used[t])
            return ft_status_make(FT_STATUS_UNSUPPORTED,
                                  "%s: tensor '%s' is not part of a %s model as freetoken knows it",
                                  src->path, src->tensors[t].name, m->hp.arch_name);
    return FT_OK;
}

ft_status_t ft_model_names_collect(const ft_src_model_t *src, ft_ir_model_t *m)
{
    ft_status_t st;
    if ((st = ft_copy_files(src, m)) || (st = ft_copy_tokenizer(src, m)))
        return st;
    ft_name_index_t ix;
    st = ft_name_index_build(&ix, src);
    if (!st)
        st = ft_collect_tensors(&ix, src, m);
    ft_name_index_free(&ix);
    return st;
}
