/* kernel_bench: decode-shaped (n_tok = 1) matrix-vector throughput of the
 * CPU kernels for every weight format, next to the DRAM read bandwidth
 * measured in the same run.
 *
 * For each format it builds a set of expert-sized matrices (512 rows x
 * 1024 columns, the shape of one expert projection) totalling at least
 * 256 MB, far larger than the caches, and multiplies each by a fresh
 * activation vector the way a decode step does: prepare the activations,
 * then one pool run that splits the rows over the threads. It reports the
 * weight bytes streamed per second, single-threaded and with every thread,
 * and that rate as a fraction of the all-thread read bandwidth.
 *
 * Usage: kernel_bench [--threads N] [--mb MB] [--reps R]
 * A benchmark, not a test: it checks nothing. */
#include "../../runtime/backends/cpu/kernels.h"
#include "../../runtime/base/threadpool.h"
#include "../../runtime/format/convert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { ROWS = 512, COLS = 1024 };

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return v[n / 2];
}

/* ---- plain read bandwidth ---- */

typedef unsigned long long ft_bench_v4 __attribute__((vector_size(32)));

struct read_ctx {
    const unsigned char *buf;
    size_t bytes;
    unsigned long long sink[64];
};

static void read_fn(void *p, uint32_t idx, uint32_t n)
{
    struct read_ctx *c = p;
    uint64_t b, e;
    ft_split_range(c->bytes / 128, 1, idx, n, &b, &e);
    ft_bench_v4 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    for (uint64_t i = b; i < e; i++) {
        const ft_bench_v4 *v = (const ft_bench_v4 *)(c->buf + i * 128);
        a0 ^= v[0];
        a1 ^= v[1];
        a2 ^= v[2];
        a3 ^= v[3];
    }
    const ft_bench_v4 r = a0 ^ a1 ^ a2 ^ a3;
    c->sink[idx % 64] += r[0] ^ r[1] ^ r[2] ^ r[3];
}

static double read_gbs(ft_threadpool_t *pool, struct read_ctx *c, int reps)
{
    double t[16];
    ft_threadpool_run(pool, read_fn, c); /* warm-up: page faults, TLB */
    for (int r = 0; r < reps; r++) {
        const double t0 = now_s();
        ft_threadpool_run(pool, read_fn, c);
        t[r] = now_s() - t0;
    }
    return (double)c->bytes / median(t, reps) / 1e9;
}

/* ---- decode matmul ---- */

struct mm_ctx {
    ft_dtype_t wt;
    const unsigned char *w;
    size_t row_bytes;
    const void *xp;
    float *y;
};

static void mm_fn(void *p, uint32_t idx, uint32_t n)
{
    const struct mm_ctx *c = p;
    uint64_t b, e;
    ft_split_range(ROWS, 16, idx, n, &b, &e);
    ft_cpu_matmul(c->wt, c->w, c->row_bytes, c->xp, 1, COLS, (uint32_t)b, (uint32_t)e, c->y, ROWS);
}

/* One pass over every matrix; returns seconds. */
static double mm_pass(ft_threadpool_t *pool, struct mm_ctx *c, const unsigned char *all,
                      size_t mat_bytes, size_t n_mats, const float *x, void *xp)
{
    const double t0 = now_s();
    for (size_t m = 0; m < n_mats; m++) {
        ft_cpu_act_prepare(c->wt, x + (m % 4) * COLS, COLS, 1, COLS, xp);
        c->w = all + m * mat_bytes;
        ft_threadpool_run(pool, mm_fn, c);
    }
    return now_s() - t0;
}

static double mm_gbs(ft_threadpool_t *pool, ft_dtype_t wt, const unsigned char *all,
                     size_t row_bytes, size_t n_mats, const float *x, int reps)
{
    static float y[ROWS];
    static unsigned char xp[COLS * 4];
    struct mm_ctx c = {wt, NULL, row_bytes, xp, y};
    const size_t mat_bytes = row_bytes * ROWS;
    double t[16];
    mm_pass(pool, &c, all, mat_bytes, n_mats, x, xp);
    for (int r = 0; r < reps; r++)
        t[r] = mm_pass(pool, &c, all, mat_bytes, n_mats, x, xp);
    return (double)(mat_bytes * n_mats) / median(t, reps) / 1e9;
}

int main(int argc, char **argv)
{
    uint32_t n_threads = 0;
    size_t total_mb = 256;
    int reps = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads")) n_threads = (uint32_t)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--mb")) total_mb = (size_t)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    }
    if (reps < 1) reps = 1;
    if (reps > 16) reps = 16;
    if (total_mb < 1) total_mb = 1;
    ft_threadpool_t *pool_all = NULL, *pool_one = NULL;
    ft_status_t st = ft_threadpool_create(n_threads, &pool_all);
    if (!st) st = ft_threadpool_create(1, &pool_one);
    if (st) {
        fprintf(stderr, "kernel_bench: %s\n", ft_status_message(st));
        return 1;
    }
    const size_t total = total_mb << 20;
    unsigned char *buf = aligned_alloc(4096, total + 4096 * 4);
    if (!buf) {
        fprintf(stderr, "kernel_bench: cannot allocate %zu MB\n", total_mb);
        return 1;
    }
    memset(buf, 1, total + 4096 * 4);
    struct read_ctx rc = {buf, total, {0}};
    const double bw_all = read_gbs(pool_all, &rc, reps);
    const double bw_one = read_gbs(pool_one, &rc, reps);
    printf("threads %u, working set %zu MB, median of %d passes\n",
           ft_threadpool_size(pool_all), total_mb, reps);
    printf("DRAM read bandwidth: %.1f GB/s all threads, %.1f GB/s one thread\n\n", bw_all, bw_one);
    printf("decode matvec, %u x %u matrices (n_tok 1)\n", ROWS, COLS);
    printf("%-6s %10s %10s %10s %10s %10s\n", "format", "MB", "1T GB/s", "1T frac", "nT GB/s",
           "nT frac");

    float x[4 * COLS], row[COLS];
    unsigned long long s = 88172645463325252ull;
    for (int i = 0; i < 4 * COLS; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x[i] = (float)((double)(s >> 11) * 0x1.0p-53 - 0.5);
    }
    const ft_dtype_t fmts[] = {FT_DTYPE_F32,  FT_DTYPE_F16,  FT_DTYPE_BF16,  FT_DTYPE_Q8_0,
                               FT_DTYPE_Q4_0, FT_DTYPE_Q4_K, FT_DTYPE_Q6_K,  FT_DTYPE_MXFP4,
                               FT_DTYPE_NVFP4, FT_DTYPE_FP8};
    for (size_t f = 0; f < sizeof(fmts) / sizeof(fmts[0]); f++) {
        uint64_t rb;
        ft_dtype_row_bytes(fmts[f], COLS, &rb);
        const size_t mat_bytes = rb * ROWS, n_mats = total / mat_bytes;
        /* One quantized matrix, copied over the whole set: realistic bytes,
         * without minutes of K-quant fitting. */
        for (uint32_t r = 0; r < ROWS; r++) {
            for (int c = 0; c < COLS; c++)
                row[c] = x[(r * 7 + c) % (4 * COLS)] * 0.1f;
            ft_quantize_row(fmts[f], row, buf + r * rb, COLS);
        }
        for (size_t m = 1; m < n_mats; m++)
            memcpy(buf + m * mat_bytes, buf, mat_bytes);
        const double one = mm_gbs(pool_one, fmts[f], buf, rb, n_mats, x, reps);
        const double all = mm_gbs(pool_all, fmts[f], buf, rb, n_mats, x, reps);
        printf("%-6s %10.0f %10.1f %10.2f %10.1f %10.2f\n", ft_dtype_name(fmts[f]),
               (double)(mat_bytes * n_mats) / 1e6, one, one / bw_all, all, all / bw_all);
    }
    free(buf);
    ft_threadpool_destroy(pool_one);
    ft_threadpool_destroy(pool_all);
    return 0;
}
