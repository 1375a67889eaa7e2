/* Mixtral through the op schedule, with no Mixtral code in the runtime:
 * the fixture (GGUF "llama" with experts, llama.cpp's q/k permutation and
 * interleaved RoPE; HF MixtralForCausalLM with NeoX RoPE on the original
 * rows) compiled to bundles, run by the executor on the cpu backend (the
 * reference kernels and the plan's generated ones) and on the sim backend
 * with a VRAM budget that holds a few of the experts, against the float64
 * reference loaded from the imported IR:
 *
 *  - a 20-token prompt's logits within 1e-4 (normalized error, as in
 *    test_forward_f32.c, whose tolerance argument holds here: the same
 *    float32 arithmetic over the same shapes) with the same argmax;
 *  - 32 greedy tokens, one a call, equal to the reference's;
 *  - the GGUF and HF bundles give the same tokens; the sim gives the cpu
 *    backend's logits bit for bit;
 *  - the cuda backend through the fake driver (both bundles compiled with
 *    cubins: the adjacent-pair and the NeoX RoPE kernel; all experts
 *    resident, and a budget that keeps a few) meets the same bounds. That
 *    case skips only where this build has no NVRTC. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cuda_test_skip.h"
#include "compile.h"
#include "cuda_codegen.h"
#include "ref_bundle.h"
#include "ref_check.h"
#include "ref_forward.h"
#include "ref_ops.h"
#include "test_tmp.h"

#include "import.h"
#include "ir.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FT_MIX_TOL 1e-4
enum { N_PROMPT = 20, N_GEN = 32, N_CTX = 64 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};

static char g_dir[2][4096], g_bundle[2][4096]; /* [0] GGUF, [1] HF */
static char g_cuda_bundle[2][4200];              /* the same with cubins for the fake's sm_90 */
static char g_hw[4096];

static int setup(void **state)
{
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.arch = FT_FIXTURE_MIXTRAL;
    for (int f = 0; f < 2; f++) {
        snprintf(g_dir[f], sizeof(g_dir[f]), "%s/%s", ft_test_tmpdir("mixtral_run"), f ? "hf" : "gguf");
        ft_status_t st = ft_ref_build_bundle(&o, f ? FT_REF_FROM_HF : FT_REF_FROM_GGUF, FT_DTYPE_F32, g_dir[f],
                                             g_bundle[f], sizeof(g_bundle[f]));
        if (st) {
            fprintf(stderr, "building the mixtral bundle: %s\n", ft_status_message(st));
            ft_status_free(st);
            return -1;
        }
    }
    snprintf(g_hw, sizeof(g_hw), "%s/hwprofiles/presets/rtx4090.textproto", FT_SOURCE_DIR);
    return 0;
}

/* The reference's prompt logits and greedy continuation (with each
 * step's logits), from the GGUF source's IR. */
static void reference(double *prompt_logits, int32_t *want, double *step_logits, uint32_t *out_vocab)
{
    char src[4200];
    snprintf(src, sizeof(src), "%s/model.gguf", g_dir[0]);
    ft_ir_model_t *ir = NULL;
    FT_REF_OK(ft_import_model(src, &ir));
    ft_ref_model_t *m;
    FT_REF_OK(ft_ref_model_from_ir(ir, &m));
    const uint32_t V = m->vocab_size;
    ft_ref_session_t *rs;
    FT_REF_OK(ft_ref_session_create(m, N_CTX, &rs));
    FT_REF_OK(ft_ref_session_eval(rs, k_prompt, N_PROMPT, prompt_logits));
    double *last = malloc(sizeof(double) * V);
    assert_non_null(last);
    memcpy(last, prompt_logits + (size_t)(N_PROMPT - 1) * V, sizeof(double) * V);
    for (int i = 0; i < N_GEN; i++) {
        memcpy(step_logits + (size_t)i * V, last, sizeof(double) * V);
        want[i] = (int32_t)ft_ref_argmax_d(last, V);
        FT_REF_OK(ft_ref_session_eval(rs, &want[i], 1, last));
    }
    free(last);
    ft_ref_session_free(rs);
    ft_ref_model_free(m);
    ft_ir_model_destroy(ir);
    *out_vocab = V;
}

typedef struct run_out {
    float *prompt; /* N_PROMPT x V */
    int32_t tokens[N_GEN];
    double worst_step; /* largest decode-step error against the reference */
} run_out_t;

static void run(const char *bundle, ft_backend_kind_t backend, int kernels, const double *step_ref, uint32_t V,
                run_out_t *out)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = backend;
    eo.kernels = kernels;
    if (backend == FT_BACKEND_SIM || kernels < 0) {
        eo.hw_profile = g_hw;
        /* The dense weights, KV and scratch, and a few experts (the cuda
         * backend also keeps the output head: about half the experts). */
        eo.vram_bytes = (backend == FT_BACKEND_SIM ? 2250ull : 2500ull) << 10;
        eo.plan_ctx = N_CTX;
    } else if (backend == FT_BACKEND_CUDA) {
        eo.vram_bytes = 64ull << 20; /* everything resident */
        eo.plan_ctx = N_CTX;
    }
    if (kernels < 0) /* a budget that keeps a few experts, on the reference kernels */
        eo.kernels = FT_KERNELS_REFERENCE;
    ft_engine_t *e;
    FT_REF_OK(ft_engine_open(bundle, &eo, &e));
    assert_string_equal(ft_engine_info(e)->arch, "mixtral");
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = N_CTX;
    ft_session_t *s;
    FT_REF_OK(ft_session_create(e, &so, &s));
    out->prompt = malloc(sizeof(float) * N_PROMPT * V);
    assert_non_null(out->prompt);
    FT_REF_OK(ft_session_eval(s, k_prompt, N_PROMPT, out->prompt));
    out->worst_step = 0;
    for (int i = 0; i < N_GEN; i++) {
        const float *lg = ft_session_logits(s);
        double err = ft_ref_rel_err(lg, step_ref + (size_t)i * V, V);
        out->worst_step = err > out->worst_step ? err : out->worst_step;
        out->tokens[i] = (int32_t)ft_ref_argmax_f(lg, V);
        FT_REF_OK(ft_session_eval(s, &out->tokens[i], 1, NULL));
    }
    ft_session_destroy(s);
    ft_engine_close(e);
}

static void test_mixtral_matches_reference(void **state)
{
    const uint32_t V_MAX = 1024;
    double *ref_prompt = malloc(sizeof(double) * N_PROMPT * V_MAX);
    double *ref_steps = malloc(sizeof(double) * N_GEN * V_MAX);
    assert_non_null(ref_prompt);
    assert_non_null(ref_steps);
    int32_t want[N_GEN];
    uint32_t V;
    reference(ref_prompt, want, ref_steps, &V);
    assert_true(V <= V_MAX);
    static const struct {
        int from;
        ft_backend_kind_t backend;
        int kernels;
        const char *name;
    } cases[] = {
        {0, FT_BACKEND_CPU, FT_KERNELS_REFERENCE, "gguf cpu reference"},
        {0, FT_BACKEND_CPU, FT_KERNELS_GENERATED, "gguf cpu generated"},
        {0, FT_BACKEND_SIM, FT_KERNELS_REFERENCE, "gguf sim reference"},
        {1, FT_BACKEND_CPU, FT_KERNELS_REFERENCE, "hf cpu reference"},
        {1, FT_BACKEND_SIM, FT_KERNELS_GENERATED, "hf sim generated"},
    };
    run_out_t first = {0};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        run_out_t r;
        run(g_bundle[cases[c].from], cases[c].backend, cases[c].kernels, ref_steps, V, &r);
        double worst = 0;
        uint32_t agree = 0;
        for (uint32_t p = 0; p < N_PROMPT; p++) {
            const double err = ft_ref_rel_err(r.prompt + (size_t)p * V, ref_prompt + (size_t)p * V, V);
            worst = err > worst ? err : worst;
            agree += ft_ref_argmax_f(r.prompt + (size_t)p * V, V) == ft_ref_argmax_d(ref_prompt + (size_t)p * V, V);
        }
        print_message("mixtral %s: prompt error %.3g (top-1 %u/%u), decode-step error %.3g\n", cases[c].name,
                      worst, agree, N_PROMPT, r.worst_step);
        assert_true(worst <= FT_MIX_TOL);
        assert_int_equal(agree, N_PROMPT);
        assert_true(r.worst_step <= FT_MIX_TOL);
        for (int i = 0; i < N_GEN; i++)
            if (r.tokens[i] != want[i])
                fail_msg("%s: greedy token %d: runtime %d, reference %d", cases[c].name, i, r.tokens[i], want[i]);
        if (c == 0) {
            first = r;
            continue;
        }
        if (cases[c].from == 0 && cases[c].kernels == FT_KERNELS_REFERENCE) /* the sim: cpu's bits */
            assert_memory_equal(r.prompt, first.prompt, sizeof(float) * N_PROMPT * V);
        free(r.prompt);
    }
    free(first.prompt);
    free(ref_prompt);
    free(ref_steps);
}

/* Mixtral on the cuda backend through the fake driver. */
static void test_mixtral_cuda(void **state)
{
    (void)state;
    void *fake = dlopen(FT_CUDA_FAKE_LIB, RTLD_NOW | RTLD_LOCAL);
    if (fake) dlclose(fake);
    if (!fake || !ft_cg_cuda_nvrtc_available())
        FT_CUDA_TEST_SKIP(fake ? "no NVRTC" : "the fake CUDA driver does not load");
    setenv("FT_CUDA_LIB", FT_CUDA_FAKE_LIB, 1);
    setenv("FT_CUDA_FAKE_VRAM", "536870912", 1);
    for (int f = 0; f < 2; f++) {
        char src[4200];
        snprintf(src, sizeof(src), f ? "%s/hf" : "%s/model.gguf", g_dir[f]);
        snprintf(g_cuda_bundle[f], sizeof(g_cuda_bundle[f]), "%s/bundle-cuda", g_dir[f]);
        ft_ir_model_t *m = NULL;
        FT_REF_OK(ft_import_model(src, &m));
        ft_compile_options_t co;
        ft_compile_options_init(&co);
        co.format = FT_DTYPE_F32;
        co.kv_format = FT_DTYPE_F32; /* the float64 reference at 1e-4: an exact cache */
        co.cuda_archs[0] = 90;
        co.n_cuda_archs = 1;
        ft_status_t st = ft_compile_bundle(m, &co, g_cuda_bundle[f]);
        ft_ir_model_destroy(m);
        FT_REF_OK(st);
    }
    const uint32_t V_MAX = 1024;
    double *ref_prompt = malloc(sizeof(double) * N_PROMPT * V_MAX);
    double *ref_steps = malloc(sizeof(double) * N_GEN * V_MAX);
    assert_non_null(ref_prompt);
    assert_non_null(ref_steps);
    int32_t want[N_GEN];
    uint32_t V;
    reference(ref_prompt, want, ref_steps, &V);
    static const struct {
        int from, kernels;
        const char *name;
    } cases[] = {
        {0, FT_KERNELS_REFERENCE, "gguf cuda, all resident"},
        {1, FT_KERNELS_REFERENCE, "hf cuda, all resident"},
        {0, -1, "gguf cuda, a few experts resident"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        run_out_t r;
        run(g_cuda_bundle[cases[c].from], FT_BACKEND_CUDA, cases[c].kernels, ref_steps, V, &r);
        double worst = 0;
        uint32_t agree = 0;
        for (uint32_t p = 0; p < N_PROMPT; p++) {
            const double err = ft_ref_rel_err(r.prompt + (size_t)p * V, ref_prompt + (size_t)p * V, V);
            worst = err > worst ? err : worst;
            agree += ft_ref_argmax_f(r.prompt + (size_t)p * V, V) == ft_ref_argmax_d(ref_prompt + (size_t)p * V, V);
        }
        print_message("mixtral %s: prompt error %.3g (top-1 %u/%u), decode-step error %.3g\n", cases[c].name,
                      worst, agree, N_PROMPT, r.worst_step);
        assert_true(worst <= FT_MIX_TOL);
        assert_int_equal(agree, N_PROMPT);
        assert_true(r.worst_step <= FT_MIX_TOL);
        for (int i = 0; i < N_GEN; i++)
            if (r.tokens[i] != want[i])
                fail_msg("%s: greedy token %d: runtime %d, reference %d", cases[c].name, i, r.tokens[i], want[i]);
        free(r.prompt);
    }
    free(ref_prompt);
    free(ref_steps);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_mixtral_matches_reference),
                                       cmocka_unit_test(test_mixtral_cuda)};
    return cmocka_run_group_tests(tests, setup, NULL);
}
