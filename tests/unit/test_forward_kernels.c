/* The forward pass on the plan's generated CPU kernels (the default)
 * against the same bundle on the reference kernels, every format the
 * generated kernels compute, through the public API.
 *
 * Tolerance. test_codegen_cpu.c bounds one generated product against the
 * reference kernel by 1e-5 of sum |w_i x_i| + 1e-6: both read the same
 * prepared activations, integer block sums are exact, only the float
 * order of the per-block scaling differs (float32 roundoff, ~1e-7). Over
 * the ~15 products of a token these stay ~1e-6 of the largest logit, so
 * FT_FLOAT_TOL = 1e-4 (as in test_forward_f32.c) holds for F32/F16/BF16 at
 * every position. For the 8-bit-activation formats one more event is
 * possible: an activation within roundoff of a rounding boundary of the
 * runtime's activation quantization rounds the other way on one side and
 * moves one element by a quantum, ~1e-2 of the largest logit at worst
 * (test_forward_formats.c, FT_ONE_QUANTUM_TOL = 3e-2); and if that flips a
 * nearly tied top-k routing, the later positions differ by O(1). So for
 * those formats >= 90% of positions must be within FT_FLOAT_TOL and the
 * argmax (greedy token) must agree on >= 90% of positions; a disagreement
 * is only legitimate where the reference's top two logits nearly tie,
 * which is checked for every position whose argmax differs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ref_bundle.h"
#include "ref_check.h"
#include "test_tmp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FT_FLOAT_TOL 1e-4
#define FT_MIN_FRACTION 0.9
/* Two logits this close (relative to the largest) may swap order. */
#define FT_TIE_TOL 3e-2

enum { N_PROMPT = 20, N_CTX = 32 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};

/* Evaluates the prompt on bundle with kernels; fills out (N_PROMPT x V)
 * and the kernels string the engine reports. */
static void eval_prompt(const char *bundle, int kernels, float **out, uint32_t *out_v,
                        char *desc, size_t desc_len)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.kernels = kernels;
    ft_engine_t *e = NULL;
    ft_session_t *s = NULL;
    ft_status_t st = ft_engine_open(bundle, &eo, &e);
    if (st)
        fail_msg("%s", ft_status_message(st));
    const uint32_t V = ft_engine_info(e)->vocab_size;
    snprintf(desc, desc_len, "%s", ft_engine_info(e)->kernels);
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = N_CTX;
    assert_null(ft_session_create(e, &so, &s));
    float *logits = malloc((size_t)N_PROMPT * V * sizeof(float));
    assert_non_null(logits);
    assert_null(ft_session_eval(s, k_prompt, N_PROMPT, logits));
    ft_session_destroy(s);
    ft_engine_close(e);
    *out = logits;
    *out_v = V;
}

static double rel_err(const float *a, const float *b, uint32_t n)
{
    double num = 0.0, den = 0.0;
    for (uint32_t i = 0; i < n; i++) {
        num = fmax(num, fabs((double)a[i] - (double)b[i]));
        den = fmax(den, fabs((double)b[i]));
    }
    return den > 0 ? num / den : num;
}

static uint32_t argmax(const float *a, uint32_t n)
{
    uint32_t k = 0;
    for (uint32_t i = 1; i < n; i++)
        if (a[i] > a[k])
            k = i;
    return k;
}

static void check_format(ft_dtype_t format, int wide)
{
    ft_fixture_opts_t o;
    if (wide)
        ft_ref_wide_opts(&o);
    else
        ft_fixture_opts_init(&o);
    char dir[1024], bundle[2048];
    snprintf(dir, sizeof(dir), "%s/%s", ft_test_tmpdir("kernels"), ft_dtype_name(format));
    ft_status_t st = ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, format, dir, bundle, sizeof(bundle));
    if (st)
        fail_msg("%s", ft_status_message(st));
    float *gen = NULL, *ref = NULL;
    uint32_t V = 0, V2 = 0;
    char gdesc[64], rdesc[64];
    eval_prompt(bundle, FT_KERNELS_GENERATED, &gen, &V, gdesc, sizeof(gdesc));
    eval_prompt(bundle, FT_KERNELS_REFERENCE, &ref, &V2, rdesc, sizeof(rdesc));
    assert_int_equal(V, V2);
    assert_string_equal(rdesc, "reference");
    assert_int_equal(strncmp(gdesc, "generated ", 10), 0);
    const int act_quant = format != FT_DTYPE_F32 && format != FT_DTYPE_F16 && format != FT_DTYPE_BF16;
    uint32_t n_close = 0, n_agree = 0;
    double worst = 0.0;
    for (uint32_t p = 0; p < N_PROMPT; p++) {
        const float *g = gen + (size_t)p * V, *r = ref + (size_t)p * V;
        const double e = rel_err(g, r, V);
        worst = fmax(worst, e);
        n_close += e <= FT_FLOAT_TOL;
        const uint32_t ag = argmax(g, V), ar = argmax(r, V);
        n_agree += ag == ar;
        if (ag != ar) { /* only a near tie in the reference may swap the greedy token */
            double amax = 0.0;
            for (uint32_t i = 0; i < V; i++)
                amax = fmax(amax, fabs((double)r[i]));
            if (!act_quant || (double)(r[ar] - r[ag]) > FT_TIE_TOL * amax)
                fail_msg("%s: position %u: greedy token %u (generated) vs %u (reference), gap %g",
                         ft_dtype_name(format), p, ag, ar, (double)(r[ar] - r[ag]) / amax);
        }
    }
    printf("  %-5s %s: worst position %.2e, %u/%u within %.0e, argmax %u/%u\n",
           ft_dtype_name(format), gdesc, worst, n_close, N_PROMPT, FT_FLOAT_TOL, n_agree, N_PROMPT);
    if (!act_quant)
        assert_true(worst <= FT_FLOAT_TOL);
    assert_true(n_close >= FT_MIN_FRACTION * N_PROMPT);
    assert_true(n_agree >= FT_MIN_FRACTION * N_PROMPT);
    free(gen);
    free(ref);
}

static void test_f32(void **state) { (void)state; check_format(FT_DTYPE_F32, 0); }
static void test_f16(void **state) { (void)state; check_format(FT_DTYPE_F16, 0); }
static void test_bf16(void **state) { (void)state; check_format(FT_DTYPE_BF16, 0); }
static void test_q8_0(void **state) { (void)state; check_format(FT_DTYPE_Q8_0, 0); }
static void test_q4_0(void **state) { (void)state; check_format(FT_DTYPE_Q4_0, 0); }
static void test_q4_k(void **state) { (void)state; check_format(FT_DTYPE_Q4_K, 1); }
static void test_q6_k(void **state) { (void)state; check_format(FT_DTYPE_Q6_K, 1); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f32),  cmocka_unit_test(test_f16),  cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_q8_0), cmocka_unit_test(test_q4_0), cmocka_unit_test(test_q4_k),
        cmocka_unit_test(test_q6_k),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
