/* Mixtral: the tiny fixture written as a llama GGUF (q/k rows permuted as
 * llama.cpp's converter does) and as an HF MixtralForCausalLM directory
 * from one seed; both imports give the same hyperparameters and weights
 * (q/k up to that row permutation), the IR records the RoPE pairing each
 * layout needs, and the float64 reference gives the same logits from both.
 * Plus the identity behind it on one head: interleaved RoPE on permuted
 * rows == NeoX RoPE on the originals, permuted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gguf.h"
#include "hf.h"
#include "model_gen.h"
#include "model_registry.h"
#include "ref_forward.h"
#include "ref_ops.h"
#include "test_tmp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ASSERT_OK(expr)                                                                            \
    do {                                                                                           \
        ft_status_t st_ = (expr);                                                                  \
        if (st_) fail_msg("%s: %s", #expr, ft_status_message(st_));                                \
    } while (0)

/* llama.cpp's permute(w, n_head): row h*hd + 2j + s of the result is row
 * h*hd + s*hd/2 + j of the input. */
static uint32_t perm_src_row(uint32_t row, uint32_t hd)
{
    const uint32_t h = row / hd, r = row % hd;
    return h * hd + (r % 2) * (hd / 2) + r / 2;
}

static void test_rope_interleaved_on_permuted_is_neox(void **state)
{
    (void)state;
    enum { HD = 16 };
    double x[HD], xp[HD];
    for (uint32_t i = 0; i < HD; i++)
        x[i] = sin(1.7 * i + 0.3) + 0.1 * i; /* any vector */
    const uint32_t positions[] = {0, 1, 7, 255};
    for (size_t k = 0; k < sizeof(positions) / sizeof(positions[0]); k++) {
        double a[HD], b[HD], c[HD];
        for (uint32_t r = 0; r < HD; r++)
            xp[r] = x[perm_src_row(r, HD)];
        memcpy(a, x, sizeof(a));
        memcpy(b, xp, sizeof(b));
        memcpy(c, x, sizeof(c));
        ft_ref_rope_neox(a, HD, positions[k], 1e6);
        ft_ref_rope_norm(b, HD, positions[k], 1e6);
        ft_ref_rope_norm(c, HD, positions[k], 1e6); /* the wrong pairing */
        double wrong = 0.0;
        for (uint32_t r = 0; r < HD; r++) {
            assert_true(fabs(b[r] - a[perm_src_row(r, HD)]) < 1e-14);
            wrong = fmax(wrong, fabs(c[r] - a[r]));
        }
        if (positions[k] > 0)
            assert_true(wrong > 1e-3); /* the pairing matters at every position but 0 */
    }
}

typedef struct pair {
    ft_src_model_t *sg, *sh;
    ft_ir_model_t *g, *h;
} pair_t;

static void write_and_import(uint64_t seed, pair_t *p)
{
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.arch = FT_FIXTURE_MIXTRAL;
    o.seed = seed;
    o.name = "freetoken-fixture-mixtral";
    char gguf[4096], hf[4096];
    snprintf(gguf, sizeof(gguf), "%s/mixtral.gguf", ft_test_tmpdir("mixtral"));
    snprintf(hf, sizeof(hf), "%s/mixtral-hf", ft_test_tmpdir("mixtral"));
    ASSERT_OK(ft_fixture_write_gguf(&o, gguf));
    ASSERT_OK(ft_fixture_write_hf(&o, hf, 2));
    ASSERT_OK(ft_gguf_import(gguf, &p->sg));
    ASSERT_OK(ft_hf_import(hf, &p->sh));
    ASSERT_OK(ft_model_build_ir(p->sg, &p->g));
    ASSERT_OK(ft_model_build_ir(p->sh, &p->h));
}

static void pair_free(pair_t *p)
{
    ft_ir_model_destroy(p->g);
    ft_ir_model_destroy(p->h);
    ft_src_model_destroy(p->sg);
    ft_src_model_destroy(p->sh);
}

static void test_both_forms_import_alike(void **state)
{
    (void)state;
    pair_t p = {0};
    write_and_import(7, &p);
    const ft_ir_model_t *g = p.g, *h = p.h;
    assert_int_equal(g->hp.arch, FT_ARCH_MIXTRAL);
    assert_int_equal(h->hp.arch, FT_ARCH_MIXTRAL);
    assert_string_equal(ft_arch_name(g->hp.arch), "mixtral");
    /* The RoPE pairing follows the stored q/k layout. */
    assert_int_equal(g->hp.rope, FT_ROPE_NORM);
    assert_int_equal(h->hp.rope, FT_ROPE_NEOX);
    assert_int_equal(g->hp.rope_dim, 16);
    assert_int_equal(h->hp.rope_dim, 16);
    for (uint32_t l = 0; l < 2; l++) {
        const ft_ir_block_t *bg = &g->blocks[l], *bh = &h->blocks[l];
        assert_int_equal(bg->attn.qk_norm, 0);
        assert_int_equal(bh->attn.qk_norm, 0);
        assert_int_equal(bh->attn.sliding_window, 0); /* config: null */
        assert_true(bg->is_moe && bh->is_moe);
        assert_int_equal(bg->moe.norm_topk_prob, 1);
        assert_int_equal(bh->moe.norm_topk_prob, 1);
        assert_int_equal(bg->moe.n_experts, 8);
        assert_int_equal(bh->moe.n_experts, 8);
        assert_int_equal(bg->moe.n_experts_used, 2);
        assert_int_equal(bg->moe.expert_ffn, 32);
        assert_int_equal(bh->moe.expert_ffn, 32);
        assert_int_equal(bg->moe.n_shared_experts, 0);
    }
    /* Same tensor table: names, roles, shapes, formats; no q/k norms. */
    assert_int_equal(g->n_tensors, 3 + 2 * 10);
    assert_int_equal(g->n_tensors, h->n_tensors);
    for (uint32_t i = 0; i < g->n_tensors; i++) {
        const ft_ir_tensor_t *a = &g->tensors[i], *b = &h->tensors[i];
        assert_string_equal(a->name, b->name);
        assert_int_equal(a->role, b->role);
        assert_int_equal(a->dtype, b->dtype);
        assert_int_equal(a->n_dims, b->n_dims);
        for (uint32_t d = 0; d < a->n_dims; d++)
            assert_int_equal(a->shape[d], b->shape[d]);
        assert_true(a->role != FT_ROLE_ATTN_Q_NORM && a->role != FT_ROLE_ATTN_K_NORM);
    }
    uint64_t tg, ag, th, ah;
    ft_ir_param_counts(g, &tg, &ag);
    ft_ir_param_counts(h, &th, &ah);
    assert_int_equal(tg, th);
    assert_int_equal(ag, ah);
    /* 2 * 563 * 64 embeddings/head + 64 + 2 * (12288 attention + 128 norms
     * + 512 router + 3 * 8 * 32 * 64 experts); active: 2 of 8 experts. */
    assert_int_equal(tg, 196288);
    assert_int_equal(ag, 122560);
    pair_free(&p);
}

/* Weights after import, as doubles: equal, q/k up to the permutation. */
static void assert_same_weights(const ft_ref_model_t *g, const ft_ref_model_t *h)
{
    const uint64_t d = g->d_model, V = g->vocab_size;
    assert_memory_equal(g->tok_embd, h->tok_embd, V * d * sizeof(double));
    assert_memory_equal(g->output, h->output, V * d * sizeof(double));
    assert_memory_equal(g->output_norm, h->output_norm, d * sizeof(double));
    for (uint32_t l = 0; l < g->n_layers; l++) {
        const ft_ref_layer_t *a = &g->layers[l], *b = &h->layers[l];
        const uint32_t hd = a->head_dim;
        const uint64_t E = a->n_experts, F = a->expert_ffn;
        assert_null(a->q_norm);
        assert_null(b->q_norm);
        for (uint32_t r = 0; r < a->n_heads * hd; r++)
            assert_memory_equal(a->wq + r * d, b->wq + perm_src_row(r, hd) * d, d * sizeof(double));
        for (uint32_t r = 0; r < a->n_kv_heads * hd; r++)
            assert_memory_equal(a->wk + r * d, b->wk + perm_src_row(r, hd) * d, d * sizeof(double));
        /* and the permutation is not the identity on these values */
        assert_true(memcmp(a->wq, b->wq, a->n_heads * hd * d * sizeof(double)) != 0);
        assert_memory_equal(a->wv, b->wv, a->n_kv_heads * hd * d * sizeof(double));
        assert_memory_equal(a->wo, b->wo, d * a->n_heads * hd * sizeof(double));
        assert_memory_equal(a->attn_norm, b->attn_norm, d * sizeof(double));
        assert_memory_equal(a->ffn_norm, b->ffn_norm, d * sizeof(double));
        assert_memory_equal(a->router, b->router, E * d * sizeof(double));
        assert_memory_equal(a->gate, b->gate, E * F * d * sizeof(double));
        assert_memory_equal(a->up, b->up, E * F * d * sizeof(double));
        assert_memory_equal(a->down, b->down, E * d * F * sizeof(double));
    }
}

static void test_reference_logits_agree(void **state)
{
    (void)state;
    pair_t p = {0};
    write_and_import(11, &p);
    ft_ref_model_t *rg = NULL, *rh = NULL;
    ASSERT_OK(ft_ref_model_from_ir(p.g, &rg));
    ASSERT_OK(ft_ref_model_from_ir(p.h, &rh));
    assert_int_equal(rg->rope_interleaved, 1);
    assert_int_equal(rh->rope_interleaved, 0);
    assert_same_weights(rg, rh);

    enum { N = 12 };
    const int32_t tokens[N] = {5, 300, 17, 17, 42, 99, 1, 250, 400, 3, 77, 560};
    const uint32_t V = rg->vocab_size;
    double *lg = malloc(sizeof(double) * N * V), *lh = malloc(sizeof(double) * N * V);
    double *lw = malloc(sizeof(double) * N * V);
    assert_non_null(lg);
    assert_non_null(lh);
    assert_non_null(lw);
    ASSERT_OK(ft_ref_eval(rg, tokens, N, lg));
    ASSERT_OK(ft_ref_eval(rh, tokens, N, lh));
    double max_diff = 0.0, max_abs = 0.0;
    for (uint64_t i = 0; i < (uint64_t)N * V; i++) {
        max_diff = fmax(max_diff, fabs(lg[i] - lh[i]));
        max_abs = fmax(max_abs, fabs(lh[i]));
    }
    assert_true(max_abs > 1e-3); /* the logits are not trivially zero */
    /* Only the order of additions in q.k differs: rounding, no more. */
    if (max_diff > 1e-12 * max_abs)
        fail_msg("GGUF vs HF logits differ by %g (max |logit| %g)", max_diff, max_abs);

    /* NeoX RoPE on the permuted GGUF weights is wrong from position 1 on:
     * the check above would catch an import that lost the pairing. */
    rg->rope_interleaved = 0;
    ASSERT_OK(ft_ref_eval(rg, tokens, N, lw));
    double wrong = 0.0;
    for (uint64_t i = V; i < (uint64_t)N * V; i++)
        wrong = fmax(wrong, fabs(lw[i] - lh[i]));
    assert_true(wrong > 1e-6 * max_abs);
    for (uint64_t i = 0; i < V; i++) /* position 0: no rotation, same logits */
        assert_true(fabs(lw[i] - lh[i]) <= 1e-12 * max_abs);

    free(lg);
    free(lh);
    free(lw);
    ft_ref_model_free(rg);
    ft_ref_model_free(rh);
    pair_free(&p);
}

/* Rewrites config.json's sliding_window and imports the HF directory. */
static ft_status_t import_with_window(const char *window, ft_src_model_t **src, ft_ir_model_t **ir)
{
    char path[4200], hf[4096];
    snprintf(hf, sizeof(hf), "%s/mixtral-hf", ft_test_tmpdir("mixtral"));
    snprintf(path, sizeof(path), "%s/config.json", hf);
    size_t n;
    char *text = ft_test_read_file(path, &n);
    assert_non_null(text);
    char *at = strstr(text, "\"sliding_window\": null");
    assert_non_null(at);
    char *out = malloc(n + 64);
    assert_non_null(out);
    int len = snprintf(out, n + 64, "%.*s\"sliding_window\": %s%s", (int)(at - text), text, window,
                       at + strlen("\"sliding_window\": null"));
    assert_true(ft_test_write_file(path, out, (unsigned long)len) == 0);
    free(out);
    free(text);
    *ir = NULL;
    ft_status_t st = ft_hf_import(hf, src);
    return st ? st : ft_model_build_ir(*src, ir);
}

static void test_sliding_window_is_recorded(void **state)
{
    (void)state;
    pair_t p = {0};
    write_and_import(3, &p); /* context 256 */
    ft_src_model_t *src = NULL;
    ft_ir_model_t *ir = NULL;
    ASSERT_OK(import_with_window("64", &src, &ir));
    for (uint32_t l = 0; l < ir->hp.n_layers; l++)
        assert_int_equal(ir->blocks[l].attn.sliding_window, 64);
    /* The reference computes the window (test_sliding_window checks the
     * runtime against it). */
    ft_ref_model_t *ref = NULL;
    ASSERT_OK(ft_ref_model_from_ir(ir, &ref));
    for (uint32_t l = 0; l < ref->n_layers; l++)
        assert_int_equal(ref->layers[l].sliding_window, 64);
    ft_ref_model_free(ref);
    ft_ir_model_destroy(ir);
    ft_src_model_destroy(src);
    /* A window no shorter than the context is full attention. */
    pair_free(&p);
    write_and_import(3, &p); /* config.json afresh */
    ASSERT_OK(import_with_window("4096", &src, &ir));
    assert_int_equal(ir->blocks[0].attn.sliding_window, 0);
    ft_ir_model_destroy(ir);
    ft_src_model_destroy(src);
    /* null is "no window"; and a null head_dim (transformers' MixtralConfig
     * default) means d_model / n_heads. */
    pair_free(&p);
    write_and_import(3, &p);
    ASSERT_OK(import_with_window("null, \"head_dim\": null", &src, &ir));
    assert_int_equal(ir->blocks[0].attn.sliding_window, 0);
    assert_int_equal(ir->blocks[0].attn.head_dim, 16);
    ft_ir_model_destroy(ir);
    ft_src_model_destroy(src);
    pair_free(&p);
}

static char *ir_text(const ft_ir_model_t *m)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    ft_ir_model_print(m, f);
    fclose(f);
    return buf;
}

/* Older llama GGUF files carry split experts blk.L.ffn_gate.E.weight;
 * they import as the same stacks as the merged ffn_gate_exps. */
static void test_split_experts_import_as_stacks(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.arch = FT_FIXTURE_MIXTRAL;
    o.seed = 9;
    char merged[4096], split[4096];
    snprintf(merged, sizeof(merged), "%s/merged.gguf", ft_test_tmpdir("mixtral"));
    snprintf(split, sizeof(split), "%s/split.gguf", ft_test_tmpdir("mixtral"));
    ASSERT_OK(ft_fixture_write_gguf(&o, merged));
    o.split_experts = 1;
    ASSERT_OK(ft_fixture_write_gguf(&o, split));
    ft_src_model_t *sm = NULL, *ss = NULL;
    ft_ir_model_t *im = NULL, *is = NULL;
    ASSERT_OK(ft_gguf_import(merged, &sm));
    ASSERT_OK(ft_gguf_import(split, &ss));
    assert_non_null(ft_src_find_tensor(ss, "blk.1.ffn_down.7.weight"));
    assert_null(ft_src_find_tensor(ss, "blk.1.ffn_down_exps.weight"));
    ASSERT_OK(ft_model_build_ir(sm, &im));
    ASSERT_OK(ft_model_build_ir(ss, &is));
    char *tm = ir_text(im), *ts = ir_text(is);
    assert_string_equal(tm, ts);
    free(tm);
    free(ts);
    const ft_ir_tensor_t *up = ft_ir_find(is, FT_ROLE_FFN_UP_EXPS, 1);
    assert_non_null(up);
    assert_int_equal(up->n_pieces, 8);
    assert_int_equal(up->shape[0], 8);
    ft_ref_model_t *rm = NULL, *rs = NULL;
    ASSERT_OK(ft_ref_model_from_ir(im, &rm));
    ASSERT_OK(ft_ref_model_from_ir(is, &rs));
    for (uint32_t l = 0; l < rm->n_layers; l++) {
        const uint64_t n = (uint64_t)rm->layers[l].n_experts * rm->layers[l].expert_ffn * rm->d_model;
        assert_memory_equal(rm->layers[l].gate, rs->layers[l].gate, n * sizeof(double));
        assert_memory_equal(rm->layers[l].up, rs->layers[l].up, n * sizeof(double));
        assert_memory_equal(rm->layers[l].down, rs->layers[l].down, n * sizeof(double));
    }
    ft_ref_model_free(rm);
    ft_ref_model_free(rs);
    ft_ir_model_destroy(im);
    ft_ir_model_destroy(is);
    ft_src_model_destroy(sm);
    ft_src_model_destroy(ss);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rope_interleaved_on_permuted_is_neox),
        cmocka_unit_test(test_both_forms_import_alike),
        cmocka_unit_test(test_reference_logits_agree),
        cmocka_unit_test(test_sliding_window_is_recorded),
        cmocka_unit_test(test_split_experts_import_as_stacks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
