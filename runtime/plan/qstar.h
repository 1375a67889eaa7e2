/* The q* split of one MoE layer's missed experts between CPU compute and
 * PCIe copies (DESIGN.md section 5), exposed piece by piece so that the
 * planner, the runtime's dispatcher and the tests use the same equations.
 *
 * Model of one step of one MoE layer (docs/planner.md has the derivation):
 *   H experts hit in VRAM, M missed; k of the misses are copied, M - k run
 *   on the CPU. Every expert has S bytes, P parameters and n tokens.
 *   t_c = max(S / B_cpu, 2 P n / F_cpu)          CPU computes one expert
 *   t_p = S / B_pcie                              copy engine moves one
 *   t_g = max(S / B_gpu, 2 P n / F_gpu) + launch  GPU computes one
 *   CPU queue  Q_c(k) = (M - k) t_c
 *   GPU side   Q_g(0) = H t_g; for k >= 1 a two-stage pipeline (copy, then
 *              compute) behind the hits:
 *              Q_g(k) = max((H + k) t_g, t_p + k t_g, k t_p + t_g)
 *   step(k) = max(Q_c, Q_g): the CPU and the copy engine run in parallel.
 * Reuse: a copied expert lands in an LRU slot and is hit again with the
 * layer's expected hit probability h, saving a later miss; the CPU path
 * never earns that. Each copy is credited R = h * c_miss seconds, c_miss
 * being what one decode miss costs at the balanced split,
 * t_c t_p / (t_c + t_p). The solver minimizes step(k) - k R. Since
 * R < t_p, the credit never pushes q* past the balance point; it decides
 * integer near-ties in favour of copying.
 * Times are seconds, bandwidths bytes/s, throughputs flop/s. */
#ifndef FT_PLAN_QSTAR_H
#define FT_PLAN_QSTAR_H

#include "../format/hw.h"

#include <stdint.h>

typedef struct ft_qstar_costs {
    double t_cpu;    /* s: one missed expert computed on the CPU */
    double t_pcie;   /* s: one expert copied host -> device */
    double t_gpu;    /* s: one expert computed on the GPU (launches included) */
    double reuse;    /* s: credit per copied expert for its expected later hits */
    int cpu_compute_bound; /* t_cpu is set by flops (or a slow GEMV kernel), not DRAM */
    int gpu_compute_bound; /* t_gpu is set by flops, not device memory */
} ft_qstar_costs_t;

/* The figures the costs are built from, resolved from a profile. */
typedef struct ft_qstar_rates {
    double cpu_bps;      /* bytes/s the CPU streams expert weights at (under overlap) */
    double cpu_flops;    /* flop/s of the CPU at prefill shapes */
    double pcie_bps;     /* bytes/s host -> device (under overlap) */
    double gpu_bps;      /* bytes/s the GPU streams expert weights at */
    double gpu_flops;    /* flop/s of the GPU at prefill shapes */
    double launch_s;     /* one kernel launch */
    int cpu_kernel_bound; /* cpu_bps is the GEMV kernel's, below DRAM */
} ft_qstar_rates_t;

/* Kernel launches per expert computed on the GPU: gate/up (+SwiGLU) fused,
 * then down (DESIGN.md section 9). */
#define FT_QSTAR_GPU_LAUNCHES_PER_EXPERT 2

/* Estimates used where a profile figure is 0 (unknown); docs/planner.md
 * says why these values. */
#define FT_QSTAR_CPU_GFLOPS_PER_CORE 32.0  /* dequantizing AVX2 GEMM, per core */
#define FT_QSTAR_GPU_FLOP_PER_BYTE 100.0   /* GEMM flop/s per HBM byte/s (ridge point) */

/* Resolves the rates for experts of `format` from a profile, for expert-
 * sized copies while the CPU computes: the overlap bandwidths where
 * measured (else the plain ones), the gather bandwidth for expert-sized
 * copies where measured, the GEMV kernel's rate where it is below DRAM,
 * and the estimates above where a figure is 0. Without a GPU the GPU and
 * PCIe rates are 0. */
void ft_qstar_rates_from_hw(const ft_hw_t *hw, ft_dtype_t format, ft_qstar_rates_t *out);

/* The same for experts whose gate, up and down matrices are in formats
 * fmt[0..2] of bytes[0..2] bytes each (a mix): the GEMV rates (CPU, and
 * the GPU's where the profile lists them per format) are each part's
 * rate combined as the time of the whole, sum(bytes) / sum(bytes /
 * rate); a part whose format has no measured rate counts at the rate the
 * kernel-less path has (DRAM, HBM). With every byte count 0 this is
 * ft_qstar_rates_from_hw for `format`. */
void ft_qstar_rates_from_hw_parts(const ft_hw_t *hw, ft_dtype_t format, const ft_dtype_t fmt[3],
                                  const uint64_t bytes[3], ft_qstar_rates_t *out);

/* Per-expert costs for experts of `bytes` bytes and `params` parameters at
 * `tokens` tokens each (>= 1, may be fractional: an average), with the
 * reuse credit for a layer whose expected hit probability is `hit`.
 * Needs pcie_bps > 0 and gpu_bps > 0 (a GPU). */
void ft_qstar_costs(const ft_qstar_rates_t *r, double bytes, double params, double tokens,
                    double hit, ft_qstar_costs_t *out);

/* Closed form at decode (equal experts, one token each, CPU bandwidth
 * bound, GPU time negligible): the fraction of misses to copy,
 * B_pcie / (B_pcie + B_cpu). Both > 0. */
double ft_qstar_closed_form(double pcie_bps, double cpu_bps);

/* step(k) in seconds, without the reuse credit, for n_hit hits, n_miss
 * misses of which n_copy (<= n_miss) are copied. */
double ft_qstar_step_time(const ft_qstar_costs_t *c, uint32_t n_hit, uint32_t n_miss,
                          uint32_t n_copy);
/* The same with real-valued counts (expected hits, misses and copies), as
 * the predictions use it; n_copy <= n_miss. */
double ft_qstar_step_time_f(const ft_qstar_costs_t *c, double n_hit, double n_miss,
                            double n_copy);
/* step(k) - k * reuse: what the split minimizes. */
double ft_qstar_objective(const ft_qstar_costs_t *c, uint32_t n_hit, uint32_t n_miss,
                          uint32_t n_copy);

/* The number of misses to copy that minimizes ft_qstar_objective; ties go
 * to the fewer copies. O(log M): the objective is convex in k on [1, M]
 * (a maximum of lines minus a line), so a binary search on its forward
 * difference finds the minimum there, compared against k = 0. */
uint32_t ft_qstar_best_split(const ft_qstar_costs_t *c, uint32_t n_hit, uint32_t n_miss);

/* The fluid (many-expert) limit, which the closed form is a case of: with
 * hits = eta * misses, the fraction q in [0, 1] of misses to copy
 * minimizing max((1 - q) t_c, (eta + q) t_g, q t_p) - q R. Exact: the
 * function is convex and piecewise linear, so the minimum is at 0, 1 or a
 * crossing of the falling line with a rising one. Equals the closed form
 * when t_g and R are 0. */
double ft_qstar_fraction(const ft_qstar_costs_t *c, double eta);
/* The fluid objective itself, per missed expert (seconds). */
double ft_qstar_fluid_cost(const ft_qstar_costs_t *c, double eta, double q);

#endif
