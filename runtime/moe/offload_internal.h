/* Internal to runtime/moe: the offload object, shared by the decisions
 * (offload.c, offload_dispatch.c), carrying them out on the device
 * (offload_device.c) and the simulated device's clock (offload_sim.c). */
#ifndef FT_MOE_OFFLOAD_INTERNAL_H
#define FT_MOE_OFFLOAD_INTERNAL_H

#include "offload.h"

#include "../backends/backend.h"
#include "expert_cache.h"

/* One layer's experts in the mapped FTW file: expert e (gate, up and down
 * together) is the blob [blob0 + e * blob_stride, + blob_stride), the unit
 * a slot holds and a copy moves. n_experts 0 for a dense layer. */
typedef struct ft_offload_layer {
    const uint8_t *blob0;
    uint64_t blob_stride;
    uint32_t n_experts;
} ft_offload_layer_t;

struct ft_offload {
    const ft_bundle_t *b;
    const char *where;        /* the plan file, for messages */
    const ft_allocator_t *a;
    ft_hw_t hw;
    uint64_t vram_bytes;
    uint32_t ctx;
    uint32_t n_layers;
    uint32_t max_experts;     /* the largest n_experts: cache ids are layer * max_experts + e */
    ft_offload_layer_t *L;    /* [n_layers] */
    ft_plan_model_t *pm;      /* the planner's description, from the plan */
    ft_plan_result_t plan;
    int stored;               /* plan is the bundle's stored partition */
    char note[224];           /* ft_offload_plan_note */
    ft_expert_cache_t *cache;
    uint64_t slot_bytes;      /* the largest expert blob: every slot holds any expert */
    uint64_t stream_bytes;    /* one streaming buffer: the largest layer's experts */
    int streaming;            /* the plan reserves the two streaming buffers */
    uint32_t *order;          /* [max_experts] scratch: misses by tokens */
    ft_offload_item_t *items; /* [max_experts] the last dispatch */
    ft_offload_stats_t st;
    /* The device (the sim or cuda) and the caller's streams. */
    ft_offload_device_t dv;
    /* Expert slots and the two streaming buffers in its memory, one
     * allocation (offload_device.c). */
    ft_dptr_t slots, stream[2];
    uint64_t slots_alloc_bytes, slot_stride;
    uint32_t n_dev_slots;
    ft_devent_t copied;      /* this layer's expert copies are in */
    ft_devent_t streamed[2]; /* a streaming buffer's layer is in */
    int32_t stream_layer[2]; /* the layer copied into each buffer this chunk, or -1 */
    int sim;                 /* dv.dev is the simulated device: offload_sim.c keeps its time */
};

/* Slots the cache needs for a plan: LRU slots plus the pinned experts
 * (pinned experts take a slot each: the blobs are all the same size). */
static inline uint32_t ft_offload_cache_slots(const ft_plan_result_t *plan)
{
    return plan->n_slots + plan->n_pinned;
}

/* offload_device.c: events, slot memory and fills. */
FT_WARN_UNUSED ft_status_t ft_offload_device_init(ft_offload_t *o);
void ft_offload_device_release(ft_offload_t *o);
/* Makes room for n_slots slots and, when streaming, two streaming
 * buffers; on failure the old memory stays as it was. */
FT_WARN_UNUSED ft_status_t ft_offload_reserve(ft_offload_t *o, uint32_t n_slots, int streaming);
/* Slot slot's device address. */
ft_dptr_t ft_offload_slot(const ft_offload_t *o, int32_t slot);
/* Copies expert e of layer into slot, outside any step. */
FT_WARN_UNUSED ft_status_t ft_offload_fill(ft_offload_t *o, int32_t slot, uint32_t layer, uint32_t e);

#endif
