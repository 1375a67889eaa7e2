/* A device session: its KV cache and the schedule's buffers in one device
 * allocation, the host staging for the experts the CPU computes in one
 * host allocation, both made once so a step allocates nothing. */
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

/* Whether block l appends to the KV cache (full attention; a Gated
 * DeltaNet block keeps a fixed state instead). */
static int ft_dev_block_has_kv(const ft_program_t *p, uint32_t l)
{
    for (uint32_t i = 0; i < p->blocks[l].n; i++)
        if (p->blocks[l].ops[i].kind == FTPLAN__OP_KIND__OP_KV_APPEND) return 1;
    return 0;
}

uint32_t ft_dev_kv_slot(const ft_program_t *p, uint32_t layer)
{
    uint32_t slot = 0;
    for (uint32_t l = 0; l < layer && l < p->n_blocks; l++)
        slot += (uint32_t)ft_dev_block_has_kv(p, l);
    return slot;
}

static void ft_dev_session_layout_dev(ft_dev_session_t *s, ft_dev_carver_t *c)
{
    const ft_model_t *m = s->ce->m;
    const ft_program_t *p = s->ce->prog;
    const uint64_t B = s->n_batch, d = m->d_model, kvd = p->max_kv_width;
    const uint64_t E = m->max_experts, K = m->max_used, ffn = m->max_ffn, R = B > K ? B : K;
    /* rows only for the blocks that append (plan's kv_format) */
    const uint64_t kv = (uint64_t)ft_dev_kv_slot(p, p->n_blocks) * s->n_ctx * kvd * m->kv_elem_bytes;
    s->k_cache = ft_dev_carve(c, kv);
    s->v_cache = ft_dev_carve(c, kv);
    s->kv_bytes = 2 * kv;
    for (uint32_t b = 0; b < p->n_buffers; b++) {
        const uint64_t w = (int32_t)b == p->logits_buf ? m->vocab_size : p->widths[b];
        const ft_dptr_t at = ft_dev_carve(c, B * w * 4);
        if (s->buf) s->buf[b] = at;
    }
    s->rl = ft_dev_carve(c, B * E * 4);
    s->ids = ft_dev_carve(c, B * K * 4);
    s->wts = ft_dev_carve(c, B * K * 4);
    s->eo = ft_dev_carve(c, K * B * d * 4);
    s->xg = ft_dev_carve(c, B * d * 4);
    s->g = ft_dev_carve(c, R * ffn * 4);
    s->u = ft_dev_carve(c, R * ffn * 4);
    s->dn = ft_dev_carve(c, R * d * 4);
    s->scores = ft_dev_carve(c, (uint64_t)m->max_heads * s->n_ctx * 4);
    s->pos = ft_dev_carve(c, B * 4);
    s->iota = ft_dev_carve(c, B * 4);
    s->ones = ft_dev_carve(c, B * K * 4);
    s->cpu_rows = ft_dev_carve(c, B * K * d * 4);
    /* Per MOE op: the blob table of the grouped GEMV (8 bytes per active
     * expert), gather, scatter and CPU-row indices (B * K ints each), and
     * the router weights slot-major (K * B floats). */
    s->meta_bytes = E * 8 + 4 * B * K * 4 + E * 4; /* dev_moe.c: ft_dev_meta_layout */
    s->meta = ft_dev_carve(c, s->meta_bytes);
    s->rstate = s->ce->prog->rstate_bytes ? ft_dev_carve(c, s->ce->prog->rstate_bytes) : 0;
    s->dn_y = s->ce->dn_channels ? ft_dev_carve(c, (uint64_t)s->ce->dn_channels * 4) : 0;
}

static void ft_dev_session_layout_host(ft_dev_session_t *s, ft_carver_t *c, uint32_t n_threads)
{
    const ft_model_t *m = s->ce->m;
    const ft_program_t *p = s->ce->prog;
    const size_t B = s->n_batch, d = m->d_model, E = m->max_experts, K = m->max_used, ffn = m->max_ffn;
    size_t act_d, act_f;
    ft_dev_act_bytes(m, &act_d, &act_f);
    s->buf = ft_carve(c, p->n_buffers * sizeof(ft_dptr_t));
    s->seg_ops = ft_carve(c, (p->n_ops + 1) * sizeof(*s->seg_ops));
    s->x_host = ft_carve(c, B * d * sizeof(float));
    s->h_host = ft_carve(c, B * d * sizeof(float));
    s->cpu_out = ft_carve(c, B * K * d * sizeof(float));
    s->ids_host = ft_carve(c, B * K * sizeof(int32_t));
    s->wts_host = ft_carve(c, B * K * sizeof(float));
    s->meta_host = ft_carve(c, s->meta_bytes);
    s->e_count = ft_carve(c, E * sizeof(uint32_t));
    s->e_list = ft_carve(c, E * B * sizeof(uint32_t));
    s->e_active = ft_carve(c, E * sizeof(int32_t));
    s->e_active_count = ft_carve(c, E * sizeof(uint32_t));
    s->cpu_row0 = ft_carve(c, E * sizeof(uint32_t));
    s->cpu_items = ft_carve(c, E * sizeof(uint32_t));
    s->graphs = ft_carve(c, ((size_t)s->ce->n_moe + 1) * sizeof(ft_dgraph_t));
    ft_dev_cpu_scratch_t *sc = ft_carve(c, n_threads * sizeof(*sc));
    for (uint32_t t = 0; t < n_threads; t++) {
        ft_dev_cpu_scratch_t tmp, *x = sc ? &sc[t] : &tmp;
        x->xrows = ft_carve(c, B * d * sizeof(float));
        x->xp = ft_carve(c, B * act_d);
        x->ap = ft_carve(c, B * act_f);
        x->g = ft_carve(c, B * ffn * sizeof(float));
        x->u = ft_carve(c, B * ffn * sizeof(float));
    }
    s->scratch = sc;
}

/* The constant rows: iota (0, 1, ...) and ones, the index and weight of
 * residual adds (ft_rows_scatter_add with weight 1 adds exactly). */
FT_WARN_UNUSED static ft_status_t ft_dev_session_constants(ft_dev_session_t *s)
{
    ft_dev_engine_t *ce = s->ce;
    const uint32_t n_ones = s->n_batch * ce->m->max_used;
    int32_t *iota = (int32_t *)s->ids_host; /* free until the first step */
    float *ones = s->cpu_out;
    for (uint32_t i = 0; i < s->n_batch; i++)
        iota[i] = (int32_t)i;
    for (uint32_t i = 0; i < n_ones; i++)
        ones[i] = 1.0f;
    ft_status_t st = ft_dev_copy_h2d(ce->dev, s->iota, iota, s->n_batch * 4ull, ce->cs);
    if (!st) st = ft_dev_copy_h2d(ce->dev, s->ones, ones, n_ones * 4ull, ce->cs);
    return st ? st : ft_dev_stream_sync(ce->dev, ce->cs);
}

/* Decode graphs need every attention to read its position from device
 * memory (the launches are then the same at every step), which a sliding
 * window's moving start does not. */
static int ft_dev_attn_pos_all(const ft_dev_engine_t *ce)
{
    const ft_program_t *p = ce->prog;
    for (uint32_t l = 0; l < p->n_blocks; l++)
        for (uint32_t i = 0; i < p->blocks[l].n; i++)
            if (p->blocks[l].ops[i].kind == FTPLAN__OP_KIND__OP_ATTENTION &&
                (!ce->ops[p->blocks[l].ops[i].id].fn_pos || p->blocks[l].ops[i].sliding_window))
                return 0;
    return 1;
}

ft_status_t ft_dev_session_create(ft_dev_engine_t *ce, uint32_t n_ctx, uint32_t n_batch,
                                   ft_dev_session_t **out)
{
    *out = NULL;
    ft_dev_session_t *s = ft_mem_calloc(ce->a, 1, sizeof(*s));
    if (!s) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cuda session: out of memory");
    s->ce = ce;
    s->n_ctx = n_ctx;
    s->n_batch = n_batch;
    const uint32_t n_threads = ft_threadpool_size(ce->pool);
    ft_dev_carver_t dm = {0, 0};
    ft_dev_session_layout_dev(s, &dm);
    ft_carver_t hm = {0};
    ft_dev_session_layout_host(s, &hm, n_threads);
    ft_status_t st = FT_OK;
    if (dm.used > SIZE_MAX)
        st = ft_status_make(FT_STATUS_OUT_OF_RANGE, "cuda session: %llu bytes of device buffers",
                            (unsigned long long)dm.used);
    if (!st)
        st = ft_status_annotate(
            ft_dev_alloc(ce->dev, (size_t)dm.used, &s->block),
            "cuda session: KV cache for %u tokens and buffers for batches of %u", n_ctx, n_batch);
    /* Host buffers page-locked: the per-layer routing reads, the CPU
     * experts' inputs and outputs and the dispatch tables are copied
     * every layer. */
    if (!st)
        st = ft_status_annotate(ft_dev_host_alloc(ce->dev, hm.used + 64, &s->host),
                                "cuda session: %zu bytes of page-locked host buffers", hm.used);
    if (st) {
        ft_dev_session_destroy(s);
        return st;
    }
    s->block_bytes = dm.used;
    ce->session_bytes += s->block_bytes;
    /* Host first: the device layout records the buffers' addresses in it. */
    ft_carver_t hc = {(unsigned char *)(((uintptr_t)s->host + 63) & ~(uintptr_t)63), 0};
    ft_dev_session_layout_host(s, &hc, n_threads);
    ft_dev_carver_t dc = {s->block, 0};
    ft_dev_session_layout_dev(s, &dc);
    memset(s->graphs, 0, ((size_t)ce->n_moe + 1) * sizeof(ft_dgraph_t));
    s->graphs_off = !ft_dev_graphs_supported(ce->dev) || !ce->kv_append || !ft_dev_attn_pos_all(ce);
    if ((st = ft_dev_session_constants(s))) {
        ft_dev_session_destroy(s);
        return st;
    }
    *out = s;
    return FT_OK;
}

void ft_dev_session_destroy(ft_dev_session_t *s)
{
    if (!s) return;
    for (uint32_t l = 0; s->host && l <= s->ce->n_moe; l++)
        ft_dev_graph_destroy(s->ce->dev, s->graphs[l]);
    if (s->block) {
        ft_status_free(ft_dev_stream_sync(s->ce->dev, s->ce->cs)); /* nothing may still use them */
        ft_dev_free(s->ce->dev, s->block);
        s->ce->session_bytes -= s->block_bytes;
    }
    ft_dev_host_free(s->ce->dev, s->host);
    ft_mem_free(s->ce->a, s);
}

uint64_t ft_dev_session_kv_bytes(const ft_dev_session_t *s)
{
    return s->kv_bytes;
}
