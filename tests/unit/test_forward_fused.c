/* The plan's fused kernels (ABI 2: RMSNorm + activation preparation,
 * router + softmax + top-k, attention over the KV cache) inside the
 * forward pass, against the same generated kernels with the fusions
 * unbound, for every format the generated kernels compute:
 *
 *  - the fusions are bound on the fixtures (every layer, and the output
 *    norm; the K-quant bundles keep an f32 router, so their experts take
 *    rows prepared separately);
 *  - logits of a prefilled prompt and of decode steps after it are
 *    bit-identical with and without them (the fused kernels do the float
 *    operations of the unfused path in the same order, so no tolerance
 *    is needed);
 *  - with the fusions, a prompt evaluated in one call, in prefill chunks
 *    of 3 and one token at a time (the decode path: experts split by rows
 *    over the threads) gives bit-identical logits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/exec/engine_internal.h"
#include "ref_bundle.h"
#include "test_tmp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_PROMPT = 20, N_DECODE = 6, N_CTX = 40 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};

/* Prompt logits (N_PROMPT rows) then N_DECODE greedy decode steps' logits,
 * prefilled in chunks of n_batch (0: the default). */
static float *eval_all(ft_engine_t *e, uint32_t n_batch)
{
    const uint32_t V = ft_engine_info(e)->vocab_size;
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = N_CTX;
    so.n_batch = n_batch;
    ft_session_t *s = NULL;
    assert_null(ft_session_create(e, &so, &s));
    float *out = malloc((size_t)(N_PROMPT + N_DECODE) * V * sizeof(float));
    assert_non_null(out);
    assert_null(ft_session_eval(s, k_prompt, N_PROMPT, out));
    for (uint32_t i = 0; i < N_DECODE; i++) {
        const float *lg = ft_session_logits(s);
        int32_t best = 0;
        for (uint32_t v = 1; v < V; v++)
            if (lg[v] > lg[best])
                best = (int32_t)v;
        assert_null(ft_session_eval(s, &best, 1, NULL));
        memcpy(out + (size_t)(N_PROMPT + i) * V, ft_session_logits(s), V * sizeof(float));
    }
    ft_session_destroy(s);
    return out;
}

static void check_format(ft_dtype_t format, int wide)
{
    ft_fixture_opts_t o;
    if (wide)
        ft_ref_wide_opts(&o);
    else
        ft_fixture_opts_init(&o);
    char dir[1024], bundle[2048];
    snprintf(dir, sizeof(dir), "%s/%s", ft_test_tmpdir("fused"), ft_dtype_name(format));
    ft_status_t st = ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, format, dir, bundle, sizeof(bundle));
    if (st)
        fail_msg("%s", ft_status_message(st));
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.kernels = FT_KERNELS_GENERATED;
    ft_engine_t *e = NULL;
    st = ft_engine_open(bundle, &eo, &e);
    if (st)
        fail_msg("%s", ft_status_message(st));
    ft_model_t *m = e->model;
    assert_non_null(m->output_norm_prepare);
    for (uint32_t l = 0; l < m->n_layers; l++) {
        const ft_layer_t *L = &m->layers[l];
        assert_non_null(L->attn_norm_prepare);
        assert_non_null(L->ffn_norm_prepare);
        assert_non_null(L->router_kernel);
        assert_non_null(L->attn_kernel);
        if (L->gate.dtype != L->router.dtype) /* the experts get their own prepared rows */
            assert_non_null(L->ffn_norm_prepare_experts);
    }
    const size_t n = (size_t)(N_PROMPT + N_DECODE) * m->vocab_size;
    /* chunks of 3 take the tiled products, chunks of 1 the decode path
     * (experts split by rows across threads, router and norm per token) */
    float *fused = eval_all(e, 0), *chunked = eval_all(e, 3), *single = eval_all(e, 1);
    assert_memory_equal(fused, chunked, n * sizeof(float));
    assert_memory_equal(fused, single, n * sizeof(float));
    m->output_norm_prepare = NULL;
    for (uint32_t l = 0; l < m->n_layers; l++) {
        ft_layer_t *L = &m->layers[l];
        L->attn_norm_prepare = L->ffn_norm_prepare = L->ffn_norm_prepare_experts = NULL;
        L->router_kernel = NULL;
        L->attn_kernel = NULL;
    }
    float *plain = eval_all(e, 0);
    for (size_t i = 0; i < n; i++)
        if (fused[i] != plain[i])
            fail_msg("%s: logit %zu (position %zu): fused %.9g, unfused %.9g", ft_dtype_name(format), i,
                     i / m->vocab_size, fused[i], plain[i]);
    printf("  %-5s %s: %zu logits identical with and without the fusions\n", ft_dtype_name(format),
           ft_engine_info(e)->kernels, n);
    free(fused), free(chunked), free(single), free(plain);
    ft_engine_close(e);
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
