/* codegen_bench: generated CPU kernels against the reference kernels, at
 * decode (n_tok = 1) and prefill (n_tok = 64) shapes, for Q8_0 and Q4_K
 * or the formats --formats lists.
 *
 * For each format it emits and compiles a module for this machine's ISA
 * with one matmul kernel of the bench shape (expert-sized, 512 x 1024 and
 * 2048 x 1024 for prefill), builds matrices totalling --mb megabytes (far
 * larger than the caches), and runs each product the way the forward pass
 * does: prepared activations, rows split over the pool's threads. It
 * reports weight bytes streamed per second (GB/s) for both tiers and their
 * fraction of the DRAM read bandwidth measured in the same run.
 *
 * With an AVX-512 module, Q8_0 is also run with its rows interleaved by 16
 * as ftc stores them for that module (runtime/format/wlayout.h), as the
 * row "q8_0_r16" (its speedup is against the generated Q8_0 rows kernel).
 * Prefill rows also give the multiply-accumulates per second (GMAC/s).
 *
 * Usage: codegen_bench [--threads N] [--mb MB] [--reps R] [--formats q5_k,iq2_xxs,...]
 * A benchmark, not a test: it checks nothing. */
#include "cg_cpu.h"
#include "cg_cpu_internal.h"
#include "../../runtime/backends/cpu/cpu_module.h"
#include "../../runtime/base/membw.h"
#include "../../runtime/base/threadpool.h"
#include "../../runtime/format/convert.h"
#include "../../runtime/format/wlayout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct job {
    ft_dtype_t t;
    const uint8_t *w;
    size_t rb;
    const uint8_t *xp;
    uint32_t n_tok, rows, cols;
    float *y;
    ft_kabi_matmul_fn fn; /* NULL: reference */
} job_t;

static void run_job(void *ctx, uint32_t ti, uint32_t nt)
{
    const job_t *j = ctx;
    uint64_t b, e;
    ft_split_range(j->rows, 4, ti, nt, &b, &e);
    if (b >= e)
        return;
    if (j->fn)
        j->fn(j->w, j->rb, j->xp, j->n_tok, (uint32_t)b, (uint32_t)e, j->y, j->rows);
    else
        ft_cpu_matmul(j->t, j->w, j->rb, j->xp, j->n_tok, j->cols, (uint32_t)b, (uint32_t)e, j->y, j->rows);
}

/* GB/s of weights over n_mats matrices, best of reps passes. */
static double bench(ft_threadpool_t *pool, job_t *j, const uint8_t *wall, uint32_t n_mats, int reps)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        const double t0 = now_s();
        for (uint32_t m = 0; m < n_mats; m++) {
            j->w = wall + (size_t)m * j->rb * j->rows;
            ft_threadpool_run(pool, run_job, j);
        }
        const double dt = now_s() - t0;
        best = dt < best ? dt : best;
    }
    return (double)j->rb * j->rows * n_mats / best / 1e9;
}

int main(int argc, char **argv)
{
    uint32_t threads = 2, mb = 256;
    int reps = 5;
    ft_dtype_t fmts[FT_DTYPE_COUNT] = {FT_DTYPE_Q8_0, FT_DTYPE_Q4_K};
    int n_fmts = 2;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--formats")) {
            n_fmts = 0;
            char buf[512];
            snprintf(buf, sizeof(buf), "%s", argv[i + 1]);
            for (char *tok = strtok(buf, ","); tok && n_fmts < FT_DTYPE_COUNT; tok = strtok(NULL, ",")) {
                const ft_dtype_t t = ft_dtype_from_name(tok);
                if (!ft_cg_cpu_format_supported(t)) {
                    fprintf(stderr, "codegen_bench: '%s' has no generated kernels\n", tok);
                    return 2;
                }
                fmts[n_fmts++] = t;
            }
        }
        if (!strcmp(argv[i], "--threads")) threads = (uint32_t)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--mb")) mb = (uint32_t)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    }
    ft_threadpool_t *pool = NULL;
    ft_membw_result_t bw;
    if (ft_threadpool_create(threads, &pool) || ft_membw_measure(pool, 512ull << 20, 5, NULL, &bw)) {
        fprintf(stderr, "codegen_bench: setup failed\n");
        return 1;
    }
    const char *isa = ft_cg_cpu_host_isa();
    printf("ISA %s, %u threads, DRAM read %.1f GB/s (median of %u)\n", isa, threads, bw.median_gbs, bw.n_runs);
    printf("%-8s %-8s %5s %10s %10s %8s %8s %7s\n", "format", "phase", "n_tok", "ref GB/s", "gen GB/s",
           "ref %bw", "gen %bw", "speedup");
    for (int f = 0; f < n_fmts; f++) {
        const ft_dtype_t t = fmts[f];
        const uint32_t cols = 1024, rows_dec = 512, rows_pre = 2048;
        const ft_cg_kreq_t reqs[] = {{FT_KABI_OP_MATMUL, t, 0, rows_dec, cols}, {FT_KABI_OP_MATMUL, t, 0, rows_pre, cols}};
        char *src = NULL;
        uint8_t *so = NULL;
        size_t len = 0;
        ft_cpu_module_t *mod = NULL;
        ft_status_t st = ft_cg_cpu_emit_kernels(reqs, 2, isa, NULL, 0, &src);
        if (!st) st = ft_cg_cpu_build(src, isa, &so, &len);
        if (!st) st = ft_cpu_module_load(so, len, &mod);
        if (st) {
            fprintf(stderr, "codegen_bench: %s\n", ft_status_message(st));
            return 1;
        }
        uint64_t rb64 = 0;
        ft_dtype_row_bytes(t, cols, &rb64);
        const size_t rb = (size_t)rb64;
        const size_t total = (size_t)mb << 20;
        const size_t nrows_all = total / rb;
        uint8_t *w = malloc(nrows_all * rb);
        float *row = malloc(cols * sizeof(float));
        for (size_t r = 0; r < nrows_all; r++) {
            for (uint32_t c = 0; c < cols; c++)
                row[c] = (float)((r * 31 + c * 17) % 255) / 127.0f - 1.0f;
            ft_quantize_row(t, row, w + r * rb, cols);
        }
        /* Q8_0 on AVX-512: the interleaved rows too (all matrices' rows are
         * multiples of 16, so the whole buffer repacks group by group) */
        ft_cpu_module_t *mod16 = NULL;
        uint8_t *w16 = NULL;
        if (t == FT_DTYPE_Q8_0 && !strcmp(isa, "avx512")) {
            const ft_cg_kreq_t r16[] = {{FT_KABI_OP_MATMUL, t | FT_KABI_LAYOUT_R16, 0, rows_dec, cols},
                                        {FT_KABI_OP_MATMUL, t | FT_KABI_LAYOUT_R16, 0, rows_pre, cols}};
            char *src16 = NULL;
            uint8_t *so16 = NULL;
            size_t len16 = 0;
            st = ft_cg_cpu_emit_kernels(r16, 2, isa, NULL, 0, &src16);
            if (!st) st = ft_cg_cpu_build(src16, isa, &so16, &len16);
            if (!st) st = ft_cpu_module_load(so16, len16, &mod16);
            if (st) {
                fprintf(stderr, "codegen_bench: %s\n", ft_status_message(st));
                return 1;
            }
            free(src16), free(so16);
            w16 = malloc(nrows_all * rb);
            for (size_t r = 0; r + 16 <= nrows_all; r += 16)
                ft_wlayout_pack_group(FT_WLAYOUT_Q8_0_R16, w + r * rb, rb, w16 + r * rb);
        }
        const uint32_t ntoks[2] = {1, 64};
        for (int ph = 0; ph < 2; ph++) {
            const uint32_t nt = ntoks[ph], rows = ph ? rows_pre : rows_dec;
            const uint32_t n_mats = (uint32_t)(nrows_all / rows);
            float *x = malloc((size_t)nt * cols * sizeof(float));
            for (size_t i = 0; i < (size_t)nt * cols; i++)
                x[i] = (float)(i % 97) / 48.0f - 1.0f;
            uint8_t *xp = malloc(ft_cpu_act_row_bytes(t, cols) * nt);
            float *y = malloc((size_t)nt * rows * sizeof(float));
            ft_cpu_act_prepare(t, x, cols, nt, cols, xp);
            job_t j = {t, NULL, rb, xp, nt, rows, cols, y, NULL};
            const int r = ph ? 1 : reps;
            const double ref = bench(pool, &j, w, ph ? n_mats / 4 : n_mats, r);
            j.fn = ft_cpu_module_find_matmul(mod, t, rows, cols);
            const double gen = bench(pool, &j, w, ph ? n_mats / 4 : n_mats, r);
            printf("%-8s %-8s %5u %10.2f %10.2f %7.0f%% %7.0f%% %6.2fx", ft_dtype_name(t),
                   ph ? "prefill" : "decode", nt, ref, gen, 100 * ref / bw.median_gbs,
                   100 * gen / bw.median_gbs, gen / ref);
            if (ph) /* MACs per weight byte: cols * nt / (rb * ... ) per row */
                printf("  %.0f GMAC/s", gen * (double)cols * nt / (double)rb);
            putchar('\n');
            if (mod16) {
                j.fn = ft_cpu_module_find_matmul(mod16, t | FT_KABI_LAYOUT_R16, rows, cols);
                const double g16 = bench(pool, &j, w16, ph ? n_mats / 4 : n_mats, r);
                printf("%-8s %-8s %5u %10s %10.2f %8s %7.0f%% %6.2fx", "q8_0_r16", ph ? "prefill" : "decode", nt,
                       "", g16, "", 100 * g16 / bw.median_gbs, g16 / gen);
                if (ph)
                    printf("  %.0f GMAC/s", g16 * (double)cols * nt / (double)rb);
                putchar('\n');
            }
            free(x), free(xp), free(y);
        }
        ft_cpu_module_free(mod);
        ft_cpu_module_free(mod16);
        free(w), free(w16), free(row), free(so), free(src);
    }
    ft_threadpool_destroy(pool);
    return 0;
}
