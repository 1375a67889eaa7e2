/* The plan's kernels for every op of the schedule on the device: names
 * built from the ops' shapes and formats exactly as
 * codegen/cuda/cuda_emit.c builds them, and launch geometry from its
 * kernel table (GEMV: 4 rows of 128 threads per block; GEMM: 32 x 32 tiles
 * of 256 threads; norms 256; attention, router 128; RoPE rope_dim / 2). */
#include "dev_internal.h"

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
    const ft_dtype_info_t *info = ft_dtype_info(w->dtype);
    if (!info || w->cols % info->block_elems ||
        w->row_bytes != (size_t)w->cols / info->block_elems * info->block_bytes)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "cuda: %s: rows of %zu bytes for %u %s columns", what, w->row_bytes,
                              w->cols, f);
    ft_status_t st = FT_OK;
    if (gemv) st = ft_dev_fn(ce, gemv, "ft_gemv_%s_k%u", f, w->cols);
    if (!st && gemm) st = ft_dev_fn(ce, gemm, "ft_gemm_%s_k%u", f, w->cols);
    if (!st && experts) st = ft_dev_fn(ce, experts, "ft_gemv_experts_%s_k%u", f, w->cols);
    return ft_status_annotate(st, "cuda: %s", what);
}

/* A LINEAR's (or ROUTER's) matrices. */
FT_WARN_UNUSED static ft_status_t ft_dev_bind_mats(ft_dev_engine_t *ce, const ft_xop_t *x, ft_dev_op_t *o,
                                                   const char *what)
{
    const int router = x->kind == FTPLAN__OP_KIND__OP_ROUTER;
    const uint32_t n_w = router ? 1 : x->n_w;
    ft_status_t st = FT_OK;
    for (uint32_t j = 0; j < n_w && !st; j++) {
        const ft_mat_t *w = router ? &x->L->router : x->w[j];
        o->w[j].rows = w->rows;
        o->w[j].cols = w->cols;
        st = ft_dev_mat_kernels(ce, w, what, &o->w[j].gemv, &o->w[j].gemm, NULL);
    }
    return st;
}

/* A MOE op's expert matrices, read from slots or streaming buffers at
 * their offsets inside the expert's blob. */
FT_WARN_UNUSED static ft_status_t ft_dev_bind_experts(ft_dev_engine_t *ce, const ft_xop_t *x, ft_dev_op_t *o,
                                                      const char *what)
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
    }
    return st;
}

/* One op's kernels. */
FT_WARN_UNUSED static ft_status_t ft_dev_bind_op(ft_dev_engine_t *ce, const ft_xop_t *x)
{
    ft_dev_op_t *o = &ce->ops[x->id];
    char what[64];
    if (x->layer >= 0)
        snprintf(what, sizeof(what), "block %d %s", x->layer, ft_plan_op_kind_name(x->kind));
    else
        snprintf(what, sizeof(what), "%s", ft_plan_op_kind_name(x->kind));
    ft_status_t st = FT_OK;
    switch (x->kind) {
    case FTPLAN__OP_KIND__OP_EMBED:      /* rows gathered on the host */
    case FTPLAN__OP_KIND__OP_KV_APPEND:  /* the shared ft_kv_append, or copies */
    case FTPLAN__OP_KIND__OP_ADD:        /* the shared scatter-add */
    case FTPLAN__OP_KIND__OP_GLU:        /* the shared SwiGLU */
        if (x->kind == FTPLAN__OP_KIND__OP_GLU && x->act != FTPLAN__ACTIVATION__ACT_SILU)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "cuda: %s: clamped SwiGLU (ACT_SWIGLU_OAI) has no CUDA "
                                  "kernel yet (use --backend cpu or sim)", what);
        return FT_OK;
    case FTPLAN__OP_KIND__OP_RMSNORM:
        st = ft_dev_fn(ce, &o->fn, "ft_rmsnorm_d%u", x->width);
        break;
    case FTPLAN__OP_KIND__OP_HEAD_NORM:
        st = ft_dev_fn(ce, &o->fn, "ft_rmsnorm_d%u", x->head_dim);
        break;
    case FTPLAN__OP_KIND__OP_ROPE: { /* NeoX halves or adjacent pairs: the name says which */
        if (x->rope_mscale != 1.0f)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "cuda: %s: YaRN RoPE has no CUDA kernel yet (use "
                                  "--backend cpu or sim)", what);
        char name[64];
        if (ft_cuda_kernel_rope_name(x->rope_neox, x->head_dim, x->rope_dim, name, sizeof(name)) < 0)
            return ft_status_make(FT_STATUS_INTERNAL, "cuda: %s: kernel name too long", what);
        st = ft_dev_fn(ce, &o->fn, "%s", name);
        break;
    }
    case FTPLAN__OP_KIND__OP_ATTENTION: {
        if (x->sinks)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "cuda: %s: attention sinks have no CUDA kernel yet (use "
                                  "--backend cpu or sim)", what);
        /* The kernels of the plan's KV element type: "" f32, "_f16" f16. */
        const char *kv = ce->m->kv_dtype == FT_DTYPE_F16 ? "_f16" : "";
        st = ft_dev_fn(ce, &o->fn, "ft_attn_decode%s_h%u_q%u_kv%u", kv, x->head_dim, x->n_heads, x->n_kv_heads);
        /* Optional: plans compiled before the graph-friendly kernels lack it. */
        ft_status_t b = st ? FT_OK
                           : ft_dev_fn(ce, &o->fn_pos, "ft_attn_decode_pos%s_h%u_q%u_kv%u", kv, x->head_dim,
                                       x->n_heads, x->n_kv_heads);
        if (b) o->fn_pos = NULL;
        ft_status_free(b);
        break;
    }
    case FTPLAN__OP_KIND__OP_LINEAR:
        for (uint32_t j = 0; j < x->n_w; j++)
            if (x->bias[j])
                return ft_status_make(FT_STATUS_UNSUPPORTED,
                                      "cuda: %s: weight %u has a bias, which has no CUDA kernel yet (use "
                                      "--backend cpu or sim)", what, j);
        return ft_dev_bind_mats(ce, x, o, what);
    case FTPLAN__OP_KIND__OP_ROUTER:
        if (x->bias[0])
            return ft_status_make(FT_STATUS_UNSUPPORTED, "cuda: %s: a router logit bias has no CUDA kernel yet "
                                  "(use --backend cpu or sim)", what);
        if (x->scoring || x->n_groups || x->routed_scaling != 1.0f || x->sel_bias)
            return ft_status_make(FT_STATUS_UNSUPPORTED,
                                  "cuda: %s: a %s router%s%s%s has no CUDA kernel yet (softmax top-k only; use "
                                  "--backend cpu or sim)",
                                  what, x->scoring ? "sigmoid" : "softmax", x->n_groups ? " with expert groups" : "",
                                  x->routed_scaling != 1.0f ? " with a weight scale" : "",
                                  x->sel_bias ? " with a selection bias" : "");
        st = ft_dev_bind_mats(ce, x, o, what);
        if (!st) st = ft_dev_fn(ce, &o->fn, "ft_router_topk_e%u_k%u", x->L->n_experts, x->L->n_used);
        break;
    case FTPLAN__OP_KIND__OP_MOE:
        if (x->bias[0] || x->bias[1] || x->bias[2] || x->act != FTPLAN__ACTIVATION__ACT_SILU)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "cuda: %s: %s have no CUDA kernel yet (use --backend cpu "
                                  "or sim)", what, x->act != FTPLAN__ACTIVATION__ACT_SILU
                                                       ? "clamped SwiGLU experts (ACT_SWIGLU_OAI)" : "expert biases");
        return ft_dev_bind_experts(ce, x, o, what);
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
        return ft_status_make(FT_STATUS_UNSUPPORTED, "cuda: model dimensions past the kernels' limits");
    ft_status_t st = ft_dev_fn(ce, &ce->gather, "ft_rows_gather");
    if (!st) st = ft_dev_fn(ce, &ce->scatter_add, "ft_rows_scatter_add");
    if (!st) st = ft_dev_fn(ce, &ce->swiglu, "ft_swiglu");
    if (!st && m->kv_dtype == FT_DTYPE_F16) /* an f16 cache is written by its kernel only */
        st = ft_dev_fn(ce, &ce->kv_append, "ft_kv_append_f16");
    else if (!st) { /* optional, as the position-reading attention: f32 rows can be copied */
        ft_status_t a = ft_dev_fn(ce, &ce->kv_append, "ft_kv_append");
        if (a) ce->kv_append = NULL;
        ft_status_free(a);
    }
    ce->n_moe = 0;
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

ft_status_t ft_dev_scatter_add(ft_dev_engine_t *ce, ft_dptr_t in, ft_dptr_t idx,
                                ft_dptr_t weight, uint32_t n, ft_dptr_t y,
                                uint32_t cols)
{
    int n_rows = (int)n, ldy = (int)cols, c = (int)cols;
    void *p[] = {&in, &idx, &weight, &n_rows, &y, &ldy, &c};
    return ft_dev_run(ce, ce->scatter_add, n, 1, 256, p);
}
