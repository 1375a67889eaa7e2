/* The q* split (runtime/plan/qstar.h): the integer solver against brute
 * force over every split on thousands of random instances (random
 * bandwidths, sizes, token counts, hit and miss counts, reuse credits),
 * the fluid fraction against a fine grid, the closed form at decode, the
 * limits PCIe >> DRAM (q* -> 1) and DRAM >> PCIe (q* -> 0), and how the
 * rates are resolved from a profile. Random instances come from a fixed
 * seed: the test is deterministic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/plan/plan_internal.h"
#include "../../runtime/plan/qstar.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

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

/* log-uniform in [lo, hi] */
static double rng_log(double lo, double hi)
{
    return lo * pow(hi / lo, rng_unit());
}

/* Costs as the planner builds them, from random machine figures. */
static void random_costs(ft_qstar_costs_t *c, double *tokens)
{
    ft_qstar_rates_t r = {
        .cpu_bps = rng_log(5e9, 500e9),
        .cpu_flops = rng_log(1e11, 1e13),
        .pcie_bps = rng_log(2e9, 200e9),
        .gpu_bps = rng_log(100e9, 5e12),
        .gpu_flops = rng_log(1e13, 2e15),
        .launch_s = rng_log(1e-6, 2e-5),
    };
    double bytes = rng_log(1e5, 1e8), params = bytes * rng_log(0.5, 4.0);
    *tokens = floor(rng_log(1.0, 2048.0));
    ft_qstar_costs(&r, bytes, params, *tokens, rng_unit(), c);
}

static void test_best_split_vs_brute_force(void **state)
{
    (void)state;
    for (int it = 0; it < 3000; it++) {
        ft_qstar_costs_t c;
        double tokens;
        random_costs(&c, &tokens);
        if (it % 3 == 1) { /* also arbitrary costs, reuse up to the copy time */
            c = (ft_qstar_costs_t){.t_cpu = rng_log(1e-6, 1e-2), .t_pcie = rng_log(1e-6, 1e-2),
                                   .t_gpu = rng_log(1e-7, 1e-2)};
            c.reuse = rng_unit() * c.t_pcie;
        }
        uint32_t hits = (uint32_t)(rng_next() % 40), miss = (uint32_t)(rng_next() % 300);
        if (it % 7 == 0)
            miss = (uint32_t)(rng_next() % 4);
        uint32_t k = ft_qstar_best_split(&c, hits, miss);
        assert_true(k <= miss);
        double best = INFINITY;
        for (uint32_t j = 0; j <= miss; j++)
            best = fmin(best, ft_qstar_objective(&c, hits, miss, j));
        double got = ft_qstar_objective(&c, hits, miss, k);
        if (!(got <= best + 1e-9 * fabs(best) + 1e-18))
            fail_msg("instance %d: H=%u M=%u tc=%g tp=%g tg=%g R=%g: k=%u gives %.17g, "
                     "brute force %.17g", it, hits, miss, c.t_cpu, c.t_pcie, c.t_gpu, c.reuse,
                     k, got, best);
    }
}

static void test_fraction_vs_grid(void **state)
{
    (void)state;
    for (int it = 0; it < 1000; it++) {
        ft_qstar_costs_t c;
        double tokens;
        random_costs(&c, &tokens);
        double eta = it % 4 == 0 ? 0.0 : rng_log(1e-3, 50.0);
        double q = ft_qstar_fraction(&c, eta);
        assert_true(q >= 0.0 && q <= 1.0);
        double got = ft_qstar_fluid_cost(&c, eta, q), best = INFINITY;
        for (int g = 0; g <= 10000; g++)
            best = fmin(best, ft_qstar_fluid_cost(&c, eta, g / 10000.0));
        if (!(got <= best + 1e-9 * fabs(best) + 1e-18))
            fail_msg("instance %d: q=%g cost %.17g > grid %.17g", it, q, got, best);
    }
}

/* Decode, equal experts, GPU time and reuse negligible: the balance of
 * the two queues is B_pcie / (B_pcie + B_cpu), and the integer split on
 * many misses rounds it. */
static void test_closed_form(void **state)
{
    (void)state;
    for (int it = 0; it < 500; it++) {
        double pcie = rng_log(1e9, 1e11), cpu = rng_log(1e9, 1e11), bytes = rng_log(1e5, 1e8);
        ft_qstar_costs_t c = {.t_cpu = bytes / cpu, .t_pcie = bytes / pcie};
        double want = ft_qstar_closed_form(pcie, cpu);
        assert_true(fabs(ft_qstar_fraction(&c, 0.0) - want) < 1e-12);
        uint32_t k = ft_qstar_best_split(&c, 0, 1000);
        assert_true(fabs(k / 1000.0 - want) <= 1.0 / 1000.0 + 1e-12);
    }
}

static void test_limits(void **state)
{
    (void)state;
    ft_qstar_rates_t fast_pcie = {.cpu_bps = 1e9, .cpu_flops = 1e12, .pcie_bps = 1e12,
                                  .gpu_bps = 3e12, .gpu_flops = 1e15, .launch_s = 0.0};
    ft_qstar_rates_t fast_dram = fast_pcie;
    fast_dram.cpu_bps = 1e12;
    fast_dram.pcie_bps = 1e9;
    ft_qstar_costs_t c;
    ft_qstar_costs(&fast_pcie, 1e7, 1e7, 1.0, 0.5, &c);
    assert_true(ft_qstar_fraction(&c, 1.0) > 0.99);
    assert_true(ft_qstar_best_split(&c, 4, 100) >= 99);
    ft_qstar_costs(&fast_dram, 1e7, 1e7, 1.0, 0.5, &c);
    assert_true(ft_qstar_fraction(&c, 1.0) < 0.01);
    assert_true(ft_qstar_best_split(&c, 4, 100) <= 1);
    /* Many tokens per expert make the CPU compute bound: copying wins. */
    ft_qstar_rates_t bal = fast_pcie;
    bal.cpu_bps = bal.pcie_bps = 20e9;
    ft_qstar_costs(&bal, 1e7, 1e7, 1.0, 0.0, &c);
    double q1 = ft_qstar_fraction(&c, 0.0);
    ft_qstar_costs(&bal, 1e7, 1e7, 1024.0, 0.0, &c);
    assert_true(c.cpu_compute_bound);
    assert_true(ft_qstar_fraction(&c, 0.0) > q1);
}

/* Reuse only moves integer near-ties: it never makes more copies than the
 * balance point rounded up. */
static void test_reuse_tips_ties(void **state)
{
    (void)state;
    ft_qstar_costs_t c = {.t_cpu = 1.0, .t_pcie = 1.0, .t_gpu = 0.0, .reuse = 0.0};
    /* M = 3: k = 1 gives max(2, 1) = 2, k = 2 gives max(1, 2) = 2: a tie. */
    assert_int_equal(ft_qstar_best_split(&c, 0, 3), 1);
    c.reuse = 0.25;
    assert_int_equal(ft_qstar_best_split(&c, 0, 3), 2);
    c.reuse = 0.99;
    assert_int_equal(ft_qstar_best_split(&c, 0, 3), 2);
    assert_int_equal(ft_qstar_best_split(&c, 0, 0), 0);
}

static void test_step_time_pipeline(void **state)
{
    (void)state;
    ft_qstar_costs_t c = {.t_cpu = 3.0, .t_pcie = 2.0, .t_gpu = 1.0};
    /* 2 hits, 4 misses, 3 copied: CPU 3; GPU max(5, 2 + 3, 6 + 1) = 7 */
    assert_true(ft_qstar_step_time(&c, 2, 4, 3) == 7.0);
    assert_true(ft_qstar_step_time(&c, 2, 4, 0) == 12.0);
    assert_true(ft_qstar_step_time(&c, 9, 0, 0) == 9.0);
    assert_true(ft_qstar_step_time(&c, 0, 2, 5) == ft_qstar_step_time(&c, 0, 2, 2));
}

static void test_rates_from_hw(void **state)
{
    (void)state;
    ft_hw_t hw;
    memset(&hw, 0, sizeof hw);
    hw.n_cores = 8;
    hw.dram_gbs = 80.0;
    hw.n_gpus = 1;
    hw.gpu.hbm_gbs = 1000.0;
    hw.gpu.h2d_gbs = 25.0;
    ft_qstar_rates_t r;
    ft_qstar_rates_from_hw(&hw, FT_DTYPE_Q4_K, &r);
    assert_true(r.cpu_bps == 80e9 && r.pcie_bps == 25e9 && r.gpu_bps == 1000e9);
    assert_true(r.cpu_flops == 8 * FT_QSTAR_CPU_GFLOPS_PER_CORE * 1e9);
    assert_true(r.gpu_flops == 1000e9 * FT_QSTAR_GPU_FLOP_PER_BYTE);
    assert_false(r.cpu_kernel_bound);
    hw.dram_overlap_gbs = 60.0;
    hw.gpu.h2d_overlap_gbs = 20.0;
    hw.gpu.gather_gbs = 15.0;
    hw.cpu_gemv_gbs[FT_DTYPE_Q4_K] = 40.0;
    ft_qstar_rates_from_hw(&hw, FT_DTYPE_Q4_K, &r);
    assert_true(r.cpu_bps == 40e9 && r.cpu_kernel_bound);
    assert_true(fabs(r.pcie_bps - 15e9 * 20.0 / 25.0) < 1.0);
    hw.n_gpus = 0;
    ft_qstar_rates_from_hw(&hw, FT_DTYPE_INVALID, &r);
    assert_true(r.pcie_bps == 0.0 && r.cpu_bps == 60e9);
}

static int same_rates(const ft_qstar_rates_t *a, const ft_qstar_rates_t *b)
{
    return a->cpu_bps == b->cpu_bps && a->cpu_flops == b->cpu_flops && a->pcie_bps == b->pcie_bps &&
           a->gpu_bps == b->gpu_bps && a->gpu_flops == b->gpu_flops && a->launch_s == b->launch_s &&
           a->cpu_kernel_bound == b->cpu_kernel_bound;
}

/* Experts in several formats (a mix): the CPU and GPU GEMV rates are the
 * parts' combined as the time of the whole; one format throughout gives
 * ft_qstar_rates_from_hw's figures; unknown parts (0 bytes) fall back to
 * the model's format. */
static void test_rates_mixed_parts(void **state)
{
    (void)state;
    ft_hw_t hw;
    memset(&hw, 0, sizeof hw);
    hw.n_cores = 8;
    hw.dram_gbs = 80.0;
    hw.n_gpus = 1;
    hw.gpu.hbm_gbs = 1000.0;
    hw.gpu.h2d_gbs = 25.0;
    hw.cpu_gemv_gbs[FT_DTYPE_Q4_K] = 40.0;
    hw.cpu_gemv_gbs[FT_DTYPE_Q6_K] = 20.0;
    hw.gpu.gemv_gbs[FT_DTYPE_Q4_K] = 800.0;
    const ft_dtype_t same[3] = {FT_DTYPE_Q4_K, FT_DTYPE_Q4_K, FT_DTYPE_Q4_K};
    const ft_dtype_t mix[3] = {FT_DTYPE_Q4_K, FT_DTYPE_Q4_K, FT_DTYPE_Q6_K};
    const uint64_t bytes[3] = {1000, 1000, 1500}, none[3] = {0, 0, 0};
    ft_qstar_rates_t a, b;
    ft_qstar_rates_from_hw(&hw, FT_DTYPE_Q4_K, &a);
    ft_qstar_rates_from_hw_parts(&hw, FT_DTYPE_Q4_K, same, bytes, &b);
    assert_true(same_rates(&a, &b));
    ft_qstar_rates_from_hw_parts(&hw, FT_DTYPE_Q4_K, mix, none, &b);
    assert_true(same_rates(&a, &b));
    ft_qstar_rates_from_hw_parts(&hw, FT_DTYPE_Q4_K, mix, bytes, &b);
    /* 3500 bytes in 2000/40 + 1500/20 = 125 units: 28 GB/s */
    assert_true(fabs(b.cpu_bps - 28e9) < 1e3 && b.cpu_kernel_bound);
    /* the GPU lists Q4_K only: Q6_K's part at HBM speed */
    assert_true(fabs(b.gpu_bps - 3500.0 / (2000.0 / 800.0 + 1500.0 / 1000.0) * 1e9) < 1e3);
    assert_true(b.pcie_bps == a.pcie_bps && b.cpu_flops == a.cpu_flops);
    /* a part in a format without a CPU figure streams at DRAM speed */
    hw.cpu_gemv_gbs[FT_DTYPE_Q6_K] = 0.0;
    ft_qstar_rates_from_hw_parts(&hw, FT_DTYPE_Q4_K, mix, bytes, &b);
    assert_true(fabs(b.cpu_bps - 3500.0 / (2000.0 / 40.0 + 1500.0 / 80.0) * 1e9) < 1e3);
}

/* The q* table takes each layer's own expert formats: of two layers alike
 * but for the down matrix's format, the one whose down runs slowly on the
 * CPU copies at least as many of its misses to the GPU, and more in some
 * bucket; with the formats unknown both follow the model's format. */
static void test_qtable_per_layer_formats(void **state)
{
    (void)state;
    ft_hw_t hw;
    memset(&hw, 0, sizeof hw);
    hw.n_cores = 8;
    hw.dram_gbs = 60.0;
    hw.n_gpus = 1;
    hw.gpu.hbm_gbs = 300.0;
    hw.gpu.h2d_gbs = 25.0;
    hw.cpu_gemv_gbs[FT_DTYPE_Q4_K] = 40.0;
    hw.cpu_gemv_gbs[FT_DTYPE_Q2_K] = 4.0;
    ft_plan_layer_t layers[2];
    memset(layers, 0, sizeof layers);
    for (int l = 0; l < 2; l++) {
        layers[l].is_moe = 1;
        layers[l].n_experts = 64;
        layers[l].n_used = 8;
        layers[l].expert_bytes = 3u << 20;
        layers[l].expert_params = 6u << 20;
        for (int p = 0; p < 3; p++) {
            layers[l].expert_part_format[p] = FT_DTYPE_Q4_K;
            layers[l].expert_part_bytes[p] = 1u << 20;
        }
    }
    layers[1].expert_part_format[2] = FT_DTYPE_Q2_K;
    ft_plan_model_t m;
    memset(&m, 0, sizeof m);
    m.n_layers = 2;
    m.layers = layers;
    m.expert_format = FT_DTYPE_Q4_K;
    float hit[2] = {0.3f, 0.3f};
    ft_plan_result_t res;
    memset(&res, 0, sizeof res);
    res.n_slots = 16;
    res.n_gpu_layers = 2;
    res.hit_rate = hit;
    assert_null(ft_planner_qstar_table(&m, &hw, &res));
    int more = 0;
    for (uint32_t b = 0; b < res.n_buckets; b++) {
        const float q0 = res.qstar[b], q1 = res.qstar[FT_PLAN_MAX_BUCKETS + b];
        assert_true(q1 >= q0);
        more |= q1 > q0;
    }
    assert_true(more);
    free(res.qstar);
    memset(layers[1].expert_part_bytes, 0, sizeof layers[1].expert_part_bytes);
    res.qstar = NULL;
    assert_null(ft_planner_qstar_table(&m, &hw, &res));
    assert_memory_equal(res.qstar, res.qstar + FT_PLAN_MAX_BUCKETS, FT_PLAN_MAX_BUCKETS * sizeof(float));
    free(res.qstar);
}

/* The decode prediction takes the same per-layer rates: on the CPU alone,
 * a model whose experts' down matrices run at a tenth of the other parts'
 * rate is predicted slower, by the CPU time of those bytes. */
static void test_predict_per_layer_formats(void **state)
{
    (void)state;
    ft_hw_t hw;
    memset(&hw, 0, sizeof hw);
    hw.n_cores = 8;
    hw.dram_gbs = 60.0;
    hw.cpu_gemv_gbs[FT_DTYPE_Q4_K] = 40.0;
    hw.cpu_gemv_gbs[FT_DTYPE_Q2_K] = 4.0;
    double tok_s[2];
    for (int v = 0; v < 2; v++) {
        ft_plan_layer_t layers[2];
        memset(layers, 0, sizeof layers);
        for (int l = 0; l < 2; l++) {
            layers[l].is_moe = 1;
            layers[l].n_experts = 64;
            layers[l].n_used = 8;
            layers[l].expert_bytes = 3u << 20;
            layers[l].expert_params = 6u << 20;
            layers[l].dense_bytes = 1u << 20;
            layers[l].dense_params = 2u << 20;
            for (int p = 0; p < 3; p++) {
                layers[l].expert_part_format[p] = v && p == 2 ? FT_DTYPE_Q2_K : FT_DTYPE_Q4_K;
                layers[l].expert_part_bytes[p] = 1u << 20;
            }
        }
        ft_plan_model_t m;
        memset(&m, 0, sizeof m);
        m.n_layers = 2;
        m.layers = layers;
        m.expert_format = FT_DTYPE_Q4_K;
        m.d_model = 1024;
        m.vocab_size = 1000;
        float hit[2] = {0.0f, 0.0f};
        ft_plan_result_t res;
        memset(&res, 0, sizeof res);
        res.cpu_only = 1;
        res.hit_rate = hit;
        const ft_plan_budget_t b = {0, 0, 64, 1};
        ft_planner_predict(&m, &hw, &b, &res);
        tok_s[v] = res.predicted_decode_tok_s;
    }
    print_message("predicted decode: %.2f tok/s all Q4_K, %.2f with Q2_K downs\n", tok_s[0], tok_s[1]);
    assert_true(tok_s[0] > 0.0 && tok_s[1] > 0.0 && tok_s[1] < tok_s[0]);
    /* per step and layer, 8 experts' downs: 8 MiB at 4 instead of 40 GB/s */
    const double extra = 2.0 * 8.0 * (double)(1u << 20) * (1.0 / 4e9 - 1.0 / 40e9);
    assert_true(fabs((1.0 / tok_s[1] - 1.0 / tok_s[0]) - extra) < 1e-3 * extra);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_best_split_vs_brute_force),
        cmocka_unit_test(test_fraction_vs_grid),
        cmocka_unit_test(test_closed_form),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_reuse_tips_ties),
        cmocka_unit_test(test_step_time_pipeline),
        cmocka_unit_test(test_rates_from_hw),
        cmocka_unit_test(test_rates_mixed_parts),
        cmocka_unit_test(test_qtable_per_layer_formats),
        cmocka_unit_test(test_predict_per_layer_formats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
