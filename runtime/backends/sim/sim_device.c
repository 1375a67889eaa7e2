#include "sim_device.h"

#include "../../base/alloc.h"
#include "../cpu/cpu_device.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define FT_SIM_RANGES 1024u /* copies and kernel reads still in flight, checked for order */

/* Device memory in flight: a copy writing [lo, hi) until `end`, or a kernel
 * reading it until then. */
typedef struct ft_sim_range {
    uintptr_t lo, hi;
    double end;
} ft_sim_range_t;

typedef struct ft_sim_stream {
    double tail; /* when its last queued work completes */
} ft_sim_stream_t;

typedef struct ft_sim_event {
    double at;
} ft_sim_event_t;

/* The cpu device's memory (host memory, capped at the modelled GPU's
 * size) plus the clock. */
typedef struct ft_sim_device {
    ft_cpu_device_t mem; /* first: the memory functions take the device as one */
    ft_hw_t hw;
    double host;        /* the host's virtual time: work it queues starts no earlier */
    double free_h2d, free_d2h, free_gpu; /* when each engine is next free */
    double step_start;
    ft_sim_range_t writes[FT_SIM_RANGES], reads[FT_SIM_RANGES];
    uint32_t n_writes, n_reads;
    ft_sim_counters_t c;
} ft_sim_device_t;

static double ft_max2(double a, double b)
{
    return a > b ? a : b;
}

static ft_sim_device_t *ft_sim(ft_device_t *d)
{
    return (ft_sim_device_t *)d;
}

/* ---- the model's rates, with fallbacks so a sparse profile still works -- */

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

static double ft_launch_s(const ft_sim_device_t *d)
{
    return d->hw.gpu.launch_us * 1e-6;
}

/* ---- order checks ----------------------------------------------------- */

/* Drops ranges that can no longer overlap anything queued later: work on
 * an engine starts no earlier than the engine is free. */
static void ft_sim_prune(ft_sim_range_t *r, uint32_t *n, double before)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < *n; i++)
        if (r[i].end > before) r[k++] = r[i];
    *n = k;
}

/* Counts a violation when [lo, hi) overlaps a range still in flight at t. */
static void ft_sim_check(ft_sim_device_t *d, const ft_sim_range_t *r, uint32_t n, uintptr_t lo, uintptr_t hi,
                         double t)
{
    for (uint32_t i = 0; i < n; i++)
        if (lo < r[i].hi && r[i].lo < hi && t < r[i].end) {
            d->c.order_violations++;
            return;
        }
}

/* Records a range; when the table is full even after pruning, the oldest
 * is forgotten (a check lost, never a false violation). */
static void ft_sim_record(ft_sim_range_t *r, uint32_t *n, uintptr_t lo, uintptr_t hi, double end, double before)
{
    if (*n == FT_SIM_RANGES) ft_sim_prune(r, n, before);
    if (*n == FT_SIM_RANGES) {
        memmove(r, r + 1, (FT_SIM_RANGES - 1) * sizeof(*r));
        (*n)--;
    }
    r[(*n)++] = (ft_sim_range_t){lo, hi, end};
}

/* ---- the device interface ----------------------------------------------- */

static void ft_sim_destroy(ft_device_t *dev)
{
    ft_sim_device_t *d = ft_sim(dev);
    ft_mem_free(d->mem.a, d);
}

static ft_status_t ft_sim_stream_create(ft_device_t *dev, ft_dstream_t *out)
{
    ft_sim_stream_t *s = ft_mem_calloc(ft_sim(dev)->mem.a, 1, sizeof(*s));
    *out = s;
    if (!s) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "sim: a stream");
    s->tail = ft_sim(dev)->host;
    return FT_OK;
}

static void ft_sim_stream_destroy(ft_device_t *dev, ft_dstream_t s)
{
    ft_mem_free(ft_sim(dev)->mem.a, s);
}

/* A host that has to wait wakes up a launch latency after the stream's
 * end (a blocking synchronize). */
static ft_status_t ft_sim_stream_sync(ft_device_t *dev, ft_dstream_t s)
{
    ft_sim_device_t *d = ft_sim(dev);
    const double tail = ((ft_sim_stream_t *)s)->tail;
    if (tail > d->host) d->host = tail + ft_launch_s(d);
    return FT_OK;
}

static ft_status_t ft_sim_event_create(ft_device_t *dev, ft_devent_t *out)
{
    ft_sim_event_t *e = ft_mem_calloc(ft_sim(dev)->mem.a, 1, sizeof(*e));
    *out = e;
    return e ? FT_OK : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "sim: an event");
}

static void ft_sim_event_destroy(ft_device_t *dev, ft_devent_t e)
{
    ft_mem_free(ft_sim(dev)->mem.a, e);
}

static ft_status_t ft_sim_event_record(ft_device_t *dev, ft_devent_t e, ft_dstream_t s)
{
    const ft_sim_device_t *d = ft_sim(dev);
    ((ft_sim_event_t *)e)->at = ft_max2(((ft_sim_stream_t *)s)->tail, d->host);
    return FT_OK;
}

static ft_status_t ft_sim_stream_wait(ft_device_t *dev, ft_dstream_t s, ft_devent_t e)
{
    (void)dev;
    ft_sim_stream_t *q = s;
    q->tail = ft_max2(q->tail, ((ft_sim_event_t *)e)->at);
    return FT_OK;
}

/* Queues work of duration dur on stream s and an engine free at *engine;
 * returns its start. */
static double ft_sim_queue(ft_sim_device_t *d, ft_sim_stream_t *s, double *engine, double dur)
{
    const double start = ft_max2(ft_max2(s->tail, *engine), d->host);
    s->tail = *engine = start + dur;
    return start;
}

static ft_status_t ft_sim_copy_h2d(ft_device_t *dev, ft_dptr_t dst, const void *src, size_t n, ft_dstream_t s)
{
    ft_sim_device_t *d = ft_sim(dev);
    memcpy((void *)(uintptr_t)dst, src, n);
    const double bw = d->hw.gpu.h2d_overlap_gbs > 0 ? d->hw.gpu.h2d_overlap_gbs : d->hw.gpu.h2d_gbs;
    const double dur = (double)n / (bw * 1e9);
    const double start = ft_sim_queue(d, s, &d->free_h2d, dur);
    /* Overwriting what a kernel queued earlier still reads is a race. */
    ft_sim_check(d, d->reads, d->n_reads, (uintptr_t)dst, (uintptr_t)dst + n, start);
    ft_sim_record(d->writes, &d->n_writes, (uintptr_t)dst, (uintptr_t)dst + n, start + dur, d->free_gpu);
    d->c.busy_copy += dur;
    d->c.bytes_copied += n;
    d->c.n_copies++;
    return FT_OK;
}

/* Small transfers back to the host (the router's choices): latency plus
 * bytes at the profile's device-to-host rate. */
static ft_status_t ft_sim_copy_d2h(ft_device_t *dev, void *dst, ft_dptr_t src, size_t n, ft_dstream_t s)
{
    memcpy(dst, (const void *)(uintptr_t)src, n);
    ft_sim_transfer(dev, s, n, 0);
    return FT_OK;
}

static ft_status_t ft_sim_copy_d2d(ft_device_t *dev, ft_dptr_t dst, ft_dptr_t src, size_t n, ft_dstream_t s)
{
    ft_sim_device_t *d = ft_sim(dev);
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    (void)ft_sim_queue(d, s, &d->free_gpu, ft_launch_s(d) + 2.0 * (double)n / (d->hw.gpu.hbm_gbs * 1e9));
    return FT_OK;
}

static ft_status_t ft_sim_memset(ft_device_t *dev, ft_dptr_t dst, uint8_t v, size_t n, ft_dstream_t s)
{
    ft_sim_device_t *d = ft_sim(dev);
    memset((void *)(uintptr_t)dst, v, n);
    (void)ft_sim_queue(d, s, &d->free_gpu, ft_launch_s(d) + (double)n / (d->hw.gpu.hbm_gbs * 1e9));
    return FT_OK;
}

static const ft_device_vtable_t ft_sim_vt = {
    .name = "sim",
    .destroy = ft_sim_destroy,
    FT_CPU_DEVICE_MEMORY_ENTRIES,
    .stream_create = ft_sim_stream_create,
    .stream_destroy = ft_sim_stream_destroy,
    .stream_sync = ft_sim_stream_sync,
    .event_create = ft_sim_event_create,
    .event_destroy = ft_sim_event_destroy,
    .event_record = ft_sim_event_record,
    .stream_wait = ft_sim_stream_wait,
    .copy_h2d = ft_sim_copy_h2d,
    .copy_d2h = ft_sim_copy_d2h,
    .copy_d2d = ft_sim_copy_d2d,
    .memset = ft_sim_memset,
    /* No kernels of its own: the CPU computes, ft_sim_kernel keeps time. */
    .function = NULL,
    .launch = NULL,
    .graphs_supported = NULL,
};

ft_status_t ft_sim_device_create(const ft_hw_t *hw, uint64_t vram_bytes, const ft_allocator_t *alloc,
                                 ft_device_t **out)
{
    *out = NULL;
    /* A memory size of 0 would be no cap on the cpu device's memory. */
    if (hw->n_gpus == 0 || hw->gpu.h2d_gbs <= 0 || hw->gpu.hbm_gbs <= 0 || hw->dram_gbs <= 0 ||
        (hw->gpu.vram_bytes == 0 && vram_bytes == 0))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "sim device: the hardware profile needs a GPU with a memory size (or a budget), "
                              "H2D and memory bandwidths, and a DRAM bandwidth");
    ft_sim_device_t *d = ft_mem_calloc(alloc, 1, sizeof(*d));
    if (!d) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "sim device: out of memory");
    char name[sizeof(d->mem.info.name)];
    snprintf(name, sizeof(name), "%s (simulated)", hw->gpu.name[0] ? hw->gpu.name : "GPU");
    ft_cpu_device_init(&d->mem, &ft_sim_vt, name, hw->gpu.vram_bytes > vram_bytes ? hw->gpu.vram_bytes : vram_bytes,
                       alloc);
    d->hw = *hw;
    *out = &d->mem.base;
    return FT_OK;
}

int ft_sim_device_is(const ft_device_t *d)
{
    return d && d->vt == &ft_sim_vt;
}

void ft_sim_step_begin(ft_device_t *dev)
{
    ft_sim_device_t *d = ft_sim(dev);
    d->host = ft_max2(ft_max2(d->host, d->free_gpu), ft_max2(d->free_h2d, d->free_d2h));
    d->step_start = d->host;
}

double ft_sim_step_end(ft_device_t *dev)
{
    ft_sim_device_t *d = ft_sim(dev);
    const double end = ft_max2(ft_max2(d->host, d->free_gpu), ft_max2(d->free_h2d, d->free_d2h));
    d->host = end;
    const double dt = end - d->step_start;
    d->c.elapsed += dt;
    return dt;
}

void ft_sim_kernel(ft_device_t *dev, ft_dstream_t s, ft_dptr_t reads, uint64_t n_bytes, uint64_t params,
                   uint32_t n_tok, ft_dtype_t format)
{
    ft_sim_device_t *d = ft_sim(dev);
    const double mem = (double)n_bytes / (ft_gpu_gemv_gbs(&d->hw, format) * 1e9);
    const double tflops = d->hw.gpu.gemm_tflops > 0 ? d->hw.gpu.gemm_tflops : 50.0;
    const double flops = 2.0 * (double)params * n_tok / (tflops * 1e12);
    const double dur = ft_max2(mem, flops) + ft_launch_s(d);
    const double start = ft_sim_queue(d, s, &d->free_gpu, dur);
    if (reads) {
        const uintptr_t lo = (uintptr_t)reads, hi = lo + n_bytes;
        ft_sim_check(d, d->writes, d->n_writes, lo, hi, start); /* read before its copy completed */
        ft_sim_record(d->reads, &d->n_reads, lo, hi, start + dur, d->free_h2d);
    }
    d->c.busy_gpu += dur;
    d->c.n_kernels++;
}

void ft_sim_cpu(ft_device_t *dev, uint64_t n_bytes, uint64_t params, uint32_t n_tok, ft_dtype_t format)
{
    ft_sim_device_t *d = ft_sim(dev);
    const double mem = (double)n_bytes / (ft_cpu_gemv_gbs(&d->hw, format) * 1e9);
    const double flops = 2.0 * (double)params * n_tok / (ft_cpu_gflops(&d->hw, format) * 1e9);
    const double dur = ft_max2(mem, flops);
    d->host += dur;
    d->c.busy_cpu += dur;
    d->c.n_cpu_ops++;
}

void ft_sim_transfer(ft_device_t *dev, ft_dstream_t s, uint64_t n_bytes, int to_device)
{
    ft_sim_device_t *d = ft_sim(dev);
    double bw = d->hw.gpu.h2d_overlap_gbs > 0 ? d->hw.gpu.h2d_overlap_gbs : d->hw.gpu.h2d_gbs;
    if (!to_device && d->hw.gpu.d2h_gbs > 0) bw = d->hw.gpu.d2h_gbs;
    (void)ft_sim_queue(d, s, to_device ? &d->free_h2d : &d->free_d2h,
                       ft_launch_s(d) + (double)n_bytes / (bw * 1e9));
}

void ft_sim_counters(const ft_device_t *d, ft_sim_counters_t *out)
{
    *out = ((const ft_sim_device_t *)d)->c;
}

void ft_sim_reset_counters(ft_device_t *d)
{
    memset(&ft_sim(d)->c, 0, sizeof(ft_sim_counters_t));
}
