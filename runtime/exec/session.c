/* Sessions: the last logits, allocated once from the engine's memory
 * device (the cpu device, or the simulated GPU on sim: engine_internal.h),
 * and a page table into the engine's KV page pool (runtime/kv), whose
 * pages come as positions are evaluated (the pool takes memory in slabs
 * and reuses freed pages, so a steady state allocates nothing); the
 * buffers a pass computes in are the engine's step workspace (work.h),
 * grown here to the session's batch and context. */
#include "engine_internal.h"

#include "../backends/cpu/kernels.h"
#include "dev_engine.h"
#include "exec_api.h"
#include "../base/alloc.h"
#include "program.h"
#include "work.h"

#include <string.h>

#define FT_DEFAULT_BATCH 256u
#define FT_DEFAULT_MAX_CTX 4096u /* when the caller does not say: KV memory stays modest */

void ft_session_options_init(ft_session_options_t *opts)
{
    memset(opts, 0, sizeof(*opts));
}

/* Lays out (base NULL: measures) what the session keeps between steps. */
static void ft_session_layout(ft_session_t *s, ft_carver_t *c)
{
    const ft_model_t *m = s->m;
    s->logits = ft_carve(c, (size_t)m->vocab_size * sizeof(float));
    const ft_program_t *p = m->prog;
    s->rstate_bytes = p->rstate_bytes;
    s->rstate = p->rstate_bytes ? ft_carve(c, p->rstate_bytes) : NULL;
    /* DeltaNet's scratch: its recurrence runs per session (executor.c) */
    const size_t B = s->n_batch, n_threads = ft_threadpool_size(s->engine->pool);
    s->dn_scratch = p->max_dn_channels ? ft_carve(c, (size_t)p->max_dn_channels * sizeof(float)) : NULL;
    s->dn_rows = p->max_dn_channels ? ft_carve(c, B * p->max_dn_channels * sizeof(float)) : NULL;
    s->dn_g = p->max_dn_heads ? ft_carve(c, B * p->max_dn_heads * sizeof(float)) : NULL;
    s->dn_beta = p->max_dn_heads ? ft_carve(c, B * p->max_dn_heads * sizeof(float)) : NULL;
    s->dn_chunk =
        p->max_dn_chunk_scratch ? ft_carve(c, n_threads * p->max_dn_chunk_scratch * sizeof(float)) : NULL;
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
    /* The engine's step workspace takes this session's chunks and context. */
    ft_status_t st = ft_work_reserve(engine, n_batch, 1, n_ctx);
    if (st) {
        ft_mem_free(engine->a, s);
        return ft_status_annotate(st, "session: buffers for batches of %u", n_batch);
    }
    ft_carver_t measure = {0};
    ft_session_layout(s, &measure);
    /* Device memory is host memory here, aligned beyond ft_carve's 64. */
    ft_dptr_t block = 0;
    st = ft_dev_alloc(engine->mem, measure.used, &block);
    if (st) {
        ft_mem_free(engine->a, s);
        return ft_status_annotate(st, "session: its logits (%u floats)", m->vocab_size);
    }
    s->block = (void *)(uintptr_t)block;
    ft_carver_t carve = {s->block, 0};
    ft_session_layout(s, &carve);
    if (s->rstate) /* the state before token 0 */
        memset(s->rstate, 0, s->rstate_bytes);
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

ft_status_t ft_exec_reserve(ft_engine_t *e, uint32_t rows, uint32_t items)
{
    /* The device's workspace: as many items; its rows stay the longest
     * session batch (a step's prefill chunks beyond it run as more passes). */
    if (e->dev) return ft_dev_engine_reserve(e->dev, items);
    return ft_work_reserve(e, rows, items, 1);
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
    /* A recurrent state holds every position at once: it can start over,
     * not be cut back (restoring a snapshot at an anchor is the way back). */
    if (s->rstate && n_past != 0 && n_past != s->n_past)
        return ft_status_make(
            FT_STATUS_UNSUPPORTED,
            "rewind to %u of %u tokens: the model's recurrent (linear-attention) layers "
            "cannot be truncated; rewind to 0 to start over",
            n_past, s->n_past);
    if (s->rstate && n_past == 0) memset(s->rstate, 0, s->rstate_bytes);
    s->n_past = n_past;
    s->has_logits = 0; /* the logits belonged to a position now forgotten */
    if (s->engine->kv_pool)
        ft_kv_table_truncate(&s->kv, n_past); /* the caller holds step_lock */
    return FT_OK;
}

ft_status_t ft_exec_session_prepare(ft_session_t *s, uint32_t n)
{
    if (!s->engine->kv_pool)
        return FT_OK;
    ft_status_t st = ft_kv_table_prepare(&s->kv, s->n_past, n);
    return ft_status_annotate(st, "evaluate %u tokens after %u", n, s->n_past);
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
    /* The last token's logits are computed; and at least as many tokens as
     * take the generated kernels, so that the chunk after the restore runs
     * the kernels a cold prompt's chunks do (gen_min_tokens 2 where decode
     * runs the reference kernels). */
    const ft_engine_t *e = s->engine;
    const uint32_t keep = e->kmod && e->gen_min_tokens > 1 ? e->gen_min_tokens : 1;
    if (!s->prefix_cache || s->n_past || n <= keep)
        return FT_OK;
    ft_status_t st = ft_kv_table_restore(&s->kv, e->kv_tree, tokens, n - keep, s->rstate, s->rstate_bytes,
                                         s->kv_prio, out_n);
    if (st)
        return st;
    s->n_past = s->n_restored = *out_n;
    s->has_logits = 0;
    s->engine->kv_restored += *out_n; /* under step_lock */
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
