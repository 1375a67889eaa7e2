/* The plan's CUDA kernels as the engine uses them: names built from the
 * model's shapes and formats exactly as codegen/cuda/cuda_emit.c builds
 * them, and launch geometry from its kernel table (GEMV: 4 rows of 128
 * threads per block; GEMM: 32 x 32 tiles of 256 threads; norms 256;
 * attention, router 128; RoPE rope_dim / 2). */
#include "cuda_engine_internal.h"

#include "../../format/dtype.h"
#include "ft_cuda_kernels.h"

#include <stdarg.h>
#include <stdio.h>

FT_WARN_UNUSED static ft_status_t ft_cuda_fn(ft_cuda_engine_t *ce, ft_cu_function *out, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

FT_WARN_UNUSED static ft_status_t ft_cuda_fn(ft_cuda_engine_t *ce, ft_cu_function *out, const char *fmt, ...)
{
    char name[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    return ft_cuda_module_function(ce->mod, name, out);
}

/* A matrix's kernels, after checking its rows carry no padding (the
 * kernels compute the row size from the format and columns). */
FT_WARN_UNUSED static ft_status_t ft_cuda_mat_kernels(ft_cuda_engine_t *ce, const ft_mat_t *w, const char *what,
                                       ft_cu_function *gemv, ft_cu_function *gemm,
                                       ft_cu_function *experts)
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
    if (gemv) st = ft_cuda_fn(ce, gemv, "ft_gemv_%s_k%u", f, w->cols);
    if (!st && gemm) st = ft_cuda_fn(ce, gemm, "ft_gemm_%s_k%u", f, w->cols);
    if (!st && experts) st = ft_cuda_fn(ce, experts, "ft_gemv_experts_%s_k%u", f, w->cols);
    return ft_status_annotate(st, "cuda: %s", what);
}

FT_WARN_UNUSED static ft_status_t ft_cuda_layer_kernels(ft_cuda_engine_t *ce, uint32_t l)
{
    const ft_layer_t *L = &ce->m->layers[l];
    ft_cuda_layer_t *C = &ce->layers[l];
    char what[64];
    struct {
        const ft_mat_t *w;
        ft_cuda_mat_t *c;
        const char *name;
    } dense[] = {{&L->wq, &C->wq, "attn_q"},
                 {&L->wk, &C->wk, "attn_k"},
                 {&L->wv, &C->wv, "attn_v"},
                 {&L->wo, &C->wo, "attn_output"},
                 {&L->router, &C->router, "ffn_gate_inp"}};
    ft_status_t st = FT_OK;
    for (size_t i = 0; i < sizeof(dense) / sizeof(dense[0]) && !st; i++) {
        snprintf(what, sizeof(what), "layer %u %s", l, dense[i].name);
        dense[i].c->rows = dense[i].w->rows;
        dense[i].c->cols = dense[i].w->cols;
        st = ft_cuda_mat_kernels(ce, dense[i].w, what, &dense[i].c->gemv, &dense[i].c->gemm, NULL);
    }
    struct {
        const ft_mat_t *w;
        ft_cuda_xmat_t *c;
        uint64_t off;
        const char *name;
    } ex[] = {{&L->gate, &C->gate, L->off_gate, "ffn_gate_exps"},
              {&L->up, &C->up, L->off_up, "ffn_up_exps"},
              {&L->down, &C->down, L->off_down, "ffn_down_exps"}};
    for (size_t i = 0; i < 3 && !st; i++) {
        snprintf(what, sizeof(what), "layer %u %s", l, ex[i].name);
        ex[i].c->offset = ex[i].off;
        ex[i].c->rows = ex[i].w->rows;
        ex[i].c->cols = ex[i].w->cols;
        st = ft_cuda_mat_kernels(ce, ex[i].w, what, NULL, &ex[i].c->gemm, &ex[i].c->gemv_experts);
    }
    return st;
}

/* The shapes one kernel instance serves: every layer like layer 0, KV rows
 * packed (kv_stride = n_kv_heads * head_dim), sizes that fit an int. */
FT_WARN_UNUSED static ft_status_t ft_cuda_check_shapes(const ft_model_t *m)
{
    const ft_layer_t *L0 = &m->layers[0];
    for (uint32_t l = 0; l < m->n_layers; l++) {
        const ft_layer_t *L = &m->layers[l];
        if (L->n_heads != L0->n_heads || L->n_kv_heads != L0->n_kv_heads ||
            L->head_dim != L0->head_dim || L->n_experts != L0->n_experts ||
            L->n_used != L0->n_used || L->expert_ffn != L0->expert_ffn ||
            L->n_kv_heads * L->head_dim != m->max_kv_dim || !L->n_experts)
            return ft_status_make(
                FT_STATUS_UNSUPPORTED,
                "cuda: layer %u differs from layer 0 in its attention or expert shape (the CUDA "
                "kernels serve uniform MoE layers)",
                l);
    }
    if (m->vocab_size > (1u << 30) || m->d_model > (1u << 20) || L0->n_used > 32 ||
        L0->n_experts > 1024)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "cuda: model dimensions past the kernels' limits");
    return FT_OK;
}

ft_status_t ft_cuda_engine_kernels(ft_cuda_engine_t *ce)
{
    const ft_model_t *m = ce->m;
    if (!m->n_layers) return ft_status_make(FT_STATUS_UNSUPPORTED, "cuda: the model has no layers");
    ft_status_t st = ft_cuda_check_shapes(m);
    const ft_layer_t *L0 = &m->layers[0];
    ft_cuda_fns_t *f = &ce->fn;
    if (!st) st = ft_cuda_fn(ce, &f->rms_d, "ft_rmsnorm_d%u", m->d_model);
    if (!st) st = ft_cuda_fn(ce, &f->rms_hd, "ft_rmsnorm_d%u", L0->head_dim);
    if (!st) st = ft_cuda_fn(ce, &f->rope, "ft_rope_neox_h%u_r%u", L0->head_dim, m->rope_dim);
    if (!st)
        st = ft_cuda_fn(ce, &f->attn, "ft_attn_decode_h%u_q%u_kv%u", L0->head_dim, L0->n_heads,
                        L0->n_kv_heads);
    if (!st) st = ft_cuda_fn(ce, &f->router, "ft_router_topk_e%u_k%u", L0->n_experts, L0->n_used);
    if (!st) st = ft_cuda_fn(ce, &f->gather, "ft_rows_gather");
    if (!st) st = ft_cuda_fn(ce, &f->scatter_add, "ft_rows_scatter_add");
    if (!st) st = ft_cuda_fn(ce, &f->swiglu, "ft_swiglu");
    /* Optional: plans compiled before the graph-friendly kernels lack them. */
    if (!st) {
        ft_status_t a = ft_cuda_fn(ce, &f->kv_append, "ft_kv_append");
        ft_status_t b = ft_cuda_fn(ce, &f->attn_pos, "ft_attn_decode_pos_h%u_q%u_kv%u",
                                   L0->head_dim, L0->n_heads, L0->n_kv_heads);
        if (a) f->kv_append = NULL;
        if (b) f->attn_pos = NULL;
        ft_status_free(a);
        ft_status_free(b);
    }
    for (uint32_t l = 0; l < m->n_layers && !st; l++)
        st = ft_cuda_layer_kernels(ce, l);
    if (!st) {
        ce->output.rows = m->output.rows;
        ce->output.cols = m->output.cols;
        st =
            ft_cuda_mat_kernels(ce, &m->output, "output", &ce->output.gemv, &ce->output.gemm, NULL);
    }
    return st;
}

ft_status_t ft_cuda_launch(ft_cuda_engine_t *ce, ft_cu_function fn, uint32_t gx, uint32_t gy,
                           uint32_t block, void **params)
{
    const ft_cuda_launch_t g = {{gx ? gx : 1, gy ? gy : 1, 1}, {block, 1, 1}, 0};
    return ft_cuda_launch_kernel(ce->dev, fn, &g, ce->cs, params);
}

ft_status_t ft_cuda_linear(ft_cuda_engine_t *ce, const ft_cuda_mat_t *w, ft_cu_deviceptr x,
                           ft_cu_deviceptr y, uint32_t n)
{
    int rows = (int)w->rows;
    if (n == 1) {
        void *p[] = {(void *)&w->w, &x, &y, &rows};
        return ft_cuda_launch(ce, w->gemv, (w->rows + 3) / 4, 1, 128, p);
    }
    int ldx = (int)w->cols, ldy = (int)w->rows, n_tok = (int)n;
    void *p[] = {(void *)&w->w, &x, &ldx, &y, &ldy, &rows, &n_tok};
    return ft_cuda_launch(ce, w->gemm, (w->rows + 31) / 32, (n + 31) / 32, 256, p);
}

ft_status_t ft_cuda_scatter_add(ft_cuda_engine_t *ce, ft_cu_deviceptr in, ft_cu_deviceptr idx,
                                ft_cu_deviceptr weight, uint32_t n, ft_cu_deviceptr y,
                                uint32_t cols)
{
    int n_rows = (int)n, ldy = (int)cols, c = (int)cols;
    void *p[] = {&in, &idx, &weight, &n_rows, &y, &ldy, &c};
    return ft_cuda_launch(ce, ce->fn.scatter_add, n, 1, 256, p);
}
