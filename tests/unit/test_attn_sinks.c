/* Attention sinks as an ATTENTION op parameter: a Qwen3-MoE checkpoint
 * with a sink logit per head (HF self_attn.sinks, GGUF
 * blk.L.attn_sinks.weight, gpt-oss's names), imported with its sinks and
 * lowered to ATTENTION ops whose weights[0] they are, run by the one
 * executor: each head's softmax has exp(sink_h) in its denominator,
 * p_j = exp(s_j) / (sum_i exp(s_i) + exp(sink_h)), against the float64
 * reference loaded from the imported IR:
 *
 *  - the schedule: every ATTENTION op takes its layer's sinks;
 *  - cpu (reference kernels, and with the plan's kernels, where the
 *    attention runs the reference loop because the generated one has no
 *    sink term) and the sim with a small budget: a 20-token prompt's
 *    logits within 1e-4 (normalized error; f32 weights and KV) and 32
 *    greedy tokens equal; GGUF and HF imports give the same logits;
 *  - the validator refuses sinks of the wrong length or format, naming
 *    the op;
 *  - the cuda backend (fake driver, the _sink attention kernels) within
 *    the same tolerance with the same greedy tokens, everything resident
 *    and with experts through slots and the CPU. */
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

#define FT_SINK_TOL 1e-4
enum { N_PROMPT = 20, N_GEN = 32, N_CTX = 64 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};

static char g_dir[4096], g_hf[4096], g_gguf[4096], g_hw[4096];
static ft_ref_greedy_t g_ref;

static void fixture_opts(ft_fixture_opts_t *o)
{
    ft_fixture_opts_init(o);
    o->attn_sinks = 1;
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
        assert_true(ir->blocks[l].attn.has_sinks);
        assert_false(ir->blocks[l].attn.has_bias);
        assert_non_null(ft_ir_find(ir, FT_ROLE_ATTN_SINKS, (int32_t)l));
    }
    ft_ref_model_t *m;
    FT_REF_OK(ft_ref_model_from_ir(ir, &m));
    assert_non_null(m->layers[0].sinks);
    assert_non_null(m->layers[1].sinks);
    FT_REF_OK(ft_ref_greedy_reference(m, k_prompt, N_PROMPT, N_GEN, N_CTX, &g_ref));
    ft_ref_model_free(m);
    ft_ir_model_destroy(ir);
}

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    fixture_opts(&o);
    snprintf(g_dir, sizeof(g_dir), "%s", ft_test_tmpdir("attn_sinks"));
    ft_status_t st = ft_ref_build_bundle(&o, FT_REF_FROM_HF, FT_DTYPE_F32, g_dir, g_hf, sizeof(g_hf));
    if (!st)
        st = ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_F32, g_dir, g_gguf, sizeof(g_gguf));
    if (st) {
        fprintf(stderr, "building the bundles with sinks: %s\n", ft_status_message(st));
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

/* Block l's ATTENTION op and its index. */
static Ftplan__Op *find_attention(const Ftplan__Plan *p, size_t l, size_t *at)
{
    const Ftplan__BlockOps *blk = p->schedule->blocks[l];
    for (size_t i = 0; i < blk->n_ops; i++)
        if (blk->ops[i]->kind == FTPLAN__OP_KIND__OP_ATTENTION) {
            *at = i;
            return blk->ops[i];
        }
    fail_msg("block %zu has no ATTENTION op", l);
    return NULL;
}

static void test_lowering(void **state)
{
    (void)state;
    ft_bundle_t *b;
    FT_REF_OK(ft_bundle_open(g_hf, &b));
    const Ftplan__Plan *p = b->plan;
    for (size_t l = 0; l < p->schedule->n_blocks; l++) {
        size_t at = 0;
        const Ftplan__Op *att = find_attention(p, l, &at);
        assert_int_equal(att->n_weights, 1);
        const Ftplan__Tensor *t = p->tensors[att->weights[0]];
        char name[64];
        snprintf(name, sizeof(name), "blk.%zu.attn_sinks.weight", l);
        assert_string_equal(t->name, name);
        assert_int_equal(t->n_shape, 1);
        assert_int_equal(t->shape[0], att->n_heads);
    }
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
    return ft_ref_expect_greedy(bundle, &eo, N_CTX, k_prompt, &g_ref, FT_SINK_TOL, name, 1);
}

static void test_cpu_and_sim(void **state)
{
    (void)state;
    if (!g_ref.vocab) reference();
    float *cpu = check(g_hf, FT_BACKEND_CPU, FT_KERNELS_REFERENCE, "sinks cpu reference");
    free(check(g_hf, FT_BACKEND_CPU, FT_KERNELS_GENERATED, "sinks cpu generated"));
    float *sim = check(g_hf, FT_BACKEND_SIM, FT_KERNELS_REFERENCE, "sinks sim reference");
    assert_memory_equal(sim, cpu, sizeof(float) * N_PROMPT * g_ref.vocab); /* the sim: cpu's bits */
    float *gguf = check(g_gguf, FT_BACKEND_CPU, FT_KERNELS_REFERENCE, "sinks cpu reference (GGUF)");
    assert_memory_equal(gguf, cpu, sizeof(float) * N_PROMPT * g_ref.vocab); /* the same weights */
    free(gguf);
    free(sim);
    free(cpu);
}

/* Bad sinks are refused by the validator, naming the op. */
static void test_validator(void **state)
{
    (void)state;
    ft_bundle_t *b;
    FT_REF_OK(ft_bundle_open(g_hf, &b));
    Ftplan__Plan *p = b->plan;
    size_t at = 0;
    Ftplan__Op *att = find_attention(p, 1, &at);
    char where[64];
    snprintf(where, sizeof(where), "schedule.blocks[1].ops[%zu] (OP_ATTENTION)", at);
    Ftplan__Tensor *t = p->tensors[att->weights[0]];
    const uint32_t sinks = att->weights[0];
    uint32_t norm = 0; /* a vector of another length: the attention norm */
    for (size_t i = 0; i < p->n_tensors; i++)
        if (p->tensors[i]->role == FTPLAN__TENSOR_ROLE__ROLE_ATTN_NORM)
            norm = (uint32_t)i;
    for (int c = 0; c < 2; c++) {
        const char *word = NULL;
        if (c == 0) {
            t->format = FTPLAN__WEIGHT_FORMAT__WF_I32; /* as many bytes as f32 */
            word = "(f32, f16 or bf16)";
        } else {
            att->weights[0] = norm;
            word = "not a vector of the 4 heads";
        }
        ft_status_t st = ft_plan_validate(p, "plan.ftp");
        assert_non_null(st);
        print_message("refused: %s\n", ft_status_message(st));
        assert_non_null(strstr(ft_status_message(st), where));
        assert_non_null(strstr(ft_status_message(st), word));
        ft_status_free(st);
        t->format = FTPLAN__WEIGHT_FORMAT__WF_F32;
        att->weights[0] = sinks;
    }
    FT_REF_OK(ft_plan_validate(p, "plan.ftp"));
    ft_bundle_close(b);
}

/* The cuda backend (fake driver) with the _sink attention kernels,
 * everything resident and with experts through slots. */
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
    ft_ref_expect_cuda_runs(bundle, N_CTX, k_prompt, &g_ref, FT_SINK_TOL, g_hw, 2500ull << 10,
                            "sinks");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lowering), cmocka_unit_test(test_cpu_and_sim),
        cmocka_unit_test(test_validator), cmocka_unit_test(test_cuda)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
