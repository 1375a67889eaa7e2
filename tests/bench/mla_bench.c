/* mla_bench: one head of DeepSeek-V3's multi-head latent attention (q_nope
 * 128, RoPE 64, kv_lora 512, values 128) on one thread, the two paths the
 * executor can take per head once its W_kb / W_vb are widened:
 *
 *   ref  the reference op's forms (ft_op_mla_absorbed for a decode token;
 *        ft_op_mla_decompress + ft_op_mla_expanded for a prefill run),
 *        sums in double;
 *   gen  the module's generated kernel (kernel ABI 5, this host's ISA or
 *        --isa), float SIMD sums;
 *
 * at decode (one token over --keys cached positions) and for a prefill run
 * (--prefill tokens at the end of --keys positions). The variants run
 * alternately, --reps rounds, medians reported in microseconds per head (a
 * V3 layer has 128 heads, split over the pool). A benchmark, not a test:
 * it checks nothing (test_mla_gen checks the numerics).
 *
 * Usage: mla_bench [--keys N] [--prefill T] [--reps R] [--isa I] */
#include "cg_cpu.h"
#include "cg_cpu_internal.h"
#include "../../runtime/backends/cpu/cpu_module.h"
#include "../../runtime/exec/ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { NOPE = 128, ROPE = 64, R = 512, V = 128, MAX_REPS = 64 };

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_d);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    uint32_t keys = 4096, prefill = 64;
    int reps = 7;
    const char *isa = ft_cg_cpu_host_isa();
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--keys"))
            keys = (uint32_t)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--prefill"))
            prefill = (uint32_t)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--isa"))
            isa = argv[i + 1];
    }
    if (keys < 1 || prefill < 1 || prefill > keys || reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "mla_bench: need 1 <= --prefill <= --keys and 1 <= --reps <= %d\n",
                MAX_REPS);
        return 2;
    }
    const ft_cg_kreq_t req = {FT_KABI_OP_MLA, FT_KABI_FMT_F32, FT_KABI_MLA_AUX(ROPE, V), NOPE, R};
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
        fprintf(stderr, "mla_bench: %s\n", ft_status_message(st));
        return 1;
    }
    const ft_kabi_mla_fn fn = ft_cpu_module_find_mla(mod, NOPE, ROPE, R, V);
    const ft_mla_shape_t sh = {1, NOPE, ROPE, R, V, 0.1f};
    const size_t row = R + ROPE, hd = NOPE + ROPE;
    float *wk = malloc(sizeof(float) * NOPE * R), *wv = malloc(sizeof(float) * V * R),
          *q = malloc(sizeof(float) * prefill * hd), *g = malloc(sizeof(float) * keys * row),
          *kn = malloc(sizeof(float) * keys * NOPE), *vv = malloc(sizeof(float) * keys * V),
          *out = malloc(sizeof(float) * prefill * V),
          *scratch = malloc(sizeof(float) * ((size_t)keys * (NOPE + V + 1) + 2 * R));
    double *d = malloc(sizeof(double) * (2 * R + keys + V));
    uint32_t *n_keys = malloc(sizeof(uint32_t) * prefill);
    if (!wk || !wv || !q || !g || !kn || !vv || !out || !scratch || !d || !n_keys || !fn) return 1;
    srand(1);
    for (size_t i = 0; i < (size_t)NOPE * R; i++)
        wk[i] = (float)rand() / RAND_MAX - 0.5f;
    for (size_t i = 0; i < (size_t)V * R; i++)
        wv[i] = (float)rand() / RAND_MAX - 0.5f;
    for (size_t i = 0; i < prefill * hd; i++)
        q[i] = (float)rand() / RAND_MAX - 0.5f;
    for (size_t i = 0; i < keys * row; i++)
        g[i] = (float)rand() / RAND_MAX - 0.5f;
    double t_ref[2][MAX_REPS], t_gen[2][MAX_REPS];
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        ft_op_mla_absorbed(&sh, wk, wv, q, g, keys, d, out);
        t_ref[0][r] = now_s() - t0;
        n_keys[0] = keys;
        t0 = now_s();
        fn(wk, wv, q, hd, g, n_keys, 1, 0, sh.scale, scratch, out, V);
        t_gen[0][r] = now_s() - t0;
        t0 = now_s();
        ft_op_mla_decompress(&sh, wk, wv, g, keys, kn, vv);
        for (uint32_t t = 0; t < prefill; t++)
            ft_op_mla_expanded(&sh, q + t * hd, kn, vv, g, keys - prefill + t + 1, d, out + t * V);
        t_ref[1][r] = now_s() - t0;
        for (uint32_t t = 0; t < prefill; t++)
            n_keys[t] = keys - prefill + t + 1;
        t0 = now_s();
        fn(wk, wv, q, hd, g, n_keys, prefill, 1, sh.scale, scratch, out, V);
        t_gen[1][r] = now_s() - t0;
    }
    printf("MLA head (q_nope %d, RoPE %d, kv_lora %d, values %d), %u keys, 1 thread, isa %s, "
           "median of %d:\n",
           NOPE, ROPE, R, V, keys, isa, reps);
    printf("  decode (absorbed), 1 token:      ref %9.1f us  gen %9.1f us per head\n",
           1e6 * median(t_ref[0], reps), 1e6 * median(t_gen[0], reps));
    printf("  prefill (expanded), %3u tokens:  ref %9.1f us  gen %9.1f us per head and token\n",
           prefill, 1e6 * median(t_ref[1], reps) / prefill, 1e6 * median(t_gen[1], reps) / prefill);
    ft_cpu_module_free(mod);
    free(wk), free(wv), free(q), free(g), free(kn), free(vv), free(out), free(scratch), free(d),
        free(n_keys);
    return 0;
}
