#include "model.h"

#include "program.h"

#include "../backends/cpu/cpu_module.h"
#include "../backends/cpu/kernels.h"
#include "../base/alloc.h"
#include "../format/wlayout.h"
#include "../plan/from_plan.h"

#include <inttypes.h>
#include <string.h>

typedef struct ft_model_ctx {
    const ft_bundle_t *b;
    const char *where; /* the plan file, for messages */
} ft_model_ctx_t;

FT_WARN_UNUSED static ft_status_t ft_bytes(const ft_model_ctx_t *c, const Ftplan__Tensor *t, uint64_t n_bytes,
                            const uint8_t **out)
{
    return ft_ftw_range(c->b->weight_files[t->file], t->offset, n_bytes, out);
}

/* An f32 vector of n elements: plan tensor ti. */
FT_WARN_UNUSED static ft_status_t ft_vec(const ft_model_ctx_t *c, uint32_t ti, uint32_t n, const float **out)
{
    const Ftplan__Tensor *t = c->b->plan->tensors[ti];
    if (t->format != FTPLAN__WEIGHT_FORMAT__WF_F32 || t->n_shape != 1 || t->shape[0] != n)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: tensor '%s': expected an f32 vector of %u elements", c->where,
                              t->name, n);
    const uint8_t *p;
    ft_status_t st = ft_bytes(c, t, (uint64_t)n * 4, &p);
    *out = (const float *)p; /* FTW offsets are 4096-aligned */
    return st;
}

/* Plan tensor ti as a [rows, cols] matrix, or with n_experts > 0 a
 * [n_experts, rows, cols] stack; rows and cols come from its shape. */
FT_WARN_UNUSED static ft_status_t ft_matrix(const ft_model_ctx_t *c, uint32_t ti, uint32_t n_experts, ft_mat_t *out)
{
    const Ftplan__Tensor *t = c->b->plan->tensors[ti];
    const uint32_t nd = n_experts ? 3 : 2;
    int ok = t->n_shape == nd && t->shape[nd - 2] <= UINT32_MAX && t->shape[nd - 1] <= UINT32_MAX &&
             (!n_experts || (t->shape[0] == n_experts && t->expert_stride != 0));
    if (!ok)
        return ft_status_make(FT_STATUS_FORMAT, "%s: tensor '%s' is not a %s", c->where, t->name,
                              n_experts ? "stack of expert matrices of the op's expert count" : "matrix");
    const uint32_t rows = (uint32_t)t->shape[nd - 2], cols = (uint32_t)t->shape[nd - 1];
    ft_dtype_t dt = (ft_dtype_t)t->format;
    if (!ft_cpu_supports(dt)) {
        char list[256];
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: tensor '%s': weight format %s has no CPU kernel (supported: %s)",
                              c->where, t->name, ft_dtype_name(dt),
                              ft_dtype_list(FT_DTYPE_FLAG_WEIGHT, "and", list, sizeof(list)));
    }
    uint64_t rb;
    if (!ft_dtype_row_bytes(dt, cols, &rb))
        return ft_status_make(FT_STATUS_FORMAT, "%s: tensor '%s': bad row size", c->where, t->name);
    out->dtype = dt;
    out->rows = rows;
    out->cols = cols;
    out->row_bytes = (size_t)rb;
    out->layout = t->layout; /* the plan validator checked it holds this matrix */
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

/* Resolves every weight of one op: matrices into m->mats (once per
 * tensor), vectors checked where the program binds them. */
FT_WARN_UNUSED static ft_status_t ft_op_mats(const ft_model_ctx_t *c, const Ftplan__Op *op, ft_model_t *m)
{
    const int stack = op->kind == FTPLAN__OP_KIND__OP_MOE;
    const int mat = stack || op->kind == FTPLAN__OP_KIND__OP_LINEAR || op->kind == FTPLAN__OP_KIND__OP_EMBED ||
                    op->kind == FTPLAN__OP_KIND__OP_ROUTER || op->kind == FTPLAN__OP_KIND__OP_MLA;
    /* A ROUTER's second weight is its selection bias, a vector. */
    const size_t n_mats = op->kind == FTPLAN__OP_KIND__OP_ROUTER ? 1 : op->n_weights;
    for (size_t j = 0; mat && j < n_mats; j++) {
        ft_mat_t *w = &m->mats[op->weights[j]];
        if (w->data) {
            if (w->n_experts != (stack ? op->n_experts : 1))
                return ft_status_make(FT_STATUS_FORMAT, "%s: tensor '%s' is used both as a matrix and as an "
                                      "expert stack", c->where, c->b->plan->tensors[op->weights[j]]->name);
        } else {
            ft_status_t st = ft_matrix(c, op->weights[j], stack ? op->n_experts : 0, w);
            if (st)
                return st;
        }
        /* only products (LINEAR, MOE) read a layout other than rows; an
         * embedding's, a router's or MLA's rows are read one by one */
        if (w->layout != FT_WLAYOUT_ROWS && !stack && op->kind != FTPLAN__OP_KIND__OP_LINEAR)
            return ft_status_make(FT_STATUS_FORMAT, "%s: tensor '%s': layout %s, but its %s op reads it row by row",
                                  c->where, c->b->plan->tensors[op->weights[j]]->name, ft_wlayout_name(w->layout),
                                  op->kind == FTPLAN__OP_KIND__OP_EMBED    ? "EMBED"
                                  : op->kind == FTPLAN__OP_KIND__OP_ROUTER ? "ROUTER"
                                                                           : "MLA");
    }
    return FT_OK;
}

/* The layer's FTW expert block (above), after the MOE op's stacks. */
FT_WARN_UNUSED static ft_status_t ft_layer_moe(const ft_model_ctx_t *c, const ft_model_t *m, const Ftplan__Op *op, uint32_t l,
                                ft_layer_t *L)
{
    L->gate = m->mats[op->weights[0]];
    L->up = m->mats[op->weights[1]];
    L->down = m->mats[op->weights[2]];
    L->n_experts = op->n_experts;
    L->n_used = op->n_experts_used;
    L->expert_ffn = op->expert_ffn;
    const uint32_t d = m->d_model, ffn = op->expert_ffn;
    if (L->gate.rows != ffn || L->gate.cols != d || L->up.rows != ffn || L->up.cols != d || L->down.rows != d ||
        L->down.cols != ffn)
        return ft_status_make(FT_STATUS_FORMAT, "%s: block %u: the expert stacks are not [%u, %u, %u] x2 and "
                              "[%u, %u, %u]", c->where, l, op->n_experts, ffn, d, op->n_experts, d, ffn);
    return ft_layer_blob(c, l, L);
}

/* Gathers block l's layer view from its ops (see ft_layer_t): the first
 * RMSNORM is the attention norm and the one after the attention the FFN
 * norm; the three-output LINEAR is q, k, v and the LINEAR reading the
 * attention's output is wo; HEAD_NORMs name their buffer. */
FT_WARN_UNUSED static ft_status_t ft_layer_gather(const ft_model_ctx_t *c, ft_model_t *m, uint32_t l, ft_layer_t *L)
{
    const Ftplan__BlockOps *blk = c->b->plan->schedule->blocks[l];
    const float **norm_slot[2] = {&L->attn_norm, &L->ffn_norm};
    uint32_t n_norms = 0, q_buf = ~0u, k_buf = ~0u, att_buf = ~0u;
    int recurrent = 0, mla = 0;
    for (size_t i = 0; i < blk->n_ops; i++)
        mla |= blk->ops[i]->kind == FTPLAN__OP_KIND__OP_MLA;
    for (size_t i = 0; i < blk->n_ops; i++) {
        const Ftplan__Op *op = blk->ops[i];
        ft_status_t st = ft_op_mats(c, op, m);
        if (st)
            return st;
        const float *vec = NULL;
        switch (op->kind) {
        case FTPLAN__OP_KIND__OP_RMSNORM:
            if ((st = ft_vec(c, op->weights[0], m->d_model, &vec)))
                return st;
            if (n_norms < 2)
                *norm_slot[n_norms++] = vec;
            break;
        case FTPLAN__OP_KIND__OP_LINEAR:
            if (op->n_weights == 3) {
                L->wq = m->mats[op->weights[0]];
                L->wk = m->mats[op->weights[1]];
                L->wv = m->mats[op->weights[2]];
                q_buf = op->outputs[0];
                k_buf = op->outputs[1];
            } else if (op->inputs[0] == att_buf) {
                L->wo = m->mats[op->weights[0]];
            } else if (mla && att_buf == ~0u) { /* the projections before the MLA op */
                for (size_t j = 0; j < op->n_weights; j++)
                    L->mla_bytes += ft_mat_bytes(&m->mats[op->weights[j]]);
            }
            break;
        case FTPLAN__OP_KIND__OP_HEAD_NORM:
            if ((st = ft_vec(c, op->weights[0], op->head_dim, &vec)))
                return st;
            if (op->inputs[0] == q_buf)
                L->q_norm = vec;
            else if (op->inputs[0] == k_buf)
                L->k_norm = vec;
            break;
        case FTPLAN__OP_KIND__OP_ROPE:
            m->rope_dim = op->rope_dim;
            m->rope_theta = op->rope_theta;
            m->rope_neox = (l == 0 || m->rope_neox) && op->rope == FTPLAN__ROPE_KIND__ROPE_NEOX;
            break;
        case FTPLAN__OP_KIND__OP_ATTENTION:
        case FTPLAN__OP_KIND__OP_MLA: /* one compressed KV head */
            if (op->kind == FTPLAN__OP_KIND__OP_MLA)
                L->mla_bytes += ft_mat_bytes(&m->mats[op->weights[0]]) + ft_mat_bytes(&m->mats[op->weights[1]]);
            L->n_heads = op->n_heads;
            L->n_kv_heads = op->n_kv_heads;
            L->head_dim = op->head_dim;
            att_buf = op->outputs[0];
            break;
        case FTPLAN__OP_KIND__OP_ROUTER:
            L->router = m->mats[op->weights[0]];
            L->norm_topk_prob = op->norm_topk_prob;
            break;
        case FTPLAN__OP_KIND__OP_MOE:
            if ((st = ft_layer_moe(c, m, op, l, L)))
                return st;
            break;
        case FTPLAN__OP_KIND__OP_DELTANET:
            recurrent = 1;
            break;
        default:
            break;
        }
    }
    /* A linear-attention block has no ATTENTION (nor heads, nor KV). */
    if ((!L->n_heads && !recurrent) || !L->n_experts != !L->router.data)
        return ft_status_make(
            FT_STATUS_UNSUPPORTED,
            "%s: block %u: only blocks of attention (ATTENTION or "
            "DELTANET) and a dense or routed FFN run here (ROUTER and MOE ops together)",
            c->where, l);
    return FT_OK;
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
        m->max_group = FT_MAX(m->max_group, L->n_kv_heads ? L->n_heads / L->n_kv_heads : 0);
        m->max_experts = FT_MAX(m->max_experts, L->n_experts);
        m->max_used = FT_MAX(m->max_used, L->n_used);
        m->max_ffn = FT_MAX(m->max_ffn, L->expert_ffn);
        uint64_t expert = ft_mat_bytes(&L->gate) + ft_mat_bytes(&L->up) + ft_mat_bytes(&L->down);
        per_token += L->mla_bytes + ft_mat_bytes(&L->wq) + ft_mat_bytes(&L->wk) + ft_mat_bytes(&L->wv) +
                     ft_mat_bytes(&L->wo) + ft_mat_bytes(&L->router) + (uint64_t)L->n_used * expert +
                     (2ull * m->d_model + 2ull * L->head_dim) * 4;
    }
    m->weight_bytes_per_token = per_token;
}

/* The token embedding (prologue EMBED), the output norm and head
 * (epilogue RMSNORM and the LINEAR into the logits). */
FT_WARN_UNUSED static ft_status_t ft_model_ends(const ft_model_ctx_t *c, ft_model_t *m)
{
    const Ftplan__Schedule *sc = c->b->plan->schedule;
    ft_status_t st;
    for (size_t i = 0; i < sc->n_prologue; i++) {
        if ((st = ft_op_mats(c, sc->prologue[i], m)))
            return st;
        if (sc->prologue[i]->kind == FTPLAN__OP_KIND__OP_EMBED)
            m->tok_embd = m->mats[sc->prologue[i]->weights[0]];
    }
    for (size_t i = 0; i < sc->n_epilogue; i++) {
        const Ftplan__Op *op = sc->epilogue[i];
        if ((st = ft_op_mats(c, op, m)))
            return st;
        if (op->kind == FTPLAN__OP_KIND__OP_RMSNORM && (st = ft_vec(c, op->weights[0], m->d_model, &m->output_norm)))
            return st;
        if (op->kind == FTPLAN__OP_KIND__OP_LINEAR &&
            sc->buffers[op->outputs[0]]->kind == FTPLAN__BUFFER_KIND__BUF_LOGITS)
            m->output = m->mats[op->weights[0]];
    }
    if (!m->tok_embd.data || !m->output.data || !m->output_norm || m->tok_embd.cols != m->d_model ||
        m->tok_embd.rows != m->vocab_size || m->output.rows != m->vocab_size || m->output.cols != m->d_model)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: the schedule needs a token EMBED of [%u, %u] in its "
                              "prologue and an output RMSNORM + LINEAR into the logits in its epilogue",
                              c->where, m->vocab_size, m->d_model);
    return FT_OK;
}

ft_status_t ft_model_create(const ft_bundle_t *b, const ft_allocator_t *alloc, ft_model_t **out_model)
{
    *out_model = NULL;
    const Ftplan__Plan *plan = b->plan;
    const Ftplan__Hparams *hp = plan->hparams;
    ft_model_ctx_t c = {b, b->plan_file->path};
    if (!plan->schedule)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: the plan has no op schedule (schema version %u, "
                              "from an older ftc): recompile the model", c.where, plan->schema_version);
    /* The KV cache's element type (plan_validate.c admits f32 and f16). */
    const ft_dtype_t kv = ft_plan_kv_dtype(plan);
    if (kv != FT_DTYPE_F32 && kv != FT_DTYPE_F16)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: kv_format is %s; the KV cache is stored in f32 or f16",
                              c.where, ft_dtype_name(kv));
    ft_model_t *m = ft_mem_calloc(alloc, 1, sizeof(*m));
    if (!m)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", c.where);
    m->n_layers = hp->n_layers;
    m->d_model = hp->d_model;
    m->vocab_size = hp->vocab_size;
    m->context_length = hp->context_length;
    m->norm_eps = hp->norm_eps;
    m->kv_dtype = kv;
    m->kv_elem_bytes = kv == FT_DTYPE_F16 ? 2 : 4;
    ft_status_t st = FT_OK;
    m->n_mats = (uint32_t)plan->n_tensors;
    m->layers = ft_mem_calloc(alloc, m->n_layers ? m->n_layers : 1, sizeof(ft_layer_t));
    m->mats = ft_mem_calloc(alloc, m->n_mats ? m->n_mats : 1, sizeof(ft_mat_t));
    if (!m->layers || !m->mats) {
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", c.where);
        goto fail;
    }
    if ((st = ft_model_ends(&c, m)))
        goto fail;
    for (uint32_t l = 0; l < m->n_layers && !st; l++)
        st = ft_layer_gather(&c, m, l, &m->layers[l]);
    if (st)
        goto fail;
    for (uint32_t i = 0; i < b->n_weight_files; i++)
        m->weight_bytes += ft_ftw_data_bytes(b->weight_files[i]);
    ft_model_sizes(m);
    if ((st = ft_program_create(b, m, alloc, &m->prog)))
        goto fail;
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
    ft_program_destroy(m->prog, alloc);
    ft_mem_free(alloc, m->mats);
    ft_mem_free(alloc, m->layers);
    ft_mem_free(alloc, m);
}

/* A matrix's key in a kernel module: its format, with FT_KABI_LAYOUT_R16
 * when its rows are interleaved by 16. */
static uint32_t ft_mat_kformat(const ft_mat_t *mat)
{
    return (uint32_t)mat->dtype | (mat->layout == FT_WLAYOUT_Q8_0_R16 ? FT_KABI_LAYOUT_R16 : 0u);
}

void ft_model_bind_kernels(ft_model_t *m, const ft_cpu_module_t *k)
{
#define FT_FIND(mat) ((mat).kernel = ft_cpu_module_find_matmul(k, ft_mat_kformat(&(mat)), (mat).rows, (mat).cols))
    for (uint32_t i = 0; i < m->n_mats; i++)
        if (m->mats[i].data)
            FT_FIND(m->mats[i]);
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
        L->expert_kernel = ft_mat_kformat(&L->gate) == ft_mat_kformat(&L->up)
                               ? ft_cpu_module_find_expert(k, ft_mat_kformat(&L->gate), ft_mat_kformat(&L->down),
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
        /* the module has both KV element types; the model's is bound */
        const uint32_t group =
            L->n_kv_heads ? L->n_heads / L->n_kv_heads : 0; /* 0: a DELTANET block */
        L->attn_kernel = m->kv_dtype == FT_DTYPE_F32 ? ft_cpu_module_find_attn(k, group, L->head_dim) : NULL;
        L->attn_kernel_f16 =
            m->kv_dtype == FT_DTYPE_F16 ? ft_cpu_module_find_attn_f16(k, group, L->head_dim) : NULL;
    }
#undef FT_FIND
    ft_program_bind_kernels(m->prog, m, k);
}
