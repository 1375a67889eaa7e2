/* Dense FFN blocks through the op schedule: a Qwen3-MoE checkpoint whose
 * first layer is a dense SwiGLU FFN (HF config mlp_only_layers [0], as
 * Qwen3-MoE allows), lowered to RMSNORM, LINEAR (gate and up), GLU,
 * LINEAR (down), ADD, and run by the one executor on the cpu backend (the
 * reference kernels and the plan's generated ones), the sim, and the cuda
 * backend through the fake driver, against the float64 reference loaded
 * from the imported IR (which computes a dense FFN as a one-expert MoE of
 * weight exactly 1: the softmax of a single logit):
 *
 *  - a 20-token prompt's logits within 1e-4 (normalized error; an f32
 *    bundle, so float32 rounding in the sums is the only difference, as in
 *    test_forward_f32.c) with the same argmax at every position;
 *  - 32 greedy tokens, one a call, equal to the reference's;
 *  - the sim gives the cpu backend's logits bit for bit.
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
#include "test_tmp.h"

#include "import.h"
#include "ir.h"

#include "../../runtime/format/bundle.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FT_DENSE_TOL 1e-4
enum { N_PROMPT = 20, N_GEN = 32, N_CTX = 64 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};

static char g_dir[4096], g_bundle[4096], g_cuda_bundle[4200], g_hw[4096];
static ft_ref_greedy_t g_ref;

/* The reference's prompt logits and greedy continuation, from the HF
 * source's IR. */
static void reference(void)
{
    char src[4200];
    snprintf(src, sizeof(src), "%s/hf", g_dir);
    ft_ir_model_t *ir = NULL;
    FT_REF_OK(ft_import_model(src, &ir));
    assert_false(ir->blocks[0].is_moe);
    assert_true(ir->blocks[1].is_moe);
    ft_ref_model_t *m;
    FT_REF_OK(ft_ref_model_from_ir(ir, &m));
    FT_REF_OK(ft_ref_greedy_reference(m, k_prompt, N_PROMPT, N_GEN, N_CTX, &g_ref));
    ft_ref_model_free(m);
    ft_ir_model_destroy(ir);
}

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.n_dense_layers = 1;
    snprintf(g_dir, sizeof(g_dir), "%s", ft_test_tmpdir("dense_ffn"));
    ft_status_t st = ft_ref_build_bundle(&o, FT_REF_FROM_HF, FT_DTYPE_F32, g_dir, g_bundle, sizeof(g_bundle));
    if (st) {
        fprintf(stderr, "building the dense-layer bundle: %s\n", ft_status_message(st));
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

/* Block 0's ops: the attention, then the dense FFN. */
static void test_lowering(void **state)
{
    (void)state;
    ft_bundle_t *b;
    FT_REF_OK(ft_bundle_open(g_bundle, &b));
    const Ftplan__BlockOps *blk = b->plan->schedule->blocks[0];
    static const int tail[] = {FTPLAN__OP_KIND__OP_RMSNORM, FTPLAN__OP_KIND__OP_LINEAR, FTPLAN__OP_KIND__OP_GLU,
                               FTPLAN__OP_KIND__OP_LINEAR, FTPLAN__OP_KIND__OP_ADD};
    assert_true(blk->n_ops >= 5);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(blk->ops[blk->n_ops - 5 + i]->kind, tail[i]);
    const Ftplan__Op *gu = blk->ops[blk->n_ops - 4], *glu = blk->ops[blk->n_ops - 3];
    assert_int_equal(gu->n_weights, 2);
    assert_int_equal(glu->act, FTPLAN__ACTIVATION__ACT_SILU);
    assert_int_equal(b->plan->schedule->buffers[glu->inputs[1]]->width, 128); /* the fixture's dense_ffn */
    for (size_t i = 0; i < b->plan->schedule->blocks[1]->n_ops; i++)
        assert_int_not_equal(b->plan->schedule->blocks[1]->ops[i]->kind, FTPLAN__OP_KIND__OP_GLU);
    ft_bundle_close(b);
}

/* One backend against the reference, on bundle; returns its prompt
 * logits. */
static float *check(const char *bundle, ft_backend_kind_t backend, int kernels, const char *name)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = backend;
    eo.kernels = kernels;
    if (backend == FT_BACKEND_SIM) {
        eo.hw_profile = g_hw;
        eo.vram_bytes = 2250ull << 10; /* dense weights, KV, scratch and a few of layer 1's experts */
        eo.plan_ctx = N_CTX;
    } else if (backend == FT_BACKEND_CUDA) {
        eo.vram_bytes = 64ull << 20;
        eo.plan_ctx = N_CTX;
    }
    return ft_ref_expect_greedy(bundle, &eo, N_CTX, k_prompt, &g_ref, FT_DENSE_TOL, name, 1);
}

static void test_cpu_and_sim(void **state)
{
    (void)state;
    if (!g_ref.vocab) reference();
    float *cpu = check(g_bundle, FT_BACKEND_CPU, FT_KERNELS_REFERENCE, "dense ffn cpu reference");
    free(check(g_bundle, FT_BACKEND_CPU, FT_KERNELS_GENERATED, "dense ffn cpu generated"));
    float *sim = check(g_bundle, FT_BACKEND_SIM, FT_KERNELS_REFERENCE, "dense ffn sim reference");
    assert_memory_equal(sim, cpu, sizeof(float) * N_PROMPT * g_ref.vocab); /* the sim: cpu's bits */
    free(sim);
    free(cpu);
}

static void test_cuda(void **state)
{
    (void)state;
    void *fake = dlopen(FT_CUDA_FAKE_LIB, RTLD_NOW | RTLD_LOCAL);
    if (fake) dlclose(fake);
    if (!fake || !ft_cg_cuda_nvrtc_available())
        FT_CUDA_TEST_SKIP(fake ? "no NVRTC" : "the fake CUDA driver does not load");
    if (!g_ref.vocab) reference();
    /* The same source compiled with cubins for the fake's sm_90. */
    char src[4200];
    snprintf(src, sizeof(src), "%s/hf", g_dir);
    snprintf(g_cuda_bundle, sizeof(g_cuda_bundle), "%s/bundle-cuda", g_dir);
    FT_REF_OK(ft_ref_build_cuda_bundle(src, g_cuda_bundle));
    free(check(g_cuda_bundle, FT_BACKEND_CUDA, FT_KERNELS_REFERENCE, "dense ffn cuda (fake driver)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_lowering), cmocka_unit_test(test_cpu_and_sim),
                                       cmocka_unit_test(test_cuda)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
