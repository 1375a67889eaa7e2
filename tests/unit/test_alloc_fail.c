/* Allocation-failure injection (SQLite style): with an allocator hook that
 * fails its k-th call, for k = 1, 2, ... until a pass sees no failure,
 * ft_engine_open + ft_session_create on the sim and cpu backends (the
 * session's memory comes from the simulated device or the cpu device,
 * through the hook) and ft_engine_replan on the sim backend must return a
 * status (never crash; the ASan build checks that nothing leaks), and a
 * failed re-plan must leave the engine as it was: the same counters and
 * slots, and the same tokens afterwards. */
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

#define N_PROMPT 12
#define N_GEN 12
#define REPLAN_AT 4
/* More than any pass needs (the tiny engine makes a few hundred). */
#define MAX_K 20000

static char g_bundle[4096];
/* Misses are copied on this machine, so the cache and its slots matter. */
static const char *g_slowcpu = FT_SOURCE_DIR "/tests/data/slow_cpu_fast_pcie.textproto";
static const uint64_t g_few = 2200ull << 10, g_more = 2250ull << 10, g_all = 64ull << 20;

/* The hook: counts calls of alloc and realloc, and fails the fail_at-th. */
typedef struct failing {
    uint64_t n_calls, fail_at; /* fail_at 0: never */
    int failed;
} failing_t;

static int ft_test_should_fail(failing_t *f)
{
    if (f->fail_at && ++f->n_calls == f->fail_at) {
        f->failed = 1;
        return 1;
    }
    return 0;
}

static void *ft_test_alloc(void *user, size_t n)
{
    return ft_test_should_fail(user) ? NULL : malloc(n);
}

static void *ft_test_realloc(void *user, void *p, size_t n)
{
    return ft_test_should_fail(user) ? NULL : realloc(p, n);
}

static void ft_test_free(void *user, void *p)
{
    (void)user;
    free(p);
}

static failing_t g_fail;
static ft_backend_kind_t g_backend = FT_BACKEND_SIM;
static const ft_allocator_t g_alloc = {ft_test_alloc, ft_test_realloc, ft_test_free, &g_fail};

static void arm(uint64_t k)
{
    g_fail = (failing_t){.fail_at = k};
}

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.seed = 21;
    o.format = FT_DTYPE_Q8_0;
    ft_status_t st = ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_INVALID, ft_test_tmpdir("allocfail"),
                                         g_bundle, sizeof(g_bundle));
    if (st) {
        fprintf(stderr, "%s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    return 0;
}

/* Opens an engine and a session through the hook; a status on failure. */
static ft_status_t open_both(uint64_t vram, ft_engine_t **out_e, ft_session_t **out_s)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = g_backend;
    eo.hw_profile = g_slowcpu;
    eo.vram_bytes = vram;
    eo.plan_ctx = 64;
    eo.n_threads = 1;
    eo.allocator = &g_alloc;
    *out_e = NULL;
    *out_s = NULL;
    ft_status_t st = ft_engine_open(g_bundle, &eo, out_e);
    if (st)
        return st;
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = 64;
    st = ft_session_create(*out_e, &so, out_s);
    if (st) {
        ft_engine_close(*out_e);
        *out_e = NULL;
    }
    return st;
}

static int32_t greedy(const ft_engine_t *e, const ft_session_t *s)
{
    const float *l = ft_session_logits(s);
    int32_t best = 0;
    for (uint32_t v = 1; v < ft_engine_info(e)->vocab_size; v++)
        best = l[v] > l[best] ? (int32_t)v : best;
    return best;
}

/* Evaluates the prompt, then greedy tokens [from, to). */
static void generate(ft_engine_t *e, ft_session_t *s, int from, int to, int32_t *tokens)
{
    if (from == 0) {
        int32_t prompt[N_PROMPT];
        for (int i = 0; i < N_PROMPT; i++)
            prompt[i] = (int32_t)((i * 37 + 11) % (ft_engine_info(e)->vocab_size - 16));
        assert_null(ft_session_eval(s, prompt, N_PROMPT, NULL));
    }
    for (int i = from; i < to; i++) {
        tokens[i] = greedy(e, s);
        assert_null(ft_session_eval(s, &tokens[i], 1, NULL));
    }
}

static void reference_tokens(int32_t *tokens)
{
    ft_engine_t *e;
    ft_session_t *s;
    arm(0);
    assert_null(open_both(g_more, &e, &s));
    generate(e, s, 0, N_GEN, tokens);
    ft_session_destroy(s);
    ft_engine_close(e);
}

static void open_and_session(ft_backend_kind_t backend)
{
    g_backend = backend;
    int32_t want[N_GEN], got[N_GEN];
    reference_tokens(want);
    uint64_t k = 1;
    for (; k < MAX_K; k++) {
        ft_engine_t *e;
        ft_session_t *s;
        arm(k);
        ft_status_t st = open_both(g_more, &e, &s);
        if (st) {
            assert_true(g_fail.failed); /* only the injected failure may fail */
            assert_null(e);
            ft_status_free(st);
            continue;
        }
        const int failed = g_fail.failed;
        arm(0);
        generate(e, s, 0, N_GEN, got); /* a failure that was absorbed must not show */
        assert_memory_equal(want, got, sizeof(want));
        ft_session_destroy(s);
        ft_engine_close(e);
        if (!failed)
            break;
    }
    assert_true(k > 1 && k < MAX_K);
    print_message("open + session create (%s): %llu allocation points\n",
                  backend == FT_BACKEND_SIM ? "sim" : "cpu", (unsigned long long)(k - 1));
    g_backend = FT_BACKEND_SIM;
}

static void test_open_and_session(void **state)
{
    (void)state;
    open_and_session(FT_BACKEND_SIM);
}

static void test_open_and_session_cpu(void **state)
{
    (void)state;
    open_and_session(FT_BACKEND_CPU);
}

/* Same counters and slots: nothing changed. */
static void expect_same_stats(const ft_engine_stats_t *a, const ft_engine_stats_t *b)
{
    assert_int_equal(a->expert_hits, b->expert_hits);
    assert_int_equal(a->expert_misses, b->expert_misses);
    assert_int_equal(a->misses_to_gpu, b->misses_to_gpu);
    assert_int_equal(a->misses_to_cpu, b->misses_to_cpu);
    assert_int_equal(a->bytes_copied, b->bytes_copied);
    assert_int_equal(a->n_tokens, b->n_tokens);
    assert_int_equal(a->n_slots, b->n_slots);
    assert_int_equal(a->vram_bytes, b->vram_bytes);
    assert_int_equal(a->prefill_stream_tokens, b->prefill_stream_tokens);
    assert_true(a->device_seconds == b->device_seconds);
}

/* Re-plans from g_more to budget after REPLAN_AT tokens, failing the k-th
 * allocation of the re-plan, for every k. */
static void replan_failing(uint64_t budget)
{
    int32_t want[N_GEN], got[N_GEN];
    reference_tokens(want);
    uint64_t k = 1;
    for (; k < MAX_K; k++) {
        ft_engine_t *e;
        ft_session_t *s;
        arm(0);
        assert_null(open_both(g_more, &e, &s));
        generate(e, s, 0, REPLAN_AT, got);
        ft_engine_stats_t before, after;
        ft_engine_stats(e, &before);
        arm(k);
        ft_status_t st = ft_engine_replan(e, budget);
        const int failed = g_fail.failed;
        arm(0);
        ft_engine_stats(e, &after);
        if (st) {
            assert_true(failed);
            ft_status_free(st);
            expect_same_stats(&before, &after);
        } else {
            assert_int_equal(after.vram_bytes, budget);
        }
        generate(e, s, REPLAN_AT, N_GEN, got);
        assert_memory_equal(want, got, sizeof(want));
        ft_session_destroy(s);
        ft_engine_close(e);
        if (!st && !failed)
            break;
    }
    assert_true(k > 1 && k < MAX_K);
    print_message("re-plan to %llu KiB: %llu allocation points\n", (unsigned long long)(budget >> 10),
                  (unsigned long long)(k - 1));
}

static void test_replan_grow(void **state)
{
    (void)state;
    replan_failing(g_all);
}

static void test_replan_shrink(void **state)
{
    (void)state;
    replan_failing(g_few);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_and_session),
        cmocka_unit_test(test_open_and_session_cpu),
        cmocka_unit_test(test_replan_grow),
        cmocka_unit_test(test_replan_shrink),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
