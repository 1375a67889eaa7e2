/* Model shape from an imported IR: every tensor's element count re-counted
 * in the requested formats, so that a shape computed from hyperparameters
 * alone (shape_*.c) can be checked against the real tensor table. */
#include "shape_internal.h"

static int ft_shape_ir_is_expert(ft_tensor_role_t r)
{
    return r == FT_ROLE_FFN_GATE_EXPS || r == FT_ROLE_FFN_UP_EXPS || r == FT_ROLE_FFN_DOWN_EXPS;
}

/* Which of a routed expert's gate (0), up (1), down (2) role r is. */
static int ft_shape_ir_part(ft_tensor_role_t r)
{
    return r == FT_ROLE_FFN_GATE_EXPS ? 0 : r == FT_ROLE_FFN_UP_EXPS ? 1 : 2;
}

/* One tensor of layer L: a [n_experts, rows, cols] expert stack counts one
 * expert's matrix; other 2-D tensors are dense matrices; 1-D are f32.
 * fmt: the tensor's own format (a mix's choice), or FT_DTYPE_INVALID for
 * the context's expert / dense format. */
FT_WARN_UNUSED static ft_status_t ft_shape_ir_tensor(ft_shape_ctx_t *c, const ft_ir_tensor_t *t,
                                                     ft_dtype_t fmt, ft_plan_layer_t *L)
{
    if (ft_shape_ir_is_expert(t->role)) {
        if (t->n_dims != 3)
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: expert tensor '%s' has %u dims, expected 3", c->where,
                                  t->name, t->n_dims);
        if (fmt == FT_DTYPE_INVALID) {
            ft_shape_expert_matrix(c, L, t->shape[1], t->shape[2]);
            return FT_OK;
        }
        /* per part, so that the planner times each in its own format */
        const uint64_t b = ft_shape_matrix_bytes(c, fmt, t->shape[1], t->shape[2]);
        const int part = ft_shape_ir_part(t->role);
        L->expert_part_format[part] = fmt;
        L->expert_part_bytes[part] = b;
        L->expert_bytes = ft_shape_add(c, L->expert_bytes, b);
        L->expert_params = ft_shape_add(c, L->expert_params, ft_shape_mul(c, t->shape[1], t->shape[2]));
        return FT_OK;
    }
    if (t->n_dims == 1)
        ft_shape_vec(c, L, t->shape[0]);
    else if (t->role == FT_ROLE_SSM_CONV && t->n_dims == 2) /* the conv's taps: kept f32 */
        ft_shape_vec(c, L, ft_shape_mul(c, t->shape[0], t->shape[1]));
    else if (t->n_dims == 2 && fmt != FT_DTYPE_INVALID) {
        L->dense_bytes = ft_shape_add(c, L->dense_bytes, ft_shape_matrix_bytes(c, fmt, t->shape[0], t->shape[1]));
        L->dense_params = ft_shape_add(c, L->dense_params, ft_shape_mul(c, t->shape[0], t->shape[1]));
    } else if (t->n_dims == 2)
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
    return ft_model_shape_from_ir_formats(model, expert_format, dense_format, NULL, out);
}

/* The embedding and output head in their own formats (a mix's). */
static void ft_shape_ir_heads(ft_shape_ctx_t *c, const ft_ir_model_t *model, const ft_dtype_t *formats,
                              ft_plan_model_t *m)
{
    uint64_t embd = 0, output = 0;
    int has_output = 0;
    for (uint32_t i = 0; i < model->n_tensors; i++) {
        const ft_ir_tensor_t *t = &model->tensors[i];
        if (t->n_dims != 2 || (t->role != FT_ROLE_TOKEN_EMBD && t->role != FT_ROLE_OUTPUT)) continue;
        const uint64_t b = ft_shape_matrix_bytes(c, formats[i], t->shape[0], t->shape[1]);
        if (t->role == FT_ROLE_OUTPUT) {
            output = b;
            has_output = 1;
        } else {
            embd = b;
        }
    }
    /* tied: the head is the embedding, counted once as output_bytes */
    m->output_bytes = has_output ? output : embd;
    m->embed_bytes = has_output ? embd : 0;
}

ft_status_t ft_model_shape_from_ir_formats(const ft_ir_model_t *model, ft_dtype_t expert_format,
                                           ft_dtype_t dense_format, const ft_dtype_t *formats,
                                           ft_plan_model_t **out)
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
            st = ft_shape_ir_tensor(&c, t, formats ? formats[i] : FT_DTYPE_INVALID, &m->layers[t->layer]);
        else if (t->role == FT_ROLE_OUTPUT_NORM) /* counted with the last layer, as shape_*.c do */
            st = ft_shape_ir_tensor(&c, t, formats ? formats[i] : FT_DTYPE_INVALID,
                                    &m->layers[hp->n_layers - 1]);
        else if (t->role != FT_ROLE_TOKEN_EMBD && t->role != FT_ROLE_OUTPUT)
            st = ft_status_make(FT_STATUS_UNSUPPORTED,
                                "%s: global tensor '%s' has no place in a shape", where, t->name);
    }
    ft_shape_embeddings(&c, m, hp->tie_embeddings);
    if (formats) ft_shape_ir_heads(&c, model, formats, m);
    if (!st) st = ft_shape_finish(&c, m);
    if (st) {
        ft_model_shape_free(m);
        return st;
    }
    *out = m;
    return FT_OK;
}
