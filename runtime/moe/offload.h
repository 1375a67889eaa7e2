/* Offloading a model to a device with too little memory for it: dense
 * weights resident, routed experts in the global LRU expert cache, missed
 * experts split by q* between the CPU (computing from the mapped weights)
 * and copies into cache slots, and prefill that streams whole layers through
 * two buffers. This is the runtime side of DESIGN.md sections 5 and 6; it
 * drives the simulated device now (runtime/backends/sim) and will drive the
 * CUDA backend with the same decisions.
 *
 * The numerics stay on the CPU kernels: an expert served from a slot or a
 * stream buffer is computed from the bytes copied there, so any mistake in
 * the cache or the streaming shows up as different tokens. */
#ifndef FT_MOE_OFFLOAD_H
#define FT_MOE_OFFLOAD_H

#include "freetoken.h"
#include "../exec/model.h"
#include "../plan/hw.h"
#include "../plan/planner.h"

#include <stdint.h>

typedef struct ft_offload ft_offload_t;

typedef struct ft_offload_stats {
    uint64_t hits, misses, misses_to_gpu, misses_to_cpu, streamed;
    uint64_t bytes_copied;
    uint64_t n_tokens, n_steps;
    double modelled_seconds; /* virtual time of all steps */
    uint64_t order_violations;
    uint32_t n_slots;
    uint64_t vram_bytes;
} ft_offload_stats_t;

/* Plans the partition for vram_bytes with a KV reservation of ctx tokens
 * and allocates the slots and the streaming buffers. */
/* popularity: optional calibration, [n_layers][popularity_stride] routed
 * tokens per expert as fractions (each layer's row sums to n_used), so the
 * planner pins hot experts; NULL: uniform. Copied. */
ft_status_t ft_offload_create(const ft_model_t *m, const ft_hw_t *hw, uint64_t vram_bytes,
                              uint32_t ctx, const float *popularity, uint32_t popularity_stride,
                              const ft_allocator_t *alloc, ft_offload_t **out);
void ft_offload_destroy(ft_offload_t *off);
const ft_plan_result_t *ft_offload_plan(const ft_offload_t *off);

void ft_offload_step_begin(ft_offload_t *off);
/* Attention and router of a layer on the device (resident weights). */
void ft_offload_attention(ft_offload_t *off, uint32_t layer, uint32_t n_tok);
/* Decides where each active expert of a layer runs and fills slots or a
 * stream buffer (real copies). blobs[i] receives the expert blob to compute
 * active[i] from, or NULL for the mapped weights (CPU path). */
void ft_offload_moe(ft_offload_t *off, uint32_t layer, uint32_t n_tok, const int32_t *active,
                    const uint32_t *counts, uint32_t n_active, const uint8_t **blobs);
/* The output head, and the end of the step. */
void ft_offload_step_end(ft_offload_t *off, uint32_t n_tok);

void ft_offload_stats(const ft_offload_t *off, ft_offload_stats_t *out);
void ft_offload_reset_stats(ft_offload_t *off);

/* Re-plans for a new VRAM budget while sessions are live: the new partition
 * is solved and checked first; then the slot count changes (coldest experts
 * evicted when shrinking). Weights are never re-read; on any failure
 * nothing changes. */
ft_status_t ft_offload_replan(ft_offload_t *off, uint64_t vram_bytes);

#endif
