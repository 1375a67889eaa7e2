/* The sim backend: the real expert cache, q* dispatch and whole-layer
 * streaming run with a VRAM budget far below the experts' size, and the
 * tokens and logits must equal the cpu backend's bit for bit (an expert
 * computed from a slot or a stream buffer reads the bytes copied there, so a
 * cache or streaming mistake changes the numbers). The virtual clock's
 * ordering check must never fire, and re-planning the budget mid-generation
 * must leave the output unchanged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ref_bundle.h"
#include "test_tmp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_PROMPT 20
#define N_GEN 24

static char g_bundle[4096];
/* A real preset, where the tiny model's misses are cheaper on the CPU, and a
 * made-up machine with a slow CPU and a fast link, where they are copied
 * and prefill streams whole layers. */
static const char *g_laptop = FT_SOURCE_DIR "/hwprofiles/presets/rtx4060_laptop.textproto";
static const char *g_slowcpu = FT_SOURCE_DIR "/tests/data/slow_cpu_fast_pcie.textproto";

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.seed = 21;
    o.format = FT_DTYPE_Q8_0;
    ft_status_t st = ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_INVALID, ft_test_tmpdir("sim"),
                                         g_bundle, sizeof(g_bundle));
    if (st) {
        fprintf(stderr, "%s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    return 0;
}

typedef struct run_out {
    int32_t tokens[N_GEN];
    float *logits; /* N_PROMPT x vocab, then one row per generated token */
    ft_engine_stats_t stats;
} run_out_t;

/* Greedy generation; replans[i] != 0 re-plans to that budget before decode
 * step i. */
static void run(ft_backend_kind_t backend, const char *hw, uint64_t vram, const uint64_t *replans,
                uint32_t n_batch, run_out_t *out)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = backend;
    eo.hw_profile = hw;
    eo.vram_bytes = vram;
    eo.plan_ctx = 64;
    ft_engine_t *e = NULL;
    ft_status_t st = ft_engine_open(g_bundle, &eo, &e);
    if (st)
        fail_msg("open: %s", ft_status_message(st));
    const uint32_t vocab = ft_engine_info(e)->vocab_size;
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = 64;
    so.n_batch = n_batch;
    ft_session_t *s = NULL;
    assert_null(ft_session_create(e, &so, &s));
    int32_t prompt[N_PROMPT];
    for (int i = 0; i < N_PROMPT; i++)
        prompt[i] = (int32_t)((i * 37 + 11) % (vocab - 16));
    out->logits = malloc((size_t)(N_PROMPT + N_GEN) * vocab * sizeof(float));
    assert_non_null(out->logits);
    assert_null(ft_session_eval(s, prompt, N_PROMPT, out->logits));
    for (int i = 0; i < N_GEN; i++) {
        if (replans && replans[i]) {
            st = ft_engine_replan(e, replans[i]);
            if (st)
                fail_msg("replan to %llu: %s", (unsigned long long)replans[i], ft_status_message(st));
        }
        const float *l = ft_session_logits(s);
        int32_t best = 0;
        for (uint32_t v = 1; v < vocab; v++)
            best = l[v] > l[best] ? (int32_t)v : best;
        out->tokens[i] = best;
        assert_null(ft_session_eval(s, &best, 1, out->logits + (size_t)(N_PROMPT + i) * vocab));
    }
    ft_engine_stats(e, &out->stats);
    ft_session_destroy(s);
    ft_engine_close(e);
}

static void expect_same(const run_out_t *a, const run_out_t *b)
{
    assert_memory_equal(a->tokens, b->tokens, sizeof(a->tokens));
    /* vocab is the same for both: compare all rows bit for bit */
    ft_engine_t *e = NULL;
    assert_null(ft_engine_open(g_bundle, NULL, &e));
    size_t n = (size_t)(N_PROMPT + N_GEN) * ft_engine_info(e)->vocab_size;
    ft_engine_close(e);
    assert_memory_equal(a->logits, b->logits, n * sizeof(float));
}

/* Budgets for the tiny model: the 2 MiB of scratch, its dense weights and
 * KV, and room for a few of its 16 expert blobs (12 KiB each). */
static const uint64_t g_few = 2200ull << 10, g_more = 2250ull << 10, g_all = 64ull << 20;
/* On the slow-CPU machine this budget leaves room for the two streaming
 * buffers, and the planner streams prefill batches. */
static const uint64_t g_stream = 2400ull << 10;

static void test_sim_matches_cpu(void **state)
{
    (void)state;
    run_out_t cpu = {0}, laptop = {0}, copies = {0}, stream = {0}, roomy = {0};
    run(FT_BACKEND_CPU, NULL, 0, NULL, 0, &cpu);
    run(FT_BACKEND_SIM, g_laptop, g_more, NULL, 4, &laptop);
    run(FT_BACKEND_SIM, g_slowcpu, g_few, NULL, 4, &copies);
    run(FT_BACKEND_SIM, g_slowcpu, g_stream, NULL, 0, &stream);
    run(FT_BACKEND_SIM, g_laptop, g_all, NULL, 0, &roomy);
    const run_out_t *runs[4] = {&laptop, &copies, &stream, &roomy};
    for (int i = 0; i < 4; i++) {
        expect_same(&cpu, runs[i]);
        const ft_engine_stats_t *s = &runs[i]->stats;
        assert_int_equal(s->predicted, 1);
        assert_int_equal(s->order_violations, 0);
        assert_true(s->device_seconds > 0);
        assert_int_equal(s->n_tokens, N_PROMPT + N_GEN);
    }
    /* Below the experts' size: the cache hits and misses; on the laptop the
     * misses run on the CPU, on the slow-CPU machine they are copied. */
    assert_true(laptop.stats.n_slots < 16 && copies.stats.n_slots < 16);
    assert_true(laptop.stats.expert_hits > 0 && laptop.stats.misses_to_cpu > 0);
    assert_true(copies.stats.expert_hits > 0 && copies.stats.misses_to_gpu > 0);
    assert_true(copies.stats.bytes_copied > 0);
    /* The prompt went through the double buffer, decode through the cache. */
    assert_true(stream.stats.experts_streamed > 0);
    assert_true(stream.stats.expert_hits + stream.stats.expert_misses > 0);
    /* With room for everything, every expert is resident from the start. */
    assert_int_equal(roomy.stats.expert_misses, 0);
    for (int i = 0; i < 5; i++)
        free((i == 0 ? &cpu : (run_out_t *)runs[i - 1])->logits);
}

static void test_replan_mid_generation(void **state)
{
    (void)state;
    run_out_t cpu = {0}, sim = {0};
    uint64_t replans[N_GEN] = {0};
    replans[6] = g_few;  /* shrink: evicts the coldest slots */
    replans[12] = g_all; /* grow: the new slots are warmed */
    replans[18] = g_more; /* shrink again */
    run(FT_BACKEND_CPU, NULL, 0, NULL, 0, &cpu);
    run(FT_BACKEND_SIM, g_slowcpu, g_more, replans, 0, &sim);
    expect_same(&cpu, &sim);
    assert_int_equal(sim.stats.order_violations, 0);
    assert_int_equal(sim.stats.vram_bytes, g_more);
    free(cpu.logits);
    free(sim.logits);
}

static void test_replan_refused(void **state)
{
    (void)state;
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = FT_BACKEND_SIM;
    eo.hw_profile = g_laptop;
    eo.vram_bytes = g_all;
    eo.plan_ctx = 64;
    ft_engine_t *e = NULL;
    assert_null(ft_engine_open(g_bundle, &eo, &e));
    ft_engine_stats_t before, after;
    ft_engine_stats(e, &before);
    ft_status_t st = ft_engine_replan(e, 1024); /* cannot even hold the dense weights */
    assert_non_null(st);
    ft_status_free(st);
    ft_engine_stats(e, &after);
    assert_int_equal(before.n_slots, after.n_slots);
    assert_int_equal(before.vram_bytes, after.vram_bytes);
    ft_engine_close(e);
    /* The cpu backend has nothing to re-plan. */
    assert_null(ft_engine_open(g_bundle, NULL, &e));
    st = ft_engine_replan(e, 1ull << 30);
    assert_non_null(st);
    ft_status_free(st);
    ft_engine_close(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_matches_cpu),
        cmocka_unit_test(test_replan_mid_generation),
        cmocka_unit_test(test_replan_refused),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
