/* The fused kernels of kernel ABI 2 (codegen/cpu/templates/ftt_fused.c)
 * against the runtime's unfused operations, on every ISA this machine
 * runs, on random shapes:
 *
 *  - RMSNorm + preparation: the prepared bytes equal ft_op_rmsnorm then
 *    ft_cpu_act_prepare exactly (Q8_0, Q8_K and float rows), including
 *    all-zero blocks, single-element blocks and blocks whose largest
 *    magnitudes tie with opposite signs;
 *  - router: probabilities, chosen experts and weights equal the module's
 *    own matmul followed by ft_op_softmax, ft_op_topk and the weights
 *    exactly, with and without normalization, over token counts that take
 *    the decode and the tiled paths;
 *  - attention: within 1e-5 (relative to the largest |V| entry) of a
 *    float64 softmax attention, over group sizes, head sizes and key
 *    counts. Its bit-identity with the runtime's own loop is checked in
 *    the forward pass (test_forward_fused.c, test_kv_f16.c);
 *  - attention over an f16 KV cache (ABI 3): scores and output bit-identical
 *    to the f32 kernel over the same halves widened to float (widening is
 *    exact and the float operations are the same), including halves that
 *    are subnormal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cpu_module_fixture.h"
#include "../../runtime/backends/cpu/cpu_module.h"
#include "../../runtime/exec/ops.h"
#include "../../runtime/format/convert.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x2545f4914f6cdd1dull;
static float frand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 11) & 0xffffff) / 8388608.0f - 1.0f;
}

/* weight formats whose preparation differs: Q8_0 blocks, Q8_K, float */
static const ft_dtype_t k_norm_fmts[] = {FT_DTYPE_Q8_0, FT_DTYPE_Q4_K, FT_DTYPE_F32};
static const uint32_t k_norm_cols[] = {256, 768, 1024};
static const uint32_t k_router[][2] = {{8, 256}, {64, 512}, {60, 768}}; /* experts x d */
static const uint32_t k_attn[][2] = {{1, 16}, {2, 64}, {4, 64}, {8, 128}, {3, 24}};

static ft_cpu_module_t *build(const char *isa, const ft_cg_kreq_t *reqs, uint32_t n)
{
    ft_cpu_module_t *mod = NULL;
    const ft_status_t st = ft_test_cpu_module(reqs, n, isa, &mod);
    if (st)
        fail_msg("%s", ft_status_message(st));
    assert_int_equal(ft_cpu_module_count(mod), n);
    return mod;
}

/* Rows with the edge cases of the quantizers in their first blocks. */
static void fill_rows(float *x, uint32_t n_rows, size_t ldx, uint32_t cols)
{
    for (uint32_t t = 0; t < n_rows; t++) {
        float *r = x + t * ldx;
        for (uint32_t c = 0; c < cols; c++)
            r[c] = frand() * (float)(1 + t) * (c % 5 ? 1.0f : 4.0f);
        if (t == 1)
            memset(r, 0, 256 * sizeof(float)); /* an all-zero block and super-block */
        if (t == 2) {
            memset(r, 0, 32 * sizeof(float)); /* one nonzero element in a block */
            r[7] = 0.25f;
        }
        if (t == 3)
            r[3] = -(r[9] = 40.0f); /* largest magnitudes tie with opposite signs */
    }
}

static void check_norm(const ft_cpu_module_t *mod, const char *isa)
{
    for (size_t f = 0; f < sizeof(k_norm_fmts) / sizeof(k_norm_fmts[0]); f++)
        for (size_t c = 0; c < sizeof(k_norm_cols) / sizeof(k_norm_cols[0]); c++) {
            const ft_dtype_t t = k_norm_fmts[f];
            const uint32_t cols = k_norm_cols[c], n_rows = 6;
            const size_t ldx = cols + 32, orb = ft_cpu_act_row_bytes(t, cols);
            ft_kabi_norm_prepare_fn fn = ft_cpu_module_find_norm_prepare(mod, t, cols);
            assert_non_null(fn);
            float *x = malloc(ldx * n_rows * sizeof(float)), *w = malloc(cols * sizeof(float));
            float *h = malloc((size_t)cols * n_rows * sizeof(float));
            uint8_t *want = malloc(orb * n_rows), *got = malloc(orb * n_rows);
            fill_rows(x, n_rows, ldx, cols);
            for (uint32_t i = 0; i < cols; i++)
                w[i] = 0.5f + frand();
            for (uint32_t r = 0; r < n_rows; r++)
                ft_op_rmsnorm(h + (size_t)r * cols, x + r * ldx, w, cols, 1e-6f);
            ft_cpu_act_prepare(t, h, cols, n_rows, cols, want);
            fn(x, ldx, w, 1e-6f, n_rows, got);
            for (size_t i = 0; i < orb * n_rows; i++)
                if (want[i] != got[i])
                    fail_msg("%s: norm+prepare %s x %u: byte %zu (row %zu) is %u, want %u", isa,
                             ft_dtype_name(t), cols, i, i / orb, got[i], want[i]);
            free(x), free(w), free(h), free(want), free(got);
        }
}

static void check_router(const ft_cpu_module_t *mod, const char *isa)
{
    static const uint32_t toks[] = {1, 5};
    for (size_t s = 0; s < sizeof(k_router) / sizeof(k_router[0]); s++)
        for (size_t ti = 0; ti < 2; ti++)
            for (int norm = 0; norm < 2; norm++) {
                const uint32_t E = k_router[s][0], d = k_router[s][1], nt = toks[ti], K = E < 8 ? 2 : 8;
                const ft_dtype_t t = FT_DTYPE_Q8_0;
                uint64_t rb = 0;
                assert_int_equal(ft_dtype_row_bytes(t, d, &rb), 1);
                ft_kabi_router_fn fn = ft_cpu_module_find_router(mod, t, E, d);
                ft_kabi_matmul_fn mm = ft_cpu_module_find_matmul(mod, t, E, d);
                assert_non_null(fn);
                assert_non_null(mm);
                uint8_t *w = malloc(rb * E), *xp = malloc(ft_cpu_act_row_bytes(t, d) * nt);
                float *x = malloc((size_t)nt * d * sizeof(float)), *f = malloc(d * sizeof(float));
                for (uint32_t r = 0; r < E; r++) {
                    for (uint32_t i = 0; i < d; i++)
                        f[i] = frand() * 0.1f;
                    ft_quantize_row(t, f, w + r * rb, d);
                }
                for (size_t i = 0; i < (size_t)nt * d; i++)
                    x[i] = frand();
                ft_cpu_act_prepare(t, x, d, nt, d, xp);
                float *p_want = malloc((size_t)nt * E * 4), *p_got = malloc((size_t)nt * E * 4);
                int32_t sel_want[5 * 8], sel_got[5 * 8];
                float w_want[5 * 8], w_got[5 * 8];
                mm(w, rb, xp, nt, 0, E, p_want, E);
                for (uint32_t k = 0; k < nt; k++) {
                    float *p = p_want + (size_t)k * E, sum = 0.0f;
                    ft_op_softmax(p, E);
                    ft_op_topk(p, E, K, sel_want + k * 8);
                    for (uint32_t j = 0; j < K; j++)
                        sum += (w_want[k * 8 + j] = p[sel_want[k * 8 + j]]);
                    for (uint32_t j = 0; j < K && norm; j++)
                        w_want[k * 8 + j] /= sum;
                }
                fn(w, rb, xp, nt, K, norm, p_got, sel_got, w_got, 8);
                assert_memory_equal(p_want, p_got, (size_t)nt * E * 4);
                for (uint32_t k = 0; k < nt; k++) {
                    assert_memory_equal(sel_want + k * 8, sel_got + k * 8, K * sizeof(int32_t));
                    assert_memory_equal(w_want + k * 8, w_got + k * 8, K * sizeof(float));
                }
                (void)isa;
                free(w), free(xp), free(x), free(f), free(p_want), free(p_got);
            }
}

static void check_attn(const ft_cpu_module_t *mod, const char *isa)
{
    static const uint32_t keys[] = {1, 7, 130};
    for (size_t s = 0; s < sizeof(k_attn) / sizeof(k_attn[0]); s++)
        for (size_t ki = 0; ki < 3; ki++) {
            const uint32_t G = k_attn[s][0], hd = k_attn[s][1], nk = keys[ki];
            const size_t stride = (size_t)hd * 3 + 8, ld = nk + 5; /* a cache row holds other heads too */
            ft_kabi_attn_fn fn = ft_cpu_module_find_attn(mod, G, hd);
            assert_non_null(fn);
            float *q = malloc((size_t)G * hd * 4), *kc = malloc(stride * nk * 4), *vc = malloc(stride * nk * 4);
            float *scores = malloc((size_t)G * ld * 4), *out = malloc((size_t)G * hd * 4);
            for (size_t i = 0; i < (size_t)G * hd; i++)
                q[i] = frand() * 2;
            for (size_t i = 0; i < stride * nk; i++)
                kc[i] = frand(), vc[i] = frand();
            const float scale = 1.0f / sqrtf((float)hd);
            fn(q, kc + hd, vc + hd, stride, nk, scale, scores, ld, out);
            for (uint32_t g = 0; g < G; g++) {
                double sc[130], mx = -1e300, sum = 0;
                for (uint32_t p = 0; p < nk; p++) {
                    double dot = 0;
                    for (uint32_t i = 0; i < hd; i++)
                        dot += (double)q[g * hd + i] * kc[p * stride + hd + i];
                    sc[p] = dot * scale;
                    mx = fmax(mx, sc[p]);
                }
                for (uint32_t p = 0; p < nk; p++)
                    sum += (sc[p] = exp(sc[p] - mx));
                for (uint32_t i = 0; i < hd; i++) {
                    double o = 0;
                    for (uint32_t p = 0; p < nk; p++)
                        o += sc[p] / sum * vc[p * stride + hd + i];
                    if (fabs(o - out[g * hd + i]) > 1e-5)
                        fail_msg("%s: attention %u x %u, %u keys: head %u [%u] = %.8g, want %.8g", isa, G, hd,
                                 nk, g, i, out[g * hd + i], o);
                }
            }
            free(q), free(kc), free(vc), free(scores), free(out);
        }
}

/* Random halves, a few of them subnormal; wide[] gets them as floats. */
static void fill_halves(uint16_t *h, float *wide, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h[i] = ft_fp32_to_fp16(i % 97 == 3 ? frand() * 0x1p-16f : frand());
        wide[i] = ft_fp16_to_fp32(h[i]);
    }
}

static void check_attn_f16(const ft_cpu_module_t *mod, const char *isa)
{
    static const uint32_t keys[] = {1, 7, 130};
    for (size_t s = 0; s < sizeof(k_attn) / sizeof(k_attn[0]); s++)
        for (size_t ki = 0; ki < 3; ki++) {
            const uint32_t G = k_attn[s][0], hd = k_attn[s][1], nk = keys[ki];
            const size_t stride = (size_t)hd * 3 + 8, ld = nk + 5;
            ft_kabi_attn_fn f32 = ft_cpu_module_find_attn(mod, G, hd);
            ft_kabi_attn_f16_fn f16 = ft_cpu_module_find_attn_f16(mod, G, hd);
            assert_non_null(f32);
            assert_non_null(f16);
            float *q = malloc((size_t)G * hd * 4), *kw = malloc(stride * nk * 4), *vw = malloc(stride * nk * 4);
            uint16_t *kh = malloc(stride * nk * 2), *vh = malloc(stride * nk * 2);
            float *sc_a = malloc((size_t)G * ld * 4), *sc_b = malloc((size_t)G * ld * 4);
            float *out_a = malloc((size_t)G * hd * 4), *out_b = malloc((size_t)G * hd * 4);
            for (size_t i = 0; i < (size_t)G * hd; i++)
                q[i] = frand() * 2;
            fill_halves(kh, kw, stride * nk);
            fill_halves(vh, vw, stride * nk);
            memset(sc_a, 0, (size_t)G * ld * 4), memset(sc_b, 0, (size_t)G * ld * 4);
            const float scale = 1.0f / sqrtf((float)hd);
            f32(q, kw + hd, vw + hd, stride, nk, scale, sc_a, ld, out_a);
            f16(q, kh + hd, vh + hd, stride, nk, scale, sc_b, ld, out_b);
            for (uint32_t g = 0; g < G; g++)
                if (memcmp(sc_a + (size_t)g * ld, sc_b + (size_t)g * ld, nk * 4) != 0)
                    fail_msg("%s: f16 attention %u x %u, %u keys: head %u's weights differ", isa, G, hd, nk, g);
            if (memcmp(out_a, out_b, (size_t)G * hd * 4) != 0)
                fail_msg("%s: f16 attention %u x %u, %u keys: output differs from the f32 kernel", isa, G, hd,
                         nk);
            free(q), free(kw), free(vw), free(kh), free(vh), free(sc_a), free(sc_b), free(out_a), free(out_b);
        }
}

static void run_isa(const char *isa)
{
    ft_cg_kreq_t reqs[40];
    uint32_t n = 0;
    for (size_t f = 0; f < sizeof(k_norm_fmts) / sizeof(k_norm_fmts[0]); f++)
        for (size_t c = 0; c < sizeof(k_norm_cols) / sizeof(k_norm_cols[0]); c++)
            reqs[n++] = (ft_cg_kreq_t){FT_KABI_OP_NORM_PREPARE, k_norm_fmts[f], 0, k_norm_cols[c], k_norm_cols[c]};
    for (size_t s = 0; s < sizeof(k_router) / sizeof(k_router[0]); s++) {
        reqs[n++] = (ft_cg_kreq_t){FT_KABI_OP_ROUTER, FT_DTYPE_Q8_0, 0, k_router[s][0], k_router[s][1]};
        reqs[n++] = (ft_cg_kreq_t){FT_KABI_OP_MATMUL, FT_DTYPE_Q8_0, 0, k_router[s][0], k_router[s][1]};
    }
    for (size_t s = 0; s < sizeof(k_attn) / sizeof(k_attn[0]); s++) {
        reqs[n++] = (ft_cg_kreq_t){FT_KABI_OP_ATTN, FT_DTYPE_F32, 0, k_attn[s][0], k_attn[s][1]};
        reqs[n++] = (ft_cg_kreq_t){FT_KABI_OP_ATTN, FT_DTYPE_F16, 0, k_attn[s][0], k_attn[s][1]};
    }
    ft_cpu_module_t *mod = build(isa, reqs, n);
    check_norm(mod, isa);
    check_router(mod, isa);
    check_attn(mod, isa);
    check_attn_f16(mod, isa);
    ft_cpu_module_free(mod);
}

static void test_portable(void **state)
{
    (void)state;
    run_isa("portable");
}

static void test_host_isas(void **state)
{
    (void)state;
    const char *isa = ft_cg_cpu_host_isa();
    if (!strcmp(isa, "avx512"))
        run_isa("avx512");
    if (strcmp(isa, "portable") != 0)
        run_isa("avx2");
}

/* Shapes the fusions cannot take are refused by the emitter (the runtime
 * then runs the unfused path): an attention larger than its stack tile, a
 * norm key with rows != cols, an attention over a quantized cache. */
static void test_refused_shapes(void **state)
{
    (void)state;
    const ft_cg_kreq_t bad[] = {{FT_KABI_OP_ATTN, FT_DTYPE_F32, 0, 64, 256},
                                {FT_KABI_OP_NORM_PREPARE, FT_DTYPE_Q8_0, 0, 64, 256},
                                {FT_KABI_OP_ATTN, FT_DTYPE_Q8_0, 0, 2, 64}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *src = NULL;
        ft_status_t st = ft_cg_cpu_emit_kernels(&bad[i], 1, "portable", NULL, 0, &src);
        assert_non_null(st);
        assert_null(src);
        ft_status_free(st);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused_shapes),
        cmocka_unit_test(test_portable),
        cmocka_unit_test(test_host_isas),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
