/* libfreetoken's forward pass on an F32 bundle against the float64
 * reference (tests/reference), through the public API only:
 *
 *  - logits of a 20-token prompt within FT_F32_TOL (normalized error, see
 *    below) at every position, and the same argmax everywhere;
 *  - a greedy continuation of 32 tokens, decoded one token at a time,
 *    gives the same tokens as the reference;
 *  - a prompt evaluated in one call, one token per call, and in prefill
 *    chunks smaller than the prompt (n_batch < n) gives bit-identical
 *    logits;
 *  - bundles compiled from the GGUF file and from the HF directory of the
 *    same weights give bit-identical logits and the same greedy tokens.
 *
 * The error of a position is max_i |a_i - r_i| / max_i |r_i| over the
 * vocabulary (runtime a, reference r): logits are only meaningful up to
 * their scale, and an element-wise relative error explodes on logits near
 * zero. FT_F32_TOL = 1e-4: the runtime computes in float32 (unit roundoff
 * u = 6e-8) with float32 accumulation, so a dot product of K <= 64 terms
 * has a relative error of about sqrt(K) u = 5e-7 (at worst K u = 4e-6);
 * two layers of ~10 such products, norms and softmaxes compound that to a
 * few 1e-6. 1e-4 leaves a margin of 20-100x over that, while any real
 * mistake (a wrong RoPE pair, kv head, norm, expert or scale) moves the
 * logits by 1e-2 or more. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ref_bundle.h"
#include "ref_check.h"
#include "ref_forward.h"
#include "ref_ops.h"
#include "ref_runtime.h"
#include "test_tmp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FT_F32_TOL 1e-4
#define FT_TINY_VOCAB 563u /* 256 bytes + 300 merges + 7 specials */

enum { N_PROMPT = 20, N_GEN = 32, N_CTX = 64 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};

static char g_gguf[4096], g_hf[4096];

static int setup(void **state)
{
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    const char *dir = ft_test_tmpdir("f32");
    char work[4096];
    snprintf(work, sizeof(work), "%s/gguf", dir);
    ft_status_t st =
        ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_F32, work, g_gguf, sizeof(g_gguf));
    snprintf(work, sizeof(work), "%s/hf", dir);
    if (!st) st = ft_ref_build_bundle(&o, FT_REF_FROM_HF, FT_DTYPE_F32, work, g_hf, sizeof(g_hf));
    if (st) {
        fprintf(stderr, "building the fixture bundles: %s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    return 0;
}

static void test_prompt_matches_reference(void **state)
{
    ft_ref_model_t *m;
    FT_REF_OK(ft_ref_model_load(g_gguf, &m));
    const uint32_t V = m->vocab_size;
    double *ref = malloc(sizeof(double) * N_PROMPT * V);
    float *rt = malloc(sizeof(float) * N_PROMPT * V);
    assert_non_null(ref);
    assert_non_null(rt);
    FT_REF_OK(ft_ref_eval(m, k_prompt, N_PROMPT, ref));
    FT_REF_OK(ft_ref_runtime_logits(g_gguf, N_CTX, 0, 0, k_prompt, N_PROMPT, rt));
    const ft_ref_cmp_t c = ft_ref_compare(rt, ref, N_PROMPT, V);
    print_message("f32 prompt: max normalized error %.3g at position %u; top-1 agrees on %u/%u\n",
                  c.max_err, c.worst_pos, c.n_top1_agree, N_PROMPT);
    assert_true(c.max_err <= FT_F32_TOL);
    assert_int_equal(c.n_top1_agree, N_PROMPT);
    free(ref);
    free(rt);
    ft_ref_model_free(m);
}

/* Greedy tokens of the runtime: the prompt in one call, then one token a
 * call; out_err receives the largest decode-step error against ref_logits
 * when that is not NULL ((N_GEN) x V reference rows of the steps). */
static void runtime_greedy(const char *bundle, int32_t *out, const double *ref_logits,
                           double *out_err)
{
    ft_engine_t *e;
    ft_session_t *s;
    FT_REF_OK(ft_engine_open(bundle, NULL, &e));
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = N_CTX;
    FT_REF_OK(ft_session_create(e, &so, &s));
    const uint32_t V = ft_engine_info(e)->vocab_size;
    FT_REF_OK(ft_session_eval(s, k_prompt, N_PROMPT, NULL));
    double worst = 0;
    for (int i = 0; i < N_GEN; i++) {
        const float *lg = ft_session_logits(s);
        assert_non_null(lg);
        if (ref_logits) {
            double err = ft_ref_rel_err(lg, ref_logits + (size_t)i * V, V);
            worst = err > worst ? err : worst;
        }
        out[i] = (int32_t)ft_ref_argmax_f(lg, V);
        FT_REF_OK(ft_session_eval(s, &out[i], 1, NULL));
    }
    assert_int_equal(ft_session_n_past(s), N_PROMPT + N_GEN);
    if (out_err) *out_err = worst;
    ft_session_destroy(s);
    ft_engine_close(e);
}

static void test_greedy_matches_reference(void **state)
{
    ft_ref_model_t *m;
    FT_REF_OK(ft_ref_model_load(g_gguf, &m));
    const uint32_t V = m->vocab_size;
    ft_ref_session_t *rs;
    FT_REF_OK(ft_ref_session_create(m, N_CTX, &rs));
    double *prompt_logits = malloc(sizeof(double) * N_PROMPT * V);
    double *step_logits = malloc(sizeof(double) * N_GEN * V);
    assert_non_null(prompt_logits);
    assert_non_null(step_logits);
    FT_REF_OK(ft_ref_session_eval(rs, k_prompt, N_PROMPT, prompt_logits));
    int32_t want[N_GEN], got[N_GEN];
    const double *last = prompt_logits + (size_t)(N_PROMPT - 1) * V;
    for (int i = 0; i < N_GEN; i++) {
        memcpy(step_logits + (size_t)i * V, last, sizeof(double) * V);
        want[i] = (int32_t)ft_ref_argmax_d(last, V);
        FT_REF_OK(ft_ref_session_eval(rs, &want[i], 1, prompt_logits));
        last = prompt_logits;
    }
    double err;
    runtime_greedy(g_gguf, got, step_logits, &err);
    print_message("f32 greedy: %d tokens, max decode-step normalized error %.3g\n", N_GEN, err);
    for (int i = 0; i < N_GEN; i++)
        if (got[i] != want[i])
            fail_msg("greedy token %d: runtime %d, reference %d", i, got[i], want[i]);
    assert_true(err <= FT_F32_TOL);
    ft_ref_session_free(rs);
    free(prompt_logits);
    free(step_logits);
    ft_ref_model_free(m);
}

/* A float row as doubles, in a static buffer (for messages). */
static const double *widen(const float *x, uint32_t n)
{
    static double buf[FT_TINY_VOCAB];
    for (uint32_t i = 0; i < n && i < FT_TINY_VOCAB; i++)
        buf[i] = x[i];
    return buf;
}

/* How a prompt is split into calls and prefill chunks does not change a
 * single bit of its logits when one kind of kernel runs every product:
 * every position's computation is the same sequence of float operations
 * whatever else shares its batch. The default (auto) runs prefill batches
 * on the generated kernels and single tokens on the reference ones, whose
 * float sums differ only in order across blocks: within 1e-5 there. */
static void test_prefill_chunking_exact(void **state)
{
    const uint32_t V = FT_TINY_VOCAB;
    float *one = malloc(sizeof(float) * N_PROMPT * V),
          *other = malloc(sizeof(float) * N_PROMPT * V);
    assert_non_null(one);
    assert_non_null(other);
    const struct {
        uint32_t n_batch, step;
    } ways[] = {{0, 1}, {6, 0}, {3, 7}, {1, 0}, {N_PROMPT, 0}};
    const int kinds[3] = {FT_KERNELS_REFERENCE, FT_KERNELS_GENERATED, FT_KERNELS_AUTO};
    for (int k = 0; k < 3; k++) {
        FT_REF_OK(ft_ref_runtime_logits_k(g_gguf, kinds[k], N_CTX, 0, 0, k_prompt, N_PROMPT, one));
        for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
            FT_REF_OK(ft_ref_runtime_logits_k(g_gguf, kinds[k], N_CTX, ways[w].n_batch, ways[w].step,
                                              k_prompt, N_PROMPT, other));
            for (uint32_t p = 0; p < N_PROMPT; p++) {
                const float *a = one + (size_t)p * V, *b = other + (size_t)p * V;
                const double diff = ft_ref_rel_err(b, widen(a, V), V);
                if (kinds[k] == FT_KERNELS_AUTO ? diff > 1e-5 : memcmp(a, b, sizeof(float) * V) != 0)
                    fail_msg("kernels %d, n_batch %u, %u tokens a call: position %u differs from one "
                             "call of %u tokens (normalized difference %.3g)",
                             kinds[k], ways[w].n_batch, ways[w].step, p, N_PROMPT, diff);
            }
        }
    }
    free(one);
    free(other);
}

static void test_gguf_and_hf_identical(void **state)
{
    const uint32_t V = FT_TINY_VOCAB;
    float *a = malloc(sizeof(float) * N_PROMPT * V), *b = malloc(sizeof(float) * N_PROMPT * V);
    assert_non_null(a);
    assert_non_null(b);
    FT_REF_OK(ft_ref_runtime_logits(g_gguf, N_CTX, 0, 0, k_prompt, N_PROMPT, a));
    FT_REF_OK(ft_ref_runtime_logits(g_hf, N_CTX, 0, 0, k_prompt, N_PROMPT, b));
    assert_memory_equal(a, b, sizeof(float) * N_PROMPT * V);
    int32_t ga[N_GEN], gb[N_GEN];
    runtime_greedy(g_gguf, ga, NULL, NULL);
    runtime_greedy(g_hf, gb, NULL, NULL);
    assert_memory_equal(ga, gb, sizeof(ga));
    /* The reference agrees that the two bundles hold the same model. */
    ft_ref_model_t *ma, *mb;
    FT_REF_OK(ft_ref_model_load(g_gguf, &ma));
    FT_REF_OK(ft_ref_model_load(g_hf, &mb));
    double *ra = malloc(sizeof(double) * N_PROMPT * V), *rb = malloc(sizeof(double) * N_PROMPT * V);
    assert_non_null(ra);
    assert_non_null(rb);
    FT_REF_OK(ft_ref_eval(ma, k_prompt, N_PROMPT, ra));
    FT_REF_OK(ft_ref_eval(mb, k_prompt, N_PROMPT, rb));
    assert_memory_equal(ra, rb, sizeof(double) * N_PROMPT * V);
    ft_ref_model_free(ma);
    ft_ref_model_free(mb);
    free(ra);
    free(rb);
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prompt_matches_reference),
        cmocka_unit_test(test_greedy_matches_reference),
        cmocka_unit_test(test_prefill_chunking_exact),
        cmocka_unit_test(test_gguf_and_hf_identical),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
