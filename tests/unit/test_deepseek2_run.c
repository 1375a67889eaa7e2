/* DeepSeek V3 (deepseek2) through the op schedule: the fixture (2 layers,
 * the first dense; multi-head latent attention: 4 heads of 16 + 8 RoPE
 * dims, q and KV ranks 32, values of 16; YaRN x4 over 32 positions with
 * DeepSeek's mscale; a sigmoid router with its selection bias over 2
 * groups of 4 experts of which 1 is used, top-2, renormalized x 2.5, one
 * shared expert) written as GGUF (ik_llama.cpp's attn_kv_b layout and
 * llama.cpp's split attn_k_b / attn_v_b) and as HF (DeepseekV3ForCausalLM),
 * imported, compiled and run by the executor against the float64
 * reference loaded from the imported IR:
 *
 *  - the imports give the same IR (HF = GGUF with kv_b), with the
 *    hyperparameters the files state; the split layout W_kb transposed;
 *  - cpu (reference and generated kernels: the generated path runs the
 *    plan module's MLA kernel, kernel ABI 5, which the bundle must hold for
 *    the layers' shape) and the sim, from GGUF
 *    (both layouts) and HF: a 20-token prompt's logits (the MLA's expanded
 *    form) within 1e-4 (normalized error) with the same argmax, 32 greedy
 *    tokens (each a decode step: the absorbed form) equal; the GGUF and HF
 *    bundles give the same logits bit for bit, the split layout too, and
 *    the sim the cpu backend's;
 *  - the KV cache holds the compressed rows: kv_lora + rope = 40 floats
 *    per position and layer (K and V rows of 20);
 *  - Q8_0 weights within one activation quantum (test_gptoss_run's 3e-2);
 *  - hostile checkpoints refused naming the key or tensor;
 *  - the cuda backend refuses the plan naming the MLA op. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ref_bundle.h"
#include "ref_forward.h"
#include "ref_greedy_check.h"
#include "test_tmp.h"

#include "ft_kernel_abi.h"
#include "../../runtime/format/bundle.h"

#include "import.h"
#include "ir.h"
#include "model_registry.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FT_DS_TOL 1e-4
/* sim and cuda budgets below the whole model: the cuda one keeps 15 expert
 * slots of the 16 experts (the prompt: 11 hits, 1 miss to the CPU) */
#define FT_DS_SIM_VRAM (1200ull << 10)
#define FT_DS_CUDA_VRAM (2700ull << 10)
enum { N_PROMPT = 20, N_GEN = 32, N_CTX = 64 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};

static char g_dir[3][4096], g_bundle[3][4096]; /* [0] GGUF (kv_b), [1] HF, [2] GGUF (split k_b / v_b) */
static char g_hw[4096];
static ft_ref_greedy_t g_ref;

static void ds_opts(ft_fixture_opts_t *o)
{
    ft_fixture_opts_init(o);
    o->arch = FT_FIXTURE_DEEPSEEK2;
    o->name = "freetoken-fixture-deepseek2";
    o->n_dense_layers = 1;
    o->rope_yarn_factor = 4.0f;
    o->rope_yarn_orig_ctx = 32;
}

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ds_opts(&o);
    for (int f = 0; f < 3; f++) {
        o.mla_split_kv_b = f == 2;
        snprintf(g_dir[f], sizeof(g_dir[f]), "%s/%s", ft_test_tmpdir("deepseek2_run"),
                 f == 0 ? "gguf" : f == 1 ? "hf" : "gguf-split");
        ft_status_t st = ft_ref_build_bundle(&o, f == 1 ? FT_REF_FROM_HF : FT_REF_FROM_GGUF, FT_DTYPE_F32, g_dir[f],
                                             g_bundle[f], sizeof(g_bundle[f]));
        if (st) {
            fprintf(stderr, "building the deepseek2 bundle: %s\n", ft_status_message(st));
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
    snprintf(src, sizeof(src), from == 1 ? "%s/hf" : "%s/model.gguf", g_dir[from]);
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

/* What the importers read, and that they agree. */
static void test_import(void **state)
{
    (void)state;
    ft_ir_model_t *ms[3] = {import(0), import(1), import(2)};
    for (int f = 0; f < 3; f++) {
        const ft_ir_model_t *m = ms[f];
        assert_int_equal(m->hp.arch, FT_ARCH_DEEPSEEK2);
        assert_int_equal(m->hp.n_layers, 2);
        assert_int_equal(m->hp.rope, FT_ROPE_NORM);
        assert_int_equal(m->hp.rope_dim, 8);
        assert_true(m->hp.rope_yarn_factor == 4.0f);
        assert_int_equal(m->hp.rope_yarn_orig_ctx, 32);
        assert_true(m->hp.rope_yarn_mscale == 1.0f);
        assert_false(m->blocks[0].is_moe);
        for (uint32_t l = 0; l < 2; l++) {
            const ft_ir_attention_t *a = &m->blocks[l].attn;
            assert_int_equal(a->kind, FT_ATTN_MLA);
            assert_int_equal(a->n_heads, 4);
            assert_int_equal(a->head_dim, 24);
            assert_int_equal(a->nope_head_dim, 16);
            assert_int_equal(a->value_head_dim, 16);
            assert_int_equal(a->q_lora_rank, 32);
            assert_int_equal(a->kv_lora_rank, 32);
            const double ms_all = 1.0 + 0.1 * log(4.0); /* mscale(4, mscale_all_dim 1) */
            assert_true(fabs(a->attn_scale - ms_all * ms_all / sqrt(24.0)) < 1e-6);
            assert_non_null(ft_ir_find(m, f == 2 ? FT_ROLE_ATTN_K_B_T : FT_ROLE_ATTN_K_B, (int32_t)l));
        }
        const ft_ir_moe_t *moe = &m->blocks[1].moe;
        assert_true(m->blocks[1].is_moe);
        assert_int_equal(moe->scoring, FT_ROUTER_SIGMOID);
        assert_true(moe->norm_topk_prob);
        assert_true(moe->routed_scaling == 2.5f);
        assert_int_equal(moe->n_shared_experts, 1);
        assert_int_equal(moe->n_groups, 2);
        assert_int_equal(moe->n_groups_used, 1);
        assert_non_null(ft_ir_find(m, FT_ROLE_FFN_EXP_PROBS_B, 1));
    }
    char *a = ir_text(ms[0]), *b = ir_text(ms[1]);
    assert_string_equal(a, b);
    free(a);
    free(b);
    for (int f = 0; f < 3; f++)
        ft_ir_model_destroy(ms[f]);
}

static float *run(const char *bundle, ft_backend_kind_t backend, int kernels, const char *name)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = backend;
    eo.kernels = kernels;
    if (backend == FT_BACKEND_SIM) {
        eo.hw_profile = g_hw;
        eo.vram_bytes = FT_DS_SIM_VRAM;
        eo.plan_ctx = N_CTX;
    }
    char what[96];
    snprintf(what, sizeof(what), "deepseek2 %s", name);
    return ft_ref_expect_greedy(bundle, &eo, N_CTX, k_prompt, &g_ref, FT_DS_TOL, what, 1);
}

/* The float64 reference from the GGUF import. */
static void reference(void)
{
    ft_ir_model_t *ir = import(0);
    ft_ref_model_t *m;
    FT_REF_OK(ft_ref_model_from_ir(ir, &m));
    assert_true(m->layers[1].mla);
    assert_non_null(m->layers[1].sel_bias);
    FT_REF_OK(ft_ref_greedy_reference(m, k_prompt, N_PROMPT, N_GEN, N_CTX, &g_ref));
    ft_ref_model_free(m);
    ft_ir_model_destroy(ir);
}

/* The bundle's CPU module holds the MLA kernel of the layers' shape
 * (q_nope 16, RoPE 8, kv_lora 32, values 16), which the generated path
 * runs (program.c binds it, op_mla.c calls it per head). */
static void test_mla_kernel_in_plan(void **state)
{
    (void)state;
    ft_bundle_t *b = NULL;
    FT_REF_OK(ft_bundle_open(g_bundle[0], &b));
    int n = 0;
    for (size_t i = 0; b->plan->cpu_module && i < b->plan->cpu_module->n_kernels; i++) {
        const Ftplan__CpuKernel *k = b->plan->cpu_module->kernels[i];
        if (k->op != FT_KABI_OP_MLA) continue;
        n++;
        assert_int_equal(k->rows, 16);
        assert_int_equal(k->cols, 32);
        assert_int_equal(k->key_heads, FT_KABI_MLA_AUX(8, 16));
        assert_int_equal(k->format, FTPLAN__WEIGHT_FORMAT__WF_F32);
    }
    assert_int_equal(n, 1);
    ft_bundle_close(b);
}

static void test_deepseek2_matches_reference(void **state)
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
        {1, FT_BACKEND_CPU, FT_KERNELS_REFERENCE, "hf cpu reference"},
        {2, FT_BACKEND_CPU, FT_KERNELS_REFERENCE, "gguf split k_b/v_b cpu reference"},
    };
    float *first = NULL;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        float *prompt = run(g_bundle[cases[c].from], cases[c].backend, cases[c].kernels, cases[c].name);
        if (c == 0) {
            first = prompt;
            continue;
        }

        /* the same values in the same layout (the split one widened to the
         * same floats): the same bits; the sim computes as the cpu backend */
        if (cases[c].kernels == FT_KERNELS_REFERENCE)
            assert_memory_equal(prompt, first, sizeof(float) * N_PROMPT * g_ref.vocab);
        free(prompt);
    }
    free(first);
}

/* The KV cache's rows: the compressed kv_lora + rope floats per position
 * and layer (split over a K and a V row of 20), not the heads' keys and
 * values (2 x 4 x 24 would be 192). */
static void test_kv_compressed(void **state)
{
    (void)state;
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    ft_engine_t *e = NULL;
    FT_REF_OK(ft_engine_open(g_bundle[0], &eo, &e));
    ft_engine_stats_t es;
    ft_engine_stats(e, &es);
    print_message("KV page: %llu bytes for 16 positions of 2 layers\n", (unsigned long long)es.kv_page_bytes);
    assert_int_equal(es.kv_page_bytes, 16ull * 2 * (32 + 8) * sizeof(float)); /* f32 cache */
    ft_engine_close(e);
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
    snprintf(src, sizeof(src), from == 1 ? "%s/hf" : "%s/model.gguf", g_dir[from]);
    ft_src_model_t *s = NULL;
    FT_REF_OK(ft_import_source(src, &s));
    return s;
}

static void test_hostile(void **state)
{
    (void)state;
    ft_src_model_t *s = source(0);
    assert_null(ft_meta_add_int(&s->meta, "deepseek2.expert_gating_func", 3));
    expect_refused(s, FT_STATUS_UNSUPPORTED, "expert_gating_func");
    s = source(0); /* kv_a_mqa must hold kv_lora + rope rows */
    assert_null(ft_meta_add_int(&s->meta, "deepseek2.attention.kv_lora_rank", 16));
    expect_refused(s, FT_STATUS_FORMAT, "attn_kv_a_mqa");
    s = source(0);
    ((ft_src_tensor_t *)ft_src_find_tensor(s, "blk.1.attn_kv_b.weight"))->name = "blk.1.attn_kv_c.weight";
    expect_refused(s, FT_STATUS_FORMAT, "blk.1.attn_k_b.weight");
    s = source(2); /* the split W_kb of the wrong shape */
    ((ft_src_tensor_t *)ft_src_find_tensor(s, "blk.0.attn_k_b.weight"))->shape[1] = 16;
    expect_refused(s, FT_STATUS_FORMAT, "attn_k_b");
    s = source(2);
    assert_null(ft_meta_add_int(&s->meta, "deepseek2.attention.key_length", 24));
    expect_refused(s, FT_STATUS_FORMAT, "key_length");
    s = source(1);
    assert_null(ft_meta_add_string(&s->meta, "topk_method", "group_limited_greedy", 20));
    expect_refused(s, FT_STATUS_UNSUPPORTED, "group_limited_greedy");
    s = source(1);
    assert_null(ft_meta_add_int(&s->meta, "moe_layer_freq", 2));
    expect_refused(s, FT_STATUS_UNSUPPORTED, "moe_layer_freq");
    s = source(1);
    assert_null(ft_meta_add_string(&s->meta, "rope_scaling.type", "longrope", 8));
    expect_refused(s, FT_STATUS_UNSUPPORTED, "longrope");
    s = source(1);
    ((ft_src_tensor_t *)ft_src_find_tensor(s, "model.layers.1.self_attn.q_a_layernorm.weight"))->name =
        "model.layers.1.self_attn.q_a_norm.weight";
    expect_refused(s, FT_STATUS_FORMAT, "model.layers.1.self_attn.q_a_layernorm.weight");
}

/* Q8_0 weights (the GGUF's), against the reference that rounds each
 * activation row to Q8_0 blocks as the CPU kernels do (ref_forward.h
 * emulate_act_quant), within one activation quantum: float32 and double
 * arithmetic before a rounding can put a value on either side of a Q8_0
 * step (test_forward_formats.c derives the 3e-2). */
#define FT_DS_QUANTUM_TOL 3e-2
static void test_q8_0(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ds_opts(&o);
    o.format = FT_DTYPE_Q8_0;
    char dir[4200], bundle[4200], gguf[4300];
    snprintf(dir, sizeof(dir), "%s/q8_0", ft_test_tmpdir("deepseek2_run"));
    FT_REF_OK(ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_INVALID, dir, bundle, sizeof(bundle)));
    snprintf(gguf, sizeof(gguf), "%s/model.gguf", dir);
    ft_ir_model_t *ir = NULL;
    FT_REF_OK(ft_import_model(gguf, &ir));
    assert_int_equal(ft_ir_find(ir, FT_ROLE_FFN_UP_EXPS, 1)->dtype, FT_DTYPE_Q8_0);
    assert_int_equal(ft_ir_find(ir, FT_ROLE_ATTN_K_B, 1)->dtype, FT_DTYPE_Q8_0);
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
    float *cpu = ft_ref_expect_greedy(bundle, &eo, N_CTX, k_prompt, &ref, FT_DS_QUANTUM_TOL,
                                      "deepseek2 q8_0 cpu reference", 1);
    eo.kernels = FT_KERNELS_REFERENCE;
    eo.backend = FT_BACKEND_SIM;
    eo.hw_profile = g_hw;
    eo.vram_bytes = FT_DS_SIM_VRAM;
    eo.plan_ctx = N_CTX;
    float *sim = ft_ref_expect_greedy(bundle, &eo, N_CTX, k_prompt, &ref, FT_DS_QUANTUM_TOL,
                                      "deepseek2 q8_0 sim", 1);
    assert_memory_equal(sim, cpu, sizeof(float) * N_PROMPT * ref.vocab); /* the sim: cpu's bits */
    free(sim);
    free(cpu);
    ft_ref_greedy_free(&ref);
}

/* The cuda backend has no MLA kernel: opening a bundle with the op is
 * refused naming it, before any device or CUDA module is needed (so this
 * runs without the fake driver or NVRTC too). */
static void test_deepseek2_cuda(void **state)
{
    (void)state;
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = FT_BACKEND_CUDA;
    eo.vram_bytes = 64ull << 20;
    ft_engine_t *e = NULL;
    ft_status_t st = ft_engine_open(g_bundle[0], &eo, &e);
    if (!st) {
        ft_engine_close(e);
        fail_msg("the cuda backend opened a plan with an MLA op");
    }
    print_message("refused: %s\n", ft_status_message(st));
    assert_int_equal(ft_status_code(st), FT_STATUS_UNSUPPORTED);
    assert_non_null(strstr(ft_status_message(st), "OP_MLA"));
    ft_status_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import), cmocka_unit_test(test_hostile), cmocka_unit_test(test_mla_kernel_in_plan),
        cmocka_unit_test(test_deepseek2_matches_reference), cmocka_unit_test(test_kv_compressed),
        cmocka_unit_test(test_q8_0), cmocka_unit_test(test_deepseek2_cuda)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
