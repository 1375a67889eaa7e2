/* The CUDA spec of an IR model: which (format, columns) matrix products
 * the layers need, and the attention and MoE shapes, checked to be uniform
 * across layers (one kernel instance per shape). */
#include "cuda_codegen.h"
#include "ft_cuda_kernels.h"

#include <string.h>

FT_WARN_UNUSED static ft_status_t ft_cg_cuda_add_matmul(ft_cg_cuda_spec_t *sp, const ft_ir_tensor_t *t,
                                         int experts)
{
    if (!ft_cg_cuda_supports(t->dtype))
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "tensor '%s': weight format %s has no CUDA kernel", t->name,
                              ft_dtype_name(t->dtype));
    if (t->n_dims < 2 || t->shape[t->n_dims - 1] > UINT32_MAX)
        return ft_status_make(FT_STATUS_FORMAT, "tensor '%s': %u dimensions, expected a matrix",
                              t->name, t->n_dims);
    const uint32_t cols = (uint32_t)t->shape[t->n_dims - 1];
    for (uint32_t i = 0; i < sp->n_matmuls; i++) {
        ft_cg_cuda_matmul_t *m = &sp->matmuls[i];
        if (m->wtype == t->dtype && m->cols == cols) {
            m->experts |= experts;
            return FT_OK;
        }
    }
    if (sp->n_matmuls == FT_CG_CUDA_MAX_MATMULS)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "tensor '%s': more than %d distinct matmul shapes", t->name,
                              FT_CG_CUDA_MAX_MATMULS);
    sp->matmuls[sp->n_matmuls++] = (ft_cg_cuda_matmul_t){t->dtype, cols, experts};
    return FT_OK;
}

static int ft_cg_cuda_is_matmul(ft_tensor_role_t role, int *experts)
{
    *experts = role == FT_ROLE_FFN_GATE_EXPS || role == FT_ROLE_FFN_UP_EXPS ||
               role == FT_ROLE_FFN_DOWN_EXPS;
    switch (role) {
    case FT_ROLE_OUTPUT:
    case FT_ROLE_ATTN_Q:
    case FT_ROLE_ATTN_K:
    case FT_ROLE_ATTN_V:
    case FT_ROLE_ATTN_O:
    case FT_ROLE_FFN_ROUTER:
    case FT_ROLE_FFN_GATE:
    case FT_ROLE_FFN_UP:
    case FT_ROLE_FFN_DOWN:
    case FT_ROLE_FFN_GATE_SHEXP:
    case FT_ROLE_FFN_UP_SHEXP:
    case FT_ROLE_FFN_DOWN_SHEXP:
    case FT_ROLE_FFN_GATE_INP_SHEXP:
    case FT_ROLE_ATTN_GATE:
    case FT_ROLE_SSM_QKV:
    case FT_ROLE_SSM_BETA:
    case FT_ROLE_SSM_ALPHA:
    case FT_ROLE_SSM_OUT:
        return 1;
    default:
        return *experts;
    }
}

ft_status_t ft_cg_cuda_spec_from_ir(const ft_ir_model_t *model, ft_cg_cuda_spec_t *sp)
{
    memset(sp, 0, sizeof(*sp));
    const ft_ir_hparams_t *hp = &model->hp;
    /* Either RoPE pair layout: every module has both kernels. */
    if ((hp->rope != FT_ROPE_NEOX && hp->rope != FT_ROPE_NORM) || hp->norm != FT_NORM_RMS ||
        !hp->n_layers)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: the CUDA kernels need RMSNorm and RoPE over NeoX or adjacent "
                              "pairs (model has norm %d, rope %d, %u layers)",
                              model->source_name ? model->source_name : "model", hp->norm, hp->rope,
                              hp->n_layers);
    /* The attention shape: the first full-attention block's (Gated DeltaNet
     * blocks have their own, checked uniform below). */
    const ft_ir_block_t *b0 = &model->blocks[0];
    for (uint32_t l = 0; l < hp->n_layers; l++)
        if (model->blocks[l].attn.kind != FT_ATTN_GATED_DELTANET) {
            b0 = &model->blocks[l];
            break;
        }
    const ft_ir_block_t *dn0 = NULL;
    sp->d_model = hp->d_model;
    sp->n_heads = b0->attn.n_heads;
    sp->n_kv_heads = b0->attn.n_kv_heads;
    sp->head_dim = b0->attn.head_dim;
    sp->rope_dim = hp->rope_dim ? hp->rope_dim : b0->attn.head_dim;
    sp->rope_theta = hp->rope_theta;
    sp->norm_eps = hp->norm_eps;
    if (hp->rope_yarn_factor != 0.0f) sp->variants |= FT_CG_CUDA_VAR_ROPE_TABLE;
    for (uint32_t l = 0; l < hp->n_layers; l++) {
        const ft_ir_block_t *b = &model->blocks[l];
        if (b->attn.has_sinks) sp->variants |= FT_CG_CUDA_VAR_SINKS;
        if (b->attn.has_bias) sp->variants |= FT_CG_CUDA_VAR_BIAS;
        if (b->act == FT_ACT_SWIGLU_OAI) sp->variants |= FT_CG_CUDA_VAR_SWIGLU_OAI;
        if (b->attn.has_out_gate) sp->variants |= FT_CG_CUDA_VAR_OUT_GATE;
        if (b->is_moe && b->moe.shared_gate) sp->variants |= FT_CG_CUDA_VAR_SHARED_GATE;
        if (b->attn.qk_norm && b->attn.qk_norm_full) sp->qk_norm_full = 1;
        if (b->attn.kind == FT_ATTN_MLA) { /* the MLA op itself has no kernel: the backend refuses it */
            sp->q_lora_rank = b->attn.q_lora_rank;
            sp->kv_lora_rank = b->attn.kv_lora_rank;
        }
        if (b->attn.kind == FT_ATTN_GATED_DELTANET) {
            if (!dn0) dn0 = b;
            if (b->attn.head_dim > FT_CUDA_DELTANET_MAX_HD)
                return ft_status_make(FT_STATUS_UNSUPPORTED,
                                      "layer %u: Gated DeltaNet heads of %u (the CUDA kernel "
                                      "takes up to %u)",
                                      l, b->attn.head_dim, FT_CUDA_DELTANET_MAX_HD);
            if (b->attn.head_dim != dn0->attn.head_dim)
                return ft_status_make(FT_STATUS_UNSUPPORTED,
                                      "layer %u: Gated DeltaNet head size differs from layer %u's",
                                      l, (uint32_t)(dn0 - model->blocks));
            sp->variants |= FT_CG_CUDA_VAR_DELTANET;
            sp->dn_head_dim = b->attn.head_dim;
        } else if (b->attn.n_heads != sp->n_heads || b->attn.n_kv_heads != sp->n_kv_heads ||
            b->attn.head_dim != sp->head_dim || b->attn.value_head_dim != b0->attn.value_head_dim)
            return ft_status_make(FT_STATUS_UNSUPPORTED,
                                  "layer %u: attention shape differs from layer 0", l);
        if (!b->is_moe) continue;
        if (sp->n_experts &&
            (b->moe.n_experts != sp->n_experts || b->moe.n_experts_used != sp->n_experts_used))
            return ft_status_make(FT_STATUS_UNSUPPORTED,
                                  "layer %u: %u of %u experts differs from earlier layers", l,
                                  b->moe.n_experts_used, b->moe.n_experts);
        /* A sigmoid, grouped, selection-biased or scaled router: the
         * extended router kernel too. */
        if (b->moe.scoring != FT_ROUTER_SOFTMAX || b->moe.n_groups || b->moe.has_sel_bias ||
            (b->moe.routed_scaling != 0.0f && b->moe.routed_scaling != 1.0f))
            sp->variants |= FT_CG_CUDA_VAR_ROUTER_EXT;
        sp->n_experts = b->moe.n_experts;
        sp->n_experts_used = b->moe.n_experts_used;
        sp->norm_topk_prob = b->moe.norm_topk_prob;
    }
    for (uint32_t i = 0; i < model->n_tensors; i++) {
        const ft_tensor_role_t role = model->tensors[i].role;
        if ((role >= FT_ROLE_ATTN_Q_BIAS && role <= FT_ROLE_ATTN_O_BIAS) ||
            (role >= FT_ROLE_FFN_ROUTER_BIAS && role <= FT_ROLE_FFN_DOWN_EXPS_BIAS))
            sp->variants |= FT_CG_CUDA_VAR_BIAS; /* LINEAR, router logit and expert biases */
        if (role == FT_ROLE_ATTN_SINKS) sp->variants |= FT_CG_CUDA_VAR_SINKS;
        if (role == FT_ROLE_FFN_EXP_PROBS_B)
            sp->variants |= FT_CG_CUDA_VAR_ROUTER_EXT; /* a selection bias */
    }
    for (uint32_t i = 0; i < model->n_tensors; i++) {
        int experts;
        if (!ft_cg_cuda_is_matmul(model->tensors[i].role, &experts)) continue;
        ft_status_t st = ft_cg_cuda_add_matmul(sp, &model->tensors[i], experts);
        if (st) return st;
    }
    return FT_OK;
}
