#include "ir.h"

#include "../runtime/base/checked.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

ft_status_t ft_ir_model_create(ft_ir_model_t **out_model)
{
    *out_model = NULL;
    ft_ir_model_t *m = calloc(1, sizeof(*m));
    if (!m)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "model IR: out of memory");
    ft_status_t st = ft_arena_create(2ull << 30, &m->arena);
    if (st) {
        free(m);
        return st;
    }
    ft_ir_tokenizer_init(&m->tok);
    *out_model = m;
    return FT_OK;
}

void ft_ir_model_destroy(ft_ir_model_t *model)
{
    if (!model)
        return;
    ft_arena_destroy(model->arena);
    free(model);
}

static const char *const ft_role_names[FT_ROLE_COUNT] = {
    [FT_ROLE_UNKNOWN] = "unknown",
    [FT_ROLE_TOKEN_EMBD] = "token_embd",
    [FT_ROLE_OUTPUT_NORM] = "output_norm",
    [FT_ROLE_OUTPUT] = "output",
    [FT_ROLE_ATTN_NORM] = "attn_norm",
    [FT_ROLE_ATTN_Q] = "attn_q",
    [FT_ROLE_ATTN_K] = "attn_k",
    [FT_ROLE_ATTN_V] = "attn_v",
    [FT_ROLE_ATTN_O] = "attn_output",
    [FT_ROLE_ATTN_Q_NORM] = "attn_q_norm",
    [FT_ROLE_ATTN_K_NORM] = "attn_k_norm",
    [FT_ROLE_FFN_NORM] = "ffn_norm",
    [FT_ROLE_FFN_ROUTER] = "ffn_gate_inp",
    [FT_ROLE_FFN_GATE_EXPS] = "ffn_gate_exps",
    [FT_ROLE_FFN_UP_EXPS] = "ffn_up_exps",
    [FT_ROLE_FFN_DOWN_EXPS] = "ffn_down_exps",
    [FT_ROLE_FFN_GATE] = "ffn_gate",
    [FT_ROLE_FFN_UP] = "ffn_up",
    [FT_ROLE_FFN_DOWN] = "ffn_down",
    [FT_ROLE_ATTN_Q_BIAS] = "attn_q.bias",
    [FT_ROLE_ATTN_K_BIAS] = "attn_k.bias",
    [FT_ROLE_ATTN_V_BIAS] = "attn_v.bias",
    [FT_ROLE_ATTN_O_BIAS] = "attn_output.bias",
    [FT_ROLE_ATTN_SINKS] = "attn_sinks",
    [FT_ROLE_ATTN_GATE] = "attn_gate",
    [FT_ROLE_FFN_ROUTER_BIAS] = "ffn_gate_inp.bias",
    [FT_ROLE_FFN_GATE_EXPS_BIAS] = "ffn_gate_exps.bias",
    [FT_ROLE_FFN_UP_EXPS_BIAS] = "ffn_up_exps.bias",
    [FT_ROLE_FFN_DOWN_EXPS_BIAS] = "ffn_down_exps.bias",
    [FT_ROLE_FFN_EXP_PROBS_B] = "exp_probs_b",
    [FT_ROLE_FFN_GATE_SHEXP] = "ffn_gate_shexp",
    [FT_ROLE_FFN_UP_SHEXP] = "ffn_up_shexp",
    [FT_ROLE_FFN_DOWN_SHEXP] = "ffn_down_shexp",
    [FT_ROLE_SSM_QKV] = "attn_qkv",
    [FT_ROLE_SSM_CONV] = "ssm_conv1d",
    [FT_ROLE_SSM_DT_BIAS] = "ssm_dt.bias",
    [FT_ROLE_SSM_A] = "ssm_a",
    [FT_ROLE_SSM_BETA] = "ssm_beta",
    [FT_ROLE_SSM_ALPHA] = "ssm_alpha",
    [FT_ROLE_SSM_NORM] = "ssm_norm",
    [FT_ROLE_SSM_OUT] = "ssm_out",
    [FT_ROLE_FFN_GATE_INP_SHEXP] = "ffn_gate_inp_shexp",
    [FT_ROLE_ATTN_Q_A] = "attn_q_a",
    [FT_ROLE_ATTN_Q_A_NORM] = "attn_q_a_norm",
    [FT_ROLE_ATTN_Q_B] = "attn_q_b",
    [FT_ROLE_ATTN_KV_A] = "attn_kv_a",
    [FT_ROLE_ATTN_K_ROPE] = "attn_k_rope",
    [FT_ROLE_ATTN_KV_A_NORM] = "attn_kv_a_norm",
    [FT_ROLE_ATTN_K_B] = "attn_k_b",
    [FT_ROLE_ATTN_V_B] = "attn_v_b",
    [FT_ROLE_ATTN_K_B_T] = "attn_k_b_t",
};

const char *ft_tensor_role_name(ft_tensor_role_t role)
{
    if ((int)role < 0 || role >= FT_ROLE_COUNT || !ft_role_names[role])
        return "unknown";
    return ft_role_names[role];
}

const char *ft_arch_name(ft_arch_t arch)
{
    switch (arch) {
    case FT_ARCH_QWEN3MOE: return "qwen3moe";
    case FT_ARCH_MIXTRAL: return "mixtral";
    case FT_ARCH_GPT_OSS: return "gpt-oss";
    case FT_ARCH_GLM4MOE: return "glm4moe";
    case FT_ARCH_QWEN35MOE:
        return "qwen35moe";
    case FT_ARCH_QWEN3NEXT:
        return "qwen3next";
    case FT_ARCH_OLMOE: return "olmoe";
    case FT_ARCH_DEEPSEEK2: return "deepseek2";
    case FT_ARCH_MINIMAX_M2: return "minimax-m2";
    case FT_ARCH_UNKNOWN: break;
    }
    return "unknown";
}

const ft_ir_tensor_t *ft_ir_find(const ft_ir_model_t *model, ft_tensor_role_t role, int32_t layer)
{
    for (uint32_t i = 0; i < model->n_tensors; i++)
        if (model->tensors[i].role == role && model->tensors[i].layer == layer)
            return &model->tensors[i];
    return NULL;
}

uint64_t ft_ir_tensor_elems(const ft_ir_tensor_t *t)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < t->n_dims; d++)
        n *= t->shape[d];
    return n;
}

/* A per-expert stack (its biases too): shape[0] is the expert count. */
static int ft_is_expert_role(ft_tensor_role_t role)
{
    return role == FT_ROLE_FFN_GATE_EXPS || role == FT_ROLE_FFN_UP_EXPS || role == FT_ROLE_FFN_DOWN_EXPS ||
           role == FT_ROLE_FFN_GATE_EXPS_BIAS || role == FT_ROLE_FFN_UP_EXPS_BIAS ||
           role == FT_ROLE_FFN_DOWN_EXPS_BIAS;
}

void ft_ir_param_counts(const ft_ir_model_t *model, uint64_t *out_total, uint64_t *out_active)
{
    uint64_t total = 0, active = 0;
    for (uint32_t i = 0; i < model->n_tensors; i++) {
        const ft_ir_tensor_t *t = &model->tensors[i];
        uint64_t n = ft_ir_tensor_elems(t);
        total += n;
        if (ft_is_expert_role(t->role) && t->layer >= 0 && (uint32_t)t->layer < model->hp.n_layers) {
            const ft_ir_moe_t *moe = &model->blocks[t->layer].moe;
            /* shape[0] is the expert count: a token touches n_used of them */
            active += moe->n_experts ? n / moe->n_experts * moe->n_experts_used : 0;
        } else {
            active += n;
        }
    }
    *out_total = total;
    *out_active = active;
}

/* One expected tensor: role, layer and the shape the hyperparameters imply. */
FT_WARN_UNUSED static ft_status_t ft_ir_expect(const ft_ir_model_t *m, ft_tensor_role_t role, int32_t layer,
                                uint32_t n_dims, uint64_t d0, uint64_t d1, uint64_t d2)
{
    const ft_ir_tensor_t *t = ft_ir_find(m, role, layer);
    if (!t) {
        if (layer < 0)
            return ft_status_make(FT_STATUS_FORMAT, "%s: missing tensor '%s'", m->source_name,
                                  ft_tensor_role_name(role));
        return ft_status_make(FT_STATUS_FORMAT, "%s: missing tensor 'blk.%d.%s'", m->source_name,
                              layer, ft_tensor_role_name(role));
    }
    const uint64_t want[3] = {d0, d1, d2};
    int ok = t->n_dims == n_dims;
    for (uint32_t d = 0; ok && d < n_dims; d++)
        ok = t->shape[d] == want[d];
    if (!ok) {
        char got[96] = "", exp[96] = "";
        size_t gl = 0, el = 0;
        for (uint32_t d = 0; d < t->n_dims && gl < sizeof(got); d++)
            gl += (size_t)snprintf(got + gl, sizeof(got) - gl, "%s%" PRIu64, d ? ", " : "", t->shape[d]);
        for (uint32_t d = 0; d < n_dims && el < sizeof(exp); d++)
            el += (size_t)snprintf(exp + el, sizeof(exp) - el, "%s%" PRIu64, d ? ", " : "", want[d]);
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: tensor '%s' has shape [%s], the hyperparameters imply [%s]",
                              m->source_name, t->name, got, exp);
    }
    return FT_OK;
}

/* An FT_IR_XFORM_MXFP4_HF or FT_IR_XFORM_DEINTERLEAVE tensor (ir.h): its
 * pieces hold exactly the source rows its interleave reads. */
FT_WARN_UNUSED static ft_status_t ft_ir_validate_interleaved(const ft_ir_model_t *m,
                                                             const ft_ir_tensor_t *t, uint64_t rows)
{
    const ft_ir_interleave_t *il = &t->il;
    const uint64_t cols = t->shape[t->n_dims - 1];
    uint64_t want[2] = {0, 0}, src_rb;
    const int mx = t->xform == FT_IR_XFORM_MXFP4_HF;
    int ok = il->step >= 1 && il->step <= 16 && il->first < il->step &&
             t->n_pieces == (mx ? 2u : 1u);
    if (ok && mx) {
        ok = t->dtype == FT_DTYPE_MXFP4 && cols % 32 == 0 && il->group && rows % il->group == 0;
        const uint64_t src_rows = ok ? ft_ir_mxfp4_hf_src_rows(t) : 0;
        ok = ok && ft_mul_u64(src_rows, cols / 32 * 16, &want[0]) &&
             ft_mul_u64(src_rows, cols / 32, &want[1]);
    } else if (ok) {
        ok = (t->dtype == FT_DTYPE_F32 || t->dtype == FT_DTYPE_F16 || t->dtype == FT_DTYPE_BF16) &&
             ft_dtype_row_bytes(t->dtype, cols * il->step, &src_rb) &&
             ft_mul_u64(rows, src_rb, &want[0]);
    }
    if (!ok)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: tensor '%s' (%s): its interleaved source (every %u-th row or "
                              "column from %u, groups of %" PRIu64 ") does not fit its shape",
                              m->source_name, t->name, ft_dtype_name(t->dtype), il->step,
                              il->first, il->group);
    for (uint32_t p = 0; p < t->n_pieces; p++) {
        const ft_ir_piece_t *pc = &t->pieces[p];
        if (pc->file >= m->n_files || !ft_range_ok(pc->offset, pc->n_bytes, m->files[pc->file].size))
            return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                                  "%s: tensor '%s': bytes [%" PRIu64 ", +%" PRIu64 ") lie outside the file",
                                  m->source_name, t->name, pc->offset, pc->n_bytes);
        if (pc->n_bytes != want[p])
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: tensor '%s': source %u holds %" PRIu64 " bytes, %" PRIu64
                                  " expected",
                                  m->source_name, t->name, p, pc->n_bytes, want[p]);
    }
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_ir_validate_bytes(const ft_ir_model_t *m, const ft_ir_tensor_t *t)
{
    if (t->n_dims == 0 || t->n_dims > FT_MAX_DIMS)
        return ft_status_make(FT_STATUS_FORMAT, "%s: tensor '%s' has %u dimensions", m->source_name,
                              t->name, t->n_dims);
    uint64_t elems = 1;
    for (uint32_t d = 0; d < t->n_dims; d++)
        if (!ft_mul_u64(elems, t->shape[d], &elems))
            return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: tensor '%s': element count overflows",
                                  m->source_name, t->name);
    uint64_t row_bytes, rows = elems / t->shape[t->n_dims - 1], want;
    if (t->shape[t->n_dims - 1] == 0 ||
        !ft_dtype_row_bytes(t->dtype, t->shape[t->n_dims - 1], &row_bytes) ||
        !ft_mul_u64(rows, row_bytes, &want))
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: tensor '%s': row of %" PRIu64 " elements is not whole %s blocks",
                              m->source_name, t->name, t->shape[t->n_dims - 1], ft_dtype_name(t->dtype));
    if (t->xform == FT_IR_XFORM_MXFP4_HF || t->xform == FT_IR_XFORM_DEINTERLEAVE)
        return ft_ir_validate_interleaved(m, t, rows);
    if (ft_ir_tensor_rewritten(t)) {
        const ft_ir_tiling_t *g = &t->tiling;
        if (t->dtype != FT_DTYPE_F32 && t->dtype != FT_DTYPE_F16 && t->dtype != FT_DTYPE_BF16)
            return ft_status_make(FT_STATUS_UNSUPPORTED,
                                  "%s: tensor '%s' is %s; its values must be rewritten on import "
                                  "(f32, f16 or bf16 only)",
                                  m->source_name, t->name, ft_dtype_name(t->dtype));
        if (g->tile_elems && (uint64_t)g->tile_k * g->tile_r * g->tile_elems != t->shape[t->n_dims - 1])
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: tensor '%s': rows of %" PRIu64 " are not %u x %u heads of %u",
                                  m->source_name, t->name, t->shape[t->n_dims - 1], g->tile_k,
                                  g->tile_r, g->tile_elems);
    }
    uint64_t have = 0;
    for (uint32_t p = 0; p < t->n_pieces; p++) {
        const ft_ir_piece_t *pc = &t->pieces[p];
        if (pc->file >= m->n_files || !ft_range_ok(pc->offset, pc->n_bytes, m->files[pc->file].size))
            return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                                  "%s: tensor '%s': bytes [%" PRIu64 ", +%" PRIu64 ") lie outside the file",
                                  m->source_name, t->name, pc->offset, pc->n_bytes);
        if (!ft_add_u64(have, pc->n_bytes, &have))
            return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: tensor '%s': size overflows",
                                  m->source_name, t->name);
    }
    if (have != want)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: tensor '%s': %" PRIu64 " bytes of data, %s of this shape needs %" PRIu64,
                              m->source_name, t->name, have, ft_dtype_name(t->dtype), want);
    if (t->scale_kind != FT_IR_SCALE_NONE) { /* models/model_names.c checked their shapes */
        if (t->dtype != FT_DTYPE_F8_E4M3 || !t->scale_pieces)
            return ft_status_make(FT_STATUS_FORMAT, "%s: tensor '%s': FP8 scales on a %s tensor",
                                  m->source_name, t->name, ft_dtype_name(t->dtype));
        for (uint32_t p = 0; p < t->n_pieces; p++) {
            const ft_ir_piece_t *pc = &t->scale_pieces[p];
            if (pc->file >= m->n_files || !ft_range_ok(pc->offset, pc->n_bytes, m->files[pc->file].size))
                return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                                      "%s: tensor '%s': scale bytes [%" PRIu64 ", +%" PRIu64
                                      ") lie outside the file",
                                      m->source_name, t->name, pc->offset, pc->n_bytes);
        }
    }
    return FT_OK;
}

/* A Gated DeltaNet block's tensors (ir.h, FT_ROLE_SSM_*): Hv value heads
 * and Hk key heads of hd, whole groups, a conv of at least 2 taps. */
FT_WARN_UNUSED static ft_status_t ft_ir_expect_deltanet(const ft_ir_model_t *m,
                                                        const ft_ir_block_t *b, int32_t L)
{
    const ft_ir_attention_t *a = &b->attn;
    const uint64_t d = m->hp.d_model, hd = a->head_dim, hv = a->n_heads, hk = a->n_kv_heads;
    if (!hv || !hk || hv % hk || !hd || a->value_head_dim != a->head_dim || a->conv_kernel < 2 ||
        a->conv_kernel > 64)
        return ft_status_make(
            FT_STATUS_FORMAT,
            "%s: layer %d: Gated DeltaNet of %u value heads, %u key heads, head size %u/%u "
            "and a conv of %u taps (whole groups, equal head sizes, 2..64 taps)",
            m->source_name, (int)L, a->n_heads, a->n_kv_heads, a->head_dim, a->value_head_dim,
            a->conv_kernel);
    const uint64_t conv = (2 * hk + hv) * hd;
    ft_status_t st;
    if ((st = ft_ir_expect(m, FT_ROLE_ATTN_NORM, L, 1, d, 0, 0)) ||
        (st = ft_ir_expect(m, FT_ROLE_SSM_QKV, L, 2, conv, d, 0)) ||
        (st = ft_ir_expect(m, FT_ROLE_ATTN_GATE, L, 2, hv * hd, d, 0)) ||
        (st = ft_ir_expect(m, FT_ROLE_SSM_CONV, L, 2, conv, a->conv_kernel, 0)) ||
        (st = ft_ir_expect(m, FT_ROLE_SSM_DT_BIAS, L, 1, hv, 0, 0)) ||
        (st = ft_ir_expect(m, FT_ROLE_SSM_A, L, 1, hv, 0, 0)) ||
        (st = ft_ir_expect(m, FT_ROLE_SSM_BETA, L, 2, hv, d, 0)) ||
        (st = ft_ir_expect(m, FT_ROLE_SSM_ALPHA, L, 2, hv, d, 0)) ||
        (st = ft_ir_expect(m, FT_ROLE_SSM_NORM, L, 1, hd, 0, 0)) ||
        (st = ft_ir_expect(m, FT_ROLE_SSM_OUT, L, 2, d, hv * hd, 0)))
        return st;
    return FT_OK;
}

/* A multi-head latent attention block's tensors (ir.h, FT_ROLE_ATTN_*_A /
 * _B): H heads of head_dim = nope + rope, values of value_head_dim, the
 * low-rank q when q_lora_rank, W_kb and W_vb in either layout. */
FT_WARN_UNUSED static ft_status_t ft_ir_expect_mla(const ft_ir_model_t *m, const ft_ir_block_t *b, int32_t L)
{
    const ft_ir_attention_t *a = &b->attn;
    const uint64_t d = m->hp.d_model, H = a->n_heads, rope = m->hp.rope_dim, nope = a->nope_head_dim;
    const uint64_t v = a->value_head_dim, r = a->kv_lora_rank, ql = a->q_lora_rank;
    if (!H || !r || !v || !rope || rope % 2 || a->head_dim != nope + rope || a->n_kv_heads != 1)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: layer %d: latent attention of %u heads, head size %u = %u + rope %u, values "
                              "of %u, compressed KV of %u (one shared KV head, an even RoPE part)",
                              m->source_name, (int)L, a->n_heads, a->head_dim, a->nope_head_dim, m->hp.rope_dim,
                              a->value_head_dim, a->kv_lora_rank);
    ft_status_t st;
    if (ql && ((st = ft_ir_expect(m, FT_ROLE_ATTN_Q_A, L, 2, ql, d, 0)) ||
               (st = ft_ir_expect(m, FT_ROLE_ATTN_Q_A_NORM, L, 1, ql, 0, 0)) ||
               (st = ft_ir_expect(m, FT_ROLE_ATTN_Q_B, L, 2, H * a->head_dim, ql, 0))))
        return st;
    if (!ql && (st = ft_ir_expect(m, FT_ROLE_ATTN_Q, L, 2, H * a->head_dim, d, 0)))
        return st;
    if ((st = ft_ir_expect(m, FT_ROLE_ATTN_NORM, L, 1, d, 0, 0)) ||
        (st = ft_ir_expect(m, FT_ROLE_ATTN_KV_A, L, 2, r, d, 0)) ||
        (st = ft_ir_expect(m, FT_ROLE_ATTN_K_ROPE, L, 2, rope, d, 0)) ||
        (st = ft_ir_expect(m, FT_ROLE_ATTN_KV_A_NORM, L, 1, r, 0, 0)) ||
        (st = ft_ir_expect(m, FT_ROLE_ATTN_O, L, 2, d, H * v, 0)))
        return st;
    const int kb_t = ft_ir_find(m, FT_ROLE_ATTN_K_B_T, L) != NULL;
    if (kb_t && ft_ir_find(m, FT_ROLE_ATTN_K_B, L))
        return ft_status_make(FT_STATUS_FORMAT, "%s: layer %d has W_kb twice (attn_k_b and attn_k_b_t)",
                              m->source_name, (int)L);
    if ((st = kb_t ? ft_ir_expect(m, FT_ROLE_ATTN_K_B_T, L, 2, H * r, nope, 0)
                   : ft_ir_expect(m, FT_ROLE_ATTN_K_B, L, 2, H * nope, r, 0)) ||
        (st = ft_ir_expect(m, FT_ROLE_ATTN_V_B, L, 2, H * v, r, 0)))
        return st;
    return FT_OK;
}

ft_status_t ft_ir_model_validate(const ft_ir_model_t *m)
{
    const ft_ir_hparams_t *hp = &m->hp;
    ft_status_t st = FT_OK;
    for (uint32_t i = 0; i < m->n_tensors && !st; i++)
        st = ft_ir_validate_bytes(m, &m->tensors[i]);
    for (uint32_t i = 0; i < m->n_tensors && !st; i++)
        for (uint32_t j = i + 1; j < m->n_tensors && !st; j++)
            if (m->tensors[i].role == m->tensors[j].role && m->tensors[i].layer == m->tensors[j].layer &&
                m->tensors[i].role != FT_ROLE_UNKNOWN)
                st = ft_status_make(FT_STATUS_FORMAT, "%s: tensors '%s' and '%s' have the same role",
                                    m->source_name, m->tensors[i].name, m->tensors[j].name);
    if (st)
        return st;
    const uint64_t d = hp->d_model;
    if ((st = ft_ir_expect(m, FT_ROLE_TOKEN_EMBD, -1, 2, hp->vocab_size, d, 0)) ||
        (st = ft_ir_expect(m, FT_ROLE_OUTPUT_NORM, -1, 1, d, 0, 0)))
        return st;
    if (!hp->tie_embeddings && (st = ft_ir_expect(m, FT_ROLE_OUTPUT, -1, 2, hp->vocab_size, d, 0)))
        return st;
    for (uint32_t l = 0; l < hp->n_layers; l++) {
        const ft_ir_block_t *b = &m->blocks[l];
        const int32_t L = (int32_t)l;
        const uint64_t q = (uint64_t)b->attn.n_heads * b->attn.head_dim;
        const uint64_t k = (uint64_t)b->attn.n_kv_heads * b->attn.head_dim;
        const uint64_t v = (uint64_t)b->attn.n_kv_heads * b->attn.value_head_dim;
        const uint64_t o = (uint64_t)b->attn.n_heads * b->attn.value_head_dim;
        if (b->attn.kind == FT_ATTN_GATED_DELTANET) {
            if ((st = ft_ir_expect_deltanet(m, b, L))) return st;
        } else if (b->attn.kind == FT_ATTN_MLA) {
            if ((st = ft_ir_expect_mla(m, b, L))) return st;
        } else if ((st = ft_ir_expect(m, FT_ROLE_ATTN_NORM, L, 1, d, 0, 0)) ||
                   (st = ft_ir_expect(m, FT_ROLE_ATTN_Q, L, 2, q, d, 0)) ||
                   (st = ft_ir_expect(m, FT_ROLE_ATTN_K, L, 2, k, d, 0)) ||
                   (st = ft_ir_expect(m, FT_ROLE_ATTN_V, L, 2, v, d, 0)) ||
                   (st = ft_ir_expect(m, FT_ROLE_ATTN_O, L, 2, d, o, 0)))
            return st;
        if ((st = ft_ir_expect(m, FT_ROLE_FFN_NORM, L, 1, d, 0, 0))) return st;
        /* Biases are optional, each a vector of its projection's rows. */
        const ft_tensor_role_t bias_roles[4] = {FT_ROLE_ATTN_Q_BIAS, FT_ROLE_ATTN_K_BIAS, FT_ROLE_ATTN_V_BIAS,
                                                FT_ROLE_ATTN_O_BIAS};
        const uint64_t bias_rows[4] = {q, k, v, d};
        for (int j = 0; j < 4; j++)
            if (ft_ir_find(m, bias_roles[j], L) && (st = ft_ir_expect(m, bias_roles[j], L, 1, bias_rows[j], 0, 0)))
                return st;
        /* gpt-oss's router and expert biases, where present */
        if (b->is_moe) {
            const ft_tensor_role_t fr[4] = {FT_ROLE_FFN_ROUTER_BIAS, FT_ROLE_FFN_GATE_EXPS_BIAS,
                                            FT_ROLE_FFN_UP_EXPS_BIAS, FT_ROLE_FFN_DOWN_EXPS_BIAS};
            const uint64_t E = b->moe.n_experts, F = b->moe.expert_ffn;
            const uint64_t dims[4][3] = {{1, E, 0}, {2, E, F}, {2, E, F}, {2, E, d}};
            for (int j = 0; j < 4; j++)
                if (ft_ir_find(m, fr[j], L) &&
                    (st = ft_ir_expect(m, fr[j], L, (uint32_t)dims[j][0], dims[j][1], dims[j][2], 0)))
                    return st;
        }
        if ((b->attn.has_sinks || ft_ir_find(m, FT_ROLE_ATTN_SINKS, L)) &&
            (st = ft_ir_expect(m, FT_ROLE_ATTN_SINKS, L, 1, b->attn.n_heads, 0, 0)))
            return st;
        if (b->attn.kind != FT_ATTN_GATED_DELTANET &&
            (b->attn.has_out_gate || ft_ir_find(m, FT_ROLE_ATTN_GATE, L)) &&
            (st = ft_ir_expect(m, FT_ROLE_ATTN_GATE, L, 2, o, d, 0)))
            return st;
        const uint64_t qn = b->attn.qk_norm_full ? (uint64_t)b->attn.n_heads * b->attn.head_dim : b->attn.head_dim;
        const uint64_t kn = b->attn.qk_norm_full ? (uint64_t)b->attn.n_kv_heads * b->attn.head_dim
                                                 : b->attn.head_dim;
        if (b->attn.qk_norm &&
            ((st = ft_ir_expect(m, FT_ROLE_ATTN_Q_NORM, L, 1, qn, 0, 0)) ||
             (st = ft_ir_expect(m, FT_ROLE_ATTN_K_NORM, L, 1, kn, 0, 0))))
            return st;
        if (b->is_moe) {
            const uint64_t E = b->moe.n_experts, F = b->moe.expert_ffn;
            if ((st = ft_ir_expect(m, FT_ROLE_FFN_ROUTER, L, 2, E, d, 0)) ||
                (st = ft_ir_expect(m, FT_ROLE_FFN_GATE_EXPS, L, 3, E, F, d)) ||
                (st = ft_ir_expect(m, FT_ROLE_FFN_UP_EXPS, L, 3, E, F, d)) ||
                (st = ft_ir_expect(m, FT_ROLE_FFN_DOWN_EXPS, L, 3, E, d, F)))
                return st;
            if (ft_ir_find(m, FT_ROLE_FFN_EXP_PROBS_B, L) && (st = ft_ir_expect(m, FT_ROLE_FFN_EXP_PROBS_B, L, 1, E, 0, 0)))
                return st;
            const uint64_t S = (uint64_t)b->moe.n_shared_experts * b->moe.shared_ffn;
            if (S && ((st = ft_ir_expect(m, FT_ROLE_FFN_GATE_SHEXP, L, 2, S, d, 0)) ||
                      (st = ft_ir_expect(m, FT_ROLE_FFN_UP_SHEXP, L, 2, S, d, 0)) ||
                      (st = ft_ir_expect(m, FT_ROLE_FFN_DOWN_SHEXP, L, 2, d, S, 0))))
                return st;
            if (b->moe.shared_gate &&
                (!S || (st = ft_ir_expect(m, FT_ROLE_FFN_GATE_INP_SHEXP, L, 2, 1, d, 0))))
                return st ? st
                          : ft_status_make(FT_STATUS_FORMAT,
                                           "%s: layer %u: a shared expert gate without a "
                                           "shared expert",
                                           m->source_name, l);
        } else {
            const uint64_t F = b->dense_ffn;
            if ((st = ft_ir_expect(m, FT_ROLE_FFN_GATE, L, 2, F, d, 0)) ||
                (st = ft_ir_expect(m, FT_ROLE_FFN_UP, L, 2, F, d, 0)) ||
                (st = ft_ir_expect(m, FT_ROLE_FFN_DOWN, L, 2, d, F, 0)))
                return st;
        }
    }
    return FT_OK;
}

static void ft_print_escaped(FILE *out, const char *s, uint32_t len)
{
    for (uint32_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == '\\' || c == 0x7f)
            fprintf(out, "\\x%02x", c);
        else
            fputc(c, out);
    }
}

void ft_ir_model_print(const ft_ir_model_t *m, FILE *out)
{
    const ft_ir_hparams_t *hp = &m->hp;
    fprintf(out, "arch %s (%s)\n", ft_arch_name(hp->arch), hp->arch_name ? hp->arch_name : "");
    fprintf(out, "n_layers %u d_model %u vocab %u ctx %u norm %d eps %.9g rope %d theta %.9g dim %u tie %d\n",
            hp->n_layers, hp->d_model, hp->vocab_size, hp->context_length, hp->norm,
            (double)hp->norm_eps, hp->rope, (double)hp->rope_theta, hp->rope_dim, hp->tie_embeddings);
    for (uint32_t l = 0; l < hp->n_layers; l++) {
        const ft_ir_block_t *b = &m->blocks[l];
        fprintf(out,
                "block %u attn %d heads %u/%u dim %u/%u qk_norm %d swa %u sinks %d bias %d "
                "moe %d E %u used %u ffn %u shared %u/%u scoring %d norm_topk %d rbias %d scale %.9g "
                "dense %u act %d\n",
                l, b->attn.kind, b->attn.n_heads, b->attn.n_kv_heads, b->attn.head_dim,
                b->attn.value_head_dim, b->attn.qk_norm, b->attn.sliding_window, b->attn.has_sinks,
                b->attn.has_bias, b->is_moe, b->moe.n_experts, b->moe.n_experts_used,
                b->moe.expert_ffn, b->moe.n_shared_experts, b->moe.shared_ffn, b->moe.scoring,
                b->moe.norm_topk_prob, b->moe.has_router_bias, (double)b->moe.routed_scaling,
                b->dense_ffn, b->act);
        if (b->moe.n_groups || b->moe.has_sel_bias)
            fprintf(out, "block %u groups %u/%u sel_bias %d\n", l, b->moe.n_groups_used, b->moe.n_groups,
                    b->moe.has_sel_bias);
        if (b->attn.has_out_gate)
            fprintf(out, "block %u out_gate 1\n", l);
        if (b->attn.qk_norm_full)
            fprintf(out, "block %u qk_norm_full 1\n", l);
        if (b->attn.kind == FT_ATTN_MLA)
            fprintf(out, "block %u mla q_lora %u kv_lora %u nope %u scale %.9g\n", l, b->attn.q_lora_rank,
                    b->attn.kv_lora_rank, b->attn.nope_head_dim, (double)b->attn.attn_scale);
        if (b->attn.kind == FT_ATTN_GATED_DELTANET)
            fprintf(out, "block %u deltanet conv %u tiled %d\n", l, b->attn.conv_kernel,
                    b->attn.heads_tiled);
        if (b->moe.shared_gate) fprintf(out, "block %u shared_gate 1\n", l);
    }
    if (hp->n_mtp_layers)
        fprintf(out, "mtp_layers %u (skipped)\n", hp->n_mtp_layers);
    for (uint32_t i = 0; i < m->n_tensors; i++) {
        const ft_ir_tensor_t *t = &m->tensors[i];
        fprintf(out, "tensor %s role %s layer %d %s [", t->name, ft_tensor_role_name(t->role),
                t->layer, ft_dtype_name(t->dtype));
        for (uint32_t d = 0; d < t->n_dims; d++)
            fprintf(out, "%s%" PRIu64, d ? ", " : "", t->shape[d]);
        fprintf(out, "]\n");
    }
    const ft_ir_tokenizer_t *tok = &m->tok;
    fprintf(out, "tokenizer %s pre %s n_tokens %u n_merges %u bos %d eos %d pad %d unk %d add_bos %d\n",
            tok->model ? tok->model : "-", tok->pre ? tok->pre : "-", tok->n_tokens, tok->n_merges,
            tok->bos_id, tok->eos_id, tok->pad_id, tok->unk_id, tok->add_bos);
    for (uint32_t i = 0; i < tok->n_tokens; i++) {
        fprintf(out, "token %u %u ", i, tok->token_types[i]);
        ft_print_escaped(out, tok->tokens[i], tok->token_lens[i]);
        fputc('\n', out);
    }
    for (uint32_t i = 0; i < tok->n_merges; i++)
        fprintf(out, "merge %s\n", tok->merges[i]);
    fprintf(out, "chat_template %s\n", tok->chat_template ? tok->chat_template : "-");
}
