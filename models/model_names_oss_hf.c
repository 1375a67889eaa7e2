/* gpt-oss HF checkpoints (GptOssForCausalLM, as OpenAI ships them): the
 * experts of layer l into the IR stacks the GGUF import makes
 * (ffn_{gate,up,down}_exps [E, rows, cols] and their biases [E, rows]).
 *
 *   mlp.experts.gate_up_proj_blocks [E, 2F, d/32, 16] u8, _scales [E, 2F, d/32] u8
 *   mlp.experts.gate_up_proj_bias   [E, 2F]
 *   mlp.experts.down_proj_blocks    [E, d, F/32, 16] u8,  _scales [E, d, F/32] u8
 *   mlp.experts.down_proj_bias      [E, d]
 *
 * Gate and up alternate: output row 2j of gate_up is gate j, 2j + 1 up j
 * (transformers' GptOssExperts takes gate_up[..., ::2] and [..., 1::2]).
 * An MXFP4 block is 32 E2M1 codes, byte i holding elements 2i (low nibble)
 * and 2i + 1 (high), with its E8M0 scale (2^(s - 127)) in _scales; the
 * runtime's block (ggml's) is the scale byte then 16 bytes holding element
 * i low and i + 16 high, values 2 x E2M1 times 2^(e - 128): the same codes
 * and the same scale byte. The packer moves the bits (ir.h:
 * FT_IR_XFORM_MXFP4_HF); nothing is dequantized or re-rounded. The
 * dequantized form some re-uploads carry (gate_up_proj [E, d, 2F],
 * transposed against nn.Linear) is refused naming the tensor. */
#include "model_names_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Source tensor model.layers.<l>.mlp.experts.<what> of dtype (INVALID:
 * f32, f16 or bf16) and exactly shape [n_dims]. */
FT_WARN_UNUSED static ft_status_t ft_osshf_src(ft_name_index_t *ix, const ft_src_model_t *src,
                                               uint32_t l, const char *what, ft_dtype_t dtype,
                                               uint32_t n_dims, const uint64_t *shape,
                                               const ft_src_tensor_t **out)
{
    char name[160];
    snprintf(name, sizeof(name), "model.layers.%u.mlp.experts.%s", l, what);
    const ft_src_tensor_t *s = ft_name_take(ix, name);
    if (!s) return ft_status_make(FT_STATUS_FORMAT, "%s: missing tensor '%s'", src->path, name);
    int ok = s->n_dims == n_dims &&
             (dtype != FT_DTYPE_INVALID ? s->dtype == dtype
                                        : s->dtype == FT_DTYPE_F32 || s->dtype == FT_DTYPE_F16 ||
                                              s->dtype == FT_DTYPE_BF16);
    uint64_t elems = 1, esize = dtype == FT_DTYPE_U8 ? 1 : s->dtype == FT_DTYPE_F32 ? 4 : 2;
    for (uint32_t i = 0; ok && i < n_dims; i++) {
        ok = s->shape[i] == shape[i];
        elems *= shape[i];
    }
    if (!ok || s->n_bytes != elems * esize) {
        char want[96] = "";
        size_t n = 0;
        for (uint32_t i = 0; i < n_dims && n < sizeof(want); i++)
            n += (size_t)snprintf(want + n, sizeof(want) - n, "%s%" PRIu64, i ? ", " : "", shape[i]);
        return ft_status_make(FT_STATUS_FORMAT, "%s: tensor '%s' is not [%s] %s", src->path, name,
                              want, dtype == FT_DTYPE_U8 ? "u8" : "f32/f16/bf16");
    }
    *out = s;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_osshf_add(ft_ir_model_t *m, uint32_t l, const char *iname,
                                               ft_tensor_role_t role, ft_dtype_t dtype,
                                               uint32_t n_dims, uint64_t d0, uint64_t d1,
                                               uint64_t d2, ft_ir_tensor_t **out)
{
    char name[96];
    snprintf(name, sizeof(name), "blk.%u.%s", l, iname);
    ft_status_t st = ft_ir_add_tensor(m, name, role, (int32_t)l, out);
    if (st) return st;
    ft_ir_tensor_t *t = *out;
    t->dtype = dtype;
    t->n_dims = n_dims;
    t->shape[0] = d0;
    t->shape[1] = d1;
    t->shape[2] = d2;
    t->pieces = ft_arena_array(m->arena, 2, sizeof(ft_ir_piece_t));
    return t->pieces ? FT_OK : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
}

ft_status_t ft_take_oss_hf_experts(ft_name_index_t *ix, const ft_src_model_t *src,
                                   ft_ir_model_t *m, uint32_t l)
{
    const ft_ir_moe_t *moe = &m->blocks[l].moe;
    const uint64_t E = moe->n_experts, F = moe->expert_ffn, d = m->hp.d_model;
    char name[160];
    snprintf(name, sizeof(name), "model.layers.%u.mlp.experts.gate_up_proj", l);
    if (ft_name_take(ix, name))
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: tensor '%s' is gpt-oss's experts dequantized (transposed, gate "
                              "and up in alternating columns); freetoken reads them as OpenAI "
                              "ships them (gate_up_proj_blocks and _scales)",
                              src->path, name);
    if (d % 32 || F % 32)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: layer %u: d_model %" PRIu64 " and expert FFN %" PRIu64
                              " must be whole MXFP4 blocks of 32",
                              src->path, l, d, F);
    const ft_src_tensor_t *gub, *gus, *gubias, *dnb, *dns, *dnbias;
    const uint64_t s_gub[4] = {E, 2 * F, d / 32, 16}, s_gus[3] = {E, 2 * F, d / 32},
                   s_gubias[2] = {E, 2 * F}, s_dnb[4] = {E, d, F / 32, 16}, s_dns[3] = {E, d, F / 32},
                   s_dnbias[2] = {E, d};
    ft_status_t st;
    if ((st = ft_osshf_src(ix, src, l, "gate_up_proj_blocks", FT_DTYPE_U8, 4, s_gub, &gub)) ||
        (st = ft_osshf_src(ix, src, l, "gate_up_proj_scales", FT_DTYPE_U8, 3, s_gus, &gus)) ||
        (st = ft_osshf_src(ix, src, l, "gate_up_proj_bias", FT_DTYPE_INVALID, 2, s_gubias,
                           &gubias)) ||
        (st = ft_osshf_src(ix, src, l, "down_proj_blocks", FT_DTYPE_U8, 4, s_dnb, &dnb)) ||
        (st = ft_osshf_src(ix, src, l, "down_proj_scales", FT_DTYPE_U8, 3, s_dns, &dns)) ||
        (st = ft_osshf_src(ix, src, l, "down_proj_bias", FT_DTYPE_INVALID, 2, s_dnbias, &dnbias)))
        return st;
    static const char *const mats[2] = {"ffn_gate_exps.weight", "ffn_up_exps.weight"};
    static const char *const biases[2] = {"ffn_gate_exps.bias", "ffn_up_exps.bias"};
    static const ft_tensor_role_t mroles[2] = {FT_ROLE_FFN_GATE_EXPS, FT_ROLE_FFN_UP_EXPS};
    static const ft_tensor_role_t broles[2] = {FT_ROLE_FFN_GATE_EXPS_BIAS,
                                               FT_ROLE_FFN_UP_EXPS_BIAS};
    ft_ir_tensor_t *t;
    for (uint32_t j = 0; j < 2; j++) { /* gate: even rows, up: odd rows */
        if ((st = ft_osshf_add(m, l, mats[j], mroles[j], FT_DTYPE_MXFP4, 3, E, F, d, &t))) return st;
        t->xform = FT_IR_XFORM_MXFP4_HF;
        t->il = (ft_ir_interleave_t){F, 2, j};
        t->n_pieces = 2;
        t->pieces[0] = (ft_ir_piece_t){gub->file, gub->offset, gub->n_bytes};
        t->pieces[1] = (ft_ir_piece_t){gus->file, gus->offset, gus->n_bytes};
        if ((st = ft_osshf_add(m, l, biases[j], broles[j], gubias->dtype, 2, E, F, 0, &t))) return st;
        t->xform = FT_IR_XFORM_DEINTERLEAVE;
        t->il = (ft_ir_interleave_t){0, 2, j};
        t->n_pieces = 1;
        t->pieces[0] = (ft_ir_piece_t){gubias->file, gubias->offset, gubias->n_bytes};
    }
    if ((st = ft_osshf_add(m, l, "ffn_down_exps.weight", FT_ROLE_FFN_DOWN_EXPS, FT_DTYPE_MXFP4, 3,
                           E, d, F, &t)))
        return st;
    t->xform = FT_IR_XFORM_MXFP4_HF;
    t->il = (ft_ir_interleave_t){d, 1, 0};
    t->n_pieces = 2;
    t->pieces[0] = (ft_ir_piece_t){dnb->file, dnb->offset, dnb->n_bytes};
    t->pieces[1] = (ft_ir_piece_t){dns->file, dns->offset, dns->n_bytes};
    if ((st = ft_osshf_add(m, l, "ffn_down_exps.bias", FT_ROLE_FFN_DOWN_EXPS_BIAS, dnbias->dtype, 2,
                           E, d, 0, &t)))
        return st;
    t->n_pieces = 1;
    t->pieces[0] = (ft_ir_piece_t){dnbias->file, dnbias->offset, dnbias->n_bytes};
    return FT_OK;
}
