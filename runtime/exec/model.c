#include "model.h"

#include "../backends/cpu/cpu_module.h"
#include "../backends/cpu/kernels.h"
#include "../base/alloc.h"

#include <inttypes.h>
#include <string.h>

/* Roles (plan.proto TensorRole) this executor reads. */
enum {
    R_TOKEN_EMBD = 1, R_OUTPUT_NORM = 2, R_OUTPUT = 3, R_ATTN_NORM = 4, R_Q = 5, R_K = 6, R_V = 7,
    R_O = 8, R_Q_NORM = 9, R_K_NORM = 10, R_FFN_NORM = 11, R_ROUTER = 12, R_GATE_EXPS = 13,
    R_UP_EXPS = 14, R_DOWN_EXPS = 15,
};

typedef struct ft_model_ctx {
    const ft_bundle_t *b;
    const char *where; /* the plan file, for messages */
} ft_model_ctx_t;

static const Ftplan__Tensor *ft_find(const ft_bundle_t *b, int role, int32_t layer)
{
    for (size_t i = 0; i < b->plan->n_tensors; i++)
        if ((int)b->plan->tensors[i]->role == role && b->plan->tensors[i]->layer == layer)
            return b->plan->tensors[i];
    return NULL;
}

FT_WARN_UNUSED static ft_status_t ft_missing(const ft_model_ctx_t *c, int role, int32_t layer)
{
    return ft_status_make(FT_STATUS_FORMAT, "%s: the plan has no tensor of role %d for layer %d",
                          c->where, role, layer);
}

/* Resolves a tensor's bytes in its weight file (validated by the plan
 * reader; ft_ftw_range checks again at no cost). */
FT_WARN_UNUSED static ft_status_t ft_bytes(const ft_model_ctx_t *c, const Ftplan__Tensor *t, uint64_t n_bytes,
                            const uint8_t **out)
{
    return ft_ftw_range(c->b->weight_files[t->file], t->offset, n_bytes, out);
}

FT_WARN_UNUSED static ft_status_t ft_vec(const ft_model_ctx_t *c, int role, int32_t layer, uint32_t n,
                          const float **out)
{
    const Ftplan__Tensor *t = ft_find(c->b, role, layer);
    if (!t)
        return ft_missing(c, role, layer);
    if (t->format != FTPLAN__WEIGHT_FORMAT__WF_F32 || t->n_shape != 1 || t->shape[0] != n)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: tensor '%s': expected an f32 vector of %u elements", c->where,
                              t->name, n);
    const uint8_t *p;
    ft_status_t st = ft_bytes(c, t, (uint64_t)n * 4, &p);
    *out = (const float *)p; /* FTW offsets are 4096-aligned */
    return st;
}

/* A plain [rows, cols] matrix, or with n_experts > 0 a [n_experts, rows,
 * cols] stack. */
FT_WARN_UNUSED static ft_status_t ft_matrix(const ft_model_ctx_t *c, int role, int32_t layer, uint32_t n_experts,
                             uint32_t rows, uint32_t cols, ft_mat_t *out)
{
    const Ftplan__Tensor *t = ft_find(c->b, role, layer);
    if (!t)
        return ft_missing(c, role, layer);
    const uint32_t nd = n_experts ? 3 : 2;
    int ok = t->n_shape == nd && t->shape[nd - 2] == rows && t->shape[nd - 1] == cols &&
             (!n_experts || (t->shape[0] == n_experts && t->expert_stride != 0));
    if (!ok)
        return ft_status_make(FT_STATUS_FORMAT, "%s: tensor '%s' does not have the shape the model implies",
                              c->where, t->name);
    ft_dtype_t dt = (ft_dtype_t)t->format;
    if (!ft_cpu_supports(dt))
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: tensor '%s': weight format %s has no CPU kernel (supported: f32, f16, "
                              "bf16, q8_0, q4_0, q4_k, q6_k)",
                              c->where, t->name, ft_dtype_name(dt));
    uint64_t rb;
    if (!ft_dtype_row_bytes(dt, cols, &rb))
        return ft_status_make(FT_STATUS_FORMAT, "%s: tensor '%s': bad row size", c->where, t->name);
    out->dtype = dt;
    out->rows = rows;
    out->cols = cols;
    out->row_bytes = (size_t)rb;
    out->expert_stride = n_experts ? t->expert_stride : 0;
    out->n_experts = n_experts ? n_experts : 1;
    /* the plan reader checked the whole stack lies in the file */
    uint64_t span = n_experts ? (uint64_t)(n_experts - 1) * t->expert_stride + t->size : t->size;
    if (t->size != (uint64_t)rows * rb)
        return ft_status_make(FT_STATUS_FORMAT, "%s: tensor '%s': size %" PRIu64 " != %u rows of %" PRIu64,
                              c->where, t->name, t->size, rows, rb);
    return ft_bytes(c, t, span, &out->data);
}

/* The layer's FTW expert block, and where gate, up and down sit in a blob. */
FT_WARN_UNUSED static ft_status_t ft_layer_blob(const ft_model_ctx_t *c, uint32_t l, ft_layer_t *L)
{
    const Ftplan__ExpertBlock *eb = NULL;
    for (size_t i = 0; i < c->b->plan->n_expert_blocks; i++)
        if (c->b->plan->expert_blocks[i]->layer == l)
            eb = c->b->plan->expert_blocks[i];
    if (!eb)
        return FT_OK; /* runs on the CPU from the stacks; offloading needs a block */
    const uint8_t *base;
    ft_status_t st = ft_ftw_range(c->b->weight_files[eb->file], eb->offset,
                                  (uint64_t)eb->n_experts * eb->stride, &base);
    if (st)
        return st;
    const ft_mat_t *parts[3] = {&L->gate, &L->up, &L->down};
    uint64_t *offs[3] = {&L->off_gate, &L->off_up, &L->off_down};
    for (int k = 0; k < 3; k++) {
        if (parts[k]->data < base || parts[k]->expert_stride != eb->stride ||
            (uint64_t)(parts[k]->data - base) + ft_mat_bytes(parts[k]) > eb->stride)
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: layer %u: the expert matrices do not lie inside the expert block",
                                  c->where, l);
        *offs[k] = (uint64_t)(parts[k]->data - base);
    }
    L->blob0 = base;
    L->blob_stride = eb->stride;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_layer_load(const ft_model_ctx_t *c, const Ftplan__Block *blk, uint32_t l,
                                 uint32_t d, ft_layer_t *L)
{
    const Ftplan__Attention *a = blk->attn;
    if (!a || a->kind != FTPLAN__ATTN_KIND__ATTN_GQA || a->sliding_window || a->has_sinks || a->has_bias)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: layer %u: only full causal GQA attention without bias or sinks runs here",
                              c->where, l);
    if (!blk->is_moe || !blk->moe || blk->moe->scoring != FTPLAN__ROUTER_SCORING__ROUTER_SOFTMAX ||
        blk->moe->n_shared_experts || blk->moe->has_router_bias || blk->act != FTPLAN__ACTIVATION__ACT_SILU)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: layer %u: only softmax-routed SwiGLU MoE layers run here", c->where, l);
    if (a->value_head_dim != a->head_dim || !a->qk_norm || a->n_kv_heads == 0 ||
        a->n_heads % a->n_kv_heads || a->head_dim % 2 || blk->moe->n_experts_used == 0 ||
        blk->moe->n_experts_used > blk->moe->n_experts)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: layer %u: attention or MoE shape not supported",
                              c->where, l);
    L->n_heads = a->n_heads;
    L->n_kv_heads = a->n_kv_heads;
    L->head_dim = a->head_dim;
    L->n_experts = blk->moe->n_experts;
    L->n_used = blk->moe->n_experts_used;
    L->expert_ffn = blk->moe->expert_ffn;
    L->norm_topk_prob = blk->moe->norm_topk_prob;
    const uint32_t q = L->n_heads * L->head_dim, kv = L->n_kv_heads * L->head_dim;
    const int32_t li = (int32_t)l;
    ft_status_t st;
    if ((st = ft_vec(c, R_ATTN_NORM, li, d, &L->attn_norm)) ||
        (st = ft_vec(c, R_FFN_NORM, li, d, &L->ffn_norm)) ||
        (st = ft_vec(c, R_Q_NORM, li, L->head_dim, &L->q_norm)) ||
        (st = ft_vec(c, R_K_NORM, li, L->head_dim, &L->k_norm)) ||
        (st = ft_matrix(c, R_Q, li, 0, q, d, &L->wq)) || (st = ft_matrix(c, R_K, li, 0, kv, d, &L->wk)) ||
        (st = ft_matrix(c, R_V, li, 0, kv, d, &L->wv)) || (st = ft_matrix(c, R_O, li, 0, d, q, &L->wo)) ||
        (st = ft_matrix(c, R_ROUTER, li, 0, L->n_experts, d, &L->router)) ||
        (st = ft_matrix(c, R_GATE_EXPS, li, L->n_experts, L->expert_ffn, d, &L->gate)) ||
        (st = ft_matrix(c, R_UP_EXPS, li, L->n_experts, L->expert_ffn, d, &L->up)) ||
        (st = ft_matrix(c, R_DOWN_EXPS, li, L->n_experts, d, L->expert_ffn, &L->down)))
        return st;
    return ft_layer_blob(c, l, L);
}

#define FT_MAX(a, b) ((a) > (b) ? (a) : (b))

static void ft_model_sizes(ft_model_t *m)
{
    uint64_t per_token = ft_mat_bytes(&m->output) + m->tok_embd.row_bytes + (uint64_t)m->d_model * 4;
    for (uint32_t l = 0; l < m->n_layers; l++) {
        const ft_layer_t *L = &m->layers[l];
        m->max_q_dim = FT_MAX(m->max_q_dim, L->n_heads * L->head_dim);
        m->max_kv_dim = FT_MAX(m->max_kv_dim, L->n_kv_heads * L->head_dim);
        m->max_heads = FT_MAX(m->max_heads, L->n_heads);
        m->max_group = FT_MAX(m->max_group, L->n_heads / L->n_kv_heads);
        m->max_experts = FT_MAX(m->max_experts, L->n_experts);
        m->max_used = FT_MAX(m->max_used, L->n_used);
        m->max_ffn = FT_MAX(m->max_ffn, L->expert_ffn);
        uint64_t expert = ft_mat_bytes(&L->gate) + ft_mat_bytes(&L->up) + ft_mat_bytes(&L->down);
        per_token += ft_mat_bytes(&L->wq) + ft_mat_bytes(&L->wk) + ft_mat_bytes(&L->wv) +
                     ft_mat_bytes(&L->wo) + ft_mat_bytes(&L->router) + (uint64_t)L->n_used * expert +
                     (2ull * m->d_model + 2ull * L->head_dim) * 4;
    }
    m->weight_bytes_per_token = per_token;
}

ft_status_t ft_model_create(const ft_bundle_t *b, const ft_allocator_t *alloc, ft_model_t **out_model)
{
    *out_model = NULL;
    const Ftplan__Plan *plan = b->plan;
    const Ftplan__Hparams *hp = plan->hparams;
    ft_model_ctx_t c = {b, b->plan_file->path};
    if (hp->arch != FTPLAN__ARCH__ARCH_QWEN3MOE)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: architecture '%s' has no executor yet",
                              c.where, hp->arch_name);
    if (hp->norm != FTPLAN__NORM_KIND__NORM_RMS || hp->rope != FTPLAN__ROPE_KIND__ROPE_NEOX ||
        hp->rope_dim == 0 || hp->rope_dim % 2)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: only RMSNorm with NeoX RoPE runs here", c.where);
    ft_model_t *m = ft_mem_calloc(alloc, 1, sizeof(*m));
    if (!m)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", c.where);
    m->n_layers = hp->n_layers;
    m->d_model = hp->d_model;
    m->vocab_size = hp->vocab_size;
    m->context_length = hp->context_length;
    m->norm_eps = hp->norm_eps;
    m->rope_theta = hp->rope_theta;
    m->rope_dim = hp->rope_dim;
    ft_status_t st = FT_OK;
    m->layers = ft_mem_calloc(alloc, m->n_layers ? m->n_layers : 1, sizeof(ft_layer_t));
    if (!m->layers) {
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", c.where);
        goto fail;
    }
    if ((st = ft_matrix(&c, R_TOKEN_EMBD, -1, 0, m->vocab_size, m->d_model, &m->tok_embd)) ||
        (st = ft_vec(&c, R_OUTPUT_NORM, -1, m->d_model, &m->output_norm)))
        goto fail;
    if (hp->tie_embeddings)
        m->output = m->tok_embd;
    else if ((st = ft_matrix(&c, R_OUTPUT, -1, 0, m->vocab_size, m->d_model, &m->output)))
        goto fail;
    for (uint32_t l = 0; l < m->n_layers && !st; l++) {
        st = ft_layer_load(&c, plan->blocks[l], l, m->d_model, &m->layers[l]);
        if (!st && m->rope_dim > m->layers[l].head_dim)
            st = ft_status_make(FT_STATUS_FORMAT, "%s: rope_dim %u exceeds head_dim", c.where, m->rope_dim);
    }
    if (st)
        goto fail;
    for (uint32_t i = 0; i < b->n_weight_files; i++)
        m->weight_bytes += ft_ftw_data_bytes(b->weight_files[i]);
    ft_model_sizes(m);
    *out_model = m;
    return FT_OK;
fail:
    ft_model_destroy(m, alloc);
    return st;
}

void ft_model_destroy(ft_model_t *m, const ft_allocator_t *alloc)
{
    if (!m)
        return;
    ft_mem_free(alloc, m->layers);
    ft_mem_free(alloc, m);
}

void ft_model_bind_kernels(ft_model_t *m, const ft_cpu_module_t *k)
{
#define FT_FIND(mat) ((mat).kernel = ft_cpu_module_find_matmul(k, (mat).dtype, (mat).rows, (mat).cols))
    FT_FIND(m->output);
    m->output_norm_prepare = ft_cpu_module_find_norm_prepare(k, m->output.dtype, m->d_model);
    for (uint32_t l = 0; l < m->n_layers; l++) {
        ft_layer_t *L = &m->layers[l];
        FT_FIND(L->wq);
        FT_FIND(L->wk);
        FT_FIND(L->wv);
        FT_FIND(L->wo);
        FT_FIND(L->router);
        FT_FIND(L->gate);
        FT_FIND(L->up);
        FT_FIND(L->down);
        L->expert_kernel = L->gate.dtype == L->up.dtype
                               ? ft_cpu_module_find_expert(k, L->gate.dtype, L->down.dtype,
                                                           L->expert_ffn, m->d_model)
                               : NULL;
        const int qkv_one_format = L->wq.dtype == L->wk.dtype && L->wq.dtype == L->wv.dtype;
        L->attn_norm_prepare = qkv_one_format ? ft_cpu_module_find_norm_prepare(k, L->wq.dtype, m->d_model)
                                              : NULL;
        L->ffn_norm_prepare = ft_cpu_module_find_norm_prepare(k, L->router.dtype, m->d_model);
        L->ffn_norm_prepare_experts = L->gate.dtype == L->up.dtype
                                          ? ft_cpu_module_find_norm_prepare(k, L->gate.dtype, m->d_model)
                                          : NULL;
        L->router_kernel = ft_cpu_module_find_router(k, L->router.dtype, L->n_experts, m->d_model);
        L->attn_kernel = ft_cpu_module_find_attn(k, L->n_heads / L->n_kv_heads, L->head_dim);
    }
#undef FT_FIND
}
