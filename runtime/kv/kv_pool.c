/* The KV page pool (kv_pool.h): slabs of pages from the engine's memory
 * source, a free list threaded through the pages' `next` words, a
 * reference count per page. */
#include "kv_pool.h"

#include "../base/alloc.h"

#include <string.h>

#define FT_KV_SLAB_PAGES 64u /* pages a slab adds at most (one source allocation) */

typedef struct ft_kv_slab {
    uint8_t *data;  /* n pages of page_bytes, from the source */
    uint32_t *refs; /* [n] */
    uint32_t *next; /* [n] free-list links (page ids) */
} ft_kv_slab_t;

struct ft_kv_pool {
    const ft_allocator_t *a;
    ft_kv_mem_t mem;
    ft_kv_pool_desc_t d;
    size_t block_bytes, page_bytes;
    uint32_t slab_pages, max_slabs, n_slabs;
    ft_kv_slab_t *slabs; /* [max_slabs] */
    uint32_t free_head;  /* FT_KV_NO_PAGE: empty */
    uint64_t pages_used, evictions;
    ft_kv_evict_fn evict;
    void *evict_user;
};

ft_status_t ft_kv_pool_create(const ft_kv_pool_desc_t *d, const ft_kv_mem_t *mem,
                              const ft_allocator_t *a, ft_kv_pool_t **out)
{
    *out = NULL;
    if (!d->n_layers || !d->page_tokens || !d->row_elems || !d->elem_bytes || !d->budget_bytes)
        return ft_status_make(
            FT_STATUS_INVALID_ARGUMENT,
            "kv pool: a zero field (layers %u, page tokens %u, row elements %u, element "
            "bytes %u, budget %llu bytes)",
            d->n_layers, d->page_tokens, d->row_elems, d->elem_bytes,
            (unsigned long long)d->budget_bytes);
    if (d->page_tokens & (d->page_tokens - 1))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "kv pool: page tokens %u is not a power of two", d->page_tokens);
    /* Every factor is a uint32_t: the products fit in 128 bits; check 64. */
    const uint64_t block = (uint64_t)d->page_tokens * d->row_elems * d->elem_bytes;
    const uint64_t page = block * 2 * d->n_layers;
    if (block / d->page_tokens / d->elem_bytes != d->row_elems || page / 2 / d->n_layers != block ||
        page > SIZE_MAX / FT_KV_SLAB_PAGES)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "kv pool: a page of %u tokens x %u layers is too large",
                              d->page_tokens, d->n_layers);
    if (page > d->budget_bytes)
        return ft_status_make(
            FT_STATUS_INVALID_ARGUMENT,
            "kv pool: the budget of %llu bytes is smaller than one page (%llu bytes: %u "
            "tokens x %u layers x K and V)",
            (unsigned long long)d->budget_bytes, (unsigned long long)page, d->page_tokens,
            d->n_layers);
    const uint64_t max_pages = d->budget_bytes / page;
    if (max_pages >= FT_KV_NO_PAGE)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "kv pool: a budget of %llu pages is too many",
                              (unsigned long long)max_pages);
    ft_kv_pool_t *p = ft_mem_calloc(a, 1, sizeof(*p));
    if (!p) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "kv pool: out of memory");
    p->a = a;
    p->mem = *mem;
    p->d = *d;
    p->block_bytes = (size_t)block;
    p->page_bytes = (size_t)page;
    p->slab_pages = max_pages < FT_KV_SLAB_PAGES ? (uint32_t)max_pages : FT_KV_SLAB_PAGES;
    p->max_slabs = (uint32_t)(max_pages / p->slab_pages);
    p->free_head = FT_KV_NO_PAGE;
    p->slabs = ft_mem_calloc(a, p->max_slabs, sizeof(ft_kv_slab_t));
    if (!p->slabs) {
        const uint32_t n_slabs = p->max_slabs;
        ft_mem_free(a, p);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "kv pool: out of memory for %u slabs",
                              n_slabs);
    }
    *out = p;
    return FT_OK;
}

void ft_kv_pool_destroy(ft_kv_pool_t *p)
{
    if (!p) return;
    for (uint32_t i = 0; i < p->n_slabs; i++) {
        p->mem.free(p->mem.user, p->slabs[i].data);
        ft_mem_free(p->a, p->slabs[i].refs);
        ft_mem_free(p->a, p->slabs[i].next);
    }
    ft_mem_free(p->a, p->slabs);
    ft_mem_free(p->a, p);
}

void ft_kv_pool_set_evictor(ft_kv_pool_t *p, ft_kv_evict_fn evict, void *user)
{
    p->evict = evict;
    p->evict_user = user;
}

uint32_t ft_kv_pool_page_tokens(const ft_kv_pool_t *p)
{
    return p->d.page_tokens;
}

size_t ft_kv_pool_page_bytes(const ft_kv_pool_t *p)
{
    return p->page_bytes;
}

size_t ft_kv_pool_block_bytes(const ft_kv_pool_t *p)
{
    return p->block_bytes;
}

static ft_kv_slab_t *ft_kv_slab_of(const ft_kv_pool_t *p, uint32_t page, uint32_t *out_i)
{
    *out_i = page % p->slab_pages;
    return &p->slabs[page / p->slab_pages];
}

/* One more slab, its pages onto the free list. */
FT_WARN_UNUSED static ft_status_t ft_kv_pool_grow(ft_kv_pool_t *p)
{
    if (p->n_slabs == p->max_slabs)
        return ft_status_make(FT_STATUS_RESOURCE_EXHAUSTED, "budget spent");
    ft_kv_slab_t *s = &p->slabs[p->n_slabs];
    void *data = NULL;
    ft_status_t st = p->mem.alloc(p->mem.user, (size_t)p->slab_pages * p->page_bytes, &data);
    if (st) return st;
    s->refs = ft_mem_calloc(p->a, p->slab_pages, sizeof(uint32_t));
    s->next = ft_mem_calloc(p->a, p->slab_pages, sizeof(uint32_t));
    if (!s->refs || !s->next) {
        ft_mem_free(p->a, s->refs);
        ft_mem_free(p->a, s->next);
        s->refs = s->next = NULL;
        p->mem.free(p->mem.user, data);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY,
                              "kv pool: out of memory for a slab's counts");
    }
    s->data = data;
    const uint32_t base = p->n_slabs * p->slab_pages;
    for (uint32_t i = p->slab_pages; i-- > 0;) { /* lowest id first off the list */
        s->next[i] = p->free_head;
        p->free_head = base + i;
    }
    p->n_slabs++;
    return FT_OK;
}

ft_status_t ft_kv_page_alloc(ft_kv_pool_t *p, uint32_t *out_page)
{
    *out_page = FT_KV_NO_PAGE;
    for (;;) {
        if (p->free_head != FT_KV_NO_PAGE) {
            uint32_t i, page = p->free_head;
            ft_kv_slab_t *s = ft_kv_slab_of(p, page, &i);
            p->free_head = s->next[i];
            s->refs[i] = 1;
            p->pages_used++;
            *out_page = page;
            return FT_OK;
        }
        /* Grow up to the budget before evicting: what the cache holds
         * stays as long as there is room for it. */
        ft_status_t st = ft_kv_pool_grow(p);
        if (!st) continue;
        if (p->evict && p->evict(p->evict_user)) {
            ft_status_free(st);
            p->evictions++;
            continue;
        }
        if (ft_status_code(st) != FT_STATUS_RESOURCE_EXHAUSTED)
            return ft_status_annotate(st,
                                      "kv pool: a new slab of %u pages (%llu pages in use, nothing "
                                      "cached to evict)",
                                      p->slab_pages, (unsigned long long)p->pages_used);
        ft_status_free(st);
        return ft_status_make(
            FT_STATUS_RESOURCE_EXHAUSTED,
            "kv pool: full: %llu pages of %u tokens (%llu bytes each) are in use by "
            "sessions, the budget of %llu bytes holds %llu, and no cached page can be "
            "evicted (raise kv_budget_bytes, or destroy or rewind sessions)",
            (unsigned long long)p->pages_used, p->d.page_tokens, (unsigned long long)p->page_bytes,
            (unsigned long long)p->d.budget_bytes,
            (unsigned long long)p->max_slabs * p->slab_pages);
    }
}

void ft_kv_page_ref(ft_kv_pool_t *p, uint32_t page)
{
    uint32_t i;
    ft_kv_slab_of(p, page, &i)->refs[i]++;
}

void ft_kv_page_unref(ft_kv_pool_t *p, uint32_t page)
{
    uint32_t i;
    ft_kv_slab_t *s = ft_kv_slab_of(p, page, &i);
    if (--s->refs[i]) return;
    s->next[i] = p->free_head;
    p->free_head = page;
    p->pages_used--;
}

uint32_t ft_kv_page_refs(const ft_kv_pool_t *p, uint32_t page)
{
    uint32_t i;
    return ft_kv_slab_of(p, page, &i)->refs[i];
}

uint8_t *ft_kv_page_data(const ft_kv_pool_t *p, uint32_t page)
{
    uint32_t i;
    const ft_kv_slab_t *s = ft_kv_slab_of(p, page, &i);
    return s->data + (size_t)i * p->page_bytes;
}

void ft_kv_pool_stats(const ft_kv_pool_t *p, ft_kv_pool_stats_t *out)
{
    out->budget_bytes = p->d.budget_bytes;
    out->page_bytes = p->page_bytes;
    out->bytes_allocated = (uint64_t)p->n_slabs * p->slab_pages * p->page_bytes;
    out->pages_total = (uint64_t)p->n_slabs * p->slab_pages;
    out->pages_used = p->pages_used;
    out->evictions = p->evictions;
}
