/* DRAM read bandwidth, all threads and one, over a buffer far larger than
 * the last-level cache. The profiler's own reader (rather than
 * runtime/base/membw.h) because it keeps every run's sample for the
 * figure and loads 128 bytes per step through four independent vector
 * accumulators, so that one thread is limited by memory, not by issue. */
#include "figure.h"
#include "profiler.h"

#include "base/threadpool.h"

#include <stdio.h>
#include <stdlib.h>

typedef unsigned long long ft_hwp_v4 __attribute__((vector_size(32)));

typedef struct ft_hwp_read {
    unsigned char *buf;
    uint64_t n_lines; /* 128-byte steps */
    int fill;         /* first pass: write the pages from the thread that reads them */
    unsigned long long sink[64];
} ft_hwp_read_t;

static void ft_hwp_read_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    ft_hwp_read_t *r = ctx;
    uint64_t b, e;
    ft_split_range(r->n_lines, 32, ti, nt, &b, &e);
    if (r->fill) {
        /* Distinct values: identical pages could be merged by the kernel
         * (KSM) or the hypervisor and then read from one cached page. */
        unsigned long long *w = (unsigned long long *)(r->buf + b * 128);
        for (uint64_t i = 0; i < (e - b) * 16; i++)
            w[i] = (b * 16 + i) * 0x9e3779b97f4a7c15ull;
        return;
    }
    ft_hwp_v4 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    for (uint64_t i = b; i < e; i++) {
        const ft_hwp_v4 *v = (const ft_hwp_v4 *)(r->buf + i * 128);
        a0 ^= v[0];
        a1 ^= v[1];
        a2 ^= v[2];
        a3 ^= v[3];
    }
    ft_hwp_v4 x = a0 ^ a1 ^ a2 ^ a3;
    r->sink[ti % 64] += x[0] ^ x[1] ^ x[2] ^ x[3];
}

static ft_status_t ft_hwp_dram_one(uint32_t n_threads, uint64_t bytes, uint32_t n_runs,
                                   Fthw__Figure **out)
{
    double gbs[64];
    n_runs = n_runs > 64 ? 64 : n_runs ? n_runs : 1;
    bytes &= ~(uint64_t)4095;
    if (bytes < (1u << 20))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "DRAM buffer of %llu bytes is too small",
                              (unsigned long long)bytes);
    ft_hwp_read_t r = {.buf = aligned_alloc(4096, (size_t)bytes), .n_lines = bytes / 128, .fill = 1};
    if (!r.buf)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "DRAM buffer: cannot allocate %llu bytes",
                              (unsigned long long)bytes);
    ft_threadpool_t *pool = NULL;
    ft_status_t st = ft_threadpool_create(n_threads, &pool);
    if (st) {
        free(r.buf);
        return st;
    }
    ft_threadpool_run(pool, ft_hwp_read_worker, &r);
    r.fill = 0;
    ft_threadpool_run(pool, ft_hwp_read_worker, &r); /* warm-up: TLB, frequency */
    for (uint32_t i = 0; i < n_runs; i++) {
        double t0 = ft_hwp_now();
        ft_threadpool_run(pool, ft_hwp_read_worker, &r);
        gbs[i] = (double)bytes / (ft_hwp_now() - t0) / 1e9;
    }
    uint32_t nt = ft_threadpool_size(pool);
    ft_threadpool_destroy(pool);
    free(r.buf);
    char note[160];
    snprintf(note, sizeof(note), "sequential 256-bit reads of %llu MiB, %u thread%s, after a warm-up pass",
             (unsigned long long)(bytes >> 20), nt, nt == 1 ? "" : "s");
    *out = ft_hwp_figure(gbs, n_runs, FTHW__SOURCE__MEASURED, note);
    return *out ? FT_OK : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "DRAM figure: out of memory");
}

ft_status_t ft_hwp_dram(const ft_profile_options_t *opts, uint64_t buffer_bytes, Fthw__Cpu *cpu)
{
    uint32_t n_runs = opts->n_runs ? opts->n_runs : (opts->quick ? 7 : 15);
    ft_status_t st = ft_hwp_dram_one(opts->n_threads, buffer_bytes, n_runs, &cpu->dram_read_gbs);
    if (st)
        return ft_status_annotate(st, "DRAM read bandwidth, all threads");
    /* One thread cannot fill the memory system: half the buffer (still
     * far past the L3) keeps the run short. */
    st = ft_hwp_dram_one(1, buffer_bytes / 2, n_runs, &cpu->dram_read_1t_gbs);
    return ft_status_annotate(st, "DRAM read bandwidth, one thread");
}
