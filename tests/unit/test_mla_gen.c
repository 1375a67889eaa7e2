/* The generated multi-head latent attention kernel (kernel ABI 5,
 * codegen/cpu/templates/ftt_mla.c) against the reference op's two forms
 * (ft_op_mla_absorbed; ft_op_mla_decompress + ft_op_mla_expanded, which
 * sum in double), on seeded random inputs, for every ISA this machine runs
 * (portable, avx2, avx512), at DeepSeek-V3's head shape (q_nope 128, RoPE
 * 64, kv_lora 512, values 128), the deepseek2 fixtures' (16 / 8 / 32 / 16
 * and 32 / 16 / 128 / 32) and widths no SIMD width divides (12 / 6 / 20 /
 * 10: the scalar loops):
 *
 *  - absorbed: one query row over n_pos keys (a decode token), and a run
 *    of 7 rows at the last 7 positions (a short chunk after a long prefix,
 *    which the executor computes absorbed);
 *  - expanded: a run of 7 query rows at the last 7 positions, each over
 *    the keys up to its own (a prefill chunk after a cached prefix);
 *  - THE STATED TOLERANCE: within FT_MLAG_TOL = 1e-5 of the largest output
 *    of the reference. The kernel sums in float (dots of kv_lora_rank
 *    terms, a float softmax), the reference in double: float rounding of a
 *    512-term dot is ~sqrt(512) 6e-8 ~ 1.4e-6 relative at worst-case
 *    alignment, and a score error e moves a softmax weight by ~e relative;
 *    measured 9e-8 .. 9.1e-7 (portable, avx512);
 *  - a call that reads only the first half of the keys is far outside the
 *    tolerance, so the comparison can fail;
 *  - the emitter refuses keys it cannot generate. */
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

#define FT_MLAG_TOL 1e-5

static uint64_t g_rng = 0x2545f4914f6cdd1dull;

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

typedef struct mla_shape {
    uint32_t nope, rope, r, v, n_pos;
} mla_shape_t;

static const mla_shape_t k_shapes[] = {
    {128, 64, 512, 128, 300}, /* DeepSeek V3 / R1 */
    {16, 8, 32, 16, 64},      /* the deepseek2 fixture */
    {32, 16, 128, 32, 64},    /* the FP8 fixture */
    {12, 6, 20, 10, 40},      /* the scalar loops */
};
enum { N_SHAPES = sizeof(k_shapes) / sizeof(k_shapes[0]), N_RUN = 7 };

static ft_cg_kreq_t req_of(const mla_shape_t *s)
{
    return (ft_cg_kreq_t){FT_KABI_OP_MLA, FT_KABI_FMT_F32, FT_KABI_MLA_AUX(s->rope, s->v), s->nope,
                          s->r};
}

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

static void check_shape(const ft_cpu_module_t *mod, const char *isa, const mla_shape_t *s)
{
    const uint32_t hd = s->nope + s->rope, row = s->r + s->rope, N = s->n_pos;
    /* the softmax scale of V3's YaRN (mscale(40, 1)^2 / sqrt(192)), any shape */
    const ft_mla_shape_t sh = {1, s->nope, s->rope, s->r, s->v, (float)(1.4 / sqrt((double)hd))};
    const ft_kabi_mla_fn fn = ft_cpu_module_find_mla(mod, s->nope, s->rope, s->r, s->v);
    assert_non_null(fn);
    assert_null(ft_cpu_module_find_mla(mod, s->nope, s->rope, s->r, s->v + 1));
    const float wscale = (float)(1.0 / sqrt((double)s->r));
    float *wk = malloc((size_t)s->nope * s->r * sizeof(float)),
          *wv = malloc((size_t)s->v * s->r * sizeof(float)),
          *q = malloc((size_t)N_RUN * hd * sizeof(float)),
          *g = malloc((size_t)N * row * sizeof(float)),
          *kn = malloc((size_t)N * s->nope * sizeof(float)),
          *vv = malloc((size_t)N * s->v * sizeof(float)),
          *o_ref = malloc((size_t)N_RUN * s->v * sizeof(float)),
          *o_gen = malloc((size_t)N_RUN * s->v * sizeof(float)),
          *scratch = malloc(((size_t)N * (s->nope + s->v + 1) + 2 * (size_t)s->r) * sizeof(float));
    double *d = malloc((2 * (size_t)s->r + N + s->v) * sizeof(double));
    assert_true(wk && wv && q && g && kn && vv && o_ref && o_gen && scratch && d);
    for (size_t i = 0; i < (size_t)s->nope * s->r; i++)
        wk[i] = rnd() * wscale;
    for (size_t i = 0; i < (size_t)s->v * s->r; i++)
        wv[i] = rnd() * wscale;
    for (size_t i = 0; i < (size_t)N_RUN * hd; i++)
        q[i] = rnd();
    for (size_t i = 0; i < (size_t)N * row; i++)
        g[i] = rnd(); /* c normed (unit rms) and a roped key */
    /* absorbed: one row over every key */
    uint32_t n_keys[N_RUN];
    n_keys[0] = N;
    ft_op_mla_absorbed(&sh, wk, wv, q, g, N, d, o_ref);
    fn(wk, wv, q, hd, g, n_keys, 1, 0, sh.scale, scratch, o_gen, s->v);
    const double e_abs = rel_diff(o_gen, o_ref, s->v);
    /* the mutant: only the first half of the keys read */
    n_keys[0] = N / 2;
    fn(wk, wv, q, hd, g, n_keys, 1, 0, sh.scale, scratch, o_gen, s->v);
    const double e_mut = rel_diff(o_gen, o_ref, s->v);
    /* absorbed over a run: N_RUN rows at positions N - N_RUN .. N - 1 (the
     * executor's choice for a short chunk after a long prefix) */
    for (uint32_t t = 0; t < N_RUN; t++) {
        n_keys[t] = N - N_RUN + t + 1;
        ft_op_mla_absorbed(&sh, wk, wv, q + (size_t)t * hd, g, n_keys[t], d,
                           o_ref + (size_t)t * s->v);
    }
    fn(wk, wv, q, hd, g, n_keys, N_RUN, 0, sh.scale, scratch, o_gen, s->v);
    const double e_run = rel_diff(o_gen, o_ref, (size_t)N_RUN * s->v);
    /* expanded: the same rows */
    ft_op_mla_decompress(&sh, wk, wv, g, N, kn, vv);
    for (uint32_t t = 0; t < N_RUN; t++) {
        n_keys[t] = N - N_RUN + t + 1;
        ft_op_mla_expanded(&sh, q + (size_t)t * hd, kn, vv, g, n_keys[t], d,
                           o_ref + (size_t)t * s->v);
    }
    fn(wk, wv, q, hd, g, n_keys, N_RUN, 1, sh.scale, scratch, o_gen, s->v);
    const double e_exp = rel_diff(o_gen, o_ref, (size_t)N_RUN * s->v);
    print_message("%s: nope %u rope %u kv_lora %u v %u, %u keys: absorbed %.2g (%u rows %.2g), "
                  "expanded (%u rows) "
                  "%.2g, half the keys %.2g\n",
                  isa, s->nope, s->rope, s->r, s->v, N, e_abs, N_RUN, e_run, N_RUN, e_exp, e_mut);
    assert_true(e_abs <= FT_MLAG_TOL);
    assert_true(e_run <= FT_MLAG_TOL);
    assert_true(e_exp <= FT_MLAG_TOL);
    assert_true(e_mut > 100 * FT_MLAG_TOL);
    free(wk), free(wv), free(q), free(g), free(kn), free(vv), free(o_ref), free(o_gen),
        free(scratch), free(d);
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
 * compiled everywhere. */
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
        {FT_KABI_OP_MLA, FT_KABI_FMT_F16, FT_KABI_MLA_AUX(8, 16), 16, 32}, /* f32 weights only */
        {FT_KABI_OP_MLA, FT_KABI_FMT_F32, FT_KABI_MLA_AUX(0, 16), 16, 32}, /* no RoPE part */
        {FT_KABI_OP_MLA, FT_KABI_FMT_F32, FT_KABI_MLA_AUX(8, 0), 16, 32},  /* no values */
        {FT_KABI_OP_MLA, FT_KABI_FMT_F32, FT_KABI_MLA_AUX(8, 16), 0, 32},  /* no q_nope */
        {FT_KABI_OP_MLA, FT_KABI_FMT_F32, FT_KABI_MLA_AUX(8, 16), 16, 0}}; /* no kv_lora */
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
