/* The KV page pool: one per engine, the memory every session's KV cache
 * lives in (DESIGN.md sections 6 and 7).
 *
 * A page holds page_tokens consecutive positions of one sequence for every
 * layer, K and V, in the plan's KV element type: [layer][K, V][page_tokens]
 * [row_elems]. So one layer's rows of one page are contiguous, and the
 * attention loops walk a session's keys page by page with one address
 * computation per page (ft_kv_page_rows).
 *
 * Pages are reference-counted: a session's page table holds one reference
 * per page, the prefix tree one per cached page (kv_prefix.h), an anchor one
 * for its private tail page. A page whose count drops to zero goes back to
 * the pool's free list. Memory grows in slabs of pages, taken from the
 * memory source the engine gives (its device: host memory on cpu, the
 * modelled card on sim) only when the free list is empty, up to a byte
 * budget; pages are never handed back to the source before the pool is
 * destroyed, so a steady state allocates nothing. When the budget (or the
 * source) is spent, the pool asks its evictor (the prefix tree) to free
 * cached pages, and fails with FT_STATUS_RESOURCE_EXHAUSTED when nothing
 * can be freed.
 *
 * Not thread-safe: the engine calls it under its step lock. */
#ifndef FT_KV_KV_POOL_H
#define FT_KV_KV_POOL_H

#include "freetoken.h"

#include <stddef.h>
#include <stdint.h>

#define FT_KV_NO_PAGE UINT32_MAX

typedef struct ft_kv_pool ft_kv_pool_t;

/* Where slabs come from: alloc returns n_bytes aligned to 64 or an error
 * (out of memory, or the device's budget is spent). */
typedef struct ft_kv_mem {
    ft_status_t (*alloc)(void *user, size_t n_bytes, void **out);
    void (*free)(void *user, void *p);
    void *user;
} ft_kv_mem_t;

typedef struct ft_kv_pool_desc {
    uint32_t n_layers;
    uint32_t page_tokens;  /* a power of two */
    uint32_t row_elems;    /* elements of one cached K (or V) row: the widest layer's */
    uint32_t elem_bytes;   /* 4 (f32) or 2 (f16) */
    uint64_t budget_bytes; /* the most page memory the pool takes from its source */
} ft_kv_pool_desc_t;

/* Frees cached pages to make room: returns 1 when it released at least one
 * page reference (the pool then looks at its free list again), 0 when
 * nothing can be evicted. */
typedef int (*ft_kv_evict_fn)(void *user);

typedef struct ft_kv_pool_stats {
    uint64_t budget_bytes;
    uint64_t page_bytes;
    uint64_t bytes_allocated; /* slabs taken from the source */
    uint64_t pages_total;     /* pages in those slabs */
    uint64_t pages_used;      /* pages with a reference */
    uint64_t evictions;       /* evictor calls that freed something */
} ft_kv_pool_stats_t;

/* Errors: a desc with a zero field, page_tokens not a power of two, a page
 * larger than the budget or than SIZE_MAX; out of memory. */
FT_WARN_UNUSED ft_status_t ft_kv_pool_create(const ft_kv_pool_desc_t *desc, const ft_kv_mem_t *mem,
                                             const ft_allocator_t *a, ft_kv_pool_t **out_pool);
/* Every page must be unreferenced by then except the ones the evictor's
 * owner drops first (the prefix tree is destroyed before the pool). */
void ft_kv_pool_destroy(ft_kv_pool_t *pool);

void ft_kv_pool_set_evictor(ft_kv_pool_t *pool, ft_kv_evict_fn evict, void *user);

uint32_t ft_kv_pool_page_tokens(const ft_kv_pool_t *pool);
size_t ft_kv_pool_page_bytes(const ft_kv_pool_t *pool);
/* Bytes of one layer's K (or V) rows in a page: page_tokens rows. */
size_t ft_kv_pool_block_bytes(const ft_kv_pool_t *pool);

/* A free page with one reference (its contents are whatever was there).
 * Errors: FT_STATUS_RESOURCE_EXHAUSTED (budget spent, nothing evictable;
 * the message says how many pages are in use and the budget), or the
 * source's own error when it fails below the budget and nothing can be
 * evicted. */
FT_WARN_UNUSED ft_status_t ft_kv_page_alloc(ft_kv_pool_t *pool, uint32_t *out_page);
void ft_kv_page_ref(ft_kv_pool_t *pool, uint32_t page);
/* Drops a reference; at zero the page is free again. */
void ft_kv_page_unref(ft_kv_pool_t *pool, uint32_t page);
uint32_t ft_kv_page_refs(const ft_kv_pool_t *pool, uint32_t page);
/* The page's memory (page_bytes). */
uint8_t *ft_kv_page_data(const ft_kv_pool_t *pool, uint32_t page);

/* Where layer `layer`'s K (kv 0) or V (kv 1) rows of a page start, given
 * the page's memory: page_tokens rows of row_elems elements each. */
static inline uint8_t *ft_kv_page_rows(uint8_t *page_data, size_t block_bytes, uint32_t layer,
                                       uint32_t kv)
{
    return page_data + ((size_t)layer * 2 + kv) * block_bytes;
}

void ft_kv_pool_stats(const ft_kv_pool_t *pool, ft_kv_pool_stats_t *out);

#endif
