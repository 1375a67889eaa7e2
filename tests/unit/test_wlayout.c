/* Weight layouts (runtime/format/wlayout.h) and the generated kernels that
 * read Q8_0 rows interleaved by 16 (FT_KABI_LAYOUT_R16, the AVX-512
 * template): the layout's bytes as its definition places them, the round
 * trip, which matrices it holds; the kernels against the reference kernels
 * on the same rows in row order (within the float-order bound of
 * test_codegen_cpu), bit for bit where every float step is exact, any row
 * range, a token's results independent of the other tokens of the call
 * (batch invariance), the fused expert; the model's products through the
 * reference kernels equal on both layouts (ft_mat_mul); refusal where the
 * template has no kernel. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cpu_module_fixture.h"
#include "ref_bundle.h"
#include "test_tmp.h"
#include "../../runtime/backends/cpu/cpu_module.h"
#include "../../runtime/backends/cpu/kernels.h"
#include "../../runtime/exec/model.h"
#include "../../runtime/format/convert.h"
#include "../../runtime/format/plan_file.h"
#include "../../runtime/format/wlayout.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x2545f4914f6cdd1dull;
static float frand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 11) & 0xffffff) / 8388608.0f - 1.0f;
}

static size_t q8_row_bytes(uint32_t cols)
{
    return (size_t)cols / 32 * 34;
}

/* rows x cols random Q8_0 rows in row order. */
static uint8_t *make_rows(uint32_t rows, uint32_t cols)
{
    const size_t rb = q8_row_bytes(cols);
    uint8_t *w = malloc(rb * rows);
    float *f = malloc(cols * sizeof(float));
    for (uint32_t r = 0; r < rows; r++) {
        for (uint32_t c = 0; c < cols; c++)
            f[c] = frand() * (1.0f + (float)((r + c) % 5));
        ft_quantize_row(FT_DTYPE_Q8_0, f, w + r * rb, cols);
    }
    free(f);
    return w;
}

/* The rows rearranged group by group, as ftc writes them. */
static uint8_t *to_r16(const uint8_t *w, uint32_t rows, uint32_t cols)
{
    const size_t rb = q8_row_bytes(cols);
    uint8_t *o = malloc(rb * rows);
    for (uint32_t g = 0; g < rows; g += 16)
        ft_wlayout_pack_group(FT_WLAYOUT_Q8_0_R16, w + g * rb, rb, o + g * rb);
    return o;
}

static void test_layout_bytes(void **state)
{
    (void)state;
    const uint32_t rows = 32, cols = 96;
    const size_t rb = q8_row_bytes(cols);
    uint8_t *w = make_rows(rows, cols), *p = to_r16(w, rows, cols), *back = malloc(rb * rows);
    /* row r's block b: its scale at b*544 + 2r of its group, quant c at
     * b*544 + 32 + (c/4)*64 + 4r + c%4, stored + 128 */
    for (uint32_t r = 0; r < rows; r++)
        for (uint32_t b = 0; b < cols / 32; b++) {
            const uint8_t *blk = w + r * rb + b * 34, *g = p + (r / 16) * 16 * rb + b * 544;
            assert_int_equal(g[2 * (r % 16)], blk[0]);
            assert_int_equal(g[2 * (r % 16) + 1], blk[1]);
            for (uint32_t c = 0; c < 32; c++)
                assert_int_equal(g[32 + (c / 4) * 64 + 4 * (r % 16) + c % 4],
                                 (uint8_t)(blk[2 + c] ^ 0x80));
        }
    for (uint32_t g = 0; g < rows; g += 16)
        ft_wlayout_unpack_group(FT_WLAYOUT_Q8_0_R16, p + g * rb, rb, back + g * rb);
    assert_memory_equal(back, w, rb * rows);
    /* what it holds */
    assert_true(ft_wlayout_fits(FT_WLAYOUT_Q8_0_R16, FT_DTYPE_Q8_0, 16, 32));
    assert_false(ft_wlayout_fits(FT_WLAYOUT_Q8_0_R16, FT_DTYPE_Q8_0, 24, 32));  /* rows */
    assert_false(ft_wlayout_fits(FT_WLAYOUT_Q8_0_R16, FT_DTYPE_Q4_K, 16, 256)); /* format */
    assert_false(
        ft_wlayout_fits(FT_WLAYOUT_Q8_0_R16, FT_DTYPE_Q8_0, 16, 1u << 20)); /* group bytes */
    assert_false(ft_wlayout_fits(7, FT_DTYPE_Q8_0, 16, 32));
    assert_true(ft_wlayout_fits(FT_WLAYOUT_ROWS, FT_DTYPE_Q4_K, 3, 256));
    assert_string_equal(ft_wlayout_name(FT_WLAYOUT_Q8_0_R16), "q8_0_r16");
    assert_null(ft_wlayout_name(7));
    free(w), free(p), free(back);
}

static ft_cpu_module_t *build(const ft_cg_kreq_t *reqs, uint32_t n)
{
    ft_cpu_module_t *mod = NULL;
    const ft_status_t st = ft_test_cpu_module(reqs, n, "avx512", &mod);
    if (st) fail_msg("%s", ft_status_message(st));
    return mod;
}

static int have_avx512(void)
{
    if (strcmp(ft_cg_cpu_host_isa(), "avx512") != 0) {
        print_message("this CPU has no AVX-512 VNNI: the generated R16 kernels are not run\n");
        return 0;
    }
    return 1;
}

static const uint32_t k_shapes[][2] = {{48, 256}, {16, 96}, {32, 1024}};
static const uint32_t k_toks[] = {1, 2, 3, 4, 7, 8, 9, 17, 70};

/* |a - b| <= 1e-5 * sum|w_i x_i| + 1e-6 (test_codegen_cpu's bound). */
static void check_close(const uint8_t *w, uint32_t rows, uint32_t cols, const uint8_t *xp,
                        uint32_t nt, const float *ref, const float *got)
{
    const size_t rb = q8_row_bytes(cols);
    float *wd = malloc(cols * sizeof(float)), *xd = malloc(cols * sizeof(float));
    for (uint32_t t = 0; t < nt; t++) {
        ft_dequantize_row(FT_DTYPE_Q8_0, xp + t * rb, xd, cols);
        for (uint32_t r = 0; r < rows; r++) {
            ft_dequantize_row(FT_DTYPE_Q8_0, w + r * rb, wd, cols);
            double s = 0;
            for (uint32_t c = 0; c < cols; c++)
                s += fabs((double)wd[c] * xd[c]);
            const double e = fabs((double)ref[t * rows + r] - got[t * rows + r]);
            if (!(e <= 1e-5 * s + 1e-6))
                fail_msg("%ux%u row %u tok %u: ref %.9g got %.9g", rows, cols, r, t,
                         ref[t * rows + r], got[t * rows + r]);
        }
    }
    free(wd), free(xd);
}

static void test_r16_matmul(void **state)
{
    (void)state;
    if (!have_avx512()) return;
    const uint32_t ns = sizeof(k_shapes) / sizeof(k_shapes[0]);
    ft_cg_kreq_t reqs[3];
    for (uint32_t s = 0; s < ns; s++)
        reqs[s] = (ft_cg_kreq_t){FT_KABI_OP_MATMUL, FT_KABI_FMT_Q8_0 | FT_KABI_LAYOUT_R16, 0,
                                 k_shapes[s][0], k_shapes[s][1]};
    ft_cpu_module_t *mod = build(reqs, ns);
    for (uint32_t s = 0; s < ns; s++) {
        const uint32_t rows = k_shapes[s][0], cols = k_shapes[s][1];
        const size_t rb = q8_row_bytes(cols);
        ft_kabi_matmul_fn fn =
            ft_cpu_module_find_matmul(mod, FT_KABI_FMT_Q8_0 | FT_KABI_LAYOUT_R16, rows, cols);
        assert_non_null(fn);
        assert_null(ft_cpu_module_find_matmul(mod, FT_KABI_FMT_Q8_0, rows, cols)); /* keyed apart */
        uint8_t *w = make_rows(rows, cols), *p = to_r16(w, rows, cols);
        for (size_t ti = 0; ti < sizeof(k_toks) / sizeof(k_toks[0]); ti++) {
            const uint32_t nt = k_toks[ti];
            float *x = malloc((size_t)nt * cols * sizeof(float));
            uint8_t *xp = malloc(rb * nt);
            for (size_t i = 0; i < (size_t)nt * cols; i++)
                x[i] = frand() * 3.0f;
            ft_cpu_act_prepare(FT_DTYPE_Q8_0, x, cols, nt, cols, xp);
            float *ref = calloc((size_t)nt * rows, sizeof(float)),
                  *got = calloc((size_t)nt * rows, sizeof(float));
            ft_cpu_matmul(FT_DTYPE_Q8_0, w, rb, xp, nt, cols, 0, rows, ref, rows);
            fn(p, rb, xp, nt, 0, rows / 2, got, rows); /* two ranges, as threads split */
            fn(p, rb, xp, nt, rows / 2, rows, got, rows);
            check_close(w, rows, cols, xp, nt, ref, got);
            /* each token alone gives its results bit for bit */
            for (uint32_t t = 0; t < nt; t++) {
                float one[1024];
                fn(p, rb, xp + t * rb, 1, 0, rows, one, rows);
                assert_memory_equal(one, got + (size_t)t * rows, rows * sizeof(float));
            }
            /* a range that starts and ends inside groups writes only its rows */
            const float canary = -12345.0f;
            for (size_t i = 0; i < (size_t)nt * rows; i++)
                got[i] = canary;
            const uint32_t r0 = 5, r1 = rows - 3;
            fn(p, rb, xp, nt, r0, r1, got, rows);
            for (uint32_t t = 0; t < nt; t++)
                for (uint32_t r = 0; r < rows; r++) {
                    const float v = got[(size_t)t * rows + r];
                    if (r < r0 || r >= r1)
                        assert_true(v == canary);
                    else
                        assert_true(v != canary);
                }
            free(x), free(xp), free(ref), free(got);
        }
        free(w), free(p);
    }
    ft_cpu_module_free(mod);
}

/* Unit scales and small integers: every float step exact, so the kernel
 * equals the reference bit for bit (the integer sums, the +128 removal). */
static void test_r16_integer_exact(void **state)
{
    (void)state;
    if (!have_avx512()) return;
    const uint32_t rows = 32, cols = 512, nt = 5;
    const ft_cg_kreq_t req = {FT_KABI_OP_MATMUL, FT_KABI_FMT_Q8_0 | FT_KABI_LAYOUT_R16, 0, rows,
                              cols};
    ft_cpu_module_t *mod = build(&req, 1);
    const size_t rb = q8_row_bytes(cols);
    uint8_t *w = malloc(rb * rows), *xp = malloc(rb * nt);
    for (size_t i = 0; i < rb * rows; i++)
        w[i] = (uint8_t)(frand() * 128 + 128); /* every byte value, -128 included */
    for (size_t i = 0; i < rb * nt; i++)
        xp[i] = (uint8_t)(frand() * 128);
    for (size_t b = 0; b < rb * rows / 34; b++)
        w[b * 34] = 0x00, w[b * 34 + 1] = 0x3c; /* fp16 1.0 */
    for (size_t b = 0; b < rb * nt / 34; b++)
        xp[b * 34] = 0x00, xp[b * 34 + 1] = 0x3c;
    uint8_t *p = to_r16(w, rows, cols);
    float ref[32 * 5], got[32 * 5];
    ft_cpu_matmul(FT_DTYPE_Q8_0, w, rb, xp, nt, cols, 0, rows, ref, rows);
    ft_cpu_module_find_matmul(mod, req.format, rows, cols)(p, rb, xp, nt, 0, rows, got, rows);
    for (uint32_t i = 0; i < rows * nt; i++)
        assert_true(ref[i] == got[i]);
    free(w), free(xp), free(p);
    ft_cpu_module_free(mod);
}

/* The fused expert over interleaved gate, up and down against the
 * reference sequence on the rows (test_codegen_cpu's check_expert bound). */
static void test_r16_expert(void **state)
{
    (void)state;
    if (!have_avx512()) return;
    const uint32_t ffn = 256, d = 512, nt = 9;
    const uint32_t f = FT_KABI_FMT_Q8_0 | FT_KABI_LAYOUT_R16;
    const ft_cg_kreq_t req = {FT_KABI_OP_EXPERT, f, f, ffn, d};
    ft_cpu_module_t *mod = build(&req, 1);
    ft_kabi_expert_fn fn = ft_cpu_module_find_expert(mod, f, f, ffn, d);
    assert_non_null(fn);
    uint8_t *wg = make_rows(ffn, d), *wu = make_rows(ffn, d), *wd = make_rows(d, ffn);
    uint8_t *pg = to_r16(wg, ffn, d), *pu = to_r16(wu, ffn, d), *pd = to_r16(wd, d, ffn);
    float *x = malloc(nt * d * sizeof(float));
    for (uint32_t i = 0; i < nt * d; i++)
        x[i] = frand();
    const size_t xrb = q8_row_bytes(d), arb = q8_row_bytes(ffn);
    uint8_t *xp = malloc(xrb * nt), *ap = malloc(arb * nt), *rap = malloc(arb * nt);
    float *g = malloc(nt * ffn * 4), *u = malloc(nt * ffn * 4), *out = malloc(nt * d * 4);
    float *rg = malloc(nt * ffn * 4), *ru = malloc(nt * ffn * 4), *rout = malloc(nt * d * 4);
    ft_cpu_act_prepare(FT_DTYPE_Q8_0, x, d, nt, d, xp);
    fn(pg, pu, pd, xp, nt, g, u, ap, out);
    ft_cpu_matmul(FT_DTYPE_Q8_0, wg, xrb, xp, nt, d, 0, ffn, rg, ffn);
    ft_cpu_matmul(FT_DTYPE_Q8_0, wu, xrb, xp, nt, d, 0, ffn, ru, ffn);
    for (uint32_t i = 0; i < nt * ffn; i++)
        rg[i] = rg[i] / (1.0f + expf(-rg[i])) * ru[i];
    ft_cpu_act_prepare(FT_DTYPE_Q8_0, rg, ffn, nt, ffn, rap);
    ft_cpu_matmul(FT_DTYPE_Q8_0, wd, arb, rap, nt, ffn, 0, d, rout, d);
    double scale = 0;
    for (uint32_t i = 0; i < nt * d; i++)
        scale = fmax(scale, fabs(rout[i]));
    for (uint32_t i = 0; i < nt * d; i++)
        if (fabs(rout[i] - out[i]) > 2e-2 * scale)
            fail_msg("expert out[%u]: ref %g got %g (max %g)", i, rout[i], out[i], scale);
    free(wg), free(wu), free(wd), free(pg), free(pu), free(pd), free(x), free(xp), free(ap),
        free(rap);
    free(g), free(u), free(out), free(rg), free(ru), free(rout);
    ft_cpu_module_free(mod);
}

/* The runtime's product over a model matrix: with the reference kernels
 * an interleaved matrix gives exactly the results of the same rows in row
 * order, for any row range (groups unpacked one at a time). */
static void test_mat_mul_reference(void **state)
{
    (void)state;
    const uint32_t rows = 48, cols = 256, nt = 3;
    const size_t rb = q8_row_bytes(cols);
    uint8_t *w = make_rows(rows, cols), *p = to_r16(w, rows, cols), *xp = malloc(rb * nt);
    float x[3 * 256];
    for (uint32_t i = 0; i < nt * cols; i++)
        x[i] = frand();
    ft_cpu_act_prepare(FT_DTYPE_Q8_0, x, cols, nt, cols, xp);
    ft_mat_t a = {.dtype = FT_DTYPE_Q8_0,
                  .rows = rows,
                  .cols = cols,
                  .row_bytes = rb,
                  .data = w,
                  .n_experts = 1};
    ft_mat_t b = a;
    b.layout = FT_WLAYOUT_Q8_0_R16;
    b.data = p;
    float ya[48 * 3], yb[48 * 3];
    ft_mat_mul(&a, 0, a.data, xp, nt, 0, rows, ya, rows);
    memset(yb, 0, sizeof(yb));
    ft_mat_mul(&b, 0, b.data, xp, nt, 0, 7, yb, rows);
    ft_mat_mul(&b, 0, b.data, xp, nt, 7, 33, yb, rows);
    ft_mat_mul(&b, 0, b.data, xp, nt, 33, rows, yb, rows);
    assert_memory_equal(ya, yb, sizeof(ya));
    assert_int_equal(ft_mat_grain(&b, 4), 16);
    assert_int_equal(ft_mat_grain(&a, 4), 4);
    free(w), free(p), free(xp);
}

/* Only Q8_0 products on AVX-512 have the kernel. */
static void test_r16_refused(void **state)
{
    (void)state;
    const ft_cg_kreq_t bad[] = {
        {FT_KABI_OP_MATMUL, FT_KABI_FMT_Q8_0 | FT_KABI_LAYOUT_R16, 0, 16, 64}, /* on avx2 */
        {FT_KABI_OP_MATMUL, FT_KABI_FMT_Q4_K | FT_KABI_LAYOUT_R16, 0, 16, 256},
        {FT_KABI_OP_NORM_PREPARE, FT_KABI_FMT_Q8_0 | FT_KABI_LAYOUT_R16, 0, 64, 64},
    };
    const char *isa[] = {"avx2", "avx512", "avx512"};
    for (int i = 0; i < 3; i++) {
        char *src = NULL;
        ft_status_t st = ft_cg_cpu_emit_kernels(&bad[i], 1, isa[i], NULL, 0, &src);
        assert_non_null(st);
        assert_int_equal(ft_status_code(st), FT_STATUS_UNSUPPORTED);
        assert_non_null(strstr(ft_status_message(st), "interleaved by 16"));
        ft_status_free(st);
        assert_null(src);
    }
}

/* A bundle as ftc writes it for an AVX-512 module (products interleaved,
 * the output head too: 560 rows), opened and run; and with its plan
 * edited so that the embedding, whose rows the EMBED op looks up, claims
 * the interleaved layout: refused at open, naming the tensor and the op. */
static void test_bundle_layouts(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.n_merges = 297; /* vocab 560: a multiple of 16 */
    char bundle[4096];
    ft_status_t st = ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_Q8_0,
                                         ft_test_tmpdir("wlayout"), bundle, sizeof(bundle));
    if (st) fail_msg("%s", ft_status_message(st));
    char path[4200];
    snprintf(path, sizeof(path), "%s/plan.ftp", bundle);
    Ftplan__Plan *plan = NULL;
    assert_null(ft_plan_read(path, &plan));
    const int avx512 = !strcmp(ft_cg_cpu_host_isa(), "avx512");
    Ftplan__Tensor *embd = NULL;
    for (size_t i = 0; i < plan->n_tensors; i++) {
        Ftplan__Tensor *t = plan->tensors[i];
        if (!strcmp(t->name, "token_embd.weight")) embd = t;
        const int product = !strcmp(t->name, "output.weight") || strstr(t->name, "attn_q.weight") ||
                            strstr(t->name, "ffn_up_exps.weight");
        if (product) assert_int_equal(t->layout, avx512 ? FT_WLAYOUT_Q8_0_R16 : FT_WLAYOUT_ROWS);
    }
    assert_non_null(embd);
    assert_int_equal(embd->layout, FT_WLAYOUT_ROWS);
    ft_engine_t *e = NULL;
    assert_null(ft_engine_open(bundle, NULL, &e));
    ft_engine_close(e);
    /* the edited copy: its plan, the same weights */
    embd->layout = FT_WLAYOUT_Q8_0_R16;
    char dir[4096], dst[4200], src[4200];
    snprintf(dir, sizeof(dir), "%s", ft_test_tmpdir("wlayout_embd"));
    snprintf(dst, sizeof(dst), "%s/plan.ftp", dir);
    assert_null(ft_plan_write(plan, dst));
    snprintf(src, sizeof(src), "%s/weights.ftw", bundle);
    snprintf(dst, sizeof(dst), "%s/weights.ftw", dir);
    size_t n = 0;
    void *w = ft_test_read_file(src, &n);
    assert_int_equal(ft_test_write_file(dst, w, n), 0);
    free(w);
    st = ft_engine_open(dir, NULL, &e);
    assert_non_null(st);
    assert_null(e);
    print_message("refused: %s\n", ft_status_message(st));
    assert_non_null(
        strstr(ft_status_message(st), "'token_embd.weight': layout q8_0_r16, but its EMBED op"));
    ft_status_free(st);
    ft_plan_free(plan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_bytes),      cmocka_unit_test(test_r16_matmul),
        cmocka_unit_test(test_r16_integer_exact), cmocka_unit_test(test_r16_expert),
        cmocka_unit_test(test_mat_mul_reference), cmocka_unit_test(test_r16_refused),
        cmocka_unit_test(test_bundle_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
