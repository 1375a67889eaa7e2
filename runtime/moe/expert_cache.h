/* The global expert cache: a fixed number of device slots, each holding one
 * expert blob (gate, up and down of one expert of one layer, as the FTW file
 * lays it out), shared by all layers and evicted least-recently-used.
 * Experts are named by a flat id = layer * n_experts + expert. Pinned slots
 * (hot experts from calibration) are never evicted. Slots used by the step
 * in flight are locked so an eviction can never take an expert a kernel is
 * about to read. Allocation-free after create. */
#ifndef FT_MOE_EXPERT_CACHE_H
#define FT_MOE_EXPERT_CACHE_H

#include "freetoken.h"

#include <stdint.h>

typedef struct ft_expert_cache ft_expert_cache_t;

typedef struct ft_expert_cache_stats {
    uint64_t hits, misses, evictions;
    uint32_t n_slots, n_used_slots, n_pinned;
} ft_expert_cache_stats_t;

/* n_ids: experts in the model (n_layers * n_experts). The cache maps ids
 * to slot numbers; the slots themselves are the device's memory, which the
 * offload code allocates and fills (offload_device.c). */
FT_WARN_UNUSED ft_status_t ft_expert_cache_create(uint32_t n_ids, uint32_t n_slots, const ft_allocator_t *alloc,
                                                  ft_expert_cache_t **out_cache);
void ft_expert_cache_destroy(ft_expert_cache_t *c);

/* The slot holding id, or -1; a hit refreshes its recency and counts. */
int32_t ft_expert_cache_lookup(ft_expert_cache_t *c, uint32_t id);
/* Picks a slot for id (a free one, else the least recently used unlocked,
 * unpinned one, whose expert is evicted), records id there and returns it;
 * -1 when every slot is locked or pinned. The caller fills the slot. Counts
 * a miss. */
int32_t ft_expert_cache_insert(ft_expert_cache_t *c, uint32_t id);
/* Locks a slot until ft_expert_cache_unlock_all (end of a step). */
void ft_expert_cache_lock(ft_expert_cache_t *c, int32_t slot);
void ft_expert_cache_unlock_all(ft_expert_cache_t *c);
/* Pins id into a slot (filled by the caller); -1 when no slot is free. */
int32_t ft_expert_cache_pin(ft_expert_cache_t *c, uint32_t id);

/* The slot holding id or -1, without counting or touching recency. */
int32_t ft_expert_cache_find(const ft_expert_cache_t *c, uint32_t id);
/* Puts id into a free slot (never evicts); -1 when none is free. Not a miss:
 * for warming the cache at load or after it grew. */
int32_t ft_expert_cache_fill_free(ft_expert_cache_t *c, uint32_t id);

void ft_expert_cache_stats(const ft_expert_cache_t *c, ft_expert_cache_stats_t *out);
void ft_expert_cache_reset_stats(ft_expert_cache_t *c);

/* Changes the number of slots to n_slots, keeping the most recently used
 * experts (and every pinned one). Allocates the new slot array first and
 * changes nothing when that fails or when the pinned experts would not fit,
 * so a failed resize leaves the cache as it was. */
FT_WARN_UNUSED ft_status_t ft_expert_cache_resize(ft_expert_cache_t *c, uint32_t n_slots);
/* As ft_expert_cache_resize, into a new cache (*out, the caller's) and
 * leaving c untouched: a re-plan fills the new slots and can still drop the
 * new cache, with the old one exactly as it was, if a later step fails.
 * Slot i of *out holds the i-th kept expert; counters are carried over. */
FT_WARN_UNUSED ft_status_t ft_expert_cache_resized(const ft_expert_cache_t *c, uint32_t n_slots,
                                                   ft_expert_cache_t **out);

#endif
