/* A session's page table (kv_table.h). */
#include "kv_table.h"

#include "../base/alloc.h"

#include <string.h>

ft_status_t ft_kv_table_init(ft_kv_table_t *t, ft_kv_pool_t *pool, uint32_t n_ctx,
                             const ft_allocator_t *a)
{
    memset(t, 0, sizeof(*t));
    const uint32_t P = ft_kv_pool_page_tokens(pool);
    t->pool = pool;
    while ((1u << t->page_shift) < P)
        t->page_shift++;
    t->block_bytes = ft_kv_pool_block_bytes(pool);
    t->cap = (uint32_t)(((uint64_t)n_ctx + P - 1) / P);
    t->pages = ft_mem_calloc(a, t->cap ? t->cap : 1, sizeof(uint32_t));
    t->data = ft_mem_calloc(a, t->cap ? t->cap : 1, sizeof(uint8_t *));
    t->nodes = ft_mem_calloc(a, t->cap ? t->cap : 1, sizeof(ft_kv_node_t *));
    if (!t->pages || !t->data || !t->nodes) {
        ft_kv_table_free(t, a);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY,
                              "session: out of memory for a page table of %u pages", t->cap);
    }
    return FT_OK;
}

void ft_kv_table_free(ft_kv_table_t *t, const ft_allocator_t *a)
{
    if (t->pool) ft_kv_table_truncate(t, 0);
    ft_mem_free(a, t->pages);
    ft_mem_free(a, t->data);
    ft_mem_free(a, t->nodes);
    memset(t, 0, sizeof(*t));
}

static void ft_kv_table_set(ft_kv_table_t *t, uint32_t i, uint32_t page)
{
    t->pages[i] = page;
    t->data[i] = ft_kv_page_data(t->pool, page);
}

ft_status_t ft_kv_table_prepare(ft_kv_table_t *t, uint32_t pos0, uint32_t n)
{
    if (!n) return FT_OK;
    const uint32_t first = pos0 >> t->page_shift, last = (pos0 + n - 1) >> t->page_shift;
    if (last >= t->cap)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "kv: positions up to %u are past the page table's %u pages",
                              pos0 + n - 1, t->cap);
    for (uint32_t i = first; i <= last; i++) {
        if (i < t->n_pages && ft_kv_page_refs(t->pool, t->pages[i]) == 1)
            continue; /* private: written in place */
        uint32_t page;
        ft_status_t st = ft_kv_page_alloc(t->pool, &page);
        if (st) return st;
        if (i < t->n_pages) { /* shared: copy, then let go of it */
            memcpy(ft_kv_page_data(t->pool, page), t->data[i], ft_kv_pool_page_bytes(t->pool));
            ft_kv_page_unref(t->pool, t->pages[i]);
        } else {
            t->n_pages = i + 1; /* entries are filled in order: first <= n_pages */
        }
        ft_kv_table_set(t, i, page);
        t->nodes[i] = NULL;
        if (t->n_published > i) t->n_published = i;
    }
    return FT_OK;
}

void ft_kv_table_truncate(ft_kv_table_t *t, uint32_t n_past)
{
    const uint32_t P = 1u << t->page_shift;
    const uint32_t keep = (uint32_t)(((uint64_t)n_past + P - 1) >> t->page_shift);
    while (t->n_pages > keep) {
        t->n_pages--;
        ft_kv_page_unref(t->pool, t->pages[t->n_pages]);
        t->nodes[t->n_pages] = NULL;
    }
    /* A published page cut into is no longer the tree's whole page. */
    const uint32_t full = n_past >> t->page_shift;
    while (t->n_published > full)
        t->nodes[--t->n_published] = NULL;
}

ft_status_t ft_kv_table_publish(ft_kv_table_t *t, ft_kv_tree_t *tree, const int32_t *tokens,
                                uint32_t n_past, ft_kv_prio_t prio)
{
    const uint32_t full = n_past >> t->page_shift, P = 1u << t->page_shift;
    while (t->n_published < full && t->n_published < t->n_pages) {
        const uint32_t i = t->n_published;
        ft_kv_node_t *node;
        ft_status_t st = ft_kv_tree_insert(tree, i ? t->nodes[i - 1] : NULL, tokens + (size_t)i * P,
                                           t->pages[i], prio, &node);
        if (st) return st;
        if (ft_kv_node_page(node) != t->pages[i]) {
            /* The tree had these tokens already (another session computed
             * them at the same time): take its page, the same KV, and let
             * ours go. Holding it keeps the node from eviction while the
             * table points at it. */
            ft_kv_page_ref(t->pool, ft_kv_node_page(node));
            ft_kv_page_unref(t->pool, t->pages[i]);
            ft_kv_table_set(t, i, ft_kv_node_page(node));
        }
        t->nodes[i] = node;
        t->n_published++;
    }
    return FT_OK;
}

ft_status_t ft_kv_table_restore(ft_kv_table_t *t, ft_kv_tree_t *tree, const int32_t *tokens,
                                uint32_t max_tokens, uint8_t *rstate, size_t rstate_bytes,
                                ft_kv_prio_t prio, uint32_t *out_n)
{
    *out_n = 0;
    if (t->n_pages)
        return ft_status_make(FT_STATUS_INTERNAL, "kv restore: the session already holds %u pages",
                              t->n_pages);
    const uint32_t P = 1u << t->page_shift;
    if (max_tokens > t->cap * P) max_tokens = t->cap * P;
    ft_kv_match_t m;
    ft_kv_tree_match(tree, tokens, max_tokens, prio, t->nodes, &m);
    const int anchor = m.anchor && (rstate_bytes || m.anchor_pos > m.n_pages * P);
    if (!anchor && rstate_bytes) { /* pages alone cannot give the state */
        memset(t->nodes, 0, m.n_pages * sizeof(ft_kv_node_t *));
        return FT_OK;
    }
    const uint32_t depth = anchor ? m.anchor_depth : m.n_pages;
    uint32_t tail = FT_KV_NO_PAGE;
    if (anchor) {
        size_t nb;
        const uint8_t *state = ft_kv_anchor_rstate(m.anchor, &nb);
        if (nb != rstate_bytes)
            return ft_status_make(FT_STATUS_INTERNAL,
                                  "kv restore: an anchor's state of %zu bytes for %zu", nb,
                                  rstate_bytes);
        if (nb) memcpy(rstate, state, nb); /* before any allocation: eviction may drop the anchor */
        tail = ft_kv_anchor_tail_page(m.anchor);
    }
    for (uint32_t i = 0; i < depth; i++) { /* held now: nothing on the path can be evicted */
        ft_kv_page_ref(t->pool, ft_kv_node_page(t->nodes[i]));
        ft_kv_table_set(t, i, ft_kv_node_page(t->nodes[i]));
    }
    memset(t->nodes + depth, 0,
           (m.n_pages > depth ? m.n_pages - depth : 0) * sizeof(ft_kv_node_t *));
    t->n_pages = t->n_published = depth;
    if (tail != FT_KV_NO_PAGE) {
        ft_kv_page_ref(t->pool, tail); /* kept alive while the copy's page is found */
        uint32_t page;
        ft_status_t st = ft_kv_page_alloc(t->pool, &page);
        if (!st)
            memcpy(ft_kv_page_data(t->pool, page), ft_kv_page_data(t->pool, tail),
                   ft_kv_pool_page_bytes(t->pool));
        ft_kv_page_unref(t->pool, tail);
        if (st) {
            ft_kv_table_truncate(t, 0);
            return ft_status_annotate(st, "kv restore: the anchor's tail page");
        }
        ft_kv_table_set(t, depth, page);
        t->nodes[depth] = NULL;
        t->n_pages = depth + 1;
    }
    *out_n = anchor ? m.anchor_pos : depth * P;
    return FT_OK;
}

ft_status_t ft_kv_table_anchor(ft_kv_table_t *t, ft_kv_tree_t *tree, const int32_t *tokens,
                               uint32_t pos, const uint8_t *rstate, size_t rstate_bytes,
                               ft_kv_prio_t prio)
{
    const uint32_t P = 1u << t->page_shift, full = pos >> t->page_shift;
    if ((uint64_t)t->n_pages * P < pos)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "anchor at %u: the session holds only %u pages of %u", pos,
                              t->n_pages, P);
    ft_status_t st = ft_kv_table_publish(t, tree, tokens, pos, prio);
    if (st) return st;
    if (t->n_published < full)
        return ft_status_make(FT_STATUS_INTERNAL,
                              "anchor at %u: only %u of its %u pages are cached", pos,
                              t->n_published, full);
    const uint32_t n_tail = pos & (P - 1);
    return ft_kv_anchor_add(tree, full ? t->nodes[full - 1] : NULL, pos, tokens + (size_t)full * P,
                            n_tail ? t->pages[full] : FT_KV_NO_PAGE, rstate, rstate_bytes, prio);
}
