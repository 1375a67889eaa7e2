/* The VRAM and RAM partition (DESIGN.md section 6, docs/planner.md):
 * scratch first (nothing runs without it), then each layer's dense weights
 * with its KV in layer order while they fit (a contiguous prefix of layers
 * on the GPU, so activations cross PCIe once per token), then the output
 * head, then the two streaming buffers if enough is left for a minimum of
 * LRU slots, then pinned experts and slots from the rest. Host RAM holds
 * every weight (mapped), the KV of CPU layers and the CPU's scratch. */
#include "plan_internal.h"

#include <stdlib.h>
#include <string.h>

static double ft_part_gib(uint64_t bytes)
{
    return (double)bytes / (double)(1ull << 30);
}

/* Unified memory (e.g. DGX Spark): the GPU reads the mapped weights in
 * place, so every expert is "resident" and nothing is copied. */
FT_WARN_UNUSED static ft_status_t ft_part_unified(const ft_plan_model_t *m, const ft_plan_budget_t *b,
                                   const ft_planner_totals_t *tot, ft_plan_result_t *res)
{
    res->unified = 1;
    res->n_gpu_layers = m->n_layers;
    res->output_on_gpu = 1;
    res->vram_scratch = ft_planner_scratch_bytes(m, b);
    res->vram_dense = tot->dense + m->output_bytes;
    res->vram_kv = tot->kv;
    res->vram_pinned = tot->experts;
    for (uint32_t i = 0; i < m->n_layers; i++)
        if (m->layers[i].is_moe)
            res->n_pinned += m->layers[i].n_experts;
    res->vram_used = res->vram_scratch + res->vram_dense + res->vram_kv + res->vram_pinned;
    res->ram_needed = tot->weights + tot->kv + res->vram_scratch;
    res->hit_rate = calloc(m->n_layers, sizeof *res->hit_rate);
    if (!res->hit_rate)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "planner: hit rates");
    for (uint32_t i = 0; i < m->n_layers; i++)
        res->hit_rate[i] = m->layers[i].is_moe ? 1.0f : 0.0f;
    return FT_OK; /* pinned ids are not listed: nothing is copied */
}

/* Places each layer's dense weights and KV while they fit; returns what is
 * left of `left`. */
static uint64_t ft_part_layers(const ft_plan_model_t *m, const ft_plan_budget_t *b,
                               uint64_t left, ft_plan_result_t *res)
{
    uint32_t i = 0;
    for (; i < m->n_layers; i++) {
        uint64_t kv = ft_planner_layer_kv(&m->layers[i], b);
        uint64_t need = m->layers[i].dense_bytes + kv;
        if (need > left)
            break;
        left -= need;
        res->vram_dense += m->layers[i].dense_bytes;
        res->vram_kv += kv;
    }
    res->n_gpu_layers = i;
    if (i < m->n_layers) {
        uint64_t rest = m->output_bytes;
        for (uint32_t j = i; j < m->n_layers; j++)
            rest += m->layers[j].dense_bytes + ft_planner_layer_kv(&m->layers[j], b);
        ft_planner_note(res, "layers %u..%u and the output head run on the CPU: dense weights "
                     "and KV need %.2f GiB more VRAM", i, m->n_layers - 1,
                     ft_part_gib(rest - left));
    } else if (m->output_bytes <= left) {
        left -= m->output_bytes;
        res->vram_dense += m->output_bytes;
        res->output_on_gpu = 1;
    } else {
        ft_planner_note(res, "the output head runs on the CPU: it needs %.2f GiB, %.2f GiB left",
                     ft_part_gib(m->output_bytes), ft_part_gib(left));
    }
    return left;
}

/* Reserves the two streaming buffers when, after them, the LRU still has
 * two layers' worth of active experts (one layer's copies land while the
 * previous layer's copied experts still compute). */
static uint64_t ft_part_stream(const ft_plan_model_t *m, uint64_t left, ft_plan_result_t *res)
{
    uint64_t layer_bytes = 0, slot = 0, used = 0;
    for (uint32_t i = 0; i < res->n_gpu_layers; i++) {
        const ft_plan_layer_t *l = &m->layers[i];
        if (!l->is_moe)
            continue;
        uint64_t lb = (uint64_t)l->n_experts * l->expert_bytes;
        layer_bytes = lb > layer_bytes ? lb : layer_bytes;
        slot = l->expert_bytes > slot ? l->expert_bytes : slot;
        used = l->n_used > used ? l->n_used : used;
    }
    if (layer_bytes == 0)
        return left; /* no MoE layer on the GPU: nothing to stream */
    uint64_t stream = 2 * layer_bytes, min_slots = 2 * used * slot;
    if (stream <= left && min_slots <= left - stream) {
        res->stream_buffers = 1;
        res->vram_stream = stream;
        return left - stream;
    }
    ft_planner_note(res, "streaming buffers (%.2f GiB) dropped: %.2f GiB left for experts; "
                 "prefill computes missed experts on the CPU and by copies",
                 ft_part_gib(stream), ft_part_gib(left));
    return left;
}

ft_status_t ft_planner_partition(const ft_plan_model_t *m, const ft_hw_t *hw,
                              const ft_plan_budget_t *b, const ft_planner_totals_t *tot,
                              ft_plan_result_t *res, int allow_stream)
{
    res->ram_budget = b->ram_bytes ? b->ram_bytes : hw->ram_bytes;
    res->ram_weights = tot->weights;
    uint64_t scratch = ft_planner_scratch_bytes(m, b);
    if (hw->n_gpus == 0) {
        res->cpu_only = 1;
        res->ram_needed = tot->weights + tot->kv + scratch;
        return ft_planner_experts(m, 0, res);
    }
    const ft_hw_gpu_t *g = &hw->gpu;
    uint64_t vram = b->vram_bytes ? b->vram_bytes
                  : g->vram_free_bytes ? g->vram_free_bytes : g->vram_bytes;
    res->vram_budget = vram;
    if (g->unified_memory)
        return ft_part_unified(m, b, tot, res);
    if (scratch > vram) {
        res->cpu_only = 1;
        ft_planner_note(res, "VRAM budget %.2f GiB is below the scratch %.2f GiB: everything "
                     "runs on the CPU", ft_part_gib(vram), ft_part_gib(scratch));
        res->ram_needed = tot->weights + tot->kv + scratch;
        return ft_planner_experts(m, 0, res);
    }
    res->vram_scratch = scratch;
    uint64_t left = ft_part_layers(m, b, vram - scratch, res);
    if (allow_stream)
        left = ft_part_stream(m, left, res);
    ft_status_t st = ft_planner_experts(m, left, res);
    if (st)
        return st;
    res->vram_used = res->vram_scratch + res->vram_dense + res->vram_kv + res->vram_stream +
                     res->vram_pinned + res->vram_slots;
    /* RAM: every weight stays mapped; KV of the CPU's layers; the CPU's
     * own scratch (it computes missed experts and CPU layers). */
    uint64_t kv_cpu = tot->kv - res->vram_kv;
    res->ram_needed = tot->weights + kv_cpu + scratch;
    return FT_OK;
}
