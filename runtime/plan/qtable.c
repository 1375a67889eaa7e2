/* The plan's q* table: per layer and per token-count bucket, the fraction
 * of a step's missed experts to copy. For bucket n (tokens per expert) the
 * step size follows from the routing (ft_lru_tokens_for_load), the
 * expected touched experts from it, and the hits and misses from the
 * layer's hit rate; the entry is k* / M of the exact integer split at the
 * expected (rounded) counts. Integer, not the fluid limit: at decode M is
 * a handful and one copy costs a whole t_p before its expert can run,
 * which the fluid limit (the closed form) ignores. The runtime rounds
 * q* M on the actual miss set, or calls ft_qstar_best_split. Layers on
 * the CPU, dense layers and plans without LRU slots copy nothing (0); with
 * unified memory the GPU reads every expert in place (1). */
#include "plan_internal.h"

#include "lru_model.h"
#include "qstar.h"

#include <math.h>

#include <stdlib.h>

ft_status_t ft_planner_qstar_table(const ft_plan_model_t *m, const ft_hw_t *hw,
                                ft_plan_result_t *res)
{
    static const uint32_t buckets[FT_PLAN_MAX_BUCKETS] = FT_PLAN_BUCKET_TOKENS;
    res->n_buckets = FT_PLAN_MAX_BUCKETS;
    for (uint32_t b = 0; b < FT_PLAN_MAX_BUCKETS; b++)
        res->bucket_tokens[b] = buckets[b];
    res->qstar = calloc((size_t)m->n_layers * FT_PLAN_MAX_BUCKETS, sizeof *res->qstar);
    if (!res->qstar)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "planner: q* table");
    for (uint32_t l = 0; l < m->n_layers && l < res->n_gpu_layers && !res->cpu_only; l++) {
        const ft_plan_layer_t *ly = &m->layers[l];
        /* the rates of the formats this layer's experts really have */
        ft_qstar_rates_t rates;
        ft_qstar_rates_from_hw_parts(hw, m->expert_format, ly->expert_part_format, ly->expert_part_bytes,
                                     &rates);
        float *row = res->qstar + (size_t)l * FT_PLAN_MAX_BUCKETS;
        if (!ly->is_moe || (!res->unified && res->n_slots == 0))
            continue;
        double h = res->hit_rate[l];
        for (uint32_t b = 0; b < FT_PLAN_MAX_BUCKETS; b++) {
            if (res->unified) {
                row[b] = 1.0f;
                continue;
            }
            double t = ft_lru_tokens_for_load(ly->n_experts, ly->n_used, buckets[b]);
            double d = ft_lru_expected_distinct(ly->n_experts, ly->n_used, t);
            double miss = fmax(1.0, round(d * (1.0 - h)));
            ft_qstar_costs_t c;
            ft_qstar_costs(&rates, (double)ly->expert_bytes, (double)ly->expert_params,
                           buckets[b], h, &c);
            uint32_t k = ft_qstar_best_split(&c, (uint32_t)round(d * h), (uint32_t)miss);
            row[b] = (float)(k / miss);
        }
    }
    return FT_OK;
}
