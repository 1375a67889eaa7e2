/* DeepSeek V3's FP8 release layout (HF, quantization_config fp8 / e4m3 /
 * dynamic / [128, 128], every linear matrix F8_E4M3 with a float32
 * weight_scale_inv per 128 x 128 tile; embeddings, head and router wide):
 * the fixture generator's deepseek2 model of a 128-friendly shape (2
 * layers, the first dense; 4 heads of nope 32 + rope 16, values of 32, q
 * and KV ranks 128, 8 experts of 128 in 2 groups, one shared; YaRN x4),
 * written with ft_fixture_opts_t.fp8_block_scales, imported, compiled and
 * run:
 *
 *  - every FP8 matrix of the checkpoint is imported with its tile scales,
 *    including the row ranges the importer cuts out of kv_a_proj_with_mqa
 *    (c | k_rope) and kv_b_proj (per head k_nope | v: ranges of 32 rows
 *    that start inside a tile, so each piece knows its source row);
 *  - the bundle keeps them as FP8 blocks, not widened: every block of the
 *    split kv_b / kv_a pieces, a dense and an expert matrix holds the
 *    source's 128 bytes and the scale of the tile they came from, bit for
 *    bit;
 *  - the runtime's logits (cpu, reference and generated kernels; a 20-token
 *    prompt in the expanded MLA form, 16 greedy decode steps in the
 *    absorbed one) against the float64 reference loaded from the imported
 *    IR, which applies the checkpoint's scales itself (ref_load_ir.c, not
 *    the packer's blocks): within FT_FLOAT_TOL = 1e-4 of the largest logit
 *    with the same greedy tokens (measured 6.4e-7 reference kernels, 6.5e-7
 *    generated). FP8 weights are exact in the FP8 blocks
 *    and activations stay float32 (test_forward_formats.c: FP8's bound is
 *    the float32 one);
 *  - against the float64 reference on the unquantized (f32) weights the
 *    same seed gives: within FT_FP8_QUANT_TOL (derived below) over the
 *    positions the two route alike (5 of 20 with this seed: the
 *    fixture's 8 experts in 2 groups are close calls; measured 0.10);
 *  - hostile configs and scales refused, naming the key or tensor. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "compile.h"
#include "frontends/safetensors.h"
#include "import.h"
#include "ir.h"
#include "model_registry.h"
#include "ref_bundle.h"
#include "ref_forward.h"
#include "ref_greedy_check.h"
#include "ref_ops.h"
#include "test_tmp.h"

#include "../../runtime/base/mapped_file.h"
#include "../../runtime/format/bundle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FT_FLOAT_TOL 1e-4
/* E4M3 keeps 3 mantissa bits: a weight w in [2^e, 2^(e+1)) rounds by at
 * most 2^(e-4), uniform, so by ~2^-4 / sqrt(3) / 1.5 ~ 2.4% rms of |w|
 * (tile scales amax / 448 put every weight in the normal range). A matrix
 * product's output is then off by ~2.4% of its size (independent errors
 * over the row add like the output's terms do). A token passes ~12 such
 * products in 2 layers plus the head; their errors add to ~2.4% x sqrt(12)
 * ~ 8% of a typical logit, and the largest of 563 normalized by the
 * largest logit lands near that. 0.3 is ~3x that estimate; where routing
 * differs the positions legitimately differ by O(1), so it is checked
 * over the positions both route alike (test_forward_formats.c's rule). */
#define FT_FP8_QUANT_TOL 0.3
enum { N_PROMPT = 20, N_GEN = 16, N_CTX = 64 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};

static char g_hf[4096], g_bundle[4096], g_f32[4096];
static ft_ref_greedy_t g_ref;

static void fp8_opts(ft_fixture_opts_t *o)
{
    ft_fixture_opts_init(o);
    o->arch = FT_FIXTURE_DEEPSEEK2;
    o->name = "freetoken-fixture-deepseek2-fp8";
    o->d_model = 256; /* ranks 128 */
    o->n_heads = 4;
    o->head_dim = 32; /* nope 32, rope 16, values 32: o_proj reads 128 */
    o->n_experts = 8;
    o->n_experts_used = 2;
    o->expert_ffn = 128;
    o->dense_ffn = 256;
    o->n_dense_layers = 1;
    o->rope_yarn_factor = 4.0f;
    o->rope_yarn_orig_ctx = 32;
    o->format = FT_DTYPE_F8_E4M3;
    o->fp8_block_scales = 1;
}

static ft_ir_model_t *import(const char *dir)
{
    ft_ir_model_t *ir = NULL;
    FT_REF_OK(ft_import_model(dir, &ir));
    return ir;
}

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    fp8_opts(&o);
    const char *tmp = ft_test_tmpdir("deepseek2_fp8");
    snprintf(g_hf, sizeof(g_hf), "%s/hf", tmp);
    snprintf(g_f32, sizeof(g_f32), "%s/hf-f32", tmp);
    snprintf(g_bundle, sizeof(g_bundle), "%s/bundle", tmp);
    ft_status_t st = ft_fixture_write_hf(&o, g_hf, 1);
    o.format = FT_DTYPE_F32;
    o.fp8_block_scales = 0;
    if (!st) st = ft_fixture_write_hf(&o, g_f32, 1);
    ft_ir_model_t *m = NULL;
    if (!st) st = ft_import_model(g_hf, &m);
    ft_compile_options_t co;
    ft_compile_options_init(&co);
    co.kv_format = FT_DTYPE_F32;
    co.n_cuda_archs = 0;
    if (!st) st = ft_compile_bundle(m, &co, g_bundle);
    ft_ir_model_destroy(m);
    if (st) {
        fprintf(stderr, "building the deepseek2 FP8 bundle: %s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ft_ref_greedy_free(&g_ref);
    return 0;
}

/* Every linear matrix F8_E4M3 with tile scales; the split ones with the
 * source row of each piece. */
static void test_import(void **state)
{
    (void)state;
    ft_ir_model_t *m = import(g_hf);
    static const ft_tensor_role_t scaled[] = {
        FT_ROLE_ATTN_Q_A, FT_ROLE_ATTN_Q_B, FT_ROLE_ATTN_KV_A, FT_ROLE_ATTN_K_ROPE,
        FT_ROLE_ATTN_K_B, FT_ROLE_ATTN_V_B, FT_ROLE_ATTN_O};
    for (int32_t l = 0; l < 2; l++)
        for (size_t i = 0; i < sizeof(scaled) / sizeof(scaled[0]); i++) {
            const ft_ir_tensor_t *t = ft_ir_find(m, scaled[i], l);
            assert_non_null(t);
            assert_int_equal(t->dtype, FT_DTYPE_F8_E4M3);
            assert_int_equal(t->scale_kind, FT_IR_SCALE_TILE128);
        }
    const ft_ir_tensor_t *kb = ft_ir_find(m, FT_ROLE_ATTN_K_B, 1),
                         *vb = ft_ir_find(m, FT_ROLE_ATTN_V_B, 1),
                         *kr = ft_ir_find(m, FT_ROLE_ATTN_K_ROPE, 1);
    assert_int_equal(kb->n_pieces, 4);
    assert_non_null(kb->scale_row0);
    for (uint32_t h = 0; h < 4; h++) {
        assert_int_equal(kb->scale_row0[h], h * 64);      /* head h's k_nope rows of kv_b */
        assert_int_equal(vb->scale_row0[h], h * 64 + 32); /* and its v rows */
    }
    assert_int_equal(kr->scale_row0[0], 128); /* k_rope: kv_a_mqa's rows after c */
    assert_int_equal(ft_ir_find(m, FT_ROLE_FFN_DOWN, 0)->scale_kind, FT_IR_SCALE_TILE128);
    assert_int_equal(ft_ir_find(m, FT_ROLE_FFN_UP_EXPS, 1)->scale_kind, FT_IR_SCALE_TILE128);
    assert_int_equal(ft_ir_find(m, FT_ROLE_FFN_DOWN_SHEXP, 1)->scale_kind, FT_IR_SCALE_TILE128);
    assert_int_equal(ft_ir_find(m, FT_ROLE_TOKEN_EMBD, -1)->dtype, FT_DTYPE_F32);
    assert_int_equal(ft_ir_find(m, FT_ROLE_FFN_ROUTER, 1)->scale_kind, FT_IR_SCALE_NONE);
    ft_ir_model_destroy(m);
}

typedef struct src_ckpt {
    ft_mapped_file_t *map;
    ft_st_file_t *st;
} src_ckpt_t;

static const ft_st_tensor_t *src_tensor(const src_ckpt_t *s, const char *name)
{
    for (uint32_t k = 0; k < s->st->n_tensors; k++)
        if (strcmp(s->st->tensors[k].name, name) == 0) return &s->st->tensors[k];
    fail_msg("no tensor '%s' in the checkpoint", name);
    return NULL;
}

/* Plan tensor plan_name (expert `expert` of a stack, or -1): row i is
 * source row first[i / count] + i % count of HF matrix hf_name; each of
 * its FP8 blocks must hold that row's 128 source bytes and the scale of
 * their tile, bit for bit. */
static void check_blocks(const src_ckpt_t *s, const ft_bundle_t *b, const char *plan_name,
                         int expert, const char *hf_name, const uint64_t *first, uint32_t n_ranges,
                         uint64_t count)
{
    char sname[300];
    snprintf(sname, sizeof(sname), "%s_scale_inv", hf_name);
    const ft_st_tensor_t *t = src_tensor(s, hf_name), *sc = src_tensor(s, sname);
    const Ftplan__Tensor *pt = NULL;
    for (size_t i = 0; i < b->plan->n_tensors; i++)
        if (strcmp(b->plan->tensors[i]->name, plan_name) == 0) pt = b->plan->tensors[i];
    assert_non_null(pt);
    assert_int_equal(pt->format, FT_DTYPE_FP8);
    const uint64_t cols = t->shape[1], nb = cols / 128, rows = n_ranges * count;
    const uint64_t at = pt->offset + (expert >= 0 ? (uint64_t)expert * pt->expert_stride : 0);
    const uint8_t *p;
    assert_int_equal(ft_ftw_range(b->weight_files[pt->file], at, rows * nb * 132, &p), 0);
    const uint8_t *src = s->map->data + t->offset, *scales = s->map->data + sc->offset;
    for (uint64_t i = 0; i < rows; i++) {
        const uint64_t r = first[i / count] + i % count;
        for (uint64_t j = 0; j < nb; j++) {
            const uint8_t *blk = p + (i * nb + j) * 132;
            if (memcmp(blk, scales + 4 * (r / 128 * nb + j), 4) != 0 ||
                memcmp(blk + 4, src + r * cols + 128 * j, 128) != 0)
                fail_msg(
                    "%s row %llu (source row %llu) block %llu: not the source's bytes and scale",
                    plan_name, (unsigned long long)i, (unsigned long long)r, (unsigned long long)j);
        }
    }
}

static void test_blocks_not_widened(void **state)
{
    (void)state;
    char path[4200];
    snprintf(path, sizeof(path), "%s/model.safetensors", g_hf);
    src_ckpt_t s;
    assert_int_equal(ft_mapped_file_open(path, &s.map), 0);
    assert_int_equal(ft_st_parse(s.map->data, s.map->size, path, &s.st), 0);
    ft_bundle_t *b;
    assert_int_equal(ft_bundle_open(g_bundle, &b), 0);
    const uint64_t k_first[4] = {0, 64, 128, 192}, v_first[4] = {32, 96, 160, 224};
    const uint64_t c_first[1] = {0}, r_first[1] = {128}, all[1] = {0};
    check_blocks(&s, b, "blk.1.attn_k_b.weight", -1, "model.layers.1.self_attn.kv_b_proj.weight",
                 k_first, 4, 32);
    check_blocks(&s, b, "blk.1.attn_v_b.weight", -1, "model.layers.1.self_attn.kv_b_proj.weight",
                 v_first, 4, 32);
    check_blocks(&s, b, "blk.0.attn_kv_a.weight", -1,
                 "model.layers.0.self_attn.kv_a_proj_with_mqa.weight", c_first, 1, 128);
    check_blocks(&s, b, "blk.0.attn_k_rope.weight", -1,
                 "model.layers.0.self_attn.kv_a_proj_with_mqa.weight", r_first, 1, 16);
    check_blocks(&s, b, "blk.0.ffn_down.weight", -1, "model.layers.0.mlp.down_proj.weight", all, 1,
                 256);
    check_blocks(&s, b, "blk.1.ffn_down_exps.weight", 5,
                 "model.layers.1.mlp.experts.5.down_proj.weight", all, 1, 256);
    /* nothing of the model widened: every FP8 matrix of the plan is FP8 */
    uint32_t n_fp8 = 0;
    for (size_t i = 0; i < b->plan->n_tensors; i++)
        n_fp8 += (int)b->plan->tensors[i]->format == (int)FT_DTYPE_FP8;
    print_message("%u plan tensors in FP8 blocks\n", n_fp8);
    assert_int_equal(n_fp8,
                     2 * 7 + 3 + 3 + 3); /* attention x 2 layers, dense FFN, experts, shared */
    ft_bundle_close(b);
    ft_st_file_free(s.st);
    ft_mapped_file_close(s.map);
}

static void test_matches_reference(void **state)
{
    (void)state;
    ft_ir_model_t *ir = import(g_hf);
    ft_ref_model_t *m;
    FT_REF_OK(ft_ref_model_from_ir(ir, &m));
    FT_REF_OK(ft_ref_greedy_reference(m, k_prompt, N_PROMPT, N_GEN, N_CTX, &g_ref));
    ft_ref_model_free(m);
    ft_ir_model_destroy(ir);
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.kernels = FT_KERNELS_REFERENCE;
    float *a = ft_ref_expect_greedy(g_bundle, &eo, N_CTX, k_prompt, &g_ref, FT_FLOAT_TOL,
                                    "deepseek2 fp8 cpu reference", 1);
    eo.kernels = FT_KERNELS_GENERATED;
    free(ft_ref_expect_greedy(g_bundle, &eo, N_CTX, k_prompt, &g_ref, FT_FLOAT_TOL,
                              "deepseek2 fp8 cpu generated", 0));
    /* against the unquantized weights of the same seed */
    ir = import(g_f32);
    FT_REF_OK(ft_ref_model_from_ir(ir, &m));
    ft_ref_session_t *rs_q, *rs_f;
    ft_ir_model_t *irq = import(g_hf);
    ft_ref_model_t *mq;
    FT_REF_OK(ft_ref_model_from_ir(irq, &mq));
    FT_REF_OK(ft_ref_session_create(m, N_CTX, &rs_f));
    FT_REF_OK(ft_ref_session_create(mq, N_CTX, &rs_q));
    const uint32_t V = g_ref.vocab;
    double *rf = malloc(sizeof(double) * N_PROMPT * V), *rq = malloc(sizeof(double) * N_PROMPT * V);
    assert_true(rf && rq);
    FT_REF_OK(ft_ref_session_eval(rs_f, k_prompt, N_PROMPT, rf));
    FT_REF_OK(ft_ref_session_eval(rs_q, k_prompt, N_PROMPT, rq));
    uint32_t n_alike = 0;
    while (n_alike < N_PROMPT && ft_ref_session_same_routes(rs_q, rs_f, n_alike))
        n_alike++;
    double worst = 0;
    uint32_t top1 = 0;
    for (uint32_t p = 0; p < n_alike; p++) {
        worst = fmax(worst, ft_ref_rel_err(a + (size_t)p * V, rf + (size_t)p * V, V));
        uint32_t ia = 0, ir_ = 0;
        for (uint32_t v = 1; v < V; v++) {
            if (a[(size_t)p * V + v] > a[(size_t)p * V + ia]) ia = v;
            if (rf[(size_t)p * V + v] > rf[(size_t)p * V + ir_]) ir_ = v;
        }
        top1 += ia == ir_;
    }
    print_message(
        "fp8 vs the f32 weights' reference: max error %.3g over the %u positions routed alike; "
        "top-1 agrees on %u\n",
        worst, n_alike, top1);
    assert_true(n_alike >= 1);
    assert_true(worst <= FT_FP8_QUANT_TOL);
    assert_true(worst >
                1e-3); /* the weights did change: this compares FP8 with f32, not f32 with itself */
    free(rf);
    free(rq);
    free(a);
    ft_ref_session_free(rs_f);
    ft_ref_session_free(rs_q);
    ft_ref_model_free(m);
    ft_ref_model_free(mq);
    ft_ir_model_destroy(ir);
    ft_ir_model_destroy(irq);
}

static void expect_refused(ft_src_model_t *src, ft_status_code_t code, const char *needle)
{
    ft_ir_model_t *m = NULL;
    ft_status_t st = ft_model_build_ir(src, &m);
    assert_null(m);
    if (!st) fail_msg("expected an error containing '%s'", needle);
    print_message("refused: %s\n", ft_status_message(st));
    if (ft_status_code(st) != code || !strstr(ft_status_message(st), needle))
        fail_msg("got [%s] %s; wanted [%s] containing '%s'",
                 ft_status_code_name(ft_status_code(st)), ft_status_message(st),
                 ft_status_code_name(code), needle);
    ft_status_free(st);
    ft_src_model_destroy(src);
}

static ft_src_model_t *source(void)
{
    ft_src_model_t *s = NULL;
    FT_REF_OK(ft_import_source(g_hf, &s));
    return s;
}

static void test_hostile(void **state)
{
    (void)state;
    ft_src_model_t *s = source();
    assert_null(ft_meta_add_string(&s->meta, "quantization_config.activation_scheme", "static", 6));
    expect_refused(s, FT_STATUS_UNSUPPORTED, "activation_scheme");
    s = source();
    const double blk[2] = {64, 64};
    assert_null(ft_meta_add_array(&s->meta, "quantization_config.weight_block_size", blk, 2));
    expect_refused(s, FT_STATUS_UNSUPPORTED, "weight_block_size");
    s = source();
    assert_null(ft_meta_add_string(&s->meta, "quantization_config.quant_method", "awq", 3));
    expect_refused(s, FT_STATUS_UNSUPPORTED, "quant_method");
    s = source();
    assert_null(ft_meta_add_string(&s->meta, "quantization_config.fmt", "e5m2", 4));
    expect_refused(s, FT_STATUS_UNSUPPORTED, "fmt");
    s = source(); /* kv_b without its scales: read as scale 1 it would be silently wrong */
    ((ft_src_tensor_t *)ft_src_find_tensor(s,
                                           "model.layers.1.self_attn.kv_b_proj.weight_scale_inv"))
        ->name = "model.layers.1.self_attn.kv_b_proj.weight_scales";
    expect_refused(s, FT_STATUS_FORMAT, "without a scale tensor");
    s = source(); /* a scale tensor of the wrong shape beside the split matrix */
    ((ft_src_tensor_t *)ft_src_find_tensor(
         s, "model.layers.0.self_attn.kv_a_proj_with_mqa.weight_scale_inv"))
        ->shape[0] += 1;
    expect_refused(s, FT_STATUS_FORMAT, "kv_a_proj_with_mqa.weight_scale_inv");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import), cmocka_unit_test(test_blocks_not_widened),
        cmocka_unit_test(test_matches_reference), cmocka_unit_test(test_hostile)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
