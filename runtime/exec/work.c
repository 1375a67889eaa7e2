/* The engine's step workspace (work.h): laid out once, grown when a
 * session or the scheduler needs longer passes, freed with the engine. */
#include "work.h"

#include "../backends/cpu/kernels.h"
#include "../base/alloc.h"
#include "program.h"

#include <string.h>

/* The widest prepared activation row any matrix of the model needs. */
static size_t ft_max_act_row(const ft_model_t *m)
{
    size_t mx = 0;
#define FT_ACT(mat)                                                                                \
    do {                                                                                           \
        size_t b_ = ft_cpu_act_row_bytes((mat).dtype, (mat).cols);                                 \
        mx = b_ > mx ? b_ : mx;                                                                    \
    } while (0)
    FT_ACT(m->output);
    for (uint32_t l = 0; l < m->n_layers; l++) {
        const ft_layer_t *L = &m->layers[l];
        FT_ACT(L->wq);
        FT_ACT(L->wk);
        FT_ACT(L->wv);
        FT_ACT(L->wo);
        FT_ACT(L->router);
        FT_ACT(L->gate);
        FT_ACT(L->up);
        FT_ACT(L->down);
    }
#undef FT_ACT
    return mx;
}

/* Lays out (base NULL: measures) every buffer of the workspace. */
static void ft_work_layout(ft_work_t *w, const ft_model_t *m, ft_carver_t *c)
{
    const size_t B = w->rows, d = m->d_model, ffn = m->max_ffn, U = m->max_used;
    const size_t act = ft_max_act_row(m);
    const ft_program_t *p = m->prog;
    w->bufs = ft_carve(c, p->n_buffers * sizeof(float *));
    for (uint32_t b = 0; b < p->n_buffers; b++) {
        /* the logits buffer is the pass's output (executor.c) */
        float *buf =
            (int32_t)b == p->logits_buf ? NULL : ft_carve(c, B * p->widths[b] * sizeof(float));
        if (w->bufs) w->bufs[b] = buf;
    }
    w->xp = ft_carve(c, B * act);
    w->scores = ft_carve(c, (size_t)w->n_threads * m->max_group * w->n_ctx * sizeof(float));
    w->kv_stage =
        ft_carve(c, w->has_stage ? 2 * (size_t)w->n_ctx * p->max_kv_width * m->kv_elem_bytes : 0);
    w->router = ft_carve(c, B * m->max_experts * sizeof(float));
    w->route_scratch = ft_carve(c, 2 * (size_t)m->max_experts * sizeof(float));
    w->sel = ft_carve(c, B * U * sizeof(int32_t));
    w->sel_w = ft_carve(c, B * U * sizeof(float));
    w->eo = ft_carve(c, B * U * d * sizeof(float));
    w->e_count = ft_carve(c, m->max_experts * sizeof(uint32_t));
    w->e_list = ft_carve(c, (size_t)m->max_experts * B * sizeof(uint32_t));
    w->e_active = ft_carve(c, m->max_experts * sizeof(int32_t));
    w->e_active_count = ft_carve(c, m->max_experts * sizeof(uint32_t));
    w->e_blob = ft_carve(c, m->max_experts * sizeof(uint8_t *));
    w->row_s = ft_carve(c, B * sizeof(ft_session_t *));
    w->row_pos = ft_carve(c, B * sizeof(uint32_t));
    w->tok = ft_carve(c, B * sizeof(int32_t));
    w->logits = ft_carve(c, (size_t)w->items * m->vocab_size * sizeof(float));
    ft_expert_scratch_t *es = ft_carve(c, w->n_threads * sizeof(ft_expert_scratch_t));
    for (uint32_t t = 0; t < w->n_threads; t++) {
        ft_expert_scratch_t tmp, *e = es ? &es[t] : &tmp;
        e->xp = ft_carve(c, B * act);
        /* a decode token's experts share thread 0's g, u, ap: U rows (forward_moe.c) */
        e->g = ft_carve(c, (B > U ? B : U) * ffn * sizeof(float));
        e->u = ft_carve(c, (B > U ? B : U) * ffn * sizeof(float));
        e->ap = ft_carve(c, (B > U ? B : U) * act);
        e->dn = ft_carve(c, B * d * sizeof(float));
        e->xrows = ft_carve(c, B * d * sizeof(float));
    }
    w->es = es;
}

static size_t ft_work_measure(ft_work_t *w, const ft_model_t *m)
{
    ft_carver_t measure = {0};
    ft_work_layout(w, m, &measure);
    return measure.used;
}

ft_status_t ft_work_reserve(ft_engine_t *e, uint32_t rows, uint32_t items, uint32_t n_ctx)
{
    ft_work_t *old = e->work;
    if (e->dev) /* a device backend computes in each session's device buffers */
        return FT_OK;
    if (old && old->rows >= rows && old->items >= items && old->n_ctx >= n_ctx) return FT_OK;
    ft_work_t next = {.n_threads = ft_threadpool_size(e->pool), .has_stage = e->kmod && e->kv_pool};
    next.rows = old && old->rows > rows ? old->rows : rows;
    next.items = old && old->items > items ? old->items : items;
    next.n_ctx = old && old->n_ctx > n_ctx ? old->n_ctx : n_ctx;
    if (next.items > next.rows) next.rows = next.items; /* every item carries at least one row */
    const size_t bytes = ft_work_measure(&next, e->model);
    ft_work_t *w = old ? old : ft_mem_calloc(e->a, 1, sizeof(*w));
    if (!w) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "step workspace: out of memory");
    /* The old block goes first: on a capped device (sim) both may not fit. */
    if (old) ft_dev_free(e->mem, (ft_dptr_t)(uintptr_t)old->block);
    ft_dptr_t block = 0;
    ft_status_t st = ft_dev_alloc(e->mem, bytes, &block);
    if (st && old) { /* keep the workspace that was there */
        next = *old;
        if (!ft_dev_alloc(e->mem, e->work_bytes, &block)) {
            *w = next;
            w->block = (void *)(uintptr_t)block;
            ft_carver_t carve = {w->block, 0};
            ft_work_layout(w, e->model, &carve);
        } else {
            ft_mem_free(e->a, w);
            e->work = NULL;
            e->work_bytes = 0;
        }
    }
    if (st) {
        if (!old) ft_mem_free(e->a, w);
        return ft_status_annotate(
            st, "step workspace for passes of %u tokens of %u sessions, contexts of %u", rows,
            items, n_ctx);
    }
    *w = next;
    w->block = (void *)(uintptr_t)block;
    w->xp_buf = w->alt_buf = -1;
    ft_carver_t carve = {w->block, 0};
    ft_work_layout(w, e->model, &carve);
    e->work = w;
    e->work_bytes = bytes;
    return FT_OK;
}

void ft_work_free(ft_engine_t *e)
{
    if (!e->work) return;
    ft_dev_free(e->mem, (ft_dptr_t)(uintptr_t)e->work->block);
    ft_mem_free(e->a, e->work);
    e->work = NULL;
    e->work_bytes = 0;
}

uint64_t ft_work_bytes(const ft_engine_t *e)
{
    return e->work_bytes;
}
