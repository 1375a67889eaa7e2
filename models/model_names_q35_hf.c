/* Qwen3.5/3.6 MoE (Qwen3_5MoeForCausalLM) and Qwen3-Next
 * (Qwen3NextForCausalLM) HF checkpoints: the Gated DeltaNet tensors under
 * linear_attn.* and Qwen3.5's fused experts, taken into the same IR
 * tensors the GGUF import makes (model_names.c), so that both imports of
 * one model pack to the same bytes.
 *
 * What llama.cpp's converter rewrites (../shared/notes/architectures.md
 * section 2) is done here as pieces (row moves) or as the packer's
 * rewrites (ir.h: ft_ir_xform_t, ft_ir_tiling_t):
 *   A_log          -> ssm_a = -exp(A_log)                 (FT_IR_XFORM_NEG_EXP)
 *   dt_bias        -> ssm_dt.bias
 *   conv1d [C,1,K] -> ssm_conv1d [C, K]                   (the same bytes)
 *   Qwen3.5's value heads, grouped by key head in HF (head k R + r), are
 *   tiled (head r Hk + k) in the V rows of in_proj_qkv and conv1d, the rows
 *   of in_proj_z, in_proj_b, in_proj_a (pieces), and the elements of A_log,
 *   dt_bias and the columns of out_proj (tilings). Qwen3-Next keeps them
 *   grouped (its GGUF does too): in_proj_qkvz and in_proj_ba hold q | k | v
 *   | z and b | a per key head as GGUF's ssm_in and ssm_ba do.
 * The zero-centred norms' + 1 is set by model_names.c for every norm but
 * linear_attn.norm, which is used as stored. */
#include "model_names_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Source tensor model.layers.<l>.linear_attn.<suffix>, which must be
 * [rows, cols] (cols 0: a vector of rows); a 3-D [rows, 1, cols] is taken
 * as [rows, cols] (conv1d). */
FT_WARN_UNUSED static ft_status_t ft_q35hf_src(ft_name_index_t *ix, const ft_src_model_t *src,
                                               uint32_t l, const char *suffix, uint64_t rows,
                                               uint64_t cols, const ft_src_tensor_t **out,
                                               uint64_t *row_bytes)
{
    char name[256];
    snprintf(name, sizeof(name), "model.layers.%u.linear_attn.%s", l, suffix);
    const ft_src_tensor_t *s = ft_name_take(ix, name);
    if (!s) return ft_status_make(FT_STATUS_FORMAT, "%s: missing tensor '%s'", src->path, name);
    const uint64_t c = s->n_dims == 1 ? s->shape[0] : s->shape[s->n_dims - 1];
    const int ok_shape =
        cols == 0 ? s->n_dims == 1 && s->shape[0] == rows
                  : (s->n_dims == 2 && s->shape[0] == rows && s->shape[1] == cols) ||
                        (s->n_dims == 3 && s->shape[0] == rows && s->shape[1] == 1 &&
                         s->shape[2] == cols);
    if (!ok_shape || !ft_dtype_row_bytes(s->dtype, c, row_bytes) ||
        s->n_bytes != (cols ? rows : 1) * *row_bytes) {
        if (cols)
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: tensor '%s' is not [%" PRIu64 ", %" PRIu64 "] (%s)", src->path,
                                  name, rows, cols, ft_dtype_name(s->dtype));
        return ft_status_make(FT_STATUS_FORMAT, "%s: tensor '%s' is not a vector of %" PRIu64 " (%s)",
                              src->path, name, rows, ft_dtype_name(s->dtype));
    }
    *out = s;
    return FT_OK;
}

/* IR tensor blk.<l>.<iname> of `role` from s [rows, cols]: the first
 * `lead` rows as they are, then n_heads = Hk R blocks of e rows, tiled
 * (output block r Hk + k is source block k R + r) when tiled, else as they are. */
FT_WARN_UNUSED static ft_status_t ft_q35hf_rows(ft_ir_model_t *m, const ft_src_tensor_t *s,
                                                uint64_t row_bytes, uint32_t l, const char *iname,
                                                ft_tensor_role_t role, uint64_t lead, uint64_t Hk,
                                                uint64_t R, uint64_t e, int tiled)
{
    char name[256];
    snprintf(name, sizeof(name), "blk.%u.%s", l, iname);
    ft_ir_tensor_t *t;
    ft_status_t st = ft_ir_add_tensor(m, name, role, (int32_t)l, &t);
    if (st) return st;
    const uint64_t n_heads = Hk * R;
    t->dtype = s->dtype;
    t->n_dims = 2;
    t->shape[0] = lead + n_heads * e;
    t->shape[1] = s->n_dims == 3 ? s->shape[2] : s->shape[1];
    if (!tiled) {
        t->n_pieces = 1;
        t->pieces = ft_arena_alloc(m->arena, sizeof(ft_ir_piece_t));
        if (!t->pieces) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
        t->pieces[0] = (ft_ir_piece_t){s->file, s->offset, s->n_bytes};
        return FT_OK;
    }
    const uint32_t first = lead ? 1 : 0;
    t->n_pieces = first + (uint32_t)n_heads;
    t->pieces = ft_arena_array(m->arena, t->n_pieces, sizeof(ft_ir_piece_t));
    if (!t->pieces) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (lead) t->pieces[0] = (ft_ir_piece_t){s->file, s->offset, lead * row_bytes};
    for (uint64_t g = 0; g < n_heads; g++) {
        const uint64_t from = (g % Hk) * R + g / Hk; /* g = r Hk + k reads k R + r */
        t->pieces[first + g] = (ft_ir_piece_t){
            s->file, s->offset + (lead + from * e) * row_bytes, e * row_bytes};
    }
    return FT_OK;
}

/* A vector or matrix taken whole, its rows rewritten by the packer. */
FT_WARN_UNUSED static ft_status_t ft_q35hf_whole(ft_ir_model_t *m, const ft_src_tensor_t *s,
                                                 uint32_t l, const char *iname,
                                                 ft_tensor_role_t role, ft_ir_xform_t xform,
                                                 uint64_t Hk, uint64_t R, uint64_t e, int tiled)
{
    char name[256];
    if ((xform != FT_IR_XFORM_NONE || tiled) && s->dtype != FT_DTYPE_F32 &&
        s->dtype != FT_DTYPE_F16 && s->dtype != FT_DTYPE_BF16)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "tensor '%s' is %s: its values are rewritten on import (f32, f16 "
                              "or bf16 only)",
                              s->name, ft_dtype_name(s->dtype));
    snprintf(name, sizeof(name), "blk.%u.%s", l, iname);
    ft_ir_tensor_t *t;
    ft_status_t st = ft_ir_add_tensor(m, name, role, (int32_t)l, &t);
    if (st) return st;
    t->dtype = s->dtype;
    t->n_dims = s->n_dims;
    memcpy(t->shape, s->shape, sizeof(t->shape));
    t->n_pieces = 1;
    t->pieces = ft_arena_alloc(m->arena, sizeof(ft_ir_piece_t));
    if (!t->pieces) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    t->pieces[0] = (ft_ir_piece_t){s->file, s->offset, s->n_bytes};
    t->xform = xform;
    if (tiled) t->tiling = (ft_ir_tiling_t){(uint32_t)Hk, (uint32_t)R, (uint32_t)e};
    return FT_OK;
}

ft_status_t ft_take_q35_hf_deltanet(ft_name_index_t *ix, const ft_src_model_t *src,
                                    ft_ir_model_t *m, uint32_t l)
{
    const ft_ir_attention_t *a = &m->blocks[l].attn;
    const uint64_t d = m->hp.d_model, hd = a->head_dim, Hk = a->n_kv_heads, Hv = a->n_heads,
                   R = Hv / Hk, K = a->conv_kernel, qk = 2 * Hk * hd, conv = qk + Hv * hd;
    const int tiled = a->heads_tiled; /* Qwen3.5: tile HF's grouped heads; Qwen3-Next: keep them */
    const ft_src_tensor_t *s;
    uint64_t rb;
    ft_status_t st;
    if (m->hp.arch == FT_ARCH_QWEN3NEXT) {
        char in_name[96], ba_name[96];
        int fused_in = 0;
        snprintf(in_name, sizeof(in_name), "model.layers.%u.linear_attn.in_proj_qkvz.weight", l);
        snprintf(ba_name, sizeof(ba_name), "model.layers.%u.linear_attn.in_proj_ba.weight", l);
        if ((st = ft_take_ssm_fused(ix, src, m, l, in_name, ba_name, &fused_in))) return st;
        if (!fused_in)
            return ft_status_make(FT_STATUS_FORMAT, "%s: missing tensor '%s'", src->path, in_name);
    } else {
        if ((st = ft_q35hf_src(ix, src, l, "in_proj_qkv.weight", conv, d, &s, &rb)) ||
            (st = ft_q35hf_rows(m, s, rb, l, "attn_qkv.weight", FT_ROLE_SSM_QKV, qk, Hk, R, hd,
                                tiled)) ||
            (st = ft_q35hf_src(ix, src, l, "in_proj_z.weight", Hv * hd, d, &s, &rb)) ||
            (st = ft_q35hf_rows(m, s, rb, l, "attn_gate.weight", FT_ROLE_ATTN_GATE, 0, Hk, R, hd,
                                tiled)) ||
            (st = ft_q35hf_src(ix, src, l, "in_proj_b.weight", Hv, d, &s, &rb)) ||
            (st = ft_q35hf_rows(m, s, rb, l, "ssm_beta.weight", FT_ROLE_SSM_BETA, 0, Hk, R, 1,
                                tiled)) ||
            (st = ft_q35hf_src(ix, src, l, "in_proj_a.weight", Hv, d, &s, &rb)) ||
            (st = ft_q35hf_rows(m, s, rb, l, "ssm_alpha.weight", FT_ROLE_SSM_ALPHA, 0, Hk, R, 1,
                                tiled)))
            return st;
    }
    if ((st = ft_q35hf_src(ix, src, l, "conv1d.weight", conv, K, &s, &rb)) ||
        (st = ft_q35hf_rows(m, s, rb, l, "ssm_conv1d.weight", FT_ROLE_SSM_CONV, qk, Hk, R, hd,
                            tiled)) ||
        (st = ft_q35hf_src(ix, src, l, "dt_bias", Hv, 0, &s, &rb)) ||
        (st = ft_q35hf_whole(m, s, l, "ssm_dt.bias", FT_ROLE_SSM_DT_BIAS, FT_IR_XFORM_NONE, Hk, R,
                             1, tiled)) ||
        (st = ft_q35hf_src(ix, src, l, "A_log", Hv, 0, &s, &rb)) ||
        (st = ft_q35hf_whole(m, s, l, "ssm_a", FT_ROLE_SSM_A, FT_IR_XFORM_NEG_EXP, Hk, R, 1,
                             tiled)) ||
        (st = ft_q35hf_src(ix, src, l, "norm.weight", hd, 0, &s, &rb)) ||
        (st = ft_q35hf_whole(m, s, l, "ssm_norm.weight", FT_ROLE_SSM_NORM, FT_IR_XFORM_NONE, Hk, R,
                             hd, 0)) ||
        (st = ft_q35hf_src(ix, src, l, "out_proj.weight", d, Hv * hd, &s, &rb)) ||
        (st = ft_q35hf_whole(m, s, l, "ssm_out.weight", FT_ROLE_SSM_OUT, FT_IR_XFORM_NONE, Hk, R,
                             hd, tiled)))
        return st;
    return FT_OK;
}

ft_status_t ft_take_q35_hf_fused_experts(ft_name_index_t *ix, const ft_src_model_t *src,
                                         ft_ir_model_t *m, uint32_t l, int *found)
{
    const ft_ir_moe_t *moe = &m->blocks[l].moe;
    const uint64_t E = moe->n_experts, F = moe->expert_ffn, d = m->hp.d_model;
    char gu_name[128], dn_name[128], iname[96];
    *found = 0;
    snprintf(gu_name, sizeof(gu_name), "model.layers.%u.mlp.experts.gate_up_proj", l);
    snprintf(dn_name, sizeof(dn_name), "model.layers.%u.mlp.experts.down_proj", l);
    const ft_src_tensor_t *gu = ft_name_take(ix, gu_name);
    if (!gu) return FT_OK; /* one tensor per expert and projection instead */
    const ft_src_tensor_t *dn = ft_name_take(ix, dn_name);
    if (!dn) return ft_status_make(FT_STATUS_FORMAT, "%s: missing tensor '%s'", src->path, dn_name);
    uint64_t rb_gu, rb_dn;
    if (gu->n_dims != 3 || gu->shape[0] != E || gu->shape[1] != 2 * F || gu->shape[2] != d ||
        !ft_dtype_row_bytes(gu->dtype, d, &rb_gu) || gu->n_bytes != E * 2 * F * rb_gu)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: tensor '%s' is not [%" PRIu64 ", %" PRIu64 ", %" PRIu64
                              "] (experts, gate rows then up rows, d_model)",
                              src->path, gu_name, E, 2 * F, d);
    if (dn->n_dims != 3 || dn->shape[0] != E || dn->shape[1] != d || dn->shape[2] != F ||
        !ft_dtype_row_bytes(dn->dtype, F, &rb_dn) || dn->n_bytes != E * d * rb_dn)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: tensor '%s' is not [%" PRIu64 ", %" PRIu64 ", %" PRIu64 "]",
                              src->path, dn_name, E, d, F);
    static const ft_tensor_role_t roles[2] = {FT_ROLE_FFN_GATE_EXPS, FT_ROLE_FFN_UP_EXPS};
    static const char *const names[2] = {"ffn_gate_exps", "ffn_up_exps"};
    ft_ir_tensor_t *t;
    ft_status_t st;
    for (int j = 0; j < 2; j++) { /* expert e: gate rows [2F e, +F), up rows [2F e + F, +F) */
        snprintf(iname, sizeof(iname), "blk.%u.%s.weight", l, names[j]);
        if ((st = ft_ir_add_tensor(m, iname, roles[j], (int32_t)l, &t))) return st;
        t->dtype = gu->dtype;
        t->n_dims = 3;
        t->shape[0] = E;
        t->shape[1] = F;
        t->shape[2] = d;
        t->n_pieces = (uint32_t)E;
        t->pieces = ft_arena_array(m->arena, E, sizeof(ft_ir_piece_t));
        if (!t->pieces) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
        for (uint64_t e = 0; e < E; e++)
            t->pieces[e] = (ft_ir_piece_t){gu->file, gu->offset + (2 * e + (uint64_t)j) * F * rb_gu,
                                           F * rb_gu};
    }
    snprintf(iname, sizeof(iname), "blk.%u.ffn_down_exps.weight", l);
    if ((st = ft_ir_add_tensor(m, iname, FT_ROLE_FFN_DOWN_EXPS, (int32_t)l, &t))) return st;
    t->dtype = dn->dtype;
    t->n_dims = 3;
    memcpy(t->shape, dn->shape, sizeof(t->shape));
    t->n_pieces = 1;
    t->pieces = ft_arena_alloc(m->arena, sizeof(ft_ir_piece_t));
    if (!t->pieces) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    t->pieces[0] = (ft_ir_piece_t){dn->file, dn->offset, dn->n_bytes};
    *found = 1;
    return FT_OK;
}
