/* Generated CPU kernels of the formats without SIMD tiles (templates/
 * ftt_quants.c: Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q5_K, IQ4_NL, IQ4_XS, the IQ
 * grids with IQ1_S and IQ1_M, TQ1_0, TQ2_0, MXFP4, NVFP4, FP8) against the reference dots, bit for
 * bit: the template does the reference's integer sums and float
 * operations in the same order (for MXFP4, NVFP4 and FP8 in SIMD modules, those
 * of the runtime's AVX2 tier), so any difference is a bug. Weights are
 * random bytes (every level, sign pattern, grid index and scale code,
 * including fp16 scales that are inf or NaN: both sides must then agree
 * on the NaN) and weights quantized from random floats; token counts
 * cover one token (decode), a partial and a whole group of eight, and
 * more. Every ISA this machine runs: portable, AVX2, AVX-512. The fused
 * expert over these formats against the runtime's op sequence, exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cpu_module_fixture.h"
#include "../../runtime/backends/cpu/cpu_dot.h"
#include "../../runtime/backends/cpu/cpu_module.h"
#include "../../runtime/format/convert.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const ft_dtype_t k_formats[] = {
    FT_DTYPE_Q4_1,   FT_DTYPE_Q5_0,    FT_DTYPE_Q5_1,  FT_DTYPE_Q2_K,   FT_DTYPE_Q3_K,
    FT_DTYPE_Q5_K,   FT_DTYPE_IQ4_NL,  FT_DTYPE_IQ4_XS, FT_DTYPE_IQ2_XXS, FT_DTYPE_IQ2_XS,
    FT_DTYPE_IQ2_S,  FT_DTYPE_IQ3_XXS, FT_DTYPE_IQ3_S, FT_DTYPE_IQ1_S,  FT_DTYPE_IQ1_M,
    FT_DTYPE_TQ1_0,  FT_DTYPE_TQ2_0,   FT_DTYPE_MXFP4, FT_DTYPE_NVFP4, FT_DTYPE_FP8};
enum { N_FMT = sizeof(k_formats) / sizeof(k_formats[0]), ROWS = 6, COLS = 512 };
static const uint32_t k_toks[] = {1, 3, 8, 11};

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static float frand(void)
{
    return (float)((next() >> 11) & 0xffffff) / 8388608.0f - 1.0f;
}

static size_t row_bytes(ft_dtype_t t, uint32_t cols)
{
    uint64_t b = 0;
    assert_int_equal(ft_dtype_row_bytes(t, cols, &b), 1);
    return (size_t)b;
}

/* [rows, cols] of t: random bytes, or random floats quantized. */
static uint8_t *make_weights(ft_dtype_t t, uint32_t rows, uint32_t cols, int raw)
{
    const size_t rb = row_bytes(t, cols);
    uint8_t *w = malloc(rb * rows);
    if (raw) {
        for (size_t i = 0; i < rb * rows; i++)
            w[i] = (uint8_t)(next() >> 32);
        return w;
    }
    float *f = malloc(cols * sizeof(float));
    for (uint32_t r = 0; r < rows; r++) {
        for (uint32_t c = 0; c < cols; c++)
            f[c] = frand() * (1.0f + (float)(c % 5));
        ft_quantize_row(t, f, w + r * rb, cols);
    }
    free(f);
    return w;
}

static int same(float a, float b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof(a)) == 0;
}

static ft_cpu_module_t *build_module(const char *isa, const ft_cg_kreq_t *reqs, uint32_t n)
{
    ft_cpu_module_t *mod = NULL;
    const ft_status_t st = ft_test_cpu_module(reqs, n, isa, &mod);
    if (st)
        fail_msg("%s", ft_status_message(st));
    assert_int_equal(ft_cpu_module_count(mod), n);
    return mod;
}

/* IQ1_S / IQ1_M: 32 groups of 8 per block of 256 with an 11-bit grid index
 * each (ggml's 2048 points); random bytes reach ~400 of them per matrix.
 * Pass p of a sweep sets the groups' indices to p * G .. p * G + G - 1
 * (G the matrix's groups; mod 2048) and the fp16 d finite, so that
 * IQ1_SWEEPS passes go through every grid point with a number as result;
 * the deltas and scales stay random. */
enum { IQ1_GROUPS = ROWS * COLS / 8, IQ1_SWEEPS = (2048 + IQ1_GROUPS - 1) / IQ1_GROUPS };
static void iq1_sweep(ft_dtype_t t, uint8_t *w, int pass)
{
    const size_t bb = t == FT_DTYPE_IQ1_S ? 50 : 56;
    for (int g = 0; g < IQ1_GROUPS; g++) {
        const unsigned k = (unsigned)(pass * IQ1_GROUPS + g) % 2048;
        uint8_t *b = w + (size_t)(g / 32) * bb;
        const int ib = g % 32 / 4, l = g % 4;
        if (t == FT_DTYPE_IQ1_S) {
            b[2 + 4 * ib + l] = (uint8_t)k;
            unsigned qh = (unsigned)b[34 + 2 * ib] | (unsigned)b[35 + 2 * ib] << 8;
            qh = (qh & ~(7u << 3 * l)) | (k >> 8) << 3 * l;
            b[34 + 2 * ib] = (uint8_t)qh, b[35 + 2 * ib] = (uint8_t)(qh >> 8);
            b[1] &= 0xbf; /* exponent below 31 */
        } else {
            b[4 * ib + l] = (uint8_t)k;
            uint8_t *h = b + 32 + 2 * ib + l / 2;
            const int sh = 4 * (l % 2);
            *h = (uint8_t)((*h & ~(7u << sh)) | (k >> 8) << sh);
            b[55] &= 0xbf; /* d's bit 14, in the fourth scale's top nibble */
        }
    }
}

/* raw: 0 quantized weights, 1 random bytes, 2 + p random bytes with pass p
 * of the IQ1 sweep. */
static void check_format(const ft_cpu_module_t *mod, const char *isa, ft_dtype_t t, int raw)
{
    ft_kabi_matmul_fn fn = ft_cpu_module_find_matmul(mod, t, ROWS, COLS);
    if (!fn)
        fail_msg("%s: no %s kernel", isa, ft_dtype_name(t));
    /* MXFP4, NVFP4 and FP8: SIMD modules do the reference's AVX2 tier's operations */
    const int simd = strcmp(isa, "portable") != 0;
    if (simd && !FT_CPU_HAVE_AVX2 && (t == FT_DTYPE_MXFP4 || t == FT_DTYPE_NVFP4 || t == FT_DTYPE_FP8)) {
        print_message("%s %s: the runtime has no AVX2 tier to compare with\n", isa, ft_dtype_name(t));
        return;
    }
    const ft_cpu_dot_fn dot = ft_cpu_dot_for(t, !simd);
    assert_non_null(dot);
    const size_t rb = row_bytes(t, COLS), xrb = ft_cpu_act_row_bytes(t, COLS);
    uint8_t *w = make_weights(t, ROWS, COLS, raw);
    if (raw >= 2)
        iq1_sweep(t, w, raw - 2);
    for (size_t ti = 0; ti < sizeof(k_toks) / sizeof(k_toks[0]); ti++) {
        const uint32_t nt = k_toks[ti];
        float *x = malloc((size_t)nt * COLS * sizeof(float));
        uint8_t *xp = malloc(xrb * nt);
        for (size_t i = 0; i < (size_t)nt * COLS; i++)
            x[i] = frand() * 3.0f;
        ft_cpu_act_prepare(t, x, COLS, nt, COLS, xp);
        float got[ROWS * 11];
        fn(w, rb, xp, nt, 0, ROWS / 2, got, ROWS); /* two row ranges, as threads split */
        fn(w, rb, xp, nt, ROWS / 2, ROWS, got, ROWS);
        for (uint32_t k = 0; k < nt; k++)
            for (uint32_t r = 0; r < ROWS; r++) {
                const float ref = dot(COLS, w + r * rb, xp + k * xrb);
                if (raw >= 2 && !isfinite(ref))
                    fail_msg("%s %s sweep %d row %u: reference %g", isa, ft_dtype_name(t), raw - 2, r, ref);
                if (!same(ref, got[k * ROWS + r]))
                    fail_msg("%s %s (%s weights) row %u tok %u of %u: reference %.9g generated %.9g",
                             isa, ft_dtype_name(t), raw ? "random-byte" : "quantized", r, k, nt,
                             ref, got[k * ROWS + r]);
            }
        free(x), free(xp);
    }
    free(w);
}

/* The expert against runtime/exec/forward.c's sequence through the
 * portable reference dots: gate/up bit-identical, so SwiGLU, the down
 * input's quantization and the down product are too. */
static void check_expert(const ft_cpu_module_t *mod, ft_dtype_t gu, ft_dtype_t dn)
{
    const uint32_t ffn = 256, d = 512, nt = 3;
    ft_kabi_expert_fn fn = ft_cpu_module_find_expert(mod, gu, dn, ffn, d);
    assert_non_null(fn);
    uint8_t *wg = make_weights(gu, ffn, d, 0), *wu = make_weights(gu, ffn, d, 0), *wd = make_weights(dn, d, ffn, 0);
    const size_t xrb = ft_cpu_act_row_bytes(gu, d), arb = ft_cpu_act_row_bytes(dn, ffn);
    const size_t grb = row_bytes(gu, d), drb = row_bytes(dn, ffn);
    float *x = malloc(nt * d * sizeof(float));
    for (uint32_t i = 0; i < nt * d; i++)
        x[i] = frand();
    uint8_t *xp = malloc(xrb * nt), *ap = malloc(arb * nt), *rap = malloc(arb * nt);
    float *g = malloc(nt * ffn * 4), *u = malloc(nt * ffn * 4), *out = malloc(nt * d * 4);
    float *rg = malloc(nt * ffn * 4), *ru = malloc(nt * ffn * 4), *rout = malloc(nt * d * 4);
    ft_cpu_act_prepare(gu, x, d, nt, d, xp);
    fn(wg, wu, wd, xp, nt, g, u, ap, out);
    const ft_cpu_dot_fn dg = ft_cpu_dot_for(gu, 1), dd = ft_cpu_dot_for(dn, 1);
    for (uint32_t t = 0; t < nt; t++)
        for (uint32_t r = 0; r < ffn; r++) {
            rg[t * ffn + r] = dg(d, wg + r * grb, xp + t * xrb);
            ru[t * ffn + r] = dg(d, wu + r * grb, xp + t * xrb);
        }
    for (uint32_t i = 0; i < nt * ffn; i++)
        rg[i] = rg[i] / (1.0f + expf(-rg[i])) * ru[i];
    ft_cpu_act_prepare(dn, rg, ffn, nt, ffn, rap);
    for (uint32_t t = 0; t < nt; t++)
        for (uint32_t r = 0; r < d; r++)
            rout[t * d + r] = dd(ffn, wd + r * drb, rap + t * arb);
    for (uint32_t i = 0; i < nt * d; i++)
        if (!same(rout[i], out[i]))
            fail_msg("expert %s/%s out[%u]: reference %.9g generated %.9g", ft_dtype_name(gu),
                     ft_dtype_name(dn), i, rout[i], out[i]);
    free(wg), free(wu), free(wd), free(x), free(xp), free(ap), free(rap), free(g), free(u), free(out);
    free(rg), free(ru), free(rout);
}

static void run_isa(const char *isa)
{
    ft_cg_kreq_t reqs[N_FMT + 3];
    uint32_t n = 0;
    for (int f = 0; f < N_FMT; f++)
        reqs[n++] = (ft_cg_kreq_t){FT_KABI_OP_MATMUL, k_formats[f], 0, ROWS, COLS};
    reqs[n++] = (ft_cg_kreq_t){FT_KABI_OP_EXPERT, FT_DTYPE_IQ3_S, FT_DTYPE_Q5_K, 256, 512};
    reqs[n++] = (ft_cg_kreq_t){FT_KABI_OP_EXPERT, FT_DTYPE_Q2_K, FT_DTYPE_IQ4_NL, 256, 512};
    reqs[n++] = (ft_cg_kreq_t){FT_KABI_OP_EXPERT, FT_DTYPE_IQ1_S, FT_DTYPE_IQ1_M, 256, 512};
    ft_cpu_module_t *mod = build_module(isa, reqs, n);
    for (int f = 0; f < N_FMT; f++) {
        check_format(mod, isa, k_formats[f], 1);
        check_format(mod, isa, k_formats[f], 0);
        if (k_formats[f] == FT_DTYPE_IQ1_S || k_formats[f] == FT_DTYPE_IQ1_M)
            for (int p = 0; p < IQ1_SWEEPS; p++)
                check_format(mod, isa, k_formats[f], 2 + p);
    }
    check_expert(mod, FT_DTYPE_IQ3_S, FT_DTYPE_Q5_K);
    check_expert(mod, FT_DTYPE_Q2_K, FT_DTYPE_IQ4_NL);
    check_expert(mod, FT_DTYPE_IQ1_S, FT_DTYPE_IQ1_M);
    ft_cpu_module_free(mod);
}

static void test_portable(void **state)
{
    (void)state;
    run_isa("portable");
}

static void test_simd_isas(void **state)
{
    (void)state;
    const char *isa = ft_cg_cpu_host_isa();
    if (!strcmp(isa, "portable"))
        skip();
    run_isa(isa);
    if (!strcmp(isa, "avx512"))
        run_isa("avx2");
}

/* The IQ codebooks go into a module only when one of its kernels needs
 * them; without them the IQ grid kernels are not defined. */
static void test_grids_only_when_needed(void **state)
{
    (void)state;
    const ft_cg_kreq_t q5 = {FT_KABI_OP_MATMUL, FT_DTYPE_Q5_K, 0, 4, 256};
    const ft_cg_kreq_t iq = {FT_KABI_OP_EXPERT, FT_DTYPE_Q4_K, FT_DTYPE_IQ2_XXS, 256, 256};
    char *src = NULL;
    assert_null(ft_cg_cpu_emit_kernels(&q5, 1, "portable", NULL, 0, &src));
    assert_null(strstr(src, "static const uint64_t ftt_iq2xxs_grid"));
    assert_null(strstr(src, "static const uint16_t ftt_iq1s_kgrid"));
    free(src);
    assert_null(ft_cg_cpu_emit_kernels(&iq, 1, "portable", NULL, 0, &src));
    assert_non_null(strstr(src, "static const uint64_t ftt_iq2xxs_grid[256] = {"));
    assert_non_null(strstr(src, "ftk_expert_q4_k_iq2_xxs_256x256"));
    free(src);
    const ft_cg_kreq_t iq1 = {FT_KABI_OP_MATMUL, FT_DTYPE_IQ1_M, 0, 4, 256};
    assert_null(ft_cg_cpu_emit_kernels(&iq1, 1, "portable", NULL, 0, &src));
    assert_non_null(strstr(src, "static const uint16_t ftt_iq1s_kgrid[2048] = {"));
    free(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grids_only_when_needed),
        cmocka_unit_test(test_portable),
        cmocka_unit_test(test_simd_isas),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
