/* ft bench --parallel N: N sessions decoding at once through the
 * scheduler, against one session decoding alone in the same run.
 *
 * Each session first evaluates its own prompt (not timed). Then one
 * request per session generates n_gen tokens greedily from the session's
 * logits (an empty prompt, no stop at end-of-generation): first one
 * session's request alone, then all N submitted together. Reported: the
 * decode speeds (generated tokens over wall time: single, and aggregate
 * over the N sessions), and the expert weight bytes the forward passes
 * read per scheduler step (ft_engine_stats_t.expert_bytes_read over
 * sched_steps) and per generated token. A step is one forward pass over
 * the N sessions' tokens (on cpu and sim; the cuda backend still runs them
 * one after another), so each routed expert and each dense weight is read
 * once per step for all of them: the bytes per token fall and the
 * aggregate rises as far as the experts the tokens choose overlap. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

typedef struct ft_par_phase {
    double tok_s;
    uint64_t steps, expert_bytes, tokens;
} ft_par_phase_t;

/* Generates n_gen tokens on each of sessions[0..n) at once. */
FT_WARN_UNUSED static ft_status_t ft_par_decode(ft_engine_t *e, ft_session_t **sessions,
                                                ft_sampler_t **smp, uint32_t n, uint32_t n_gen,
                                                ft_par_phase_t *out)
{
    ft_request_t **req = calloc(n, sizeof(*req));
    if (!req) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    ft_request_options_t ro;
    ft_request_options_init(&ro);
    ro.max_new_tokens = n_gen;
    ro.stop_at_eog = 0;
    ft_engine_reset_stats(e);
    ft_status_t st = FT_OK;
    const double t0 = ft_cli_now();
    for (uint32_t i = 0; i < n && !st; i++) {
        ft_sampler_reset(smp[i]);
        ro.sampler = smp[i];
        st = ft_request_submit(sessions[i], &ro, &req[i]);
    }
    out->tokens = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!req[i]) continue;
        ft_status_t w = ft_request_wait(req[i]);
        if (!st)
            st = w;
        else
            ft_status_free(w);
        out->tokens += ft_request_n_generated(req[i]);
        ft_request_release(req[i]);
    }
    const double t1 = ft_cli_now();
    free(req);
    ft_engine_stats_t es;
    ft_engine_stats(e, &es);
    out->tok_s = out->tokens / (t1 - t0);
    out->steps = es.sched_steps;
    out->expert_bytes = es.expert_bytes_read;
    return st;
}

/* Session i's prompt: different per session, clear of the special tokens. */
static void ft_par_prompt(int32_t *ids, uint32_t n, uint32_t i, uint32_t range)
{
    for (uint32_t t = 0; t < n; t++)
        ids[t] = (int32_t)(((uint64_t)t * 2654435761u + (uint64_t)i * 40503u + 7) % range);
}

static double ft_par_per_step(const ft_par_phase_t *p)
{
    return p->steps ? (double)p->expert_bytes / (double)p->steps : 0.0;
}

static double ft_par_per_token(const ft_par_phase_t *p)
{
    return p->tokens ? (double)p->expert_bytes / (double)p->tokens : 0.0;
}

ft_status_t ft_cli_bench_parallel(ft_engine_t *e, uint32_t n_par, uint32_t n_prompt, uint32_t n_gen,
                                  int json)
{
    const ft_model_info_t *mi = ft_engine_info(e);
    ft_session_t **s = calloc(n_par, sizeof(*s));
    ft_sampler_t **smp = calloc(n_par, sizeof(*smp));
    int32_t *ids = malloc((size_t)n_prompt * sizeof(int32_t));
    ft_status_t st =
        s && smp && ids ? FT_OK : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = n_prompt + n_gen + 1;
    ft_sampler_options_t sampling;
    ft_sampler_options_init(&sampling);
    sampling.temperature = 0; /* greedy: sampling is not what is measured */
    const uint32_t range = mi->vocab_size > 64 ? mi->vocab_size - 64 : mi->vocab_size;
    for (uint32_t i = 0; i < n_par && !st; i++) {
        ft_par_prompt(ids, n_prompt, i, range);
        if (!(st = ft_session_create(e, &so, &s[i])) &&
            !(st = ft_sampler_create(&sampling, mi->vocab_size, &smp[i])))
            st = ft_session_eval(s[i], ids, n_prompt, NULL);
    }
    ft_par_phase_t one = {0}, all = {0};
    if (!st) st = ft_par_decode(e, s, smp, 1, n_gen, &one);
    for (uint32_t i = 0; i < n_par && !st; i++) /* the same starting point for every session */
        st = ft_session_rewind(s[i], n_prompt - 1);
    for (uint32_t i = 0; i < n_par && !st; i++) {
        ft_par_prompt(ids, n_prompt, i, range);
        st = ft_session_eval(s[i], ids + n_prompt - 1, 1, NULL);
    }
    if (!st) st = ft_par_decode(e, s, smp, n_par, n_gen, &all);
    if (!st && json)
        printf(
            "{\"parallel\": %u, \"n_threads\": %u, \"kernels\": \"%s\", \"prompt_tokens\": %u, "
            "\"decode_tokens\": %u, \"single_decode_tok_s\": %.3f, \"aggregate_decode_tok_s\": "
            "%.3f, "
            "\"aggregate_over_single\": %.3f, \"single_steps\": %llu, \"parallel_steps\": %llu, "
            "\"single_expert_bytes_per_step\": %.1f, \"parallel_expert_bytes_per_step\": %.1f, "
            "\"single_expert_bytes_per_token\": %.1f, \"parallel_expert_bytes_per_token\": %.1f, "
            "\"batched_steps\": %s}\n",
            n_par, mi->n_threads, mi->kernels, n_prompt, n_gen, one.tok_s, all.tok_s,
            all.tok_s / one.tok_s, (unsigned long long)one.steps, (unsigned long long)all.steps,
            ft_par_per_step(&one), ft_par_per_step(&all), ft_par_per_token(&one),
            ft_par_per_token(&all), mi->batched_steps ? "true" : "false");
    else if (!st)
        printf(
            "parallel   %u sessions decoding %u tokens each through the scheduler (%u threads, "
            "%s)\n"
            "single     %.2f tok/s, %.2f MB of expert weights read per step (%.2f MB per token)\n"
            "aggregate  %.2f tok/s (%.2fx single), %.2f MB of expert weights read per step "
            "(%.2f MB per token)\n",
            n_par, n_gen, mi->n_threads, mi->kernels, one.tok_s, ft_par_per_step(&one) / 1e6,
            ft_par_per_token(&one) / 1e6, all.tok_s, all.tok_s / one.tok_s,
            ft_par_per_step(&all) / 1e6, ft_par_per_token(&all) / 1e6);
    for (uint32_t i = 0; s && smp && i < n_par; i++) {
        ft_sampler_destroy(smp[i]);
        ft_session_destroy(s[i]);
    }
    free(s);
    free(smp);
    free(ids);
    return st;
}
