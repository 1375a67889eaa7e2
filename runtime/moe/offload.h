/* Offloading a model to a device with too little memory for it: dense
 * weights resident, routed experts in the global LRU expert cache, missed
 * experts split by q* between the CPU (computing from the mapped weights)
 * and copies into cache slots, and prefill that streams whole layers through
 * two buffers. This is the runtime side of DESIGN.md sections 5 and 6.
 *
 * The decisions are the same for every device (ft_offload_dispatch): per
 * active expert of a layer, a slot that already holds it, a slot to copy it
 * into, a streaming buffer, or the CPU. They are carried out through the
 * device interface (backends/backend.h) by one piece of code for every
 * device (ft_offload_copies): the slots and buffers live in the device's
 * memory and the copies run on its copy stream. Two devices use it:
 *  - the simulated device (backends/sim): its memory is host memory and its
 *    time virtual; the numerics stay on the CPU kernels, computed from the
 *    bytes copied into its slots (so any mistake in the cache or the
 *    streaming shows up as different tokens), and ft_offload_moe and its
 *    neighbours put each step's work on its clock;
 *  - cuda: the device executor (exec/dev_moe.c) launches the experts'
 *    kernels on the slots after waiting for the copies' events. */
#ifndef FT_MOE_OFFLOAD_H
#define FT_MOE_OFFLOAD_H

#include "freetoken.h"
#include "../backends/backend.h"
#include "../format/bundle.h"
#include "../format/hw.h"
#include "../plan/planner.h"

#include <stdint.h>

typedef struct ft_offload ft_offload_t;

typedef struct ft_offload_stats {
    uint64_t hits, misses, misses_to_gpu, misses_to_cpu, streamed;
    uint64_t bytes_copied;
    uint64_t n_tokens, n_steps;
    double modelled_seconds; /* virtual time of all steps (sim), else measured */
    uint64_t order_violations;
    uint32_t n_slots;
    uint64_t vram_bytes;
} ft_offload_stats_t;

/* The device the offload works on and the caller's two streams: expert
 * kernels run on compute, copies into slots and buffers on copy. */
typedef struct ft_offload_device {
    ft_device_t *dev;
    ft_dstream_t compute, copy;
} ft_offload_device_t;

/* Takes the partition for vram_bytes with a KV reservation of ctx tokens
 * and allocates the slots and the streaming buffers in dev's memory, and
 * fills them (pinned experts first). The plan is authoritative (DESIGN.md
 * section 4): its stored partition, slots, q* table and streaming
 * threshold are used when hw holds the figures of the plan's embedded
 * profile, vram_bytes equals the budget it was compiled for and ctx is at
 * most the compiled one; otherwise (or for a plan compiled without --hw)
 * the partition is solved here, with the planner's model description from
 * the plan (runtime/plan/from_plan.h, the one ftc solved with), and
 * ft_offload_plan_note says why in one line. The experts come from the
 * bundle's FTW expert blocks, and the calibration counts in the plan pin
 * hot experts. bundle, the device and the streams must outlive the
 * offload; dev is copied. */
FT_WARN_UNUSED ft_status_t ft_offload_create(const ft_bundle_t *bundle, const ft_hw_t *hw, uint64_t vram_bytes,
                                             uint32_t ctx, const ft_offload_device_t *dev,
                                             const ft_allocator_t *alloc, ft_offload_t **out);

/* Where one active expert of a layer is computed this step. */
typedef enum ft_offload_where {
    FT_OFFLOAD_HIT = 0,    /* already in cache slot `slot` */
    FT_OFFLOAD_COPY = 1,   /* copy it into cache slot `slot`, then compute it there */
    FT_OFFLOAD_STREAM = 2, /* in streaming buffer `slot` (0 or 1): the layer is streamed */
    FT_OFFLOAD_CPU = 3,    /* on the CPU, from the mapped weights */
} ft_offload_where_t;

typedef struct ft_offload_item {
    uint32_t index; /* into the layer's active[] */
    int32_t slot;   /* cache slot, or streaming buffer; -1 for the CPU */
    ft_offload_where_t where;
} ft_offload_item_t;

/* One layer's decisions. items: one per active expert, in the order the
 * device work should be issued (hits in active order, then the misses with
 * the most tokens first; for a streamed layer, active order). Valid until
 * the next dispatch. */
typedef struct ft_offload_decision {
    int streamed;      /* the whole layer goes through streaming buffer `buffer` */
    uint32_t buffer;
    uint32_t n_items, n_hits, n_copies, n_cpu, n_streamed;
    const ft_offload_item_t *items;
} ft_offload_decision_t;

void ft_offload_destroy(ft_offload_t *off);

/* The shared decision for one layer's active experts (counts[i]: tokens
 * routed to active[i] this step): unlocks the previous layer's slots, then
 * either streams the whole layer (prefill batches at or above the plan's
 * threshold, when it reserves streaming buffers) or looks every expert up
 * in the cache (hits are locked for the step), and splits the misses of
 * each token-count bucket by the plan's q*, most tokens first: the first
 * round(q * misses) get a slot (an insert that evicts the least recently
 * used unlocked expert), the rest, and any that find every slot locked,
 * run on the CPU. Counts hits, misses, copies and bytes. */
void ft_offload_dispatch(ft_offload_t *off, uint32_t layer, uint32_t n_tok, const int32_t *active,
                         const uint32_t *counts, uint32_t n_active, ft_offload_decision_t *out);
/* Bytes of one streaming buffer (the largest layer's experts), 0 when the
 * plan has none. */
uint64_t ft_offload_stream_bytes(const ft_offload_t *off);
/* A device the caller drives: a step of n_tok tokens took seconds. */
void ft_offload_record_step(ft_offload_t *off, uint32_t n_tok, double seconds);
const ft_plan_result_t *ft_offload_plan(const ft_offload_t *off);
/* 1 while the partition in force is the one stored in the plan (not solved
 * at open, not re-planned). */
int ft_offload_plan_stored(const ft_offload_t *off);
/* "" when the stored partition was taken at open, or the plan has none;
 * else one line saying it was solved again and why, e.g. "plan: solved again for 6.0 GiB of VRAM
 * (compiled for 8.0 GiB)". Valid while off lives. */
const char *ft_offload_plan_note(const ft_offload_t *off);

/* Carrying out one layer's decision (offload_device.c), for every device:
 * queues the copies it asks for on the copy stream (a streamed layer into
 * its buffer and the next layer into the other, double-buffered; or each
 * copied miss into its slot) and records the events below. active: the
 * layer's active experts, as given to the dispatch. */
FT_WARN_UNUSED ft_status_t ft_offload_copies(ft_offload_t *off, uint32_t layer, const ft_offload_decision_t *d,
                                             const int32_t *active);
/* Where an item's expert e is in device memory: its slot, or its place in
 * the streaming buffer. */
ft_dptr_t ft_offload_blob(const ft_offload_t *off, uint32_t layer, const ft_offload_item_t *it, int32_t e);
/* Recorded after the last ft_offload_copies' slot copies; and when a
 * streaming buffer's layer is in. */
ft_devent_t ft_offload_copied(const ft_offload_t *off);
ft_devent_t ft_offload_streamed(const ft_offload_t *off, uint32_t buffer);
/* A new chunk of tokens: streaming buffers are filled again (their copies
 * are per chunk). */
void ft_offload_chunk_begin(ft_offload_t *off);
/* Device memory the slots and streaming buffers hold. */
uint64_t ft_offload_device_bytes(const ft_offload_t *off);

/* The simulated device's step (offload_sim.c): its clock, for the work the
 * executor computes on the CPU. No-ops on another device. */
void ft_offload_step_begin(ft_offload_t *off);
/* Attention and router of a layer on the device (resident weights); the
 * router's choices go to the host. */
void ft_offload_attention(ft_offload_t *off, uint32_t layer, uint32_t n_tok);
/* ft_offload_dispatch, then ft_offload_copies and the experts' work on the
 * sim's clock. blobs[i] receives the expert blob to compute active[i] from
 * (in the sim's memory: the bytes copied there), or NULL for the mapped
 * weights (CPU path). */
FT_WARN_UNUSED ft_status_t ft_offload_moe(ft_offload_t *off, uint32_t layer, uint32_t n_tok,
                                          const int32_t *active, const uint32_t *counts, uint32_t n_active,
                                          const uint8_t **blobs);
/* The output head, and the end of the step. */
void ft_offload_step_end(ft_offload_t *off, uint32_t n_tok);

void ft_offload_stats(const ft_offload_t *off, ft_offload_stats_t *out);
void ft_offload_reset_stats(ft_offload_t *off);

/* Re-plans for a new VRAM budget while sessions are live: the new partition
 * is solved (always: a re-plan is a new budget) and checked first; then the slot count changes (coldest experts
 * evicted when shrinking). Weights are never re-read; on any failure
 * nothing changes. */
FT_WARN_UNUSED ft_status_t ft_offload_replan(ft_offload_t *off, uint64_t vram_bytes);

#endif
