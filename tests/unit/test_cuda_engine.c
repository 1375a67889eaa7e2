/* The cuda backend end to end through the fake CUDA driver (tests/cuda_fake:
 * device memory is host memory, kernels are emulated on the CPU from their
 * names): the tiny fixture, compiled with NVRTC cubins, generates the cpu
 * backend's greedy tokens with every expert resident, with a quarter of
 * the experts in slots and the misses copied, with the misses computed on
 * the CPU, and across re-plans mid-generation; the offload counters are
 * real counts; and where the backend cannot run it says why (no driver,
 * no CUDA kernels in the bundle, a budget that cannot keep every layer on
 * the GPU). Skips where this build has no NVRTC to compile the kernels;
 * with NVRTC, a missing kernel image or fake driver fails every test
 * (cuda_test_skip.h).
 *
 * The fixture's weights are BF16: the CPU kernels then keep activations in
 * float32 as the CUDA kernels do (for Q8_0 weights the CPU quantizes the
 * activations to 8 bits and the GPU does not, so long generations drift
 * apart by a token somewhere, as any two runtimes with different kernels
 * do). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cuda_test_skip.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_device.h"
#include "exec/dev_internal.h"
#include "exec/engine_internal.h"
#include "compile.h"
#include "cuda_codegen.h"
#include "import.h"
#include "model_gen.h"
#include "test_tmp.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define N_PROMPT 20
#define N_GEN 24

static char g_bundle[4096], g_bundle_nocuda[4096];
static int g_can_run; /* NVRTC compiled the kernels and the fake driver loads */
static const char *g_laptop = FT_SOURCE_DIR "/hwprofiles/presets/rtx4060_laptop.textproto";
static const char *g_slowcpu = FT_SOURCE_DIR "/tests/data/slow_cpu_fast_pcie.textproto";

/* Budgets for the tiny model (2 layers x 8 experts of 12 KiB): 2230 KiB
 * leaves 4 of the 16 expert blobs in slots, 64 MiB holds everything. */
static const uint64_t g_quarter = 2230ull << 10, g_more = 2300ull << 10, g_all = 64ull << 20;

static ft_status_t build(const char *dir, int with_cuda, char *out, size_t cap)
{
    char src[4096];
    snprintf(src, sizeof(src), "%s/model.gguf", dir);
    snprintf(out, cap, "%s/bundle-%s", dir, with_cuda ? "cuda" : "nocuda");
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.seed = 21;
    o.format = FT_DTYPE_BF16;
    ft_status_t st = ft_fixture_write_gguf(&o, src);
    ft_ir_model_t *m = NULL;
    if (!st) st = ft_import_model(src, &m);
    if (st) return st;
    ft_compile_options_t co;
    ft_compile_options_init(&co);
    co.kv_format = FT_DTYPE_F32; /* the budgets above are sized with an f32 cache */
    co.cuda_archs[0] = 90; /* the fake device is sm_90 */
    co.n_cuda_archs = with_cuda ? 1 : 0;
    st = ft_compile_bundle(m, &co, out);
    ft_ir_model_destroy(m);
    return st;
}

static int setup(void **state)
{
    (void)state;
    void *fake = dlopen(FT_CUDA_FAKE_LIB, RTLD_NOW | RTLD_LOCAL);
    const int loads = fake != NULL;
    if (fake) dlclose(fake);
    if (!ft_cg_cuda_nvrtc_available() || !loads) return 0; /* every test skips or fails */
    const char *dir = ft_test_tmpdir("cuda_engine");
    mkdir(dir, 0755);
    ft_status_t st = build(dir, 1, g_bundle, sizeof(g_bundle));
    if (!st) st = build(dir, 0, g_bundle_nocuda, sizeof(g_bundle_nocuda));
    if (st) {
        fprintf(stderr, "%s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    setenv("FT_CUDA_LIB", FT_CUDA_FAKE_LIB, 1);
    /* 512 MiB: planning from free VRAM leaves 256 MiB headroom. */
    setenv("FT_CUDA_FAKE_VRAM", "536870912", 1);
    g_can_run = 1;
    return 0;
}

/* The CPU kernels both backends run (the cuda backend for the experts the
 * dispatch keeps on the CPU). */
static ft_kernels_kind_t g_kernels = FT_KERNELS_REFERENCE;

/* Called before decode step i of run(), when set. */
static void (*g_at_step)(int i, ft_engine_t *e);

typedef struct run_out {
    int32_t tokens[N_GEN];
    float *logits; /* N_PROMPT x vocab, then one row per generated token */
    uint32_t vocab;
    ft_engine_stats_t stats;
} run_out_t;

/* Greedy generation; replans[i] != 0 re-plans to that budget before
 * decode step i. */
static void run(ft_backend_kind_t backend, const char *hw, uint64_t vram, const uint64_t *replans,
                uint32_t n_batch, run_out_t *out)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = backend;
    eo.hw_profile = hw;
    eo.vram_bytes = vram;
    eo.plan_ctx = 64;
    eo.kernels = g_kernels;
    ft_engine_t *e = NULL;
    ft_status_t st = ft_engine_open(g_bundle, &eo, &e);
    if (st) fail_msg("open: %s", ft_status_message(st));
    const uint32_t vocab = out->vocab = ft_engine_info(e)->vocab_size;
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
    if ((st = ft_session_eval(s, prompt, N_PROMPT, out->logits)))
        fail_msg("prefill: %s", ft_status_message(st));
    for (int i = 0; i < N_GEN; i++) {
        if (g_at_step) g_at_step(i, e);
        if (replans && replans[i] && (st = ft_engine_replan(e, replans[i])))
            fail_msg("replan to %llu: %s", (unsigned long long)replans[i], ft_status_message(st));
        const float *l = ft_session_logits(s);
        int32_t best = 0;
        for (uint32_t v = 1; v < vocab; v++)
            best = l[v] > l[best] ? (int32_t)v : best;
        out->tokens[i] = best;
        if ((st = ft_session_eval(s, &best, 1, out->logits + (size_t)(N_PROMPT + i) * vocab)))
            fail_msg("decode: %s", ft_status_message(st));
    }
    ft_engine_stats(e, &out->stats);
    ft_session_destroy(s);
    ft_engine_close(e);
}

/* Same tokens; logits equal up to float rounding of a different summation
 * order (normalized error over all rows). */
static void expect_same(const run_out_t *cpu, const run_out_t *gpu)
{
    assert_memory_equal(cpu->tokens, gpu->tokens, sizeof(cpu->tokens));
    const size_t n = (size_t)(N_PROMPT + N_GEN) * cpu->vocab;
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)gpu->logits[i] - cpu->logits[i];
        num += d * d;
        den += (double)cpu->logits[i] * cpu->logits[i];
    }
    if (!(sqrt(num / den) < 1e-4))
        fail_msg("logits differ: normalized error %.3e", sqrt(num / den));
}

static void test_cuda_matches_cpu(void **state)
{
    (void)state;
    if (!g_can_run) FT_CUDA_TEST_SKIP("no NVRTC, or the fake driver does not load");
    run_out_t cpu = {0}, all = {0}, copies = {0}, on_cpu = {0};
    run(FT_BACKEND_CPU, NULL, 0, NULL, 0, &cpu);
    run(FT_BACKEND_CUDA, NULL, g_all, NULL, 0, &all);             /* resident; prefill streams */
    run(FT_BACKEND_CUDA, g_slowcpu, g_quarter, NULL, 4, &copies); /* misses copied */
    run(FT_BACKEND_CUDA, g_laptop, g_quarter, NULL, 4, &on_cpu);  /* misses on the CPU */
    const run_out_t *runs[3] = {&all, &copies, &on_cpu};
    for (int i = 0; i < 3; i++) {
        expect_same(&cpu, runs[i]);
        const ft_engine_stats_t *s = &runs[i]->stats;
        assert_int_equal(s->predicted, 0);
        assert_int_equal(s->n_tokens, N_PROMPT + N_GEN);
        assert_true(s->device_seconds > 0);
    }
    assert_int_equal(all.stats.expert_misses, 0);
    assert_int_equal(all.stats.n_slots, 16);
    assert_true(all.stats.experts_streamed > 0);
    assert_true(copies.stats.n_slots > 0 && copies.stats.n_slots <= 4); /* about a quarter of 16 */
    assert_true(copies.stats.expert_hits > 0 && copies.stats.misses_to_gpu > 0);
    assert_true(copies.stats.bytes_copied >= copies.stats.misses_to_gpu * 12288);
    assert_true(on_cpu.stats.misses_to_cpu > 0);
    assert_int_equal(on_cpu.stats.expert_hits + on_cpu.stats.expert_misses,
                     copies.stats.expert_hits + copies.stats.expert_misses);
    free(cpu.logits);
    free(all.logits);
    free(copies.logits);
    free(on_cpu.logits);
}

/* With the plan's generated CPU kernels, the experts the cuda backend
 * keeps on the CPU run them too: the same tokens as the cpu backend with
 * generated kernels. */
static void test_cpu_experts_generated(void **state)
{
    (void)state;
    if (!g_can_run) FT_CUDA_TEST_SKIP("no NVRTC, or the fake driver does not load");
    run_out_t cpu = {0}, on_cpu = {0};
    g_kernels = FT_KERNELS_GENERATED;
    run(FT_BACKEND_CPU, NULL, 0, NULL, 0, &cpu);
    run(FT_BACKEND_CUDA, g_laptop, g_quarter, NULL, 4, &on_cpu);
    g_kernels = FT_KERNELS_REFERENCE;
    expect_same(&cpu, &on_cpu);
    assert_true(on_cpu.stats.misses_to_cpu > 0);
    free(cpu.logits);
    free(on_cpu.logits);
}

static void test_replan_mid_generation(void **state)
{
    (void)state;
    if (!g_can_run) FT_CUDA_TEST_SKIP("no NVRTC, or the fake driver does not load");
    run_out_t cpu = {0}, gpu = {0};
    uint64_t replans[N_GEN] = {0};
    replans[6] = g_quarter; /* shrink: evicts the coldest slots */
    replans[12] = g_all;    /* grow: the new slots are warmed */
    replans[18] = g_more;   /* shrink again */
    run(FT_BACKEND_CPU, NULL, 0, NULL, 0, &cpu);
    run(FT_BACKEND_CUDA, g_slowcpu, g_more, replans, 0, &gpu);
    expect_same(&cpu, &gpu);
    assert_int_equal(gpu.stats.vram_bytes, g_more);
    free(cpu.logits);
    free(gpu.logits);
}

/* Another program takes most of the device's free memory after the
 * prompt: the engine, planned from free VRAM (no --vram), notices at its
 * next poll (16 steps and 200 ms apart) and re-plans to fewer expert
 * slots, without changing a token. */
static ft_cuda_device_t *g_other;
static ft_cu_deviceptr g_taken;
static uint64_t g_budget_before;

static void take_memory(int i, ft_engine_t *e)
{
    if (i != 0) return;
    ft_engine_stats_t st;
    ft_engine_stats(e, &st);
    g_budget_before = st.vram_bytes;
    assert_null(ft_cuda_device_create(NULL, &g_other));
    size_t free_b, total_b;
    assert_null(ft_cuda_mem_info(g_other, &free_b, &total_b));
    assert_null(ft_cuda_alloc(g_other, free_b - (1u << 20), &g_taken));
    /* The poll also waits 200 ms since the last one: let them pass, so it
     * comes at step 16 on any machine (the step count decides). */
    const struct timespec t = {0, 250 * 1000 * 1000};
    nanosleep(&t, NULL);
}

static void test_free_vram_polling(void **state)
{
    (void)state;
    if (!g_can_run) FT_CUDA_TEST_SKIP("no NVRTC, or the fake driver does not load");
    run_out_t cpu = {0}, gpu = {0};
    run(FT_BACKEND_CPU, NULL, 0, NULL, 0, &cpu);
    g_at_step = take_memory;
    run(FT_BACKEND_CUDA, g_slowcpu, 0, NULL, 0, &gpu);
    g_at_step = NULL;
    ft_cuda_free(g_other, g_taken);
    ft_cuda_device_destroy(g_other);
    expect_same(&cpu, &gpu);
    assert_true(gpu.stats.vram_bytes < g_budget_before);
    assert_true(gpu.stats.n_slots < 16);
    free(cpu.logits);
    free(gpu.logits);
}

/* The decode step allocates nothing (host side: the driver's memory is
 * not ours to count), also with misses copied and computed on the CPU. */
static size_t g_n_allocs;
static void *count_alloc(void *u, size_t n)
{
    (void)u;
    g_n_allocs++;
    return malloc(n);
}
static void *count_realloc(void *u, void *p, size_t n)
{
    (void)u;
    g_n_allocs++;
    return realloc(p, n);
}
static void count_free(void *u, void *p)
{
    (void)u;
    free(p);
}

static void test_decode_allocates_nothing(void **state)
{
    (void)state;
    if (!g_can_run) FT_CUDA_TEST_SKIP("no NVRTC, or the fake driver does not load");
    const ft_allocator_t a = {count_alloc, count_realloc, count_free, NULL};
    const char *hws[2] = {g_slowcpu, g_laptop};
    for (int h = 0; h < 2; h++) {
        ft_engine_options_t eo;
        ft_engine_options_init(&eo);
        eo.backend = FT_BACKEND_CUDA;
        eo.hw_profile = hws[h];
        eo.vram_bytes = g_quarter;
        eo.plan_ctx = 64;
        eo.allocator = &a;
        ft_engine_t *e = NULL;
        assert_null(ft_engine_open(g_bundle, &eo, &e));
        ft_session_options_t so;
        ft_session_options_init(&so);
        so.n_ctx = 64;
        ft_session_t *s = NULL;
        assert_null(ft_session_create(e, &so, &s));
        int32_t tok[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        assert_null(ft_session_eval(s, tok, 8, NULL));
        g_n_allocs = 0;
        for (int i = 0; i < 8; i++)
            assert_null(ft_session_eval(s, &tok[i], 1, NULL));
        assert_int_equal(g_n_allocs, 0);
        ft_engine_stats_t st;
        ft_engine_stats(e, &st);
        assert_true(st.expert_misses > 0);
        ft_session_destroy(s);
        ft_engine_close(e);
    }
}

/* Calibration counts (ftc compile --calibrate) come out the same. */
static uint64_t count_routes(ft_backend_kind_t backend, uint64_t *counts, size_t n)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = backend;
    eo.vram_bytes = backend == FT_BACKEND_CUDA ? g_quarter : 0;
    eo.plan_ctx = 64;
    eo.kernels = FT_KERNELS_REFERENCE;
    ft_engine_t *e = NULL;
    assert_null(ft_engine_open(g_bundle, &eo, &e));
    assert_null(ft_engine_count_routing(e, 1));
    ft_session_t *s = NULL;
    assert_null(ft_session_create(e, NULL, &s));
    int32_t tok[12] = {5, 9, 100, 7, 3, 3, 64, 1, 2, 200, 11, 12};
    assert_null(ft_session_eval(s, tok, 8, NULL));
    for (int i = 8; i < 12; i++)
        assert_null(ft_session_eval(s, &tok[i], 1, NULL));
    const uint64_t n_tok = ft_engine_routing_counts(e, counts, n);
    ft_session_destroy(s);
    ft_engine_close(e);
    return n_tok;
}

static void test_routing_counts(void **state)
{
    (void)state;
    if (!g_can_run) FT_CUDA_TEST_SKIP("no NVRTC, or the fake driver does not load");
    uint64_t cpu[64] = {0}, gpu[64] = {0};
    assert_int_equal(count_routes(FT_BACKEND_CPU, cpu, 64), 12);
    assert_int_equal(count_routes(FT_BACKEND_CUDA, gpu, 64), 12);
    assert_memory_equal(cpu, gpu, sizeof(cpu));
}

/* Decode steps replayed as CUDA graphs give the logits of plain launches,
 * bit for bit (the same kernels in the same order), and the graphs are
 * captured once and then replayed. White-box: the session's graph table. */
static void decode_logits(int graphs, float *out, uint32_t n_steps, uint32_t vocab)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = FT_BACKEND_CUDA;
    eo.hw_profile = g_slowcpu;
    eo.vram_bytes = g_quarter;
    eo.plan_ctx = 64;
    ft_engine_t *e = NULL;
    assert_null(ft_engine_open(g_bundle, &eo, &e));
    ft_session_t *s = NULL;
    assert_null(ft_session_create(e, NULL, &s));
    if (!graphs) s->dev->graphs_off = 1;
    int32_t tok = 7;
    assert_null(ft_session_eval(s, &tok, 1, NULL));
    for (uint32_t i = 0; i < n_steps; i++) {
        const float *l = ft_session_logits(s);
        memcpy(out + (size_t)i * vocab, l, vocab * sizeof(float));
        tok = 0;
        for (uint32_t v = 1; v < vocab; v++)
            tok = l[v] > l[tok] ? (int32_t)v : tok;
        assert_null(ft_session_eval(s, &tok, 1, NULL));
    }
    const ft_dgraph_t first = s->dev->graphs[0];
    assert_true(graphs ? first != NULL : first == NULL);
    for (uint32_t l = 0; graphs && l <= e->model->n_layers; l++)
        assert_non_null(s->dev->graphs[l]);
    ft_session_destroy(s);
    ft_engine_close(e);
}

static void test_decode_graphs(void **state)
{
    (void)state;
    if (!g_can_run) FT_CUDA_TEST_SKIP("no NVRTC, or the fake driver does not load");
    enum { STEPS = 12 };
    ft_engine_t *e = NULL;
    assert_null(ft_engine_open(g_bundle, NULL, &e));
    const uint32_t vocab = ft_engine_info(e)->vocab_size;
    ft_engine_close(e);
    float *a = malloc((size_t)STEPS * vocab * sizeof(float)),
          *b = malloc((size_t)STEPS * vocab * sizeof(float));
    assert_non_null(a);
    assert_non_null(b);
    decode_logits(1, a, STEPS, vocab);
    decode_logits(0, b, STEPS, vocab);
    assert_memory_equal(a, b, (size_t)STEPS * vocab * sizeof(float));
    free(a);
    free(b);
}

static void expect_open_fails(const char *bundle, uint64_t vram, ft_status_code_t code,
                              const char *needle)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = FT_BACKEND_CUDA;
    eo.vram_bytes = vram;
    eo.plan_ctx = 64;
    ft_engine_t *e = (ft_engine_t *)1;
    ft_status_t st = ft_engine_open(bundle, &eo, &e);
    assert_null(e);
    assert_non_null(st);
    if (ft_status_code(st) != code || !strstr(ft_status_message(st), needle))
        fail_msg("expected code %d with '%s', got %d: %s", (int)code, needle,
                 (int)ft_status_code(st), ft_status_message(st));
    ft_status_free(st);
}

static void test_refusals(void **state)
{
    (void)state;
    if (!g_can_run) FT_CUDA_TEST_SKIP("no NVRTC, or the fake driver does not load");
    /* No CUDA kernels in the bundle: unavailable, so ft runs on the CPU. */
    expect_open_fails(g_bundle_nocuda, g_all, FT_STATUS_UNAVAILABLE, "no CUDA kernels");
    /* A budget that keeps layers off the GPU: what it needs. */
    expect_open_fails(g_bundle, 2000ull << 10, FT_STATUS_OUT_OF_RANGE, "runs every layer");
    /* A re-plan that would drop resident layers is refused, nothing changes. */
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = FT_BACKEND_CUDA;
    eo.vram_bytes = g_all;
    eo.plan_ctx = 64;
    ft_engine_t *e = NULL;
    assert_null(ft_engine_open(g_bundle, &eo, &e));
    ft_engine_stats_t before, after;
    ft_engine_stats(e, &before);
    ft_status_t st = ft_engine_replan(e, 1024);
    assert_non_null(st);
    ft_status_free(st);
    ft_engine_stats(e, &after);
    assert_int_equal(before.n_slots, after.n_slots);
    assert_int_equal(before.vram_bytes, after.vram_bytes);
    ft_engine_close(e);
    /* No driver at all. */
    setenv("FT_CUDA_LIB", "libft_no_such_cuda_driver.so.1", 1);
    expect_open_fails(g_bundle, g_all, FT_STATUS_UNAVAILABLE, "no CUDA driver");
    setenv("FT_CUDA_LIB", FT_CUDA_FAKE_LIB, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cuda_matches_cpu),
        cmocka_unit_test(test_cpu_experts_generated),
        cmocka_unit_test(test_replan_mid_generation),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_free_vram_polling),
        cmocka_unit_test(test_decode_allocates_nothing),
        cmocka_unit_test(test_routing_counts),
        cmocka_unit_test(test_decode_graphs),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
