/* The float64 reference forward pass (tests/reference) on its own: each op
 * on small inputs checked by hand, top-k and argmax tie rules, and the
 * whole pass on the tiny fixture (finite, deterministic, incremental =
 * one-shot, structural identities when parts of the model are zeroed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ref_bundle.h"
#include "ref_check.h"
#include "ref_forward.h"
#include "ref_ops.h"
#include "test_tmp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_matvec(void **state)
{
    const double w[6] = {1, 2, 3, 4, 5, 6}; /* [3, 2] */
    const double x[2] = {1, -1};
    double y[3];
    ft_ref_matvec(w, 3, 2, x, y);
    assert_true(y[0] == -1.0 && y[1] == -1.0 && y[2] == -1.0);
}

static void test_rmsnorm(void **state)
{
    /* mean(x^2) = (9 + 16) / 2 = 12.5; 1/sqrt(12.5) = 0.28284271247 */
    const double x[2] = {3, 4}, w[2] = {1, 2};
    double y[2];
    ft_ref_rmsnorm(x, w, 2, 0.0, y);
    assert_true(fabs(y[0] - 0.848528137424) < 1e-12);
    assert_true(fabs(y[1] - 2.262741699797) < 1e-12);
    /* eps is added to the mean square: 1/sqrt(13.5) = 0.27216552697 */
    ft_ref_rmsnorm(x, w, 2, 1.0, y);
    assert_true(fabs(y[0] - 0.816496580928) < 1e-12);
    /* in place */
    double z[2] = {3, 4};
    ft_ref_rmsnorm(z, w, 2, 0.0, z);
    assert_true(fabs(z[1] - 2.262741699797) < 1e-12);
}

static void test_rope_neox(void **state)
{
    /* rope_dim 4: pairs (0, 2) and (1, 3); at pos 1 the angles are
     * 10000^0 = 1 rad and 10000^(-2/4) = 0.01 rad.
     * cos 1 = 0.540302305868, sin 1 = 0.841470984808,
     * cos 0.01 = 0.999950000417, sin 0.01 = 0.009999833334 */
    double x[5] = {1, 2, 3, 4, 7};
    ft_ref_rope_neox(x, 4, 1, 10000.0);
    assert_true(fabs(x[0] - (1 * 0.540302305868 - 3 * 0.841470984808)) < 1e-11); /* -1.98410725 */
    assert_true(fabs(x[2] - (1 * 0.841470984808 + 3 * 0.540302305868)) < 1e-11); /*  2.46237790 */
    assert_true(fabs(x[1] - (2 * 0.999950000417 - 4 * 0.009999833334)) < 1e-11); /*  1.95990667 */
    assert_true(fabs(x[3] - (2 * 0.009999833334 + 4 * 0.999950000417)) < 1e-11); /*  4.01976967 */
    assert_true(x[4] == 7.0); /* past rope_dim: untouched */

    /* pos 0 is the identity */
    double y[4] = {1, 2, 3, 4};
    ft_ref_rope_neox(y, 4, 0, 10000.0);
    assert_true(y[0] == 1 && y[1] == 2 && y[2] == 3 && y[3] == 4);

    /* rotations compose: rope(3) of rope(2) == rope(5), and keep the norm */
    double a[8] = {0.3, -1.2, 0.7, 2.0, -0.5, 0.1, 1.1, -0.9}, b[8];
    memcpy(b, a, sizeof(a));
    ft_ref_rope_neox(a, 8, 2, 1e6);
    ft_ref_rope_neox(a, 8, 3, 1e6);
    ft_ref_rope_neox(b, 8, 5, 1e6);
    double na = 0, nb = 0;
    for (int i = 0; i < 8; i++) {
        assert_true(fabs(a[i] - b[i]) < 1e-12);
        na += a[i] * a[i];
        nb += b[i] * b[i];
    }
    assert_true(fabs(na - 8.3) < 1e-12 && fabs(nb - 8.3) < 1e-12);
}

static void test_softmax_silu(void **state)
{
    double p[3] = {0, log(2.0), log(3.0)}; /* -> 1/6, 2/6, 3/6 */
    ft_ref_softmax(p, 3);
    assert_true(fabs(p[0] - 1.0 / 6) < 1e-15 && fabs(p[1] - 2.0 / 6) < 1e-15 &&
                fabs(p[2] - 3.0 / 6) < 1e-15);
    double big[2] = {1000, 1000}; /* no overflow: the max is subtracted */
    ft_ref_softmax(big, 2);
    assert_true(big[0] == 0.5 && big[1] == 0.5);
    assert_true(ft_ref_silu(0.0) == 0.0);
    assert_true(fabs(ft_ref_silu(1.0) - 0.731058578630) < 1e-12);
    assert_true(fabs(ft_ref_silu(-2.0) + 0.238405844044) < 1e-12);
}

static void test_topk_ties(void **state)
{
    uint32_t idx[3];
    const double order[3] = {0.3, 0.1, 0.6};
    ft_ref_topk(order, 3, 2, idx);
    assert_true(idx[0] == 2 && idx[1] == 0); /* descending */
    const double tied[5] = {0.1, 0.5, 0.5, 0.2, 0.5};
    ft_ref_topk(tied, 5, 2, idx);
    assert_true(idx[0] == 1 && idx[1] == 2); /* of three equal, the two lowest */
    ft_ref_topk(tied, 5, 3, idx);
    assert_true(idx[0] == 1 && idx[1] == 2 && idx[2] == 4);
    const double all_eq[4] = {0.25, 0.25, 0.25, 0.25};
    ft_ref_topk(all_eq, 4, 2, idx);
    assert_true(idx[0] == 0 && idx[1] == 1);

    const double d[4] = {1, 3, 3, 2};
    const float f[4] = {1, 3, 3, 2};
    assert_int_equal(ft_ref_argmax_d(d, 4), 1);
    assert_int_equal(ft_ref_argmax_f(f, 4), 1);
}

static void test_rel_err(void **state)
{
    const float a[2] = {1.0f, 2.0f};
    const double r[2] = {1.0, 2.5};
    assert_true(fabs(ft_ref_rel_err(a, r, 2) - 0.2) < 1e-15); /* 0.5 / 2.5 */
    const float nan_row[2] = {1.0f, NAN};
    assert_true(isinf(ft_ref_rel_err(nan_row, r, 2)));
    const double zero[2] = {0, 0};
    const float fz[2] = {0, 0};
    assert_true(ft_ref_rel_err(fz, zero, 2) == 0.0);
}

/* ---- the whole pass on the tiny fixture ---- */

enum { N_TOK = 20 };
static const int32_t k_prompt[N_TOK] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                        256, 31,  400, 401, 2,   88, 199, 17, 17, 500};

static ft_ref_model_t *load_tiny(void)
{
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    char bundle[4096];
    FT_REF_OK(ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_F32, ft_test_tmpdir("ref_tiny"),
                                  bundle, sizeof(bundle)));
    ft_ref_model_t *m = NULL;
    FT_REF_OK(ft_ref_model_load(bundle, &m));
    assert_int_equal(m->vocab_size, 563);
    assert_int_equal(m->d_model, 64);
    return m;
}

static void test_tiny_finite_deterministic(void **state)
{
    ft_ref_model_t *m = load_tiny();
    const uint32_t V = m->vocab_size;
    double *a = malloc(sizeof(double) * N_TOK * V), *b = malloc(sizeof(double) * N_TOK * V);
    assert_non_null(a);
    assert_non_null(b);
    FT_REF_OK(ft_ref_eval(m, k_prompt, N_TOK, a));
    double amax = 0;
    for (size_t i = 0; i < (size_t)N_TOK * V; i++) {
        assert_true(isfinite(a[i]));
        if (fabs(a[i]) > amax) amax = fabs(a[i]);
    }
    assert_true(amax > 0.1 && amax < 1e3); /* a live, sane model */
    /* Deterministic, and the same whether fed at once or in pieces. */
    ft_ref_session_t *s;
    FT_REF_OK(ft_ref_session_create(m, N_TOK, &s));
    FT_REF_OK(ft_ref_session_eval(s, k_prompt, 7, b));
    FT_REF_OK(ft_ref_session_eval(s, k_prompt + 7, N_TOK - 7, b + (size_t)7 * V));
    assert_int_equal(ft_ref_session_n_past(s), N_TOK);
    assert_memory_equal(a, b, sizeof(double) * N_TOK * V);
    /* Positions matter: the same token gives different logits at 2 and 3. */
    assert_true(memcmp(a + 2 * V, a + 3 * V, sizeof(double) * V) != 0);

    /* Errors leave the session as it was. */
    const int32_t bad_hi = (int32_t)V, bad_lo = -1;
    ft_status_t st = ft_ref_session_eval(s, k_prompt, 1, b); /* context full */
    assert_int_equal(ft_status_code(st), FT_STATUS_OUT_OF_RANGE);
    ft_status_free(st);
    ft_ref_session_free(s);
    FT_REF_OK(ft_ref_session_create(m, N_TOK, &s));
    st = ft_ref_session_eval(s, &bad_hi, 1, b);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    st = ft_ref_session_eval(s, &bad_lo, 1, b);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    st = ft_ref_session_eval(s, k_prompt, 0, b);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    assert_int_equal(ft_ref_session_n_past(s), 0);
    ft_ref_session_free(s);
    free(a);
    free(b);
    ft_ref_model_free(m);
}

/* With Wo and every expert's down projection zeroed, no layer changes x:
 * the logits are Woutput (RMSNorm(embd[token]) * output_norm), computed
 * here directly. With only Wo zeroed, positions stop interacting, so a
 * token's logits no longer depend on where it stands. */
static void test_tiny_structure(void **state)
{
    ft_ref_model_t *m = load_tiny();
    const uint32_t V = m->vocab_size, d = m->d_model;
    double *logits = malloc(sizeof(double) * N_TOK * V);
    double *h = malloc(sizeof(double) * d);
    assert_non_null(logits);
    assert_non_null(h);
    for (uint32_t l = 0; l < m->n_layers; l++) {
        ft_ref_layer_t *L = &m->layers[l];
        memset(L->wo, 0, sizeof(double) * d * L->n_heads * L->value_head_dim);
    }
    FT_REF_OK(ft_ref_eval(m, k_prompt, N_TOK, logits));
    /* k_prompt[3] == k_prompt[2] and k_prompt[18] == k_prompt[0] */
    assert_memory_equal(logits + 2 * V, logits + 3 * V, sizeof(double) * V);
    assert_memory_equal(logits + 0 * V, logits + 18 * V, sizeof(double) * V);

    for (uint32_t l = 0; l < m->n_layers; l++) {
        ft_ref_layer_t *L = &m->layers[l];
        memset(L->down, 0, sizeof(double) * L->n_experts * d * L->expert_ffn);
    }
    FT_REF_OK(ft_ref_eval(m, k_prompt, 1, logits));
    const double *e = m->tok_embd + (size_t)k_prompt[0] * d;
    double ss = 0;
    for (uint32_t i = 0; i < d; i++)
        ss += e[i] * e[i];
    for (uint32_t i = 0; i < d; i++)
        h[i] = e[i] / sqrt(ss / d + m->norm_eps) * m->output_norm[i];
    for (uint32_t v = 0; v < V; v++) {
        double want = 0;
        for (uint32_t i = 0; i < d; i++)
            want += m->output[(size_t)v * d + i] * h[i];
        assert_true(fabs(logits[v] - want) <= 1e-12 * (1 + fabs(want)));
    }
    free(logits);
    free(h);
    ft_ref_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matvec),
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_rope_neox),
        cmocka_unit_test(test_softmax_silu),
        cmocka_unit_test(test_topk_ties),
        cmocka_unit_test(test_rel_err),
        cmocka_unit_test(test_tiny_finite_deterministic),
        cmocka_unit_test(test_tiny_structure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
