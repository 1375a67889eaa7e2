/* ft bench: prefill and decode speed, as medians of several runs, with the
 * weight bytes one decoded token reads and the share of this machine's DRAM
 * read bandwidth, measured in the same run. With --json the object ends
 * with the record of what produced it (cli_bench_info.h). */
#include "cli.h"
#include "cli_bench_info.h"

#include "base/membw.h"
#include "base/threadpool.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct ft_bench_opts {
    const char *bundle;
    uint32_t n_prompt, n_gen, reps;
    int json;
    ft_engine_options_t eo;
    uint32_t replan_at;   /* decode token after which the budget changes; 0: never */
    uint64_t replan_vram;
    uint32_t parallel;    /* --parallel N: N sessions decoding at once (cli_bench_parallel.c) */
    int agent_edit;       /* --agent-edit: an agent's edit of its context (cli_bench_agent.c) */
    uint32_t ctx;         /* --ctx N: that conversation's tokens */
} ft_bench_opts_t;

/* What the sim backend modelled, over all reps. */
typedef struct ft_bench_sim {
    double prefill_s, decode_s;       /* modelled device seconds */
    uint64_t streamed;                /* experts served by whole-layer streaming in prefill */
    uint64_t prefill_tok, decode_tok;
    ft_engine_stats_t decode;         /* decode-phase counters, summed */
    uint32_t replans;
    uint64_t kv_bytes;                /* the session's KV cache after the prompt (ft_session_kv_bytes) */
} ft_bench_sim_t;

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

static void ft_bench_add(ft_engine_stats_t *sum, const ft_engine_stats_t *x)
{
    sum->expert_hits += x->expert_hits;
    sum->expert_misses += x->expert_misses;
    sum->misses_to_gpu += x->misses_to_gpu;
    sum->misses_to_cpu += x->misses_to_cpu;
    sum->experts_streamed += x->experts_streamed;
    sum->bytes_copied += x->bytes_copied;
    sum->order_violations += x->order_violations;
    sum->n_slots = x->n_slots;
    sum->vram_bytes = x->vram_bytes;
    sum->predicted_decode_tok_s = x->predicted_decode_tok_s;
    sum->predicted_prefill_tok_s = x->predicted_prefill_tok_s;
    sum->prefill_stream_tokens = x->prefill_stream_tokens;
    sum->plan_stored = x->plan_stored;
}

FT_WARN_UNUSED static ft_status_t ft_bench_run(ft_engine_t *e, const ft_bench_opts_t *o, double *prefill, double *decode,
                                ft_bench_sim_t *sim)
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
        ft_engine_stats_t es;
        ft_engine_reset_stats(e);
        double t0 = ft_cli_now();
        if (!st)
            st = ft_session_eval(s, ids, o->n_prompt, NULL);
        double t1 = ft_cli_now();
        if (!st) /* the pages the prompt took (cpu, sim), or the device's cache (cuda) */
            sim->kv_bytes = ft_session_kv_bytes(s);
        ft_engine_stats(e, &es);
        sim->prefill_s += es.device_seconds;
        sim->streamed += es.experts_streamed;
        sim->prefill_tok += o->n_prompt;
        ft_engine_reset_stats(e);
        /* Decode feeds fixed ids: sampling is not what is measured. */
        for (uint32_t i = 0; i < o->n_gen && !st; i++) {
            if (r == 0 && o->replan_at && i == o->replan_at) {
                st = ft_engine_replan(e, o->replan_vram);
                sim->replans += !st;
                if (st)
                    break;
            }
            st = ft_session_eval(s, &ids[o->n_prompt + i], 1, NULL);
        }
        double t2 = ft_cli_now();
        ft_engine_stats(e, &es);
        sim->decode_s += es.device_seconds;
        sim->decode_tok += o->n_gen;
        ft_bench_add(&sim->decode, &es);
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

/* The sim backend's report: modelled (predicted) speeds on the profiled
 * machine, with the cache's behaviour. */
/* info: the JSON record's members (ft_cli_bench_info), with --json. */
static void ft_bench_print_sim(const ft_bench_opts_t *o, const ft_engine_t *e,
                               const ft_bench_sim_t *sim, const char *info)
{
    const ft_model_info_t *mi = ft_engine_info(e);
    const ft_engine_stats_t *d = &sim->decode;
    const double lookups = (double)(d->expert_hits + d->expert_misses);
    const double hit_rate = lookups > 0 ? (double)d->expert_hits / lookups : 0.0;
    const double pre = sim->prefill_s > 0 ? sim->prefill_tok / sim->prefill_s : 0.0;
    const double dec = sim->decode_s > 0 ? sim->decode_tok / sim->decode_s : 0.0;
    const double copied = sim->decode_tok ? (double)d->bytes_copied / sim->decode_tok : 0.0;
    const double per_tok_ms = sim->decode_tok ? 1e3 * sim->decode_s / sim->decode_tok : 0.0;
    if (o->json) {
        printf("{\"backend\": \"sim\", \"predicted\": true, \"kernels\": \"%s\", \"hw\": ", mi->kernels);
        const char *hw = o->eo.hw_profile ? o->eo.hw_profile : "(the bundle's)";
        ft_cli_json_string(stdout, hw, strlen(hw));
        printf(", \"plan\": \"%s\", \"vram_bytes\": %llu, \"n_slots\": %u, \"prefill_tokens\": %u, "
               "\"decode_tokens\": %u, "
               "\"reps\": %u, \"prefill_tok_s\": %.3f, \"decode_tok_s\": %.3f, "
               "\"modelled_ms_per_token\": %.4f, "
               "\"hit_rate\": %.4f, \"misses_to_gpu\": %llu, \"misses_to_cpu\": %llu, "
               "\"bytes_copied_per_token\": %.1f, \"order_violations\": %llu, \"replans\": %u, "
               "\"planner_decode_tok_s\": %.3f, \"planner_prefill_tok_s\": %.3f, "
               "\"weight_bytes_per_token\": %llu, \"prefill_stream_tokens\": %u, "
               "\"prefill_experts_streamed\": %llu, \"kv_bytes\": %llu%s}\n",
               d->plan_stored ? "stored" : "solved", (unsigned long long)d->vram_bytes, d->n_slots,
               o->n_prompt, o->n_gen, o->reps, pre, dec, per_tok_ms, hit_rate,
               (unsigned long long)d->misses_to_gpu, (unsigned long long)d->misses_to_cpu, copied,
               (unsigned long long)d->order_violations, sim->replans, d->predicted_decode_tok_s,
               d->predicted_prefill_tok_s, (unsigned long long)mi->weight_bytes_per_token,
               d->prefill_stream_tokens, (unsigned long long)sim->streamed,
               (unsigned long long)sim->kv_bytes, info);
        return;
    }
    char stream_at[32] = "no";
    if (d->prefill_stream_tokens != UINT32_MAX)
        snprintf(stream_at, sizeof(stream_at), "%u+", d->prefill_stream_tokens > 2 ? d->prefill_stream_tokens : 2);
    printf("PREDICTED on %s (sim backend: a model of that machine, not a measurement)\n"
           "kernels    %s (numerics on this CPU)\n"
           "vram       %.1f MiB budget, %u expert slots\n"
           "prefill    %.1f tok/s predicted (%u-token prompt)\n"
           "decode     %.2f tok/s predicted (%.3f ms per token; planner alone: %.2f)\n"
           "cache      %.1f%% hit rate; misses: %llu copied to the GPU, %llu computed on the CPU\n"
           "pcie       %.2f MB copied per decoded token\n"
           "ordering   %llu kernels read a slot before its copy completed (must be 0)\n"
           "streaming  prefill batches of %s tokens stream whole layers (%llu experts streamed)\n",
           o->eo.hw_profile ? o->eo.hw_profile : "the machine the bundle was compiled for", mi->kernels, d->vram_bytes / 1048576.0, d->n_slots, pre, o->n_prompt, dec, per_tok_ms,
           d->predicted_decode_tok_s, 100.0 * hit_rate, (unsigned long long)d->misses_to_gpu,
           (unsigned long long)d->misses_to_cpu, copied / 1e6, (unsigned long long)d->order_violations,
           stream_at, (unsigned long long)sim->streamed);
    if (sim->replans)
        printf("re-plan    the budget changed to %.1f MiB after %u decoded tokens\n",
               o->replan_vram / 1048576.0, o->replan_at);
}

/* The cuda backend's report: measured speeds (medians of the reps, wall
 * clock) and the offload counters of the decode phase. */
static void ft_bench_print_cuda(const ft_bench_opts_t *o, const ft_engine_t *e,
                                const ft_bench_sim_t *sim, double pre, double dec, const char *info)
{
    const ft_model_info_t *mi = ft_engine_info(e);
    const ft_engine_stats_t *d = &sim->decode;
    const double lookups = (double)(d->expert_hits + d->expert_misses);
    const double hit_rate = lookups > 0 ? (double)d->expert_hits / lookups : 0.0;
    const double copied = sim->decode_tok ? (double)d->bytes_copied / sim->decode_tok : 0.0;
    const double step_ms = sim->decode_tok ? 1e3 * sim->decode_s / sim->decode_tok : 0.0;
    if (o->json) {
        printf(
            "{\"backend\": \"cuda\", \"predicted\": false, \"cpu_expert_kernels\": \"reference\", "
            "\"plan\": \"%s\", "
            "\"vram_bytes\": %llu, "
            "\"n_slots\": %u, \"prefill_tokens\": %u, \"decode_tokens\": %u, \"reps\": %u, "
            "\"prefill_tok_s\": %.3f, \"decode_tok_s\": %.3f, \"measured_ms_per_token\": %.4f, "
            "\"hit_rate\": %.4f, \"misses_to_gpu\": %llu, \"misses_to_cpu\": %llu, "
            "\"bytes_copied_per_token\": %.1f, \"replans\": %u, \"weight_bytes_per_token\": %llu, "
            "\"prefill_stream_tokens\": %u, \"prefill_experts_streamed\": %llu, \"kv_bytes\": "
            "%llu%s}\n",
            d->plan_stored ? "stored" : "solved", (unsigned long long)d->vram_bytes, d->n_slots,
            o->n_prompt, o->n_gen, o->reps, pre, dec, step_ms, hit_rate,
            (unsigned long long)d->misses_to_gpu, (unsigned long long)d->misses_to_cpu, copied,
            sim->replans, (unsigned long long)mi->weight_bytes_per_token, d->prefill_stream_tokens,
            (unsigned long long)sim->streamed, (unsigned long long)sim->kv_bytes, info);
        return;
    }
    printf("MEASURED on the cuda backend (experts the CPU computes run the reference kernels)\n"
           "vram       %.1f MiB budget, %u expert slots\n"
           "prefill    %.1f tok/s (median of %u runs of %u tokens)\n"
           "decode     %.2f tok/s (median of %u runs of %u tokens; %.3f ms per step on the device path)\n"
           "cache      %.1f%% hit rate; misses: %llu copied to the GPU, %llu computed on the CPU\n"
           "pcie       %.2f MB copied per decoded token\n"
           "streaming  %llu experts streamed in prefill\n",
           d->vram_bytes / 1048576.0, d->n_slots, pre, o->reps, o->n_prompt, dec, o->reps, o->n_gen,
           step_ms, 100.0 * hit_rate, (unsigned long long)d->misses_to_gpu, (unsigned long long)d->misses_to_cpu,
           copied / 1e6, (unsigned long long)sim->streamed);
}

/* 0 when parsed, -1 when the help was asked for, else the exit code. */
static int ft_bench_parse(int argc, char **argv, ft_bench_opts_t *o)
{
    static const struct option longopts[] = {
        {"prompt", required_argument, 0, 'p'}, {"gen", required_argument, 0, 'g'},
        {"reps", required_argument, 0, 'r'},   {"json", no_argument, 0, 'j'},
        {"replan-at", required_argument, 0, 'R'}, {"parallel", required_argument, 0, 'P'},
        {"agent-edit", no_argument, 0, 'A'},   {"ctx", required_argument, 0, 'C'},
        FT_CLI_ENGINE_LONGOPTS, {0, 0, 0, 0}};
    *o = (ft_bench_opts_t){.n_prompt = 512, .n_gen = 128, .reps = 3, .ctx = 4096};
    ft_engine_options_init(&o->eo);
    char *colon;
    ft_status_t st = FT_OK;
    int c;
    while (!st && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'p': st = ft_cli_parse_u32("--prompt", optarg, &o->n_prompt); break;
        case 'g': st = ft_cli_parse_u32("--gen", optarg, &o->n_gen); break;
        case 'r': st = ft_cli_parse_u32("--reps", optarg, &o->reps); break;
        case 'j': o->json = 1; break;
        case 'P': st = ft_cli_parse_u32("--parallel", optarg, &o->parallel); break;
        case 'A': o->agent_edit = 1; break;
        case 'C': st = ft_cli_parse_u32("--ctx", optarg, &o->ctx); break;
        case 'h':
            ft_cli_print_help("bench");
            return -1;
        case 'R':
            colon = strchr(optarg, ':');
            if (!colon) {
                st = ft_status_make(FT_STATUS_INVALID_ARGUMENT, "--replan-at: expected N:SIZE, e.g. 64:2G");
                break;
            }
            *colon = 0;
            if (!(st = ft_cli_parse_u32("--replan-at", optarg, &o->replan_at)))
                st = ft_cli_parse_size("--replan-at", colon + 1, &o->replan_vram);
            if (!st && o->replan_at == 0)
                st = ft_status_make(FT_STATUS_INVALID_ARGUMENT, "--replan-at: N must be positive");
            break;
        default:
            if (!ft_cli_engine_option(c, optarg, &o->eo, &st))
                return 2;
        }
    }
    if (!st && o->agent_edit && (o->parallel || o->ctx < 64))
        st = ft_status_make(FT_STATUS_INVALID_ARGUMENT, "--agent-edit: --ctx of at least 64 tokens, no --parallel");
    if (!st && o->parallel > 1024)
        st = ft_status_make(FT_STATUS_INVALID_ARGUMENT, "--parallel: at most 1024 sessions");
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
    char *argv_json = ft_cli_bench_argv_json(argc, argv); /* before getopt reorders argv */
    if (!argv_json) return ft_cli_fail(ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory"));
    int rc = ft_bench_parse(argc, argv, &o);
    if (rc) {
        free(argv_json);
        return rc < 0 ? 0 : rc;
    }
    ft_engine_options_t eo = o.eo;
    eo.plan_ctx = o.n_prompt + o.n_gen + 1;
    ft_engine_t *e = NULL;
    ft_threadpool_t *pool = NULL;
    ft_bench_sim_t sim = {0};
    ft_membw_result_t bw;
    char *info = NULL;
    double *pre = calloc(o.reps, sizeof(double)), *dec = calloc(o.reps, sizeof(double));
    ft_status_t st = pre && dec ? FT_OK : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!st && o.agent_edit) {
        eo.plan_ctx = o.ctx + 1024;
        if (!(st = ft_cli_open_engine(o.bundle, &eo, &e)))
            st = ft_cli_bench_agent(e, o.ctx, o.reps, o.json);
        goto out;
    }
    if (!st && o.parallel) {
        eo.max_running = o.parallel;
        if (!(st = ft_cli_open_engine(o.bundle, &eo, &e)))
            st = ft_cli_bench_parallel(e, o.parallel, o.n_prompt, o.n_gen, o.json);
        goto out;
    }
    if (!st)
        st = ft_cli_open_engine(o.bundle, &eo, &e);
    if (!st)
        st = ft_threadpool_create(ft_engine_info(e)->n_threads, &pool);
    if (!st)
        st = ft_membw_measure(pool, 512ull << 20, 5, NULL, &bw);
    if (!st)
        st = ft_bench_run(e, &o, pre, dec, &sim);
    if (!st && o.json) {
        const ft_bench_info_in_t in = {.bundle = o.bundle,
                                       .hw_path = eo.hw_profile,
                                       .hw_modelled = eo.backend != FT_BACKEND_CPU,
                                       .dram = &bw,
                                       .argv_json = argv_json};
        st = ft_cli_bench_info(&in, &info);
    }
    if (!st && eo.backend == FT_BACKEND_SIM) {
        ft_bench_print_sim(&o, e, &sim, info);
        goto out;
    }
    if (!st) {
        const ft_model_info_t *mi = ft_engine_info(e);
        qsort(pre, o.reps, sizeof(double), ft_cmp_double);
        qsort(dec, o.reps, sizeof(double), ft_cmp_double);
        const double p = pre[o.reps / 2], d = dec[o.reps / 2];
        if (eo.backend == FT_BACKEND_CUDA) {
            ft_bench_print_cuda(&o, e, &sim, p, d, info);
            goto out;
        }
        const double achieved = (double)mi->weight_bytes_per_token * d / 1e9;
        const double frac = achieved / bw.median_gbs;
        if (o.json)
            printf(
                "{\"backend\": \"cpu\", \"kernels\": \"%s\", \"n_threads\": %u, "
                "\"prefill_tokens\": %u, "
                "\"decode_tokens\": %u, "
                "\"reps\": %u, \"prefill_tok_s\": %.3f, \"prefill_tok_s_min\": %.3f, "
                "\"prefill_tok_s_max\": %.3f, \"decode_tok_s\": %.3f, \"decode_tok_s_min\": %.3f, "
                "\"decode_tok_s_max\": %.3f, \"weight_bytes_per_token\": %llu, "
                "\"weight_bytes\": %llu, \"achieved_gbs\": %.3f, \"dram_read_gbs\": %.3f, "
                "\"dram_fraction\": %.4f, \"kv_bytes\": %llu%s}\n",
                mi->kernels, mi->n_threads, o.n_prompt, o.n_gen, o.reps, p, pre[0], pre[o.reps - 1],
                d, dec[0], dec[o.reps - 1], (unsigned long long)mi->weight_bytes_per_token,
                (unsigned long long)mi->weight_bytes, achieved, bw.median_gbs, frac,
                (unsigned long long)sim.kv_bytes, info);
        else
            printf("model      %s, %u layers, %u/%u experts, %.2f GB of weights\n"
                   "kernels    %s\n"
                   "threads    %u\n"
                   "prefill    %.1f tok/s (median of %u runs of %u tokens; %.1f..%.1f)\n"
                   "decode     %.2f tok/s (median of %u runs of %u tokens; %.2f..%.2f)\n"
                   "weights    %.1f MB read per decoded token -> %.2f GB/s\n"
                   "DRAM       %.2f GB/s read bandwidth measured now (median of %u runs)\n"
                   "fraction   %.0f%% of DRAM bandwidth at decode\n",
                   mi->arch, mi->n_layers, mi->n_experts_used, mi->n_experts, mi->weight_bytes / 1e9,
                   mi->kernels, mi->n_threads, p, o.reps, o.n_prompt, pre[0], pre[o.reps - 1], d, o.reps, o.n_gen,
                   dec[0], dec[o.reps - 1], mi->weight_bytes_per_token / 1e6, achieved, bw.median_gbs,
                   bw.n_runs, 100.0 * frac);
    }
out:
    free(info);
    free(argv_json);
    free(pre);
    free(dec);
    ft_threadpool_destroy(pool);
    ft_status_free(ft_engine_close(e)); /* every session was destroyed: FT_OK */
    return st ? ft_cli_fail(st) : 0;
}
