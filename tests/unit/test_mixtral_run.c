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
#include "cuda_codegen.h"
#include "ref_bundle.h"
#include "ref_forward.h"
#include "ref_greedy_check.h"
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

/* The reference's prompt logits and greedy continuation, from the GGUF
 * source's IR. */
static void reference(ft_ref_greedy_t *out)
{
    char src[4200];
    snprintf(src, sizeof(src), "%s/model.gguf", g_dir[0]);
    ft_ir_model_t *ir = NULL;
    FT_REF_OK(ft_import_model(src, &ir));
    ft_ref_model_t *m;
    FT_REF_OK(ft_ref_model_from_ir(ir, &m));
    FT_REF_OK(ft_ref_greedy_reference(m, k_prompt, N_PROMPT, N_GEN, N_CTX, out));
    ft_ref_model_free(m);
    ft_ir_model_destroy(ir);
}

/* One engine against the reference; kernels < 0: the reference kernels
 * with a budget that keeps a few experts. Returns the prompt logits. */
static float *run(const char *bundle, ft_backend_kind_t backend, int kernels, const ft_ref_greedy_t *ref,
                  const char *name)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = backend;
    eo.kernels = kernels < 0 ? FT_KERNELS_REFERENCE : kernels;
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
    char what[96];
    snprintf(what, sizeof(what), "mixtral %s", name);
    return ft_ref_expect_greedy(bundle, &eo, N_CTX, k_prompt, ref, FT_MIX_TOL, what, 1);
}

static void test_mixtral_matches_reference(void **state)
{
    (void)state;
    ft_ref_greedy_t ref;
    reference(&ref);
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
    float *first = NULL;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        float *prompt = run(g_bundle[cases[c].from], cases[c].backend, cases[c].kernels, &ref, cases[c].name);
        if (c == 0) {
            first = prompt;
            continue;
        }
        if (cases[c].from == 0 && cases[c].kernels == FT_KERNELS_REFERENCE) /* the sim: cpu's bits */
            assert_memory_equal(prompt, first, sizeof(float) * N_PROMPT * ref.vocab);
        free(prompt);
    }
    free(first);
    ft_ref_greedy_free(&ref);
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
        FT_REF_OK(ft_ref_build_cuda_bundle(src, g_cuda_bundle[f]));
    }
    ft_ref_greedy_t ref;
    reference(&ref);
    free(run(g_cuda_bundle[0], FT_BACKEND_CUDA, FT_KERNELS_REFERENCE, &ref, "gguf cuda, all resident"));
    free(run(g_cuda_bundle[1], FT_BACKEND_CUDA, FT_KERNELS_REFERENCE, &ref, "hf cuda, all resident"));
    free(run(g_cuda_bundle[0], FT_BACKEND_CUDA, -1, &ref, "gguf cuda, a few experts resident"));
    ft_ref_greedy_free(&ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_mixtral_matches_reference),
                                       cmocka_unit_test(test_mixtral_cuda)};
    return cmocka_run_group_tests(tests, setup, NULL);
}
