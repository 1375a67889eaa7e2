/* The generated Gated DeltaNet recurrence (kernel ABI 4, codegen/cpu/
 * templates/ftt_deltanet.c) against the reference kernel
 * (ft_op_deltanet_token), on seeded random inputs, for every ISA this
 * machine runs (portable, avx2, avx512), at Qwen3.6's shape (32 value heads
 * over 16 key heads of 128, tiled, 4 taps), at the qwen35moe fixture's (4
 * over 2 of 16, tiled), grouped heads (6 over 3 of 16, 3 taps) and a
 * head_dim no SIMD width divides (4 over 2 of 12: the scalar loops):
 *
 *  - the runtime's ft_op_deltanet_prepare (conv, SiLU, norms, g, beta)
 *    then the module's kernel over all tokens in one call, and token by
 *    token with the heads split in three ranges (as the executor's threads
 *    split them), the state carried across calls;
 *  - THE STATED TOLERANCE: outputs and final state (window and S) within
 *    2e-6 of the largest value of the reference's. The reference sums in
 *    double, the kernel in float over SIMD lanes with fused multiply-adds,
 *    so they differ by float rounding (1e-7 to 2e-7 seen), not bit for bit;
 *  - a kernel run that loses the state halfway (S zeroed) is far outside
 *    the tolerance, so the comparison can fail;
 *  - the emitter refuses keys it cannot generate (no key heads, value heads
 *    not whole groups, a state format other than F32). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cpu_module_fixture.h"
#include "../../runtime/backends/cpu/cpu_module.h"
#include "../../runtime/exec/ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FT_DNG_TOL 2e-6

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static float rnd(void) /* roughly N(0, 1) */
{
    float s = 0.0f;
    for (int i = 0; i < 4; i++) {
        g_rng ^= g_rng << 13;
        g_rng ^= g_rng >> 7;
        g_rng ^= g_rng << 17;
        s += (float)(g_rng >> 40) / (float)(1ull << 24);
    }
    return (s - 2.0f) * 1.732f;
}

typedef struct dn_shape {
    uint32_t hv, hk, hd, k;
    int tiled;
    uint32_t n_tok;
} dn_shape_t;

static const dn_shape_t k_shapes[] = {
    {32, 16, 128, 4, 1, 24}, /* Qwen3.6 (35B-A3B) */
    {4, 2, 16, 4, 1, 80},    /* the qwen35moe fixture */
    {6, 3, 16, 3, 0, 80},    /* grouped (Qwen3-Next's layout) */
    {4, 2, 12, 4, 1, 40},    /* the scalar loops */
};
enum { N_SHAPES = sizeof(k_shapes) / sizeof(k_shapes[0]) };

static ft_cg_kreq_t req_of(const dn_shape_t *s)
{
    return (ft_cg_kreq_t){FT_KABI_OP_DELTANET, FT_KABI_FMT_F32,
                          s->hk | (s->tiled ? FT_KABI_DELTANET_TILED : 0), s->hv, s->hd};
}

/* The emitted module of every shape for isa; load: also loaded (this
 * machine runs isa), else only compiled. */
static ft_cpu_module_t *build(const char *isa, int load)
{
    ft_cg_kreq_t reqs[N_SHAPES];
    for (uint32_t i = 0; i < N_SHAPES; i++)
        reqs[i] = req_of(&k_shapes[i]);
    ft_cpu_module_t *mod = NULL;
    const ft_status_t st = ft_test_cpu_module(reqs, N_SHAPES, isa, load ? &mod : NULL);
    if (st) fail_msg("%s", ft_status_message(st));
    if (load)
        assert_int_equal(ft_cpu_module_count(mod), N_SHAPES);
    return mod;
}

static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0.0, m = 0.0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        m = fmax(m, fabs((double)b[i]));
    }
    return m > 0.0 ? d / m : d;
}

static void check_shape(const ft_cpu_module_t *mod, const char *isa, const dn_shape_t *s)
{
    const ft_deltanet_shape_t sh = {s->hv, s->hk, s->hd, s->k, s->tiled, 1e-6f};
    const ft_kabi_deltanet_fn fn = ft_cpu_module_find_deltanet(mod, s->hv, s->hk, s->tiled, s->hd);
    assert_non_null(fn);
    assert_null(ft_cpu_module_find_deltanet(mod, s->hv, s->hk, !s->tiled, s->hd));
    const size_t C = ft_deltanet_channels(&sh), Hv = s->hv, o = Hv * s->hd, N = s->n_tok;
    const size_t nst = ft_deltanet_state_bytes(&sh) / sizeof(float), S0 = (size_t)(s->k - 1) * C;
    float *conv = malloc(C * s->k * sizeof(float)), *dt = malloc(Hv * sizeof(float)),
          *A = malloc(Hv * sizeof(float)), *qkv = malloc(N * C * sizeof(float)),
          *b = malloc(N * Hv * sizeof(float)), *a = malloc(N * Hv * sizeof(float));
    float *st_ref = calloc(nst, sizeof(float)), *st_gen = calloc(nst, sizeof(float));
    float *o_ref = malloc(N * o * sizeof(float)), *o_gen = malloc(N * o * sizeof(float));
    float *y = malloc(N * C * sizeof(float)), *g = malloc(N * Hv * sizeof(float)),
          *beta = malloc(N * Hv * sizeof(float));
    assert_true(conv && dt && A && qkv && b && a && st_ref && st_gen && o_ref && o_gen && y && g &&
                beta);
    for (size_t i = 0; i < C * s->k; i++)
        conv[i] = rnd() * 0.5f;
    for (size_t h = 0; h < Hv; h++) {
        dt[h] = rnd() * 0.5f;
        A[h] = -expf(rnd() * 0.5f);
    }
    for (size_t i = 0; i < N * C; i++)
        qkv[i] = rnd();
    for (size_t i = 0; i < N * Hv; i++) {
        b[i] = rnd();
        a[i] = rnd() - 2.0f; /* slow decay too */
    }
    for (size_t t = 0; t < N; t++)
        ft_op_deltanet_token(&sh, conv, dt, A, qkv + t * C, b + t * Hv, a + t * Hv, st_ref, y,
                             o_ref + t * o);
    /* all tokens in one call */
    ft_op_deltanet_prepare(&sh, conv, dt, A, qkv, b, a, (uint32_t)N, st_gen, y, g, beta);
    fn(y, C, g, beta, (uint32_t)N, 0, s->hv, st_gen + S0, o_gen, o);
    const double e_one = fmax(rel_diff(o_gen, o_ref, N * o), rel_diff(st_gen, st_ref, nst));
    /* token by token, heads in three ranges (the last past the end: clamped) */
    memset(st_gen, 0, nst * sizeof(float));
    memset(o_gen, 0, N * o * sizeof(float));
    const uint32_t cut1 = s->hv / 3, cut2 = 2 * s->hv / 3;
    for (size_t t = 0; t < N; t++) {
        ft_op_deltanet_prepare(&sh, conv, dt, A, qkv + t * C, b + t * Hv, a + t * Hv, 1, st_gen, y,
                               g, beta);
        fn(y, C, g, beta, 1, 0, cut1, st_gen + S0, o_gen + t * o, o);
        fn(y, C, g, beta, 1, cut1, cut2, st_gen + S0, o_gen + t * o, o);
        fn(y, C, g, beta, 1, cut2, s->hv + 5, st_gen + S0, o_gen + t * o, o);
    }
    const double e_dec = fmax(rel_diff(o_gen, o_ref, N * o), rel_diff(st_gen, st_ref, nst));
    /* the mutant: S lost after half the tokens */
    memset(st_gen, 0, nst * sizeof(float));
    const size_t half = N / 2;
    ft_op_deltanet_prepare(&sh, conv, dt, A, qkv, b, a, (uint32_t)half, st_gen, y, g, beta);
    fn(y, C, g, beta, (uint32_t)half, 0, s->hv, st_gen + S0, o_gen, o);
    memset(st_gen + S0, 0, (nst - S0) * sizeof(float));
    ft_op_deltanet_prepare(&sh, conv, dt, A, qkv + half * C, b + half * Hv, a + half * Hv,
                           (uint32_t)(N - half), st_gen, y, g, beta);
    fn(y, C, g, beta, (uint32_t)(N - half), 0, s->hv, st_gen + S0, o_gen + half * o, o);
    const double e_mut = rel_diff(o_gen, o_ref, N * o);
    print_message("%s: %u/%u heads of %u %s, %zu tokens: one call %.2g, token by token %.2g, "
                  "state lost %.2g\n",
                  isa, s->hv, s->hk, s->hd, s->tiled ? "tiled" : "grouped", N, e_one, e_dec, e_mut);
    assert_true(e_one <= FT_DNG_TOL);
    assert_true(e_dec <= FT_DNG_TOL);
    assert_true(e_mut > 100 * FT_DNG_TOL);
    free(conv), free(dt), free(A), free(qkv), free(b), free(a);
    free(st_ref), free(st_gen), free(o_ref), free(o_gen), free(y), free(g), free(beta);
}

static void run_isa(const char *isa)
{
    ft_cpu_module_t *mod = build(isa, 1);
    for (uint32_t i = 0; i < N_SHAPES; i++)
        check_shape(mod, isa, &k_shapes[i]);
    ft_cpu_module_free(mod);
}

static void test_portable(void **state)
{
    (void)state;
    run_isa("portable");
}

/* avx2 and avx512 where this machine runs them; avx512 is at least
 * compiled (its source parsed and built) everywhere. */
static void test_host_isas(void **state)
{
    (void)state;
    const char *isa = ft_cg_cpu_host_isa();
    if (!strcmp(isa, "avx512"))
        run_isa("avx512");
    else
        (void)build("avx512", 0);
    if (strcmp(isa, "portable") != 0) run_isa("avx2");
}

static void test_refused_keys(void **state)
{
    (void)state;
    const ft_cg_kreq_t bad[] = {
        {FT_KABI_OP_DELTANET, FT_KABI_FMT_F32, 0, 4, 16},
        {FT_KABI_OP_DELTANET, FT_KABI_FMT_F32, 3, 4, 16},
        {FT_KABI_OP_DELTANET, FT_KABI_FMT_F16, 2, 4, 16},
        {FT_KABI_OP_DELTANET, FT_KABI_FMT_F32, FT_KABI_DELTANET_TILED, 4, 16},
        {FT_KABI_OP_DELTANET, FT_KABI_FMT_F32, 2, 4, 0}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *src = NULL;
        ft_status_t st = ft_cg_cpu_emit_kernels(&bad[i], 1, "portable", NULL, 0, &src);
        assert_non_null(st);
        assert_null(src);
        ft_status_free(st);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_portable),
                                       cmocka_unit_test(test_host_isas),
                                       cmocka_unit_test(test_refused_keys)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
