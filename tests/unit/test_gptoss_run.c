/* gpt-oss end to end: a tiny GGUF "gpt-oss" checkpoint as llama.cpp's
 * converter writes one (f32 experts instead of MXFP4; ftgen --arch
 * gpt-oss; and with MXFP4 weights) imported, compiled and run by the one executor, whose schedule
 * carries everything gpt-oss needs as op parameters (no architecture
 * names in the runtime): q/k/v/o biases, per-head sinks, a sliding window
 * on even layers (8 positions here, so the 52-position runs cross it),
 * YaRN RoPE (factor 32 over 4096 positions), the router's logit bias with
 * the softmax over the chosen logits, expert biases and the clamped SwiGLU
 * (the fixture's gate/up biases are wide so some pre-activations pass
 * the limit of 7). Against the float64 reference loaded from the imported
 * IR, which computes the same model from its own code:
 *
 *  - the schedule: every op's parameters as above;
 *  - cpu with the reference kernels and with the plan's generated ones,
 *    and the sim with a small budget (experts through the cache): a
 *    20-token prompt's logits within 1e-4 (normalized error; f32 weights
 *    and KV: float32 rounding is the only difference) and 32 greedy
 *    tokens equal; the sim gives the cpu's logits bit for bit;
 *  - the validator refuses misshapen router/expert biases, a bad YaRN
 *    range and bad clamped-SwiGLU constants, naming the op;
 *  - MXFP4 experts (as gpt-oss ships them) imported as they are, run on
 *    every backend against the reference of the same MXFP4 weights;
 *  - the cuda backend (fake driver) within the same tolerance and with
 *    the same greedy tokens, everything resident and with experts through
 *    slots and the CPU.
 *
 * The HF GptOssForCausalLM import (MXFP4 *_blocks / *_scales) against the
 * GGUF one: test_oss_hf. */
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

#define FT_OSS_TOL 1e-4
enum { N_PROMPT = 20, N_GEN = 32, N_CTX = 64, WINDOW = 8 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};

static char g_dir[4096], g_gguf[4200], g_bundle[4096], g_hw[4096];
static ft_ref_greedy_t g_ref;

static void fixture_opts(ft_fixture_opts_t *o)
{
    ft_fixture_opts_init(o);
    ft_fixture_opts_gpt_oss(o);
    o->sliding_window = WINDOW;
}

/* The reference from the GGUF source's IR; checks what the import made. */
static void reference(void)
{
    ft_ir_model_t *ir = NULL;
    FT_REF_OK(ft_import_model(g_gguf, &ir));
    assert_int_equal(ir->hp.arch, FT_ARCH_GPT_OSS);
    assert_true(ir->hp.rope_yarn_factor == 32.0f);
    for (uint32_t l = 0; l < ir->hp.n_layers; l++) {
        const ft_ir_block_t *b = &ir->blocks[l];
        assert_int_equal(b->attn.sliding_window, l % 2 == 0 ? WINDOW : 0);
        assert_true(b->attn.has_bias && b->attn.has_sinks && b->moe.has_router_bias);
        assert_int_equal(b->act, FT_ACT_SWIGLU_OAI);
        assert_non_null(ft_ir_find(ir, FT_ROLE_FFN_DOWN_EXPS_BIAS, (int32_t)l));
    }
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
    fixture_opts(&o);
    snprintf(g_dir, sizeof(g_dir), "%s", ft_test_tmpdir("gptoss_run"));
    ft_status_t st =
        ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_F32, g_dir, g_bundle, sizeof(g_bundle));
    if (st) {
        fprintf(stderr, "building the gpt-oss bundle: %s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    snprintf(g_gguf, sizeof(g_gguf), "%s/model.gguf", g_dir);
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

static void test_schedule(void **state)
{
    (void)state;
    ft_bundle_t *b;
    FT_REF_OK(ft_bundle_open(g_bundle, &b));
    const Ftplan__Plan *p = b->plan;
    assert_int_equal(p->hparams->arch, FTPLAN__ARCH__ARCH_GPT_OSS);
    for (size_t l = 0; l < p->schedule->n_blocks; l++) {
        const Ftplan__BlockOps *blk = p->schedule->blocks[l];
        int seen = 0;
        for (size_t i = 0; i < blk->n_ops; i++) {
            const Ftplan__Op *op = blk->ops[i];
            switch (op->kind) {
            case FTPLAN__OP_KIND__OP_LINEAR: /* q/k/v and o: every weight biased */
                assert_int_equal(op->n_biases, op->n_weights);
                for (size_t j = 0; j < op->n_biases; j++)
                    assert_int_not_equal(op->biases[j], 0xFFFFFFFFu);
                seen |= 1;
                break;
            case FTPLAN__OP_KIND__OP_ROPE:
                assert_true(op->rope_yarn_factor == 32.0f && op->rope_yarn_orig_ctx == 4096);
                assert_true(op->rope_yarn_beta_fast == 32.0f && op->rope_yarn_beta_slow == 1.0f);
                seen |= 2;
                break;
            case FTPLAN__OP_KIND__OP_ATTENTION:
                assert_int_equal(op->n_weights, 1); /* the sinks */
                assert_int_equal(op->sliding_window, l % 2 == 0 ? WINDOW : 0);
                seen |= 4;
                break;
            case FTPLAN__OP_KIND__OP_ROUTER:
                assert_int_equal(op->n_biases, 1);
                assert_int_equal(op->scoring, FTPLAN__ROUTER_SCORING__ROUTER_SOFTMAX);
                assert_true(op->norm_topk_prob);
                seen |= 8;
                break;
            case FTPLAN__OP_KIND__OP_MOE:
                assert_int_equal(op->n_biases, 3);
                assert_int_equal(op->act, FTPLAN__ACTIVATION__ACT_SWIGLU_OAI);
                assert_true(op->act_alpha == 1.702f && op->act_limit == 7.0f);
                assert_int_equal(p->tensors[op->biases[0]]->format, FTPLAN__WEIGHT_FORMAT__WF_F32);
                seen |= 16;
                break;
            default:
                break;
            }
        }
        assert_int_equal(seen, 31);
    }
    ft_bundle_close(b);
}

/* One backend against the reference; returns its prompt logits. */
static float *check(ft_backend_kind_t backend, int kernels, const char *name)
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
    return ft_ref_expect_greedy(g_bundle, &eo, N_CTX, k_prompt, &g_ref, FT_OSS_TOL, name, 1);
}

static void test_cpu_and_sim(void **state)
{
    (void)state;
    if (!g_ref.vocab) reference();
    float *cpu = check(FT_BACKEND_CPU, FT_KERNELS_REFERENCE, "gpt-oss cpu reference");
    free(check(FT_BACKEND_CPU, FT_KERNELS_GENERATED, "gpt-oss cpu generated"));
    float *sim = check(FT_BACKEND_SIM, FT_KERNELS_REFERENCE, "gpt-oss sim reference");
    assert_memory_equal(sim, cpu, sizeof(float) * N_PROMPT * g_ref.vocab); /* the sim: cpu's bits */
    free(sim);
    free(cpu);
}

/* The sim's small budget sends experts through the cache. */
static void test_sim_cache(void **state)
{
    (void)state;
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = FT_BACKEND_SIM;
    eo.hw_profile = g_hw;
    eo.vram_bytes = 2250ull << 10;
    eo.plan_ctx = N_CTX;
    ft_engine_t *e = NULL;
    FT_REF_OK(ft_engine_open(g_bundle, &eo, &e));
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = N_CTX;
    ft_session_t *s = NULL;
    FT_REF_OK(ft_session_create(e, &so, &s));
    FT_REF_OK(ft_session_eval(s, k_prompt, N_PROMPT, NULL));
    ft_engine_stats_t es;
    ft_engine_stats(e, &es);
    print_message("sim: %u slots, %llu hits, %llu misses\n", es.n_slots,
                  (unsigned long long)es.expert_hits, (unsigned long long)es.expert_misses);
    assert_true(es.n_slots > 0 && es.n_slots < 16); /* fewer slots than the 2 x 8 experts */
    assert_true(es.expert_misses > 0);
    ft_session_destroy(s);
    ft_engine_close(e);
}

/* The validator refuses bad gpt-oss parameters, naming the op. */
static void test_validator(void **state)
{
    (void)state;
    ft_bundle_t *b;
    FT_REF_OK(ft_bundle_open(g_bundle, &b));
    Ftplan__Plan *p = b->plan;
    const Ftplan__BlockOps *blk = p->schedule->blocks[1];
    Ftplan__Op *rope = NULL, *router = NULL, *moe = NULL;
    for (size_t i = 0; i < blk->n_ops; i++) {
        Ftplan__Op *op = blk->ops[i];
        if (op->kind == FTPLAN__OP_KIND__OP_ROPE) rope = op;
        if (op->kind == FTPLAN__OP_KIND__OP_ROUTER) router = op;
        if (op->kind == FTPLAN__OP_KIND__OP_MOE) moe = op;
    }
    assert_true(rope && router && moe);
    const uint32_t gate_b = moe->biases[0], down_b = moe->biases[2], router_b = router->biases[0];
    for (int c = 0; c < 5; c++) {
        const char *op = NULL, *word = NULL;
        switch (c) {
        case 0:
            moe->biases[0] = down_b;
            op = "(OP_MOE)";
            word = "[n_experts, rows] stack";
            break;
        case 1:
            moe->biases[0] = router_b;
            op = "(OP_MOE)";
            word = "[n_experts, rows] stack";
            break;
        case 2:
            router->biases[0] = gate_b;
            op = "(OP_ROUTER)";
            word = "vector of n_experts";
            break;
        case 3:
            rope->rope_yarn_beta_slow = 64.0f;
            op = "(OP_ROPE)";
            word = "beta_slow <= beta_fast";
            break;
        case 4:
            moe->act_limit = 0.0f;
            op = "(OP_MOE)";
            word = "swiglu_oai alpha";
            break;
        }
        ft_status_t st = ft_plan_validate(p, "plan.ftp");
        assert_non_null(st);
        print_message("refused: %s\n", ft_status_message(st));
        assert_non_null(strstr(ft_status_message(st), "schedule.blocks[1]"));
        assert_non_null(strstr(ft_status_message(st), op));
        assert_non_null(strstr(ft_status_message(st), word));
        ft_status_free(st);
        moe->biases[0] = gate_b;
        router->biases[0] = router_b;
        rope->rope_yarn_beta_slow = 1.0f;
        moe->act_limit = 7.0f;
    }
    FT_REF_OK(ft_plan_validate(p, "plan.ftp"));
    ft_bundle_close(b);
}

/* MXFP4 weights, as gpt-oss ships them (llama.cpp's converter keeps the
 * experts' MXFP4 blocks; ggml type 39, whose block layout is the runtime's
 * FT_DTYPE_MXFP4), imported as they are, against the float64 reference of
 * the same MXFP4 weights (dequantized exactly): the CPU's products round
 * each activation row to Q8_0 blocks first, so cpu (reference and
 * generated kernels) and the sim through its expert cache are checked
 * against the reference that rounds them the same way (ref_forward.h
 * emulate_act_quant), the cuda backend (fake driver, everything resident:
 * the GPU's products keep float32 activations) against the plain one
 * within the f32 tolerance; 20 prompt positions' top tokens and 32 greedy
 * tokens equal. The CPU's bound is one activation quantum,
 * FT_OSS_QUANTUM_TOL: float32 and double arithmetic before a rounding can
 * put a value on either side of a Q8_0 step (test_forward_formats.c
 * derives the 3e-2). Measured: prompt 3.5e-8 and decode steps 2.2e-3 on
 * the CPU, 7e-7 on cuda; the plain reference is 2.4e-2 from the CPU's
 * logits, and its greedy tokens part at the 5th. */
#define FT_OSS_QUANTUM_TOL 3e-2
static void test_mxfp4(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    fixture_opts(&o);
    o.format = FT_DTYPE_MXFP4;
    char dir[4200], bundle[4200], gguf[4300];
    snprintf(dir, sizeof(dir), "%s/mxfp4", g_dir);
    FT_REF_OK(
        ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_INVALID, dir, bundle, sizeof(bundle)));
    snprintf(gguf, sizeof(gguf), "%s/model.gguf", dir);
    ft_ir_model_t *ir = NULL;
    FT_REF_OK(ft_import_model(gguf, &ir));
    uint32_t n_mxfp4 = 0;
    for (uint32_t i = 0; i < ir->n_tensors; i++)
        n_mxfp4 += ir->tensors[i].dtype == FT_DTYPE_MXFP4 &&
                   (ir->tensors[i].role == FT_ROLE_FFN_GATE_EXPS ||
                    ir->tensors[i].role == FT_ROLE_FFN_UP_EXPS ||
                    ir->tensors[i].role == FT_ROLE_FFN_DOWN_EXPS);
    assert_int_equal(n_mxfp4, 3 * ir->hp.n_layers); /* every expert stack kept as MXFP4 */
    ft_ref_model_t *m;
    FT_REF_OK(ft_ref_model_from_ir(ir, &m));
    /* The GPU's products dequantize the weights and keep activations in
     * float32: the plain reference. The CPU's round activations to Q8_0
     * blocks first: the reference that does the same. */
    ft_ref_greedy_t plain, ref;
    FT_REF_OK(ft_ref_greedy_reference(m, k_prompt, N_PROMPT, N_GEN, N_CTX, &plain));
    m->emulate_act_quant = 1;
    FT_REF_OK(ft_ref_greedy_reference(m, k_prompt, N_PROMPT, N_GEN, N_CTX, &ref));
    ft_ref_model_free(m);
    ft_ir_model_destroy(ir);
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.kernels = FT_KERNELS_REFERENCE;
    float *cpu = ft_ref_expect_greedy(bundle, &eo, N_CTX, k_prompt, &ref, FT_OSS_QUANTUM_TOL,
                                      "mxfp4 cpu reference", 1);
    eo.kernels = FT_KERNELS_GENERATED;
    free(ft_ref_expect_greedy(bundle, &eo, N_CTX, k_prompt, &ref, FT_OSS_QUANTUM_TOL,
                              "mxfp4 cpu generated", 1));
    eo.kernels = FT_KERNELS_REFERENCE;
    eo.backend = FT_BACKEND_SIM;
    eo.hw_profile = g_hw;
    eo.vram_bytes = 2250ull << 10;
    eo.plan_ctx = N_CTX;
    float *sim = ft_ref_expect_greedy(bundle, &eo, N_CTX, k_prompt, &ref, FT_OSS_QUANTUM_TOL,
                                      "mxfp4 sim", 1);
    assert_memory_equal(sim, cpu, sizeof(float) * N_PROMPT * ref.vocab); /* the sim: cpu's bits */
    free(sim);
    free(cpu);
    void *fake = dlopen(FT_CUDA_FAKE_LIB, RTLD_NOW | RTLD_LOCAL);
    if (fake) dlclose(fake);
    if (fake && ft_cg_cuda_nvrtc_available()) {
        char cuda[4300];
        snprintf(cuda, sizeof(cuda), "%s/bundle-cuda", dir);
        FT_REF_OK(ft_ref_build_cuda_bundle(gguf, cuda));
        /* everything resident: experts on the CPU would mix the two roundings */
        ft_ref_expect_cuda_runs(cuda, N_CTX, k_prompt, &plain, FT_OSS_TOL, g_hw, 0,
                                "gpt-oss mxfp4");
    } else if (FT_TEST_NVRTC) {
        fail_msg("NVRTC is in this build but the fake CUDA driver or NVRTC does not load");
    }
    ft_ref_greedy_free(&ref);
    ft_ref_greedy_free(&plain);
}

/* The cuda backend (fake driver): biased LINEARs, sinks, YaRN's table
 * RoPE, the router's logit bias, biased clamped-SwiGLU experts, with
 * everything resident and with experts through slots and the CPU. */
static void test_cuda(void **state)
{
    (void)state;
    void *fake = dlopen(FT_CUDA_FAKE_LIB, RTLD_NOW | RTLD_LOCAL);
    if (fake) dlclose(fake);
    if (!fake || !ft_cg_cuda_nvrtc_available())
        FT_CUDA_TEST_SKIP(fake ? "no NVRTC" : "the fake CUDA driver does not load");
    if (!g_ref.vocab) reference();
    char bundle[4200];
    snprintf(bundle, sizeof(bundle), "%s/bundle-cuda", g_dir);
    FT_REF_OK(ft_ref_build_cuda_bundle(g_gguf, bundle));
    ft_ref_expect_cuda_runs(bundle, N_CTX, k_prompt, &g_ref, FT_OSS_TOL, g_hw, 2500ull << 10,
                            "gpt-oss");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schedule),  cmocka_unit_test(test_cpu_and_sim),
        cmocka_unit_test(test_sim_cache), cmocka_unit_test(test_validator),
        cmocka_unit_test(test_mxfp4),     cmocka_unit_test(test_cuda)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
