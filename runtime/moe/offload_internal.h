/* Internal to runtime/moe: the offload object, shared by the device-
 * agnostic decisions (offload.c, offload_dispatch.c) and the simulated
 * device's side (offload_sim.c). */
#ifndef FT_MOE_OFFLOAD_INTERNAL_H
#define FT_MOE_OFFLOAD_INTERNAL_H

#include "offload.h"

#include "../backends/sim/sim_device.h"
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
    /* A device the caller drives (ft_offload_create_device), or NULL. */
    ft_offload_device_t ext;
    int has_ext;
    /* The simulated device (ft_offload_create): host memory stands in for
     * the device's slots and buffers, time is virtual. */
    ft_sim_device_t *dev;
    uint8_t *stream[2]; /* whole-layer prefill buffers, or NULL */
    ft_sim_event_t stream_free[2];
    ft_sim_event_t ready, router_ready;
};

/* Slots the cache needs for a plan: LRU slots plus the pinned experts
 * (pinned experts take a slot each: the blobs are all the same size). */
static inline uint32_t ft_offload_cache_slots(const ft_plan_result_t *plan)
{
    return plan->n_slots + plan->n_pinned;
}

/* offload_sim.c: the sim's streaming buffers for a plan (allocated or
 * freed to match it). */
FT_WARN_UNUSED ft_status_t ft_offload_sim_streams(ft_offload_t *o, const ft_plan_result_t *res);

#endif
