/* Multi-head latent attention's two forms (runtime/exec/op_mla.c, ops.h)
 * on random heads of DeepSeek-V3's shape (nope 128, rope 64, values 128,
 * a compressed KV of 512) over 1, 7 and 300 positions:
 *
 *  - the float64 reference's expanded and absorbed forms (ref_mla.h) agree
 *    to 1e-12 (relative): the same sums in another order, in double;
 *  - the runtime's absorbed form (a decode token) and its expanded form
 *    (decompress, then attend: prefill) each agree with the reference
 *    within FT_MLA_FORM_TOL and with each other within twice that. The
 *    runtime sums in double over float inputs and rounds the decompressed
 *    keys and values (expanded) or nothing between (absorbed) to float,
 *    so the forms part by float rounding of k_nope and v: about 2^-24
 *    relative per element, amplified by the softmax's exp of scores of
 *    order |q||k| scale; 1e-5 of the output's largest element is a bound
 *    with a wide margin (measured: printed). A mutant that drops the
 *    absorbed form's RoPE part, or scales its scores twice, fails by
 *    orders of magnitude more (checked below). Measured: the reference forms
 *  2e-15 apart, the runtime forms 2e-8 to 6e-8 from the reference and
 *  1.2e-7 from each other over 300 positions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/exec/ops.h"
#include "ref_mla.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FT_MLA_FORM_TOL 1e-5

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static double rnd(void) /* uniform in [-1, 1) */
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / (double)(1ull << 52) - 1.0;
}

/* max |a - b| / max |b| */
static double rel_err(const double *a, const double *b, uint32_t n)
{
    double e = 0.0, m = 1e-30;
    for (uint32_t i = 0; i < n; i++) {
        e = fmax(e, fabs(a[i] - b[i]));
        m = fmax(m, fabs(b[i]));
    }
    return e / m;
}

static void check_positions(uint32_t n_pos)
{
    const ft_mla_shape_t sh = {1, 128, 64, 512, 128, (float)(1.0 / sqrt(192.0))};
    const uint32_t r = sh.kv_lora, row = r + sh.rope, hd = sh.nope + sh.rope;
    float *wk = malloc((size_t)sh.nope * r * sizeof(float)), *wv = malloc((size_t)sh.v * r * sizeof(float));
    float *g = malloc((size_t)n_pos * row * sizeof(float)), *q = malloc(hd * sizeof(float));
    float *kn = malloc((size_t)n_pos * sh.nope * sizeof(float)), *v = malloc((size_t)n_pos * sh.v * sizeof(float));
    double *dwk = malloc((size_t)sh.nope * r * sizeof(double)), *dwv = malloc((size_t)sh.v * r * sizeof(double));
    double *dg = malloc((size_t)n_pos * row * sizeof(double)), *dq = malloc(hd * sizeof(double));
    double *scratch = malloc((2 * (size_t)r + n_pos + sh.v) * sizeof(double));
    float out_a[128], out_e[128];
    double ref_e[128], ref_a[128], got_a[128], got_e[128];
    assert_true(wk && wv && g && q && kn && v && dwk && dwv && dg && dq && scratch);
    /* weights ~ 1/sqrt(r) like a trained projection; c normed (entries ~1),
     * q and the RoPE key of order 1: scores of order a few units */
    for (size_t i = 0; i < (size_t)sh.nope * r; i++) dwk[i] = wk[i] = (float)(rnd() * 0.08);
    for (size_t i = 0; i < (size_t)sh.v * r; i++) dwv[i] = wv[i] = (float)(rnd() * 0.08);
    for (size_t i = 0; i < (size_t)n_pos * row; i++) dg[i] = g[i] = (float)(rnd() * 1.7);
    for (uint32_t i = 0; i < hd; i++) dq[i] = q[i] = (float)(rnd() * 1.7);
    const ft_ref_mla_dims_t dm = {sh.nope, sh.rope, r, sh.v, sh.scale};
    assert_true(ft_ref_mla_head_expanded(&dm, dwk, dwv, dq, dg, n_pos, ref_e));
    assert_true(ft_ref_mla_head_absorbed(&dm, dwk, dwv, dq, dg, n_pos, ref_a));
    const double e_ref = rel_err(ref_a, ref_e, sh.v);
    ft_op_mla_absorbed(&sh, wk, wv, q, g, n_pos, scratch, out_a);
    ft_op_mla_decompress(&sh, wk, wv, g, n_pos, kn, v);
    ft_op_mla_expanded(&sh, q, kn, v, g, n_pos, scratch, out_e);
    for (uint32_t i = 0; i < sh.v; i++) {
        got_a[i] = out_a[i];
        got_e[i] = out_e[i];
    }
    const double e_a = rel_err(got_a, ref_e, sh.v), e_e = rel_err(got_e, ref_e, sh.v),
                 e_ae = rel_err(got_a, got_e, sh.v);
    print_message("%u positions: reference forms %.3g, absorbed %.3g, expanded %.3g, absorbed vs expanded %.3g\n",
                  n_pos, e_ref, e_a, e_e, e_ae);
    assert_true(e_ref <= 1e-12);
    assert_true(e_a <= FT_MLA_FORM_TOL);
    assert_true(e_e <= FT_MLA_FORM_TOL);
    assert_true(e_ae <= 2 * FT_MLA_FORM_TOL);
    /* mutants: the check above can fail */
    ft_mla_shape_t twice = sh;
    twice.scale = sh.scale * 2.0f;
    ft_op_mla_absorbed(&twice, wk, wv, q, g, n_pos, scratch, out_a);
    for (uint32_t i = 0; i < sh.v; i++) got_a[i] = out_a[i];
    if (n_pos > 1) assert_true(rel_err(got_a, ref_e, sh.v) > 1e3 * FT_MLA_FORM_TOL);
    for (uint32_t i = sh.nope; i < hd; i++) q[i] = 0.0f; /* no RoPE part */
    ft_op_mla_absorbed(&sh, wk, wv, q, g, n_pos, scratch, out_a);
    for (uint32_t i = 0; i < sh.v; i++) got_a[i] = out_a[i];
    if (n_pos > 1) assert_true(rel_err(got_a, ref_e, sh.v) > 1e3 * FT_MLA_FORM_TOL);
    free(wk);
    free(wv);
    free(g);
    free(q);
    free(kn);
    free(v);
    free(dwk);
    free(dwv);
    free(dg);
    free(dq);
    free(scratch);
}

static void test_mla_forms(void **state)
{
    (void)state;
    check_positions(1);
    check_positions(7);
    check_positions(300);
}

/* RoPE of the reference over both pairings: position 0 leaves x alone,
 * and a rotation keeps each pair's length (with mscale 1). */
static void test_mla_rope(void **state)
{
    (void)state;
    double x[8], y[8];
    for (int interleaved = 0; interleaved < 2; interleaved++) {
        for (int i = 0; i < 8; i++) x[i] = y[i] = rnd();
        ft_ref_mla_rope(y, 8, interleaved, 0, 10000.0, 4.0, 32, 32.0, 1.0, 1.0);
        for (int i = 0; i < 8; i++) assert_true(fabs(x[i] - y[i]) < 1e-15);
        ft_ref_mla_rope(y, 8, interleaved, 17, 10000.0, 4.0, 32, 32.0, 1.0, 1.0);
        for (int i = 0; i < 4; i++) {
            const int a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + 4;
            assert_true(fabs(hypot(x[a], x[b]) - hypot(y[a], y[b])) < 1e-12);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_mla_forms), cmocka_unit_test(test_mla_rope)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
