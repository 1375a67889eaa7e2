/* The semantic check of a plan's machine-specific part (plan_validate.h):
 * the embedded hardware profile, the budgets, the partition with its q*
 * table, and the calibration counts. Needs hparams and blocks checked. */
#include "plan_validate_internal.h"

#include "../base/checked.h"
#include "dtype.h"
#include "plan_validate.h"

#include <math.h>
#include <string.h>

#define FT_PV_BAD(code, ...) ft_status_make((code), __VA_ARGS__)

/* A figure's median, when present, must be finite and >= 0 (positive when
 * `required`; then the figure must be present too). */
FT_WARN_UNUSED static ft_status_t ft_pv_figure(const Fthw__Figure *f, int required, const char *field,
                                const char *name)
{
    if (!f)
        return required ? FT_PV_BAD(FT_STATUS_FORMAT, "%s: hw_profile.%s: missing", name, field)
                        : FT_OK;
    if (!isfinite(f->median) || f->median < 0 || (required && f->median == 0))
        return FT_PV_BAD(FT_STATUS_OUT_OF_RANGE,
                         "%s: hw_profile.%s.median is %g, expected a finite value %s", name, field,
                         f->median, required ? "> 0" : ">= 0");
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_pv_gemv(Fthw__GemvRate *const *rates, size_t n, const char *where,
                              const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (!rates[i] || ft_dtype_from_name(rates[i]->format ? rates[i]->format : "") ==
                             FT_DTYPE_INVALID)
            return FT_PV_BAD(FT_STATUS_FORMAT, "%s: hw_profile.%s.gemv[%zu]: unknown format",
                             name, where, i);
        ft_status_t st = ft_pv_figure(rates[i]->weight_gbs, 0, "gemv.weight_gbs", name);
        if (st)
            return ft_status_annotate(st, "%s.gemv[%zu]", where, i);
    }
    return FT_OK;
}

/* What ft_hw_from_profile and the planner need, so that a runtime re-plan
 * from the embedded profile cannot fail on it. */
FT_WARN_UNUSED static ft_status_t ft_pv_profile(const Fthw__Profile *p, const char *name)
{
    const Fthw__Cpu *c = p->cpu;
    if (!c)
        return FT_PV_BAD(FT_STATUS_FORMAT, "%s: hw_profile.cpu: missing", name);
    ft_status_t st;
    if ((st = ft_pv_figure(c->n_cores, 0, "cpu.n_cores", name)) ||
        (st = ft_pv_figure(c->n_physical_cores, 0, "cpu.n_physical_cores", name)) ||
        (st = ft_pv_figure(c->ram_bytes, 0, "cpu.ram_bytes", name)) ||
        (st = ft_pv_figure(c->dram_read_gbs, 1, "cpu.dram_read_gbs", name)) ||
        (st = ft_pv_figure(c->dram_read_1t_gbs, 0, "cpu.dram_read_1t_gbs", name)) ||
        (st = ft_pv_gemv(c->gemv, c->n_gemv, "cpu", name)))
        return st;
    if (c->ram_bytes && c->ram_bytes->median >= 0x1p64)
        return FT_PV_BAD(FT_STATUS_OUT_OF_RANGE,
                         "%s: hw_profile.cpu.ram_bytes does not fit 64 bits", name);
    if (p->n_gpus == 0)
        return FT_OK;
    const Fthw__Gpu *g = p->gpus[0];
    if (!g)
        return FT_PV_BAD(FT_STATUS_FORMAT, "%s: hw_profile.gpus[0]: missing", name);
    const struct {
        const Fthw__Figure *f;
        int required;
        const char *field;
    } figs[] = {
        {g->vram_total_bytes, 0, "gpus[0].vram_total_bytes"},
        {g->vram_free_bytes, 0, "gpus[0].vram_free_bytes"},
        {g->hbm_gbs, 1, "gpus[0].hbm_gbs"},
        {g->h2d_gbs, 1, "gpus[0].h2d_gbs"},
        {g->d2h_gbs, 0, "gpus[0].d2h_gbs"},
        {g->gather_gbs, 0, "gpus[0].gather_gbs"},
        {g->launch_us, 0, "gpus[0].launch_us"},
        {g->h2d_overlap_gbs, 0, "gpus[0].h2d_overlap_gbs"},
        {g->cpu_gemv_overlap_gbs, 0, "gpus[0].cpu_gemv_overlap_gbs"},
        {g->gemm_tflops, 0, "gpus[0].gemm_tflops"},
    };
    for (size_t i = 0; i < sizeof(figs) / sizeof(figs[0]); i++)
        if ((st = ft_pv_figure(figs[i].f, figs[i].required, figs[i].field, name)))
            return st;
    if ((g->vram_total_bytes && g->vram_total_bytes->median >= 0x1p64) ||
        (g->vram_free_bytes && g->vram_free_bytes->median >= 0x1p64))
        return FT_PV_BAD(FT_STATUS_OUT_OF_RANGE, "%s: hw_profile.gpus[0]: VRAM size does not "
                         "fit 64 bits", name);
    return ft_pv_gemv(g->gemv, g->n_gemv, "gpus[0]", name);
}

/* The largest n_experts of any MoE block (0 when none). */
static uint32_t ft_pv_max_experts(const Ftplan__Plan *plan)
{
    uint32_t m = 0;
    for (size_t l = 0; l < plan->n_blocks; l++)
        if (plan->blocks[l]->is_moe && plan->blocks[l]->moe->n_experts > m)
            m = plan->blocks[l]->moe->n_experts;
    return m;
}

FT_WARN_UNUSED static ft_status_t ft_pv_budget(const Ftplan__Budget *b, const char *name)
{
    if (b->ctx < 1 || b->ctx > FT_PLAN_MAX_CONTEXT)
        return FT_PV_BAD(FT_STATUS_OUT_OF_RANGE, "%s: budget.ctx is %u, expected 1..%u", name,
                         b->ctx, FT_PLAN_MAX_CONTEXT);
    if (b->batch < 1 || b->batch > FT_PLAN_MAX_BATCH)
        return FT_PV_BAD(FT_STATUS_OUT_OF_RANGE, "%s: budget.batch is %u, expected 1..%u", name,
                         b->batch, FT_PLAN_MAX_BATCH);
    if (b->ram_bytes == 0)
        return FT_PV_BAD(FT_STATUS_OUT_OF_RANGE, "%s: budget.ram_bytes is 0", name);
    return FT_OK;
}

/* Regions add up to vram_used, within the budget; RAM within its budget. */
FT_WARN_UNUSED static ft_status_t ft_pv_sizes(const Ftplan__Partition *p, const Ftplan__Budget *b,
                               const char *name)
{
    const uint64_t regions[] = {p->vram_dense, p->vram_pinned, p->vram_slots,
                                p->vram_kv,    p->vram_stream, p->vram_scratch};
    uint64_t sum = 0, slots;
    for (size_t i = 0; i < sizeof(regions) / sizeof(regions[0]); i++)
        if (!ft_add_u64(sum, regions[i], &sum))
            return FT_PV_BAD(FT_STATUS_OUT_OF_RANGE, "%s: partition: VRAM regions overflow", name);
    if (sum != p->vram_used)
        return FT_PV_BAD(FT_STATUS_MISMATCH,
                         "%s: partition.vram_used is %llu, the regions add up to %llu", name,
                         (unsigned long long)p->vram_used, (unsigned long long)sum);
    if (p->vram_used > b->vram_bytes)
        return FT_PV_BAD(FT_STATUS_OUT_OF_RANGE,
                         "%s: partition.vram_used %llu exceeds budget.vram_bytes %llu", name,
                         (unsigned long long)p->vram_used, (unsigned long long)b->vram_bytes);
    if (!ft_mul_u64(p->n_slots, p->slot_bytes, &slots) || slots != p->vram_slots)
        return FT_PV_BAD(FT_STATUS_MISMATCH,
                         "%s: partition: %u slots of %llu bytes do not make vram_slots %llu",
                         name, p->n_slots, (unsigned long long)p->slot_bytes,
                         (unsigned long long)p->vram_slots);
    if (p->ram_weights > p->ram_needed || p->ram_needed > b->ram_bytes)
        return FT_PV_BAD(FT_STATUS_OUT_OF_RANGE,
                         "%s: partition: ram_weights %llu <= ram_needed %llu <= budget.ram_bytes "
                         "%llu does not hold",
                         name, (unsigned long long)p->ram_weights,
                         (unsigned long long)p->ram_needed, (unsigned long long)b->ram_bytes);
    if (p->cpu_only && (p->vram_used || p->n_gpu_layers || p->unified))
        return FT_PV_BAD(FT_STATUS_MISMATCH,
                         "%s: partition: cpu_only with VRAM in use or layers on the GPU", name);
    return FT_OK;
}

/* Pinned ids: strictly ascending flat ids of experts that exist, on layers
 * that run on the GPU. */
FT_WARN_UNUSED static ft_status_t ft_pv_pinned(const Ftplan__Plan *plan, const char *name)
{
    const Ftplan__Partition *p = plan->partition;
    if (p->n_pinned_ids != p->n_pinned && !(p->unified && p->n_pinned_ids == 0))
        return FT_PV_BAD(FT_STATUS_MISMATCH, "%s: partition: n_pinned is %u with %zu pinned_ids",
                         name, p->n_pinned, p->n_pinned_ids);
    if (p->expert_id_stride != ft_pv_max_experts(plan))
        return FT_PV_BAD(FT_STATUS_MISMATCH,
                         "%s: partition.expert_id_stride is %u, the largest expert count is %u",
                         name, p->expert_id_stride, ft_pv_max_experts(plan));
    for (size_t i = 0; i < p->n_pinned_ids; i++) {
        uint32_t id = p->pinned_ids[i];
        if (i > 0 && id <= p->pinned_ids[i - 1])
            return FT_PV_BAD(FT_STATUS_FORMAT,
                             "%s: partition.pinned_ids[%zu] = %u is not above the one before",
                             name, i, id);
        uint32_t layer = p->expert_id_stride ? id / p->expert_id_stride : UINT32_MAX;
        const Ftplan__Block *b = layer < plan->n_blocks ? plan->blocks[layer] : NULL;
        if (!b || !b->is_moe || id % p->expert_id_stride >= b->moe->n_experts ||
            layer >= p->n_gpu_layers)
            return FT_PV_BAD(FT_STATUS_OUT_OF_RANGE,
                             "%s: partition.pinned_ids[%zu] = %u is no expert of a GPU layer", name,
                             i, id);
    }
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_pv_fractions(const float *v, size_t n, const char *field, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!(v[i] >= 0.0f && v[i] <= 1.0f)) /* also refuses NaN */
            return FT_PV_BAD(FT_STATUS_OUT_OF_RANGE, "%s: partition.%s[%zu] is %g, expected 0..1",
                             name, field, i, (double)v[i]);
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_pv_qstar(const Ftplan__Plan *plan, const char *name)
{
    const Ftplan__Partition *p = plan->partition;
    size_t n_layers = plan->hparams->n_layers, nb = p->n_bucket_tokens;
    if (nb < 1 || nb > FT_PLAN_MAX_QSTAR_BUCKETS)
        return FT_PV_BAD(FT_STATUS_OUT_OF_RANGE, "%s: partition.bucket_tokens: %zu buckets, "
                         "expected 1..%u", name, nb, FT_PLAN_MAX_QSTAR_BUCKETS);
    for (size_t i = 0; i < nb; i++)
        if (p->bucket_tokens[i] < 1 || (i > 0 && p->bucket_tokens[i] <= p->bucket_tokens[i - 1]))
            return FT_PV_BAD(FT_STATUS_FORMAT,
                             "%s: partition.bucket_tokens[%zu] = %u: bounds must be >= 1 and "
                             "strictly ascending", name, i, p->bucket_tokens[i]);
    if (p->n_qstar != n_layers * nb) /* <= 4096 * 8: no overflow */
        return FT_PV_BAD(FT_STATUS_MISMATCH,
                         "%s: partition.qstar: %zu values for %zu layers x %zu buckets", name,
                         p->n_qstar, n_layers, nb);
    if (p->n_hit_rate != n_layers)
        return FT_PV_BAD(FT_STATUS_MISMATCH, "%s: partition.hit_rate: %zu values for %zu layers",
                         name, p->n_hit_rate, n_layers);
    ft_status_t st = ft_pv_fractions(p->qstar, p->n_qstar, "qstar", name);
    return st ? st : ft_pv_fractions(p->hit_rate, p->n_hit_rate, "hit_rate", name);
}

FT_WARN_UNUSED static ft_status_t ft_pv_predictions(const Ftplan__Partition *p, const char *name)
{
    if (!ft_plan_enum_ok(&ftplan__bottleneck__descriptor, p->bottleneck))
        return FT_PV_BAD(FT_STATUS_FORMAT, "%s: partition.bottleneck: unknown value %d", name,
                         (int)p->bottleneck);
    if (p->n_decode_s != 0 && p->n_decode_s != 4)
        return FT_PV_BAD(FT_STATUS_MISMATCH, "%s: partition.decode_s: %zu values, expected 4",
                         name, p->n_decode_s);
    const struct {
        const char *field;
        double v;
    } rates[] = {{"predicted_decode_tok_s", p->predicted_decode_tok_s},
                 {"predicted_prefill_tok_s", p->predicted_prefill_tok_s},
                 {"copy_bytes_per_token", p->copy_bytes_per_token},
                 {"decode_s[0]", p->n_decode_s ? p->decode_s[0] : 0},
                 {"decode_s[1]", p->n_decode_s ? p->decode_s[1] : 0},
                 {"decode_s[2]", p->n_decode_s ? p->decode_s[2] : 0},
                 {"decode_s[3]", p->n_decode_s ? p->decode_s[3] : 0}};
    for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
        if (!isfinite(rates[i].v) || rates[i].v < 0)
            return FT_PV_BAD(FT_STATUS_OUT_OF_RANGE,
                             "%s: partition.%s is %g, expected a finite value >= 0", name,
                             rates[i].field, rates[i].v);
    return FT_OK;
}

ft_status_t ft_plan_check_partition(const Ftplan__Plan *plan, const char *name)
{
    const Ftplan__Partition *p = plan->partition;
    if (plan->hw_profile) {
        ft_status_t st = ft_pv_profile(plan->hw_profile, name);
        if (st)
            return st;
    }
    if (!p && !plan->budget)
        return FT_OK;
    if (!p || !plan->budget || !plan->hw_profile)
        return FT_PV_BAD(FT_STATUS_FORMAT,
                         "%s: %s present without %s: a partition needs its budget and hw_profile",
                         name, p ? "partition" : "budget",
                         !plan->hw_profile ? "hw_profile" : p ? "budget" : "partition");
    if (p->n_gpu_layers > plan->hparams->n_layers)
        return FT_PV_BAD(FT_STATUS_OUT_OF_RANGE,
                         "%s: partition.n_gpu_layers is %u, the model has %u layers", name,
                         p->n_gpu_layers, plan->hparams->n_layers);
    ft_status_t st = ft_pv_budget(plan->budget, name);
    if (!st)
        st = ft_pv_sizes(p, plan->budget, name);
    if (!st)
        st = ft_pv_pinned(plan, name);
    if (!st)
        st = ft_pv_qstar(plan, name);
    if (!st)
        st = ft_pv_predictions(p, name);
    return st;
}

/* Per layer: each count at most n_tokens, the row at most n_tokens * n_used
 * (a token is routed to n_used distinct experts), zero past the layer's
 * experts and on dense layers. */
FT_WARN_UNUSED static ft_status_t ft_pv_calib_layer(const Ftplan__Calibration *c, const Ftplan__Block *b,
                                     size_t l, const char *name)
{
    const uint64_t *row = c->counts + l * c->n_experts;
    uint32_t n_exp = b->is_moe ? b->moe->n_experts : 0;
    uint64_t sum = 0, cap = 0;
    if (b->is_moe && !ft_mul_u64(c->n_tokens, b->moe->n_experts_used, &cap))
        cap = UINT64_MAX;
    for (uint32_t e = 0; e < c->n_experts; e++) {
        if (row[e] > (e < n_exp ? c->n_tokens : 0))
            return FT_PV_BAD(FT_STATUS_OUT_OF_RANGE,
                             "%s: calibration.counts[%zu] (layer %zu, expert %u) is %llu, "
                             "expected at most %llu",
                             name, l * c->n_experts + e, l, e, (unsigned long long)row[e],
                             (unsigned long long)(e < n_exp ? c->n_tokens : 0));
        if (!ft_add_u64(sum, row[e], &sum))
            sum = UINT64_MAX;
    }
    if (sum > cap)
        return FT_PV_BAD(FT_STATUS_OUT_OF_RANGE,
                         "%s: calibration: layer %zu counts %llu routings, more than %llu tokens "
                         "x %u experts used",
                         name, l, (unsigned long long)sum, (unsigned long long)c->n_tokens,
                         b->moe->n_experts_used);
    return FT_OK;
}

ft_status_t ft_plan_check_calibration(const Ftplan__Plan *plan, const char *name)
{
    const Ftplan__Calibration *c = plan->calibration;
    if (!c)
        return FT_OK;
    uint32_t max_e = ft_pv_max_experts(plan);
    if (max_e == 0 || c->n_experts != max_e)
        return FT_PV_BAD(FT_STATUS_MISMATCH,
                         "%s: calibration.n_experts is %u, the largest expert count is %u", name,
                         c->n_experts, max_e);
    if (c->n_tokens < 1)
        return FT_PV_BAD(FT_STATUS_OUT_OF_RANGE, "%s: calibration.n_tokens is 0", name);
    size_t n_layers = plan->hparams->n_layers;
    if (c->n_counts != n_layers * c->n_experts) /* <= 4096 * 65536 */
        return FT_PV_BAD(FT_STATUS_MISMATCH,
                         "%s: calibration.counts: %zu values for %zu layers x %u experts", name,
                         c->n_counts, n_layers, c->n_experts);
    const char *src = c->source ? c->source : "";
    if (strlen(src) > 255 || strchr(src, '/') || strchr(src, '\\'))
        return FT_PV_BAD(FT_STATUS_FORMAT,
                         "%s: calibration.source '%.*s' is not a plain file name", name,
                         FT_PLAN_NAME_MAX, src);
    for (size_t l = 0; l < n_layers; l++) {
        ft_status_t st = ft_pv_calib_layer(c, plan->blocks[l], l, name);
        if (st)
            return st;
    }
    return FT_OK;
}
