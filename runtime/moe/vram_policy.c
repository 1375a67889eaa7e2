#include "vram_policy.h"

#include <string.h>

void ft_vram_policy_init(ft_vram_policy_t *p, uint64_t min_bytes, uint64_t max_bytes)
{
    memset(p, 0, sizeof(*p));
    p->headroom_bytes = 256ull << 20;
    p->grow_margin_bytes = 64ull << 20;
    p->min_bytes = min_bytes;
    p->max_bytes = max_bytes;
    p->every_steps = 16;
    p->every_ns = 200ull * 1000 * 1000;
}

int ft_vram_policy_due(const ft_vram_policy_t *p, uint32_t steps_since, uint64_t last_ns,
                       uint64_t now_ns)
{
    return steps_since >= p->every_steps && now_ns >= last_ns && now_ns - last_ns >= p->every_ns;
}

uint64_t ft_vram_policy_decide(const ft_vram_policy_t *p, uint64_t budget_bytes,
                               uint64_t ours_bytes, uint64_t free_bytes)
{
    /* Saturating: a device reporting absurd numbers must not wrap. */
    uint64_t avail = ours_bytes + free_bytes;
    if (avail < ours_bytes) avail = UINT64_MAX;
    avail = avail > p->headroom_bytes ? avail - p->headroom_bytes : 0;
    if (avail < budget_bytes) {
        /* Shrink at once (memory is short now), but never below what keeps
         * the dense layers and KV on the device. */
        const uint64_t target = avail > p->min_bytes ? avail : p->min_bytes;
        return target < budget_bytes ? target : 0;
    }
    /* Grow past the margin only (hysteresis), and no further than useful. */
    const uint64_t target = p->max_bytes && avail > p->max_bytes ? p->max_bytes : avail;
    return target > budget_bytes && avail - budget_bytes >= p->grow_margin_bytes ? target : 0;
}
