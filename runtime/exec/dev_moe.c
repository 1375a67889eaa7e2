/* The MOE op on the device (the ROUTER op before it left the choices on
 * the device, dev_ops.c): the chosen experts and weights to the host; the shared
 * dispatch (ft_offload_dispatch) decides per expert; the shared copies
 * (ft_offload_copies: missed experts into slots, or the whole layer into a
 * streaming buffer, the sim's too) run on the copy stream and the compute
 * stream waits on their events; the
 * GPU's experts are the grouped GEMV (one token) or GEMMs over the
 * gathered tokens (prefill); the CPU's experts read the normalized
 * activations on the host and their rows come back; the outputs are
 * combined on the device in slot order, as the CPU forward does.
 *
 * Expert outputs live slot-major in eo: row k * n + t is token t's k-th
 * choice, so the combine adds them to x in the order k = 0, 1, ...
 *
 * Batch invariance holds per processor: a row's expert products are
 * those of its token alone on the GPU (GEMV entries in a decode pass,
 * GEMMs in a prefill pass) and on the CPU (the pass's kernel choice). But
 * which processor computes a missed expert is the dispatch's choice for
 * the whole pass (q* over its miss set), and the CPU's kernels (8-bit
 * activations for quantized formats) differ from the GPU's: with misses
 * sent to the CPU a row's logits may depend on its neighbours, as they
 * already depend on the cache's history alone. */
#include "dev_internal.h"

#include "../backends/cpu/kernels.h"
#include "expert_cpu.h"

#include <stdatomic.h>
#include <string.h>

/* Per-layer host tables, packed for one upload: the blob table of the
 * grouped GEMV (u64 device pointers), then n * K ints each of scatter
 * rows (GPU experts), gather rows and scatter rows (CPU experts), the
 * router weights slot-major [K][n], then the expert of each blob table
 * entry (the bias rows of the grouped GEMV's outputs). */
typedef struct ft_dev_meta {
    uint64_t *tab;
    int32_t *sidx, *gidx, *cidx;
    float *wt;
    int32_t *eid;
    uint64_t bytes;
    uint64_t off_sidx, off_gidx, off_cidx, off_wt, off_eid;
} ft_dev_meta_t;

static void ft_dev_meta_layout(ft_dev_engine_t *ce, uint32_t n, ft_dev_meta_t *mt)
{
    ft_dev_work_t *w = &ce->ws;
    const ft_model_t *m = ce->m;
    const uint64_t nk = (uint64_t)n * m->max_used * 4, T = ft_dev_work_entries(m, w->items);
    mt->off_sidx = T * 8;
    mt->off_gidx = mt->off_sidx + nk;
    mt->off_cidx = mt->off_gidx + nk;
    mt->off_wt = mt->off_cidx + nk;
    mt->off_eid = mt->off_wt + nk;
    mt->bytes = mt->off_eid + T * 4; /* dev_work.c sizes meta so */
    mt->tab = (uint64_t *)w->meta_host;
    mt->sidx = (int32_t *)(w->meta_host + mt->off_sidx);
    mt->gidx = (int32_t *)(w->meta_host + mt->off_gidx);
    mt->cidx = (int32_t *)(w->meta_host + mt->off_cidx);
    mt->wt = (float *)(w->meta_host + mt->off_wt);
    mt->eid = (int32_t *)(w->meta_host + mt->off_eid);
}

/* The router's choices and weights to the host: the one wait of the
 * layer (the host decides what runs where). */
FT_WARN_UNUSED static ft_status_t ft_dev_read_routes(ft_dev_engine_t *ce, uint32_t layer, uint32_t n)
{
    ft_dev_work_t *w = &ce->ws;
    const uint32_t K = ce->m->layers[layer].n_used;
    ft_status_t st = ft_dev_copy_d2h(ce->dev, w->ids_host, w->ids, (size_t)n * K * 4, ce->cs);
    if (!st) st = ft_dev_copy_d2h(ce->dev, w->wts_host, w->wts, (size_t)n * K * 4, ce->cs);
    return st ? st : ft_dev_stream_sync(ce->dev, ce->cs);
}

/* Tokens per expert (e_list: t * K + k) and the active experts. */
FT_WARN_UNUSED static ft_status_t ft_dev_group(ft_dev_engine_t *ce, uint32_t layer, uint32_t n,
                                 uint32_t *out_active)
{
    ft_dev_work_t *w = &ce->ws;
    const ft_layer_t *L = &ce->m->layers[layer];
    const uint32_t E = L->n_experts, K = L->n_used;
    memset(w->e_count, 0, E * sizeof(uint32_t));
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t k = 0; k < K; k++) {
            const int32_t e = w->ids_host[t * K + k];
            if (e < 0 || (uint32_t)e >= E)
                return ft_status_make(FT_STATUS_INTERNAL,
                                      "cuda: layer %u: the router chose expert %d of %u", layer, e,
                                      E);
            w->e_list[(size_t)e * w->rows + w->e_count[e]++] = t * K + k;
        }
    uint32_t na = 0;
    for (uint32_t e = 0; e < E && w->routing;
         e++) /* calibration: how often each expert is chosen */
        w->routing[(size_t)layer * ce->m->max_experts + e] += w->e_count[e];
    for (uint32_t e = 0; e < E; e++)
        if (w->e_count[e]) {
            w->e_active[na] = (int32_t)e;
            w->e_active_count[na++] = w->e_count[e];
        }
    *out_active = na;
    return FT_OK;
}

/* Decode: the (expert, token) entries of a group (hits, or copied misses)
 * in one grouped GEMV each for gate, up and down, each entry reading its
 * token's row gathered into xg (so each row's products are those of its
 * token alone), each product's bias rows by the entries' experts. base:
 * the group's first table entry. */
FT_WARN_UNUSED static ft_status_t ft_dev_group_gemv(ft_dev_engine_t *ce, const ft_dev_meta_t *mt,
                                                    uint32_t base, uint32_t n_g, ft_dptr_t sidx)
{
    ft_dev_work_t *w = &ce->ws;
    const ft_dev_op_t *C = w->moe_op;
    const uint32_t d = ce->m->d_model, ffn = C->gate.rows;
    ft_dptr_t tab = w->meta + (uint64_t)base * 8, g = w->g + (uint64_t)base * ffn * 4,
              u = w->u + (uint64_t)base * ffn * 4, dn = w->dn + (uint64_t)base * d * 4,
              x = w->xg + (uint64_t)base * d * 4, eid = w->meta + mt->off_eid + (uint64_t)base * 4;
    uint64_t x_d = d, x_ffn = ffn;
    uint64_t og = C->gate.offset, ou = C->up.offset, od = C->down.offset;
    int r_ffn = (int)ffn, r_d = (int)d;
    void *pg[] = {&tab, &og, &x, &x_d, &g, &r_ffn};
    void *pu[] = {&tab, &ou, &x, &x_d, &u, &r_ffn};
    void *pd[] = {&tab, &od, &g, &x_ffn, &dn, &r_d};
    ft_status_t st = ft_dev_run(ce, C->gate.gemv_experts, (ffn + 3) / 4, n_g, 128, pg);
    if (!st) st = ft_dev_run(ce, C->up.gemv_experts, (ffn + 3) / 4, n_g, 128, pu);
    if (!st) st = ft_dev_bias_add(ce, g, C->bias[0], eid, n_g, ffn);
    if (!st) st = ft_dev_bias_add(ce, u, C->bias[1], eid, n_g, ffn);
    if (!st) st = ft_dev_glu(ce, w->moe_x, g, u, g, n_g * ffn);
    if (!st) st = ft_dev_run(ce, C->down.gemv_experts, (d + 3) / 4, n_g, 128, pd);
    if (!st) st = ft_dev_bias_add(ce, dn, C->bias[2], eid, n_g, d);
    return st ? st : ft_dev_scatter_add(ce, dn, sidx, w->ones, n_g, w->eo, d);
}

/* Prefill: expert e over its gathered tokens with the GEMM kernels. */
FT_WARN_UNUSED static ft_status_t ft_dev_expert_gemm(ft_dev_engine_t *ce, uint32_t e,
                                                     ft_dptr_t blob, ft_dptr_t gidx, ft_dptr_t sidx,
                                                     uint32_t n_e)
{
    ft_dev_work_t *w = &ce->ws;
    const ft_dev_op_t *C = w->moe_op;
    const uint32_t d = ce->m->d_model, ffn = C->gate.rows;
    ft_dptr_t wg = blob + C->gate.offset, wu = blob + C->up.offset, wd = blob + C->down.offset;
    int ld_d = (int)d, ld_f = (int)ffn, n = (int)n_e;
    void *pa[] = {&w->moe_in, &ld_d, &gidx, &n, &w->xg, &ld_d};
    void *pg[] = {&wg, &w->xg, &ld_d, &w->g, &ld_f, &ld_f, &n};
    void *pu[] = {&wu, &w->xg, &ld_d, &w->u, &ld_f, &ld_f, &n};
    void *pd[] = {&wd, &w->g, &ld_f, &w->dn, &ld_d, &ld_d, &n};
    /* Expert e's rows of the bias stacks (none: 0). */
    const ft_dptr_t bg = C->bias[0] ? C->bias[0] + (uint64_t)e * ffn * 4 : 0,
                    bu = C->bias[1] ? C->bias[1] + (uint64_t)e * ffn * 4 : 0,
                    bd = C->bias[2] ? C->bias[2] + (uint64_t)e * d * 4 : 0;
    ft_status_t st = ft_dev_run(ce, ce->gather, n_e, 1, 256, pa);
    if (!st) st = ft_dev_run(ce, C->gate.gemm, (ffn + 31) / 32, (n_e + 31) / 32, 256, pg);
    if (!st) st = ft_dev_run(ce, C->up.gemm, (ffn + 31) / 32, (n_e + 31) / 32, 256, pu);
    if (!st) st = ft_dev_bias_add(ce, w->g, bg, 0, n_e, ffn);
    if (!st) st = ft_dev_bias_add(ce, w->u, bu, 0, n_e, ffn);
    if (!st) st = ft_dev_glu(ce, w->moe_x, w->g, w->u, w->g, n_e * ffn);
    if (!st) st = ft_dev_run(ce, C->down.gemm, (d + 31) / 32, (n_e + 31) / 32, 256, pd);
    if (!st) st = ft_dev_bias_add(ce, w->dn, bd, 0, n_e, d);
    return st ? st : ft_dev_scatter_add(ce, w->dn, sidx, w->ones, n_e, w->eo, d);
}

/* Fills the tables for the GPU's experts (blob table in item order: an
 * entry per expert, or per (expert, token) in a decode pass; gather and
 * scatter rows) and the CPU's (their output rows), and the
 * router weights slot-major. Returns the CPU rows in *out_cpu_rows. */
static void ft_dev_tables(ft_dev_engine_t *ce, uint32_t layer, uint32_t n,
                           const ft_offload_decision_t *d, const ft_dev_meta_t *mt,
                           uint32_t *out_cpu_rows, uint32_t *out_n_cpu)
{
    ft_dev_work_t *w = &ce->ws;
    const ft_layer_t *L = &ce->m->layers[layer];
    const uint32_t K = L->n_used;
    uint32_t g_row = 0, c_row = 0, n_cpu = 0, n_gpu = 0;
    for (uint32_t k = 0; k < d->n_items; k++) {
        const ft_offload_item_t *it = &d->items[k];
        const uint32_t i = it->index, e = (uint32_t)w->e_active[i], n_e = w->e_active_count[i];
        const uint32_t *list = w->e_list + (size_t)e * w->rows;
        if (it->where == FT_OFFLOAD_CPU) {
            w->cpu_items[n_cpu++] = i;
            w->cpu_row0[i] = c_row;
            for (uint32_t j = 0; j < n_e; j++)
                mt->cidx[c_row++] = (int32_t)((list[j] % K) * n + list[j] / K);
            continue;
        }
        const uint64_t blob = ft_offload_blob(ce->off, layer, it, (int32_t)e);
        if (!w->gemv) {
            mt->eid[n_gpu] = (int32_t)e;
            mt->tab[n_gpu++] = blob;
        }
        for (uint32_t j = 0; j < n_e; j++, g_row++) {
            if (w->gemv) {
                mt->eid[g_row] = (int32_t)e;
                mt->tab[g_row] = blob;
            }
            mt->gidx[g_row] = (int32_t)(list[j] / K);
            mt->sidx[g_row] = (int32_t)((list[j] % K) * n + list[j] / K);
        }
    }
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t k = 0; k < K; k++)
            mt->wt[k * n + t] = w->wts_host[t * K + k];
    *out_cpu_rows = c_row;
    *out_n_cpu = n_cpu;
}

/* The GPU's experts, in the dispatch's order: those already on the device
 * first, then (after waiting for their copies) the copied ones. */
FT_WARN_UNUSED static ft_status_t ft_dev_gpu_experts(ft_dev_engine_t *ce, uint32_t layer, uint32_t n,
                                       const ft_offload_decision_t *d, const ft_dev_meta_t *mt)
{
    ft_dev_work_t *w = &ce->ws;
    ft_status_t st = FT_OK;
    if (d->streamed) st = ft_dev_stream_wait(ce->dev, ce->cs, ft_offload_streamed(ce->off, d->buffer));
    if (w->gemv) {
        /* Decode: runs of entries that are ready together (hits, or
         * copied misses) in one grouped GEMV each; the table holds an
         * entry per (expert, token) of the GPU's experts in item order,
         * each reading its token's row gathered into xg. */
        uint32_t n_rows = 0;
        for (uint32_t k = 0; k < d->n_items; k++)
            if (d->items[k].where != FT_OFFLOAD_CPU) n_rows += w->e_active_count[d->items[k].index];
        ft_dptr_t gidx = w->meta + mt->off_gidx;
        int ld_d = (int)ce->m->d_model, rows = (int)n_rows;
        void *pa[] = {&w->moe_in, &ld_d, &gidx, &rows, &w->xg, &ld_d};
        if (!st && n_rows) st = ft_dev_run(ce, ce->gather, n_rows, 1, 256, pa);
        uint32_t g = 0, k = 0;
        int waited = 0;
        while (!st && k < d->n_items) {
            if (d->items[k].where == FT_OFFLOAD_CPU) {
                k++;
                continue;
            }
            const int copy = d->items[k].where == FT_OFFLOAD_COPY;
            uint32_t run = 0;
            for (; k < d->n_items; k++) {
                if (d->items[k].where == FT_OFFLOAD_CPU) continue;
                if ((d->items[k].where == FT_OFFLOAD_COPY) != copy) break;
                run += w->e_active_count[d->items[k].index];
            }
            if (copy && !waited) {
                waited = 1;
                if ((st = ft_dev_stream_wait(ce->dev, ce->cs, ft_offload_copied(ce->off)))) break;
            }
            st = ft_dev_group_gemv(ce, mt, g, run, w->meta + mt->off_sidx + 4ull * g);
            g += run;
        }
        return st;
    }
    uint32_t row = 0, g = 0;
    int waited = 0;
    for (uint32_t k = 0; k < d->n_items && !st; k++) {
        const ft_offload_item_t *it = &d->items[k];
        if (it->where == FT_OFFLOAD_CPU) continue;
        if (it->where == FT_OFFLOAD_COPY && !waited) {
            waited = 1;
            if ((st = ft_dev_stream_wait(ce->dev, ce->cs, ft_offload_copied(ce->off)))) break;
        }
        const uint32_t n_e = w->e_active_count[it->index];
        st = ft_dev_expert_gemm(ce, (uint32_t)w->e_active[it->index], mt->tab[g++],
                                w->meta + mt->off_gidx + 4ull * row,
                                w->meta + mt->off_sidx + 4ull * row, n_e);
        row += n_e;
    }
    return st;
}

/* ---- the experts the dispatch keeps on the CPU ------------------------ */

typedef struct ft_dev_cpu_run {
    ft_dev_engine_t *ce;
    const ft_layer_t *L;
    uint32_t n_items;
    atomic_uint next;
} ft_dev_cpu_run_t;

/* One expert over its tokens on the CPU, from the mapped weights:
 * down(act(gate x) * up x), with its biases, into its rows of cpu_out. Generated kernels
 * (the fused expert, else per product) when the pass runs them (its items'
 * token counts decide, as the cpu backend's forward does, so a row's
 * kernels do not depend on how many other rows chose the expert). */
static void ft_dev_cpu_expert(ft_dev_engine_t *ce, const ft_layer_t *L, ft_dev_cpu_scratch_t *sc,
                               uint32_t i)
{
    ft_dev_work_t *w = &ce->ws;
    const uint32_t d = ce->m->d_model, K = L->n_used;
    const uint32_t e = (uint32_t)w->e_active[i], n_e = w->e_active_count[i];
    const uint32_t *list = w->e_list + (size_t)e * w->rows;
    const int gen = w->cpu_gen;
    const uint8_t *wg = ft_mat_expert(&L->gate, e), *wu = ft_mat_expert(&L->up, e),
                  *wd = ft_mat_expert(&L->down, e);
    float *out = w->cpu_out + (size_t)w->cpu_row0[i] * d;
    for (uint32_t j = 0; j < n_e; j++)
        memcpy(sc->xrows + (size_t)j * d, w->h_host + (size_t)(list[j] / K) * d, d * sizeof(float));
    ft_cpu_act_prepare(L->gate.dtype, sc->xrows, d, n_e, d, sc->xp);
    const ft_expert_params_t ep = ft_expert_params(w->moe_x, e);
    ft_cpu_expert(L, gen, &ep, wg, wu, wd, sc->xrows, sc->xp, n_e, sc->g, sc->u, sc->ap, out);
}

static void ft_dev_cpu_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    ft_dev_cpu_run_t *r = ctx;
    (void)nt;
    for (;;) {
        const uint32_t j = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed);
        if (j >= r->n_items) break;
        ft_dev_cpu_expert(r->ce, r->L, &r->ce->ws.scratch[ti], r->ce->ws.cpu_items[j]);
    }
}

/* Runs while the GPU computes its experts; then the rows go to the device
 * and into their slots of eo. */
FT_WARN_UNUSED static ft_status_t ft_dev_cpu_experts(ft_dev_engine_t *ce, uint32_t layer, uint32_t n_items,
                                       uint32_t n_rows, const ft_dev_meta_t *mt)
{
    ft_dev_work_t *w = &ce->ws;
    ft_dev_cpu_run_t r = {.ce = ce, .L = &ce->m->layers[layer], .n_items = n_items};
    atomic_init(&r.next, 0);
    ft_threadpool_run(ce->pool, ft_dev_cpu_worker, &r);
    const uint32_t d = ce->m->d_model;
    ft_status_t st =
        ft_dev_copy_h2d(ce->dev, w->cpu_rows, w->cpu_out, (size_t)n_rows * d * 4, ce->cs);
    return st ? st
              : ft_dev_scatter_add(ce, w->cpu_rows, w->meta + mt->off_cidx, w->ones, n_rows, w->eo,
                                    d);
}

/* ---- the layer --------------------------------------------------------- */

ft_status_t ft_dev_moe(ft_dev_engine_t *ce, const ft_xop_t *x, ft_dptr_t h, uint32_t n)
{
    ft_dev_work_t *w = &ce->ws;
    const uint32_t layer = (uint32_t)x->layer;
    w->moe_in = h;
    w->moe_op = &ce->ops[x->id];
    w->moe_x = x;
    const uint32_t d = ce->m->d_model, K = ce->m->layers[layer].n_used;
    uint32_t n_active = 0, n_cpu_rows = 0, n_cpu = 0;
    ft_status_t st = ft_dev_read_routes(ce, layer, n);
    if (!st) st = ft_dev_group(ce, layer, n, &n_active);
    /* Each expert's weights are checked before anything reads them (a copy
     * to the device, or the CPU). */
    for (uint32_t i = 0; i < n_active && !st; i++)
        st = ft_blob_verify_expert(ce->verify, layer, (uint32_t)w->e_active[i]);
    if (st) return st;
    ft_offload_decision_t dec;
    ft_offload_dispatch(ce->off, layer, n, w->e_active, w->e_active_count, n_active, &dec);
    ft_dev_meta_t mt;
    ft_dev_meta_layout(ce, n, &mt);
    ft_dev_tables(ce, layer, n, &dec, &mt, &n_cpu_rows, &n_cpu);
    /* The copies start first so they overlap everything below. The CPU's
     * inputs come back while the compute stream is idle (after routing). */
    if ((st = ft_offload_copies(ce->off, layer, &dec, w->e_active))) return st;
    if (n_cpu && (st = ft_dev_copy_d2h(ce->dev, w->h_host, w->moe_in, (size_t)n * d * 4, ce->cs)))
        return st;
    if ((st = ft_dev_copy_h2d(ce->dev, w->meta, w->meta_host, mt.bytes, ce->cs)) ||
        (st = ft_dev_memset(ce->dev, w->eo, 0, (size_t)K * n * d * 4, ce->cs)) ||
        (st = ft_dev_gpu_experts(ce, layer, n, &dec, &mt)))
        return st;
    return n_cpu ? ft_dev_cpu_experts(ce, layer, n_cpu, n_cpu_rows, &mt) : FT_OK;
}

ft_status_t ft_dev_combine(ft_dev_engine_t *ce, const ft_xop_t *x, uint32_t n)
{
    ft_dev_work_t *w = &ce->ws;
    const ft_layer_t *L = x->L;
    const uint32_t d = ce->m->d_model, K = L->n_used;
    ft_dev_meta_t mt;
    ft_dev_meta_layout(ce, n, &mt);
    /* x += w_k * eo_k for k = 0, 1, ..., the CPU forward's order. */
    ft_status_t st = FT_OK;
    for (uint32_t k = 0; k < K && !st; k++)
        st = ft_dev_scatter_add(ce, w->eo + (uint64_t)k * n * d * 4, w->iota,
                                 w->meta + mt.off_wt + 4ull * k * n, n, w->buf[x->out[0]], d);
    return st;
}
