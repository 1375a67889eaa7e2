/* The q* split: per-expert costs from a profile, the step time of one MoE
 * layer, and the exact integer and fluid minimizers (qstar.h has the
 * model). */
#include "qstar.h"

#include <math.h>

/* Copying without a link costs this many seconds: never chosen. */
#define FT_QSTAR_NEVER 1e30

static double ft_qstar_fmt_rate(const double *table, ft_dtype_t format)
{
    if ((int)format <= 0 || (int)format >= FT_DTYPE_COUNT)
        return 0.0;
    double v = table[format];
    return isfinite(v) && v > 0.0 ? v : 0.0;
}

static double ft_qstar_pos(double v)
{
    return isfinite(v) && v > 0.0 ? v : 0.0;
}

void ft_qstar_rates_from_hw(const ft_hw_t *hw, ft_dtype_t format, ft_qstar_rates_t *out)
{
    ft_qstar_rates_t r = {0};
    double dram = ft_qstar_pos(hw->dram_gbs);
    double dram_ov = ft_qstar_pos(hw->dram_overlap_gbs);
    if (dram_ov == 0.0 || (dram > 0.0 && dram_ov > dram))
        dram_ov = dram;
    /* The GEMV kernel is measured alone; under overlap it cannot beat the
     * DRAM it then gets. Below that, the kernel (not DRAM) is the limit. */
    double gemv = ft_qstar_fmt_rate(hw->cpu_gemv_gbs, format);
    r.cpu_bps = dram_ov * 1e9;
    if (gemv > 0.0 && gemv < dram_ov) {
        r.cpu_bps = gemv * 1e9;
        r.cpu_kernel_bound = 1;
    }
    double gflops = ft_qstar_fmt_rate(hw->cpu_gemm_gflops, format);
    if (gflops == 0.0)
        gflops = FT_QSTAR_CPU_GFLOPS_PER_CORE * (hw->n_cores ? hw->n_cores : 1);
    r.cpu_flops = gflops * 1e9;

    if (hw->n_gpus > 0) {
        const ft_hw_gpu_t *g = &hw->gpu;
        double h2d = ft_qstar_pos(g->h2d_gbs);
        double base = ft_qstar_pos(g->gather_gbs) > 0.0 ? g->gather_gbs : h2d;
        double h2d_ov = ft_qstar_pos(g->h2d_overlap_gbs);
        /* The overlap figure is measured for large transfers; apply its
         * ratio to the expert-sized (gather) bandwidth. */
        if (h2d_ov > 0.0 && h2d > 0.0 && h2d_ov < h2d)
            base *= h2d_ov / h2d;
        r.pcie_bps = base * 1e9;
        double hbm = ft_qstar_pos(g->hbm_gbs);
        double ggemv = ft_qstar_fmt_rate(g->gemv_gbs, format);
        r.gpu_bps = (ggemv > 0.0 ? ggemv : hbm) * 1e9;
        double tflops = ft_qstar_pos(g->gemm_tflops);
        r.gpu_flops = tflops > 0.0 ? tflops * 1e12 : hbm * 1e9 * FT_QSTAR_GPU_FLOP_PER_BYTE;
        r.launch_s = ft_qstar_pos(g->launch_us) * 1e-6;
    }
    *out = r;
}

/* sum(bytes) / sum(bytes / rate), rate[i] 0 standing for fallback. */
static double ft_qstar_mix_rate(const double *table, const ft_dtype_t fmt[3], const uint64_t bytes[3],
                                double fallback)
{
    double b = 0.0, t = 0.0;
    for (int i = 0; i < 3; i++) {
        if (!bytes[i])
            continue;
        double r = ft_qstar_fmt_rate(table, fmt[i]);
        if (r == 0.0)
            r = fallback;
        if (r <= 0.0)
            return 0.0;
        b += (double)bytes[i];
        t += (double)bytes[i] / r;
    }
    return t > 0.0 ? b / t : 0.0;
}

void ft_qstar_rates_from_hw_parts(const ft_hw_t *hw, ft_dtype_t format, const ft_dtype_t fmt[3],
                                  const uint64_t bytes[3], ft_qstar_rates_t *out)
{
    /* one format throughout (or none known): that format's rates exactly */
    ft_dtype_t only = FT_DTYPE_INVALID;
    int mixed = 0;
    for (int i = 0; i < 3; i++)
        if (bytes[i]) {
            mixed |= only != FT_DTYPE_INVALID && fmt[i] != only;
            only = fmt[i];
        }
    ft_qstar_rates_from_hw(hw, only != FT_DTYPE_INVALID && !mixed ? only : format, out);
    if (!mixed)
        return;
    double dram_ov = ft_qstar_pos(hw->dram_overlap_gbs);
    double dram = ft_qstar_pos(hw->dram_gbs);
    if (dram_ov == 0.0 || (dram > 0.0 && dram_ov > dram))
        dram_ov = dram;
    /* as ft_qstar_rates_from_hw: the kernel's rate where below DRAM's */
    double gemv = ft_qstar_mix_rate(hw->cpu_gemv_gbs, fmt, bytes, dram_ov);
    out->cpu_bps = dram_ov * 1e9;
    out->cpu_kernel_bound = 0;
    if (gemv > 0.0 && gemv < dram_ov) {
        out->cpu_bps = gemv * 1e9;
        out->cpu_kernel_bound = 1;
    }
    if (hw->n_gpus > 0) {
        double hbm = ft_qstar_pos(hw->gpu.hbm_gbs);
        double ggemv = ft_qstar_mix_rate(hw->gpu.gemv_gbs, fmt, bytes, hbm);
        out->gpu_bps = (ggemv > 0.0 ? ggemv : hbm) * 1e9;
    }
}

void ft_qstar_costs(const ft_qstar_rates_t *r, double bytes, double params, double tokens,
                    double hit, ft_qstar_costs_t *out)
{
    ft_qstar_costs_t c = {0};
    double flops = 2.0 * params * tokens;
    double c_bw = r->cpu_bps > 0.0 ? bytes / r->cpu_bps : FT_QSTAR_NEVER;
    double c_fl = r->cpu_flops > 0.0 ? flops / r->cpu_flops : FT_QSTAR_NEVER;
    c.t_cpu = fmax(c_bw, c_fl);
    c.cpu_compute_bound = c_fl > c_bw || r->cpu_kernel_bound;
    c.t_pcie = r->pcie_bps > 0.0 ? bytes / r->pcie_bps : FT_QSTAR_NEVER;
    double g_bw = r->gpu_bps > 0.0 ? bytes / r->gpu_bps : FT_QSTAR_NEVER;
    double g_fl = r->gpu_flops > 0.0 ? flops / r->gpu_flops : FT_QSTAR_NEVER;
    c.t_gpu = fmax(g_bw, g_fl) + FT_QSTAR_GPU_LAUNCHES_PER_EXPERT * r->launch_s;
    c.gpu_compute_bound = g_fl > g_bw;
    /* Reuse credit: a later hit saves one decode miss at the balanced
     * split, whose marginal cost is t_c t_p / (t_c + t_p) (one-token
     * costs: the later steps are mostly decode). */
    double t_c1 = fmax(c_bw, r->cpu_flops > 0.0 ? 2.0 * params / r->cpu_flops : FT_QSTAR_NEVER);
    double c_miss = t_c1 * c.t_pcie / (t_c1 + c.t_pcie);
    double h = isfinite(hit) ? fmin(fmax(hit, 0.0), 1.0) : 0.0;
    c.reuse = h * c_miss;
    *out = c;
}

double ft_qstar_closed_form(double pcie_bps, double cpu_bps)
{
    return pcie_bps / (pcie_bps + cpu_bps);
}

double ft_qstar_step_time_f(const ft_qstar_costs_t *c, double n_hit, double n_miss,
                            double n_copy)
{
    double k = n_copy;
    double q_cpu = (n_miss - n_copy) * c->t_cpu;
    double q_gpu = n_hit * c->t_gpu;
    if (k > 0.0) {
        /* Copy i arrives at i t_p; the GPU finishes the hits, then each
         * copy in turn: the last finish is the largest of these lines. */
        q_gpu = fmax((n_hit + k) * c->t_gpu, c->t_pcie + k * c->t_gpu);
        q_gpu = fmax(q_gpu, k * c->t_pcie + c->t_gpu);
    }
    return fmax(q_cpu, q_gpu);
}

double ft_qstar_step_time(const ft_qstar_costs_t *c, uint32_t n_hit, uint32_t n_miss,
                          uint32_t n_copy)
{
    if (n_copy > n_miss)
        n_copy = n_miss;
    return ft_qstar_step_time_f(c, n_hit, n_miss, n_copy);
}

double ft_qstar_objective(const ft_qstar_costs_t *c, uint32_t n_hit, uint32_t n_miss,
                          uint32_t n_copy)
{
    if (n_copy > n_miss)
        n_copy = n_miss;
    return ft_qstar_step_time(c, n_hit, n_miss, n_copy) - (double)n_copy * c->reuse;
}

uint32_t ft_qstar_best_split(const ft_qstar_costs_t *c, uint32_t n_hit, uint32_t n_miss)
{
    if (n_miss == 0)
        return 0;
    /* Smallest k in [1, M) whose forward difference is >= 0; M if none. */
    uint32_t lo = 1, hi = n_miss;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        double d = ft_qstar_objective(c, n_hit, n_miss, mid + 1) -
                   ft_qstar_objective(c, n_hit, n_miss, mid);
        if (d >= 0.0)
            hi = mid;
        else
            lo = mid + 1;
    }
    double f0 = ft_qstar_objective(c, n_hit, n_miss, 0);
    return f0 <= ft_qstar_objective(c, n_hit, n_miss, lo) ? 0 : lo;
}

double ft_qstar_fluid_cost(const ft_qstar_costs_t *c, double eta, double q)
{
    double v = fmax((1.0 - q) * c->t_cpu, (eta + q) * c->t_gpu);
    return fmax(v, q * c->t_pcie) - q * c->reuse;
}

static void ft_qstar_try(const ft_qstar_costs_t *c, double eta, double q, double *best_q,
                         double *best_v)
{
    if (!(q > 0.0 && q < 1.0))
        return; /* 0 and 1 are always tried; NaN and outside are not points */
    double v = ft_qstar_fluid_cost(c, eta, q);
    if (v < *best_v || (v == *best_v && q < *best_q)) {
        *best_v = v;
        *best_q = q;
    }
}

double ft_qstar_fraction(const ft_qstar_costs_t *c, double eta)
{
    double tc = c->t_cpu, tp = c->t_pcie, tg = c->t_gpu;
    double best_q = 0.0, best_v = ft_qstar_fluid_cost(c, eta, 0.0);
    double v1 = ft_qstar_fluid_cost(c, eta, 1.0);
    if (v1 < best_v) {
        best_q = 1.0;
        best_v = v1;
    }
    /* Breakpoints of the maximum: pairwise crossings of its three lines. */
    ft_qstar_try(c, eta, tc / (tc + tp), &best_q, &best_v);
    ft_qstar_try(c, eta, (tc - eta * tg) / (tc + tg), &best_q, &best_v);
    if (tp > tg)
        ft_qstar_try(c, eta, eta * tg / (tp - tg), &best_q, &best_v);
    return best_q;
}
