/* The ROUTER op's selection bias (DeepSeek-V3 / GLM-4.5
 * e_score_correction_bias, GGUF exp_probs_b): a vector added to the scores
 * for choosing the experts only; the chosen experts' weights are their
 * unbiased scores (then renormalized and scaled as without it). The tiny
 * Qwen3-MoE fixture is imported, each layer given a bias of 8 values (a
 * tensor in an extra source file) and compiled; the float64 reference
 * reads the same IR. Two routers:
 *
 *  - softmax, renormalized (the fused router does not apply: the generic
 *    path runs with the bias);
 *  - sigmoid, 8 experts in 4 groups of which 2 are used (the groups scored
 *    by their biased scores), weights times 2.5;
 *
 * each on the cpu backend (reference and generated kernels), the sim, and
 * the cuda backend through the fake driver (ft_router_ext; everything
 * resident and with experts out of VRAM): a 20-token prompt's logits
 * within 1e-4 (normalized error; f32 weights, as
 * test_router_variants) with the same argmax, 32 greedy tokens equal; and
 * the reference with the bias is far from the one without (the bias
 * changes the choice). Applying the bias to the weights too (the mutant
 * this test is for) moves the logits by more than 1e-2 here.
 *
 * The validator refuses a bias that is not an f32 vector of the experts,
 * naming the op. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cuda_codegen.h"
#include "ref_bundle.h"
#include "ref_forward.h"
#include "ref_greedy_check.h"
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

#define FT_BIAS_TOL 1e-4
enum { N_PROMPT = 20, N_GEN = 32, N_CTX = 64 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};

typedef enum { ROUTER_SOFTMAX, ROUTER_GROUPED } router_kind_t;

static char g_dir[4096], g_hw[4096];

/* Layer l's bias for expert e: spread over about +-amp, different per
 * layer, large enough against the scores (softmax ~1/8, sigmoid ~1/2) to
 * change which experts are chosen. */
static float bias_value(uint32_t l, uint32_t e, float amp)
{
    return amp * ((float)((e * 5 + l * 3) % 8) - 3.5f) / 3.5f;
}

/* The fixture's IR with the router of kind k and, when biased, a
 * selection bias in every layer (from dir/bias-K.bin). */
static ft_ir_model_t *model_ir(router_kind_t k, int biased)
{
    char src[4200];
    snprintf(src, sizeof(src), "%s/model.gguf", g_dir);
    ft_ir_model_t *ir = NULL;
    FT_REF_OK(ft_import_model(src, &ir));
    const uint32_t L = ir->hp.n_layers, E = ir->blocks[0].moe.n_experts;
    for (uint32_t l = 0; l < L; l++) {
        ft_ir_moe_t *m = &ir->blocks[l].moe;
        assert_true(ir->blocks[l].is_moe);
        if (k == ROUTER_GROUPED) {
            m->scoring = FT_ROUTER_SIGMOID;
            m->n_groups = 4;
            m->n_groups_used = 2;
            m->routed_scaling = 2.5f;
        }
    }
    if (!biased)
        return ir;
    char path[4300];
    snprintf(path, sizeof(path), "%s/bias-%d.bin", g_dir, (int)k);
    float *v = malloc((size_t)L * E * sizeof(float));
    assert_non_null(v);
    for (uint32_t l = 0; l < L; l++)
        for (uint32_t e = 0; e < E; e++)
            v[l * E + e] = bias_value(l, e, k == ROUTER_GROUPED ? 0.15f : 0.06f);
    assert_int_equal(ft_test_write_file(path, v, (size_t)L * E * sizeof(float)), 0);
    free(v);
    /* One more source file, one more tensor per layer. */
    ft_src_file_t *files = ft_arena_array(ir->arena, ir->n_files + 1, sizeof(*files));
    ft_ir_tensor_t *ts = ft_arena_array(ir->arena, ir->n_tensors + L, sizeof(*ts));
    assert_non_null(files);
    assert_non_null(ts);
    memcpy(files, ir->files, ir->n_files * sizeof(*files));
    memcpy(ts, ir->tensors, ir->n_tensors * sizeof(*ts));
    files[ir->n_files] = (ft_src_file_t){ft_arena_strdup(ir->arena, path), (uint64_t)L * E * sizeof(float)};
    for (uint32_t l = 0; l < L; l++) {
        char name[64];
        snprintf(name, sizeof(name), "blk.%u.exp_probs_b.bias", l);
        ft_ir_tensor_t *t = &ts[ir->n_tensors + l];
        memset(t, 0, sizeof(*t));
        t->name = ft_arena_strdup(ir->arena, name);
        t->role = FT_ROLE_FFN_EXP_PROBS_B;
        t->layer = (int32_t)l;
        t->dtype = FT_DTYPE_F32;
        t->n_dims = 1;
        t->shape[0] = E;
        t->n_pieces = 1;
        t->pieces = ft_arena_alloc(ir->arena, sizeof(ft_ir_piece_t));
        assert_non_null(t->pieces);
        t->pieces[0] = (ft_ir_piece_t){ir->n_files, (uint64_t)l * E * sizeof(float), E * sizeof(float)};
    }
    ir->files = files;
    ir->n_files++;
    ir->tensors = ts;
    ir->n_tensors += L;
    FT_REF_OK(ft_ir_model_validate(ir));
    return ir;
}

static void bundle_path(router_kind_t k, char *out, size_t cap)
{
    snprintf(out, cap, "%s/bundle-%d", g_dir, (int)k);
}

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    snprintf(g_dir, sizeof(g_dir), "%s", ft_test_tmpdir("router_bias"));
    char src[4200];
    snprintf(src, sizeof(src), "%s/model.gguf", g_dir);
    ft_status_t st = ft_fixture_write_gguf(&o, src);
    for (int k = ROUTER_SOFTMAX; k <= ROUTER_GROUPED && !st; k++) {
        ft_ir_model_t *ir = model_ir((router_kind_t)k, 1);
        ft_compile_options_t co;
        ft_compile_options_init(&co);
        co.format = FT_DTYPE_F32;
        co.kv_format = FT_DTYPE_F32;
        char out[4300];
        bundle_path((router_kind_t)k, out, sizeof(out));
        st = ft_compile_bundle(ir, &co, out);
        ft_ir_model_destroy(ir);
    }
    if (st) {
        fprintf(stderr, "building the router-bias bundles: %s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    snprintf(g_hw, sizeof(g_hw), "%s/hwprofiles/presets/rtx4090.textproto", FT_SOURCE_DIR);
    return 0;
}

static void reference(router_kind_t k, int biased, uint32_t n_gen, ft_ref_greedy_t *out)
{
    ft_ir_model_t *ir = model_ir(k, biased);
    ft_ref_model_t *m;
    FT_REF_OK(ft_ref_model_from_ir(ir, &m));
    assert_true(!biased == !m->layers[0].sel_bias);
    FT_REF_OK(ft_ref_greedy_reference(m, k_prompt, N_PROMPT, n_gen, N_CTX, out));
    ft_ref_model_free(m);
    ft_ir_model_destroy(ir);
}

static void check_router(router_kind_t k, const char *label)
{
    ft_ref_greedy_t ref, plain;
    reference(k, 1, N_GEN, &ref);
    reference(k, 0, 0, &plain);
    const double d = ft_ref_greedy_apart(&ref, &plain);
    print_message("%s: biased vs unbiased choice (reference): %.3g\n", label, d);
    assert_true(d > 1e-2);
    char bundle[4300], name[128];
    bundle_path(k, bundle, sizeof(bundle));
    static const struct {
        ft_backend_kind_t backend;
        int kernels;
        const char *what;
    } runs[] = {{FT_BACKEND_CPU, FT_KERNELS_REFERENCE, "cpu reference"},
                {FT_BACKEND_CPU, FT_KERNELS_GENERATED, "cpu generated"},
                {FT_BACKEND_SIM, FT_KERNELS_GENERATED, "sim generated"}};
    for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
        ft_engine_options_t eo;
        ft_engine_options_init(&eo);
        eo.backend = runs[i].backend;
        eo.kernels = runs[i].kernels;
        if (runs[i].backend == FT_BACKEND_SIM) {
            eo.hw_profile = g_hw;
            eo.vram_bytes = 2250ull << 10; /* dense weights, KV, scratch and a few experts */
            eo.plan_ctx = N_CTX;
        }
        snprintf(name, sizeof(name), "%s %s", label, runs[i].what);
        ft_ref_expect_greedy(bundle, &eo, N_CTX, k_prompt, &ref, FT_BIAS_TOL, name, 0);
    }
    void *fake = dlopen(FT_CUDA_FAKE_LIB, RTLD_NOW | RTLD_LOCAL);
    if (fake) dlclose(fake);
    if (fake && ft_cg_cuda_nvrtc_available()) {
        setenv("FT_CUDA_LIB", FT_CUDA_FAKE_LIB, 1);
        setenv("FT_CUDA_FAKE_VRAM", "536870912", 1);
        ft_ir_model_t *ir = model_ir(k, 1);
        char cuda[4400];
        snprintf(cuda, sizeof(cuda), "%s-cuda", bundle);
        FT_REF_OK(ft_ref_build_cuda_bundle_ir(ir, cuda));
        ft_ir_model_destroy(ir);
        ft_ref_expect_cuda_runs(cuda, N_CTX, k_prompt, &ref, FT_BIAS_TOL, g_hw, 2500ull << 10,
                                label);
    } else {
        /* as cuda_test_skip.h: a build with NVRTC must run it */
        const char *why = fake ? "no NVRTC" : "the fake CUDA driver does not load";
        if (FT_TEST_NVRTC) fail_msg("cannot run cuda although this build has NVRTC: %s", why);
        print_message("%s: cuda skipped (%s)\n", label, why);
    }
    ft_ref_greedy_free(&ref);
    ft_ref_greedy_free(&plain);
}

static void test_softmax_bias(void **state)
{
    (void)state;
    check_router(ROUTER_SOFTMAX, "softmax + bias");
}

static void test_grouped_sigmoid_bias(void **state)
{
    (void)state;
    check_router(ROUTER_GROUPED, "sigmoid, groups, scale + bias");
}

/* The plan carries the bias as the ROUTER's second weight; a bias of the
 * wrong shape or format is refused, naming the op. */
static void test_validator(void **state)
{
    (void)state;
    char bundle[4300];
    bundle_path(ROUTER_SOFTMAX, bundle, sizeof(bundle));
    ft_bundle_t *b;
    FT_REF_OK(ft_bundle_open(bundle, &b));
    Ftplan__Op *op = NULL;
    size_t at = 0;
    for (size_t i = 0; i < b->plan->schedule->blocks[1]->n_ops && !op; i++)
        if (b->plan->schedule->blocks[1]->ops[i]->kind == FTPLAN__OP_KIND__OP_ROUTER)
            op = b->plan->schedule->blocks[1]->ops[at = i];
    assert_non_null(op);
    assert_int_equal(op->n_weights, 2);
    Ftplan__Tensor *t = b->plan->tensors[op->weights[1]];
    assert_int_equal(t->role, FTPLAN__TENSOR_ROLE__ROLE_FFN_EXP_PROBS_B);
    assert_string_equal(t->name, "blk.1.exp_probs_b.bias");
    char where[64];
    snprintf(where, sizeof(where), "schedule.blocks[1].ops[%zu] (OP_ROUTER)", at);
    const uint32_t bias = op->weights[1];
    /* The router matrix as the bias: not a vector of the experts. */
    op->weights[1] = op->weights[0];
    ft_status_t st = ft_plan_validate(b->plan, "plan.ftp");
    assert_non_null(st);
    print_message("refused: %s\n", ft_status_message(st));
    assert_non_null(strstr(ft_status_message(st), where));
    assert_non_null(strstr(ft_status_message(st), "selection bias"));
    ft_status_free(st);
    /* The FFN norm before it: an f32 vector, of d_model. */
    const Ftplan__Op *norm = b->plan->schedule->blocks[1]->ops[at - 1];
    assert_int_equal(norm->kind, FTPLAN__OP_KIND__OP_RMSNORM);
    op->weights[1] = norm->weights[0];
    st = ft_plan_validate(b->plan, "plan.ftp");
    assert_non_null(st);
    print_message("refused: %s\n", ft_status_message(st));
    assert_non_null(strstr(ft_status_message(st), "selection bias"));
    ft_status_free(st);
    op->weights[1] = bias;
    FT_REF_OK(ft_plan_validate(b->plan, "plan.ftp"));
    ft_bundle_close(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_softmax_bias), cmocka_unit_test(test_grouped_sigmoid_bias),
                                       cmocka_unit_test(test_validator)};
    return cmocka_run_group_tests(tests, setup, NULL);
}
