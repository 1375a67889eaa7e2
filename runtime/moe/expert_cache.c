#include "expert_cache.h"

#include "../base/alloc.h"

#include <string.h>

/* Slots form a doubly linked recency list (head = most recent). */
typedef struct ft_slot {
    int64_t id; /* -1: free */
    int32_t prev, next;
    uint8_t locked, pinned;
} ft_slot_t;

struct ft_expert_cache {
    const ft_allocator_t *alloc;
    uint32_t n_ids, n_slots;
    ft_slot_t *slots;
    int32_t *where; /* [n_ids] slot of each id, or -1 */
    int32_t head, tail;
    int32_t locked[1024]; /* slots locked this step (bounded by experts per step) */
    uint32_t n_locked;
    ft_expert_cache_stats_t stats;
};

static void ft_lru_unlink(ft_expert_cache_t *c, int32_t s)
{
    ft_slot_t *x = &c->slots[s];
    if (x->prev >= 0)
        c->slots[x->prev].next = x->next;
    else
        c->head = x->next;
    if (x->next >= 0)
        c->slots[x->next].prev = x->prev;
    else
        c->tail = x->prev;
    x->prev = x->next = -1;
}

static void ft_lru_push_front(ft_expert_cache_t *c, int32_t s)
{
    ft_slot_t *x = &c->slots[s];
    x->prev = -1;
    x->next = c->head;
    if (c->head >= 0)
        c->slots[c->head].prev = s;
    c->head = s;
    if (c->tail < 0)
        c->tail = s;
}

ft_status_t ft_expert_cache_create(uint32_t n_ids, uint32_t n_slots, const ft_allocator_t *alloc, ft_expert_cache_t **out_cache)
{
    *out_cache = NULL;
    ft_expert_cache_t *c = ft_mem_calloc(alloc, 1, sizeof(*c));
    if (!c)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "expert cache: out of memory");
    c->alloc = alloc;
    c->n_ids = n_ids;
    c->where = ft_mem_calloc(alloc, n_ids ? n_ids : 1, sizeof(int32_t));
    if (!c->where) {
        ft_expert_cache_destroy(c);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "expert cache: out of memory");
    }
    for (uint32_t i = 0; i < n_ids; i++)
        c->where[i] = -1;
    ft_status_t st = ft_expert_cache_resize(c, n_slots);
    if (st) {
        ft_expert_cache_destroy(c);
        return st;
    }
    *out_cache = c;
    return FT_OK;
}

void ft_expert_cache_destroy(ft_expert_cache_t *c)
{
    if (!c)
        return;
    ft_mem_free(c->alloc, c->slots);
    ft_mem_free(c->alloc, c->where);
    ft_mem_free(c->alloc, c);
}

int32_t ft_expert_cache_lookup(ft_expert_cache_t *c, uint32_t id)
{
    int32_t s = id < c->n_ids ? c->where[id] : -1;
    if (s < 0)
        return -1;
    c->stats.hits++;
    ft_lru_unlink(c, s);
    ft_lru_push_front(c, s);
    return s;
}

int32_t ft_expert_cache_insert(ft_expert_cache_t *c, uint32_t id)
{
    if (id >= c->n_ids)
        return -1;
    c->stats.misses++;
    int32_t s = c->tail;
    while (s >= 0 && (c->slots[s].locked || c->slots[s].pinned))
        s = c->slots[s].prev;
    if (s < 0)
        return -1;
    ft_slot_t *x = &c->slots[s];
    if (x->id >= 0) {
        c->where[x->id] = -1;
        c->stats.evictions++;
    }
    x->id = id;
    c->where[id] = s;
    ft_lru_unlink(c, s);
    ft_lru_push_front(c, s);
    return s;
}

void ft_expert_cache_lock(ft_expert_cache_t *c, int32_t slot)
{
    if (slot < 0 || (uint32_t)slot >= c->n_slots || c->slots[slot].locked)
        return;
    if (c->n_locked < sizeof(c->locked) / sizeof(c->locked[0])) {
        c->slots[slot].locked = 1;
        c->locked[c->n_locked++] = slot;
    }
}

void ft_expert_cache_unlock_all(ft_expert_cache_t *c)
{
    for (uint32_t i = 0; i < c->n_locked; i++)
        c->slots[c->locked[i]].locked = 0;
    c->n_locked = 0;
}

int32_t ft_expert_cache_pin(ft_expert_cache_t *c, uint32_t id)
{
    int32_t s = id < c->n_ids ? c->where[id] : -1;
    if (s < 0) {
        s = ft_expert_cache_insert(c, id);
        if (s >= 0)
            c->stats.misses--; /* pinning is not a miss of the workload */
    }
    if (s >= 0 && !c->slots[s].pinned) {
        c->slots[s].pinned = 1;
        c->stats.n_pinned++;
    }
    return s;
}

int32_t ft_expert_cache_find(const ft_expert_cache_t *c, uint32_t id)
{
    return id < c->n_ids ? c->where[id] : -1;
}

int32_t ft_expert_cache_fill_free(ft_expert_cache_t *c, uint32_t id)
{
    if (id >= c->n_ids || c->where[id] >= 0 || c->tail < 0 || c->slots[c->tail].id >= 0)
        return -1; /* free slots sit at the tail */
    int32_t s = c->tail;
    c->slots[s].id = id;
    c->where[id] = s;
    /* Warm entries go behind the recently used ones but ahead of free slots. */
    ft_lru_unlink(c, s);
    int32_t at = c->tail;
    while (at >= 0 && c->slots[at].id < 0)
        at = c->slots[at].prev;
    if (at < 0) {
        ft_lru_push_front(c, s);
    } else { /* insert after `at` */
        c->slots[s].prev = at;
        c->slots[s].next = c->slots[at].next;
        if (c->slots[at].next >= 0)
            c->slots[c->slots[at].next].prev = s;
        else
            c->tail = s;
        c->slots[at].next = s;
    }
    return s;
}

void ft_expert_cache_stats(const ft_expert_cache_t *c, ft_expert_cache_stats_t *out)
{
    *out = c->stats;
    out->n_slots = c->n_slots;
    out->n_used_slots = 0;
    for (uint32_t s = 0; s < c->n_slots; s++)
        out->n_used_slots += c->slots[s].id >= 0;
}

void ft_expert_cache_reset_stats(ft_expert_cache_t *c)
{
    c->stats.hits = c->stats.misses = c->stats.evictions = 0;
}

ft_status_t ft_expert_cache_resize(ft_expert_cache_t *c, uint32_t n_slots)
{
    if (c->stats.n_pinned > n_slots)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "expert cache: %u pinned experts do not fit in %u slots", c->stats.n_pinned,
                              n_slots);
    ft_slot_t *slots = ft_mem_calloc(c->alloc, n_slots ? n_slots : 1, sizeof(ft_slot_t));
    int32_t *kept = ft_mem_calloc(c->alloc, n_slots ? n_slots : 1, sizeof(int32_t));
    if (!slots || !kept) {
        ft_mem_free(c->alloc, slots);
        ft_mem_free(c->alloc, kept);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "expert cache: cannot allocate %u slots", n_slots);
    }
    /* Old slots to keep, most wanted first: pinned ones, then the rest from
     * most to least recent. */
    uint32_t n_kept = 0;
    for (int pass = 0; pass < 2 && c->slots; pass++)
        for (int32_t s = c->head; s >= 0 && n_kept < n_slots; s = c->slots[s].next)
            if (c->slots[s].id >= 0 && c->slots[s].pinned == (pass == 0))
                kept[n_kept++] = s;
    for (uint32_t i = 0; i < n_slots; i++)
        slots[i] = (ft_slot_t){.id = -1, .prev = -1, .next = -1};
    for (uint32_t i = 0; i < c->n_ids; i++)
        c->where[i] = -1;
    for (uint32_t i = 0; i < n_kept; i++) {
        const ft_slot_t *o = &c->slots[kept[i]];
        slots[i].id = o->id;
        slots[i].pinned = o->pinned;
        c->where[o->id] = (int32_t)i;
    }
    ft_mem_free(c->alloc, c->slots);
    ft_mem_free(c->alloc, kept);
    c->slots = slots;
    c->n_slots = n_slots;
    c->n_locked = 0;
    /* Recency list: free slots at the tail (taken first), then the kept
     * ones with kept[0] (most wanted) at the head. */
    c->head = c->tail = -1;
    for (uint32_t i = n_slots; i-- > n_kept;)
        ft_lru_push_front(c, (int32_t)i);
    for (uint32_t i = n_kept; i-- > 0;)
        ft_lru_push_front(c, (int32_t)i);
    return FT_OK;
}

ft_status_t ft_expert_cache_resized(const ft_expert_cache_t *c, uint32_t n_slots, ft_expert_cache_t **out)
{
    *out = NULL;
    if (c->stats.n_pinned > n_slots)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "expert cache: %u pinned experts do not fit in %u slots", c->stats.n_pinned,
                              n_slots);
    ft_expert_cache_t *d;
    ft_status_t st = ft_expert_cache_create(c->n_ids, n_slots, c->alloc, &d);
    if (st)
        return st;
    /* The same choice as ft_expert_cache_resize: pinned ones, then the rest
     * from most to least recent, into d's slots in order. */
    uint32_t n_kept = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int32_t s = c->head; s >= 0 && n_kept < n_slots; s = c->slots[s].next) {
            const ft_slot_t *o = &c->slots[s];
            if (o->id < 0 || o->pinned != (pass == 0))
                continue;
            d->slots[n_kept].id = o->id;
            d->slots[n_kept].pinned = o->pinned;
            d->where[o->id] = (int32_t)n_kept;
            n_kept++;
        }
    d->head = d->tail = -1;
    for (uint32_t i = n_slots; i-- > n_kept;)
        ft_lru_push_front(d, (int32_t)i);
    for (uint32_t i = n_kept; i-- > 0;)
        ft_lru_push_front(d, (int32_t)i);
    d->stats = c->stats;
    *out = d;
    return FT_OK;
}
