/* The gated attention output (Qwen3-Next, Qwen3.5/3.6 full-attention
 * layers: o = attention * sigmoid(W_gate h), then W_o) as a lowering of
 * existing ops: after the ATTENTION, a LINEAR of the block's normalized
 * input h into the gate's rows and a GLU of activation SIGMOID
 * (g = sigmoid(g) * att), which W_o then reads. The only executor change
 * is that activation. The tiny Qwen3-MoE fixture is imported and each
 * layer given a gate (tensors in an extra source file, as the checkpoints
 * that carry one are not imported yet); the executor runs it on the cpu
 * backend (reference and generated kernels), the sim and the cuda backend
 * through the fake driver:
 *
 *  - the schedule of a block: ... ATTENTION, LINEAR (gate), GLU (sigmoid),
 *    LINEAR (wo reading the gated rows), ADD;
 *  - a 20-token prompt's logits within 1e-4 (normalized error; f32
 *    weights, as test_shared_expert) with the same argmax, 32 greedy
 *    tokens equal, on every backend; the reference with the gate is far
 *    from the one without (a GLU that ignores its activation, or W_o
 *    reading the ungated rows, fails every backend);
 *  - the validator refuses ACT_SIGMOID on a MOE.
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
#include "../../runtime/format/plan_validate.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FT_GATE_TOL 1e-4
enum { N_PROMPT = 20, N_GEN = 32, N_CTX = 64 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};

static char g_dir[4096], g_bundle[4200], g_hw[4096];
static ft_ref_greedy_t g_ref;

/* The fixture's IR, with an output gate in every layer when `gated`. */
static ft_ir_model_t *model_ir(int gated)
{
    char src[4200], path[4300];
    snprintf(src, sizeof(src), "%s/model.gguf", g_dir);
    ft_ir_model_t *ir = NULL;
    FT_REF_OK(ft_import_model(src, &ir));
    if (!gated) return ir;
    const uint32_t L = ir->hp.n_layers, d = ir->hp.d_model;
    assert_true(L <= 8);
    ft_ref_extra_t t[8];
    char names[8][64];
    const uint32_t rows = ir->blocks[0].attn.n_heads * ir->blocks[0].attn.value_head_dim;
    float *data = malloc(sizeof(float) * (size_t)rows * d * L);
    assert_non_null(data);
    for (uint32_t l = 0; l < L; l++) {
        assert_int_equal(ir->blocks[l].attn.n_heads * ir->blocks[l].attn.value_head_dim, rows);
        ir->blocks[l].attn.has_out_gate = 1;
        float *v = data + (size_t)l * rows * d;
        /* wide enough that sigmoid moves well away from 1/2 */
        ft_ref_fill_uniform(v, (uint64_t)rows * d, 300 + l, 0.5f);
        snprintf(names[l], sizeof(names[l]), "blk.%u.attn_gate.weight", l);
        t[l] = (ft_ref_extra_t){names[l], FT_ROLE_ATTN_GATE, (int32_t)l, 2, {rows, d, 0}, v};
    }
    snprintf(path, sizeof(path), "%s/gate.bin", g_dir);
    FT_REF_OK(ft_ref_ir_add_f32(ir, path, t, L));
    free(data);
    return ir;
}

static void reference(int gated, uint32_t n_gen, ft_ref_greedy_t *out)
{
    ft_ir_model_t *ir = model_ir(gated);
    ft_ref_model_t *m;
    FT_REF_OK(ft_ref_model_from_ir(ir, &m));
    assert_true((m->layers[1].w_gate != NULL) == (gated != 0));
    FT_REF_OK(ft_ref_greedy_reference(m, k_prompt, N_PROMPT, n_gen, N_CTX, out));
    ft_ref_model_free(m);
    ft_ir_model_destroy(ir);
}

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    snprintf(g_dir, sizeof(g_dir), "%s", ft_test_tmpdir("attn_gate"));
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
    if (g_ref.vocab) return;
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

/* Block 1's attention tail: the gate between the ATTENTION and W_o. */
static void test_lowering(void **state)
{
    (void)state;
    prepare();
    ft_bundle_t *b;
    FT_REF_OK(ft_bundle_open(g_bundle, &b));
    const Ftplan__BlockOps *blk = b->plan->schedule->blocks[1];
    size_t at = 0;
    while (at < blk->n_ops && blk->ops[at]->kind != FTPLAN__OP_KIND__OP_ATTENTION)
        at++;
    assert_true(at + 5 <= blk->n_ops);
    static const int tail[] = {FTPLAN__OP_KIND__OP_ATTENTION, FTPLAN__OP_KIND__OP_LINEAR,
                               FTPLAN__OP_KIND__OP_GLU, FTPLAN__OP_KIND__OP_LINEAR,
                               FTPLAN__OP_KIND__OP_ADD};
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(blk->ops[at + i]->kind, tail[i]);
    const Ftplan__Op *att = blk->ops[at], *g = blk->ops[at + 1], *glu = blk->ops[at + 2],
                     *wo = blk->ops[at + 3];
    assert_int_equal(b->plan->tensors[g->weights[0]]->role, FTPLAN__TENSOR_ROLE__ROLE_ATTN_GATE);
    assert_int_equal(glu->act, FTPLAN__ACTIVATION__ACT_SIGMOID);
    assert_int_equal(glu->inputs[0], g->outputs[0]);
    assert_int_equal(glu->inputs[1], att->outputs[0]);
    assert_int_equal(wo->inputs[0], glu->outputs[0]);
    assert_int_equal(b->plan->tensors[wo->weights[0]]->role, FTPLAN__TENSOR_ROLE__ROLE_ATTN_O);
    assert_true(b->plan->blocks[1]->attn->has_out_gate);
    /* the gate's LINEAR reads the attention's normalized input */
    assert_int_equal(g->inputs[0], blk->ops[0]->outputs[0]);

    /* The validator: the sigmoid gates GLUs only. */
    const Ftplan__BlockOps *blk0 = b->plan->schedule->blocks[0];
    Ftplan__Op *moe = blk0->ops[blk0->n_ops - 1];
    assert_int_equal(moe->kind, FTPLAN__OP_KIND__OP_MOE);
    const Ftplan__Activation was = moe->act;
    moe->act = FTPLAN__ACTIVATION__ACT_SIGMOID;
    ft_status_t st = ft_plan_validate(b->plan, "gate plan");
    assert_non_null(st);
    print_message("refused: %s\n", ft_status_message(st));
    assert_non_null(strstr(ft_status_message(st), "ACT_SIGMOID"));
    ft_status_free(st);
    moe->act = was;
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
    ft_ref_expect_greedy(g_bundle, &eo, N_CTX, k_prompt, &g_ref, FT_GATE_TOL, name, 0);
}

static void test_cpu_and_sim(void **state)
{
    (void)state;
    prepare();
    ft_ref_greedy_t plain;
    reference(0, 0, &plain);
    const double apart = ft_ref_greedy_apart(&g_ref, &plain);
    ft_ref_greedy_free(&plain);
    print_message("with vs without the output gate (reference): %.3g\n", apart);
    assert_true(apart > 1e-2);
    check(FT_BACKEND_CPU, FT_KERNELS_REFERENCE, "output gate cpu reference");
    check(FT_BACKEND_CPU, FT_KERNELS_GENERATED, "output gate cpu generated");
    check(FT_BACKEND_SIM, FT_KERNELS_GENERATED, "output gate sim generated");
}

static void test_cuda(void **state)
{
    (void)state;
    void *fake = dlopen(FT_CUDA_FAKE_LIB, RTLD_NOW | RTLD_LOCAL);
    if (fake) dlclose(fake);
    if (!fake || !ft_cg_cuda_nvrtc_available())
        FT_CUDA_TEST_SKIP(fake ? "no NVRTC" : "the fake CUDA driver does not load");
    prepare();
    check(FT_BACKEND_CUDA, FT_KERNELS_REFERENCE, "output gate cuda (fake driver)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_lowering),
                                       cmocka_unit_test(test_cpu_and_sim),
                                       cmocka_unit_test(test_cuda)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
