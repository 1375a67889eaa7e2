/* A device session: its KV cache and recurrent state in one device
 * allocation, made once so a step allocates nothing, and its decode
 * graphs. The buffers its steps compute in are the engine's workspace
 * (dev_work.c), grown here to the session's batch and context. */
#include "dev_internal.h"

#include "../base/alloc.h"

#include <string.h>

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
    const ft_model_t *m = ce->m;
    const ft_program_t *p = ce->prog;
    ft_status_t st = ft_dev_work_reserve(ce, n_batch, 1, n_ctx);
    if (st) return ft_status_annotate(st, "cuda session");
    ft_dev_session_t *s = ft_mem_calloc(ce->a, 1, sizeof(*s));
    ft_dgraph_t *graphs = ft_mem_calloc(ce->a, (size_t)ce->n_moe + 1, sizeof(*graphs));
    if (!s || !graphs) {
        ft_mem_free(ce->a, s);
        ft_mem_free(ce->a, graphs);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cuda session: out of memory");
    }
    s->ce = ce;
    s->n_ctx = n_ctx;
    s->n_batch = n_batch;
    s->graphs = graphs;
    /* rows only for the blocks that append (plan's kv_format) */
    const uint64_t kv =
        (uint64_t)ft_dev_kv_slot(p, p->n_blocks) * n_ctx * p->max_kv_width * m->kv_elem_bytes;
    const uint64_t kv_r = (kv + 255) / 256 * 256, rs = p->rstate_bytes;
    const uint64_t bytes = 2 * kv_r + rs;
    if (bytes > SIZE_MAX)
        st = ft_status_make(FT_STATUS_OUT_OF_RANGE, "cuda session: %llu bytes of KV cache",
                            (unsigned long long)bytes);
    if (!st)
        st = ft_status_annotate(ft_dev_alloc(ce->dev, (size_t)(bytes ? bytes : 256), &s->block),
                                "cuda session: KV cache for %u tokens", n_ctx);
    if (st) {
        ft_dev_session_destroy(s);
        return st;
    }
    s->block_bytes = bytes ? bytes : 256;
    ce->session_bytes += s->block_bytes;
    s->k_cache = s->block;
    s->v_cache = s->block + kv_r;
    s->kv_bytes = 2 * kv;
    s->rstate = rs ? s->block + 2 * kv_r : 0;
    s->graphs_off = !ft_dev_graphs_supported(ce->dev) || !ce->kv_append || !ft_dev_attn_pos_all(ce);
    s->graphs_gen = ce->ws.gen;
    *out = s;
    return FT_OK;
}

void ft_dev_session_destroy(ft_dev_session_t *s)
{
    if (!s) return;
    for (uint32_t l = 0; s->graphs && l <= s->ce->n_moe; l++)
        ft_dev_graph_destroy(s->ce->dev, s->graphs[l]);
    if (s->block) {
        ft_status_free(ft_dev_stream_sync(s->ce->dev, s->ce->cs)); /* nothing may still use them */
        ft_dev_free(s->ce->dev, s->block);
        s->ce->session_bytes -= s->block_bytes;
    }
    ft_mem_free(s->ce->a, s->graphs);
    ft_mem_free(s->ce->a, s);
}

uint64_t ft_dev_session_kv_bytes(const ft_dev_session_t *s)
{
    return s->kv_bytes;
}
