/* The HF imports of the Qwen3.5/3.6 MoE hybrid (Qwen3_5MoeForCausalLM) and
 * Qwen3-Next (Qwen3NextForCausalLM) against their GGUF imports. The fixture
 * generator writes each model twice from one seed (model_gen_qwen35_hf.c):
 * as llama.cpp's converter writes the GGUF (norms 1 + w, ssm_a = -exp(A_log),
 * Qwen3.5's value heads tiled) and as transformers writes the checkpoint
 * (norms w, A_log, value heads grouped by key head, conv1d [C, 1, K],
 * Qwen3.5's experts fused as gate_up_proj / down_proj, Qwen3-Next's one
 * tensor per expert and its fused in_proj_qkvz / in_proj_ba). Checks:
 *
 *  - both imports give the same hyperparameters and block kinds;
 *  - the float64 reference loaded from each IR (the HF one applying the
 *    IR's rewrites in double) agree within 1e-6 (the A_log -> -exp is
 *    f32 in the GGUF, double here);
 *  - the compiled f32 bundles give the same logits bit for bit (memcmp)
 *    on the cpu backend, reference and generated kernels, and the
 *    Qwen3.5 HF bundle is within 1e-4 of the float64 reference with the
 *    same greedy tokens: a wrong head order, a missing + 1 or -exp moves
 *    the logits far (1e-1 and more), so none of these can pass by a
 *    layout agreeing with itself;
 *  - the multimodal release's layout (Qwen3_5MoeForConditionalGeneration:
 *    config under text_config, tensors under model.language_model., a
 *    vision tower) imports its text model, the same logits again;
 *  - hostile HF checkpoints are refused naming the tensor or key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ref_bundle.h"
#include "ref_forward.h"
#include "ref_greedy_check.h"
#include "test_tmp.h"

#include "import.h"
#include "ir.h"
#include "model_registry.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_PROMPT = 20, N_GEN = 16, N_CTX = 64 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};

/* [arch][0 GGUF, 1 HF]: arch 0 Qwen3.5, 1 Qwen3-Next */
static char g_dir[2][2][4096], g_bundle[2][2][4096];

static void opts(ft_fixture_opts_t *o, int next)
{
    ft_fixture_opts_init(o);
    o->arch = next ? FT_FIXTURE_QWEN3NEXT : FT_FIXTURE_QWEN35MOE;
    o->name = next ? "freetoken-fixture-qwen3next" : "freetoken-fixture-qwen35moe";
    o->n_layers = 4;
}

static int setup(void **state)
{
    (void)state;
    for (int a = 0; a < 2; a++) {
        ft_fixture_opts_t o;
        opts(&o, a);
        for (int f = 0; f < 2; f++) {
            snprintf(g_dir[a][f], sizeof(g_dir[a][f]), "%s/%s-%s", ft_test_tmpdir("q35_hf"),
                     a ? "next" : "q35", f ? "hf" : "gguf");
            ft_status_t st = ft_ref_build_bundle(&o, f ? FT_REF_FROM_HF : FT_REF_FROM_GGUF,
                                                 FT_DTYPE_F32, g_dir[a][f], g_bundle[a][f],
                                                 sizeof(g_bundle[a][f]));
            if (st) {
                fprintf(stderr, "building %s: %s\n", g_dir[a][f], ft_status_message(st));
                ft_status_free(st);
                return -1;
            }
        }
    }
    return 0;
}

static void src_path(int a, int f, char *out, size_t cap)
{
    snprintf(out, cap, f ? "%s/hf" : "%s/model.gguf", g_dir[a][f]);
}

static ft_ir_model_t *import(int a, int f)
{
    char src[4200];
    src_path(a, f, src, sizeof(src));
    ft_ir_model_t *ir = NULL;
    FT_REF_OK(ft_import_model(src, &ir));
    return ir;
}

static void test_import(void **state)
{
    (void)state;
    for (int a = 0; a < 2; a++) {
        ft_ir_model_t *g = import(a, 0), *h = import(a, 1);
        assert_int_equal(h->hp.arch, a ? FT_ARCH_QWEN3NEXT : FT_ARCH_QWEN35MOE);
        assert_string_equal(h->source_format, "safetensors");
        assert_int_equal(h->hp.n_layers, g->hp.n_layers);
        assert_int_equal(h->hp.d_model, g->hp.d_model);
        assert_int_equal(h->hp.rope_dim, g->hp.rope_dim);
        assert_true(h->hp.rope_theta == g->hp.rope_theta);
        assert_true(h->hp.norm_eps == g->hp.norm_eps);
        assert_int_equal(h->hp.vocab_size, g->hp.vocab_size);
        for (uint32_t l = 0; l < g->hp.n_layers; l++) {
            const ft_ir_block_t *x = &g->blocks[l], *y = &h->blocks[l];
            assert_int_equal(y->attn.kind, x->attn.kind);
            assert_int_equal(y->attn.heads_tiled, x->attn.heads_tiled);
            assert_int_equal(y->attn.n_heads, x->attn.n_heads);
            assert_int_equal(y->attn.n_kv_heads, x->attn.n_kv_heads);
            assert_int_equal(y->attn.head_dim, x->attn.head_dim);
            assert_int_equal(y->attn.conv_kernel, x->attn.conv_kernel);
            assert_int_equal(y->is_moe, x->is_moe);
            assert_int_equal(y->moe.n_shared_experts, x->moe.n_shared_experts);
            assert_int_equal(y->moe.shared_gate, x->moe.shared_gate);
            assert_int_equal(y->moe.expert_ffn, x->moe.expert_ffn);
        }
        /* the rewrites the HF import asks of the packer */
        assert_int_equal(ft_ir_find(h, FT_ROLE_SSM_A, 0)->xform, FT_IR_XFORM_NEG_EXP);
        assert_int_equal(ft_ir_find(h, FT_ROLE_ATTN_NORM, 0)->xform, FT_IR_XFORM_ADD_ONE);
        assert_int_equal(ft_ir_find(h, FT_ROLE_OUTPUT_NORM, -1)->xform, FT_IR_XFORM_ADD_ONE);
        assert_int_equal(ft_ir_find(h, FT_ROLE_SSM_NORM, 0)->xform, FT_IR_XFORM_NONE);
        assert_int_equal(ft_ir_find(h, FT_ROLE_SSM_OUT, 0)->tiling.tile_elems, a ? 0 : 16);
        assert_int_equal(ft_ir_find(g, FT_ROLE_SSM_A, 0)->xform, FT_IR_XFORM_NONE);
        ft_ir_model_destroy(g);
        ft_ir_model_destroy(h);
    }
}

/* The float64 reference of both imports: the HF IR read with its rewrites. */
static void test_reference_agrees(void **state)
{
    (void)state;
    for (int a = 0; a < 2; a++) {
        ft_ref_greedy_t r[2];
        for (int f = 0; f < 2; f++) {
            ft_ir_model_t *ir = import(a, f);
            ft_ref_model_t *m;
            FT_REF_OK(ft_ref_model_from_ir(ir, &m));
            FT_REF_OK(ft_ref_greedy_reference(m, k_prompt, N_PROMPT, N_GEN, N_CTX, &r[f]));
            ft_ref_model_free(m);
            ft_ir_model_destroy(ir);
        }
        double err = 0, scale = 0;
        for (uint64_t i = 0; i < (uint64_t)N_PROMPT * r[0].vocab; i++) {
            err = fmax(err, fabs(r[0].prompt[i] - r[1].prompt[i]));
            scale = fmax(scale, fabs(r[0].prompt[i]));
        }
        print_message("%s: reference GGUF vs HF: %.3g of %.3g\n", a ? "qwen3next" : "qwen35moe",
                      err, scale);
        assert_true(err <= 1e-6 * scale);
        assert_memory_equal(r[0].tokens, r[1].tokens, sizeof(r[0].tokens[0]) * N_GEN);
        ft_ref_greedy_free(&r[0]);
        ft_ref_greedy_free(&r[1]);
    }
}

static float *logits(const char *bundle, int kernels)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = FT_BACKEND_CPU;
    eo.kernels = kernels;
    ft_engine_t *e = NULL;
    FT_REF_OK(ft_engine_open(bundle, &eo, &e));
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = N_CTX;
    ft_session_t *s = NULL;
    FT_REF_OK(ft_session_create(e, &so, &s));
    const ft_model_info_t *info = ft_engine_info(e);
    assert_int_equal(info->vocab_size, 563);
    float *out = malloc(sizeof(float) * N_PROMPT * info->vocab_size);
    assert_non_null(out);
    FT_REF_OK(ft_session_eval(s, k_prompt, N_PROMPT, out));
    ft_session_destroy(s);
    ft_engine_close(e);
    return out;
}

/* GGUF and HF bundles: the same bits; Qwen3.5 HF against the reference. */
static void test_bundles_identical(void **state)
{
    (void)state;
    for (int a = 0; a < 2; a++)
        for (int k = 0; k < 2; k++) {
            const int kernels = k ? FT_KERNELS_GENERATED : FT_KERNELS_REFERENCE;
            float *g = logits(g_bundle[a][0], kernels), *h = logits(g_bundle[a][1], kernels);
            assert_memory_equal(g, h, sizeof(float) * N_PROMPT * 563);
            free(g);
            free(h);
        }
    ft_ref_greedy_t ref;
    ft_ir_model_t *ir = import(0, 0);
    ft_ref_model_t *m;
    FT_REF_OK(ft_ref_model_from_ir(ir, &m));
    FT_REF_OK(ft_ref_greedy_reference(m, k_prompt, N_PROMPT, N_GEN, N_CTX, &ref));
    ft_ref_model_free(m);
    ft_ir_model_destroy(ir);
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    free(ft_ref_expect_greedy(g_bundle[0][1], &eo, N_CTX, k_prompt, &ref, 1e-4,
                              "qwen35moe from HF", 0));
    ft_ref_greedy_free(&ref);
}

/* The multimodal release's layout (Qwen3_5MoeForConditionalGeneration:
 * text_config, model.language_model.*, a vision tower): its text model,
 * the same logits as the GGUF's. */
static void test_multimodal_release(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    opts(&o, 0);
    o.hf_multimodal = 1;
    char dir[4200], bundle[4300];
    snprintf(dir, sizeof(dir), "%s/q35-mm", ft_test_tmpdir("q35_hf"));
    FT_REF_OK(ft_ref_build_bundle(&o, FT_REF_FROM_HF, FT_DTYPE_F32, dir, bundle, sizeof(bundle)));
    char src[4300];
    snprintf(src, sizeof(src), "%s/hf", dir);
    ft_src_model_t *s = NULL;
    FT_REF_OK(ft_import_source(src, &s));
    assert_non_null(ft_src_find_tensor(s, "model.layers.0.linear_attn.A_log"));
    assert_non_null(ft_src_find_tensor(s, "model.visual.patch_embed.proj.weight"));
    ft_src_model_destroy(s);
    float *g = logits(g_bundle[0][0], FT_KERNELS_REFERENCE), *h = logits(bundle, FT_KERNELS_REFERENCE);
    assert_memory_equal(g, h, sizeof(float) * N_PROMPT * 563);
    free(g);
    free(h);
}

static void expect_refused(ft_src_model_t *src, ft_status_code_t code, const char *needle)
{
    ft_ir_model_t *m = NULL;
    ft_status_t st = ft_model_build_ir(src, &m);
    assert_null(m);
    if (!st) fail_msg("expected an error containing '%s'", needle);
    print_message("refused: %s\n", ft_status_message(st));
    if (ft_status_code(st) != code || !strstr(ft_status_message(st), needle))
        fail_msg("got [%s] %s; wanted [%s] containing '%s'", ft_status_code_name(ft_status_code(st)),
                 ft_status_message(st), ft_status_code_name(code), needle);
    ft_status_free(st);
    ft_src_model_destroy(src);
}

static ft_src_model_t *source(int a)
{
    char src[4200];
    src_path(a, 1, src, sizeof(src));
    ft_src_model_t *s = NULL;
    FT_REF_OK(ft_import_source(src, &s));
    return s;
}

static ft_src_tensor_t *tensor(ft_src_model_t *s, const char *name)
{
    ft_src_tensor_t *t = (ft_src_tensor_t *)ft_src_find_tensor(s, name);
    assert_non_null(t);
    return t;
}

static void test_hostile(void **state)
{
    (void)state;
    ft_src_model_t *s = source(0);
    tensor(s, "model.layers.0.linear_attn.A_log")->name = "model.layers.0.linear_attn.A";
    expect_refused(s, FT_STATUS_FORMAT, "model.layers.0.linear_attn.A_log");
    s = source(0);
    tensor(s, "model.layers.1.linear_attn.in_proj_z.weight")->shape[0] -= 16;
    expect_refused(s, FT_STATUS_FORMAT, "model.layers.1.linear_attn.in_proj_z.weight");
    s = source(0);
    tensor(s, "model.layers.2.linear_attn.conv1d.weight")->shape[1] = 2;
    expect_refused(s, FT_STATUS_FORMAT, "model.layers.2.linear_attn.conv1d.weight");
    s = source(0);
    tensor(s, "model.layers.0.mlp.experts.gate_up_proj")->shape[1] -= 1;
    expect_refused(s, FT_STATUS_FORMAT, "model.layers.0.mlp.experts.gate_up_proj");
    s = source(0);
    tensor(s, "model.layers.3.mlp.experts.down_proj")->name = "model.layers.3.mlp.experts.down";
    expect_refused(s, FT_STATUS_FORMAT, "model.layers.3.mlp.experts.down_proj");
    s = source(1);
    tensor(s, "model.layers.0.linear_attn.in_proj_ba.weight")->shape[0] += 2;
    expect_refused(s, FT_STATUS_FORMAT, "model.layers.0.linear_attn.in_proj_ba.weight");
    s = source(1);
    tensor(s, "model.layers.2.linear_attn.in_proj_qkvz.weight")->name = "model.layers.2.x";
    expect_refused(s, FT_STATUS_FORMAT, "model.layers.2.linear_attn.in_proj_qkvz.weight");
    s = source(0); /* a stray tensor */
    tensor(s, "model.layers.0.linear_attn.dt_bias")->name = "model.layers.0.linear_attn.dt_bias2";
    expect_refused(s, FT_STATUS_FORMAT, "model.layers.0.linear_attn.dt_bias");
    s = source(0);
    assert_null(ft_meta_add_string(&s->meta, "layer_types.1", "mamba", 5));
    expect_refused(s, FT_STATUS_UNSUPPORTED, "layer_types.1");
    s = source(0);
    assert_null(ft_meta_add_int(&s->meta, "linear_value_head_dim", 32));
    expect_refused(s, FT_STATUS_UNSUPPORTED, "linear_value_head_dim");
    s = source(1);
    assert_null(ft_meta_add_bool(&s->meta, "norm_topk_prob", 0));
    expect_refused(s, FT_STATUS_UNSUPPORTED, "norm_topk_prob");
    s = source(0); /* a bf16 A_log is fine, an int one is no float to rewrite */
    tensor(s, "model.layers.0.linear_attn.A_log")->dtype = FT_DTYPE_I32;
    expect_refused(s, FT_STATUS_UNSUPPORTED, "model.layers.0.linear_attn.A_log");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import), cmocka_unit_test(test_reference_agrees),
        cmocka_unit_test(test_bundles_identical), cmocka_unit_test(test_multimodal_release),
        cmocka_unit_test(test_hostile)};
    return cmocka_run_group_tests(tests, setup, NULL);
}
