/* The HF import of gpt-oss (GptOssForCausalLM as OpenAI ships it: MXFP4
 * experts as *_blocks + *_scales with gate and up in alternating rows,
 * gate_up_proj_bias alternating too) against the GGUF import of the same
 * model (llama.cpp's layout: ggml MXFP4 blocks, gate and up split). The
 * fixture generator writes both from one seed; its HF blocks are the GGUF
 * blocks with their nibbles moved into HF's order by its own code
 * (model_gen_oss_hf.c). Checks:
 *
 *  - both imports give the same hyperparameters, windows and YaRN;
 *  - every row of every HF expert stack, moved back (ir.h:
 *    FT_IR_XFORM_MXFP4_HF), is byte for byte the GGUF stack's row: no
 *    value is re-rounded;
 *  - the float64 reference loaded from each IR holds the same experts and
 *    biases (the stacks moved by ft_ir_mxfp4_hf_row, the biases de-interleaved by
 *    the loader itself);
 *  - compiled to MXFP4 (the HF checkpoint's f32 attention quantized as the
 *    GGUF's was), the two bundles give the same logits bit for bit on the
 *    cpu backend, reference and generated kernels;
 *  - hostile HF checkpoints are refused naming the tensor or key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ref_bundle.h"
#include "ref_check.h"
#include "ref_forward.h"
#include "test_tmp.h"

#include "import.h"
#include "ir.h"
#include "model_registry.h"
#include "../../runtime/base/mapped_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_PROMPT = 20, N_CTX = 64 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};

static char g_dir[2][4096], g_bundle[2][4096]; /* [0] GGUF, [1] HF */

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    ft_fixture_opts_gpt_oss(&o);
    o.format = FT_DTYPE_MXFP4;
    o.n_layers = 3;
    o.sliding_window = 4;
    for (int f = 0; f < 2; f++) {
        snprintf(g_dir[f], sizeof(g_dir[f]), "%s/%s", ft_test_tmpdir("oss_hf"), f ? "hf" : "gguf");
        ft_status_t st = ft_ref_build_bundle(&o, f ? FT_REF_FROM_HF : FT_REF_FROM_GGUF,
                                             FT_DTYPE_MXFP4, g_dir[f], g_bundle[f],
                                             sizeof(g_bundle[f]));
        if (st) {
            fprintf(stderr, "building %s: %s\n", g_dir[f], ft_status_message(st));
            ft_status_free(st);
            return -1;
        }
    }
    return 0;
}

static void src_path(int f, char *out, size_t cap)
{
    snprintf(out, cap, f ? "%s/hf" : "%s/model.gguf", g_dir[f]);
}

static ft_ir_model_t *import(int f)
{
    char src[4200];
    src_path(f, src, sizeof(src));
    ft_ir_model_t *ir = NULL;
    FT_REF_OK(ft_import_model(src, &ir));
    return ir;
}

static void test_import(void **state)
{
    (void)state;
    ft_ir_model_t *g = import(0), *h = import(1);
    assert_int_equal(h->hp.arch, FT_ARCH_GPT_OSS);
    assert_int_equal(h->hp.n_layers, 3);
    assert_int_equal(h->hp.rope_dim, g->hp.rope_dim);
    assert_true(h->hp.rope_theta == g->hp.rope_theta);
    assert_true(h->hp.norm_eps == g->hp.norm_eps);
    assert_true(h->hp.rope_yarn_factor == g->hp.rope_yarn_factor);
    assert_int_equal(h->hp.rope_yarn_orig_ctx, g->hp.rope_yarn_orig_ctx);
    assert_true(h->hp.rope_yarn_beta_fast == g->hp.rope_yarn_beta_fast);
    for (uint32_t l = 0; l < 3; l++) {
        const ft_ir_block_t *x = &g->blocks[l], *y = &h->blocks[l];
        assert_int_equal(y->attn.sliding_window, x->attn.sliding_window);
        assert_int_equal(y->attn.has_bias, 1);
        assert_int_equal(y->attn.has_sinks, 1);
        assert_int_equal(y->moe.has_router_bias, 1);
        assert_int_equal(y->act, FT_ACT_SWIGLU_OAI);
        assert_int_equal(y->moe.n_experts, x->moe.n_experts);
    }
    assert_int_equal(h->blocks[0].attn.sliding_window, 4);
    assert_int_equal(h->blocks[1].attn.sliding_window, 0);
    ft_ir_model_destroy(g);
    ft_ir_model_destroy(h);
}

/* The bytes of piece p of t (mapped). */
static const uint8_t *piece(const ft_ir_model_t *m, const ft_ir_tensor_t *t, uint32_t p,
                            ft_mapped_file_t **maps)
{
    const ft_ir_piece_t *pc = &t->pieces[p];
    if (!maps[pc->file]) FT_REF_OK(ft_mapped_file_open(m->files[pc->file].path, &maps[pc->file]));
    return maps[pc->file]->data + pc->offset;
}

/* Every HF expert row moved back equals the GGUF row, byte for byte. */
static void test_expert_bits(void **state)
{
    (void)state;
    ft_ir_model_t *g = import(0), *h = import(1);
    ft_mapped_file_t *gm[8] = {0}, *hm[8] = {0};
    static const ft_tensor_role_t roles[3] = {FT_ROLE_FFN_GATE_EXPS, FT_ROLE_FFN_UP_EXPS,
                                              FT_ROLE_FFN_DOWN_EXPS};
    uint64_t n_rows = 0;
    for (int32_t l = 0; l < 3; l++)
        for (int k = 0; k < 3; k++) {
            const ft_ir_tensor_t *gt = ft_ir_find(g, roles[k], l), *ht = ft_ir_find(h, roles[k], l);
            assert_int_equal(gt->dtype, FT_DTYPE_MXFP4);
            assert_int_equal(ht->xform, FT_IR_XFORM_MXFP4_HF);
            assert_memory_equal(gt->shape, ht->shape, sizeof(gt->shape));
            assert_int_equal(gt->n_pieces, 1);
            const uint64_t cols = gt->shape[2], rows = gt->shape[0] * gt->shape[1],
                           rb = cols / 32 * 17;
            const uint8_t *want = piece(g, gt, 0, gm), *blocks = piece(h, ht, 0, hm),
                          *scales = piece(h, ht, 1, hm);
            uint8_t row[4096];
            assert_true(rb <= sizeof(row));
            for (uint64_t r = 0; r < rows; r++, n_rows++) {
                ft_ir_mxfp4_hf_row(ht, blocks, scales, r, row);
                if (memcmp(row, want + r * rb, rb) != 0)
                    fail_msg("layer %d %s row %llu differs", (int)l, gt->name, (unsigned long long)r);
            }
        }
    print_message("%llu expert rows identical\n", (unsigned long long)n_rows);
    for (int i = 0; i < 8; i++) {
        ft_mapped_file_close(gm[i]);
        ft_mapped_file_close(hm[i]);
    }
    ft_ir_model_destroy(g);
    ft_ir_model_destroy(h);
}

/* The float64 reference's reading of both imports (ref_load_ir.c reads
 * the HF stacks and de-interleaves the biases itself): the same experts. */
static void test_reference_reads(void **state)
{
    (void)state;
    ft_ref_model_t *m[2];
    for (int f = 0; f < 2; f++) {
        ft_ir_model_t *ir = import(f);
        FT_REF_OK(ft_ref_model_from_ir(ir, &m[f]));
        ft_ir_model_destroy(ir);
    }
    for (uint32_t l = 0; l < 3; l++) {
        const ft_ref_layer_t *a = &m[0]->layers[l], *b = &m[1]->layers[l];
        const size_t E = a->n_experts, F = a->expert_ffn, d = m[0]->d_model;
        assert_memory_equal(a->gate, b->gate, E * F * d * sizeof(double));
        assert_memory_equal(a->up, b->up, E * F * d * sizeof(double));
        assert_memory_equal(a->down, b->down, E * F * d * sizeof(double));
        assert_memory_equal(a->b_gate, b->b_gate, E * F * sizeof(double));
        assert_memory_equal(a->b_up, b->b_up, E * F * sizeof(double));
        assert_memory_equal(a->b_down, b->b_down, E * d * sizeof(double));
        assert_memory_equal(a->router_bias, b->router_bias, E * sizeof(double));
        assert_memory_equal(a->sinks, b->sinks, a->n_heads * sizeof(double));
    }
    ft_ref_model_free(m[0]);
    ft_ref_model_free(m[1]);
}

static float *logits(const char *bundle, int kernels)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.kernels = kernels;
    ft_engine_t *e = NULL;
    FT_REF_OK(ft_engine_open(bundle, &eo, &e));
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = N_CTX;
    ft_session_t *s = NULL;
    FT_REF_OK(ft_session_create(e, &so, &s));
    const uint32_t V = ft_engine_info(e)->vocab_size;
    assert_int_equal(V, 563);
    float *out = malloc(sizeof(float) * N_PROMPT * V);
    assert_non_null(out);
    FT_REF_OK(ft_session_eval(s, k_prompt, N_PROMPT, out));
    ft_session_destroy(s);
    ft_engine_close(e);
    return out;
}

static void test_bundles_identical(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        const int kernels = k ? FT_KERNELS_GENERATED : FT_KERNELS_REFERENCE;
        float *g = logits(g_bundle[0], kernels), *h = logits(g_bundle[1], kernels);
        assert_memory_equal(g, h, sizeof(float) * N_PROMPT * 563);
        free(g);
        free(h);
    }
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

static ft_src_model_t *source(void)
{
    char src[4200];
    src_path(1, src, sizeof(src));
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
    ft_src_model_t *s = source();
    tensor(s, "model.layers.1.mlp.experts.gate_up_proj_scales")->name = "model.layers.1.x";
    expect_refused(s, FT_STATUS_FORMAT, "model.layers.1.mlp.experts.gate_up_proj_scales");
    s = source();
    tensor(s, "model.layers.0.mlp.experts.down_proj_blocks")->shape[3] = 8;
    expect_refused(s, FT_STATUS_FORMAT, "model.layers.0.mlp.experts.down_proj_blocks");
    s = source();
    tensor(s, "model.layers.2.mlp.experts.gate_up_proj_bias")->dtype = FT_DTYPE_I32;
    expect_refused(s, FT_STATUS_FORMAT, "model.layers.2.mlp.experts.gate_up_proj_bias");
    s = source(); /* the dequantized, transposed form */
    tensor(s, "model.layers.0.mlp.experts.gate_up_proj_blocks")->name =
        "model.layers.0.mlp.experts.gate_up_proj";
    expect_refused(s, FT_STATUS_UNSUPPORTED, "model.layers.0.mlp.experts.gate_up_proj");
    s = source();
    tensor(s, "model.layers.1.mlp.router.weight")->name = "model.layers.1.mlp.gate.weight";
    expect_refused(s, FT_STATUS_FORMAT, "model.layers.1.mlp.router.weight");
    s = source();
    assert_null(ft_meta_add_float(&s->meta, "swiglu_limit", 5.0));
    expect_refused(s, FT_STATUS_UNSUPPORTED, "swiglu_limit");
    s = source();
    assert_null(ft_meta_add_string(&s->meta, "layer_types.2", "chunked_attention", 17));
    expect_refused(s, FT_STATUS_UNSUPPORTED, "layer_types.2");
    s = source();
    assert_null(ft_meta_add_string(&s->meta, "rope_scaling.rope_type", "ntk", 3));
    expect_refused(s, FT_STATUS_UNSUPPORTED, "rope_scaling");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import), cmocka_unit_test(test_expert_bits),
        cmocka_unit_test(test_reference_reads),
        cmocka_unit_test(test_bundles_identical), cmocka_unit_test(test_hostile)};
    return cmocka_run_group_tests(tests, setup, NULL);
}
