/* OLMoE (olmoe) through the op schedule, with no OLMoE code in the
 * runtime: the fixture (2 layers; q/k RMSNorms over the whole projection,
 * 64 and 32 wide, where Qwen3-MoE's are per head; NeoX RoPE over the
 * whole head; softmax top-2 of 8 experts in every layer with the chosen
 * probabilities not renormalized) written as GGUF (llama.cpp's olmoe names
 * and keys) and as HF (OlmoeForCausalLM), imported, compiled and run by the
 * executor against the float64 reference loaded from the imported IR:
 *
 *  - both imports give the same IR, with the hyperparameters the files
 *    state (and the lowering's q/k norms are single 64- and 32-wide heads);
 *  - on the cpu backend (reference and generated kernels) and the sim (a
 *    budget that keeps a few experts), from GGUF and from HF: a 20-token
 *    prompt's logits within 1e-4 (normalized error; f32 weights) with the
 *    same argmax, 32 greedy tokens equal; the GGUF and HF bundles give the
 *    same logits bit for bit, and the sim the cpu backend's;
 *  - Q8_0 weights (the GGUF stores them): cpu and sim against the
 *    reference that rounds activations as the CPU kernels do, within one
 *    activation quantum (3e-2, test_gptoss_run's bound), same tokens;
 *  - hostile checkpoints are refused naming the key or tensor: a per-head
 *    q norm where the whole projection's is due, a missing k norm, clip_qkv;
 *  - the cuda backend (fake driver: RMSNorm kernels of the projections'
 *    widths) within 1e-4 with the same greedy tokens, everything resident
 *    and with experts through slots and the CPU; skipped where this build
 *    has no NVRTC. */
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

#define FT_OLMOE_TOL 1e-4
/* sim and cuda budgets below the whole model: the cuda one keeps 15 expert
 * slots of the 16 experts (the prompt: 11 hits, 1 miss to the CPU) */
#define FT_OLMOE_SIM_VRAM (1200ull << 10)
#define FT_OLMOE_CUDA_VRAM (2700ull << 10)
enum { N_PROMPT = 20, N_GEN = 32, N_CTX = 64 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};

static char g_dir[2][4096], g_bundle[2][4096]; /* [0] GGUF, [1] HF */
static char g_hw[4096];
static ft_ref_greedy_t g_ref;

static void olmoe_opts(ft_fixture_opts_t *o)
{
    ft_fixture_opts_init(o);
    o->arch = FT_FIXTURE_OLMOE;
    o->name = "freetoken-fixture-olmoe";
}

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    olmoe_opts(&o);
    for (int f = 0; f < 2; f++) {
        snprintf(g_dir[f], sizeof(g_dir[f]), "%s/%s", ft_test_tmpdir("olmoe_run"), f ? "hf" : "gguf");
        ft_status_t st = ft_ref_build_bundle(&o, f ? FT_REF_FROM_HF : FT_REF_FROM_GGUF, FT_DTYPE_F32, g_dir[f],
                                             g_bundle[f], sizeof(g_bundle[f]));
        if (st) {
            fprintf(stderr, "building the olmoe bundle: %s\n", ft_status_message(st));
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

/* What the importers read, and that both agree; the lowering's q/k norms. */
static void test_import(void **state)
{
    (void)state;
    ft_ir_model_t *g = import(0), *h = import(1);
    for (int f = 0; f < 2; f++) {
        const ft_ir_model_t *m = f ? h : g;
        assert_int_equal(m->hp.arch, FT_ARCH_OLMOE);
        assert_int_equal(m->hp.n_layers, 2);
        assert_int_equal(m->hp.rope, FT_ROPE_NEOX);
        assert_int_equal(m->hp.rope_dim, 16);
        for (uint32_t l = 0; l < 2; l++) {
            const ft_ir_block_t *b = &m->blocks[l];
            assert_true(b->attn.qk_norm);
            assert_true(b->attn.qk_norm_full);
            assert_int_equal(ft_ir_find(m, FT_ROLE_ATTN_Q_NORM, (int32_t)l)->shape[0], 64);
            assert_int_equal(ft_ir_find(m, FT_ROLE_ATTN_K_NORM, (int32_t)l)->shape[0], 32);
            assert_true(b->is_moe);
            assert_int_equal(b->moe.scoring, FT_ROUTER_SOFTMAX);
            assert_false(b->moe.norm_topk_prob);
            assert_int_equal(b->moe.n_experts, 8);
            assert_int_equal(b->moe.n_experts_used, 2);
            assert_int_equal(b->moe.expert_ffn, 32);
            assert_int_equal(b->moe.n_shared_experts, 0);
        }
    }
    char *a = ir_text(g), *b = ir_text(h);
    assert_string_equal(a, b);
    free(a);
    free(b);
    /* one HEAD_NORM per projection, a single head as wide as it */
    ft_ir_schedule_t sched;
    FT_REF_OK(ft_model_lower(g, &sched));
    uint32_t n_norms = 0;
    for (uint32_t i = 0; i < sched.blocks[0].n; i++) {
        const ft_ir_op_t *op = &sched.blocks[0].ops[i];
        if (op->kind != FT_OP_HEAD_NORM) continue;
        assert_int_equal(op->n_heads, 1);
        assert_int_equal(op->head_dim, n_norms++ ? 32 : 64);
    }
    assert_int_equal(n_norms, 2);
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
        eo.vram_bytes = FT_OLMOE_SIM_VRAM;
        eo.plan_ctx = N_CTX;
    }
    char what[96];
    snprintf(what, sizeof(what), "olmoe %s", name);
    return ft_ref_expect_greedy(bundle, &eo, N_CTX, k_prompt, &g_ref, FT_OLMOE_TOL, what, 1);
}

/* The float64 reference from the GGUF import. */
static void reference(void)
{
    ft_ir_model_t *ir = import(0);
    ft_ref_model_t *m;
    FT_REF_OK(ft_ref_model_from_ir(ir, &m));
    assert_true(m->layers[1].qk_norm_full);
    assert_false(m->layers[1].norm_topk_prob);
    FT_REF_OK(ft_ref_greedy_reference(m, k_prompt, N_PROMPT, N_GEN, N_CTX, &g_ref));
    ft_ref_model_free(m);
    ft_ir_model_destroy(ir);
}

static void test_olmoe_matches_reference(void **state)
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
    ft_src_model_t *s = source(0); /* a per-head q norm (Qwen3's shape) */
    ((ft_src_tensor_t *)ft_src_find_tensor(s, "blk.1.attn_q_norm.weight"))->shape[0] = 16;
    expect_refused(s, FT_STATUS_FORMAT, "attn_q_norm");
    s = source(0);
    ((ft_src_tensor_t *)ft_src_find_tensor(s, "blk.0.attn_k_norm.weight"))->name = "blk.0.attn_k_norm2.weight";
    expect_refused(s, FT_STATUS_FORMAT, "blk.0.attn_k_norm.weight");
    s = source(1);
    ((ft_src_tensor_t *)ft_src_find_tensor(s, "model.layers.1.self_attn.q_norm.weight"))->name =
        "model.layers.1.self_attn.q_ln.weight";
    expect_refused(s, FT_STATUS_FORMAT, "model.layers.1.self_attn.q_norm.weight");
    s = source(1);
    assert_null(ft_meta_add_float(&s->meta, "clip_qkv", 8.0));
    expect_refused(s, FT_STATUS_UNSUPPORTED, "clip_qkv");
    s = source(0);
    assert_null(ft_meta_add_int(&s->meta, "olmoe.attention.head_count", 3));
    expect_refused(s, FT_STATUS_FORMAT, "heads");
}

/* Q8_0 weights (the GGUF's), against the reference that rounds each
 * activation row to Q8_0 blocks as the CPU kernels do (ref_forward.h
 * emulate_act_quant), within one activation quantum: float32 and double
 * arithmetic before a rounding can put a value on either side of a Q8_0
 * step (test_forward_formats.c derives the 3e-2). */
#define FT_OLMOE_QUANTUM_TOL 3e-2
static void test_q8_0(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    olmoe_opts(&o);
    o.format = FT_DTYPE_Q8_0;
    char dir[4200], bundle[4200], gguf[4300];
    snprintf(dir, sizeof(dir), "%s/q8_0", ft_test_tmpdir("olmoe_run"));
    FT_REF_OK(ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_INVALID, dir, bundle, sizeof(bundle)));
    snprintf(gguf, sizeof(gguf), "%s/model.gguf", dir);
    ft_ir_model_t *ir = NULL;
    FT_REF_OK(ft_import_model(gguf, &ir));
    assert_int_equal(ft_ir_find(ir, FT_ROLE_FFN_UP_EXPS, 1)->dtype, FT_DTYPE_Q8_0);
    ft_ref_model_t *m;
    FT_REF_OK(ft_ref_model_from_ir(ir, &m));
    m->emulate_act_quant = 1;
    ft_ref_greedy_t ref;
    FT_REF_OK(ft_ref_greedy_reference(m, k_prompt, N_PROMPT, N_GEN, N_CTX, &ref));
    ft_ref_model_free(m);
    ft_ir_model_destroy(ir);
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.kernels = FT_KERNELS_REFERENCE;
    float *cpu = ft_ref_expect_greedy(bundle, &eo, N_CTX, k_prompt, &ref, FT_OLMOE_QUANTUM_TOL,
                                      "olmoe q8_0 cpu reference", 1);
    eo.kernels = FT_KERNELS_GENERATED;
    free(ft_ref_expect_greedy(bundle, &eo, N_CTX, k_prompt, &ref, FT_OLMOE_QUANTUM_TOL,
                              "olmoe q8_0 cpu generated", 0));
    eo.kernels = FT_KERNELS_REFERENCE;
    eo.backend = FT_BACKEND_SIM;
    eo.hw_profile = g_hw;
    eo.vram_bytes = FT_OLMOE_SIM_VRAM;
    eo.plan_ctx = N_CTX;
    float *sim = ft_ref_expect_greedy(bundle, &eo, N_CTX, k_prompt, &ref, FT_OLMOE_QUANTUM_TOL,
                                      "olmoe q8_0 sim", 1);
    assert_memory_equal(sim, cpu, sizeof(float) * N_PROMPT * ref.vocab); /* the sim: cpu's bits */
    free(sim);
    free(cpu);
    ft_ref_greedy_free(&ref);
}

/* The cuda backend (fake driver): the whole-projection q/k norms (RMSNorm
 * kernels of 64 and 32), the unnormalized softmax router; everything
 * resident and with experts through slots and the CPU. */
static void test_olmoe_cuda(void **state)
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
    ft_ref_expect_cuda_runs(bundle, N_CTX, k_prompt, &g_ref, FT_OLMOE_TOL, g_hw, FT_OLMOE_CUDA_VRAM,
                            "olmoe");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import), cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_olmoe_matches_reference), cmocka_unit_test(test_q8_0),
        cmocka_unit_test(test_olmoe_cuda)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
