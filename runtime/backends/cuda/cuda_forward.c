/* One chunk of tokens through the model on the CUDA device: embedding rows
 * on the host (one row per token, from the mapped weights) to the device,
 * then per layer the attention half here and the MoE half in cuda_moe.c,
 * then the output norm and the logits back to the host. The same math as
 * the CPU forward (runtime/exec/forward.c): f32 activations and
 * accumulation, q/k norm before RoPE, residual adds, the experts' outputs
 * added in slot order. */
#include "cuda_engine_internal.h"

#include "../cpu/kernels.h"

#include <string.h>
#include <time.h>

/* rmsnorm -> q, k, v -> per-head q/k norm + RoPE at positions pos[t]. */
FT_WARN_UNUSED static ft_status_t ft_cuda_qkv(ft_cuda_session_t *s, uint32_t layer, uint32_t n)
{
    ft_cuda_engine_t *ce = s->ce;
    const ft_layer_t *L = &ce->m->layers[layer];
    const ft_cuda_layer_t *C = &ce->layers[layer];
    const uint32_t H = L->n_heads, KVH = L->n_kv_heads;
    int rows = (int)n, q_rows = (int)(n * H), k_rows = (int)(n * KVH), heads = (int)H,
        kv_heads = (int)KVH;
    void *pn[] = {&s->x, (void *)&C->attn_norm, &s->h, &rows};
    ft_status_t st = ft_cuda_launch(ce, ce->fn.rms_d, n, 1, 256, pn);
    if (!st) st = ft_cuda_linear(ce, &C->wq, s->h, s->q, n);
    if (!st) st = ft_cuda_linear(ce, &C->wk, s->h, s->k, n);
    if (!st) st = ft_cuda_linear(ce, &C->wv, s->h, s->v, n);
    void *pqn[] = {&s->q, (void *)&C->q_norm, &s->q, &q_rows};
    void *pkn[] = {&s->k, (void *)&C->k_norm, &s->k, &k_rows};
    void *pqr[] = {&s->q, &heads, &s->pos, &rows};
    void *pkr[] = {&s->k, &kv_heads, &s->pos, &rows};
    if (!st) st = ft_cuda_launch(ce, ce->fn.rms_hd, n * H, 1, 256, pqn);
    if (!st) st = ft_cuda_launch(ce, ce->fn.rms_hd, n * KVH, 1, 256, pkn);
    if (!st) st = ft_cuda_launch(ce, ce->fn.rope, n, H, ce->m->rope_dim / 2, pqr);
    if (!st) st = ft_cuda_launch(ce, ce->fn.rope, n, KVH, ce->m->rope_dim / 2, pkr);
    return st;
}

/* KV append -> attention -> wo, added to the residual stream. */
FT_WARN_UNUSED static ft_status_t ft_cuda_attend(ft_cuda_session_t *s, uint32_t layer, uint32_t n, uint32_t n_past)
{
    ft_cuda_engine_t *ce = s->ce;
    const ft_model_t *m = ce->m;
    const ft_layer_t *L = &m->layers[layer];
    const uint32_t H = L->n_heads, qd = H * L->head_dim, kvd = m->max_kv_dim;
    int rows = (int)n;
    ft_status_t st = FT_OK;
    /* K and V rows of this chunk into the cache at rows pos[t] (rows are
     * kv_dim floats); then causal attention: token t sees positions
     * 0 .. n_past + t. A single token reads its position from the device,
     * so the launches stay the same from step to step (decode graphs). */
    const uint64_t layer_off = (uint64_t)layer * s->n_ctx * kvd * 4;
    ft_cu_deviceptr kc = s->k_cache + layer_off, vc = s->v_cache + layer_off;
    int kv_stride = (int)kvd, max_pos = (int)s->n_ctx;
    void *pkv[] = {&s->k, &s->v, &kc, &vc, &kv_stride, &s->pos, &rows};
    if (!st && ce->fn.kv_append)
        st = ft_cuda_launch(ce, ce->fn.kv_append, n, 1, 256, pkv);
    else if (!st) {
        const uint64_t row_off = layer_off + (uint64_t)n_past * kvd * 4;
        st = ft_cuda_copy_d2d(ce->dev, s->k_cache + row_off, s->k, (size_t)n * kvd * 4, ce->cs);
        if (!st)
            st = ft_cuda_copy_d2d(ce->dev, s->v_cache + row_off, s->v, (size_t)n * kvd * 4, ce->cs);
    }
    void *pp[] = {&s->q, &kc, &vc, &kv_stride, &s->pos, &s->scores, &max_pos, &s->att};
    if (!st && n == 1 && ce->fn.attn_pos) st = ft_cuda_launch(ce, ce->fn.attn_pos, H, 1, 128, pp);
    for (uint32_t t = 0; t < n && !st && !(n == 1 && ce->fn.attn_pos); t++) {
        ft_cu_deviceptr q = s->q + (uint64_t)t * qd * 4, out = s->att + (uint64_t)t * qd * 4;
        int n_pos = (int)(n_past + t + 1);
        void *pa[] = {&q, &kc, &vc, &kv_stride, &n_pos, &s->scores, &max_pos, &out};
        st = ft_cuda_launch(ce, ce->fn.attn, H, 1, 128, pa);
    }
    if (!st) st = ft_cuda_linear(ce, &ce->layers[layer].wo, s->att, s->o, n);
    return st ? st : ft_cuda_scatter_add(ce, s->o, s->iota, s->ones, n, s->x, m->d_model);
}

/* Embedding rows and positions to the device. */
FT_WARN_UNUSED static ft_status_t ft_cuda_inputs(ft_cuda_session_t *s, const int32_t *tokens, uint32_t n,
                                  uint32_t n_past)
{
    ft_cuda_engine_t *ce = s->ce;
    const ft_model_t *m = ce->m;
    const uint32_t d = m->d_model;
    for (uint32_t t = 0; t < n; t++)
        ft_cpu_dequantize_row(m->tok_embd.dtype,
                              m->tok_embd.data + (size_t)tokens[t] * m->tok_embd.row_bytes,
                              s->x_host + (size_t)t * d, d);
    int32_t *pos =
        s->ids_host; /* free until routing; the copy reads it before returning (pageable) */
    for (uint32_t t = 0; t < n; t++)
        pos[t] = (int32_t)(n_past + t);
    ft_status_t st = ft_cuda_copy_h2d(ce->dev, s->x, s->x_host, (size_t)n * d * 4, ce->cs);
    return st ? st : ft_cuda_copy_h2d(ce->dev, s->pos, pos, (size_t)n * 4, ce->cs);
}

/* Output norm and logits for positions [first, n) (queued only). */
FT_WARN_UNUSED static ft_status_t ft_cuda_logits(ft_cuda_session_t *s, uint32_t n, uint32_t first)
{
    ft_cuda_engine_t *ce = s->ce;
    const uint32_t rows = n - first;
    ft_cu_deviceptr x = s->x + (uint64_t)first * ce->m->d_model * 4;
    int r = (int)rows;
    void *pn[] = {&x, &ce->output_norm, &s->h, &r};
    ft_status_t st = ft_cuda_launch(ce, ce->fn.rms_d, rows, 1, 256, pn);
    return st ? st : ft_cuda_linear(ce, &ce->output, s->h, s->logits, rows);
}

/* Segment l of the step, the work between two host round trips: the
 * combine of layer l - 1, then attention and routing of layer l; segment
 * n_layers ends with the logits. */
FT_WARN_UNUSED static ft_status_t ft_cuda_segment(ft_cuda_session_t *s, uint32_t l, uint32_t n, uint32_t n_past,
                                   uint32_t first)
{
    ft_status_t st = l ? ft_cuda_combine(s, l - 1, n) : FT_OK;
    if (!st && l < s->ce->m->n_layers && !(st = ft_cuda_qkv(s, l, n)) &&
        !(st = ft_cuda_attend(s, l, n, n_past)))
        st = ft_cuda_route(s, l, n);
    if (!st && l == s->ce->m->n_layers) st = ft_cuda_logits(s, n, first);
    return st;
}

/* No more graphs for this session: they failed to capture. */
static void ft_cuda_graphs_off(ft_cuda_session_t *s)
{
    for (uint32_t l = 0; l <= s->ce->m->n_layers; l++) {
        ft_cuda_graph_destroy(s->ce->dev, s->graphs[l]);
        s->graphs[l] = NULL;
    }
    s->graphs_off = 1;
}

/* A decode segment as a CUDA graph: captured the first time (its launches
 * read positions from device memory, so they hold for every step), then
 * replayed. A capture that fails turns graphs off for the session and the
 * segment runs as plain launches (nothing captured has run). */
FT_WARN_UNUSED static ft_status_t ft_cuda_segment_graph(ft_cuda_session_t *s, uint32_t l, uint32_t n_past)
{
    ft_cuda_engine_t *ce = s->ce;
    if (!s->graphs[l]) {
        ft_status_t st = ft_cuda_capture_begin(ce->dev, ce->cs);
        if (!st) {
            ft_status_t run = ft_cuda_segment(s, l, 1, n_past, 0);
            st = ft_cuda_capture_end(ce->dev, ce->cs, &s->graphs[l]);
            if (run) {
                ft_status_free(st);
                st = run;
            }
        }
        if (st) {
            ft_status_free(st);
            ft_cuda_graphs_off(s);
            return ft_cuda_segment(s, l, 1, n_past, 0);
        }
    }
    return ft_cuda_graph_launch(ce->dev, s->graphs[l], ce->cs);
}

ft_status_t ft_cuda_forward_chunk(ft_cuda_session_t *s, const int32_t *tokens, uint32_t n,
                                  uint32_t n_past, float *all_logits, float *last_logits,
                                  uint64_t *routing)
{
    ft_cuda_engine_t *ce = s->ce;
    const ft_model_t *m = ce->m;
    if (!n || n > s->n_batch || n_past + n > s->n_ctx)
        return ft_status_make(FT_STATUS_INTERNAL,
                              "cuda: a chunk of %u tokens at %u (batch %u, context %u)", n, n_past,
                              s->n_batch, s->n_ctx);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ce->stream_layer[0] = ce->stream_layer[1] = -1; /* streaming copies are per chunk */
    s->routing = routing;
    ft_status_t st = ft_cuda_inputs(s, tokens, n, n_past);
    const uint32_t first = all_logits ? 0 : n - 1;
    const int graph = n == 1 && !s->graphs_off;
    for (uint32_t l = 0; l <= m->n_layers && !st; l++) {
        st = graph ? ft_cuda_segment_graph(s, l, n_past) : ft_cuda_segment(s, l, n, n_past, first);
        if (!st && l < m->n_layers) st = ft_cuda_moe(s, l, n);
        if (st) st = ft_status_annotate(st, "layer %u", l);
    }
    if (!st)
        st = ft_cuda_copy_d2h(ce->dev, all_logits ? all_logits : last_logits, s->logits,
                              (size_t)(n - first) * m->vocab_size * 4, ce->cs);
    if (!st) st = ft_cuda_stream_sync(ce->dev, ce->cs);
    if (st) return ft_status_annotate(st, "cuda forward of %u tokens at position %u", n, n_past);
    if (all_logits)
        memcpy(last_logits, all_logits + (size_t)(n - 1) * m->vocab_size,
               (size_t)m->vocab_size * sizeof(float));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ft_offload_record_step(
        ce->off, n, (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    ft_cuda_engine_poll(ce);
    return FT_OK;
}
