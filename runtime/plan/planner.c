/* ft_planner_solve: validates the inputs, then partitions memory, picks
 * pinned experts and slots, solves the q* table and predicts tok/s
 * (docs/planner.md). Deterministic: no clocks, no hashing, fixed orders. */
#include "plan_internal.h"

#include "../base/checked.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ft_bottleneck_name(ft_bottleneck_t b)
{
    switch (b) {
    case FT_BOTTLENECK_DRAM: return "DRAM";
    case FT_BOTTLENECK_PCIE: return "PCIe";
    case FT_BOTTLENECK_GPU: return "GPU";
    case FT_BOTTLENECK_CPU: return "CPU compute";
    }
    return "unknown";
}

void ft_planner_note(ft_plan_result_t *res, const char *fmt, ...)
{
    size_t used = strlen(res->note);
    if (used + 3 >= sizeof res->note)
        return;
    if (used > 0) {
        memcpy(res->note + used, "; ", 3);
        used += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->note + used, sizeof res->note - used, fmt, ap);
    va_end(ap);
}

static uint32_t ft_plan_batch(const ft_plan_budget_t *b)
{
    return b->batch ? b->batch : 1;
}

uint64_t ft_planner_layer_kv(const ft_plan_layer_t *l, const ft_plan_budget_t *b)
{
    /* Bounded by ft_planner_validate, which summed these with checks. */
    uint64_t batch = ft_plan_batch(b);
    return l->kv_bytes_per_token * b->ctx * batch + l->state_bytes * batch;
}

uint64_t ft_planner_scratch_bytes(const ft_plan_model_t *m, const ft_plan_budget_t *b)
{
    /* In double: params are unchecked inputs; the result is capped. */
    double chunk = FT_PLAN_PREFILL_TOKENS, ffn_used = 0.0;
    for (uint32_t i = 0; i < m->n_layers; i++) {
        const ft_plan_layer_t *l = &m->layers[i];
        /* expert params = 3 d_model d_ff: the intermediate width of the
         * n_used experts a token runs. */
        if (l->is_moe && m->d_model > 0)
            ffn_used = fmax(ffn_used, (double)l->expert_params / (3.0 * m->d_model) * l->n_used);
    }
    double act = chunk * m->d_model * 4.0 * FT_PLAN_SCRATCH_ACT_BUFFERS;
    double inter = chunk * ffn_used * 4.0 * 2.0; /* gate and up, fp32 */
    double logits = (double)m->vocab_size * 4.0 * ft_plan_batch(b);
    /* The library workspace (GEMM split-K and the like) is capped for small
     * models: it never needs more than a fraction of the weights it works on. */
    double weights = (double)m->output_bytes;
    for (uint32_t i = 0; i < m->n_layers; i++)
        weights += (double)m->layers[i].dense_bytes;
    double workspace = fmin((double)FT_PLAN_SCRATCH_WORKSPACE, weights / 4.0);
    double total = act + inter + logits + workspace;
    uint64_t bytes = total < 0x1p60 ? (uint64_t)total : (1ull << 60);
    return (bytes + (2ull << 20) - 1) & ~((2ull << 20) - 1); /* whole 2 MiB pages */
}

FT_WARN_UNUSED static ft_status_t ft_plan_check_rate(double v, int required, const char *what)
{
    if (!isfinite(v) || v < 0.0 || (required && v == 0.0))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "planner: hardware figure %s = %g must be %s", what, v,
                              required ? "finite and > 0" : "finite and >= 0");
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_plan_validate_hw(const ft_hw_t *hw)
{
    ft_status_t st;
    if (hw->n_gpus > 1)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "planner: %u GPUs (one is supported)",
                              hw->n_gpus);
    if ((st = ft_plan_check_rate(hw->dram_gbs, 1, "dram_gbs")) ||
        (st = ft_plan_check_rate(hw->dram_overlap_gbs, 0, "dram_overlap_gbs")))
        return st;
    for (int f = 0; f < FT_DTYPE_COUNT; f++)
        if ((st = ft_plan_check_rate(hw->cpu_gemv_gbs[f], 0, "cpu_gemv_gbs")) ||
            (st = ft_plan_check_rate(hw->cpu_gemm_gflops[f], 0, "cpu_gemm_gflops")) ||
            (hw->n_gpus && (st = ft_plan_check_rate(hw->gpu.gemv_gbs[f], 0, "gpu gemv_gbs"))))
            return st;
    if (hw->n_gpus == 0)
        return FT_OK;
    const ft_hw_gpu_t *g = &hw->gpu;
    if ((st = ft_plan_check_rate(g->hbm_gbs, 1, "gpu hbm_gbs")) ||
        (st = ft_plan_check_rate(g->h2d_gbs, !g->unified_memory, "gpu h2d_gbs")) ||
        (st = ft_plan_check_rate(g->h2d_overlap_gbs, 0, "gpu h2d_overlap_gbs")) ||
        (st = ft_plan_check_rate(g->gather_gbs, 0, "gpu gather_gbs")) ||
        (st = ft_plan_check_rate(g->launch_us, 0, "gpu launch_us")) ||
        (st = ft_plan_check_rate(g->gemm_tflops, 0, "gpu gemm_tflops")))
        return st;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_plan_validate_layer(const ft_plan_model_t *m, uint32_t i,
                                          const ft_plan_budget_t *b, ft_planner_totals_t *t)
{
    const ft_plan_layer_t *l = &m->layers[i];
    uint64_t x, batch = ft_plan_batch(b);
    int ok = ft_add_u64(t->dense, l->dense_bytes, &t->dense);
    if (l->is_moe) {
        if (l->n_experts == 0 || l->n_experts > FT_PLAN_MAX_EXPERTS || l->n_used == 0 ||
            l->n_used > l->n_experts || l->expert_bytes == 0)
            return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                                  "planner: layer %u: %u experts, %u used, %llu bytes each: "
                                  "need 1 <= used <= experts <= %u and bytes > 0",
                                  i, l->n_experts, l->n_used,
                                  (unsigned long long)l->expert_bytes, FT_PLAN_MAX_EXPERTS);
        ok = ok && ft_mul_u64(l->n_experts, l->expert_bytes, &x) &&
             ft_add_u64(t->experts, x, &t->experts);
        t->max_experts = l->n_experts > t->max_experts ? l->n_experts : t->max_experts;
    }
    uint64_t kv, st;
    ok = ok && ft_mul_u64(l->kv_bytes_per_token, b->ctx, &kv) && ft_mul_u64(kv, batch, &kv) &&
         ft_mul_u64(l->state_bytes, batch, &st) && ft_add_u64(kv, st, &kv) &&
         ft_add_u64(t->kv, kv, &t->kv);
    if (!ok)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "planner: layer %u: byte counts overflow 64 bits", i);
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_plan_validate_popularity(const ft_plan_model_t *m, uint32_t max_experts)
{
    if (!m->popularity)
        return FT_OK;
    if (m->popularity_stride < max_experts)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "planner: popularity stride %u < %u experts",
                              m->popularity_stride, max_experts);
    for (uint32_t i = 0; i < m->n_layers; i++) {
        const ft_plan_layer_t *l = &m->layers[i];
        for (uint32_t e = 0; l->is_moe && e < l->n_experts; e++) {
            float p = m->popularity[(size_t)i * m->popularity_stride + e];
            if (!isfinite(p) || p < 0.0f)
                return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                                      "planner: popularity of layer %u expert %u is %g", i, e,
                                      (double)p);
        }
    }
    return FT_OK;
}

ft_status_t ft_planner_validate(const ft_plan_model_t *m, const ft_hw_t *hw,
                             const ft_plan_budget_t *b, ft_planner_totals_t *out)
{
    ft_planner_totals_t t = {0};
    ft_status_t st;
    if (m->n_layers == 0 || m->n_layers > FT_PLAN_MAX_LAYERS || !m->layers)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "planner: %u layers (need 1..%u and a layer array)", m->n_layers,
                              FT_PLAN_MAX_LAYERS);
    if ((st = ft_plan_validate_hw(hw)))
        return st;
    for (uint32_t i = 0; i < m->n_layers; i++)
        if ((st = ft_plan_validate_layer(m, i, b, &t)))
            return st;
    if ((uint64_t)m->n_layers * t.max_experts > FT_PLAN_MAX_ITEMS)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "planner: %u layers x %u experts exceeds %u experts in all",
                              m->n_layers, t.max_experts, FT_PLAN_MAX_ITEMS);
    if ((st = ft_plan_validate_popularity(m, t.max_experts)))
        return st;
    if (!ft_add_u64(t.dense, t.experts, &t.weights) ||
        !ft_add_u64(t.weights, m->embed_bytes, &t.weights) ||
        !ft_add_u64(t.weights, m->output_bytes, &t.weights) ||
        t.weights > (UINT64_MAX >> 2) ||
        t.kv > (UINT64_MAX >> 2))
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "planner: model byte counts overflow");
    *out = t;
    return FT_OK;
}

static double ft_plan_gib(uint64_t bytes)
{
    return (double)bytes / (double)(1ull << 30);
}

/* fits = 0 when the RAM budget (or, with unified memory, the GPU's share)
 * is short; the partition is still reported, the predictions are 0. */
static void ft_plan_check_fit(ft_plan_result_t *res)
{
    res->fits = 1;
    if (res->ram_needed > res->ram_budget) {
        res->fits = 0;
        snprintf(res->why, sizeof res->why,
                 "needs %.2f GiB of RAM, budget %.2f GiB: short by %.2f GiB",
                 ft_plan_gib(res->ram_needed), ft_plan_gib(res->ram_budget),
                 ft_plan_gib(res->ram_needed - res->ram_budget));
    } else if (res->unified && res->vram_used > res->vram_budget) {
        res->fits = 0;
        snprintf(res->why, sizeof res->why,
                 "needs %.2f GiB of GPU-visible memory, budget %.2f GiB: short by %.2f GiB",
                 ft_plan_gib(res->vram_used), ft_plan_gib(res->vram_budget),
                 ft_plan_gib(res->vram_used - res->vram_budget));
    }
}

FT_WARN_UNUSED static ft_status_t ft_plan_solve_once(const ft_plan_model_t *model, const ft_hw_t *hw,
                                      const ft_plan_budget_t *budget, const ft_planner_totals_t *tot,
                                      int allow_stream, ft_plan_result_t *out)
{
    memset(out, 0, sizeof *out);
    out->expert_id_stride = tot->max_experts;
    ft_status_t st;
    if ((st = ft_planner_partition(model, hw, budget, tot, out, allow_stream)) ||
        (st = ft_planner_qstar_table(model, hw, out))) {
        ft_plan_result_release(out);
        return st;
    }
    ft_plan_check_fit(out);
    ft_planner_predict(model, hw, budget, out);
    if (!out->fits) {
        out->predicted_decode_tok_s = 0.0;
        out->predicted_prefill_tok_s = 0.0;
    }
    return FT_OK;
}

ft_status_t ft_planner_solve(const ft_plan_model_t *model, const ft_hw_t *hw,
                             const ft_plan_budget_t *budget, ft_plan_result_t *out)
{
    if (!model || !hw || !budget || !out)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "planner: NULL argument");
    memset(out, 0, sizeof *out);
    ft_planner_totals_t tot;
    ft_status_t st = ft_planner_validate(model, hw, budget, &tot);
    if (st || (st = ft_plan_solve_once(model, hw, budget, &tot, 1, out)))
        return st;
    /* Streaming buffers cost expert slots for good. When streaming only wins
     * for batches larger than a prefill chunk, they would never be used:
     * give their memory to the cache instead. */
    if (out->stream_buffers && out->prefill_stream_tokens > FT_PLAN_PREFILL_TOKENS) {
        ft_plan_result_t alt;
        if ((st = ft_plan_solve_once(model, hw, budget, &tot, 0, &alt)))
            return st;
        ft_planner_note(&alt, "streaming buffers dropped: streaming would only win from %u tokens "
                        "per batch (prefill chunks are %u)",
                        out->prefill_stream_tokens, FT_PLAN_PREFILL_TOKENS);
        alt.prefill_stream_tokens = UINT32_MAX;
        ft_plan_result_release(out);
        *out = alt;
    }
    return FT_OK;
}

void ft_plan_result_release(ft_plan_result_t *res)
{
    if (!res)
        return;
    free(res->qstar);
    free(res->hit_rate);
    free(res->pinned);
    res->qstar = NULL;
    res->hit_rate = NULL;
    res->pinned = NULL;
}
