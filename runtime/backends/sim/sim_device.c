#include "sim_device.h"

#include <stdlib.h>
#include <string.h>

struct ft_sim_device {
    ft_hw_t hw;
    double free_cpu, free_copy, free_gpu; /* when each queue is next free */
    double step_start;
    double *slot_ready; /* [n_slots] when the last copy into the slot completes */
    uint32_t n_slots;
    ft_sim_counters_t c;
};

static double ft_max2(double a, double b)
{
    return a > b ? a : b;
}

/* Rates with fallbacks, so a sparse profile still gives a model. */
static double ft_gpu_gemv_gbs(const ft_hw_t *hw, ft_dtype_t f)
{
    double r = (int)f > 0 && f < FT_DTYPE_COUNT ? hw->gpu.gemv_gbs[f] : 0.0;
    return r > 0 ? r : 0.7 * hw->gpu.hbm_gbs; /* GEMV reaches ~70% of HBM */
}

static double ft_cpu_gemv_gbs(const ft_hw_t *hw, ft_dtype_t f)
{
    double r = (int)f > 0 && f < FT_DTYPE_COUNT ? hw->cpu_gemv_gbs[f] : 0.0;
    double dram = hw->dram_overlap_gbs > 0 ? hw->dram_overlap_gbs : hw->dram_gbs;
    return r > 0 && r < dram ? r : dram;
}

static double ft_cpu_gflops(const ft_hw_t *hw, ft_dtype_t f)
{
    double r = (int)f > 0 && f < FT_DTYPE_COUNT ? hw->cpu_gemm_gflops[f] : 0.0;
    return r > 0 ? r : 50.0 * hw->n_cores; /* a modest per-core estimate */
}

ft_status_t ft_sim_device_create(const ft_hw_t *hw, uint32_t n_slots, ft_sim_device_t **out_dev)
{
    *out_dev = NULL;
    if (hw->n_gpus == 0 || hw->gpu.h2d_gbs <= 0 || hw->gpu.hbm_gbs <= 0 || hw->dram_gbs <= 0)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "sim device: the hardware profile needs a GPU with H2D and memory "
                              "bandwidths, and a DRAM bandwidth");
    ft_sim_device_t *d = calloc(1, sizeof(*d));
    if (!d)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "sim device: out of memory");
    d->hw = *hw;
    ft_status_t st = ft_sim_device_resize_slots(d, n_slots);
    if (st) {
        free(d);
        return st;
    }
    *out_dev = d;
    return FT_OK;
}

void ft_sim_device_destroy(ft_sim_device_t *d)
{
    if (!d)
        return;
    free(d->slot_ready);
    free(d);
}

ft_status_t ft_sim_device_resize_slots(ft_sim_device_t *d, uint32_t n_slots)
{
    double *r = calloc(n_slots ? n_slots : 1, sizeof(double));
    if (!r)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "sim device: out of memory");
    /* Slots are renumbered by a resize and refilled by copies that come
     * after it: start them all as filled "now". */
    double now = ft_max2(ft_max2(d->free_cpu, d->free_copy), d->free_gpu);
    for (uint32_t i = 0; i < n_slots; i++)
        r[i] = now;
    free(d->slot_ready);
    d->slot_ready = r;
    d->n_slots = n_slots;
    return FT_OK;
}

ft_sim_event_t ft_sim_step_begin(ft_sim_device_t *d)
{
    d->step_start = ft_max2(ft_max2(d->free_cpu, d->free_copy), d->free_gpu);
    return d->step_start;
}

double ft_sim_step_end(ft_sim_device_t *d, ft_sim_event_t done)
{
    double end = ft_max2(done, ft_max2(ft_max2(d->free_cpu, d->free_copy), d->free_gpu));
    d->free_cpu = d->free_copy = d->free_gpu = end;
    double dt = end - d->step_start;
    d->c.elapsed += dt;
    return dt;
}

ft_sim_event_t ft_sim_copy(ft_sim_device_t *d, int32_t slot, uint64_t n_bytes, ft_sim_event_t after)
{
    const double bw = d->hw.gpu.h2d_overlap_gbs > 0 ? d->hw.gpu.h2d_overlap_gbs : d->hw.gpu.h2d_gbs;
    const double start = ft_max2(d->free_copy, after);
    const double dur = (double)n_bytes / (bw * 1e9);
    d->free_copy = start + dur;
    d->c.busy_copy += dur;
    d->c.bytes_copied += n_bytes;
    d->c.n_copies++;
    if (slot >= 0 && (uint32_t)slot < d->n_slots)
        d->slot_ready[slot] = d->free_copy;
    return d->free_copy;
}

ft_sim_event_t ft_sim_kernel(ft_sim_device_t *d, int32_t slot, uint64_t n_bytes, uint64_t params,
                             uint32_t n_tok, ft_dtype_t format, ft_sim_event_t after)
{
    const double start = ft_max2(d->free_gpu, after);
    if (slot >= 0 && (uint32_t)slot < d->n_slots && start < d->slot_ready[slot])
        d->c.order_violations++; /* read before the copy filling it completed */
    const double mem = (double)n_bytes / (ft_gpu_gemv_gbs(&d->hw, format) * 1e9);
    const double tflops = d->hw.gpu.gemm_tflops > 0 ? d->hw.gpu.gemm_tflops : 50.0;
    const double flops = 2.0 * (double)params * n_tok / (tflops * 1e12);
    const double dur = ft_max2(mem, flops) + d->hw.gpu.launch_us * 1e-6;
    d->free_gpu = start + dur;
    d->c.busy_gpu += dur;
    d->c.n_kernels++;
    return d->free_gpu;
}

ft_sim_event_t ft_sim_cpu(ft_sim_device_t *d, uint64_t n_bytes, uint64_t params, uint32_t n_tok,
                          ft_dtype_t format, ft_sim_event_t after)
{
    const double start = ft_max2(d->free_cpu, after);
    const double mem = (double)n_bytes / (ft_cpu_gemv_gbs(&d->hw, format) * 1e9);
    const double flops = 2.0 * (double)params * n_tok / (ft_cpu_gflops(&d->hw, format) * 1e9);
    const double dur = ft_max2(mem, flops);
    d->free_cpu = start + dur;
    d->c.busy_cpu += dur;
    d->c.n_cpu_ops++;
    return d->free_cpu;
}

ft_sim_event_t ft_sim_sync(ft_sim_device_t *d, ft_sim_event_t after)
{
    /* A few KiB of activations: the launch/transfer latency dominates. */
    return after + 2.0 * d->hw.gpu.launch_us * 1e-6;
}

void ft_sim_counters(const ft_sim_device_t *d, ft_sim_counters_t *out)
{
    *out = d->c;
}

void ft_sim_reset_counters(ft_sim_device_t *d)
{
    memset(&d->c, 0, sizeof(d->c));
}
