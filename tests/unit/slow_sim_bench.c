/* The sim backend on the ~0.9 GB bench fixture (8 layers x 64 experts of
 * 1.6 MiB in Q8_0): with VRAM budgets far below the experts' 850 MB, the
 * greedy tokens and logits equal the cpu backend's, the cache hits and
 * misses, copies and streaming happen, and the ordering check never fires.
 * Slow (label "slow"): it writes and compiles the bench fixture. */
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

#define N_PROMPT 48
#define N_GEN 16

static char g_bundle[4096];

typedef struct gen {
    int32_t tokens[N_GEN];
    float *last_logits; /* vocab floats after the last step */
    ft_engine_stats_t stats;
} gen_t;

static void generate(ft_backend_kind_t backend, const char *hw, uint64_t vram, gen_t *out)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = backend;
    eo.hw_profile = hw;
    eo.vram_bytes = vram;
    eo.plan_ctx = N_PROMPT + N_GEN;
    ft_engine_t *e = NULL;
    ft_status_t st = ft_engine_open(g_bundle, &eo, &e);
    if (st)
        fail_msg("open: %s", ft_status_message(st));
    const uint32_t vocab = ft_engine_info(e)->vocab_size;
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = N_PROMPT + N_GEN;
    ft_session_t *s = NULL;
    assert_null(ft_session_create(e, &so, &s));
    int32_t prompt[N_PROMPT];
    for (int i = 0; i < N_PROMPT; i++)
        prompt[i] = (int32_t)((i * 131 + 7) % (vocab - 16));
    assert_null(ft_session_eval(s, prompt, N_PROMPT, NULL));
    for (int i = 0; i < N_GEN; i++) {
        const float *l = ft_session_logits(s);
        int32_t best = 0;
        for (uint32_t v = 1; v < vocab; v++)
            best = l[v] > l[best] ? (int32_t)v : best;
        out->tokens[i] = best;
        assert_null(ft_session_eval(s, &best, 1, NULL));
    }
    out->last_logits = malloc(vocab * sizeof(float));
    memcpy(out->last_logits, ft_session_logits(s), vocab * sizeof(float));
    ft_engine_stats(e, &out->stats);
    ft_session_destroy(s);
    ft_engine_close(e);
}

static void test_bench_fixture_on_sim(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    assert_null(ft_fixture_opts_preset(&o, "bench"));
    o.seed = 3;
    o.format = FT_DTYPE_Q8_0;
    ft_status_t st = ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_INVALID, ft_test_tmpdir("bench"),
                                         g_bundle, sizeof(g_bundle));
    if (st)
        fail_msg("%s", ft_status_message(st));
    const char *laptop = FT_SOURCE_DIR "/hwprofiles/presets/rtx4060_laptop.textproto";
    const char *slow = FT_SOURCE_DIR "/tests/data/slow_cpu_fast_pcie.textproto";
    gen_t cpu = {0}, a = {0}, b = {0};
    generate(FT_BACKEND_CPU, NULL, 0, &cpu);
    generate(FT_BACKEND_SIM, laptop, 150ull << 20, &a); /* ~50 of 512 expert slots */
    generate(FT_BACKEND_SIM, slow, 300ull << 20, &b);   /* streaming buffers + copies */
    ft_engine_t *e = NULL;
    assert_null(ft_engine_open(g_bundle, NULL, &e));
    const uint32_t vocab = ft_engine_info(e)->vocab_size;
    ft_engine_close(e);
    const gen_t *sims[2] = {&a, &b};
    for (int i = 0; i < 2; i++) {
        assert_memory_equal(cpu.tokens, sims[i]->tokens, sizeof(cpu.tokens));
        assert_memory_equal(cpu.last_logits, sims[i]->last_logits, vocab * sizeof(float));
        assert_int_equal(sims[i]->stats.order_violations, 0);
        assert_true(sims[i]->stats.n_slots < 512);
        assert_true(sims[i]->stats.expert_hits > 0 && sims[i]->stats.expert_misses > 0);
    }
    assert_true(b.stats.misses_to_gpu > 0 && b.stats.bytes_copied > 0);
    free(cpu.last_logits);
    free(a.last_logits);
    free(b.last_logits);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_bench_fixture_on_sim)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
