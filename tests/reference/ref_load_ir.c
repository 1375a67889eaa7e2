/* Loading the reference model from an imported IR instead of a bundle: the
 * bytes of each tensor are its pieces read from the source files (GGUF or
 * safetensors) and dequantized row by row to double by the reference's own
 * dequantizer (ref_dequant.c), as ref_load.c does
 * for a bundle. This is how the oracle runs a model (Mixtral) before the
 * plan and runtime can hold it, and how two imports of one checkpoint are
 * compared without a compile in between. */
#include "ref_dequant.h"
#include "ref_forward.h"

#include "ir.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The pieces of t concatenated, malloc'ed; *out_n its byte count. */
static ft_status_t ref_ir_read(const ft_ir_model_t *ir, const ft_ir_tensor_t *t, uint8_t **out,
                               uint64_t *out_n)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < t->n_pieces; i++)
        n += t->pieces[i].n_bytes; /* validated IR: within the files' sizes */
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "tensor '%s': out of memory", t->name);
    uint64_t at = 0;
    for (uint32_t i = 0; i < t->n_pieces; i++) {
        const ft_ir_piece_t *p = &t->pieces[i];
        const char *path = ir->files[p->file].path;
        FILE *f = fopen(path, "rb");
        int ok = f && fseeko(f, (off_t)p->offset, SEEK_SET) == 0 &&
                 fread(buf + at, 1, p->n_bytes, f) == p->n_bytes;
        if (f) fclose(f);
        if (!ok) {
            free(buf);
            return ft_status_make(FT_STATUS_IO, "%s: tensor '%s': cannot read %" PRIu64
                                  " bytes at offset %" PRIu64, path, t->name, p->n_bytes, p->offset);
        }
        at += p->n_bytes;
    }
    *out = buf;
    *out_n = n;
    return FT_OK;
}

/* The reference's own reading of an IR tensor's rewrite (ir.h:
 * ft_ir_xform_t, ft_ir_tiling_t), in double. */
static ft_status_t ref_ir_rewrite(const ft_ir_tensor_t *t, double *w, uint64_t rows, uint64_t cols)
{
    const uint64_t e = t->tiling.tile_elems, K = t->tiling.tile_k, R = t->tiling.tile_r;
    double *tmp = malloc(cols * sizeof(double));
    if (!tmp) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "tensor '%s': out of memory", t->name);
    for (uint64_t r = 0; r < rows; r++) {
        double *x = w + r * cols;
        for (uint64_t i = 0; i < cols; i++)
            x[i] = t->xform == FT_IR_XFORM_ADD_ONE   ? x[i] + 1.0
                   : t->xform == FT_IR_XFORM_NEG_EXP ? -exp(x[i])
                                                     : x[i];
        if (!e) continue;
        memcpy(tmp, x, cols * sizeof(double));
        for (uint64_t g = 0; g < K * R; g++) /* output head g = r' K + k reads input head k R + r' */
            memcpy(x + g * e, tmp + ((g % K) * R + g / K) * e, e * sizeof(double));
    }
    free(tmp);
    return FT_OK;
}

/* An HF-interleaved tensor (ir.h: FT_IR_XFORM_MXFP4_HF, DEINTERLEAVE) from
 * its pieces' bytes (validated IR: they hold what the interleave reads). */
static ft_status_t ref_ir_interleaved(const ft_ir_tensor_t *t, const uint8_t *bytes, uint64_t rows,
                                      uint64_t cols, double **out)
{
    const int mx = t->xform == FT_IR_XFORM_MXFP4_HF;
    const uint64_t src_cols = mx ? cols : cols * t->il.step;
    double *w = malloc(rows * cols * sizeof(double)), *tmp = malloc(src_cols * sizeof(double));
    uint8_t *row = malloc(ft_ref_row_bytes(FT_DTYPE_MXFP4, cols) + 1);
    ft_status_t st = FT_OK;
    if (!w || !tmp || !row) st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    const uint64_t src_rb = ft_ref_row_bytes(t->dtype, src_cols);
    for (uint64_t r = 0; r < rows && !st; r++) {
        if (mx) {
            ft_ir_mxfp4_hf_row(t, bytes, bytes + t->pieces[0].n_bytes, r, row);
            st = ft_ref_dequant_row(FT_DTYPE_MXFP4, row, cols, w + r * cols);
        } else if (!(st = ft_ref_dequant_row(t->dtype, bytes + r * src_rb, src_cols, tmp))) {
            for (uint64_t i = 0; i < cols; i++)
                w[r * cols + i] = tmp[i * t->il.step + t->il.first];
        }
    }
    free(tmp);
    free(row);
    if (st) {
        free(w);
        return st;
    }
    *out = w;
    return FT_OK;
}

/* Scale i of a scale piece's bytes (F32, BF16 or F16, little-endian). */
static double ref_ir_scale_at(const uint8_t *b, ft_dtype_t dt, uint64_t i)
{
    double out;
    if (ft_ref_dequant_row(dt, b + i * (dt == FT_DTYPE_F32 ? 4 : 2), 1, &out)) return NAN;
    return out;
}

/* A scaled FP8 tensor's values (w: its F8_E4M3 values, rows x cols) times
 * their scales, read here from the IR's scale pieces as the checkpoint
 * lays them out (ir.h: ft_ir_scale_kind_t, scale_row0), independently of
 * the packer's FP8 blocks. */
static ft_status_t ref_ir_apply_scales(const ft_ir_model_t *ir, const ft_ir_tensor_t *t, double *w,
                                       uint64_t cols)
{
    const uint64_t tiles = (cols + 127) / 128;
    uint64_t row = 0;
    for (uint32_t p = 0; p < t->n_pieces; p++) {
        const uint64_t rows = t->pieces[p].n_bytes / cols; /* F8_E4M3: a byte an element */
        const ft_ir_tensor_t one = {.name = t->name, .n_pieces = 1, .pieces = &t->scale_pieces[p]};
        uint8_t *sb = NULL;
        uint64_t n_sb = 0;
        ft_status_t st = ref_ir_read(ir, &one, &sb, &n_sb);
        if (st) return st;
        const uint64_t r0 = t->scale_row0 ? t->scale_row0[p] : 0;
        for (uint64_t r = 0; r < rows; r++)
            for (uint64_t c = 0; c < cols; c++) {
                const uint64_t sr = r0 + r;
                const uint64_t i = t->scale_kind == FT_IR_SCALE_TILE128 ? sr / 128 * tiles + c / 128
                                   : t->scale_kind == FT_IR_SCALE_ROW   ? sr
                                                                        : 0;
                w[(row + r) * cols + c] *= ref_ir_scale_at(sb, t->scale_dtype, i);
            }
        free(sb);
        row += rows;
    }
    return FT_OK;
}

/* The tensor of this role and layer as doubles; it must hold n_elems. */
static ft_status_t ref_ir_tensor(const ft_ir_model_t *ir, ft_tensor_role_t role, int32_t layer,
                                 uint64_t n_elems, double **out, ft_dtype_t *out_fmt)
{
    *out = NULL;
    const ft_ir_tensor_t *t = ft_ir_find(ir, role, layer);
    if (!t)
        return ft_status_make(FT_STATUS_FORMAT, "no %s tensor in layer %d", ft_tensor_role_name(role),
                              (int)layer);
    if (ft_ir_tensor_elems(t) != n_elems || t->n_dims == 0)
        return ft_status_make(FT_STATUS_MISMATCH, "tensor '%s': %" PRIu64 " elements, expected %" PRIu64,
                              t->name, ft_ir_tensor_elems(t), n_elems);
    if (out_fmt) *out_fmt = t->dtype;
    const uint64_t cols = t->shape[t->n_dims - 1], rows = n_elems / cols;
    const uint64_t row_bytes = ft_ref_row_bytes(t->dtype, cols);
    if (!row_bytes)
        return ft_status_make(FT_STATUS_FORMAT, "tensor '%s': bad row of %" PRIu64 " %s elements",
                              t->name, cols, ft_dtype_name(t->dtype));
    uint8_t *bytes = NULL;
    uint64_t n_bytes = 0;
    ft_status_t st = ref_ir_read(ir, t, &bytes, &n_bytes);
    if (st) return st;
    if (t->xform == FT_IR_XFORM_MXFP4_HF || t->xform == FT_IR_XFORM_DEINTERLEAVE) {
        st = ref_ir_interleaved(t, bytes, rows, cols, out);
        free(bytes);
        return st ? ft_status_annotate(st, "tensor '%s'", t->name) : FT_OK;
    }
    double *w = malloc(n_elems * sizeof(double));
    if (!w)
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "tensor '%s': out of memory", t->name);
    else if (n_bytes != rows * row_bytes)
        st = ft_status_make(FT_STATUS_MISMATCH, "tensor '%s': %" PRIu64 " bytes, expected %" PRIu64,
                            t->name, n_bytes, rows * row_bytes);
    for (uint64_t r = 0; r < rows && !st; r++)
        st = ft_ref_dequant_row(t->dtype, bytes + r * row_bytes, cols, w + r * cols);
    free(bytes);
    if (!st && t->scale_kind != FT_IR_SCALE_NONE) st = ref_ir_apply_scales(ir, t, w, cols);
    if (!st && ft_ir_tensor_rewritten(t)) st = ref_ir_rewrite(t, w, rows, cols);
    if (st) {
        free(w);
        return ft_status_annotate(st, "tensor '%s'", t->name);
    }
    *out = w;
    return FT_OK;
}

/* Refuses a block this reference does not compute (as ref_block_check). */
static ft_status_t ref_ir_block_check(const ft_ir_block_t *b, uint32_t l)
{
    const ft_ir_attention_t *a = &b->attn;
    const ft_ir_moe_t *m = &b->moe;
    if ((a->kind != FT_ATTN_GQA && a->kind != FT_ATTN_GATED_DELTANET && a->kind != FT_ATTN_MLA) || !a->n_kv_heads ||
        a->n_heads % a->n_kv_heads)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "layer %u: only GQA or Gated DeltaNet", l);
    if (!b->is_moe) {
        if (!b->dense_ffn || b->act != FT_ACT_SILU)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "layer %u: only SwiGLU dense FFNs", l);
        return FT_OK;
    }
    if ((b->act != FT_ACT_SILU && b->act != FT_ACT_SWIGLU_OAI) || !m->n_experts_used ||
        m->n_experts_used > m->n_experts || (m->has_router_bias && (!m->norm_topk_prob || m->scoring)))
        return ft_status_make(FT_STATUS_UNSUPPORTED, "layer %u: only SiLU or clamped SwiGLU MoE (a router "
                              "bias with gpt-oss's softmax over the chosen logits)", l);
    return FT_OK;
}

/* A Gated DeltaNet block's tensors (ir.h's FT_ROLE_SSM_*, z as ATTN_GATE). */
static ft_status_t ref_ir_deltanet(const ft_ir_model_t *ir, const ft_ir_block_t *b, uint32_t l,
                                   ft_ref_layer_t *L, uint64_t d)
{
    const int32_t li = (int32_t)l;
    const uint64_t hd = b->attn.head_dim, Hv = b->attn.n_heads,
                   C = (2ull * b->attn.n_kv_heads + Hv) * hd;
    L->deltanet = 1;
    L->heads_tiled = b->attn.heads_tiled;
    L->conv_kernel = b->attn.conv_kernel;
    ft_status_t st;
    if ((st = ref_ir_tensor(ir, FT_ROLE_SSM_QKV, li, C * d, &L->dn_qkv, &L->fmt_dn_qkv)) ||
        (st = ref_ir_tensor(ir, FT_ROLE_ATTN_GATE, li, Hv * hd * d, &L->dn_z, &L->fmt_dn_z)) ||
        (st = ref_ir_tensor(ir, FT_ROLE_SSM_BETA, li, Hv * d, &L->dn_beta, &L->fmt_dn_beta)) ||
        (st = ref_ir_tensor(ir, FT_ROLE_SSM_ALPHA, li, Hv * d, &L->dn_alpha, &L->fmt_dn_alpha)) ||
        (st = ref_ir_tensor(ir, FT_ROLE_SSM_CONV, li, C * L->conv_kernel, &L->dn_conv, NULL)) ||
        (st = ref_ir_tensor(ir, FT_ROLE_SSM_DT_BIAS, li, Hv, &L->dn_dt_bias, NULL)) ||
        (st = ref_ir_tensor(ir, FT_ROLE_SSM_A, li, Hv, &L->dn_a, NULL)) ||
        (st = ref_ir_tensor(ir, FT_ROLE_SSM_NORM, li, hd, &L->dn_norm, NULL)) ||
        (st = ref_ir_tensor(ir, FT_ROLE_SSM_OUT, li, d * Hv * hd, &L->dn_out, &L->fmt_dn_out)))
        return st;
    return FT_OK;
}

/* A latent attention block's tensors; W_kb transposed to [H * nope][kv_lora]
 * when the checkpoint stores it per head the other way (ATTN_K_B_T). */
static ft_status_t ref_ir_mla(const ft_ir_model_t *ir, const ft_ir_block_t *b, uint32_t l, ft_ref_layer_t *L,
                              uint64_t d, uint32_t rope)
{
    const int32_t li = (int32_t)l;
    const ft_ir_attention_t *a = &b->attn;
    const uint64_t H = a->n_heads, hd = a->head_dim, r = a->kv_lora_rank, nope = a->nope_head_dim,
                   v = a->value_head_dim, ql = a->q_lora_rank;
    L->mla = 1;
    L->q_lora = a->q_lora_rank;
    L->kv_lora = a->kv_lora_rank;
    L->nope = a->nope_head_dim;
    L->attn_scale = a->attn_scale != 0.0f ? a->attn_scale : 1.0 / sqrt((double)hd);
    ft_status_t st;
    if (ql && ((st = ref_ir_tensor(ir, FT_ROLE_ATTN_Q_A, li, ql * d, &L->wq_a, &L->fmt_wq_a)) ||
               (st = ref_ir_tensor(ir, FT_ROLE_ATTN_Q_A_NORM, li, ql, &L->q_a_norm, NULL)) ||
               (st = ref_ir_tensor(ir, FT_ROLE_ATTN_Q_B, li, H * hd * ql, &L->wq_b, &L->fmt_wq_b))))
        return st;
    if (!ql && (st = ref_ir_tensor(ir, FT_ROLE_ATTN_Q, li, H * hd * d, &L->wq, &L->fmt_wq)))
        return st;
    if ((st = ref_ir_tensor(ir, FT_ROLE_ATTN_KV_A, li, r * d, &L->wkv_a, &L->fmt_wkv_a)) ||
        (st = ref_ir_tensor(ir, FT_ROLE_ATTN_K_ROPE, li, (uint64_t)rope * d, &L->wk_rope, &L->fmt_wk_rope)) ||
        (st = ref_ir_tensor(ir, FT_ROLE_ATTN_KV_A_NORM, li, r, &L->kv_a_norm, NULL)) ||
        (st = ref_ir_tensor(ir, FT_ROLE_ATTN_V_B, li, H * v * r, &L->wvb, NULL)))
        return st;
    if (!ft_ir_find(ir, FT_ROLE_ATTN_K_B_T, li))
        return ref_ir_tensor(ir, FT_ROLE_ATTN_K_B, li, H * nope * r, &L->wkb, NULL);
    double *t = NULL;
    if ((st = ref_ir_tensor(ir, FT_ROLE_ATTN_K_B_T, li, H * r * nope, &t, NULL)))
        return st;
    L->wkb = malloc(H * nope * r * sizeof(double));
    if (!L->wkb) {
        free(t);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "layer %u: out of memory", l);
    }
    for (uint64_t h = 0; h < H; h++) /* [h][c][i] -> [h][i][c] */
        for (uint64_t c = 0; c < r; c++)
            for (uint64_t i = 0; i < nope; i++)
                L->wkb[(h * nope + i) * r + c] = t[(h * r + c) * nope + i];
    free(t);
    return FT_OK;
}

static ft_status_t ref_ir_layer(const ft_ir_model_t *ir, uint32_t l, ft_ref_model_t *m)
{
    const ft_ir_block_t *b = &ir->blocks[l];
    ft_status_t st = ref_ir_block_check(b, l);
    if (st) return st;
    ft_ref_layer_t *L = &m->layers[l];
    L->n_heads = b->attn.n_heads;
    L->n_kv_heads = b->attn.n_kv_heads;
    L->head_dim = b->attn.head_dim;
    L->value_head_dim = b->attn.value_head_dim ? b->attn.value_head_dim : L->head_dim;
    /* A dense FFN is computed as a one-expert MoE: its router logit's
     * softmax is exactly 1, so x += 1 * down(silu(gate h) * up h). */
    const int dense = !b->is_moe;
    L->n_experts = dense ? 1 : b->moe.n_experts;
    L->n_experts_used = dense ? 1 : b->moe.n_experts_used;
    L->expert_ffn = dense ? b->dense_ffn : b->moe.expert_ffn;
    L->norm_topk_prob = dense ? 0 : b->moe.norm_topk_prob;
    L->sigmoid = !dense && b->moe.scoring == FT_ROUTER_SIGMOID;
    L->n_groups = dense ? 0 : b->moe.n_groups;
    L->n_groups_used = dense ? 0 : b->moe.n_groups_used;
    L->routed_scaling = dense || b->moe.routed_scaling == 0.0f ? 1.0 : b->moe.routed_scaling;
    L->qk_norm = b->attn.qk_norm;
    L->qk_norm_full = b->attn.qk_norm && b->attn.qk_norm_full;
    L->act_oai = b->act == FT_ACT_SWIGLU_OAI;
    L->act_alpha = b->act_alpha;
    L->act_limit = b->act_limit;
    L->sliding_window = b->attn.sliding_window;
    if (L->head_dim < m->rope_dim || m->rope_dim % 2)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "layer %u: rope_dim %u vs head_dim %u", l,
                              m->rope_dim, L->head_dim);
    const uint64_t d = m->d_model, hd = L->head_dim, vd = L->value_head_dim;
    const uint64_t E = L->n_experts, F = L->expert_ffn;
    const int32_t li = (int32_t)l;
    if (b->attn.kind == FT_ATTN_MLA) {
        if ((st = ref_ir_tensor(ir, FT_ROLE_ATTN_NORM, li, d, &L->attn_norm, NULL)) ||
            (st = ref_ir_mla(ir, b, l, L, d, m->rope_dim)) ||
            (st = ref_ir_tensor(ir, FT_ROLE_ATTN_O, li, d * L->n_heads * vd, &L->wo, &L->fmt_wo)) ||
            (st = ref_ir_tensor(ir, FT_ROLE_FFN_NORM, li, d, &L->ffn_norm, NULL)))
            return st;
    } else if (b->attn.kind == FT_ATTN_GATED_DELTANET) {
        if ((st = ref_ir_tensor(ir, FT_ROLE_ATTN_NORM, li, d, &L->attn_norm, NULL)) ||
            (st = ref_ir_deltanet(ir, b, l, L, d)) ||
            (st = ref_ir_tensor(ir, FT_ROLE_FFN_NORM, li, d, &L->ffn_norm, NULL)))
            return st;
    } else if ((st = ref_ir_tensor(ir, FT_ROLE_ATTN_NORM, li, d, &L->attn_norm, NULL)) ||
               (st = ref_ir_tensor(ir, FT_ROLE_ATTN_Q, li, L->n_heads * hd * d, &L->wq,
                                   &L->fmt_wq)) ||
               (st = ref_ir_tensor(ir, FT_ROLE_ATTN_K, li, L->n_kv_heads * hd * d, &L->wk,
                                   &L->fmt_wk)) ||
               (st = ref_ir_tensor(ir, FT_ROLE_ATTN_V, li, L->n_kv_heads * vd * d, &L->wv,
                                   &L->fmt_wv)) ||
               (st = ref_ir_tensor(ir, FT_ROLE_ATTN_O, li, d * L->n_heads * vd, &L->wo,
                                   &L->fmt_wo)) ||
               (st = ref_ir_tensor(ir, FT_ROLE_FFN_NORM, li, d, &L->ffn_norm, NULL)))
        return st;
    if (dense) {
        L->router = calloc(d, sizeof(double)); /* one logit, 0 */
        L->fmt_router = FT_DTYPE_F32;
        if (!L->router) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "layer %u: out of memory", l);
        if ((st = ref_ir_tensor(ir, FT_ROLE_FFN_GATE, li, F * d, &L->gate, &L->fmt_gate)) ||
            (st = ref_ir_tensor(ir, FT_ROLE_FFN_UP, li, F * d, &L->up, &L->fmt_up)) ||
            (st = ref_ir_tensor(ir, FT_ROLE_FFN_DOWN, li, d * F, &L->down, &L->fmt_down)))
            return st;
    } else if ((st = ref_ir_tensor(ir, FT_ROLE_FFN_ROUTER, li, E * d, &L->router, &L->fmt_router)) ||
        (st = ref_ir_tensor(ir, FT_ROLE_FFN_GATE_EXPS, li, E * F * d, &L->gate, &L->fmt_gate)) ||
        (st = ref_ir_tensor(ir, FT_ROLE_FFN_UP_EXPS, li, E * F * d, &L->up, &L->fmt_up)) ||
        (st = ref_ir_tensor(ir, FT_ROLE_FFN_DOWN_EXPS, li, E * d * F, &L->down, &L->fmt_down)))
        return st;
    /* The projections' biases, where the IR has them. */
    const ft_tensor_role_t bias_roles[4] = {FT_ROLE_ATTN_Q_BIAS, FT_ROLE_ATTN_K_BIAS, FT_ROLE_ATTN_V_BIAS,
                                            FT_ROLE_ATTN_O_BIAS};
    const uint64_t bias_rows[4] = {L->n_heads * hd, L->n_kv_heads * hd, L->n_kv_heads * vd, d};
    double **biases[4] = {&L->bq, &L->bk, &L->bv, &L->bo};
    for (int j = 0; j < 4; j++)
        if (ft_ir_find(ir, bias_roles[j], li) &&
            (st = ref_ir_tensor(ir, bias_roles[j], li, bias_rows[j], biases[j], NULL)))
            return st;
    /* gpt-oss's router and expert biases */
    const ft_tensor_role_t fr[4] = {FT_ROLE_FFN_ROUTER_BIAS, FT_ROLE_FFN_GATE_EXPS_BIAS, FT_ROLE_FFN_UP_EXPS_BIAS,
                                    FT_ROLE_FFN_DOWN_EXPS_BIAS};
    const uint64_t fn[4] = {E, E * F, E * F, E * d};
    double **fb[4] = {&L->router_bias, &L->b_gate, &L->b_up, &L->b_down};
    for (int j = 0; j < 4 && !dense; j++)
        if (ft_ir_find(ir, fr[j], li) && (st = ref_ir_tensor(ir, fr[j], li, fn[j], fb[j], NULL)))
            return st;
    if (ft_ir_find(ir, FT_ROLE_ATTN_SINKS, li) &&
        (st = ref_ir_tensor(ir, FT_ROLE_ATTN_SINKS, li, L->n_heads, &L->sinks, NULL)))
        return st;
    if (b->attn.has_out_gate && !L->deltanet &&
        (st = ref_ir_tensor(ir, FT_ROLE_ATTN_GATE, li, L->n_heads * vd * d, &L->w_gate,
                            &L->fmt_w_gate)))
        return st;
    L->shared_ffn = dense ? 0 : b->moe.n_shared_experts * b->moe.shared_ffn;
    const uint64_t S = L->shared_ffn;
    if (S && ((st = ref_ir_tensor(ir, FT_ROLE_FFN_GATE_SHEXP, li, S * d, &L->sh_gate, &L->fmt_sh_gate)) ||
              (st = ref_ir_tensor(ir, FT_ROLE_FFN_UP_SHEXP, li, S * d, &L->sh_up, &L->fmt_sh_up)) ||
              (st = ref_ir_tensor(ir, FT_ROLE_FFN_DOWN_SHEXP, li, d * S, &L->sh_down, &L->fmt_sh_down))))
        return st;
    if (S && b->moe.shared_gate &&
        (st = ref_ir_tensor(ir, FT_ROLE_FFN_GATE_INP_SHEXP, li, d, &L->sh_gate_inp,
                            &L->fmt_sh_gate_inp)))
        return st;
    if (!dense && ft_ir_find(ir, FT_ROLE_FFN_EXP_PROBS_B, li) &&
        (st = ref_ir_tensor(ir, FT_ROLE_FFN_EXP_PROBS_B, li, E, &L->sel_bias, NULL)))
        return st;
    if (L->qk_norm &&
        ((st = ref_ir_tensor(ir, FT_ROLE_ATTN_Q_NORM, li, L->qk_norm_full ? L->n_heads * hd : hd,
                             &L->q_norm, NULL)) ||
         (st = ref_ir_tensor(ir, FT_ROLE_ATTN_K_NORM, li, L->qk_norm_full ? L->n_kv_heads * hd : hd,
                             &L->k_norm, NULL))))
        return st;
    return FT_OK;
}

static ft_status_t ref_ir_load(const ft_ir_model_t *ir, ft_ref_model_t *m)
{
    const ft_ir_hparams_t *hp = &ir->hp;
    if ((hp->arch != FT_ARCH_QWEN3MOE && hp->arch != FT_ARCH_MIXTRAL &&
         hp->arch != FT_ARCH_GPT_OSS && hp->arch != FT_ARCH_GLM4MOE &&
         hp->arch != FT_ARCH_QWEN35MOE && hp->arch != FT_ARCH_QWEN3NEXT && hp->arch != FT_ARCH_OLMOE &&
         hp->arch != FT_ARCH_DEEPSEEK2 && hp->arch != FT_ARCH_MINIMAX_M2) ||
        hp->norm != FT_NORM_RMS || (hp->rope != FT_ROPE_NEOX && hp->rope != FT_ROPE_NORM))
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "only qwen3moe / mixtral / gpt-oss / glm4moe / qwen35moe / qwen3next / olmoe / deepseek2 / minimax-m2 "
                              "with RMS norms and NeoX or interleaved RoPE");
    m->n_layers = hp->n_layers;
    m->d_model = hp->d_model;
    m->vocab_size = hp->vocab_size;
    m->context_length = hp->context_length;
    m->norm_eps = hp->norm_eps;
    m->rope_theta = hp->rope_theta;
    m->rope_dim = hp->rope_dim;
    m->rope_interleaved = hp->rope == FT_ROPE_NORM;
    m->rope_yarn_factor = hp->rope_yarn_factor;
    m->rope_yarn_orig_ctx = hp->rope_yarn_orig_ctx;
    m->rope_yarn_beta_fast = hp->rope_yarn_beta_fast;
    m->rope_yarn_beta_slow = hp->rope_yarn_beta_slow;
    m->rope_yarn_mscale = hp->rope_yarn_mscale;
    const int mla = hp->n_layers && ir->blocks[0].attn.kind == FT_ATTN_MLA; /* ref_mla.h's RoPE takes both */
    if (m->rope_yarn_factor != 0.0 && m->rope_interleaved && !mla)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "YaRN with interleaved RoPE pairs");
    m->tie_embeddings = hp->tie_embeddings;
    const uint64_t d = m->d_model, V = m->vocab_size;
    ft_status_t st;
    if ((st = ref_ir_tensor(ir, FT_ROLE_TOKEN_EMBD, -1, V * d, &m->tok_embd, NULL)) ||
        (st = ref_ir_tensor(ir, FT_ROLE_OUTPUT_NORM, -1, d, &m->output_norm, NULL)))
        return st;
    if (m->tie_embeddings) {
        m->output = m->tok_embd;
        m->fmt_output = ft_ir_find(ir, FT_ROLE_TOKEN_EMBD, -1)->dtype;
    } else if ((st = ref_ir_tensor(ir, FT_ROLE_OUTPUT, -1, V * d, &m->output, &m->fmt_output))) {
        return st;
    }
    m->layers = calloc(m->n_layers ? m->n_layers : 1, sizeof(*m->layers));
    if (!m->layers) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    for (uint32_t l = 0; l < m->n_layers; l++)
        if ((st = ref_ir_layer(ir, l, m))) return st;
    return FT_OK;
}

ft_status_t ft_ref_model_from_ir(const ft_ir_model_t *ir, ft_ref_model_t **out_model)
{
    *out_model = NULL;
    ft_ref_model_t *m = calloc(1, sizeof(*m));
    ft_status_t st = m ? ref_ir_load(ir, m) : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (st) {
        ft_ref_model_free(m);
        return ft_status_annotate(st, "%s: reference model", ir->source_name ? ir->source_name : "IR");
    }
    *out_model = m;
    return FT_OK;
}
