/* GLM-4.5 (glm4moe) through the op schedule, with no GLM code in the
 * runtime: the fixture (3 layers, the first dense, then MoE with a sigmoid
 * router, its selection bias, weights x 2.5 and one shared expert; q/k
 * norms; q/k/v biases; NeoX RoPE over 8 of each head's 16 dimensions; one
 * MTP block after the decoder) written as GGUF (llama.cpp's glm4moe names
 * and keys) and as HF (Glm4MoeForCausalLM), imported, compiled to f32
 * bundles and run by the executor against the float64 reference loaded
 * from the imported IR:
 *
 *  - both imports give the same IR (the MTP block skipped), with the
 *    hyperparameters the files state;
 *  - on the cpu backend (reference and generated kernels) and the sim (a
 *    budget that keeps a few experts), from GGUF and from HF: a 20-token
 *    prompt's logits within 1e-4 (normalized error; f32 weights, as
 *    test_mixtral_run) with the same argmax, 32 greedy tokens equal;
 *  - the GGUF and HF bundles give the same logits bit for bit, and the
 *    sim the cpu backend's;
 *  - hostile checkpoints are refused naming the key or tensor: an unknown
 *    expert_gating_func, a missing selection bias, a stray tensor, more
 *    MTP layers than blocks, a partial rotary factor that is no whole
 *    number of dimensions;
 *  - the cuda backend (fake driver: ft_bias_add for q/k/v, ft_router_ext
 *    for the sigmoid router with its selection bias and scale) within the
 *    same tolerance with the same greedy tokens, everything resident and
 *    with experts through slots and the CPU; skipped where this build has
 *    no NVRTC. */
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
#include "model_registry.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FT_GLM_TOL 1e-4
enum { N_PROMPT = 20, N_GEN = 32, N_CTX = 64 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};

static char g_dir[2][4096], g_bundle[2][4096]; /* [0] GGUF, [1] HF */
static char g_hw[4096];
static ft_ref_greedy_t g_ref;

static void glm_opts(ft_fixture_opts_t *o)
{
    ft_fixture_opts_init(o);
    o->arch = FT_FIXTURE_GLM4MOE;
    o->name = "freetoken-fixture-glm4moe";
    o->n_layers = 3;
    o->n_dense_layers = 1;
    o->attn_bias = 1;
}

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    glm_opts(&o);
    for (int f = 0; f < 2; f++) {
        snprintf(g_dir[f], sizeof(g_dir[f]), "%s/%s", ft_test_tmpdir("glm4moe_run"), f ? "hf" : "gguf");
        ft_status_t st = ft_ref_build_bundle(&o, f ? FT_REF_FROM_HF : FT_REF_FROM_GGUF, FT_DTYPE_F32, g_dir[f],
                                             g_bundle[f], sizeof(g_bundle[f]));
        if (st) {
            fprintf(stderr, "building the glm4moe bundle: %s\n", ft_status_message(st));
            ft_status_free(st);
            return -1;
        }
    }
    snprintf(g_hw, sizeof(g_hw), "%s/hwprofiles/presets/rtx4090.textproto", FT_SOURCE_DIR);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ft_ref_greedy_free(&g_ref);
    return 0;
}

static ft_ir_model_t *import(int from)
{
    char src[4200];
    snprintf(src, sizeof(src), from ? "%s/hf" : "%s/model.gguf", g_dir[from]);
    ft_ir_model_t *ir = NULL;
    FT_REF_OK(ft_import_model(src, &ir));
    return ir;
}

static char *ir_text(const ft_ir_model_t *ir)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    assert_non_null(f);
    ft_ir_model_print(ir, f);
    fclose(f);
    return buf;
}

/* What the importers read, and that both agree. */
static void test_import(void **state)
{
    (void)state;
    ft_ir_model_t *g = import(0), *h = import(1);
    for (int f = 0; f < 2; f++) {
        const ft_ir_model_t *m = f ? h : g;
        assert_int_equal(m->hp.arch, FT_ARCH_GLM4MOE);
        assert_int_equal(m->hp.n_layers, 3);
        assert_int_equal(m->hp.n_mtp_layers, 1);
        assert_int_equal(m->hp.rope, FT_ROPE_NEOX);
        assert_int_equal(m->hp.rope_dim, 8); /* half of head_dim 16 */
        assert_false(m->blocks[0].is_moe);
        assert_int_equal(m->blocks[0].dense_ffn, 128);
        for (uint32_t l = 0; l < 3; l++) {
            assert_true(m->blocks[l].attn.qk_norm);
            assert_true(m->blocks[l].attn.has_bias);
            assert_non_null(ft_ir_find(m, FT_ROLE_ATTN_Q_BIAS, (int32_t)l));
            assert_null(ft_ir_find(m, FT_ROLE_ATTN_O_BIAS, (int32_t)l));
        }
        for (uint32_t l = 1; l < 3; l++) {
            const ft_ir_moe_t *moe = &m->blocks[l].moe;
            assert_true(m->blocks[l].is_moe);
            assert_int_equal(moe->scoring, FT_ROUTER_SIGMOID);
            assert_true(moe->norm_topk_prob);
            assert_true(moe->routed_scaling == 2.5f);
            assert_int_equal(moe->n_shared_experts, 1);
            assert_int_equal(moe->shared_ffn, 32);
            assert_int_equal(moe->n_groups, 0); /* one group: no group limit */
            assert_non_null(ft_ir_find(m, FT_ROLE_FFN_EXP_PROBS_B, (int32_t)l));
            assert_non_null(ft_ir_find(m, FT_ROLE_FFN_GATE_SHEXP, (int32_t)l));
        }
    }
    char *a = ir_text(g), *b = ir_text(h);
    assert_string_equal(a, b);
    free(a);
    free(b);
    ft_ir_model_destroy(g);
    ft_ir_model_destroy(h);
}

static float *run(const char *bundle, ft_backend_kind_t backend, int kernels, const char *name)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = backend;
    eo.kernels = kernels;
    if (backend == FT_BACKEND_SIM) {
        eo.hw_profile = g_hw;
        eo.vram_bytes = 2250ull << 10; /* dense weights, KV, scratch and a few experts */
        eo.plan_ctx = N_CTX;
    }
    char what[96];
    snprintf(what, sizeof(what), "glm4moe %s", name);
    return ft_ref_expect_greedy(bundle, &eo, N_CTX, k_prompt, &g_ref, FT_GLM_TOL, what, 1);
}

/* The float64 reference from the GGUF import. */
static void reference(void)
{
    ft_ir_model_t *ir = import(0);
    ft_ref_model_t *m;
    FT_REF_OK(ft_ref_model_from_ir(ir, &m));
    assert_non_null(m->layers[1].sel_bias);
    assert_int_equal(m->layers[1].shared_ffn, 32);
    FT_REF_OK(ft_ref_greedy_reference(m, k_prompt, N_PROMPT, N_GEN, N_CTX, &g_ref));
    ft_ref_model_free(m);
    ft_ir_model_destroy(ir);
}

static void test_glm4moe_matches_reference(void **state)
{
    (void)state;
    if (!g_ref.vocab) reference();
    static const struct {
        int from;
        ft_backend_kind_t backend;
        int kernels;
        const char *name;
    } cases[] = {
        {0, FT_BACKEND_CPU, FT_KERNELS_REFERENCE, "gguf cpu reference"},
        {0, FT_BACKEND_CPU, FT_KERNELS_GENERATED, "gguf cpu generated"},
        {0, FT_BACKEND_SIM, FT_KERNELS_REFERENCE, "gguf sim reference"},
        {0, FT_BACKEND_SIM, FT_KERNELS_GENERATED, "gguf sim generated"},
        {1, FT_BACKEND_CPU, FT_KERNELS_REFERENCE, "hf cpu reference"},
        {1, FT_BACKEND_SIM, FT_KERNELS_GENERATED, "hf sim generated"},
    };
    float *first = NULL;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        float *prompt = run(g_bundle[cases[c].from], cases[c].backend, cases[c].kernels, cases[c].name);
        if (c == 0) {
            first = prompt;
            continue;
        }
        /* GGUF and HF hold the same values in the same layout: the same
         * bits; the sim computes as the cpu backend. */
        if (cases[c].kernels == FT_KERNELS_REFERENCE)
            assert_memory_equal(prompt, first, sizeof(float) * N_PROMPT * g_ref.vocab);
        free(prompt);
    }
    free(first);
}

/* The fixture's source (GGUF or HF) to spoil, built into an IR: the
 * error must have code and name needle. */
static void expect_refused(ft_src_model_t *src, ft_status_code_t code, const char *needle)
{
    ft_ir_model_t *m = NULL;
    ft_status_t st = ft_model_build_ir(src, &m);
    assert_null(m);
    if (!st)
        fail_msg("expected an error containing '%s'", needle);
    print_message("refused: %s\n", ft_status_message(st));
    if (ft_status_code(st) != code || !strstr(ft_status_message(st), needle))
        fail_msg("got [%s] %s; wanted [%s] containing '%s'", ft_status_code_name(ft_status_code(st)),
                 ft_status_message(st), ft_status_code_name(code), needle);
    ft_status_free(st);
    ft_src_model_destroy(src);
}

static ft_src_model_t *source(int from)
{
    char src[4200];
    snprintf(src, sizeof(src), from ? "%s/hf" : "%s/model.gguf", g_dir[from]);
    ft_src_model_t *s = NULL;
    FT_REF_OK(ft_import_source(src, &s));
    return s;
}

static void test_hostile(void **state)
{
    (void)state;
    ft_src_model_t *s = source(0);
    assert_null(ft_meta_add_int(&s->meta, "glm4moe.expert_gating_func", 3));
    expect_refused(s, FT_STATUS_UNSUPPORTED, "expert_gating_func");
    s = source(0);
    ((ft_src_tensor_t *)ft_src_find_tensor(s, "blk.2.exp_probs_b.bias"))->name = "blk.2.exp_probs_c.bias";
    expect_refused(s, FT_STATUS_FORMAT, "blk.2.exp_probs_b.bias");
    s = source(1);
    ((ft_src_tensor_t *)ft_src_find_tensor(s, "model.layers.1.mlp.gate.e_score_correction_bias"))
        ->name = "model.layers.1.mlp.gate.bias";
    expect_refused(s, FT_STATUS_FORMAT, "model.layers.1.mlp.gate.e_score_correction_bias");
    s = source(0);
    ((ft_src_tensor_t *)ft_src_find_tensor(s, "blk.1.ffn_up_shexp.weight"))->name = "blk.1.ffn_up_shexp2.weight";
    expect_refused(s, FT_STATUS_FORMAT, "blk.1.ffn_up_shexp.weight");
    s = source(0);
    assert_null(ft_meta_add_int(&s->meta, "glm4moe.nextn_predict_layers", 4));
    expect_refused(s, FT_STATUS_FORMAT, "nextn");
    s = source(0); /* without the MTP key its block's tensors are strays */
    assert_null(ft_meta_add_int(&s->meta, "glm4moe.nextn_predict_layers", 0));
    assert_null(ft_meta_add_int(&s->meta, "glm4moe.block_count", 3));
    expect_refused(s, FT_STATUS_UNSUPPORTED, "blk.3.");
    s = source(1);
    assert_null(ft_meta_add_float(&s->meta, "partial_rotary_factor", 0.3));
    expect_refused(s, FT_STATUS_FORMAT, "partial_rotary_factor");
}

/* The cuda backend (fake driver): biased q/k/v, partial rotary, the
 * sigmoid router with its selection bias, groups and scale
 * (ft_router_ext), shared experts; everything resident and with experts
 * through slots and the CPU. */
static void test_glm4moe_cuda(void **state)
{
    (void)state;
    void *fake = dlopen(FT_CUDA_FAKE_LIB, RTLD_NOW | RTLD_LOCAL);
    if (fake) dlclose(fake);
    if (!fake || !ft_cg_cuda_nvrtc_available())
        FT_CUDA_TEST_SKIP(fake ? "no NVRTC" : "the fake CUDA driver does not load");
    setenv("FT_CUDA_LIB", FT_CUDA_FAKE_LIB, 1);
    setenv("FT_CUDA_FAKE_VRAM", "536870912", 1);
    if (!g_ref.vocab) reference();
    char src[4200], bundle[4300];
    snprintf(src, sizeof(src), "%s/model.gguf", g_dir[0]);
    snprintf(bundle, sizeof(bundle), "%s/bundle-cuda", g_dir[0]);
    FT_REF_OK(ft_ref_build_cuda_bundle(src, bundle));
    ft_ref_expect_cuda_runs(bundle, N_CTX, k_prompt, &g_ref, FT_GLM_TOL, g_hw, 2700ull << 10,
                            "glm4moe");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import), cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_glm4moe_matches_reference), cmocka_unit_test(test_glm4moe_cuda)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
