/* Sessions: every buffer of the op schedule, allocated once from the
 * engine's memory device (the cpu device, or the simulated GPU on sim:
 * engine_internal.h), and a page table into the engine's KV page pool
 * (runtime/kv), whose pages come as positions are evaluated: the pool
 * takes memory in slabs and reuses freed pages, so a steady state
 * allocates nothing. */
#include "engine_internal.h"

#include "../backends/cpu/kernels.h"
#include "dev_engine.h"
#include "exec_api.h"
#include "../base/alloc.h"
#include "forward.h"
#include "program.h"

#include <string.h>

#define FT_DEFAULT_BATCH 256u
#define FT_DEFAULT_MAX_CTX 4096u /* when the caller does not say: KV memory stays modest */

void ft_session_options_init(ft_session_options_t *opts)
{
    memset(opts, 0, sizeof(*opts));
}

/* The widest prepared activation row any matrix of the model needs. */
static size_t ft_max_act_row(const ft_model_t *m)
{
    size_t mx = 0;
#define FT_ACT(mat)                                                            \
    do {                                                                       \
        size_t b_ = ft_cpu_act_row_bytes((mat).dtype, (mat).cols);             \
        mx = b_ > mx ? b_ : mx;                                                \
    } while (0)
    FT_ACT(m->output);
    for (uint32_t l = 0; l < m->n_layers; l++) {
        const ft_layer_t *L = &m->layers[l];
        FT_ACT(L->wq); FT_ACT(L->wk); FT_ACT(L->wv); FT_ACT(L->wo); FT_ACT(L->router);
        FT_ACT(L->gate); FT_ACT(L->up); FT_ACT(L->down);
    }
#undef FT_ACT
    return mx;
}

/* Lays out (base NULL: measures) every buffer of the session. */
static void ft_session_layout(ft_session_t *s, ft_carver_t *c, uint32_t n_threads)
{
    const ft_model_t *m = s->m;
    const size_t B = s->n_batch, d = m->d_model, ffn = m->max_ffn, U = m->max_used;
    const size_t act = ft_max_act_row(m);
    const ft_program_t *p = m->prog;
    /* One layer's K and V rows, gathered for the plan's attention kernel
     * (op_attention.c): 4 or 2 bytes an element. */
    const int stage = s->engine->kmod && s->engine->kv_pool;
    s->kv_stage = ft_carve(c, stage ? 2 * (size_t)s->n_ctx * p->max_kv_width * m->kv_elem_bytes : 0);
    s->bufs = ft_carve(c, p->n_buffers * sizeof(float *));
    for (uint32_t b = 0; b < p->n_buffers; b++) {
        /* the logits buffer is the caller's output (executor.c) */
        float *buf = (int32_t)b == p->logits_buf ? NULL : ft_carve(c, B * p->widths[b] * sizeof(float));
        if (s->bufs)
            s->bufs[b] = buf;
    }
    s->xp = ft_carve(c, B * act);
    s->scores = ft_carve(c, (size_t)n_threads * m->max_group * s->n_ctx * sizeof(float));
    s->router = ft_carve(c, B * m->max_experts * sizeof(float));
    s->route_scratch = ft_carve(c, 2 * (size_t)m->max_experts * sizeof(float));
    s->sel = ft_carve(c, B * U * sizeof(int32_t));
    s->sel_w = ft_carve(c, B * U * sizeof(float));
    s->eo = ft_carve(c, B * U * d * sizeof(float));
    s->e_count = ft_carve(c, m->max_experts * sizeof(uint32_t));
    s->e_list = ft_carve(c, (size_t)m->max_experts * B * sizeof(uint32_t));
    s->e_active = ft_carve(c, m->max_experts * sizeof(int32_t));
    s->e_active_count = ft_carve(c, m->max_experts * sizeof(uint32_t));
    s->e_blob = ft_carve(c, m->max_experts * sizeof(uint8_t *));
    s->logits = ft_carve(c, (size_t)m->vocab_size * sizeof(float));
    ft_expert_scratch_t *es = ft_carve(c, n_threads * sizeof(ft_expert_scratch_t));
    for (uint32_t t = 0; t < n_threads; t++) {
        ft_expert_scratch_t tmp, *e = es ? &es[t] : &tmp;
        e->xp = ft_carve(c, B * act);
        /* a decode token's experts share thread 0's g, u, ap: U rows (forward.c) */
        e->g = ft_carve(c, (B > U ? B : U) * ffn * sizeof(float));
        e->u = ft_carve(c, (B > U ? B : U) * ffn * sizeof(float));
        e->ap = ft_carve(c, (B > U ? B : U) * act);
        e->dn = ft_carve(c, B * d * sizeof(float));
        e->xrows = ft_carve(c, B * d * sizeof(float));
    }
    s->es = es;
}

ft_status_t ft_exec_session_create(ft_engine_t *engine, const ft_session_options_t *opts,
                                   ft_session_t **out_session)
{
    *out_session = NULL;
    ft_session_options_t defaults;
    if (!opts) {
        ft_session_options_init(&defaults);
        opts = &defaults;
    }
    const ft_model_t *m = engine->model;
    uint32_t n_ctx = opts->n_ctx;
    if (n_ctx == 0)
        n_ctx = m->context_length < FT_DEFAULT_MAX_CTX ? m->context_length : FT_DEFAULT_MAX_CTX;
    if (n_ctx > m->context_length)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "session context %u is longer than the model's %u tokens", n_ctx,
                              m->context_length);
    uint32_t n_batch = opts->n_batch ? opts->n_batch : FT_DEFAULT_BATCH;
    if (n_batch > n_ctx)
        n_batch = n_ctx;
    ft_session_t *s = ft_mem_calloc(engine->a, 1, sizeof(*s));
    if (!s)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "session: out of memory");
    s->engine = engine;
    s->m = m;
    s->n_ctx = n_ctx;
    s->n_batch = n_batch;
    const uint32_t n_threads = ft_threadpool_size(engine->pool);
    ft_carver_t measure = {0};
    ft_session_layout(s, &measure, n_threads);
    /* Device memory is host memory here, aligned beyond ft_carve's 64. */
    ft_dptr_t block = 0;
    ft_status_t st = ft_dev_alloc(engine->mem, measure.used, &block);
    if (st) {
        ft_mem_free(engine->a, s);
        return ft_status_annotate(st, "session: buffers for batches of %u tokens over a context of %u", n_batch,
                                  n_ctx);
    }
    s->block = (void *)(uintptr_t)block;
    ft_carver_t carve = {s->block, 0};
    ft_session_layout(s, &carve, n_threads);
    if (engine->dev && (st = ft_dev_session_create(engine->dev, n_ctx, n_batch, &s->dev))) {
        ft_dev_free(engine->mem, block);
        ft_mem_free(engine->a, s);
        return st;
    }
    if (engine->kv_pool && (st = ft_kv_table_init(&s->kv, engine->kv_pool, n_ctx, engine->a))) {
        ft_dev_free(engine->mem, block);
        ft_mem_free(engine->a, s);
        return st;
    }
    s->prefix_cache = engine->kv_pool && opts->prefix_cache;
    s->kv_prio = opts->cache_priority == FT_CACHE_LOW ? FT_KV_PRIO_LOW : FT_KV_PRIO_NORMAL;
    engine->n_sessions++;
    *out_session = s;
    return FT_OK;
}

void ft_exec_session_destroy(ft_session_t *s)
{
    if (!s)
        return;
    s->engine->n_sessions--;
    ft_kv_table_free(&s->kv, s->engine->a);
    ft_dev_session_destroy(s->dev);
    ft_dev_free(s->engine->mem, (ft_dptr_t)(uintptr_t)s->block);
    ft_mem_free(s->engine->a, s);
}

ft_status_t ft_exec_session_check(const ft_session_t *s, const int32_t *tokens, uint32_t n)
{
    if (n == 0 || !tokens)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "evaluate: no tokens given");
    if (n > s->n_ctx - s->n_past)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "evaluate: %u tokens after %u already in the session exceed its context of "
                              "%u tokens",
                              n, s->n_past, s->n_ctx);
    for (uint32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || (uint32_t)tokens[i] >= s->m->vocab_size)
            return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                                  "evaluate: token %u of the batch is id %d, outside the vocabulary [0, %u)",
                                  i, tokens[i], s->m->vocab_size);
    return FT_OK;
}

ft_status_t ft_exec_session_run(ft_session_t *s, const int32_t *tokens, uint32_t n, float *out_rows)
{
    if (s->engine->kv_pool) {
        ft_status_t st = ft_kv_table_prepare(&s->kv, s->n_past, n);
        if (st)
            return ft_status_annotate(st, "evaluate %u tokens after %u", n, s->n_past);
    }
    return ft_forward_chunk(s, tokens, n, out_rows);
}

ft_status_t ft_exec_session_publish(ft_session_t *s, const int32_t *history)
{
    if (!s->prefix_cache)
        return FT_OK;
    return ft_kv_table_publish(&s->kv, s->engine->kv_tree, history, s->n_past, s->kv_prio);
}

ft_status_t ft_exec_session_restore(ft_session_t *s, const int32_t *tokens, uint32_t n, uint32_t *out_n)
{
    *out_n = 0;
    s->n_restored = 0;
    if (!s->prefix_cache || s->n_past || n < 2)
        return FT_OK;
    /* At most n - 1: the last token's logits are computed. */
    ft_status_t st = ft_kv_table_restore(&s->kv, s->engine->kv_tree, tokens, n - 1, s->rstate, s->rstate_bytes,
                                         s->kv_prio, out_n);
    if (st)
        return st;
    s->n_past = s->n_restored = *out_n;
    s->has_logits = 0;
    s->engine->kv_restored += *out_n;
    return FT_OK;
}

ft_status_t ft_exec_session_anchor(ft_session_t *s, const int32_t *history, uint32_t pos)
{
    if (s->dev)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "anchor: the cuda backend keeps KV on the device, "
                                                     "outside the prefix cache");
    if (!s->prefix_cache)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "anchor at %u: the session was created without prefix_cache", pos);
    if (pos > s->n_past || (s->rstate_bytes && pos != s->n_past))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "anchor at %u: the session holds %u positions%s", pos, s->n_past,
                              s->rstate_bytes ? ", and its recurrent state is that of the last one" : "");
    return ft_kv_table_anchor(&s->kv, s->engine->kv_tree, history, pos, s->rstate, s->rstate_bytes, s->kv_prio);
}

const float *ft_session_logits(const ft_session_t *s)
{
    return s->has_logits ? s->logits : NULL;
}

uint32_t ft_session_n_past(const ft_session_t *s)
{
    return s->n_past;
}

uint32_t ft_session_n_ctx(const ft_session_t *s)
{
    return s->n_ctx;
}

uint64_t ft_session_kv_bytes(const ft_session_t *s)
{
    if (s->dev)
        return ft_dev_session_kv_bytes(s->dev);
    return s->engine->kv_pool ? (uint64_t)s->kv.n_pages * ft_kv_pool_page_bytes(s->engine->kv_pool) : 0;
}

uint32_t ft_session_n_restored(const ft_session_t *s)
{
    return s->n_restored;
}

ft_status_t ft_exec_session_rewind(ft_session_t *s, uint32_t n_past)
{
    if (n_past > s->n_past)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "rewind to %u: the session holds only %u tokens", n_past, s->n_past);
    s->n_past = n_past;
    s->has_logits = 0; /* the logits belonged to a position now forgotten */
    if (s->engine->kv_pool)
        ft_kv_table_truncate(&s->kv, n_past); /* the caller holds step_lock */
    return FT_OK;
}
