/* Predicted decode and prefill tok/s, the prefill streaming threshold and
 * the decode bottleneck (docs/planner.md has the equations). Every figure
 * is an expected value from the profile's rates: hits, misses and copies
 * are real-valued expectations, not samples. */
#include "plan_internal.h"

#include "lru_model.h"
#include "qstar.h"

#include <math.h>

/* Per-token overheads, estimated (docs/planner.md): */
#define FT_PRED_GPU_LAUNCHES_PER_LAYER 10.0 /* norms, q/k/v, rope, attention, o, router, top-k, shared */
#define FT_PRED_MOE_SYNCS 2.0               /* routed ids to the host, CPU experts' sum back */
#define FT_PRED_CPU_OPS_PER_LAYER 12.0      /* thread-pool barriers per layer on the CPU */
#define FT_PRED_CPU_BARRIER_S 2e-6

typedef struct ft_pred {
    const ft_plan_model_t *m;
    const ft_plan_result_t *res;
    const ft_hw_t *hw;
    ft_qstar_rates_t ov;    /* expert-sized copies while the CPU computes */
    ft_qstar_rates_t alone; /* the CPU alone, for CPU layers */
    double dram_bps, hbm_bps, h2d_bps, launch_s;
    double s[4];            /* seconds by resource (ft_bottleneck_t) */
    double copy_bytes;
} ft_pred_t;

/* The rates of layer ly's experts in the formats they really have
 * (ft_qstar_rates_from_hw_parts, as the q* table takes them): under
 * overlap, or (alone) for the CPU without copies running, whose bandwidth
 * is all of DRAM's. */
static void ft_pred_layer_rates(const ft_pred_t *p, const ft_plan_layer_t *ly, int alone,
                                ft_qstar_rates_t *out)
{
    if (!ly->expert_part_bytes[0] && !ly->expert_part_bytes[1] && !ly->expert_part_bytes[2]) {
        *out = alone ? p->alone : p->ov;
        return;
    }
    if (!alone) {
        ft_qstar_rates_from_hw_parts(p->hw, p->m->expert_format, ly->expert_part_format,
                                     ly->expert_part_bytes, out);
        return;
    }
    ft_hw_t hw = *p->hw;
    hw.dram_overlap_gbs = hw.dram_gbs;
    ft_qstar_rates_from_hw_parts(&hw, p->m->expert_format, ly->expert_part_format, ly->expert_part_bytes,
                                 out);
}

static int ft_pred_on_gpu(const ft_pred_t *p, uint32_t l)
{
    return !p->res->cpu_only && l < p->res->n_gpu_layers;
}

static ft_bottleneck_t ft_pred_cpu_kind(const ft_qstar_costs_t *c)
{
    return c->cpu_compute_bound ? FT_BOTTLENECK_CPU : FT_BOTTLENECK_DRAM;
}

/* Dense part of a layer (or the output head) for `tokens` tokens, reading
 * `bytes` (weights + KV) and computing 2 params flops per token. */
static double ft_pred_dense(ft_pred_t *p, int gpu, double bytes, double params, double tokens,
                            double launches)
{
    double t;
    if (gpu) {
        t = fmax(bytes / p->hbm_bps, 2.0 * params * tokens / p->ov.gpu_flops);
        t += launches * p->launch_s;
        p->s[FT_BOTTLENECK_GPU] += t;
        return t;
    }
    double fl = 2.0 * params * tokens / p->alone.cpu_flops, bw = bytes / p->dram_bps;
    t = fmax(bw, fl) + (launches > 0.0 ? FT_PRED_CPU_OPS_PER_LAYER * FT_PRED_CPU_BARRIER_S : 0.0);
    p->s[fl > bw ? FT_BOTTLENECK_CPU : FT_BOTTLENECK_DRAM] += t;
    return t;
}

/* The step at a whole number of misses, split exactly; attributes it to
 * the queue (and within the GPU side, the line) that sets it. */
static double ft_pred_split(const ft_qstar_costs_t *c, double hits, uint32_t miss,
                            ft_bottleneck_t *out_r, double *out_k)
{
    uint32_t k = ft_qstar_best_split(c, (uint32_t)round(hits), miss);
    double t = ft_qstar_step_time_f(c, hits, miss, k);
    double q_cpu = (double)(miss - k) * c->t_cpu;
    double l1 = (hits + k) * c->t_gpu, l2 = c->t_pcie + k * c->t_gpu;
    double l3 = k * c->t_pcie + c->t_gpu;
    if (q_cpu >= t)
        *out_r = ft_pred_cpu_kind(c);
    else if (k > 0 && l2 >= t && l2 > l1)
        *out_r = c->t_pcie >= k * c->t_gpu ? FT_BOTTLENECK_PCIE : FT_BOTTLENECK_GPU;
    else if (k > 0 && l3 >= t && l3 > l1)
        *out_r = k * c->t_pcie >= c->t_gpu ? FT_BOTTLENECK_PCIE : FT_BOTTLENECK_GPU;
    else
        *out_r = FT_BOTTLENECK_GPU;
    *out_k = k;
    return t;
}

/* The routed experts of GPU layer l in a step of `tokens` tokens, split by
 * q* between the CPU and copies. The expected misses are rarely whole:
 * the step is interpolated between the exact splits at the whole numbers
 * around them. */
static double ft_pred_moe_gpu(ft_pred_t *p, uint32_t l, double tokens, int account)
{
    const ft_plan_layer_t *ly = &p->m->layers[l];
    double d = ft_lru_expected_distinct(ly->n_experts, ly->n_used, tokens);
    double n = tokens * ly->n_used / d, h = p->res->hit_rate[l];
    ft_qstar_costs_t c;
    ft_qstar_rates_t rates;
    ft_pred_layer_rates(p, ly, 0, &rates);
    ft_qstar_costs(&rates, (double)ly->expert_bytes, (double)ly->expert_params, n, h, &c);
    if (p->res->unified || p->res->n_slots == 0) /* no copies: CPU and GPU in parallel */
        c.t_pcie = 1e30;
    double hits = p->res->unified ? d : d * h, miss = d - hits, t = 0.0, k = 0.0;
    double lo = floor(miss), f = miss - lo;
    ft_bottleneck_t r = FT_BOTTLENECK_GPU, r2;
    double k2, t_lo = ft_pred_split(&c, hits, (uint32_t)lo, &r, &k);
    t = t_lo;
    if (f > 0.0) {
        double t_hi = ft_pred_split(&c, hits, (uint32_t)lo + 1, &r2, &k2);
        t = (1.0 - f) * t_lo + f * t_hi;
        k = (1.0 - f) * k + f * k2;
        if (f >= 0.5)
            r = r2;
    }
    double sync = FT_PRED_MOE_SYNCS * p->launch_s;
    if (account) {
        p->s[r] += t;
        p->s[FT_BOTTLENECK_GPU] += sync;
        p->copy_bytes += k * (double)ly->expert_bytes;
    }
    return t + sync;
}

/* Whole-layer streaming through the double buffer: the copy of this
 * layer overlaps the previous layer's compute, so a layer costs the
 * larger of its copy and its GPU compute. */
static double ft_pred_moe_stream(const ft_pred_t *p, uint32_t l, double tokens)
{
    const ft_plan_layer_t *ly = &p->m->layers[l];
    double d = ft_lru_expected_distinct(ly->n_experts, ly->n_used, tokens);
    ft_qstar_costs_t c;
    ft_qstar_rates_t rates;
    ft_pred_layer_rates(p, ly, 0, &rates);
    ft_qstar_costs(&rates, (double)ly->expert_bytes, (double)ly->expert_params,
                   tokens * ly->n_used / d, 0.0, &c);
    double copy = (double)ly->n_experts * (double)ly->expert_bytes / p->h2d_bps;
    return fmax(copy, d * c.t_gpu);
}

static double ft_pred_moe_cpu(ft_pred_t *p, uint32_t l, double tokens)
{
    const ft_plan_layer_t *ly = &p->m->layers[l];
    double d = ft_lru_expected_distinct(ly->n_experts, ly->n_used, tokens);
    ft_qstar_costs_t c;
    ft_qstar_rates_t rates;
    ft_pred_layer_rates(p, ly, 1, &rates);
    ft_qstar_costs(&rates, (double)ly->expert_bytes, (double)ly->expert_params,
                   tokens * ly->n_used / d, 0.0, &c);
    double t = d * c.t_cpu;
    p->s[ft_pred_cpu_kind(&c)] += t;
    return t;
}

static double ft_pred_output(ft_pred_t *p, double tokens)
{
    const ft_plan_model_t *m = p->m;
    int gpu = p->res->output_on_gpu && !p->res->cpu_only;
    double params = (double)m->d_model * (double)m->vocab_size;
    return ft_pred_dense(p, gpu, (double)m->output_bytes, params, tokens, 1.0);
}

/* One decode step of `batch` sequences at context position pos. */
static double ft_pred_decode(ft_pred_t *p, double batch, double pos)
{
    double total = 0.0;
    for (uint32_t l = 0; l < p->m->n_layers; l++) {
        const ft_plan_layer_t *ly = &p->m->layers[l];
        int gpu = ft_pred_on_gpu(p, l);
        double kv = batch * (pos * (double)ly->kv_bytes_per_token + (double)ly->state_bytes);
        total += ft_pred_dense(p, gpu, (double)ly->dense_bytes + kv, (double)ly->dense_params,
                               batch, FT_PRED_GPU_LAUNCHES_PER_LAYER);
        if (ly->is_moe)
            total += gpu ? ft_pred_moe_gpu(p, l, batch, 1) : ft_pred_moe_cpu(p, l, batch);
    }
    return total + ft_pred_output(p, batch);
}

/* Sums over the GPU's MoE layers of (a) the q* split and (b) whole-layer
 * streaming, for a prompt of `tokens` tokens. */
static void ft_pred_prefill_moe(ft_pred_t *p, double tokens, double *sum_a, double *sum_b)
{
    *sum_a = *sum_b = 0.0;
    for (uint32_t l = 0; l < p->m->n_layers; l++) {
        if (!p->m->layers[l].is_moe || !ft_pred_on_gpu(p, l))
            continue;
        *sum_a += ft_pred_moe_gpu(p, l, tokens, 0);
        *sum_b += ft_pred_moe_stream(p, l, tokens);
    }
}

/* The prompt length above which streaming whole layers first beats the
 * split (summed over layers: the runtime streams all GPU layers or none);
 * UINT32_MAX when it never does up to 2^20 tokens, or cannot. The first
 * crossing: at very long prompts the split can win again (the CPU takes
 * an expert or two off the GPU), but prompts run in chunks of bounded
 * size, so the first crossing is the useful one. Doubling finds a
 * winning length, bisection the boundary below it. */
static uint32_t ft_pred_threshold(ft_pred_t *p)
{
    if (!p->res->stream_buffers)
        return UINT32_MAX;
    double a, b;
    uint32_t lo = 0, hi = 1;
    for (;; lo = hi, hi *= 2) {
        if (hi > (1u << 20))
            return UINT32_MAX;
        ft_pred_prefill_moe(p, hi, &a, &b);
        if (b < a)
            break;
    }
    if (lo == 0)
        return 0;
    while (hi - lo > 1) { /* streaming loses at lo and wins at hi */
        uint32_t mid = lo + (hi - lo) / 2;
        ft_pred_prefill_moe(p, mid, &a, &b);
        if (b < a)
            hi = mid;
        else
            lo = mid;
    }
    return lo;
}

/* One prompt of `tokens` tokens; per layer the faster of the split and
 * streaming. Attention's quadratic term is left out (docs/planner.md). */
static double ft_pred_prefill(ft_pred_t *p, double tokens)
{
    double total = 0.0;
    for (uint32_t l = 0; l < p->m->n_layers; l++) {
        const ft_plan_layer_t *ly = &p->m->layers[l];
        int gpu = ft_pred_on_gpu(p, l);
        total += ft_pred_dense(p, gpu, (double)ly->dense_bytes, (double)ly->dense_params, tokens,
                               FT_PRED_GPU_LAUNCHES_PER_LAYER);
        if (!ly->is_moe)
            continue;
        if (!gpu) {
            total += ft_pred_moe_cpu(p, l, tokens);
            continue;
        }
        double a = ft_pred_moe_gpu(p, l, tokens, 0);
        total += p->res->stream_buffers ? fmin(a, ft_pred_moe_stream(p, l, tokens)) : a;
    }
    return total + ft_pred_output(p, 1.0); /* logits of the last token only */
}

void ft_planner_predict(const ft_plan_model_t *m, const ft_hw_t *hw, const ft_plan_budget_t *b,
                     ft_plan_result_t *res)
{
    ft_pred_t p = {.m = m, .res = res, .hw = hw};
    ft_qstar_rates_from_hw(hw, m->expert_format, &p.ov);
    p.dram_bps = hw->dram_gbs * 1e9;
    p.alone = p.ov;
    p.alone.cpu_bps = p.dram_bps;
    p.alone.cpu_kernel_bound = 0;
    int f = m->expert_format;
    if (f > 0 && f < FT_DTYPE_COUNT && hw->cpu_gemv_gbs[f] > 0.0 &&
        hw->cpu_gemv_gbs[f] < hw->dram_gbs) {
        p.alone.cpu_bps = hw->cpu_gemv_gbs[f] * 1e9;
        p.alone.cpu_kernel_bound = 1;
    }
    if (hw->n_gpus > 0) {
        p.hbm_bps = hw->gpu.hbm_gbs * 1e9;
        p.h2d_bps = hw->gpu.h2d_gbs * 1e9;
        p.launch_s = p.ov.launch_s;
    }
    double batch = b->batch ? b->batch : 1;
    double pos = b->ctx && b->ctx < FT_PLAN_PREFILL_TOKENS ? b->ctx : FT_PLAN_PREFILL_TOKENS;
    double step = ft_pred_decode(&p, batch, pos);
    res->predicted_decode_tok_s = batch / step;
    res->copy_bytes_per_token = p.copy_bytes / batch;
    res->bottleneck = FT_BOTTLENECK_DRAM;
    for (int r = 0; r < 4; r++) {
        res->decode_s[r] = p.s[r] / batch;
        if (p.s[r] > p.s[res->bottleneck])
            res->bottleneck = (ft_bottleneck_t)r;
    }
    ft_pred_t q = p; /* prefill: its time is not part of the decode breakdown */
    res->predicted_prefill_tok_s = FT_PLAN_PREFILL_TOKENS / ft_pred_prefill(&q, FT_PLAN_PREFILL_TOKENS);
    res->prefill_stream_tokens = ft_pred_threshold(&q);
}
