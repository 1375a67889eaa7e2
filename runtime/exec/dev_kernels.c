/* The plan's kernels for every op of the schedule on the device: names
 * from the table codegen/cuda/cuda_emit.c names them by
 * (ft_cuda_kernels.h), and launch geometry from its kernel table (GEMV: 4
 * rows of 128 threads per block; GEMM: 32 x 32 tiles of 256 threads;
 * norms, bias rows and element-wise 256; attention, top-k router 128; the
 * extended router one warp per token; RoPE rope_dim / 2). */
#include "dev_internal.h"
#include "../format/wlayout.h"

#include "../format/dtype.h"
#include "../format/plan_validate.h"
#include "ft_cuda_kernels.h"

#include <stdarg.h>
#include <stdio.h>

FT_WARN_UNUSED static ft_status_t ft_dev_fn(ft_dev_engine_t *ce, ft_dfn_t *out, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

FT_WARN_UNUSED static ft_status_t ft_dev_fn(ft_dev_engine_t *ce, ft_dfn_t *out, const char *fmt, ...)
{
    char name[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    return ft_dev_function(ce->dev, name, out);
}

/* A kernel by a name from the table (len: the naming function's result,
 * -1 when it named none). */
FT_WARN_UNUSED static ft_status_t ft_dev_named(ft_dev_engine_t *ce, ft_dfn_t *out, int len,
                                               const char *name)
{
    if (len < 0) return ft_status_make(FT_STATUS_INTERNAL, "cuda: a kernel name does not fit");
    return ft_dev_fn(ce, out, "%s", name);
}

/* A shared kernel the op's variant needs, bound at its first use (a
 * plan compiled without the variant lacks it: the error names the op). */
FT_WARN_UNUSED static ft_status_t ft_dev_shared(ft_dev_engine_t *ce, ft_dfn_t *fn, const char *name,
                                                const char *what)
{
    return *fn ? FT_OK : ft_status_annotate(ft_dev_fn(ce, fn, "%s", name), "cuda: %s", what);
}

/* A matrix's kernels, after checking its rows carry no padding (the
 * kernels compute the row size from the format and columns). */
FT_WARN_UNUSED static ft_status_t ft_dev_mat_kernels(ft_dev_engine_t *ce, const ft_mat_t *w, const char *what,
                                       ft_dfn_t *gemv, ft_dfn_t *gemm,
                                       ft_dfn_t *experts)
{
    const char *f = ft_cuda_kernel_format(w->dtype);
    if (!f)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "cuda: %s: weight format %s has no CUDA kernel", what,
                              ft_dtype_name(w->dtype));
    if (w->layout != FT_WLAYOUT_ROWS)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "cuda: %s: its rows are stored as %s, for the CPU's generated kernels "
                              "(ftc compile repacks them for a bundle without CUDA kernels; compile with "
                              "--cuda-arch to run it on a GPU)",
                              what, ft_wlayout_name(w->layout));
    const ft_dtype_info_t *info = ft_dtype_info(w->dtype);
    if (!info || w->cols % info->block_elems ||
        w->row_bytes != (size_t)w->cols / info->block_elems * info->block_bytes)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "cuda: %s: rows of %zu bytes for %u %s columns", what, w->row_bytes,
                              w->cols, f);
    const struct {
        ft_cuda_matmul_kind_t kind;
        ft_dfn_t *fn;
    } k[] = {{FT_CUDA_GEMV, gemv}, {FT_CUDA_GEMM, gemm}, {FT_CUDA_GEMV_EXPERTS, experts}};
    ft_status_t st = FT_OK;
    char name[96];
    for (size_t i = 0; i < 3 && !st; i++)
        if (k[i].fn)
            st = ft_dev_named(
                ce, k[i].fn,
                ft_cuda_kernel_matmul_name(k[i].kind, w->dtype, w->cols, name, sizeof(name)), name);
    return ft_status_annotate(st, "cuda: %s", what);
}

/* A LINEAR's (or ROUTER's) matrices, and their biases' kernel. */
FT_WARN_UNUSED static ft_status_t ft_dev_bind_mats(ft_dev_engine_t *ce, const ft_xop_t *x,
                                                   ft_dev_op_t *o, const char *what)
{
    const int router = x->kind == FTPLAN__OP_KIND__OP_ROUTER;
    const uint32_t n_w = router ? 1 : x->n_w;
    ft_status_t st = FT_OK;
    for (uint32_t j = 0; j < n_w && !st; j++) {
        const ft_mat_t *w = router ? &x->L->router : x->w[j];
        o->w[j].rows = w->rows;
        o->w[j].cols = w->cols;
        st = ft_dev_mat_kernels(ce, w, what, &o->w[j].gemv, &o->w[j].gemm, NULL);
        if (!st && x->bias[j]) st = ft_dev_shared(ce, &ce->bias_add, FT_CUDA_KERNEL_BIAS_ADD, what);
    }
    return st;
}

/* A MOE op's expert matrices, read from slots or streaming buffers at
 * their offsets inside the expert's blob, and the kernels of its biases
 * and activation. */
FT_WARN_UNUSED static ft_status_t ft_dev_bind_experts(ft_dev_engine_t *ce, const ft_xop_t *x,
                                                      ft_dev_op_t *o, const char *what)
{
    const ft_layer_t *L = x->L;
    struct {
        const ft_mat_t *w;
        ft_dev_xmat_t *c;
        uint64_t off;
    } ex[] = {{&L->gate, &o->gate, L->off_gate}, {&L->up, &o->up, L->off_up}, {&L->down, &o->down, L->off_down}};
    if (L->n_used > 32 || L->n_experts > 1024)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "cuda: %s: top-%u of %u experts is past the kernels' limits",
                              what, L->n_used, L->n_experts);
    ft_status_t st = FT_OK;
    for (size_t i = 0; i < 3 && !st; i++) {
        ex[i].c->offset = ex[i].off;
        ex[i].c->rows = ex[i].w->rows;
        ex[i].c->cols = ex[i].w->cols;
        st = ft_dev_mat_kernels(ce, ex[i].w, what, NULL, &ex[i].c->gemm, &ex[i].c->gemv_experts);
        if (!st && x->bias[i]) st = ft_dev_shared(ce, &ce->bias_add, FT_CUDA_KERNEL_BIAS_ADD, what);
    }
    if (!st && x->act == FTPLAN__ACTIVATION__ACT_SWIGLU_OAI)
        st = ft_dev_shared(ce, &ce->swiglu_oai, FT_CUDA_KERNEL_SWIGLU_OAI, what);
    return ft_status_annotate(st, "cuda: %s", what);
}

/* A ROUTER op: the product, the logit bias, and the plain softmax top-k
 * or (sigmoid scores, expert groups, a weight scale or a selection bias)
 * the extended router. */
FT_WARN_UNUSED static ft_status_t ft_dev_bind_router(ft_dev_engine_t *ce, const ft_xop_t *x,
                                                     ft_dev_op_t *o, const char *what)
{
    const ft_layer_t *L = x->L;
    o->ext = x->scoring || x->n_groups || x->routed_scaling != 1.0f || x->sel_bias;
    if (x->n_groups && (L->n_experts % x->n_groups || x->n_groups_used > x->n_groups))
        return ft_status_make(FT_STATUS_UNSUPPORTED, "cuda: %s: %u experts in %u groups (best %u)",
                              what, L->n_experts, x->n_groups, x->n_groups_used);
    char name[96];
    ft_status_t st = ft_dev_bind_mats(ce, x, o, what);
    if (!st)
        st = ft_status_annotate(
            ft_dev_named(ce, &o->fn,
                         ft_cuda_kernel_router_name(o->ext, L->n_experts, L->n_used, name, sizeof(name)),
                         name),
            "cuda: %s", what);
    return st;
}

/* One op's kernels. */
FT_WARN_UNUSED static ft_status_t ft_dev_bind_op(ft_dev_engine_t *ce, const ft_xop_t *x)
{
    ft_dev_op_t *o = &ce->ops[x->id];
    char what[64], name[96];
    if (x->layer >= 0)
        snprintf(what, sizeof(what), "block %d %s", x->layer, ft_plan_op_kind_name(x->kind));
    else
        snprintf(what, sizeof(what), "%s", ft_plan_op_kind_name(x->kind));
    ft_status_t st = FT_OK;
    switch (x->kind) {
    case FTPLAN__OP_KIND__OP_EMBED:     /* rows gathered on the host */
    case FTPLAN__OP_KIND__OP_KV_APPEND: /* the shared ft_kv_append, or copies */
    case FTPLAN__OP_KIND__OP_ADD:       /* the shared scatter-add */
        return FT_OK;
    case FTPLAN__OP_KIND__OP_GLU: /* the shared SwiGLU, the clamped one, or the sigmoid gate */
        if (x->glu_bcast) /* the shared expert's one-float gate */
            st = ft_dev_shared(ce, &ce->sigmoid_bcast, FT_CUDA_KERNEL_SIGMOID_BCAST, what);
        else if (x->act == FTPLAN__ACTIVATION__ACT_SWIGLU_OAI)
            st = ft_dev_shared(ce, &ce->swiglu_oai, FT_CUDA_KERNEL_SWIGLU_OAI, what);
        else if (x->act == FTPLAN__ACTIVATION__ACT_SIGMOID)
            st = ft_dev_shared(ce, &ce->sigmoid_mul, FT_CUDA_KERNEL_SIGMOID_MUL, what);
        break;
    case FTPLAN__OP_KIND__OP_RMSNORM:
        st = ft_dev_named(ce, &o->fn, ft_cuda_kernel_rmsnorm_name(x->width, name, sizeof(name)),
                          name);
        break;
    case FTPLAN__OP_KIND__OP_HEAD_NORM:
        st = ft_dev_named(ce, &o->fn, ft_cuda_kernel_rmsnorm_name(x->head_dim, name, sizeof(name)),
                          name);
        break;
    case FTPLAN__OP_KIND__OP_ROPE: /* NeoX halves or adjacent pairs: the name says which */
        /* A cos/sin scale (YaRN): program.c's frequencies and scale, read
         * from the launch (ft_dev_upload_list uploads the table). */
        if (x->rope_mscale != 1.0f)
            st = ft_dev_named(ce, &o->fn,
                              ft_cuda_kernel_rope_table_name(x->rope_neox, x->head_dim, x->rope_dim,
                                                             name, sizeof(name)),
                              name);
        else
            st = ft_dev_named(ce, &o->fn,
                              ft_cuda_kernel_rope_name(x->rope_neox, x->head_dim, x->rope_dim, name,
                                                       sizeof(name)),
                              name);
        break;
    case FTPLAN__OP_KIND__OP_ATTENTION: {
        /* The kernels of the plan's KV element type, with sinks or not. */
        const unsigned flags = (ce->m->kv_dtype == FT_DTYPE_F16 ? FT_CUDA_ATTN_F16 : 0) |
                               (x->sinks ? FT_CUDA_ATTN_SINKS : 0);
        st = ft_dev_named(ce, &o->fn,
                          ft_cuda_kernel_attn_name(flags, x->head_dim, x->n_heads, x->n_kv_heads,
                                                   name, sizeof(name)),
                          name);
        /* Optional: plans compiled before the graph-friendly kernels lack it. */
        ft_status_t b = st ? FT_OK
                           : ft_dev_named(ce, &o->fn_pos,
                                          ft_cuda_kernel_attn_name(
                                              flags | FT_CUDA_ATTN_POS, x->head_dim, x->n_heads,
                                              x->n_kv_heads, name, sizeof(name)),
                                          name);
        if (b) o->fn_pos = NULL;
        ft_status_free(b);
        break;
    }
    case FTPLAN__OP_KIND__OP_DELTANET: { /* one token at a time: conv, then the recurrence */
        const size_t C = ft_deltanet_channels(&x->dn);
        if (x->dn.head_dim > FT_CUDA_DELTANET_MAX_HD || C > UINT32_MAX / 4)
            return ft_status_make(FT_STATUS_UNSUPPORTED,
                                  "cuda: %s: heads of %u (the kernel takes up to %u)", what,
                                  x->dn.head_dim, FT_CUDA_DELTANET_MAX_HD);
        if (C > ce->dn_channels) ce->dn_channels = (uint32_t)C;
        st = ft_dev_shared(ce, &ce->dn_conv, FT_CUDA_KERNEL_DELTANET_CONV, what);
        if (!st) st = ft_dev_shared(ce, &ce->dn_recur, FT_CUDA_KERNEL_DELTANET_RECUR, what);
        break;
    }
    case FTPLAN__OP_KIND__OP_LINEAR:
        return ft_dev_bind_mats(ce, x, o, what);
    case FTPLAN__OP_KIND__OP_ROUTER:
        return ft_dev_bind_router(ce, x, o, what);
    case FTPLAN__OP_KIND__OP_MOE:
        return ft_dev_bind_experts(ce, x, o, what);
    case FTPLAN__OP_KIND__OP_MLA:
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "cuda: %s: multi-head latent attention (DeepSeek) has no CUDA kernel yet; run "
                              "this model on the cpu or sim backend", what);
    default:
        return ft_status_make(FT_STATUS_UNSUPPORTED, "cuda: %s has no device implementation", what);
    }
    return ft_status_annotate(st, "cuda: %s", what);
}

FT_WARN_UNUSED static ft_status_t ft_dev_bind_list(ft_dev_engine_t *ce, const ft_xops_t *l)
{
    ft_status_t st = FT_OK;
    for (uint32_t i = 0; i < l->n && !st; i++) {
        st = ft_dev_bind_op(ce, &l->ops[i]);
        ce->n_moe += l->ops[i].kind == FTPLAN__OP_KIND__OP_MOE;
    }
    return st;
}

ft_status_t ft_dev_engine_kernels(ft_dev_engine_t *ce)
{
    const ft_model_t *m = ce->m;
    const ft_program_t *p = ce->prog;
    if (m->vocab_size > (1u << 30) || m->d_model > (1u << 20))
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "cuda: model dimensions past the kernels' limits");
    ft_status_t st = ft_dev_fn(ce, &ce->gather, "%s", FT_CUDA_KERNEL_ROWS_GATHER);
    if (!st) st = ft_dev_fn(ce, &ce->scatter_add, "%s", FT_CUDA_KERNEL_ROWS_SCATTER_ADD);
    if (!st) st = ft_dev_fn(ce, &ce->swiglu, "%s", FT_CUDA_KERNEL_SWIGLU);
    if (!st && m->kv_dtype == FT_DTYPE_F16) /* an f16 cache is written by its kernel only */
        st = ft_dev_fn(ce, &ce->kv_append, "%s", FT_CUDA_KERNEL_KV_APPEND_F16);
    else if (!st) { /* optional, as the position-reading attention: f32 rows can be copied */
        ft_status_t a = ft_dev_fn(ce, &ce->kv_append, "%s", FT_CUDA_KERNEL_KV_APPEND);
        if (a) ce->kv_append = NULL;
        ft_status_free(a);
    }
    ce->n_moe = 0;
    ce->bias_add = ce->swiglu_oai = ce->sigmoid_mul = NULL;
    ce->dn_conv = ce->dn_recur = ce->sigmoid_bcast = NULL;
    ce->dn_channels = 0;
    if (!st) st = ft_dev_bind_list(ce, &p->prologue);
    for (uint32_t l = 0; l < p->n_blocks && !st; l++)
        st = ft_dev_bind_list(ce, &p->blocks[l]);
    if (!st) st = ft_dev_bind_list(ce, &p->epilogue);
    return st;
}

ft_status_t ft_dev_run(ft_dev_engine_t *ce, ft_dfn_t fn, uint32_t gx, uint32_t gy,
                           uint32_t block, void **params)
{
    const ft_device_launch_t g = {{gx ? gx : 1, gy ? gy : 1, 1}, {block, 1, 1}, 0};
    return ft_dev_launch(ce->dev, fn, &g, ce->cs, params);
}

ft_status_t ft_dev_linear(ft_dev_engine_t *ce, const ft_dev_mat_t *w, ft_dptr_t x,
                           ft_dptr_t y, uint32_t n)
{
    int rows = (int)w->rows;
    if (n == 1) {
        void *p[] = {(void *)&w->w, &x, &y, &rows};
        return ft_dev_run(ce, w->gemv, (w->rows + 3) / 4, 1, 128, p);
    }
    int ldx = (int)w->cols, ldy = (int)w->rows, n_tok = (int)n;
    void *p[] = {(void *)&w->w, &x, &ldx, &y, &ldy, &rows, &n_tok};
    return ft_dev_run(ce, w->gemm, (w->rows + 31) / 32, (n + 31) / 32, 256, p);
}

ft_status_t ft_dev_bias_add(ft_dev_engine_t *ce, ft_dptr_t y, ft_dptr_t b, ft_dptr_t sel,
                            uint32_t n, uint32_t cols)
{
    if (!b) return FT_OK;
    int n_rows = (int)n, c = (int)cols;
    void *p[] = {&y, &b, &sel, &n_rows, &c};
    return ft_dev_run(ce, ce->bias_add, n, 1, 256, p);
}

ft_status_t ft_dev_glu(ft_dev_engine_t *ce, const ft_xop_t *x, ft_dptr_t g, ft_dptr_t u,
                       ft_dptr_t h, uint32_t n)
{
    int total = (int)n;
    const uint32_t blocks = (n + 255) / 256;
    if (x->act == FTPLAN__ACTIVATION__ACT_SWIGLU_OAI) {
        float alpha = x->act_alpha, limit = x->act_limit;
        void *p[] = {&g, &u, &h, &total, &alpha, &limit};
        return ft_dev_run(ce, ce->swiglu_oai, blocks, 1, 256, p);
    }
    if (x->act == FTPLAN__ACTIVATION__ACT_SIGMOID) {
        void *p[] = {&g, &u, &h, &total};
        return ft_dev_run(ce, ce->sigmoid_mul, blocks, 1, 256, p);
    }
    void *p[] = {&g, &u, &h, &total};
    return ft_dev_run(ce, ce->swiglu, blocks, 1, 256, p);
}

ft_status_t ft_dev_sigmoid_bcast(ft_dev_engine_t *ce, ft_dptr_t g, ft_dptr_t h, uint32_t n,
                                 uint32_t cols)
{
    int n_rows = (int)n, c = (int)cols;
    void *p[] = {&g, &h, &n_rows, &c};
    return ft_dev_run(ce, ce->sigmoid_bcast, n, 1, 256, p);
}

ft_status_t ft_dev_scatter_add(ft_dev_engine_t *ce, ft_dptr_t in, ft_dptr_t idx, ft_dptr_t weight,
                               uint32_t n, ft_dptr_t y, uint32_t cols)
{
    int n_rows = (int)n, ldy = (int)cols, c = (int)cols;
    void *p[] = {&in, &idx, &weight, &n_rows, &y, &ldy, &c};
    return ft_dev_run(ce, ce->scatter_add, n, 1, 256, p);
}
