/* When to re-plan for free VRAM that changed under us (DESIGN.md section
 * 6): another program took device memory, or gave it back. Pure functions
 * of the numbers a device reports, so the policy is tested without a GPU;
 * the CUDA backend polls ft_cuda_mem_info between steps and calls
 * ft_engine_replan with what ft_vram_policy_decide returns. */
#ifndef FT_MOE_VRAM_POLICY_H
#define FT_MOE_VRAM_POLICY_H

#include <stdint.h>

typedef struct ft_vram_policy {
    uint64_t headroom_bytes;    /* left free for the driver and other programs */
    uint64_t grow_margin_bytes; /* grow only when this much more is available
                                   (hysteresis: no re-plan for small changes) */
    uint64_t min_bytes;         /* never plan below this: the resident dense
                                   weights, KV and scratch (the smallest budget
                                   that keeps every layer on the device) */
    uint64_t max_bytes;         /* never plan above this: the budget that holds
                                   every expert (more buys nothing); 0: no cap */
    uint32_t every_steps;       /* poll at most once per this many steps... */
    uint64_t every_ns;          /* ...and once per this many nanoseconds */
} ft_vram_policy_t;

/* Defaults: 256 MiB headroom, 64 MiB grow margin, poll every 16 steps and
 * at most every 200 ms; min_bytes and max_bytes are the caller's. */
void ft_vram_policy_init(ft_vram_policy_t *p, uint64_t min_bytes, uint64_t max_bytes);

/* 1 when a poll is due: at least every_steps steps and every_ns nanoseconds
 * since the last one (now_ns and last_ns from a monotonic clock). */
int ft_vram_policy_due(const ft_vram_policy_t *p, uint32_t steps_since, uint64_t last_ns,
                       uint64_t now_ns);

/* The budget to re-plan to, or 0 to keep budget_bytes. ours_bytes: device
 * memory this engine holds now (it counts as available to the plan);
 * free_bytes: what the device reports free. What the plan may use is
 * ours + free - headroom. Below the budget: shrink to it (never under
 * min_bytes; 0 when the budget is there already). Above the budget by at
 * least the grow margin: grow to it (never over max_bytes). */
uint64_t ft_vram_policy_decide(const ft_vram_policy_t *p, uint64_t budget_bytes,
                               uint64_t ours_bytes, uint64_t free_bytes);

#endif
