/* LINEAR biases in the op schedule: a Qwen3-MoE checkpoint with biases on
 * the attention's q, k, v and o projections (HF config attention_bias,
 * self_attn.*_proj.bias; GGUF blk.L.attn_*.bias), imported with its bias
 * tensors, lowered to LINEAR ops that name them (op.biases parallel to
 * op.weights) and run by the one executor, against the float64 reference
 * loaded from the imported IR (which adds the biases after each product):
 *
 *  - the schedule: the q/k/v LINEAR carries three biases and wo one;
 *  - cpu (reference kernels and the plan's generated ones, whose fused
 *    norm + preparation feeds the biased products) and the sim with a
 *    small budget: a 20-token prompt's logits within 1e-4 (normalized
 *    error; f32 weights and KV, so float32 rounding is the only
 *    difference, as in test_dense_ffn.c) and 32 greedy tokens equal;
 *  - the GGUF and HF imports give the same logits bit for bit;
 *  - the validator refuses a bias list of the wrong length, a bias index
 *    past the tensor table, a bias of an integer format, one of the
 *    wrong length, and biases on an op other than LINEAR, naming the op;
 *  - the cuda backend (fake driver) within the same tolerance and with
 *    the same greedy tokens, everything resident and with a budget that
 *    sends experts through slots and the CPU. */
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
#include "../../runtime/format/plan_validate.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FT_BIAS_TOL 1e-4
enum { N_PROMPT = 20, N_GEN = 32, N_CTX = 64 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};

static char g_dir[4096], g_hf[4096], g_gguf[4096], g_hw[4096];
static ft_ref_greedy_t g_ref;

static void fixture_opts(ft_fixture_opts_t *o)
{
    ft_fixture_opts_init(o);
    o->attn_bias = 1;
}

/* The reference's prompt logits and greedy continuation, from the HF
 * source's IR. */
static void reference(void)
{
    char src[4200];
    snprintf(src, sizeof(src), "%s/hf", g_dir);
    ft_ir_model_t *ir = NULL;
    FT_REF_OK(ft_import_model(src, &ir));
    for (uint32_t l = 0; l < ir->hp.n_layers; l++) {
        assert_true(ir->blocks[l].attn.has_bias);
        assert_non_null(ft_ir_find(ir, FT_ROLE_ATTN_O_BIAS, (int32_t)l));
    }
    ft_ref_model_t *m;
    FT_REF_OK(ft_ref_model_from_ir(ir, &m));
    assert_non_null(m->layers[0].bq);
    assert_non_null(m->layers[1].bo);
    FT_REF_OK(ft_ref_greedy_reference(m, k_prompt, N_PROMPT, N_GEN, N_CTX, &g_ref));
    ft_ref_model_free(m);
    ft_ir_model_destroy(ir);
}

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    fixture_opts(&o);
    snprintf(g_dir, sizeof(g_dir), "%s", ft_test_tmpdir("linear_bias"));
    ft_status_t st = ft_ref_build_bundle(&o, FT_REF_FROM_HF, FT_DTYPE_F32, g_dir, g_hf, sizeof(g_hf));
    if (!st)
        st = ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_F32, g_dir, g_gguf, sizeof(g_gguf));
    if (st) {
        fprintf(stderr, "building the biased bundles: %s\n", ft_status_message(st));
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

/* Block l's LINEAR ops: the one of three weights (q/k/v) and wo's. */
static void find_linears(const Ftplan__Plan *p, size_t l, Ftplan__Op **qkv, Ftplan__Op **wo, size_t *i_qkv)
{
    const Ftplan__BlockOps *blk = p->schedule->blocks[l];
    *qkv = *wo = NULL;
    *i_qkv = 0;
    for (size_t i = 0; i < blk->n_ops; i++) {
        Ftplan__Op *op = blk->ops[i];
        if (op->kind != FTPLAN__OP_KIND__OP_LINEAR)
            continue;
        if (op->n_weights == 3) {
            *qkv = op;
            *i_qkv = i;
        } else if (!*wo) {
            *wo = op;
        }
    }
    assert_non_null(*qkv);
    assert_non_null(*wo);
}

static void test_lowering(void **state)
{
    (void)state;
    ft_bundle_t *b;
    FT_REF_OK(ft_bundle_open(g_hf, &b));
    const Ftplan__Plan *p = b->plan;
    static const char *const want[3] = {"attn_q.bias", "attn_k.bias", "attn_v.bias"};
    for (size_t l = 0; l < p->schedule->n_blocks; l++) {
        Ftplan__Op *qkv, *wo;
        size_t i;
        find_linears(p, l, &qkv, &wo, &i);
        assert_int_equal(qkv->n_biases, 3);
        for (size_t j = 0; j < 3; j++) {
            const Ftplan__Tensor *t = p->tensors[qkv->biases[j]];
            char name[64];
            snprintf(name, sizeof(name), "blk.%zu.%s", l, want[j]);
            assert_string_equal(t->name, name);
            assert_int_equal(t->format, FTPLAN__WEIGHT_FORMAT__WF_F32);
            assert_int_equal(t->shape[0], p->tensors[qkv->weights[j]]->shape[0]);
        }
        assert_int_equal(wo->n_biases, 1);
        assert_non_null(strstr(p->tensors[wo->biases[0]]->name, "attn_output.bias"));
    }
    /* The other LINEARs (the head) have none. */
    for (size_t i = 0; i < p->schedule->n_epilogue; i++)
        assert_int_equal(p->schedule->epilogue[i]->n_biases, 0);
    ft_bundle_close(b);
}

/* One backend against the reference; returns its prompt logits. */
static float *check(const char *bundle, ft_backend_kind_t backend, int kernels, const char *name)
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
    return ft_ref_expect_greedy(bundle, &eo, N_CTX, k_prompt, &g_ref, FT_BIAS_TOL, name, 1);
}

static void test_cpu_and_sim(void **state)
{
    (void)state;
    if (!g_ref.vocab) reference();
    float *cpu = check(g_hf, FT_BACKEND_CPU, FT_KERNELS_REFERENCE, "biased cpu reference");
    free(check(g_hf, FT_BACKEND_CPU, FT_KERNELS_GENERATED, "biased cpu generated"));
    float *sim = check(g_hf, FT_BACKEND_SIM, FT_KERNELS_REFERENCE, "biased sim reference");
    assert_memory_equal(sim, cpu, sizeof(float) * N_PROMPT * g_ref.vocab); /* the sim: cpu's bits */
    float *gguf = check(g_gguf, FT_BACKEND_CPU, FT_KERNELS_REFERENCE, "biased cpu reference (GGUF)");
    assert_memory_equal(gguf, cpu, sizeof(float) * N_PROMPT * g_ref.vocab); /* the same weights */
    free(gguf);
    free(sim);
    free(cpu);
}

/* A bad bias is refused by the validator, naming the op. */
static void test_validator(void **state)
{
    (void)state;
    ft_bundle_t *b;
    FT_REF_OK(ft_bundle_open(g_hf, &b));
    Ftplan__Plan *p = b->plan;
    Ftplan__Op *qkv, *wo;
    size_t i_qkv = 0;
    find_linears(p, 1, &qkv, &wo, &i_qkv);
    char where[64];
    snprintf(where, sizeof(where), "schedule.blocks[1].ops[%zu] (OP_LINEAR)", i_qkv);
    const uint32_t q_bias = qkv->biases[0], k_bias = qkv->biases[1];
    Ftplan__Tensor *qt = p->tensors[q_bias];
    const Ftplan__WeightFormat q_fmt = qt->format;
    for (int c = 0; c < 4; c++) {
        const char *word = NULL;
        switch (c) {
        case 0: qkv->n_biases = 2; word = "2 biases for 3 weights"; break;
        case 1: qkv->biases[0] = (uint32_t)p->n_tensors; word = "is not below"; break;
        case 2: qt->format = FTPLAN__WEIGHT_FORMAT__WF_I32; word = "f32, f16 or bf16"; break;
        case 3: qkv->biases[0] = k_bias; word = "is not a vector of"; break;
        }
        ft_status_t st = ft_plan_validate(p, "plan.ftp");
        assert_non_null(st);
        print_message("refused: %s\n", ft_status_message(st));
        assert_non_null(strstr(ft_status_message(st), where));
        assert_non_null(strstr(ft_status_message(st), word));
        ft_status_free(st);
        qkv->n_biases = 3;
        qkv->biases[0] = q_bias;
        qt->format = q_fmt;
    }
    /* Biases on an RMSNORM. */
    Ftplan__Op *norm = p->schedule->blocks[1]->ops[0];
    assert_int_equal(norm->kind, FTPLAN__OP_KIND__OP_RMSNORM);
    norm->n_biases = 1;
    norm->biases = qkv->biases;
    ft_status_t st = ft_plan_validate(p, "plan.ftp");
    assert_non_null(st);
    assert_non_null(strstr(ft_status_message(st), "schedule.blocks[1].ops[0] (OP_RMSNORM)"));
    assert_non_null(strstr(ft_status_message(st), "only a LINEAR, ROUTER or MOE takes biases"));
    ft_status_free(st);
    norm->n_biases = 0;
    norm->biases = NULL;
    FT_REF_OK(ft_plan_validate(p, "plan.ftp"));
    ft_bundle_close(b);
}

/* The cuda backend (fake driver) adds the biases after each product
 * (ft_bias_add), everything resident and with experts through slots. */
static void test_cuda(void **state)
{
    (void)state;
    void *fake = dlopen(FT_CUDA_FAKE_LIB, RTLD_NOW | RTLD_LOCAL);
    if (fake) dlclose(fake);
    if (!fake || !ft_cg_cuda_nvrtc_available())
        FT_CUDA_TEST_SKIP(fake ? "no NVRTC" : "the fake CUDA driver does not load");
    if (!g_ref.vocab) reference();
    char src[4200], bundle[4200];
    snprintf(src, sizeof(src), "%s/hf", g_dir);
    snprintf(bundle, sizeof(bundle), "%s/bundle-cuda", g_dir);
    FT_REF_OK(ft_ref_build_cuda_bundle(src, bundle));
    ft_ref_expect_cuda_runs(bundle, N_CTX, k_prompt, &g_ref, FT_BIAS_TOL, g_hw, 2500ull << 10,
                            "biased");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lowering), cmocka_unit_test(test_cpu_and_sim),
        cmocka_unit_test(test_validator), cmocka_unit_test(test_cuda)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
