/* The schedule's ops on the device, one launch sequence per op through
 * the device interface: the same math as the CPU ops (f32 activations and
 * accumulation, residual adds, the experts' outputs added in slot order),
 * with the embedding rows gathered on the host.
 *
 * A pass carries the rows of several sessions one after another in the
 * engine's workspace (dev_work.c): KV append, attention and DeltaNet run
 * per item on its session's cache and state; every other op runs over all
 * rows at once, the MOE op routing, dispatching and copying the experts
 * of every row together. A row's kernels are those of its item alone (a
 * decode pass's products are GEMVs row by row, a prefill pass's GEMMs,
 * which compute each row alike whatever the other rows are), so a
 * session's logits do not depend on what else is in its pass.
 *
 * A decode pass of one session runs as graphs: the launches between two
 * host round trips (each MOE op reads the router's choices back) are one
 * segment, captured at the session's first such pass and replayed after;
 * their launches read the position from device memory, so they hold for
 * every step. A segment whose capture fails turns graphs off for the
 * session and runs again as plain launches (nothing captured has run). */
#include "dev_internal.h"

#include "../backends/cpu/kernels.h"
#include "ft_cuda_kernels.h"

#include <string.h>
#include <time.h>

static uint64_t ft_dev_clock_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Row r of buffer b. */
static ft_dptr_t ft_dev_row(const ft_dev_engine_t *ce, uint32_t b, uint32_t r)
{
    const ft_program_t *p = ce->prog;
    const uint64_t w = (int32_t)b == p->logits_buf ? ce->m->vocab_size : p->widths[b];
    return ce->ws.buf[b] + (uint64_t)r * w * 4;
}

FT_WARN_UNUSED static ft_status_t ft_dev_embed(ft_dev_engine_t *ce, const ft_xop_t *x, const int32_t *tokens,
                                               uint32_t row0, uint32_t n)
{
    ft_dev_work_t *w = &ce->ws;
    const ft_mat_t *e = x->w[0];
    for (uint32_t t = 0; t < n; t++)
        ft_cpu_dequantize_row(e->dtype, e->data + (size_t)tokens[t] * e->row_bytes, w->x_host + (size_t)t * e->cols,
                              e->cols);
    return ft_dev_copy_h2d(ce->dev, ft_dev_row(ce, x->out[0], row0), w->x_host, (size_t)n * e->cols * 4, ce->cs);
}

/* The item's rows of the KV of block x->layer into its session's cache. */
FT_WARN_UNUSED static ft_status_t ft_dev_kv_append(ft_dev_engine_t *ce, const ft_xop_t *x,
                                                   const ft_dev_row_item_t *it)
{
    const ft_dev_session_t *s = it->s;
    const uint32_t kvd = ce->prog->max_kv_width, eb = ce->m->kv_elem_bytes; /* cache element: 4 or 2 bytes */
    const uint64_t layer_off = (uint64_t)ft_dev_kv_slot(ce->prog, (uint32_t)x->layer) * s->n_ctx * kvd * eb;
    ft_dptr_t kc = s->k_cache + layer_off, vc = s->v_cache + layer_off;
    ft_dptr_t k = ft_dev_row(ce, x->in[0], it->row0), v = ft_dev_row(ce, x->in[1], it->row0);
    ft_dptr_t pos = ce->ws.pos + (uint64_t)it->row0 * 4;
    int rows = (int)it->n, kv_stride = (int)kvd;
    if (x->n_kv_heads * x->head_dim != kvd)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "cuda: block %d: KV rows of %u floats in a cache of %u",
                              x->layer, x->n_kv_heads * x->head_dim, kvd);
    if (ce->kv_append) { /* rows pos[t] of the layer's cache */
        void *p[] = {&k, &v, &kc, &vc, &kv_stride, &pos, &rows};
        return ft_dev_run(ce, ce->kv_append, it->n, 1, 256, p);
    }
    /* no kernel (f32 plans before it; ft_dev_engine_kernels requires one for f16): the rows as they
     * are */
    const uint64_t row_off = layer_off + (uint64_t)it->n_past * kvd * 4;
    ft_status_t st = ft_dev_copy_d2d(ce->dev, s->k_cache + row_off, k, (size_t)it->n * kvd * 4, ce->cs);
    return st ? st : ft_dev_copy_d2d(ce->dev, s->v_cache + row_off, v, (size_t)it->n * kvd * 4, ce->cs);
}

/* Causal attention over the item's session: token t sees positions 0 ..
 * n_past + t. A single token reads its position from the device, so the
 * launch stays the same from step to step. */
FT_WARN_UNUSED static ft_status_t ft_dev_attention(ft_dev_engine_t *ce, const ft_xop_t *x, const ft_dev_op_t *o,
                                                   const ft_dev_row_item_t *it)
{
    const ft_dev_session_t *s = it->s;
    const uint32_t kvd = ce->prog->max_kv_width, qd = x->n_heads * x->head_dim;
    const uint64_t layer_off =
        (uint64_t)ft_dev_kv_slot(ce->prog, (uint32_t)x->layer) * s->n_ctx * kvd * ce->m->kv_elem_bytes;
    ft_dptr_t kc = s->k_cache + layer_off, vc = s->v_cache + layer_off;
    ft_dptr_t q = ft_dev_row(ce, x->in[0], it->row0), att = ft_dev_row(ce, x->out[0], it->row0);
    ft_dptr_t pos = ce->ws.pos + (uint64_t)it->row0 * 4;
    int kv_stride = (int)kvd, max_pos = (int)ce->ws.n_ctx;
    /* With sinks (o->vec), the _sink kernels take them last. */
    if (it->n == 1 && o->fn_pos && !x->sliding_window) {
        void *p[] = {&q,             &kc,      &vc,  &kv_stride,     &pos,
                     &ce->ws.scores, &max_pos, &att, (void *)&o->vec};
        return ft_dev_run(ce, o->fn_pos, x->n_heads, 1, 128, p);
    }
    ft_status_t st = FT_OK;
    for (uint32_t t = 0; t < it->n && !st; t++) {
        /* A sliding window: the last sliding_window positions, from row
         * `first` of the cache. */
        const uint32_t at = it->n_past + t;
        const uint32_t first = x->sliding_window && at >= x->sliding_window ? at + 1 - x->sliding_window : 0;
        const uint64_t skip = (uint64_t)first * kvd * ce->m->kv_elem_bytes;
        ft_dptr_t qt = q + (uint64_t)t * qd * 4, out = att + (uint64_t)t * qd * 4, kt = kc + skip, vt = vc + skip;
        int n_pos = (int)(at + 1 - first);
        void *p[] = {&qt,            &kt,      &vt,  &kv_stride,     &n_pos,
                     &ce->ws.scores, &max_pos, &out, (void *)&o->vec};
        st = ft_dev_run(ce, o->fn, x->n_heads, 1, 128, p);
    }
    return st;
}

/* Gated DeltaNet over the item's tokens in order, each advancing its
 * session's state of the layer (the conv window, then S per value head):
 * the conv into the y scratch, then the recurrence, token by token (the
 * sequential form; the chunked one is the CPU's). */
FT_WARN_UNUSED static ft_status_t ft_dev_deltanet(ft_dev_engine_t *ce, const ft_xop_t *x,
                                                  const ft_dev_op_t *o, const ft_dev_row_item_t *it)
{
    const ft_deltanet_shape_t *sh = &x->dn;
    const uint32_t C = (uint32_t)ft_deltanet_channels(sh), H = sh->n_v_heads, hd = sh->head_dim;
    ft_dptr_t window = it->s->rstate + x->rstate_off;
    ft_dptr_t S = window + (uint64_t)(sh->conv_kernel - 1) * C * 4;
    int Ci = (int)C, K = (int)sh->conv_kernel, hdi = (int)hd, nk = (int)sh->n_k_heads,
        nv = (int)H, tiled = sh->heads_tiled;
    float eps = sh->eps;
    ft_status_t st = FT_OK;
    for (uint32_t t = it->row0; t < it->row0 + it->n && !st; t++) {
        ft_dptr_t qkv = ft_dev_row(ce, x->in[0], t), b = ft_dev_row(ce, x->in[1], t),
                  a = ft_dev_row(ce, x->in[2], t), out = ft_dev_row(ce, x->out[0], t);
        void *pc[] = {&qkv, (void *)&o->bias[0], &window, &ce->ws.dn_y, &Ci, &K};
        st = ft_dev_run(ce, ce->dn_conv, (C + 255) / 256, 1, 256, pc);
        void *pr[] = {&ce->ws.dn_y, &b, &a, (void *)&o->bias[1], (void *)&o->bias[2],
                      &S, &out, &hdi, &nk, &nv, &tiled, &eps};
        if (!st) st = ft_dev_run(ce, ce->dn_recur, H, 1, FT_CUDA_DELTANET_THREADS, pr);
    }
    return st;
}

/* A row-wise op that reads a session: once per item of the pass. */
FT_WARN_UNUSED static ft_status_t ft_dev_per_item(ft_dev_engine_t *ce, const ft_xop_t *x, const ft_dev_op_t *o)
{
    ft_status_t st = FT_OK;
    for (uint32_t k = 0; k < ce->ws.n_items && !st; k++) {
        const ft_dev_row_item_t *it = &ce->ws.it[k];
        if (x->kind == FTPLAN__OP_KIND__OP_KV_APPEND)
            st = ft_dev_kv_append(ce, x, it);
        else if (x->kind == FTPLAN__OP_KIND__OP_ATTENTION)
            st = ft_dev_attention(ce, x, o, it);
        else
            st = ft_dev_deltanet(ce, x, o, it);
    }
    return st;
}

ft_status_t ft_dev_linear_rows(ft_dev_engine_t *ce, const ft_dev_mat_t *m, ft_dptr_t x, ft_dptr_t y, uint32_t n)
{
    if (!ce->ws.gemv || n == 1) return ft_dev_linear(ce, m, x, y, n);
    ft_status_t st = FT_OK;
    for (uint32_t t = 0; t < n && !st; t++)
        st = ft_dev_linear(ce, m, x + (uint64_t)t * m->cols * 4, y + (uint64_t)t * m->rows * 4, 1);
    return st;
}

/* The launches of one op (everything but EMBED's host gather and MOE's
 * host half). */
FT_WARN_UNUSED static ft_status_t ft_dev_launch_op(ft_dev_engine_t *ce, const ft_xop_t *x, uint32_t row0, uint32_t n)
{
    ft_dev_work_t *w = &ce->ws;
    const ft_dev_op_t *o = &ce->ops[x->id];
    int rows = (int)n;
    switch (x->kind) {
    case FTPLAN__OP_KIND__OP_RMSNORM: {
        ft_dptr_t in = ft_dev_row(ce, x->in[0], row0), out = ft_dev_row(ce, x->out[0], row0);
        void *p[] = {&in, (void *)&o->vec, &out, &rows};
        return ft_dev_run(ce, o->fn, n, 1, 256, p);
    }
    case FTPLAN__OP_KIND__OP_LINEAR: {
        /* The logits buffer takes the rows from the epilogue's row; a bias
         * is added to the product's rows. */
        ft_status_t st = FT_OK;
        for (uint32_t j = 0; j < x->n_w && !st; j++) {
            const uint32_t ob = x->out[j];
            const ft_dptr_t y = ft_dev_row(ce, ob, (int32_t)ob == ce->prog->logits_buf ? w->lrow : row0);
            st = ft_dev_linear_rows(ce, &o->w[j], ft_dev_row(ce, x->in[0], row0), y, n);
            if (!st) st = ft_dev_bias_add(ce, y, o->bias[j], 0, n, o->w[j].rows);
        }
        return st;
    }
    case FTPLAN__OP_KIND__OP_HEAD_NORM: {
        ft_dptr_t b = ft_dev_row(ce, x->in[0], row0);
        int head_rows = (int)(n * x->n_heads);
        void *p[] = {&b, (void *)&o->vec, &b, &head_rows};
        return ft_dev_run(ce, o->fn, n * x->n_heads, 1, 256, p);
    }
    case FTPLAN__OP_KIND__OP_ROPE: { /* each row at its own position */
        ft_dptr_t q = ft_dev_row(ce, x->in[0], row0), k = ft_dev_row(ce, x->in[1], row0);
        ft_dptr_t pos = w->pos + (uint64_t)row0 * 4;
        int heads = (int)x->n_heads, kv_heads = (int)x->n_kv_heads;
        float mscale = x->rope_mscale; /* the table forms (o->vec: the frequencies) take two more */
        void *pq[] = {&q, &heads, &pos, &rows, (void *)&o->vec, &mscale};
        void *pk[] = {&k, &kv_heads, &pos, &rows, (void *)&o->vec, &mscale};
        ft_status_t st = ft_dev_run(ce, o->fn, n, x->n_heads, x->rope_dim / 2, pq);
        return st ? st : ft_dev_run(ce, o->fn, n, x->n_kv_heads, x->rope_dim / 2, pk);
    }
    case FTPLAN__OP_KIND__OP_KV_APPEND:
    case FTPLAN__OP_KIND__OP_ATTENTION:
    case FTPLAN__OP_KIND__OP_DELTANET:
        return ft_dev_per_item(ce, x, o);
    case FTPLAN__OP_KIND__OP_GLU: /* out = silu(gate) * up, or the clamped form */
        if (x->glu_bcast) /* out (= in[1]) rows times sigmoid of in[0]'s one float each */
            return ft_dev_sigmoid_bcast(ce, ft_dev_row(ce, x->in[0], row0),
                                        ft_dev_row(ce, x->out[0], row0), n, x->width);
        return ft_dev_glu(ce, x, ft_dev_row(ce, x->in[0], row0), ft_dev_row(ce, x->in[1], row0),
                          ft_dev_row(ce, x->out[0], row0), n * x->width);
    case FTPLAN__OP_KIND__OP_ADD: /* out += 1 * in, row for row */
        return ft_dev_scatter_add(ce, ft_dev_row(ce, x->in[0], row0), w->iota, w->ones, n,
                                  ft_dev_row(ce, x->out[0], row0), x->width);
    case FTPLAN__OP_KIND__OP_ROUTER: { /* logits (+ bias), scores, top-k: the choices stay on the
                                          device */
        ft_status_t st = ft_dev_linear_rows(ce, &o->w[0], ft_dev_row(ce, x->in[0], row0), w->rl, n);
        if (!st) st = ft_dev_bias_add(ce, w->rl, o->bias[0], 0, n, x->L->n_experts);
        if (st) return st;
        if (o->ext) { /* one warp per token; the selection bias is o->vec */
            int scoring = x->scoring, groups = (int)x->n_groups, used = (int)x->n_groups_used,
                norm = x->L->norm_topk_prob;
            float scale = x->routed_scaling;
            void *p[] = {&w->rl,   &rows,   &w->ids, &w->wts, (void *)&o->vec,
                         &scoring, &groups, &used,   &scale,  &norm};
            return ft_dev_run(ce, o->fn, n, 1, 32, p);
        }
        void *p[] = {&w->rl, &rows, &w->ids, &w->wts};
        return ft_dev_run(ce, o->fn, (n + 3) / 4, 1, 128, p);
    }
    default:
        return ft_status_make(FT_STATUS_INTERNAL, "cuda: op kind %d has no launches", x->kind);
    }
}

/* ---- graph segments ---------------------------------------------------- */

/* No more graphs for this session: they failed to capture. */
static void ft_dev_graphs_off(ft_dev_engine_t *ce, ft_dev_session_t *s)
{
    for (uint32_t l = 0; l <= ce->n_moe; l++) {
        ft_dev_graph_destroy(ce->dev, s->graphs[l]);
        s->graphs[l] = NULL;
    }
    s->graphs_off = 1;
    ce->ws.gs = NULL;
}

/* Before a launch of a decode pass: opens the segment (replays its graph
 * when it has one, else starts capturing it). */
static void ft_dev_seg_open(ft_dev_engine_t *ce)
{
    ft_dev_work_t *w = &ce->ws;
    if (w->seg_state) return;
    if (!w->gs || w->seg > ce->n_moe) {
        w->seg_state = 3;
        return;
    }
    w->seg_n = 0;
    if (w->gs->graphs[w->seg]) {
        w->seg_state = 2;
        return;
    }
    ft_status_t st = ft_dev_capture_begin(ce->dev, ce->cs);
    if (st) {
        ft_status_free(st);
        ft_dev_graphs_off(ce, w->gs);
        w->seg_state = 3;
        return;
    }
    w->seg_state = 1;
}

/* Ends the segment: launches its graph, or ends its capture (a capture
 * that fails runs the segment's ops again as plain launches). */
FT_WARN_UNUSED static ft_status_t ft_dev_seg_close(ft_dev_engine_t *ce)
{
    ft_dev_work_t *w = &ce->ws;
    const int state = w->seg_state;
    w->seg_state = 0;
    ft_status_t st = FT_OK;
    if (state == 2) {
        st = ft_dev_graph_launch(ce->dev, w->gs->graphs[w->seg], ce->cs);
    } else if (state == 1) {
        ft_dev_session_t *s = w->gs;
        st = ft_dev_capture_end(ce->dev, ce->cs, &s->graphs[w->seg]);
        if (!st) {
            st = ft_dev_graph_launch(ce->dev, s->graphs[w->seg], ce->cs);
        } else {
            ft_status_free(st);
            st = FT_OK;
            s->graphs[w->seg] = NULL;
            ft_dev_graphs_off(ce, s);
            if (w->seg_moe) st = ft_dev_combine(ce, w->seg_moe, 1);
            for (uint32_t i = 0; i < w->seg_n && !st; i++)
                st = ft_dev_launch_op(ce, w->seg_ops[i], 0, 1);
        }
    }
    w->seg++;
    w->seg_moe = NULL;
    return st;
}

/* ---- the pass ------------------------------------------------------------ */

ft_status_t ft_dev_step_begin(ft_dev_engine_t *ce, const ft_dev_item_t *items, uint32_t n_items, int cpu_gen,
                              uint64_t *routing)
{
    ft_dev_work_t *w = &ce->ws;
    if (!w->block || !n_items || n_items > w->items)
        return ft_status_make(FT_STATUS_INTERNAL, "cuda: a pass of %u sessions (the workspace holds %u)",
                              n_items, w->block ? w->items : 0);
    uint32_t rows = 0, lrows = 0, n_one = 0;
    for (uint32_t k = 0; k < n_items; k++) {
        const ft_dev_item_t *i = &items[k];
        if (!i->n || i->n > i->s->n_batch || i->n_past + i->n > i->s->n_ctx || i->first >= i->n ||
            rows + i->n > w->rows)
            return ft_status_make(FT_STATUS_INTERNAL,
                                  "cuda: a chunk of %u tokens at %u (batch %u, context %u) at row %u of %u", i->n,
                                  i->n_past, i->s->n_batch, i->s->n_ctx, rows, w->rows);
        w->it[k] = (ft_dev_row_item_t){i->s, rows, i->n, i->n_past, i->first, lrows};
        rows += i->n;
        lrows += i->n - i->first;
        n_one += i->n == 1;
    }
    if (n_one && n_one != n_items)
        return ft_status_make(FT_STATUS_INTERNAL, "cuda: a pass mixes %u one-token items with %u chunks", n_one,
                              n_items - n_one);
    ft_offload_chunk_begin(ce->off); /* streaming copies are per pass */
    w->n = rows;
    w->n_items = n_items;
    w->gemv = n_one == n_items;
    w->cpu_gen = cpu_gen;
    w->lrow = 0;
    w->routing = routing;
    /* One session decoding alone: its graphs (captured with this
     * workspace's addresses; older ones are dropped). */
    ft_dev_session_t *s0 = items[0].s;
    w->gs = n_items == 1 && items[0].n == 1 && !s0->graphs_off ? s0 : NULL;
    if (w->gs && s0->graphs_gen != w->gen) {
        for (uint32_t l = 0; l <= ce->n_moe; l++) {
            ft_dev_graph_destroy(ce->dev, s0->graphs[l]);
            s0->graphs[l] = NULL;
        }
        s0->graphs_gen = w->gen;
    }
    w->seg = 0;
    w->seg_state = 0;
    w->seg_moe = NULL;
    /* Positions, from ids_host: the routing reads into it queue after
     * this copy on the same stream. */
    w->t0_ns = ft_dev_clock_ns();
    int32_t *pos = w->ids_host;
    for (uint32_t k = 0; k < n_items; k++)
        for (uint32_t t = 0; t < items[k].n; t++)
            pos[w->it[k].row0 + t] = (int32_t)(items[k].n_past + t);
    /* A chunk at position 0 starts the recurrent state over (a new session,
     * or one rewound to 0: exec/session.c refuses any other rewind). */
    for (uint32_t k = 0; k < n_items; k++)
        if (items[k].n_past == 0 && items[k].s->rstate) {
            ft_status_t st = ft_dev_memset(ce->dev, items[k].s->rstate, 0, ce->prog->rstate_bytes, ce->cs);
            if (st) return st;
        }
    return ft_dev_copy_h2d(ce->dev, w->pos, pos, (size_t)rows * 4, ce->cs);
}

ft_status_t ft_dev_run_op(ft_dev_engine_t *ce, const ft_xop_t *x, const int32_t *tokens, uint32_t row0, uint32_t n)
{
    ft_dev_work_t *w = &ce->ws;
    ft_status_t st;
    switch (x->kind) {
    case FTPLAN__OP_KIND__OP_EMBED: /* a host copy: outside any graph */
        if (w->seg_state && (st = ft_dev_seg_close(ce))) return st;
        return ft_dev_embed(ce, x, tokens, row0, n);
    case FTPLAN__OP_KIND__OP_MOE:
        /* The segment up to the router runs; the host reads the choices
         * and dispatches; the combine opens the next segment. */
        if (!w->seg_state) /* nothing launched since the last one: an empty segment */
            w->seg++;
        else if ((st = ft_dev_seg_close(ce)))
            return ft_status_annotate(st, "block %d", x->layer);
        if ((st = ft_dev_moe(ce, x, ft_dev_row(ce, x->in[0], row0), n)))
            return ft_status_annotate(st, "block %d", x->layer);
        ft_dev_seg_open(ce);
        w->seg_moe = x;
        return w->seg_state == 2 ? FT_OK : ft_dev_combine(ce, x, n);
    default:
        ft_dev_seg_open(ce);
        if (w->seg_state == 2) return FT_OK; /* in the graph being replayed */
        if (w->seg_state == 1) w->seg_ops[w->seg_n++] = x;
        st = ft_dev_launch_op(ce, x, row0, n);
        return x->layer >= 0 ? ft_status_annotate(st, "block %d", x->layer) : st;
    }
}

void ft_dev_epilogue_item(ft_dev_engine_t *ce, uint32_t k, uint32_t *row0, uint32_t *n)
{
    const ft_dev_row_item_t *it = &ce->ws.it[k];
    ce->ws.lrow = it->lrow0;
    *row0 = it->row0 + it->first;
    *n = it->n - it->first;
}

ft_status_t ft_dev_step_end(ft_dev_engine_t *ce, float *const *all_logits, float *const *last_logits)
{
    ft_dev_work_t *w = &ce->ws;
    const ft_model_t *m = ce->m;
    const size_t V = m->vocab_size;
    ft_status_t st = w->seg_state ? ft_dev_seg_close(ce) : FT_OK;
    for (uint32_t k = 0; k < w->n_items && !st; k++) {
        const ft_dev_row_item_t *it = &w->it[k];
        const uint32_t rows = it->n - it->first;
        const ft_dptr_t src = ft_dev_row(ce, (uint32_t)ce->prog->logits_buf, it->lrow0);
        if (all_logits[k]) st = ft_dev_copy_d2h(ce->dev, all_logits[k], src, (size_t)rows * V * 4, ce->cs);
        if (!st)
            st = ft_dev_copy_d2h(ce->dev, last_logits[k], src + (uint64_t)(rows - 1) * V * 4, V * 4, ce->cs);
    }
    if (!st) st = ft_dev_stream_sync(ce->dev, ce->cs);
    if (st)
        return ft_status_annotate(st, "cuda forward of %u tokens of %u sessions (the first at position %u)", w->n,
                                  w->n_items, w->it[0].n_past);
    ft_offload_record_step(ce->off, w->n, (double)(ft_dev_clock_ns() - w->t0_ns) * 1e-9);
    ft_dev_engine_poll(ce);
    return FT_OK;
}
