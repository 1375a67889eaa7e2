#include "membw.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef unsigned long long ft_membw_v4 __attribute__((vector_size(32)));

typedef struct ft_membw_run {
    unsigned char *buf;
    uint64_t n_lines; /* 128-byte steps */
    int fill;         /* first pass: write the pages from the thread that reads them */
    unsigned long long sink[64];
} ft_membw_run_t;

static void ft_membw_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    ft_membw_run_t *r = ctx;
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
    ft_membw_v4 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    for (uint64_t i = b; i < e; i++) {
        const ft_membw_v4 *v = (const ft_membw_v4 *)(r->buf + i * 128);
        a0 ^= v[0];
        a1 ^= v[1];
        a2 ^= v[2];
        a3 ^= v[3];
    }
    ft_membw_v4 x = a0 ^ a1 ^ a2 ^ a3;
    r->sink[ti % 64] += x[0] ^ x[1] ^ x[2] ^ x[3]; /* keeps the reads alive */
}

static double ft_membw_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int ft_membw_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

ft_status_t ft_membw_measure(ft_threadpool_t *pool, uint64_t buffer_bytes, uint32_t n_runs,
                             double *out_samples, ft_membw_result_t *out)
{
    memset(out, 0, sizeof(*out));
    buffer_bytes &= ~(uint64_t)4095;
    if (n_runs == 0 || n_runs > FT_MEMBW_MAX_RUNS || buffer_bytes < (1u << 20))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "memory bandwidth: %u runs over %llu bytes (need 1..%u runs, >= 1 MiB)",
                              n_runs, (unsigned long long)buffer_bytes, FT_MEMBW_MAX_RUNS);
    ft_membw_run_t r = {.buf = aligned_alloc(4096, (size_t)buffer_bytes),
                        .n_lines = buffer_bytes / 128, .fill = 1};
    if (!r.buf)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "memory bandwidth: cannot allocate %llu bytes",
                              (unsigned long long)buffer_bytes);
    ft_threadpool_run(pool, ft_membw_worker, &r);
    r.fill = 0;
    ft_threadpool_run(pool, ft_membw_worker, &r); /* warm-up: TLB, frequency */
    double gbs[FT_MEMBW_MAX_RUNS];
    for (uint32_t i = 0; i < n_runs; i++) {
        double t0 = ft_membw_now();
        ft_threadpool_run(pool, ft_membw_worker, &r);
        gbs[i] = (double)buffer_bytes / (ft_membw_now() - t0) / 1e9;
    }
    free(r.buf);
    if (out_samples)
        memcpy(out_samples, gbs, n_runs * sizeof(double));
    qsort(gbs, n_runs, sizeof(double), ft_membw_cmp);
    out->median_gbs = gbs[n_runs / 2];
    out->min_gbs = gbs[0];
    out->max_gbs = gbs[n_runs - 1];
    out->n_runs = n_runs;
    out->buffer_bytes = buffer_bytes;
    return FT_OK;
}
