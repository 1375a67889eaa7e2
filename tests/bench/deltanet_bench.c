/* deltanet_bench: one Gated DeltaNet layer at Qwen3.6's shape (32 value
 * heads over 16 key heads of 128, tiled, a conv of 4 taps) per token, the
 * paths the executor can take:
 *
 *   ref      the reference kernel, token by token (ft_op_deltanet_token,
 *            one thread: the executor's path without generated kernels);
 *   chunked  ft_op_deltanet_prepare + the chunked C form, heads on the
 *            pool (the generated path's form before ABI 4, for steps of
 *            16 tokens or more);
 *   gen      ft_op_deltanet_prepare + the module's generated recurrence
 *            (kernel ABI 4, this host's ISA), heads on the pool;
 *
 * at decode (1 token per call) and for a prefill step (--prefill tokens
 * per call), on --threads threads (and on one). The variants run
 * alternately, --reps rounds, and the medians are reported in ms per
 * token (the machine may be shared). A benchmark, not a test: it checks
 * nothing (test_deltanet_gen checks the numerics).
 *
 * Usage: deltanet_bench [--threads N] [--reps R] [--prefill T] [--isa I] */
#include "cg_cpu.h"
#include "cg_cpu_internal.h"
#include "../../runtime/backends/cpu/cpu_module.h"
#include "../../runtime/base/threadpool.h"
#include "../../runtime/exec/ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { HV = 32, HK = 16, HD = 128, KC = 4, MAX_REPS = 64 };

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

typedef struct bench {
    ft_deltanet_shape_t sh;
    size_t C, nst;
    float *conv, *dt, *A, *qkv, *b, *a, *state, *y, *g, *beta, *out, *scratch;
    uint32_t n, n_threads;
    ft_kabi_deltanet_fn fn;
} bench_t;

static void chunk_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    bench_t *c = ctx;
    const size_t sc = ft_deltanet_chunk_scratch_floats(&c->sh);
    for (uint32_t h = ti; h < HV; h += nt)
        ft_op_deltanet_chunked_head(&c->sh, h, c->y, c->g, c->beta, c->n, c->state,
                                    c->scratch + ti * sc, c->out);
}

static void gen_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    bench_t *c = ctx;
    const uint32_t h0 = HV * ti / nt, h1 = HV * (ti + 1) / nt;
    if (h0 < h1)
        c->fn(c->y, c->C, c->g, c->beta, c->n, h0, h1, c->state + (size_t)(KC - 1) * c->C, c->out,
              (size_t)HV * HD);
}

/* One call of variant v over tokens [t0, t0 + n) of the input; seconds. */
static double run(bench_t *c, ft_threadpool_t *pool, int v, uint32_t t0, uint32_t n)
{
    const float *x = c->qkv + (size_t)t0 * c->C, *b = c->b + (size_t)t0 * HV,
                *a = c->a + (size_t)t0 * HV;
    const double s = now_s();
    if (v == 0) {
        for (uint32_t t = 0; t < n; t++)
            ft_op_deltanet_token(&c->sh, c->conv, c->dt, c->A, x + (size_t)t * c->C,
                                 b + (size_t)t * HV, a + (size_t)t * HV, c->state, c->y,
                                 c->out + (size_t)t * HV * HD);
    } else {
        ft_op_deltanet_prepare(&c->sh, c->conv, c->dt, c->A, x, b, a, n, c->state, c->y, c->g,
                               c->beta);
        c->n = n;
        ft_threadpool_run(pool, v == 1 ? chunk_worker : gen_worker, c);
    }
    return now_s() - s;
}

int main(int argc, char **argv)
{
    uint32_t threads = 0, prefill = 64;
    int reps = 9;
    const char *isa = ft_cg_cpu_host_isa();
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads"))
            threads = (uint32_t)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--prefill"))
            prefill = (uint32_t)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--isa"))
            isa = argv[i + 1];
        else {
            fprintf(stderr,
                    "usage: deltanet_bench [--threads N] [--reps R] [--prefill T] [--isa I]\n");
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    if (reps > MAX_REPS) reps = MAX_REPS;
    if (prefill < 1 || prefill > 4096) prefill = 64;
    const ft_cg_kreq_t req = {FT_KABI_OP_DELTANET, FT_KABI_FMT_F32, HK | FT_KABI_DELTANET_TILED, HV,
                              HD};
    char *src = NULL;
    uint8_t *so = NULL;
    size_t len = 0;
    ft_cpu_module_t *mod = NULL;
    ft_status_t st = ft_cg_cpu_emit_kernels(&req, 1, isa, NULL, 0, &src);
    if (!st) st = ft_cg_cpu_build(src, isa, &so, &len);
    if (!st) st = ft_cpu_module_load(so, len, &mod);
    free(src);
    free(so);
    if (st) {
        fprintf(stderr, "deltanet_bench: module (%s): %s\n", isa, ft_status_message(st));
        return 1;
    }
    bench_t c = {.sh = {HV, HK, HD, KC, 1, 1e-6f}};
    c.C = ft_deltanet_channels(&c.sh);
    c.nst = ft_deltanet_state_bytes(&c.sh) / sizeof(float);
    c.fn = ft_cpu_module_find_deltanet(mod, HV, HK, 1, HD);
    const uint32_t n_in = prefill; /* input tokens, reused round after round */
    ft_threadpool_t *pool[2] = {NULL, NULL};
    if (ft_threadpool_create(1, &pool[0]) || ft_threadpool_create(threads, &pool[1])) {
        fprintf(stderr, "deltanet_bench: thread pool\n");
        return 1;
    }
    c.n_threads = ft_threadpool_size(pool[1]);
    const size_t sc = ft_deltanet_chunk_scratch_floats(&c.sh);
    c.conv = malloc(c.C * KC * sizeof(float));
    c.dt = malloc(HV * sizeof(float));
    c.A = malloc(HV * sizeof(float));
    c.qkv = malloc((size_t)n_in * c.C * sizeof(float));
    c.b = malloc((size_t)n_in * HV * sizeof(float));
    c.a = malloc((size_t)n_in * HV * sizeof(float));
    c.state = calloc(c.nst, sizeof(float));
    c.y = malloc((size_t)n_in * c.C * sizeof(float));
    c.g = malloc((size_t)n_in * HV * sizeof(float));
    c.beta = malloc((size_t)n_in * HV * sizeof(float));
    c.out = malloc((size_t)n_in * HV * HD * sizeof(float));
    c.scratch = malloc(c.n_threads * sc * sizeof(float));
    if (!c.fn || !c.conv || !c.dt || !c.A || !c.qkv || !c.b || !c.a || !c.state || !c.y || !c.g ||
        !c.beta || !c.out || !c.scratch) {
        fprintf(stderr, "deltanet_bench: no kernel or out of memory\n");
        return 1;
    }
    uint64_t r = 0x9e3779b97f4a7c15ull;
#define RND()                                                                                      \
    (r ^= r << 13, r ^= r >> 7, r ^= r << 17, (float)((r >> 40) & 0xffffff) / 8388608.0f - 1.0f)
    for (size_t i = 0; i < c.C * KC; i++)
        c.conv[i] = RND();
    for (size_t h = 0; h < HV; h++) {
        c.dt[h] = RND() * 0.5f;
        c.A[h] = -expf(RND() * 0.5f);
    }
    for (size_t i = 0; i < (size_t)n_in * c.C; i++)
        c.qkv[i] = RND();
    for (size_t i = 0; i < (size_t)n_in * HV; i++) {
        c.b[i] = RND();
        c.a[i] = RND() - 2.0f;
    }
#undef RND
    printf("deltanet_bench: %u value / %u key heads of %u, %u taps; isa %s; %u threads; %d rounds; "
           "ms per token per layer, medians\n",
           HV, HK, HD, KC, isa, c.n_threads, reps);
    /* rows: (tokens per call, threads); columns: ref, chunked, gen */
    static const char *const names[3] = {"ref", "chunked", "gen"};
    const uint32_t steps[2] = {1, prefill};
    for (int si = 0; si < 2; si++)
        for (int pi = 0; pi < 2; pi++) {
            const uint32_t n = steps[si];
            const uint32_t calls = n == 1 ? 16 : 1; /* decode: 16 tokens a round */
            double t[3][MAX_REPS];
            for (int rep = 0; rep < reps; rep++)
                for (int v = 0; v < 3; v++) {
                    memset(c.state, 0, c.nst * sizeof(float));
                    double s = 0.0;
                    for (uint32_t k = 0; k < calls; k++)
                        s += run(&c, pool[pi], v, (k * n) % n_in, n);
                    t[v][rep] = s / (calls * n) * 1e3;
                }
            printf("  %4u token%s per call, %2u thread%s:", n, n == 1 ? " " : "s",
                   pi ? c.n_threads : 1, pi && c.n_threads > 1 ? "s" : " ");
            for (int v = 0; v < 3; v++)
                printf("  %s %.3f", names[v], median(t[v], reps));
            printf("\n");
        }
    free(c.conv), free(c.dt), free(c.A), free(c.qkv), free(c.b), free(c.a), free(c.state);
    free(c.y), free(c.g), free(c.beta), free(c.out), free(c.scratch);
    ft_threadpool_destroy(pool[0]);
    ft_threadpool_destroy(pool[1]);
    ft_cpu_module_free(mod);
    return 0;
}
