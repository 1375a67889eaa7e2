/* The q* dispatch of one MoE layer, shared by every device: cache lookup
 * and locking, which misses are copied to the GPU and which run on the
 * CPU, and whole-layer streaming for prefill batches (DESIGN.md section 5).
 * Decides only: the device turns the items into copies and kernels. */
#include "offload_internal.h"

#include <math.h>

static uint32_t ft_bucket(const ft_plan_result_t *plan, uint32_t n_tok)
{
    for (uint32_t b = 0; b < plan->n_buckets; b++)
        if (n_tok <= plan->bucket_tokens[b]) return b;
    return plan->n_buckets ? plan->n_buckets - 1 : 0;
}

/* Whole-layer streaming: the layer's experts arrive in one copy into the
 * buffer this layer owns (layers alternate between the two). */
static void ft_offload_dispatch_stream(ft_offload_t *o, uint32_t layer, uint32_t n_active,
                                       ft_offload_decision_t *out)
{
    const ft_offload_layer_t *L = &o->L[layer];
    out->streamed = 1;
    out->buffer = layer % 2;
    for (uint32_t i = 0; i < n_active; i++)
        o->items[i] = (ft_offload_item_t){i, (int32_t)out->buffer, FT_OFFLOAD_STREAM};
    out->n_items = out->n_streamed = n_active;
    o->st.streamed += n_active;
    o->st.bytes_copied += (uint64_t)L->n_experts * L->blob_stride;
}

/* Misses with the most tokens first: they gain most from the GPU. Stable
 * insertion sort of order[0..n) by counts, descending. */
static void ft_offload_sort_misses(uint32_t *order, uint32_t n, const uint32_t *counts)
{
    for (uint32_t a = 1; a < n; a++)
        for (uint32_t b = a; b > 0 && counts[order[b]] > counts[order[b - 1]]; b--) {
            const uint32_t t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
}

void ft_offload_dispatch(ft_offload_t *o, uint32_t layer, uint32_t n_tok, const int32_t *active,
                         const uint32_t *counts, uint32_t n_active, ft_offload_decision_t *out)
{
    const ft_offload_layer_t *L = &o->L[layer];
    const ft_plan_result_t *plan = &o->plan;
    *out = (ft_offload_decision_t){.items = o->items};
    ft_expert_cache_unlock_all(o->cache); /* the previous layer's kernels are done */
    /* Prefill batches at or above the planner's threshold stream whole
     * layers; a single token (decode) always goes through the cache and q*. */
    if (o->streaming && n_tok > 1 && n_tok >= plan->prefill_stream_tokens) {
        ft_offload_dispatch_stream(o, layer, n_active, out);
        return;
    }
    uint32_t n_miss = 0, miss_in_bucket[FT_PLAN_MAX_BUCKETS] = {0}, sent[FT_PLAN_MAX_BUCKETS] = {0};
    for (uint32_t i = 0; i < n_active; i++) {
        const uint32_t id = layer * o->max_experts + (uint32_t)active[i];
        const int32_t s = ft_expert_cache_lookup(o->cache, id);
        if (s >= 0) {
            ft_expert_cache_lock(o->cache, s);
            o->items[out->n_items++] = (ft_offload_item_t){i, s, FT_OFFLOAD_HIT};
            out->n_hits++;
            o->st.hits++;
        } else {
            o->order[n_miss++] = i;
            miss_in_bucket[ft_bucket(plan, counts[i])]++;
        }
    }
    ft_offload_sort_misses(o->order, n_miss, counts);
    for (uint32_t k = 0; k < n_miss; k++) {
        const uint32_t i = o->order[k], e = (uint32_t)active[i], bk = ft_bucket(plan, counts[i]);
        const float q = plan->qstar ? plan->qstar[(size_t)layer * plan->n_buckets + bk] : 0.0f;
        int32_t s = -1;
        if (sent[bk] < (uint32_t)lroundf(q * (float)miss_in_bucket[bk]))
            s = ft_expert_cache_insert(o->cache, layer * o->max_experts + e);
        if (s >= 0) {
            sent[bk]++;
            ft_expert_cache_lock(o->cache, s);
            o->items[out->n_items++] = (ft_offload_item_t){i, s, FT_OFFLOAD_COPY};
            out->n_copies++;
            o->st.misses_to_gpu++;
            o->st.bytes_copied += L->blob_stride;
        } else {
            o->items[out->n_items++] = (ft_offload_item_t){i, -1, FT_OFFLOAD_CPU};
            out->n_cpu++;
            o->st.misses_to_cpu++;
        }
        o->st.misses++;
    }
}
