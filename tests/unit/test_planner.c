/* ft_planner_solve on random instances (model shapes, machines, budgets):
 * no region ever exceeds its budget, the slots and the dense prefix are
 * maximal (brute force: nothing more fits), the same inputs give the same
 * bytes; and the named cases: the RAM refusal says by how much, a machine
 * without a GPU, PCIe faster than DRAM (q* -> 1) and the reverse (q* -> 0),
 * dense weights that do not fit, dropped streaming buffers, calibration
 * pinning hot experts, unified memory, invalid inputs. Fixed seed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/plan/plan_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB (1ull << 30)
#define MIB (1ull << 20)

static uint64_t rng_state = 12345;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rng_unit(void)
{
    return (double)(rng_next() >> 11) * 0x1p-53;
}

static double rng_log(double lo, double hi)
{
    return lo * pow(hi / lo, rng_unit());
}

enum { MAX_L = 48 };

typedef struct inst {
    ft_plan_layer_t layers[MAX_L];
    float pop[MAX_L * 128];
    ft_plan_model_t m;
    ft_hw_t hw;
    ft_plan_budget_t b;
} inst_t;

/* A Qwen3-30B-A3B-like shape at about 4.5 bits per weight. */
static void qwen_like(inst_t *x, uint32_t n_layers)
{
    memset(x, 0, sizeof *x);
    for (uint32_t l = 0; l < n_layers; l++)
        x->layers[l] = (ft_plan_layer_t){
            .is_moe = 1, .n_experts = 128, .n_used = 8, .expert_params = 3ull * 2048 * 768,
            .expert_bytes = 3ull * 2048 * 768 * 9 / 16, .dense_params = 40000000,
            .dense_bytes = 22500000, .kv_bytes_per_token = 2 * 4 * 128 * 2};
    x->m = (ft_plan_model_t){.arch = "qwen3moe", .n_layers = n_layers, .layers = x->layers,
                             .embed_bytes = 151936ull * 2048 * 9 / 16,
                             .output_bytes = 151936ull * 2048 * 9 / 16, .d_model = 2048,
                             .vocab_size = 151936, .expert_format = FT_DTYPE_Q4_K};
    x->hw.n_cores = 8;
    x->hw.ram_bytes = 64 * GIB;
    x->hw.dram_gbs = 60.0;
    x->hw.n_gpus = 1;
    x->hw.gpu = (ft_hw_gpu_t){.vram_bytes = 8 * GIB, .vram_free_bytes = 7 * GIB,
                              .hbm_gbs = 256.0, .h2d_gbs = 12.0, .h2d_overlap_gbs = 9.0,
                              .gather_gbs = 8.0, .launch_us = 5.0,
                              .gemm_tflops = 30.0};
    x->b = (ft_plan_budget_t){.ctx = 4096, .batch = 1};
}

static void random_inst(inst_t *x)
{
    memset(x, 0, sizeof *x);
    uint32_t n = 1 + (uint32_t)(rng_next() % MAX_L);
    uint32_t ne = 1 + (uint32_t)(rng_next() % 128);
    for (uint32_t l = 0; l < n; l++) {
        ft_plan_layer_t *ly = &x->layers[l];
        ly->is_moe = rng_next() % 5 != 0;
        ly->n_experts = ne;
        ly->n_used = 1 + (uint32_t)(rng_next() % (ne < 8 ? ne : 8));
        ly->expert_bytes = (uint64_t)rng_log(1e3, 6e7);
        ly->expert_params = (uint64_t)(ly->expert_bytes * rng_log(0.5, 4.0));
        ly->dense_bytes = (uint64_t)rng_log(1e3, 8e8);
        ly->dense_params = ly->dense_bytes * 2;
        ly->kv_bytes_per_token = rng_next() % 3 ? (uint64_t)rng_log(64, 65536) : 0;
        ly->state_bytes = rng_next() % 4 ? 0 : (uint64_t)rng_log(1e3, 1e7);
    }
    x->m = (ft_plan_model_t){.arch = "rand", .n_layers = n, .layers = x->layers,
                             .embed_bytes = (uint64_t)rng_log(1e3, 2e9),
                             .output_bytes = (uint64_t)rng_log(1e3, 2e9),
                             .d_model = (uint32_t)rng_log(64, 8192),
                             .vocab_size = (uint32_t)rng_log(100, 300000),
                             .expert_format = (ft_dtype_t)(rng_next() % FT_DTYPE_COUNT)};
    if (rng_next() % 2) {
        for (uint32_t i = 0; i < n * ne; i++)
            x->pop[i] = (float)pow(rng_unit(), 3.0);
        x->m.popularity = x->pop;
        x->m.popularity_stride = ne;
    }
    ft_hw_t *h = &x->hw;
    h->n_cores = 1 + (uint32_t)(rng_next() % 64);
    h->ram_bytes = (uint64_t)rng_log(1e9, 1e12);
    h->dram_gbs = rng_log(10, 500);
    h->dram_overlap_gbs = rng_next() % 2 ? h->dram_gbs * rng_log(0.5, 1.0) : 0.0;
    h->cpu_gemv_gbs[FT_DTYPE_Q4_K] = rng_next() % 2 ? rng_log(5, 500) : 0.0;
    h->n_gpus = rng_next() % 6 != 0;
    h->gpu = (ft_hw_gpu_t){.vram_bytes = (uint64_t)rng_log(1e8, 1.5e11),
                           .hbm_gbs = rng_log(100, 5000), .h2d_gbs = rng_log(2, 200),
                           .launch_us = rng_log(1, 20), .gemm_tflops = rng_next() % 3 ? rng_log(5, 2000) : 0.0};
    h->gpu.vram_free_bytes = h->gpu.vram_bytes / 10 * 9;
    h->gpu.h2d_overlap_gbs = rng_next() % 2 ? h->gpu.h2d_gbs * rng_log(0.5, 1.0) : 0.0;
    h->gpu.unified_memory = rng_next() % 10 == 0;
    x->b = (ft_plan_budget_t){.vram_bytes = rng_next() % 3 ? (uint64_t)rng_log(1e7, 2e11) : 0,
                              .ram_bytes = rng_next() % 3 ? (uint64_t)rng_log(1e9, 2e12) : 0,
                              .ctx = (uint32_t)(rng_next() % 200000),
                              .batch = (uint32_t)(rng_next() % 4)};
}

/* Every invariant a plan must keep. */
static void check_plan(const inst_t *x, const ft_plan_result_t *r)
{
    const ft_plan_model_t *m = &x->m;
    uint64_t sum = r->vram_scratch + r->vram_dense + r->vram_kv + r->vram_stream +
                   r->vram_pinned + r->vram_slots;
    assert_true(sum == r->vram_used);
    if (!r->unified)
        assert_true(r->vram_used <= r->vram_budget);
    else if (r->fits)
        assert_true(r->vram_used <= r->vram_budget && r->vram_used <= r->ram_budget);
    assert_true(r->vram_slots == (uint64_t)r->n_slots * r->slot_bytes);
    assert_true(r->fits == (r->ram_needed <= r->ram_budget &&
                            (!r->unified || r->vram_used <= r->vram_budget)));
    if (!r->fits)
        assert_non_null(strstr(r->why, "short by"));
    if (r->cpu_only)
        assert_true(r->vram_used == 0 && r->n_gpu_layers == 0);
    assert_true(r->n_gpu_layers <= m->n_layers);
    /* brute force: the next layer's dense + KV would not have fit */
    if (!r->cpu_only && !r->unified && r->n_gpu_layers < m->n_layers) {
        const ft_plan_layer_t *l = &m->layers[r->n_gpu_layers];
        uint64_t need = l->dense_bytes + ft_planner_layer_kv(l, &x->b);
        assert_true(need > r->vram_budget - r->vram_scratch - r->vram_dense - r->vram_kv);
    }
    uint64_t items = 0, pinned = 0;
    for (uint32_t l = 0; l < r->n_gpu_layers; l++)
        items += m->layers[l].is_moe ? m->layers[l].n_experts : 0;
    if (!r->unified) {
        for (uint32_t i = 0; i < r->n_pinned; i++) {
            uint32_t layer = r->pinned[i] / r->expert_id_stride;
            assert_true(layer < r->n_gpu_layers && m->layers[layer].is_moe);
            assert_true(r->pinned[i] % r->expert_id_stride < m->layers[layer].n_experts);
            assert_true(i == 0 || r->pinned[i] > r->pinned[i - 1]);
            pinned += m->layers[layer].expert_bytes;
        }
        assert_true(pinned == r->vram_pinned);
        /* brute force: one more slot would not fit, or every expert has one */
        if (!r->cpu_only && r->slot_bytes)
            assert_true(r->n_slots + r->n_pinned == items ||
                        r->vram_budget - r->vram_used < r->slot_bytes);
    }
    for (uint32_t l = 0; l < m->n_layers; l++) {
        assert_true(r->hit_rate[l] >= 0.0f && r->hit_rate[l] <= 1.0f);
        for (uint32_t b = 0; b < r->n_buckets; b++) {
            float q = r->qstar[l * r->n_buckets + b];
            assert_true(q >= 0.0f && q <= 1.0f);
            if (l >= r->n_gpu_layers || !m->layers[l].is_moe)
                assert_true(q == 0.0f);
        }
    }
    if (r->fits) {
        assert_true(isfinite(r->predicted_decode_tok_s) && r->predicted_decode_tok_s > 0.0);
        assert_true(isfinite(r->predicted_prefill_tok_s) && r->predicted_prefill_tok_s > 0.0);
    }
    assert_true(r->bottleneck <= FT_BOTTLENECK_CPU);
    assert_true(strlen(r->note) < sizeof r->note);
}

/* Equal results: the struct byte for byte (pointers aside) and arrays. */
static void check_same(const ft_plan_model_t *m, const ft_plan_result_t *a,
                       const ft_plan_result_t *b)
{
    ft_plan_result_t x = *a, y = *b;
    x.qstar = y.qstar = NULL;
    x.hit_rate = y.hit_rate = NULL;
    x.pinned = y.pinned = NULL;
    assert_memory_equal(&x, &y, sizeof x);
    assert_memory_equal(a->qstar, b->qstar, m->n_layers * a->n_buckets * sizeof(float));
    assert_memory_equal(a->hit_rate, b->hit_rate, m->n_layers * sizeof(float));
    if (a->n_pinned && a->pinned)
        assert_memory_equal(a->pinned, b->pinned, a->n_pinned * sizeof(uint32_t));
}

static void test_random_instances(void **state)
{
    (void)state;
    inst_t *x = malloc(sizeof *x);
    assert_non_null(x);
    for (int it = 0; it < 300; it++) {
        random_inst(x);
        ft_plan_result_t r1, r2;
        ft_status_t st = ft_planner_solve(&x->m, &x->hw, &x->b, &r1);
        if (st)
            fail_msg("instance %d: %s", it, ft_status_message(st));
        check_plan(x, &r1);
        assert_null(ft_planner_solve(&x->m, &x->hw, &x->b, &r2));
        check_same(&x->m, &r1, &r2);
        ft_plan_result_release(&r1);
        ft_plan_result_release(&r2);
    }
    free(x);
}

static void test_ram_refusal(void **state)
{
    (void)state;
    inst_t *x = malloc(sizeof *x);
    assert_non_null(x);
    qwen_like(x, 48);
    x->b.ram_bytes = 10 * GIB;
    ft_plan_result_t r;
    assert_null(ft_planner_solve(&x->m, &x->hw, &x->b, &r));
    assert_int_equal(r.fits, 0);
    char want[256];
    snprintf(want, sizeof want, "needs %.2f GiB of RAM, budget 10.00 GiB: short by %.2f GiB",
             (double)r.ram_needed / GIB, (double)(r.ram_needed - 10 * GIB) / GIB);
    assert_string_equal(r.why, want);
    assert_true(r.ram_needed > 16 * GIB && r.ram_needed < 20 * GIB);
    assert_true(r.predicted_decode_tok_s == 0.0);
    check_plan(x, &r);
    ft_plan_result_release(&r);
    x->b.ram_bytes = 0; /* the profile's 64 GiB */
    assert_null(ft_planner_solve(&x->m, &x->hw, &x->b, &r));
    assert_int_equal(r.fits, 1);
    assert_true(r.ram_budget == 64 * GIB);
    ft_plan_result_release(&r);
    free(x);
}

static void test_no_gpu(void **state)
{
    (void)state;
    inst_t *x = malloc(sizeof *x);
    assert_non_null(x);
    qwen_like(x, 48);
    x->hw.n_gpus = 0;
    ft_plan_result_t r;
    assert_null(ft_planner_solve(&x->m, &x->hw, &x->b, &r));
    assert_true(r.fits && r.cpu_only && r.vram_used == 0 && r.n_slots == 0);
    check_plan(x, &r);
    assert_int_equal(r.bottleneck, FT_BOTTLENECK_DRAM);
    assert_true(r.prefill_stream_tokens == UINT32_MAX);
    /* bandwidth bound: below DRAM / bytes read per token, and near it */
    double bytes = 48.0 * (22500000 + 8 * 3.0 * 2048 * 768 * 9 / 16) + x->m.output_bytes;
    double ceiling = 60e9 / bytes;
    assert_true(r.predicted_decode_tok_s < ceiling && r.predicted_decode_tok_s > 0.7 * ceiling);
    ft_plan_result_release(&r);
    free(x);
}

static double decode_qstar(inst_t *x, double pcie, double dram)
{
    x->hw.gpu.h2d_gbs = pcie;
    x->hw.dram_gbs = dram;
    ft_plan_result_t r;
    assert_null(ft_planner_solve(&x->m, &x->hw, &x->b, &r));
    check_plan(x, &r);
    double q = r.qstar[0];
    ft_plan_result_release(&r);
    return q;
}

static void test_qstar_limits(void **state)
{
    (void)state;
    inst_t *x = malloc(sizeof *x);
    assert_non_null(x);
    qwen_like(x, 48);
    x->hw.gpu.hbm_gbs = 1e5; /* GPU time negligible */
    x->hw.gpu.launch_us = 0.0;
    x->hw.gpu.gather_gbs = x->hw.gpu.h2d_overlap_gbs = 0.0;
    x->hw.cpu_gemm_gflops[FT_DTYPE_Q4_K] = 1e6; /* the CPU bandwidth bound */
    assert_true(decode_qstar(x, 1000.0, 1.0) > 0.99);
    assert_true(decode_qstar(x, 1.0, 1000.0) < 0.01);
    double q = decode_qstar(x, 20.0, 60.0);
    /* the integer split at M >= 5 expected misses is the closed form
     * rounded: within 1 / M */
    assert_true(fabs(q - 20.0 / 80.0) < 0.2 + 1e-6);
    free(x);
}

static void test_dense_does_not_fit(void **state)
{
    (void)state;
    inst_t *x = malloc(sizeof *x);
    assert_non_null(x);
    qwen_like(x, 48);
    x->b.vram_bytes = ft_planner_scratch_bytes(&x->m, &x->b) + 300 * MIB;
    ft_plan_result_t r;
    assert_null(ft_planner_solve(&x->m, &x->hw, &x->b, &r));
    check_plan(x, &r);
    assert_true(r.fits && r.n_gpu_layers > 0 && r.n_gpu_layers < 48 && !r.output_on_gpu);
    assert_non_null(strstr(r.note, "run on the CPU"));
    assert_true(r.predicted_decode_tok_s > 0.0);
    ft_plan_result_release(&r);
    x->b.vram_bytes = 1 * MIB; /* not even the scratch */
    assert_null(ft_planner_solve(&x->m, &x->hw, &x->b, &r));
    assert_true(r.cpu_only && r.vram_used == 0);
    assert_non_null(strstr(r.note, "below the scratch"));
    ft_plan_result_release(&r);
    free(x);
}

static void test_stream_buffers(void **state)
{
    (void)state;
    inst_t *x = malloc(sizeof *x);
    assert_non_null(x);
    qwen_like(x, 48);
    ft_plan_result_t r;
    assert_null(ft_planner_solve(&x->m, &x->hw, &x->b, &r));
    check_plan(x, &r);
    assert_true(r.stream_buffers && r.vram_stream == 2 * 128 * x->layers[0].expert_bytes);
    assert_true(r.prefill_stream_tokens > 0 && r.prefill_stream_tokens < UINT32_MAX);
    assert_true(r.hit_rate[0] > 0.1 && r.hit_rate[0] < 0.9);
    ft_plan_result_release(&r);
    /* room for the dense part only: buffers dropped, said so */
    uint64_t dense = 48 * 22500000ull + x->m.output_bytes + 48ull * 4096 * 2048;
    x->b.vram_bytes = ft_planner_scratch_bytes(&x->m, &x->b) + dense + 100 * MIB;
    assert_null(ft_planner_solve(&x->m, &x->hw, &x->b, &r));
    check_plan(x, &r);
    assert_true(!r.stream_buffers && r.n_gpu_layers == 48);
    assert_non_null(strstr(r.note, "streaming buffers"));
    assert_true(r.prefill_stream_tokens == UINT32_MAX);
    ft_plan_result_release(&r);
    free(x);
}

static void test_all_resident(void **state)
{
    (void)state;
    inst_t *x = malloc(sizeof *x);
    assert_non_null(x);
    qwen_like(x, 48);
    x->hw.gpu.vram_free_bytes = 40 * GIB;
    ft_plan_result_t r;
    assert_null(ft_planner_solve(&x->m, &x->hw, &x->b, &r));
    check_plan(x, &r);
    assert_true(r.n_slots == 48 * 128 && r.hit_rate[47] == 1.0f);
    assert_true(r.copy_bytes_per_token == 0.0 && r.bottleneck == FT_BOTTLENECK_GPU);
    ft_plan_result_release(&r);
    free(x);
}

static void test_calibration_pins(void **state)
{
    (void)state;
    inst_t *x = malloc(sizeof *x);
    assert_non_null(x);
    qwen_like(x, 48);
    ft_plan_result_t u, p;
    assert_null(ft_planner_solve(&x->m, &x->hw, &x->b, &u));
    for (uint32_t i = 0; i < 48 * 128; i++)
        x->pop[i] = (float)pow((i % 128) + 1.0, -1.2);
    x->m.popularity = x->pop;
    x->m.popularity_stride = 128;
    assert_null(ft_planner_solve(&x->m, &x->hw, &x->b, &p));
    check_plan(x, &p);
    assert_true(p.n_pinned > 0 && u.n_pinned == 0);
    assert_true(p.hit_rate[0] > u.hit_rate[0] + 0.1);
    assert_true(p.pinned[0] == 0); /* layer 0's most popular expert */
    ft_plan_result_release(&u);
    ft_plan_result_release(&p);
    free(x);
}

static void test_unified(void **state)
{
    (void)state;
    inst_t *x = malloc(sizeof *x);
    assert_non_null(x);
    qwen_like(x, 48);
    x->hw.gpu.unified_memory = 1;
    x->hw.gpu.vram_free_bytes = 100 * GIB;
    ft_plan_result_t r;
    assert_null(ft_planner_solve(&x->m, &x->hw, &x->b, &r));
    check_plan(x, &r);
    assert_true(r.unified && r.fits && r.n_slots == 0 && r.qstar[0] == 1.0f);
    assert_true(r.hit_rate[0] == 1.0f && r.copy_bytes_per_token == 0.0);
    ft_plan_result_release(&r);
    free(x);
}

static void test_invalid(void **state)
{
    (void)state;
    inst_t *x = malloc(sizeof *x);
    assert_non_null(x);
    ft_plan_result_t r;
    qwen_like(x, 4);
    x->layers[2].n_used = 200;
    ft_status_t st = ft_planner_solve(&x->m, &x->hw, &x->b, &r);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ft_status_message(st), "layer 2"));
    ft_status_free(st);
    qwen_like(x, 4);
    x->hw.dram_gbs = NAN;
    st = ft_planner_solve(&x->m, &x->hw, &x->b, &r);
    assert_non_null(strstr(ft_status_message(st), "dram_gbs"));
    ft_status_free(st);
    qwen_like(x, 4);
    x->layers[1].expert_bytes = UINT64_MAX / 3;
    st = ft_planner_solve(&x->m, &x->hw, &x->b, &r);
    assert_int_equal(ft_status_code(st), FT_STATUS_OUT_OF_RANGE);
    ft_status_free(st);
    qwen_like(x, 4);
    x->m.popularity = x->pop;
    x->m.popularity_stride = 64;
    st = ft_planner_solve(&x->m, &x->hw, &x->b, &r);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    qwen_like(x, 4);
    x->m.n_layers = 0;
    st = ft_planner_solve(&x->m, &x->hw, &x->b, &r);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    assert_string_equal(ft_bottleneck_name(FT_BOTTLENECK_PCIE), "PCIe");
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_instances),
        cmocka_unit_test(test_ram_refusal),
        cmocka_unit_test(test_no_gpu),
        cmocka_unit_test(test_qstar_limits),
        cmocka_unit_test(test_dense_does_not_fit),
        cmocka_unit_test(test_stream_buffers),
        cmocka_unit_test(test_all_resident),
        cmocka_unit_test(test_calibration_pins),
        cmocka_unit_test(test_unified),
        cmocka_unit_test(test_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
