#include "membw.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct ft_membw_run {
    const uint64_t *buf;
    uint64_t n_words;
    uint64_t sums[64]; /* one per thread, so the reads are not optimized away */
} ft_membw_run_t;

static void ft_membw_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    ft_membw_run_t *r = ctx;
    uint64_t b, e;
    ft_split_range(r->n_words, 64, ti, nt, &b, &e);
    /* Eight independent accumulators: the loop is bound by memory, not by
     * a dependency chain, and vectorizes. */
    uint64_t acc[8] = {0};
    for (uint64_t i = b; i + 8 <= e; i += 8)
        for (int k = 0; k < 8; k++)
            acc[k] ^= r->buf[i + k];
    uint64_t s = 0;
    for (int k = 0; k < 8; k++)
        s ^= acc[k];
    if (ti < 64)
        r->sums[ti] = s;
}

static double ft_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int ft_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

ft_status_t ft_membw_measure(ft_threadpool_t *pool, uint64_t buffer_bytes, uint32_t n_runs,
                             ft_membw_result_t *out)
{
    memset(out, 0, sizeof(*out));
    if (n_runs == 0 || n_runs > 1000 || buffer_bytes < (1u << 20))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "memory bandwidth: bad parameters");
    uint64_t *buf = aligned_alloc(4096, (size_t)buffer_bytes);
    double *gbs = malloc(n_runs * sizeof(double));
    if (!buf || !gbs) {
        free(buf);
        free(gbs);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "memory bandwidth: cannot allocate %llu bytes",
                              (unsigned long long)buffer_bytes);
    }
    /* Touch every page with distinct values so nothing is a shared zero page. */
    for (uint64_t i = 0; i < buffer_bytes / 8; i++)
        buf[i] = i * 0x9e3779b97f4a7c15ull;
    ft_membw_run_t r = {.buf = buf, .n_words = buffer_bytes / 8};
    ft_threadpool_run(pool, ft_membw_worker, &r); /* warm-up */
    for (uint32_t i = 0; i < n_runs; i++) {
        double t0 = ft_now();
        ft_threadpool_run(pool, ft_membw_worker, &r);
        double dt = ft_now() - t0;
        gbs[i] = (double)buffer_bytes / dt / 1e9;
    }
    qsort(gbs, n_runs, sizeof(double), ft_cmp_double);
    out->median_gbs = gbs[n_runs / 2];
    out->min_gbs = gbs[0];
    out->max_gbs = gbs[n_runs - 1];
    out->n_runs = n_runs;
    out->buffer_bytes = buffer_bytes;
    free(buf);
    free(gbs);
    return FT_OK;
}
