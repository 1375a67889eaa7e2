/* Shared experts (DeepSeek-V3, GLM-4.5: always-on experts beside the
 * routed ones, ungated) as a lowering of existing ops: after the ROUTER,
 * the block's normalized input h also feeds LINEAR (gate and up of the
 * shared experts) -> GLU -> LINEAR (down) -> ADD into x, then the MOE adds
 * the routed experts: x + shared, then + routed (the float64 reference
 * adds in the same order). The tiny Qwen3-MoE fixture is imported and each
 * layer given one shared expert of ffn 64 (tensors in an extra source
 * file); the executor runs it unchanged on the cpu backend (reference and
 * generated kernels), the sim and the cuda backend through the fake driver:
 *
 *  - the schedule of a block: ... RMSNORM, ROUTER, LINEAR, GLU, LINEAR, ADD,
 *    MOE with the shared roles on the LINEARs;
 *  - a 20-token prompt's logits within 1e-4 (normalized error; f32
 *    weights, as test_dense_ffn) with the same argmax, 32 greedy tokens
 *    equal, on every backend; the reference with the shared expert is far
 *    from the one without (dropping the shared ADD from the lowering, the
 *    mutant this is for, fails every backend).
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
#include "ref_ir_extra.h"
#include "ref_ops.h"
#include "test_tmp.h"

#include "compile.h"
#include "import.h"
#include "ir.h"

#include "../../runtime/format/bundle.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FT_SHARED_TOL 1e-4
enum { N_PROMPT = 20, N_GEN = 32, N_CTX = 64, SHARED_FFN = 64 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};

static char g_dir[4096], g_bundle[4200], g_hw[4096];
static ft_ref_greedy_t g_ref;

/* The fixture's IR, with one shared expert per layer when `shared`. */
static ft_ir_model_t *model_ir(int shared)
{
    char src[4200], path[4300];
    snprintf(src, sizeof(src), "%s/model.gguf", g_dir);
    ft_ir_model_t *ir = NULL;
    FT_REF_OK(ft_import_model(src, &ir));
    if (!shared)
        return ir;
    const uint32_t L = ir->hp.n_layers, d = ir->hp.d_model, S = SHARED_FFN;
    ft_ref_extra_t t[3 * 8];
    char names[3 * 8][64];
    float *data = malloc(sizeof(float) * 3 * S * d * L);
    assert_non_null(data);
    assert_true(L <= 8);
    static const char *const kind[3] = {"ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp"};
    static const ft_tensor_role_t role[3] = {FT_ROLE_FFN_GATE_SHEXP, FT_ROLE_FFN_UP_SHEXP, FT_ROLE_FFN_DOWN_SHEXP};
    for (uint32_t l = 0; l < L; l++) {
        ir->blocks[l].moe.n_shared_experts = 1;
        ir->blocks[l].moe.shared_ffn = S;
        for (uint32_t k = 0; k < 3; k++) {
            const uint32_t i = l * 3 + k;
            float *v = data + (size_t)i * S * d;
            ft_ref_fill_uniform(v, (uint64_t)S * d, 100 + i, 0.25f);
            snprintf(names[i], sizeof(names[i]), "blk.%u.%s.weight", l, kind[k]);
            t[i] = (ft_ref_extra_t){names[i], role[k], (int32_t)l, 2, {k == 2 ? d : S, k == 2 ? S : d, 0}, v};
        }
    }
    snprintf(path, sizeof(path), "%s/shared.bin", g_dir);
    FT_REF_OK(ft_ref_ir_add_f32(ir, path, t, 3 * L));
    free(data);
    return ir;
}

static void reference(int shared, uint32_t n_gen, ft_ref_greedy_t *out)
{
    ft_ir_model_t *ir = model_ir(shared);
    ft_ref_model_t *m;
    FT_REF_OK(ft_ref_model_from_ir(ir, &m));
    assert_int_equal(m->layers[1].shared_ffn, shared ? SHARED_FFN : 0);
    FT_REF_OK(ft_ref_greedy_reference(m, k_prompt, N_PROMPT, n_gen, N_CTX, out));
    ft_ref_model_free(m);
    ft_ir_model_destroy(ir);
}

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    snprintf(g_dir, sizeof(g_dir), "%s", ft_test_tmpdir("shared_expert"));
    char src[4200];
    snprintf(src, sizeof(src), "%s/model.gguf", g_dir);
    ft_status_t st = ft_fixture_write_gguf(&o, src);
    if (st) {
        fprintf(stderr, "writing the fixture: %s\n", ft_status_message(st));
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

/* The bundle (f32, cubins for the fake's sm_90 where NVRTC is) and the
 * reference, once. */
static void prepare(void)
{
    if (g_ref.vocab)
        return;
    ft_ir_model_t *ir = model_ir(1);
    snprintf(g_bundle, sizeof(g_bundle), "%s/bundle", g_dir);
    if (ft_cg_cuda_nvrtc_available()) {
        FT_REF_OK(ft_ref_build_cuda_bundle_ir(ir, g_bundle));
    } else {
        ft_compile_options_t co;
        ft_compile_options_init(&co);
        co.format = FT_DTYPE_F32;
        co.kv_format = FT_DTYPE_F32;
        FT_REF_OK(ft_compile_bundle(ir, &co, g_bundle));
    }
    ft_ir_model_destroy(ir);
    reference(1, N_GEN, &g_ref);
}

/* Block 1's FFN ops: the shared expert between the ROUTER and the MOE. */
static void test_lowering(void **state)
{
    (void)state;
    prepare();
    ft_bundle_t *b;
    FT_REF_OK(ft_bundle_open(g_bundle, &b));
    const Ftplan__BlockOps *blk = b->plan->schedule->blocks[1];
    static const int tail[] = {FTPLAN__OP_KIND__OP_RMSNORM, FTPLAN__OP_KIND__OP_ROUTER, FTPLAN__OP_KIND__OP_LINEAR,
                               FTPLAN__OP_KIND__OP_GLU,     FTPLAN__OP_KIND__OP_LINEAR, FTPLAN__OP_KIND__OP_ADD,
                               FTPLAN__OP_KIND__OP_MOE};
    const size_t n = sizeof(tail) / sizeof(tail[0]);
    assert_true(blk->n_ops >= n);
    const size_t at = blk->n_ops - n;
    for (size_t i = 0; i < n; i++)
        assert_int_equal(blk->ops[at + i]->kind, tail[i]);
    const Ftplan__Op *gu = blk->ops[at + 2], *down = blk->ops[at + 4];
    assert_int_equal(gu->n_weights, 2);
    assert_int_equal(b->plan->tensors[gu->weights[0]]->role, FTPLAN__TENSOR_ROLE__ROLE_FFN_GATE_SHEXP);
    assert_int_equal(b->plan->tensors[gu->weights[1]]->role, FTPLAN__TENSOR_ROLE__ROLE_FFN_UP_SHEXP);
    assert_int_equal(b->plan->tensors[down->weights[0]]->role, FTPLAN__TENSOR_ROLE__ROLE_FFN_DOWN_SHEXP);
    assert_int_equal(b->plan->schedule->buffers[gu->outputs[0]]->width, SHARED_FFN);
    /* the ADD goes into the MOE's output (x) */
    assert_int_equal(blk->ops[at + 5]->outputs[0], blk->ops[at + 6]->outputs[0]);
    ft_bundle_close(b);
}

static void check(ft_backend_kind_t backend, int kernels, const char *name)
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
    ft_ref_expect_greedy(g_bundle, &eo, N_CTX, k_prompt, &g_ref, FT_SHARED_TOL, name, 0);
}

static void test_cpu_and_sim(void **state)
{
    (void)state;
    prepare();
    ft_ref_greedy_t plain;
    reference(0, 0, &plain);
    const double apart = ft_ref_greedy_apart(&g_ref, &plain);
    ft_ref_greedy_free(&plain);
    print_message("with vs without the shared expert (reference): %.3g\n", apart);
    assert_true(apart > 1e-2);
    check(FT_BACKEND_CPU, FT_KERNELS_REFERENCE, "shared expert cpu reference");
    check(FT_BACKEND_CPU, FT_KERNELS_GENERATED, "shared expert cpu generated");
    check(FT_BACKEND_SIM, FT_KERNELS_GENERATED, "shared expert sim generated");
}

static void test_cuda(void **state)
{
    (void)state;
    void *fake = dlopen(FT_CUDA_FAKE_LIB, RTLD_NOW | RTLD_LOCAL);
    if (fake) dlclose(fake);
    if (!fake || !ft_cg_cuda_nvrtc_available())
        FT_CUDA_TEST_SKIP(fake ? "no NVRTC" : "the fake CUDA driver does not load");
    prepare();
    check(FT_BACKEND_CUDA, FT_KERNELS_REFERENCE, "shared expert cuda (fake driver)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_lowering), cmocka_unit_test(test_cpu_and_sim),
                                       cmocka_unit_test(test_cuda)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
