/* Sliding-window attention as an ATTENTION op parameter: an HF Mixtral
 * checkpoint whose config sets sliding_window 8 (as Mistral's first
 * releases did; the importer records it per block), compiled with f32
 * weights and KV and run by the one executor on the cpu backend (the
 * reference loop and the plan's generated attention, which read the
 * window's rows of the cache), the sim, and the cuda backend through the
 * fake driver (the attention kernel over the window's rows; no decode
 * graphs, whose launches cannot move the window), against the float64
 * reference with the same window:
 *
 *  - a 20-token prompt's logits within 1e-4 (normalized error; f32, as in
 *    test_forward_f32.c) with the same argmax at every position, and 32
 *    greedy tokens equal to the reference's: positions up to 52, far past
 *    the window;
 *  - the window changes the result: the reference without it is far off.
 * The cuda case skips only where this build has no NVRTC. */
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
#include "ref_ops.h"
#include "test_tmp.h"

#include "import.h"
#include "ir.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FT_SWA_TOL 1e-4
enum { N_PROMPT = 20, N_GEN = 32, N_CTX = 64, WINDOW = 8 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};

static char g_dir[4096], g_bundle[4096], g_cuda_bundle[4200], g_hw[4096];
static ft_ref_greedy_t g_ref;

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.arch = FT_FIXTURE_MIXTRAL;
    o.sliding_window = WINDOW;
    snprintf(g_dir, sizeof(g_dir), "%s", ft_test_tmpdir("sliding_window"));
    ft_status_t st = ft_ref_build_bundle(&o, FT_REF_FROM_HF, FT_DTYPE_F32, g_dir, g_bundle, sizeof(g_bundle));
    if (st) {
        fprintf(stderr, "building the sliding-window bundle: %s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    snprintf(g_hw, sizeof(g_hw), "%s/hwprofiles/presets/rtx4090.textproto", FT_SOURCE_DIR);
    setenv("FT_CUDA_LIB", FT_CUDA_FAKE_LIB, 1);
    setenv("FT_CUDA_FAKE_VRAM", "536870912", 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ft_ref_greedy_free(&g_ref);
    return 0;
}

/* The reference from the HF source's IR, with its window (or without). */
static void reference(uint32_t window, uint32_t n_gen, ft_ref_greedy_t *out)
{
    char src[4200];
    snprintf(src, sizeof(src), "%s/hf", g_dir);
    ft_ir_model_t *ir = NULL;
    FT_REF_OK(ft_import_model(src, &ir));
    for (uint32_t l = 0; l < ir->hp.n_layers; l++)
        assert_int_equal(ir->blocks[l].attn.sliding_window, WINDOW);
    ft_ref_model_t *m;
    FT_REF_OK(ft_ref_model_from_ir(ir, &m));
    for (uint32_t l = 0; l < m->n_layers; l++)
        m->layers[l].sliding_window = window;
    FT_REF_OK(ft_ref_greedy_reference(m, k_prompt, N_PROMPT, n_gen, N_CTX, out));
    ft_ref_model_free(m);
    ft_ir_model_destroy(ir);
}

static void check(const char *bundle, ft_backend_kind_t backend, int kernels, const char *name)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = backend;
    eo.kernels = kernels;
    if (backend == FT_BACKEND_SIM) {
        eo.hw_profile = g_hw;
        eo.vram_bytes = 2250ull << 10; /* dense weights, KV, scratch and a few experts */
        eo.plan_ctx = N_CTX;
    } else if (backend == FT_BACKEND_CUDA) {
        eo.vram_bytes = 64ull << 20;
        eo.plan_ctx = N_CTX;
    }
    ft_ref_expect_greedy(bundle, &eo, N_CTX, k_prompt, &g_ref, FT_SWA_TOL, name, 0);
}

static void test_window_matches_reference(void **state)
{
    (void)state;
    reference(WINDOW, N_GEN, &g_ref);
    ft_ref_greedy_t full;
    reference(0, 0, &full);
    const uint32_t V = g_ref.vocab;
    float *row = malloc(sizeof(float) * V);
    assert_non_null(row);
    double apart = 0, before = 0;
    for (uint32_t p = 0; p < N_PROMPT; p++) {
        for (uint32_t v = 0; v < V; v++)
            row[v] = (float)g_ref.prompt[(size_t)p * V + v];
        const double err = ft_ref_rel_err(row, full.prompt + (size_t)p * V, V);
        if (p < WINDOW)
            before = err > before ? err : before;
        else
            apart = err > apart ? err : apart;
    }
    free(row);
    ft_ref_greedy_free(&full);
    print_message("window vs full attention (reference): %.3g inside the window, %.3g past it\n", before, apart);
    assert_true(before <= 1e-6); /* the same rows (to float rounding) while the sequence fits the window */
    assert_true(apart > 1e-2);
    check(g_bundle, FT_BACKEND_CPU, FT_KERNELS_REFERENCE, "sliding window cpu reference");
    check(g_bundle, FT_BACKEND_CPU, FT_KERNELS_GENERATED, "sliding window cpu generated");
    check(g_bundle, FT_BACKEND_SIM, FT_KERNELS_GENERATED, "sliding window sim generated");
}

static void test_window_cuda(void **state)
{
    (void)state;
    void *fake = dlopen(FT_CUDA_FAKE_LIB, RTLD_NOW | RTLD_LOCAL);
    if (fake) dlclose(fake);
    if (!fake || !ft_cg_cuda_nvrtc_available())
        FT_CUDA_TEST_SKIP(fake ? "no NVRTC" : "the fake CUDA driver does not load");
    if (!g_ref.vocab) reference(WINDOW, N_GEN, &g_ref);
    char src[4200];
    snprintf(src, sizeof(src), "%s/hf", g_dir);
    snprintf(g_cuda_bundle, sizeof(g_cuda_bundle), "%s/bundle-cuda", g_dir);
    FT_REF_OK(ft_ref_build_cuda_bundle(src, g_cuda_bundle));
    check(g_cuda_bundle, FT_BACKEND_CUDA, FT_KERNELS_REFERENCE, "sliding window cuda (fake driver)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_window_matches_reference),
                                       cmocka_unit_test(test_window_cuda)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
