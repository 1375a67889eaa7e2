/* Per-GPU figures through the CUDA Driver API (runtime/backends/cuda/cuda_api.h): identity and
 * memory, device-memory bandwidth, pinned H2D/D2H by transfer size,
 * gathers of expert-sized blobs, launch latency, and H2D with CPU GEMV at
 * the same time (they compete for DRAM). All device timings use events on
 * one non-blocking stream. */
#include "backends/cuda/cuda_api.h"
#include "figure.h"
#include "gemv_bench.h"
#include "gpu_measure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One Q4_K expert of Qwen3-30B-A3B: gate + up + down, 3 x 768 x 2048
 * weights at 4.5 bits (144 bytes per 256). */
#define FT_HWP_EXPERT_BYTES (3ull * 768 * 2048 / 256 * 144)
#define FT_HWP_MAX_RUNS 32

/* An empty kernel in PTX: the driver JIT-compiles it for any GPU. */
static const char ft_hwp_empty_ptx[] = ".version 6.0\n.target sm_50\n.address_size 64\n"
                                       ".visible .entry ft_empty()\n{\n\tret;\n}\n";

typedef struct ft_hwp_gpu_ctx {
    const ft_cuda_api_t *cu;
    const ft_profile_options_t *opts;
    ft_threadpool_t *pool;
    uint32_t n_runs;
    ft_cu_stream stream;
    ft_cu_event ev0, ev1;
    void *host;           /* pinned, host_bytes */
    ft_cu_deviceptr dev;  /* dev_bytes */
    size_t host_bytes, dev_bytes;
} ft_hwp_gpu_ctx_t;

#define FT_CU(call, what)                                                                          \
    do {                                                                                           \
        ft_status_t st_ = ft_cuda_check(g->cu, g->cu->call, what);                                 \
        if (st_)                                                                                   \
            return st_;                                                                            \
    } while (0)

/* Milliseconds between ev0 and ev1 after ev1 completes. */
FT_WARN_UNUSED static ft_status_t ft_hwp_elapsed(ft_hwp_gpu_ctx_t *g, double *out_s)
{
    float ms = 0;
    FT_CU(cuEventSynchronize(g->ev1), "cuEventSynchronize");
    FT_CU(cuEventElapsedTime(&ms, g->ev0, g->ev1), "cuEventElapsedTime");
    *out_s = ms > 0 ? (double)ms * 1e-3 : 1e-9;
    return FT_OK;
}

/* k copies of size bytes in one direction, back to back; GB/s. */
FT_WARN_UNUSED static ft_status_t ft_hwp_copy_run(ft_hwp_gpu_ctx_t *g, int h2d, size_t size, uint32_t k, double *gbs)
{
    size_t span = g->host_bytes < g->dev_bytes ? g->host_bytes : g->dev_bytes;
    size_t slots = span / size ? span / size : 1;
    FT_CU(cuEventRecord(g->ev0, g->stream), "cuEventRecord");
    for (uint32_t i = 0; i < k; i++) {
        size_t off = (i % slots) * size;
        if (h2d)
            FT_CU(cuMemcpyHtoDAsync(g->dev + off, (char *)g->host + off, size, g->stream), "cuMemcpyHtoDAsync");
        else
            FT_CU(cuMemcpyDtoHAsync((char *)g->host + off, g->dev + off, size, g->stream), "cuMemcpyDtoHAsync");
    }
    FT_CU(cuEventRecord(g->ev1, g->stream), "cuEventRecord");
    double s;
    ft_status_t st = ft_hwp_elapsed(g, &s);
    *gbs = (double)size * k / s / 1e9;
    return st;
}

FT_WARN_UNUSED static ft_status_t ft_hwp_copies(ft_hwp_gpu_ctx_t *g, int h2d, Fthw__Gpu *out)
{
    static const size_t sizes[] = {64u << 10, 1u << 20, 4u << 20, 16u << 20, 64u << 20};
    double gbs[FT_HWP_MAX_RUNS];
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t size = sizes[i];
        if (size > g->host_bytes || size > g->dev_bytes)
            break;
        /* ~256 MiB per run (at least 4 copies) so small sizes are timed over many. */
        uint32_t k = (uint32_t)((256u << 20) / size);
        k = k < 4 ? 4 : k > 4096 ? 4096 : k;
        ft_status_t st = ft_hwp_copy_run(g, h2d, size, 1, &gbs[0]); /* warm-up */
        for (uint32_t r = 0; !st && r < g->n_runs; r++)
            st = ft_hwp_copy_run(g, h2d, size, k, &gbs[r]);
        if (st)
            return st;
        char note[128];
        snprintf(note, sizeof(note), "pinned %s, %u copies of %zu KiB back to back, event-timed",
                 h2d ? "host->device" : "device->host", k, size >> 10);
        Fthw__CopyRate *c = malloc(sizeof(*c));
        if (c) {
            fthw__copy_rate__init(c);
            c->transfer_bytes = size;
            c->gbs = ft_hwp_figure(gbs, g->n_runs, FTHW__SOURCE__MEASURED, note);
            if (!c->gbs) {
                free(c);
                c = NULL;
            }
        }
        if (h2d ? ft_hwp_push(&out->h2d, &out->n_h2d, c, 1) : ft_hwp_push(&out->d2h, &out->n_d2h, c, 1))
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "copy figures: out of memory");
        /* The largest transfer is the headline figure. */
        Fthw__Figure **head = h2d ? &out->h2d_gbs : &out->d2h_gbs;
        if (*head)
            fthw__figure__free_unpacked(*head, NULL);
        *head = ft_hwp_figure(gbs, g->n_runs, FTHW__SOURCE__MEASURED, note);
        if (!*head)
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "copy figures: out of memory");
    }
    return FT_OK;
}

/* Expert-sized blobs from scattered (4 KiB aligned) host offsets into
 * device slots, the pattern of cache misses at decode. */
FT_WARN_UNUSED static ft_status_t ft_hwp_gather(ft_hwp_gpu_ctx_t *g, Fthw__Gpu *out)
{
    size_t blob = FT_HWP_EXPERT_BYTES, n_host = g->host_bytes / blob, n_dev = g->dev_bytes / blob;
    if (n_host < 2 || n_dev < 1)
        return FT_OK;
    double gbs[FT_HWP_MAX_RUNS];
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (uint32_t r = 0; r < g->n_runs; r++) {
        FT_CU(cuEventRecord(g->ev0, g->stream), "cuEventRecord");
        for (uint32_t i = 0; i < 64; i++) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            size_t src = (size_t)(seed % (g->host_bytes - blob)) & ~(size_t)4095;
            FT_CU(cuMemcpyHtoDAsync(g->dev + (i % n_dev) * blob, (char *)g->host + src, blob, g->stream),
                  "cuMemcpyHtoDAsync");
        }
        FT_CU(cuEventRecord(g->ev1, g->stream), "cuEventRecord");
        double s;
        ft_status_t st = ft_hwp_elapsed(g, &s);
        if (st)
            return st;
        gbs[r] = 64.0 * (double)blob / s / 1e9;
    }
    out->gather_gbs = ft_hwp_figure(gbs, g->n_runs, FTHW__SOURCE__MEASURED,
                                    "64 copies of one Q4_K 30B-A3B expert (2.53 MiB) from random pinned offsets");
    return out->gather_gbs ? FT_OK : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "gather figure: out of memory");
}

/* Device memory: a device-to-device copy reads and writes each byte. */
FT_WARN_UNUSED static ft_status_t ft_hwp_hbm(ft_hwp_gpu_ctx_t *g, Fthw__Gpu *out)
{
    size_t half = g->dev_bytes / 2;
    double gbs[FT_HWP_MAX_RUNS];
    for (uint32_t r = 0; r <= g->n_runs; r++) {
        FT_CU(cuEventRecord(g->ev0, g->stream), "cuEventRecord");
        FT_CU(cuMemcpyDtoDAsync(g->dev + half, g->dev, half, g->stream), "cuMemcpyDtoDAsync");
        FT_CU(cuEventRecord(g->ev1, g->stream), "cuEventRecord");
        double s;
        ft_status_t st = ft_hwp_elapsed(g, &s);
        if (st)
            return st;
        if (r > 0) /* the first is a warm-up */
            gbs[r - 1] = 2.0 * (double)half / s / 1e9;
    }
    out->hbm_gbs = ft_hwp_figure(gbs, g->n_runs, FTHW__SOURCE__MEASURED,
                                 "device-to-device copy, read + write bytes counted");
    return out->hbm_gbs ? FT_OK : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "hbm figure: out of memory");
}

FT_WARN_UNUSED static ft_status_t ft_hwp_launch(ft_hwp_gpu_ctx_t *g, Fthw__Gpu *out)
{
    ft_cu_module mod = NULL;
    ft_cu_function fn = NULL;
    ft_status_t st = ft_cuda_check(g->cu, g->cu->cuModuleLoadData(&mod, ft_hwp_empty_ptx), "cuModuleLoadData");
    if (!st)
        st = ft_cuda_check(g->cu, g->cu->cuModuleGetFunction(&fn, mod, "ft_empty"), "cuModuleGetFunction");
    double us[FT_HWP_MAX_RUNS];
    enum { N_LAUNCH = 1000 };
    for (uint32_t r = 0; !st && r <= g->n_runs; r++) {
        st = ft_cuda_check(g->cu, g->cu->cuEventRecord(g->ev0, g->stream), "cuEventRecord");
        for (int i = 0; !st && i < N_LAUNCH; i++)
            st = ft_cuda_check(g->cu, g->cu->cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, g->stream, NULL, NULL),
                               "cuLaunchKernel");
        if (!st)
            st = ft_cuda_check(g->cu, g->cu->cuEventRecord(g->ev1, g->stream), "cuEventRecord");
        double s = 0;
        if (!st)
            st = ft_hwp_elapsed(g, &s);
        if (!st && r > 0)
            us[r - 1] = s * 1e6 / N_LAUNCH;
    }
    if (mod)
        g->cu->cuModuleUnload(mod);
    if (st)
        return st;
    out->launch_us = ft_hwp_figure(us, g->n_runs, FTHW__SOURCE__MEASURED,
                                   "1000 back-to-back launches of an empty kernel, event-timed");
    return out->launch_us ? FT_OK : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "launch figure: out of memory");
}

/* H2D copies queued on the stream while the CPU runs Q4_K expert GEMVs on
 * every thread; each side's rate over the window in which both ran. */
FT_WARN_UNUSED static ft_status_t ft_hwp_overlap(ft_hwp_gpu_ctx_t *g, uint64_t gemv_bytes, Fthw__Gpu *out)
{
    ft_hwp_gemv_t *gemv = NULL;
    ft_status_t st = ft_hwp_gemv_create(g->pool, FT_DTYPE_Q4_K, 768, 2048, gemv_bytes, &gemv);
    if (st)
        return st;
    double h2d[FT_HWP_MAX_RUNS], cpu[FT_HWP_MAX_RUNS];
    size_t chunk = g->host_bytes < g->dev_bytes ? g->host_bytes : g->dev_bytes;
    chunk = chunk > (64u << 20) ? 64u << 20 : chunk;
    /* About half a second of copies at the link rate measured before. */
    double link = out->h2d_gbs ? out->h2d_gbs->median : 10.0;
    uint32_t k = (uint32_t)(link * 1e9 * (g->opts->quick ? 0.25 : 0.5) / (double)chunk) + 1;
    ft_hwp_gemv_pass(gemv);
    for (uint32_t r = 0; !st && r < g->n_runs; r++) {
        if ((st = ft_hwp_copy_run(g, 1, chunk, 1, &h2d[r]))) /* drain and warm */
            break;
        st = ft_cuda_check(g->cu, g->cu->cuEventRecord(g->ev0, g->stream), "cuEventRecord");
        for (uint32_t i = 0; !st && i < k; i++)
            st = ft_cuda_check(g->cu, g->cu->cuMemcpyHtoDAsync(g->dev, g->host, chunk, g->stream),
                               "cuMemcpyHtoDAsync");
        if (!st)
            st = ft_cuda_check(g->cu, g->cu->cuEventRecord(g->ev1, g->stream), "cuEventRecord");
        double cpu_s = 0, cpu_b = 0;
        while (!st && g->cu->cuEventQuery(g->ev1) == FT_CU_ERROR_NOT_READY) {
            cpu_s += ft_hwp_gemv_pass(gemv);
            cpu_b += (double)ft_hwp_gemv_bytes(gemv);
        }
        double s = 0;
        if (!st)
            st = ft_hwp_elapsed(g, &s);
        h2d[r] = (double)chunk * k / s / 1e9;
        cpu[r] = cpu_s > 0 ? cpu_b / cpu_s / 1e9 : 0;
    }
    ft_hwp_gemv_destroy(gemv);
    if (st)
        return st;
    out->h2d_overlap_gbs = ft_hwp_figure(h2d, g->n_runs, FTHW__SOURCE__MEASURED,
                                         "64 MiB pinned H2D copies while all CPU threads run Q4_K GEMVs");
    out->cpu_gemv_overlap_gbs = ft_hwp_figure(cpu, g->n_runs, FTHW__SOURCE__MEASURED,
                                              "Q4_K 768x2048 GEMV weight rate, all threads, during H2D copies");
    if (!out->h2d_overlap_gbs || !out->cpu_gemv_overlap_gbs)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "overlap figures: out of memory");
    return FT_OK;
}

#undef FT_CU

FT_WARN_UNUSED static ft_status_t ft_hwp_gpu_figures(ft_hwp_gpu_ctx_t *g, uint64_t gemv_bytes, Fthw__Gpu *out)
{
    const ft_profile_options_t *o = g->opts;
    ft_status_t st;
    if (o->progress)
        o->progress(o->progress_user, "GPU copies", 0.7);
    if ((st = ft_hwp_copies(g, 1, out)) || (st = ft_hwp_copies(g, 0, out)) || (st = ft_hwp_gather(g, out)))
        return st;
    if (o->progress)
        o->progress(o->progress_user, "GPU memory and launches", 0.8);
    if ((st = ft_hwp_hbm(g, out)) || (st = ft_hwp_launch(g, out)))
        return st;
    if (o->progress)
        o->progress(o->progress_user, "CPU GEMV and H2D together", 0.9);
    return ft_hwp_overlap(g, gemv_bytes, out);
}

/* Context, buffers and stream for one device, then the figures. */
FT_WARN_UNUSED static ft_status_t ft_hwp_gpu_one(const ft_cuda_api_t *cu, int ordinal, const ft_profile_options_t *opts,
                                  ft_threadpool_t *pool, uint64_t gemv_bytes, Fthw__Gpu *out)
{
    ft_cu_device dev;
    ft_cu_context ctx = NULL;
    char name[256] = {0};
    int ccmaj = 0, ccmin = 0, integrated = 0;
    size_t total = 0, free_b = 0;
    ft_hwp_gpu_ctx_t g = {.cu = cu, .opts = opts, .pool = pool};
    g.n_runs = opts->n_runs ? opts->n_runs : (opts->quick ? 3 : 7);
    g.n_runs = g.n_runs > FT_HWP_MAX_RUNS ? FT_HWP_MAX_RUNS : g.n_runs;
    ft_status_t st;
    if ((st = ft_cuda_check(cu, cu->cuDeviceGet(&dev, ordinal), "cuDeviceGet")) ||
        (st = ft_cuda_check(cu, cu->cuDeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName")) ||
        (st = ft_cuda_check(cu, cu->cuDeviceGetAttribute(&ccmaj, FT_CU_ATTR_CC_MAJOR, dev), "compute capability")) ||
        (st = ft_cuda_check(cu, cu->cuDeviceGetAttribute(&ccmin, FT_CU_ATTR_CC_MINOR, dev), "compute capability")) ||
        (st = ft_cuda_check(cu, cu->cuDeviceGetAttribute(&integrated, FT_CU_ATTR_INTEGRATED, dev), "integrated")) ||
        (st = ft_cuda_check(cu, cu->cuCtxCreate(&ctx, 0, dev), "cuCtxCreate")))
        return st;
    out->ordinal = (uint32_t)ordinal;
    out->cc_major = (uint32_t)ccmaj;
    out->cc_minor = (uint32_t)ccmin;
    out->unified_memory = integrated != 0;
    if (!(out->name = ft_hwp_strdup(name)))
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "GPU name: out of memory");
    if (!st)
        st = ft_cuda_check(cu, cu->cuMemGetInfo(&free_b, &total), "cuMemGetInfo");
    if (!st) {
        out->vram_total_bytes = ft_hwp_figure1((double)total, FTHW__SOURCE__MEASURED, "cuMemGetInfo");
        out->vram_free_bytes = ft_hwp_figure1((double)free_b, FTHW__SOURCE__MEASURED, "cuMemGetInfo, before profiling");
        /* Buffers: 256 MiB (quick) or 1 GiB, at most half the free VRAM. */
        g.host_bytes = g.dev_bytes = opts->quick ? 256u << 20 : 1u << 30;
        if (g.dev_bytes > free_b / 2)
            g.dev_bytes = free_b / 2 & ~(size_t)4095;
        st = ft_cuda_check(cu, cu->cuStreamCreate(&g.stream, FT_CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    }
    if (!st)
        st = ft_cuda_check(cu, cu->cuEventCreate(&g.ev0, 0), "cuEventCreate");
    if (!st)
        st = ft_cuda_check(cu, cu->cuEventCreate(&g.ev1, 0), "cuEventCreate");
    if (!st)
        st = ft_cuda_check(cu, cu->cuMemHostAlloc(&g.host, g.host_bytes, FT_CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
    if (!st)
        st = ft_cuda_check(cu, cu->cuMemAlloc(&g.dev, g.dev_bytes), "cuMemAlloc");
    if (!st) {
        memset(g.host, 0x5a, g.host_bytes);
        st = ft_hwp_gpu_figures(&g, gemv_bytes, out);
    }
    if (g.dev)
        cu->cuMemFree(g.dev);
    if (g.host)
        cu->cuMemFreeHost(g.host);
    if (g.ev0)
        cu->cuEventDestroy(g.ev0);
    if (g.ev1)
        cu->cuEventDestroy(g.ev1);
    if (g.stream)
        cu->cuStreamDestroy(g.stream);
    cu->cuCtxDestroy(ctx);
    return ft_status_annotate(st, "GPU %d (%s)", ordinal, name);
}

/* Records why there is no GPU in the profile; not an error. */
FT_WARN_UNUSED static ft_status_t ft_hwp_no_gpu(Fthw__Profile *p, ft_status_t why)
{
    char note[512];
    snprintf(note, sizeof(note), "no GPU: %s", ft_status_message(why));
    ft_status_free(why);
    if (p->gpu_note != protobuf_c_empty_string)
        free(p->gpu_note);
    p->gpu_note = ft_hwp_strdup(note);
    return p->gpu_note ? FT_OK : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "GPU note: out of memory");
}

ft_status_t ft_hwp_gpus(const ft_profile_options_t *opts, ft_threadpool_t *pool, const char *lib_name,
                        uint64_t gemv_bytes, Fthw__Profile *p)
{
    ft_cuda_api_t cu;
    ft_status_t st = ft_cuda_api_open(lib_name, &cu);
    if (st)
        return ft_hwp_no_gpu(p, st);
    int count = 0;
    if ((st = ft_cuda_check(&cu, cu.cuInit(0), "cuInit")) ||
        (st = ft_cuda_check(&cu, cu.cuDeviceGetCount(&count), "cuDeviceGetCount"))) {
        ft_cuda_api_close(&cu);
        return ft_hwp_no_gpu(p, st);
    }
    if (count <= 0) {
        ft_cuda_api_close(&cu);
        return ft_hwp_no_gpu(p, ft_status_make(FT_STATUS_UNAVAILABLE, "the CUDA driver reports no device"));
    }
    for (int i = 0; !st && i < count && i < 8; i++) {
        Fthw__Gpu *gpu = malloc(sizeof(*gpu));
        if (!gpu) {
            st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "GPU figures: out of memory");
            break;
        }
        fthw__gpu__init(gpu);
        st = ft_hwp_gpu_one(&cu, i, opts, pool, gemv_bytes, gpu);
        if (st)
            fthw__gpu__free_unpacked(gpu, NULL);
        else if (ft_hwp_push(&p->gpus, &p->n_gpus, gpu, 1))
            st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "GPU figures: out of memory");
    }
    ft_cuda_api_close(&cu);
    return st;
}
