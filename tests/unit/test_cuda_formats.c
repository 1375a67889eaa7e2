/* The cuda backend's numerics per weight format, through the fake CUDA
 * driver (tests/cuda_fake emulates each kernel with its template's
 * arithmetic), against the float64 reference forward pass.
 *
 * The CUDA kernels keep activations in float32 for every weight format and
 * dequantize each weight exactly (a quantized weight is a small integer
 * times a float scale), so the only differences from the float64 reference
 * that runs on the same dequantized weights are float32 rounding in the
 * sums: the float tolerance (1e-4 of the largest logit, the bound the f32
 * bundles meet on the CPU) applies to quantized bundles too, and every
 * position's top-1 token agrees. The CPU kernels instead round activations
 * to 8 bits for every quantized weight format but FP8 (test_forward_formats
 * checks them against a reference that rounds the same way), which is why
 * greedy generations of the two backends may part after a few tokens on
 * quantized bundles while both stay within their format's bound of the
 * reference. Skips where the build has no NVRTC; with NVRTC, a fake driver that does
 * not load fails (cuda_test_skip.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cuda_test_skip.h"
#include "compile.h"
#include "cuda_codegen.h"
#include "import.h"
#include "model_gen.h"
#include "ref_bundle.h"
#include "ref_forward.h"
#include "ref_runtime.h"
#include "test_tmp.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define FT_FLOAT_TOL 1e-4

enum { N_PROMPT = 20, N_CTX = 32 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};
static int g_can_run;

static int setup(void **state)
{
    (void)state;
    void *fake = dlopen(FT_CUDA_FAKE_LIB, RTLD_NOW | RTLD_LOCAL);
    if (fake) dlclose(fake);
    g_can_run = fake && ft_cg_cuda_nvrtc_available();
    setenv("FT_CUDA_LIB", FT_CUDA_FAKE_LIB, 1);
    setenv("FT_CUDA_FAKE_VRAM", "536870912", 1);
    return 0;
}

#define OK(expr)                                                                                   \
    do {                                                                                           \
        ft_status_t st_ = (expr);                                                                  \
        if (st_) fail_msg("%s: %s", #expr, ft_status_message(st_));                                \
    } while (0)

/* The fixture o as GGUF in directory `name`, compiled to `format`
 * (FT_DTYPE_INVALID: as written) with cubins for the fake's sm_90 and no
 * CPU module. */
static void build_opts(const ft_fixture_opts_t *op, const char *name, ft_dtype_t format,
                       char *bundle, size_t cap)
{
    const ft_fixture_opts_t o = *op;
    char dir[4096], src[4200];
    snprintf(dir, sizeof(dir), "%s/%s", ft_test_tmpdir("cuda_formats"), name);
    mkdir(ft_test_tmpdir("cuda_formats"), 0755);
    mkdir(dir, 0755);
    snprintf(src, sizeof(src), "%s/model.gguf", dir);
    snprintf(bundle, cap, "%s/bundle", dir);
    OK(ft_fixture_write_gguf(&o, src));
    ft_ir_model_t *m = NULL;
    OK(ft_import_model(src, &m));
    ft_compile_options_t co;
    ft_compile_options_init(&co);
    co.format = format;
    co.kv_format = FT_DTYPE_F32; /* the float64 reference at 1e-4: an exact cache */
    co.cpu_isa = NULL;
    co.cuda_archs[0] = 90;
    co.n_cuda_archs = 1;
    ft_status_t st = ft_compile_bundle(m, &co, bundle);
    ft_ir_model_destroy(m);
    OK(st);
}

/* The fixture (tiny, or wide for the K-quants) in `format`. */
static void build(ft_dtype_t format, int wide, char *bundle, size_t cap)
{
    ft_fixture_opts_t o;
    if (wide)
        ft_ref_wide_opts(&o);
    else
        ft_fixture_opts_init(&o);
    build_opts(&o, ft_dtype_name(format), format, bundle, cap);
}

/* Every prompt position's logits from the cuda backend, all experts
 * resident. */
static float *cuda_logits(const char *bundle, uint32_t *out_vocab)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = FT_BACKEND_CUDA;
    eo.vram_bytes = 64ull << 20;
    eo.plan_ctx = N_CTX;
    ft_engine_t *e = NULL;
    OK(ft_engine_open(bundle, &eo, &e));
    const uint32_t V = *out_vocab = ft_engine_info(e)->vocab_size;
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = N_CTX;
    ft_session_t *s = NULL;
    OK(ft_session_create(e, &so, &s));
    float *out = malloc(sizeof(float) * N_PROMPT * V);
    assert_non_null(out);
    OK(ft_session_eval(s, k_prompt, N_PROMPT, out));
    ft_session_destroy(s);
    ft_engine_close(e);
    return out;
}

/* The bundle's logits on cuda against the float64 reference on its
 * weights. */
static void check_bundle(const char *bundle, const char *what)
{
    ft_ref_model_t *m = NULL;
    OK(ft_ref_model_load(bundle, &m));
    ft_ref_session_t *rs = NULL;
    OK(ft_ref_session_create(m, N_PROMPT, &rs));
    double *ref = malloc(sizeof(double) * N_PROMPT * m->vocab_size);
    assert_non_null(ref);
    OK(ft_ref_session_eval(rs, k_prompt, N_PROMPT, ref));
    uint32_t V = 0;
    float *gpu = cuda_logits(bundle, &V);
    assert_int_equal(V, m->vocab_size);
    const ft_ref_cmp_t c = ft_ref_compare(gpu, ref, N_PROMPT, V);
    print_message("%s on cuda: max error %.3g at position %u; top-1 agrees on %u/%u\n", what,
                  c.max_err, c.worst_pos, c.n_top1_agree, N_PROMPT);
    assert_true(c.max_err <= FT_FLOAT_TOL);
    assert_int_equal(c.n_top1_agree, N_PROMPT);
    free(gpu);
    free(ref);
    ft_ref_session_free(rs);
    ft_ref_model_free(m);
}

static void check_format(ft_dtype_t format, int wide)
{
    if (!g_can_run) FT_CUDA_TEST_SKIP("no NVRTC, or the fake driver does not load");
    char bundle[4300];
    build(format, wide, bundle, sizeof(bundle));
    check_bundle(bundle, ft_dtype_name(format));
}

/* A Q4_K_M file (Q4_K, Q5_K, Q6_K and Q8_0 tensors: model_gen_mix.c), kept
 * as it is: every tensor decodes exactly, so the float bound holds. */
static void test_q4_k_m_mix(void **state)
{
    (void)state;
    if (!g_can_run) FT_CUDA_TEST_SKIP("no NVRTC, or the fake driver does not load");
    ft_fixture_opts_t o;
    ft_ref_wide_opts(&o);
    o.n_experts = 8;
    o.mix = FT_FIXTURE_MIX_Q4_K_M;
    char bundle[4300];
    build_opts(&o, "q4_k_m", FT_DTYPE_INVALID, bundle, sizeof(bundle));
    check_bundle(bundle, "q4_k_m");
}

static void test_q8_0(void **state)
{
    (void)state;
    check_format(FT_DTYPE_Q8_0, 0);
}

static void test_q4_0(void **state)
{
    (void)state;
    check_format(FT_DTYPE_Q4_0, 0);
}

static void test_q4_k(void **state)
{
    (void)state;
    check_format(FT_DTYPE_Q4_K, 1);
}

static void test_q6_k(void **state)
{
    (void)state;
    check_format(FT_DTYPE_Q6_K, 1);
}

static void test_q4_1(void **state)
{
    (void)state;
    check_format(FT_DTYPE_Q4_1, 0);
}

static void test_q5_0(void **state)
{
    (void)state;
    check_format(FT_DTYPE_Q5_0, 0);
}

static void test_q5_1(void **state)
{
    (void)state;
    check_format(FT_DTYPE_Q5_1, 0);
}

static void test_q2_k(void **state)
{
    (void)state;
    check_format(FT_DTYPE_Q2_K, 1);
}

static void test_q3_k(void **state)
{
    (void)state;
    check_format(FT_DTYPE_Q3_K, 1);
}

static void test_q5_k(void **state)
{
    (void)state;
    check_format(FT_DTYPE_Q5_K, 1);
}

static void test_mxfp4(void **state)
{
    (void)state;
    check_format(FT_DTYPE_MXFP4, 0);
}

/* NVFP4 blocks are 64 values and FP8 blocks 128: the wide fixture. */
static void test_nvfp4(void **state)
{
    (void)state;
    check_format(FT_DTYPE_NVFP4, 1);
}

static void test_fp8(void **state)
{
    (void)state;
    check_format(FT_DTYPE_FP8, 1);
}

/* IQ4_NL (blocks of 32: the tiny fixture) and IQ4_XS (256: the wide one). */
static void test_iq4_nl(void **state)
{
    (void)state;
    check_format(FT_DTYPE_IQ4_NL, 0);
}

static void test_iq4_xs(void **state)
{
    (void)state;
    check_format(FT_DTYPE_IQ4_XS, 1);
}

/* The IQ grid formats (blocks of 256: the wide fixture). */
static void test_iq2_xxs(void **state)
{
    (void)state;
    check_format(FT_DTYPE_IQ2_XXS, 1);
}

static void test_iq2_xs(void **state)
{
    (void)state;
    check_format(FT_DTYPE_IQ2_XS, 1);
}

static void test_iq2_s(void **state)
{
    (void)state;
    check_format(FT_DTYPE_IQ2_S, 1);
}

static void test_iq3_xxs(void **state)
{
    (void)state;
    check_format(FT_DTYPE_IQ3_XXS, 1);
}

static void test_iq3_s(void **state)
{
    (void)state;
    check_format(FT_DTYPE_IQ3_S, 1);
}

/* IQ1_S and IQ1_M (blocks of 256: the wide fixture). */
static void test_iq1_s(void **state)
{
    (void)state;
    check_format(FT_DTYPE_IQ1_S, 1);
}

static void test_iq1_m(void **state)
{
    (void)state;
    check_format(FT_DTYPE_IQ1_M, 1);
}

/* The ternary TQ1_0 and TQ2_0 (blocks of 256). */
static void test_tq1_0(void **state)
{
    (void)state;
    check_format(FT_DTYPE_TQ1_0, 1);
}

static void test_tq2_0(void **state)
{
    (void)state;
    check_format(FT_DTYPE_TQ2_0, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q8_0),       cmocka_unit_test(test_q4_0),
        cmocka_unit_test(test_q4_k),       cmocka_unit_test(test_q6_k),
        cmocka_unit_test(test_mxfp4),      cmocka_unit_test(test_nvfp4),
        cmocka_unit_test(test_fp8),        cmocka_unit_test(test_q2_k),
        cmocka_unit_test(test_q3_k),       cmocka_unit_test(test_q5_k),
        cmocka_unit_test(test_q4_k_m_mix), cmocka_unit_test(test_q4_1),
        cmocka_unit_test(test_q5_0),       cmocka_unit_test(test_q5_1),
        cmocka_unit_test(test_iq4_nl),     cmocka_unit_test(test_iq4_xs),
        cmocka_unit_test(test_iq2_xxs),    cmocka_unit_test(test_iq2_xs),
        cmocka_unit_test(test_iq2_s),      cmocka_unit_test(test_iq3_xxs),
        cmocka_unit_test(test_iq3_s),      cmocka_unit_test(test_iq1_s),
        cmocka_unit_test(test_iq1_m),      cmocka_unit_test(test_tq1_0),
        cmocka_unit_test(test_tq2_0),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
