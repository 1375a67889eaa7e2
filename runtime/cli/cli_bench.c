/* ft bench: prefill and decode speed, as medians of several runs, with the
 * weight bytes one decoded token reads and the share of this machine's DRAM
 * read bandwidth, measured in the same run. */
#include "cli.h"

#include "base/membw.h"
#include "base/threadpool.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct ft_bench_opts {
    const char *bundle;
    uint32_t n_prompt, n_gen, reps, n_threads;
    int json;
} ft_bench_opts_t;

static int ft_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Deterministic token ids that avoid the special tokens at the end of the
 * vocabulary, so runs are comparable. */
static void ft_bench_tokens(int32_t *ids, uint32_t n, uint32_t vocab)
{
    uint64_t x = 0x2545f4914f6cdd1dull;
    uint32_t range = vocab > 64 ? vocab - 64 : vocab;
    for (uint32_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        ids[i] = (int32_t)(x % range);
    }
}

static ft_status_t ft_bench_run(ft_engine_t *e, const ft_bench_opts_t *o, double *prefill, double *decode)
{
    const uint32_t vocab = ft_engine_info(e)->vocab_size;
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = o->n_prompt + o->n_gen + 1;
    so.n_batch = o->n_prompt;
    ft_session_t *s = NULL;
    int32_t *ids = malloc(((size_t)o->n_prompt + o->n_gen) * sizeof(int32_t));
    if (!ids)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    ft_bench_tokens(ids, o->n_prompt + o->n_gen, vocab);
    ft_status_t st = ft_session_create(e, &so, &s);
    for (uint32_t r = 0; r < o->reps && !st; r++) {
        st = ft_session_rewind(s, 0);
        double t0 = ft_cli_now();
        if (!st)
            st = ft_session_eval(s, ids, o->n_prompt, NULL);
        double t1 = ft_cli_now();
        /* Decode feeds fixed ids: sampling is not what is measured. */
        for (uint32_t i = 0; i < o->n_gen && !st; i++)
            st = ft_session_eval(s, &ids[o->n_prompt + i], 1, NULL);
        double t2 = ft_cli_now();
        prefill[r] = o->n_prompt / (t1 - t0);
        decode[r] = o->n_gen / (t2 - t1);
        if (!o->json && isatty(2))
            fprintf(stderr, "\rrun %u/%u: prefill %.1f tok/s, decode %.2f tok/s   ", r + 1, o->reps,
                    prefill[r], decode[r]);
    }
    if (!o->json && isatty(2))
        fputc('\n', stderr);
    ft_session_destroy(s);
    free(ids);
    return st;
}

static int ft_bench_parse(int argc, char **argv, ft_bench_opts_t *o)
{
    static const struct option longopts[] = {
        {"prompt", required_argument, 0, 'p'}, {"gen", required_argument, 0, 'g'},
        {"reps", required_argument, 0, 'r'},   {"threads", required_argument, 0, 't'},
        {"json", no_argument, 0, 'j'},         {0, 0, 0, 0}};
    *o = (ft_bench_opts_t){.n_prompt = 512, .n_gen = 128, .reps = 3};
    ft_status_t st = FT_OK;
    int c;
    while (!st && (c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'p': st = ft_cli_parse_u32("--prompt", optarg, &o->n_prompt); break;
        case 'g': st = ft_cli_parse_u32("--gen", optarg, &o->n_gen); break;
        case 'r': st = ft_cli_parse_u32("--reps", optarg, &o->reps); break;
        case 't': st = ft_cli_parse_u32("--threads", optarg, &o->n_threads); break;
        case 'j': o->json = 1; break;
        default: return 2;
        }
    }
    if (!st && (o->n_prompt == 0 || o->n_gen == 0 || o->reps == 0 || o->reps > 100))
        st = ft_status_make(FT_STATUS_INVALID_ARGUMENT, "--prompt and --gen must be positive, --reps 1..100");
    if (st) {
        ft_cli_fail(st);
        return 2;
    }
    if (optind + 1 != argc) {
        fputs("ft bench: one BUNDLE is needed\n", stderr);
        return 2;
    }
    o->bundle = argv[optind];
    return 0;
}

int ft_cli_bench(int argc, char **argv)
{
    ft_bench_opts_t o;
    int rc = ft_bench_parse(argc, argv, &o);
    if (rc)
        return rc;
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.n_threads = o.n_threads;
    ft_engine_t *e = NULL;
    ft_threadpool_t *pool = NULL;
    ft_membw_result_t bw;
    double *pre = calloc(o.reps, sizeof(double)), *dec = calloc(o.reps, sizeof(double));
    ft_status_t st = pre && dec ? FT_OK : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!st)
        st = ft_engine_open(o.bundle, &eo, &e);
    if (!st)
        st = ft_threadpool_create(ft_engine_info(e)->n_threads, &pool);
    if (!st)
        st = ft_membw_measure(pool, 512ull << 20, 5, &bw);
    if (!st)
        st = ft_bench_run(e, &o, pre, dec);
    if (!st) {
        const ft_model_info_t *mi = ft_engine_info(e);
        qsort(pre, o.reps, sizeof(double), ft_cmp_double);
        qsort(dec, o.reps, sizeof(double), ft_cmp_double);
        const double p = pre[o.reps / 2], d = dec[o.reps / 2];
        const double achieved = (double)mi->weight_bytes_per_token * d / 1e9;
        const double frac = achieved / bw.median_gbs;
        if (o.json)
            printf("{\"backend\": \"cpu\", \"n_threads\": %u, \"prefill_tokens\": %u, \"decode_tokens\": %u, "
                   "\"reps\": %u, \"prefill_tok_s\": %.3f, \"prefill_tok_s_min\": %.3f, "
                   "\"prefill_tok_s_max\": %.3f, \"decode_tok_s\": %.3f, \"decode_tok_s_min\": %.3f, "
                   "\"decode_tok_s_max\": %.3f, \"weight_bytes_per_token\": %llu, "
                   "\"weight_bytes\": %llu, \"achieved_gbs\": %.3f, \"dram_read_gbs\": %.3f, "
                   "\"dram_fraction\": %.4f}\n",
                   mi->n_threads, o.n_prompt, o.n_gen, o.reps, p, pre[0], pre[o.reps - 1], d, dec[0],
                   dec[o.reps - 1], (unsigned long long)mi->weight_bytes_per_token,
                   (unsigned long long)mi->weight_bytes, achieved, bw.median_gbs, frac);
        else
            printf("model      %s, %u layers, %u/%u experts, %.2f GB of weights\n"
                   "threads    %u\n"
                   "prefill    %.1f tok/s (median of %u runs of %u tokens; %.1f..%.1f)\n"
                   "decode     %.2f tok/s (median of %u runs of %u tokens; %.2f..%.2f)\n"
                   "weights    %.1f MB read per decoded token -> %.2f GB/s\n"
                   "DRAM       %.2f GB/s read bandwidth measured now (median of %u runs)\n"
                   "fraction   %.0f%% of DRAM bandwidth at decode\n",
                   mi->arch, mi->n_layers, mi->n_experts_used, mi->n_experts, mi->weight_bytes / 1e9,
                   mi->n_threads, p, o.reps, o.n_prompt, pre[0], pre[o.reps - 1], d, o.reps, o.n_gen,
                   dec[0], dec[o.reps - 1], mi->weight_bytes_per_token / 1e6, achieved, bw.median_gbs,
                   bw.n_runs, 100.0 * frac);
    }
    free(pre);
    free(dec);
    ft_threadpool_destroy(pool);
    ft_engine_close(e);
    return st ? ft_cli_fail(st) : 0;
}
