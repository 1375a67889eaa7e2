/* Batched steps (issue 10 item 2): one executor step carrying the tokens
 * of several sessions, as the scheduler hands them over (ft_exec_step).
 *
 * Batch invariance: a session's logits after every step are bit-identical
 * (memcmp) whether it runs alone or in a step with other sessions, in
 * prefill, in decode, in steps that mix prefill chunks with decode
 * tokens, and with every row's logits asked for, on the cpu and sim
 * backends, with the reference and the generated kernels, for f32 and
 * q8_0 weights, and for a Qwen3.5-style hybrid whose DeltaNet layers keep
 * recurrent state per session. Batching is real: a decode step of three sessions reads
 * each routed expert once, so its expert bytes are at most the sum of the
 * three alone and, over the steps, fewer (the tiny fixture routes 3
 * tokens to 2 of 8 experts per layer: some always share). The steps are
 * driven directly (the engine's step lock held, as the scheduler holds
 * it), so what shares a step is known without timing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ref_bundle.h"
#include "ref_check.h"
#include "test_tmp.h"

#include "../exec/exec_api.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_SESS 3
#define N_CTX 64
#define N_DEC 8

static char g_f32[4096], g_q8[4096], g_q35[4096];
static const char *g_laptop = FT_SOURCE_DIR "/hwprofiles/presets/rtx4060_laptop.textproto";

static int build(ft_dtype_t format, int hybrid, const char *dir, char *out, size_t cap)
{
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.seed = 71;
    o.format = format;
    if (hybrid) { /* Qwen3.5-style: Gated DeltaNet layers with recurrent state */
        o.arch = FT_FIXTURE_QWEN35MOE;
        o.n_layers = 4;
    }
    ft_status_t st =
        ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_INVALID, ft_test_tmpdir(dir), out, cap);
    if (st) {
        fprintf(stderr, "%s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    return 0;
}

static int setup(void **state)
{
    (void)state;
    return build(FT_DTYPE_F32, 0, "batch_f32", g_f32, sizeof(g_f32)) ||
           build(FT_DTYPE_Q8_0, 0, "batch_q8", g_q8, sizeof(g_q8)) ||
           build(FT_DTYPE_Q8_0, 1, "batch_q35", g_q35, sizeof(g_q35));
}

static ft_engine_t *open_engine(const char *bundle, ft_backend_kind_t backend,
                                ft_kernels_kind_t kernels)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = backend;
    eo.kernels = kernels;
    eo.n_threads = 2;
    eo.plan_ctx = N_CTX;
    if (backend == FT_BACKEND_SIM) {
        eo.hw_profile = g_laptop;
        eo.vram_bytes = 2250ull << 10; /* a few expert slots: misses on both paths */
    }
    ft_engine_t *e = NULL;
    FT_REF_OK(ft_engine_open(bundle, &eo, &e));
    return e;
}

/* What each session evaluates: a prompt in chunks, then decode tokens. */
typedef struct plan {
    int32_t prompt[24];
    uint32_t n_prompt;
    uint32_t chunk; /* prefill chunk */
    int32_t dec[N_DEC];
} plan_t;

static void make_plans(plan_t *p, uint32_t vocab)
{
    static const uint32_t lens[N_SESS] = {17, 9, 23}, chunks[N_SESS] = {8, 9, 5};
    uint32_t x = 12345;
    for (uint32_t s = 0; s < N_SESS; s++) {
        p[s].n_prompt = lens[s];
        p[s].chunk = chunks[s];
        for (uint32_t i = 0; i < lens[s]; i++)
            p[s].prompt[i] = (int32_t)((x = x * 1103515245u + 12345u) >> 8) % (int32_t)vocab;
        for (uint32_t i = 0; i < N_DEC; i++)
            p[s].dec[i] = (int32_t)((x = x * 1103515245u + 12345u) >> 8) % (int32_t)vocab;
    }
}

/* The logits a session has after each of its steps, and every prompt
 * row's logits. */
typedef struct trace {
    float *after; /* [steps][vocab] */
    float *rows;  /* [n_prompt][vocab] */
    uint32_t n_steps;
} trace_t;

static ft_session_t *new_session(ft_engine_t *e)
{
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = N_CTX;
    so.n_batch = 16;
    ft_session_t *s = NULL;
    FT_REF_OK(ft_session_create(e, &so, &s));
    return s;
}

/* The session's next item (prompt chunk, else decode token); 0 when done. */
static uint32_t next_item(const plan_t *p, ft_session_t *s, ft_exec_item_t *it)
{
    const uint32_t at = ft_session_n_past(s);
    if (at < p->n_prompt) {
        const uint32_t left = p->n_prompt - at, n = left < p->chunk ? left : p->chunk;
        *it = (ft_exec_item_t){s, p->prompt + at, n, NULL};
        return 1;
    }
    if (at < p->n_prompt + N_DEC) {
        *it = (ft_exec_item_t){s, p->dec + (at - p->n_prompt), 1, NULL};
        return 1;
    }
    return 0;
}

static void step(ft_engine_t *e, ft_exec_item_t *items, uint32_t n)
{
    pthread_mutex_lock(&e->step_lock);
    ft_status_t st = ft_exec_step(e, items, n);
    pthread_mutex_unlock(&e->step_lock);
    FT_REF_OK(st);
}

static void record(ft_session_t *s, trace_t *t, uint32_t vocab)
{
    memcpy(t->after + (size_t)t->n_steps++ * vocab, ft_session_logits(s), vocab * sizeof(float));
}

/* Session k alone, step by step; the prompt's first chunk also asks for
 * its rows' logits. Returns the expert bytes its decode steps read. */
static uint64_t run_alone(ft_engine_t *e, const plan_t *p, trace_t *t, uint32_t vocab)
{
    ft_session_t *s = new_session(e);
    ft_exec_item_t it;
    uint64_t dec_bytes = 0;
    while (next_item(p, s, &it)) {
        const int dec = ft_session_n_past(s) >= p->n_prompt;
        if (ft_session_n_past(s) == 0) it.out_rows = t->rows;
        const uint64_t before = e->expert_bytes_read;
        step(e, &it, 1);
        if (dec) dec_bytes += e->expert_bytes_read - before;
        record(s, t, vocab);
    }
    ft_session_destroy(s);
    return dec_bytes;
}

static void batch_invariance(const char *bundle, ft_backend_kind_t backend,
                             ft_kernels_kind_t kernels)
{
    ft_engine_t *e = open_engine(bundle, backend, kernels);
    const uint32_t vocab = ft_engine_info(e)->vocab_size;
    plan_t plans[N_SESS];
    make_plans(plans, vocab);
    trace_t alone[N_SESS], together[N_SESS];
    uint64_t alone_dec = 0;
    for (uint32_t k = 0; k < N_SESS; k++) {
        const size_t steps = plans[k].n_prompt + N_DEC;
        alone[k] =
            (trace_t){calloc(steps * vocab, 4), calloc((size_t)plans[k].chunk * vocab, 4), 0};
        together[k] =
            (trace_t){calloc(steps * vocab, 4), calloc((size_t)plans[k].chunk * vocab, 4), 0};
        assert_non_null(alone[k].after), assert_non_null(together[k].rows);
        alone_dec += run_alone(e, &plans[k], &alone[k], vocab);
    }
    /* Together: every session's next item in each step, so steps mix
     * prefill chunks of different lengths with decode tokens. */
    ft_session_t *s[N_SESS];
    for (uint32_t k = 0; k < N_SESS; k++)
        s[k] = new_session(e);
    uint64_t together_dec = 0, mixed_steps = 0, all_decode_steps = 0;
    for (;;) {
        ft_exec_item_t items[N_SESS];
        uint32_t who[N_SESS], n = 0, n_dec = 0;
        for (uint32_t k = 0; k < N_SESS; k++)
            if (next_item(&plans[k], s[k], &items[n])) {
                if (ft_session_n_past(s[k]) == 0) items[n].out_rows = together[k].rows;
                n_dec += ft_session_n_past(s[k]) >= plans[k].n_prompt;
                who[n++] = k;
            }
        if (!n) break;
        mixed_steps += n_dec && n_dec < n;
        const uint64_t before = e->expert_bytes_read;
        step(e, items, n);
        if (n_dec == n && n == N_SESS) {
            all_decode_steps++;
            together_dec += e->expert_bytes_read - before;
        }
        for (uint32_t i = 0; i < n; i++)
            record(s[who[i]], &together[who[i]], vocab);
    }
    assert_true(mixed_steps > 0);
    for (uint32_t k = 0; k < N_SESS; k++) {
        assert_int_equal(alone[k].n_steps, together[k].n_steps);
        assert_memory_equal(alone[k].after, together[k].after,
                            (size_t)alone[k].n_steps * vocab * sizeof(float));
        assert_memory_equal(alone[k].rows, together[k].rows,
                            (size_t)plans[k].chunk * vocab * sizeof(float));
        ft_session_destroy(s[k]);
        free(alone[k].after), free(alone[k].rows), free(together[k].after), free(together[k].rows);
    }
    /* The decode steps the three sessions took together read each routed
     * expert once per step: fewer bytes than the same tokens alone (the
     * shortest prompt's session decodes alone for some steps: compare only
     * the steps all three decoded, against the same share alone). */
    assert_true(all_decode_steps > 0);
    const uint64_t alone_share = alone_dec / (N_SESS * N_DEC) * (N_SESS * all_decode_steps);
    print_message(
        "    %s %s: %llu decode steps of 3 sessions read %llu expert bytes; alone ~%llu\n",
        backend == FT_BACKEND_SIM ? "sim" : "cpu",
        kernels == FT_KERNELS_REFERENCE ? "reference" : "generated",
        (unsigned long long)all_decode_steps, (unsigned long long)together_dec,
        (unsigned long long)alone_share);
    assert_true(together_dec < alone_share);
    ft_engine_close(e);
}

static void test_cpu_reference_f32(void **state)
{
    (void)state;
    batch_invariance(g_f32, FT_BACKEND_CPU, FT_KERNELS_REFERENCE);
}

static void test_cpu_generated_f32(void **state)
{
    (void)state;
    batch_invariance(g_f32, FT_BACKEND_CPU, FT_KERNELS_GENERATED);
}

static void test_cpu_reference_q8(void **state)
{
    (void)state;
    batch_invariance(g_q8, FT_BACKEND_CPU, FT_KERNELS_REFERENCE);
}

static void test_cpu_generated_q8(void **state)
{
    (void)state;
    batch_invariance(g_q8, FT_BACKEND_CPU, FT_KERNELS_GENERATED);
}

static void test_cpu_auto_q8(void **state)
{
    (void)state;
    batch_invariance(g_q8, FT_BACKEND_CPU, FT_KERNELS_AUTO);
}

/* DeltaNet layers: each row advances its own session's recurrent state. */
static void test_cpu_generated_hybrid(void **state)
{
    (void)state;
    batch_invariance(g_q35, FT_BACKEND_CPU, FT_KERNELS_GENERATED);
}

static void test_sim_generated_q8(void **state)
{
    (void)state;
    batch_invariance(g_q8, FT_BACKEND_SIM, FT_KERNELS_GENERATED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_reference_f32),    cmocka_unit_test(test_cpu_generated_f32),
        cmocka_unit_test(test_cpu_reference_q8),     cmocka_unit_test(test_cpu_generated_q8),
        cmocka_unit_test(test_cpu_auto_q8),          cmocka_unit_test(test_sim_generated_q8),
        cmocka_unit_test(test_cpu_generated_hybrid),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
