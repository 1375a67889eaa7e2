/* Model shape from an imported IR: every tensor's element count re-counted
 * in the requested formats, so that a shape computed from hyperparameters
 * alone (shape_*.c) can be checked against the real tensor table. */
#include "shape_internal.h"

static int ft_shape_ir_is_expert(ft_tensor_role_t r)
{
    return r == FT_ROLE_FFN_GATE_EXPS || r == FT_ROLE_FFN_UP_EXPS || r == FT_ROLE_FFN_DOWN_EXPS;
}

/* One tensor of layer L: a [n_experts, rows, cols] expert stack counts one
 * expert's matrix; other 2-D tensors are dense matrices; 1-D are f32. */
FT_WARN_UNUSED static ft_status_t ft_shape_ir_tensor(ft_shape_ctx_t *c, const ft_ir_tensor_t *t,
                                      ft_plan_layer_t *L)
{
    if (ft_shape_ir_is_expert(t->role)) {
        if (t->n_dims != 3)
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: expert tensor '%s' has %u dims, expected 3", c->where,
                                  t->name, t->n_dims);
        ft_shape_expert_matrix(c, L, t->shape[1], t->shape[2]);
        return FT_OK;
    }
    if (t->n_dims == 1)
        ft_shape_vec(c, L, t->shape[0]);
    else if (t->role == FT_ROLE_SSM_CONV && t->n_dims == 2) /* the conv's taps: kept f32 */
        ft_shape_vec(c, L, ft_shape_mul(c, t->shape[0], t->shape[1]));
    else if (t->n_dims == 2)
        ft_shape_dense(c, L, t->shape[0], t->shape[1]);
    else
        return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: tensor '%s' has %u dims", c->where,
                              t->name, t->n_dims);
    return FT_OK;
}

static void ft_shape_ir_block(ft_shape_ctx_t *c, const ft_ir_block_t *b, uint32_t rope_dim, ft_plan_layer_t *L)
{
    L->is_moe = b->is_moe;
    if (b->is_moe) {
        L->n_experts = b->moe.n_experts;
        L->n_used = b->moe.n_experts_used;
    }
    const ft_ir_attention_t *a = &b->attn;
    if (a->kind == FT_ATTN_GQA) {
        const uint64_t per_token =
            ft_shape_mul(c, (uint64_t)a->n_kv_heads * ((uint64_t)a->head_dim + a->value_head_dim),
                         FT_SHAPE_KV_ELEM_BYTES);
        if (a->sliding_window) /* a ring of the window: a fixed state */
            L->state_bytes = ft_shape_mul(c, per_token, a->sliding_window);
        else
            L->kv_bytes_per_token = per_token;
    } else if (a->kind == FT_ATTN_GATED_DELTANET) {
        /* no KV: the conv's last conv_kernel - 1 inputs over (2 Hk + Hv) heads
         * and S (hd x hd) per value head, f32 (runtime/exec/op_deltanet.c) */
        const uint64_t ch = (2ull * a->n_kv_heads + a->n_heads) * a->head_dim;
        const uint64_t conv = ft_shape_mul3(c, ch, a->conv_kernel - 1, FT_SHAPE_STATE_ELEM_BYTES);
        const uint64_t S = ft_shape_mul3(c, a->n_heads, (uint64_t)a->head_dim * a->value_head_dim,
                                         FT_SHAPE_STATE_ELEM_BYTES);
        L->state_bytes = ft_shape_add(c, conv, S);
    }
    if (a->kind == FT_ATTN_MLA) /* the compressed row [c | k_rope], shared by the heads */
        L->kv_bytes_per_token = ft_shape_mul(c, (uint64_t)a->kv_lora_rank + rope_dim, FT_SHAPE_KV_ELEM_BYTES);
}

ft_status_t ft_model_shape_from_ir(const ft_ir_model_t *model, ft_dtype_t expert_format,
                                   ft_dtype_t dense_format, ft_plan_model_t **out)
{
    *out = NULL;
    const ft_ir_hparams_t *hp = &model->hp;
    const char *where = model->source_name ? model->source_name : "model";
    if (!ft_dtype_info(expert_format) || !ft_dtype_info(dense_format))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "%s: invalid weight format", where);
    if (hp->n_layers == 0 || hp->n_layers > FT_SHAPE_MAX_LAYERS)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: %u layers", where, hp->n_layers);
    ft_shape_ctx_t c = {NULL, where, "", expert_format, dense_format, 0};
    ft_plan_model_t *m = NULL;
    ft_status_t st = ft_shape_alloc(hp->arch_name ? hp->arch_name : ft_arch_name(hp->arch),
                                    hp->n_layers, hp->d_model, hp->vocab_size, &m);
    if (st) return st;
    for (uint32_t l = 0; l < hp->n_layers; l++)
        ft_shape_ir_block(&c, &model->blocks[l], hp->rope_dim, &m->layers[l]);
    for (uint32_t i = 0; i < model->n_tensors && !st; i++) {
        const ft_ir_tensor_t *t = &model->tensors[i];
        if (t->layer >= 0 && (uint32_t)t->layer < hp->n_layers)
            st = ft_shape_ir_tensor(&c, t, &m->layers[t->layer]);
        else if (t->role == FT_ROLE_OUTPUT_NORM) /* counted with the last layer, as shape_*.c do */
            st = ft_shape_ir_tensor(&c, t, &m->layers[hp->n_layers - 1]);
        else if (t->role != FT_ROLE_TOKEN_EMBD && t->role != FT_ROLE_OUTPUT)
            st = ft_status_make(FT_STATUS_UNSUPPORTED,
                                "%s: global tensor '%s' has no place in a shape", where, t->name);
    }
    ft_shape_embeddings(&c, m, hp->tie_embeddings);
    if (!st) st = ft_shape_finish(&c, m);
    if (st) {
        ft_model_shape_free(m);
        return st;
    }
    *out = m;
    return FT_OK;
}
