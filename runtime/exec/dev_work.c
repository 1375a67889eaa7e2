/* The device step workspace: every buffer a pass computes in, in one
 * device allocation, and the host staging for the experts the CPU
 * computes in one page-locked host allocation, owned by the device engine
 * and shared by its sessions. It grows between steps (a session with a
 * longer batch or context, a scheduler carrying more sessions), so a step
 * allocates nothing; every growth bumps its generation, which retires the
 * decode graphs captured with the old addresses. */
#include "dev_internal.h"

#include "../backends/cpu/kernels.h"
#include "../base/alloc.h"

#include <string.h>

typedef struct ft_dev_carver {
    ft_dptr_t base;
    uint64_t used;
} ft_dev_carver_t;

static ft_dptr_t ft_dev_carve(ft_dev_carver_t *c, uint64_t n_bytes)
{
    const ft_dptr_t p = c->base + c->used;
    c->used += (n_bytes + 255) / 256 * 256;
    return p;
}

/* Bytes of one prepared input row of the largest expert matrices:
 * gate/up over d (act_d), down over ffn (act_f). */
static void ft_dev_act_bytes(const ft_model_t *m, size_t *act_d, size_t *act_f)
{
    *act_d = *act_f = 0;
    for (uint32_t l = 0; l < m->n_layers; l++) {
        const ft_layer_t *L = &m->layers[l];
        if (!L->n_experts) continue;
        const size_t g = ft_cpu_act_row_bytes(L->gate.dtype, m->d_model),
                     u = ft_cpu_act_row_bytes(L->up.dtype, m->d_model),
                     dn = ft_cpu_act_row_bytes(L->down.dtype, L->expert_ffn);
        *act_d = g > *act_d ? g : *act_d;
        *act_d = u > *act_d ? u : *act_d;
        *act_f = dn > *act_f ? dn : *act_f;
    }
}

uint64_t ft_dev_work_entries(const ft_model_t *m, uint64_t items)
{
    const uint64_t pairs = items * m->max_used;
    return pairs > m->max_experts ? pairs : m->max_experts;
}

/* Rows of the GPU experts' work buffers: a prefill pass's expert takes at
 * most every row, a decode pass (one row per item) an entry per (expert,
 * token). */
static uint64_t ft_dev_work_expert_rows(const ft_model_t *m, const ft_dev_work_t *w)
{
    const uint64_t pairs = (uint64_t)w->items * m->max_used;
    return pairs > w->rows ? pairs : w->rows;
}

/* The per-layer tables (dev_moe.c: ft_dev_meta_layout): the blob table
 * (8 bytes an entry), gather, scatter and CPU-row indices and the router
 * weights (rows * K of 4 bytes each), the expert of each entry (4 bytes). */
static uint64_t ft_dev_work_meta_bytes(const ft_model_t *m, const ft_dev_work_t *w)
{
    const uint64_t T = ft_dev_work_entries(m, w->items);
    return T * 8 + 4ull * w->rows * m->max_used * 4 + T * 4;
}

static void ft_dev_work_layout_dev(ft_dev_engine_t *ce, ft_dev_work_t *w, ft_dev_carver_t *c)
{
    const ft_model_t *m = ce->m;
    const ft_program_t *p = ce->prog;
    const uint64_t B = w->rows, d = m->d_model, E = m->max_experts, K = m->max_used,
                   ffn = m->max_ffn;
    const uint64_t BK = B * K, X = ft_dev_work_expert_rows(m, w);
    for (uint32_t b = 0; b < p->n_buffers; b++) {
        const uint64_t wd = (int32_t)b == p->logits_buf ? m->vocab_size : p->widths[b];
        const ft_dptr_t at = ft_dev_carve(c, B * wd * 4);
        if (w->buf) w->buf[b] = at;
    }
    w->rl = ft_dev_carve(c, B * E * 4);
    w->ids = ft_dev_carve(c, BK * 4);
    w->wts = ft_dev_carve(c, BK * 4);
    w->eo = ft_dev_carve(c, BK * d * 4);
    w->xg = ft_dev_carve(c, X * d * 4);
    w->g = ft_dev_carve(c, X * ffn * 4);
    w->u = ft_dev_carve(c, X * ffn * 4);
    w->dn = ft_dev_carve(c, X * d * 4);
    w->scores = ft_dev_carve(c, (uint64_t)m->max_heads * w->n_ctx * 4);
    w->pos = ft_dev_carve(c, B * 4);
    w->iota = ft_dev_carve(c, B * 4);
    w->ones = ft_dev_carve(c, BK * 4);
    w->cpu_rows = ft_dev_carve(c, BK * d * 4);
    w->meta_bytes = ft_dev_work_meta_bytes(m, w);
    w->meta = ft_dev_carve(c, w->meta_bytes);
    w->dn_y = ce->dn_channels ? ft_dev_carve(c, (uint64_t)ce->dn_channels * 4) : 0;
}

static void ft_dev_work_layout_host(ft_dev_engine_t *ce, ft_dev_work_t *w, ft_carver_t *c,
                                    uint32_t n_threads)
{
    const ft_model_t *m = ce->m;
    const ft_program_t *p = ce->prog;
    const size_t B = w->rows, d = m->d_model, E = m->max_experts, K = m->max_used, ffn = m->max_ffn;
    size_t act_d, act_f;
    ft_dev_act_bytes(m, &act_d, &act_f);
    w->buf = ft_carve(c, p->n_buffers * sizeof(ft_dptr_t));
    w->seg_ops = ft_carve(c, (p->n_ops + 1) * sizeof(*w->seg_ops));
    w->it = ft_carve(c, w->items * sizeof(*w->it));
    w->tok = ft_carve(c, B * sizeof(int32_t));
    w->x_host = ft_carve(c, B * d * sizeof(float));
    w->h_host = ft_carve(c, B * d * sizeof(float));
    w->cpu_out = ft_carve(c, B * K * d * sizeof(float));
    w->ids_host = ft_carve(c, B * K * sizeof(int32_t));
    w->wts_host = ft_carve(c, B * K * sizeof(float));
    w->meta_host = ft_carve(c, ft_dev_work_meta_bytes(m, w));
    w->e_count = ft_carve(c, E * sizeof(uint32_t));
    w->e_list = ft_carve(c, E * B * sizeof(uint32_t));
    w->e_active = ft_carve(c, E * sizeof(int32_t));
    w->e_active_count = ft_carve(c, E * sizeof(uint32_t));
    w->cpu_row0 = ft_carve(c, E * sizeof(uint32_t));
    w->cpu_items = ft_carve(c, E * sizeof(uint32_t));
    ft_dev_cpu_scratch_t *sc = ft_carve(c, n_threads * sizeof(*sc));
    for (uint32_t t = 0; t < n_threads; t++) {
        ft_dev_cpu_scratch_t tmp, *x = sc ? &sc[t] : &tmp;
        x->xrows = ft_carve(c, B * d * sizeof(float));
        x->xp = ft_carve(c, B * act_d);
        x->ap = ft_carve(c, B * act_f);
        x->g = ft_carve(c, B * ffn * sizeof(float));
        x->u = ft_carve(c, B * ffn * sizeof(float));
    }
    w->scratch = sc;
}

/* The constant rows: iota (0, 1, ...) and ones, the index and weight of
 * residual adds (ft_rows_scatter_add with weight 1 adds exactly). */
FT_WARN_UNUSED static ft_status_t ft_dev_work_constants(ft_dev_engine_t *ce, ft_dev_work_t *w)
{
    const uint32_t n_ones = w->rows * ce->m->max_used;
    int32_t *iota = (int32_t *)w->ids_host; /* free until the first step */
    float *ones = w->cpu_out;
    for (uint32_t i = 0; i < w->rows; i++)
        iota[i] = (int32_t)i;
    for (uint32_t i = 0; i < n_ones; i++)
        ones[i] = 1.0f;
    ft_status_t st = ft_dev_copy_h2d(ce->dev, w->iota, iota, w->rows * 4ull, ce->cs);
    if (!st) st = ft_dev_copy_h2d(ce->dev, w->ones, ones, n_ones * 4ull, ce->cs);
    return st ? st : ft_dev_stream_sync(ce->dev, ce->cs);
}

static void ft_dev_work_release(ft_dev_engine_t *ce, ft_dev_work_t *w)
{
    if (w->block) {
        ft_status_free(ft_dev_stream_sync(ce->dev, ce->cs)); /* nothing may still use them */
        ft_dev_free(ce->dev, w->block);
        ce->session_bytes -= w->block_bytes;
    }
    ft_dev_host_free(ce->dev, w->host);
    w->block = 0;
    w->block_bytes = 0;
    w->host = NULL;
}

/* Allocates and lays out w (its rows, items and n_ctx set). */
FT_WARN_UNUSED static ft_status_t ft_dev_work_make(ft_dev_engine_t *ce, ft_dev_work_t *w)
{
    const uint32_t n_threads = ft_threadpool_size(ce->pool);
    w->buf = NULL;
    ft_dev_carver_t dm = {0, 0};
    ft_dev_work_layout_dev(ce, w, &dm);
    ft_carver_t hm = {0};
    ft_dev_work_layout_host(ce, w, &hm, n_threads);
    ft_status_t st = FT_OK;
    if (dm.used > SIZE_MAX)
        st = ft_status_make(FT_STATUS_OUT_OF_RANGE, "cuda: %llu bytes of step buffers",
                            (unsigned long long)dm.used);
    if (!st) st = ft_dev_alloc(ce->dev, (size_t)dm.used, &w->block);
    /* Host buffers page-locked: the per-layer routing reads, the CPU
     * experts' inputs and outputs and the dispatch tables are copied
     * every layer. */
    if (!st)
        st = ft_status_annotate(ft_dev_host_alloc(ce->dev, hm.used + 64, &w->host),
                                "%zu bytes of page-locked host buffers", hm.used);
    if (st) {
        if (w->block) ft_dev_free(ce->dev, w->block);
        w->block = 0;
        return st;
    }
    w->block_bytes = dm.used;
    ce->session_bytes += w->block_bytes;
    /* Host first: the device layout records the buffers' addresses in it. */
    ft_carver_t hc = {(unsigned char *)(((uintptr_t)w->host + 63) & ~(uintptr_t)63), 0};
    ft_dev_work_layout_host(ce, w, &hc, n_threads);
    ft_dev_carver_t dc = {w->block, 0};
    ft_dev_work_layout_dev(ce, w, &dc);
    w->gen++;
    if ((st = ft_dev_work_constants(ce, w))) ft_dev_work_release(ce, w);
    return st;
}

/* No workspace (its generation kept: graphs of an older one stay stale). */
static void ft_dev_work_clear(ft_dev_work_t *w)
{
    const uint32_t gen = w->gen;
    memset(w, 0, sizeof(*w));
    w->gen = gen;
}

ft_status_t ft_dev_work_reserve(ft_dev_engine_t *ce, uint32_t rows, uint32_t items, uint32_t n_ctx)
{
    ft_dev_work_t *w = &ce->ws;
    if (w->block && w->rows >= rows && w->items >= items && w->n_ctx >= n_ctx) return FT_OK;
    const ft_dev_work_t old = *w;
    w->rows = old.rows > rows ? old.rows : rows;
    w->items = old.items > items ? old.items : items;
    w->n_ctx = old.n_ctx > n_ctx ? old.n_ctx : n_ctx;
    if (!w->items) w->items = 1;
    if (w->items > w->rows) w->rows = w->items; /* every item carries at least one row */
    /* The old buffers go first: both may not fit. */
    ft_dev_work_release(ce, w);
    ft_status_t st = ft_dev_work_make(ce, w);
    if (!st) return FT_OK;
    const uint32_t want_rows = w->rows, want_items = w->items, want_ctx = w->n_ctx;
    if (old.block) { /* keep the workspace that was there */
        w->rows = old.rows;
        w->items = old.items;
        w->n_ctx = old.n_ctx;
        ft_status_t again = ft_dev_work_make(ce, w);
        if (again) {
            ft_status_free(again);
            ft_dev_work_clear(w);
        }
    } else {
        ft_dev_work_clear(w);
    }
    return ft_status_annotate(
        st, "cuda: step buffers for passes of %u tokens of %u sessions, contexts of %u", want_rows,
        want_items, want_ctx);
}

void ft_dev_work_free(ft_dev_engine_t *ce)
{
    ft_dev_work_release(ce, &ce->ws);
}

ft_status_t ft_dev_engine_reserve(ft_dev_engine_t *ce, uint32_t items)
{
    if (!ce->ws.block) { /* the first session makes it */
        ce->ws.items = ce->ws.items > items ? ce->ws.items : items;
        return FT_OK;
    }
    return ft_dev_work_reserve(ce, 0, items, 0);
}

uint32_t ft_dev_engine_pass_rows(const ft_dev_engine_t *ce)
{
    return ce->ws.block ? ce->ws.rows : 0;
}

uint32_t ft_dev_engine_pass_items(const ft_dev_engine_t *ce)
{
    return ce->ws.block ? ce->ws.items : 0;
}

int32_t *ft_dev_engine_tokens(ft_dev_engine_t *ce)
{
    return ce->ws.tok;
}
