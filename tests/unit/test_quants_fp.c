/* The 4- and 8-bit float weight formats (MXFP4, NVFP4, FP8; dtype.h):
 * decoding against definitions written out in float64, the quantizers'
 * error against bounds derived from each format's precision, the CPU dot
 * products against float64 sums, plain F8 rows, and the GGUF import of an
 * MXFP4 tensor whose shape does not fill its blocks.
 *
 * Error bounds of the quantizers (u: the block's scale unit, below):
 *  - MXFP4 stores e = floor(log2 amax) - 2 + 127, so u = 2^(e - 127) has
 *    amax in [4u, 8u), and each x becomes the nearest of the levels L * u,
 *    L in {0, .5, 1, 1.5, 2, 3, 4, 6} (E2M1), spaced 0.5u below 2u, u below
 *    4u, 2u up to 6u. Rounding to the nearest level errs by at most half
 *    the spacing: 0.25u, 0.5u, u; above 6u the level is 6u and the error is
 *    |x| - 6u < 2u (the format clips: amax may reach 8u). The test checks
 *    that the chosen level is a nearest one and the error within these.
 *  - NVFP4's scale s (per 16) is UE4M3(amax / 6) rounded half up on the
 *    mantissa, so within 2^-4 relative of amax / 6 for amax / 6 in UE4M3's
 *    normal range [2^-6, 256); the elements then err as MXFP4's with u = s,
 *    and the clip above 6s is at most amax - 6s <= amax * 2^-4 / (1 + 2^-4).
 *  - FP8: d = amax / 448, and E4M3 keeps 3 mantissa bits: x / d rounds to
 *    within 2^-4 of itself relative (half an ulp), or 2^-10 absolute in the
 *    subnormal range below 2^-6, so |x - x'| <= max(2^-4 |x|, 2^-10 d).
 *
 * Dot products (both tiers: portable C and, where built, AVX2): within a
 * block the integer sums are exact (FP8: exact products, float32 sums of
 * 16); what remains is float32 scaling and accumulation over at most
 * cols / 16 terms, each off by a few ulps: |y - ref| <= 1e-5 * sum
 * |w_i x_i| holds with margin at 1024 columns (2^-24 * 64 terms ~ 4e-6 at
 * worst). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gguf.h"
#include "gguf_writer.h"
#include "test_tmp.h"

#include "../../runtime/backends/cpu/cpu_dot.h"
#include "../../runtime/format/convert.h"
#include "../../runtime/format/minifloat.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd_u32(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}

static double rnd_unit(void) /* (0, 1) */
{
    return ((double)rnd_u32() + 0.5) / 4294967296.0;
}

static double rnd_normal(void)
{
    return sqrt(-2.0 * log(rnd_unit())) * cos(6.283185307179586 * rnd_unit());
}

/* n values: normal, each block of `blk` scaled by a random magnitude in
 * [2^lo, 2^hi) so that blocks cover the scales' ranges. */
static void fill_blocks(float *x, uint32_t n, uint32_t blk, int lo, int hi)
{
    for (uint32_t b = 0; b < n / blk; b++) {
        const double mag = ldexp(1.0, lo + (int)(rnd_u32() % (uint32_t)(hi - lo)));
        for (uint32_t j = 0; j < blk; j++)
            x[b * blk + j] = (float)(rnd_normal() * mag);
    }
}

/* ---- definitions in float64 ------------------------------------------- */

static double e2m1_def(uint8_t q) /* sign, 2 exponent bits (bias 1), 1 mantissa bit */
{
    const int e = (q >> 1) & 3, m = q & 1;
    const double v = e == 0 ? 0.5 * m : ldexp(1.0 + 0.5 * m, e - 1);
    return q & 8 ? -v : v;
}

static double e4m3_def(uint8_t q)
{
    const int e = (q >> 3) & 15, m = q & 7;
    if (e == 15 && m == 7) return NAN;
    const double v = e == 0 ? ldexp(m, -9) : ldexp(1.0 + m / 8.0, e - 7);
    return q & 0x80 ? -v : v;
}

/* ggml_ue4m3_to_fp32 without its halving: 0x00 and 0x7f (NaN) are 0; the
 * sign bit is not read, so 0xff is exponent 15, mantissa 7: 480. */
static double ue4m3_def(uint8_t q)
{
    if (q == 0 || q == 0x7f) return 0.0;
    const int e = (q >> 3) & 15, m = q & 7;
    return e == 0 ? ldexp(m, -9) : ldexp(1.0 + m / 8.0, e - 7);
}

/* ---- decoding --------------------------------------------------------- */

static void test_decode_mxfp4(void **state)
{
    (void)state;
    uint8_t blk[4 * FT_MXFP4_BLOCK_BYTES];
    float y[4 * FT_MXFP4_BLOCK_ELEMS];
    for (int rep = 0; rep < 200; rep++) {
        for (size_t i = 0; i < sizeof(blk); i++)
            blk[i] = (uint8_t)rnd_u32();
        /* exponents from 0 (float32 subnormal scales) up to 250; above 252
         * the largest levels overflow float32, in ggml as here */
        for (uint32_t b = 0; b < 4; b++)
            blk[b * FT_MXFP4_BLOCK_BYTES] = (uint8_t)((rep + 61 * b) % 251);
        ft_dequantize_row_mxfp4(blk, y, 4 * FT_MXFP4_BLOCK_ELEMS);
        for (uint32_t b = 0; b < 4; b++) {
            const uint8_t *p = blk + b * FT_MXFP4_BLOCK_BYTES;
            for (uint32_t j = 0; j < 32; j++) {
                const uint8_t q = j < 16 ? p[1 + j] & 15 : p[1 + j - 16] >> 4;
                const double want = e2m1_def(q) * ldexp(1.0, p[0] - 127);
                assert_true((double)y[b * 32 + j] == want);
            }
        }
    }
}

static void test_decode_nvfp4(void **state)
{
    (void)state;
    uint8_t blk[2 * FT_NVFP4_BLOCK_BYTES];
    float y[2 * FT_NVFP4_BLOCK_ELEMS];
    for (int rep = 0; rep < 256; rep++) {
        for (size_t i = 0; i < sizeof(blk); i++)
            blk[i] = (uint8_t)rnd_u32();
        blk[0] = (uint8_t)rep; /* every scale code, both signs */
        ft_dequantize_row_nvfp4(blk, y, 2 * FT_NVFP4_BLOCK_ELEMS);
        for (uint32_t b = 0; b < 2; b++) {
            const uint8_t *p = blk + b * FT_NVFP4_BLOCK_BYTES;
            for (uint32_t s = 0; s < 4; s++)
                for (uint32_t j = 0; j < 16; j++) {
                    const uint8_t *qs = p + 4 + 8 * s;
                    const uint8_t q = j < 8 ? qs[j] & 15 : qs[j - 8] >> 4;
                    const double want = e2m1_def(q) * ue4m3_def(p[s]);
                    assert_true((double)y[b * 64 + s * 16 + j] == want);
                }
        }
    }
}

static void test_e4m3_codes(void **state)
{
    (void)state;
    for (int c = 0; c < 256; c++) {
        const uint8_t q = (uint8_t)c;
        const double want = e4m3_def(q);
        const float got = ft_e4m3_to_f32(q);
        if (isnan(want)) {
            assert_true(isnan(got));
            assert_int_equal(ft_f32_to_e4m3(got) & 0x7f, 0x7f);
            continue;
        }
        assert_true((double)got == want);
        assert_int_equal(ft_f32_to_e4m3(got), q); /* round trip, -0 included */
    }
    /* Round to nearest even against a brute-force search over the codes. */
    for (int rep = 0; rep < 20000; rep++) {
        const float x = (float)ldexp(rnd_unit() * 2.0 - 1.0, (int)(rnd_u32() % 22) - 12);
        const uint8_t q = ft_f32_to_e4m3(x);
        double best = INFINITY;
        for (int c = 0; c < 127; c++)
            best = fmin(best, fabs(e4m3_def((uint8_t)c) - fabs((double)x)));
        const double err = fabs(e4m3_def(q) - (double)x);
        if (fabs(x) >= 448.0) {
            assert_int_equal(q & 0x7f, 0x7e);
            continue;
        }
        assert_true(err == best);
        if (err > 0 && fabs(e4m3_def(q ^ 1) - (double)x) == err) /* a tie: the even code */
            assert_int_equal(q & 1, 0);
    }
    assert_int_equal(ft_f32_to_e4m3(1e9f), 0x7e);
    assert_int_equal(ft_f32_to_e4m3(-INFINITY), 0xfe);
    assert_int_equal(ft_f32_to_e4m3(0x1.0p-10f), 0); /* half of the smallest subnormal: even */
    assert_int_equal(ft_f32_to_e4m3(0x1.8p-9f), 2);  /* 1.5 subnormal ulps: even (2) */
}

static void test_plain_f8_rows(void **state)
{
    (void)state;
    uint8_t e5[4] = {0x3c, 0x7b, 0x7c, 0x01}; /* 1, 57344, inf, 2^-16 */
    float y[256];
    ft_dequantize_row_e5m2(e5, y, 4);
    assert_true(y[0] == 1.0f && y[1] == 57344.0f && isinf(y[2]) && y[3] == 0x1.0p-16f);
    /* A plain E4M3 row converts to FP8 blocks with d = 1, bytes kept. */
    uint8_t e4[256], fp8[2 * FT_FP8_BLOCK_BYTES];
    for (int i = 0; i < 256; i++)
        e4[i] = (uint8_t)(i == 0x7f || i == 0xff ? 0 : i);
    assert_null(ft_convert_row(FT_DTYPE_FP8, fp8, FT_DTYPE_F8_E4M3, e4, 256));
    float d;
    memcpy(&d, fp8 + FT_FP8_BLOCK_BYTES, 4);
    assert_true(d == 1.0f);
    assert_memory_equal(fp8 + FT_FP8_BLOCK_BYTES + 4, e4 + 128, 128);
    ft_dequantize_row(FT_DTYPE_FP8, fp8, y, 256);
    for (int i = 0; i < 256; i++)
        assert_true((double)y[i] == e4m3_def(e4[i]));
    /* ...and to bf16 through float32, exactly (E4M3 fits bf16). */
    uint16_t bf[256];
    assert_null(ft_convert_row(FT_DTYPE_BF16, bf, FT_DTYPE_F8_E4M3, e4, 256));
    for (int i = 0; i < 256; i++)
        assert_true((double)ft_bf16_to_fp32(bf[i]) == e4m3_def(e4[i]));
    /* E5M2 is the high byte of an fp16: converting to f16 is exact. */
    uint8_t all[256];
    uint16_t h[256];
    for (int i = 0; i < 256; i++)
        all[i] = (uint8_t)i;
    assert_null(ft_convert_row(FT_DTYPE_F16, h, FT_DTYPE_F8_E5M2, all, 256));
    for (int i = 0; i < 256; i++)
        if ((i & 0x7f) <= 0x7c) /* not NaN */
            assert_int_equal(h[i], i << 8);
    /* F8_E5M2 is read, never written. */
    ft_status_t st = ft_convert_row(FT_DTYPE_F8_E5M2, e5, FT_DTYPE_F32, y, 4);
    assert_int_equal(ft_status_code(st), FT_STATUS_UNSUPPORTED);
    ft_status_free(st);
}

/* ---- quantizers ------------------------------------------------------- */

/* Largest error of rounding x to the nearest of the levels L * u. */
static double fp4_bound(double ax, double u)
{
    if (ax <= 2 * u) return 0.25 * u;
    if (ax <= 4 * u) return 0.5 * u;
    if (ax <= 6 * u) return u;
    return ax - 6 * u;
}

/* x' must be a nearest level to x at unit u and within fp4_bound. */
static void check_fp4_elem(double x, double xq, double u)
{
    double best = INFINITY;
    for (int q = 0; q < 16; q++)
        best = fmin(best, fabs(e2m1_def((uint8_t)q) * u - x));
    const double err = fabs(xq - x), slack = 1e-6 * (fabs(x) + u);
    if (err > best + slack || err > fp4_bound(fabs(x), u) + slack) {
        fprintf(stderr, "x %.9g -> %.9g (unit %.9g): error %.3g, nearest %.3g\n", x, xq, u, err,
                best);
        fail();
    }
}

static void test_quant_mxfp4(void **state)
{
    (void)state;
    enum { N = 32 * 512 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    uint8_t *q = malloc(N / 32 * FT_MXFP4_BLOCK_BYTES);
    assert_true(x && y && q);
    fill_blocks(x, N, 32, -30, 20);
    for (int j = 0; j < 32; j++)
        x[j] = 0.0f; /* an all-zero block: e = 0, all zero */
    ft_quantize_row_mxfp4(x, q, N);
    ft_dequantize_row_mxfp4(q, y, N);
    for (uint32_t b = 0; b < N / 32; b++) {
        double amax = 0;
        for (int j = 0; j < 32; j++)
            amax = fmax(amax, fabs(x[b * 32 + j]));
        const double u = ldexp(1.0, q[b * FT_MXFP4_BLOCK_BYTES] - 127);
        if (amax == 0) {
            assert_int_equal(q[b * FT_MXFP4_BLOCK_BYTES], 0);
        } else {
            assert_true(amax >= 4 * u && amax < 8 * u);
        }
        for (int j = 0; j < 32; j++)
            check_fp4_elem(x[b * 32 + j], y[b * 32 + j], u);
    }
    /* A hand-worked block: x_j = j / 4, amax 7.75: e = 2 - 2 + 127, u = 1,
     * levels 0, .5, 1, ..., 6. 0.25 ties 0 and .5: the first (0); 7.75
     * clips to 6 (code 7); 1.25 ties 1 and 1.5: 1 (code 2). */
    float h[32];
    uint8_t hb[FT_MXFP4_BLOCK_BYTES];
    for (int j = 0; j < 32; j++)
        h[j] = (float)j / 4;
    ft_quantize_row_mxfp4(h, hb, 32);
    assert_int_equal(hb[0], 127);
    assert_int_equal(hb[1 + 1] & 15, 0);  /* x_1 = 0.25 */
    assert_int_equal(hb[1 + 5] & 15, 2);  /* x_5 = 1.25 */
    assert_int_equal(hb[1 + 15] >> 4, 7); /* x_31 = 7.75 */
    assert_int_equal(hb[1 + 0] >> 4, 6);  /* x_16 = 4 */
    free(x);
    free(y);
    free(q);
}

static void test_quant_nvfp4(void **state)
{
    (void)state;
    enum { N = 64 * 256 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    uint8_t *q = malloc(N / 64 * FT_NVFP4_BLOCK_BYTES);
    assert_true(x && y && q);
    /* sub-block amax / 6 within UE4M3's normal range: |x| ~ 2^-2 .. 2^6 */
    fill_blocks(x, N, 16, -2, 6);
    ft_quantize_row_nvfp4(x, q, N);
    ft_dequantize_row_nvfp4(q, y, N);
    for (uint32_t s = 0; s < N / 16; s++) {
        const uint8_t code = q[(s / 4) * FT_NVFP4_BLOCK_BYTES + s % 4];
        const double u = ue4m3_def(code);
        double amax = 0;
        for (int j = 0; j < 16; j++)
            amax = fmax(amax, fabs(x[s * 16 + j]));
        assert_true(fabs(u - amax / 6) <= 0x1.0p-4 * amax / 6 * (1 + 1e-6));
        for (int j = 0; j < 16; j++)
            check_fp4_elem(x[s * 16 + j], y[s * 16 + j], u);
    }
    free(x);
    free(y);
    free(q);
}

static void test_quant_fp8(void **state)
{
    (void)state;
    enum { N = 128 * 256 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    uint8_t *q = malloc(N / 128 * FT_FP8_BLOCK_BYTES);
    assert_true(x && y && q);
    fill_blocks(x, N, 128, -40, 40);
    ft_quantize_row_fp8(x, q, N);
    ft_dequantize_row_fp8(q, y, N);
    for (uint32_t b = 0; b < N / 128; b++) {
        float d;
        memcpy(&d, q + b * FT_FP8_BLOCK_BYTES, 4);
        double amax = 0;
        for (int j = 0; j < 128; j++)
            amax = fmax(amax, fabs(x[b * 128 + j]));
        assert_true(fabs((double)d - amax / 448) <= 1e-7 * amax / 448);
        for (int j = 0; j < 128; j++) {
            const double xv = x[b * 128 + j], err = fabs((double)y[b * 128 + j] - xv);
            const double bound = fmax(0x1.0p-4 * fabs(xv), 0x1.0p-10 * d) * (1 + 1e-6);
            if (err > bound) {
                fprintf(stderr, "fp8: x %.9g -> %.9g, d %.9g: error %.3g > %.3g\n", xv,
                        (double)y[b * 128 + j], (double)d, err, bound);
                fail();
            }
        }
    }
    free(x);
    free(y);
    free(q);
}

/* Infinities, NaNs, and magnitudes at float32's ends: ggml leaves some of
 * these undefined (casts out of range); here they must be defined (UBSan
 * checks) and keep finite elements of other blocks untouched. */
static void test_quant_hostile_values(void **state)
{
    (void)state;
    enum { N = 256 };
    float x[N], y[N];
    uint8_t q[N * 2];
    const float specials[] = {INFINITY, -INFINITY, NAN, 3e38f, -3e38f, 1e-45f, 1e-40f, 0.0f};
    for (int i = 0; i < N; i++)
        x[i] = i < 128 ? specials[i % 8] : 6.0f;
    const ft_dtype_t fmts[] = {FT_DTYPE_MXFP4, FT_DTYPE_NVFP4, FT_DTYPE_FP8, FT_DTYPE_F8_E4M3};
    for (size_t f = 0; f < sizeof(fmts) / sizeof(fmts[0]); f++) {
        ft_quantize_row(fmts[f], x, q, N);
        ft_dequantize_row(fmts[f], q, y, N);
        for (int i = 128; i < N; i++) /* the blocks of sixes come back (FP8: within 2^-4) */
            assert_true(fabsf(y[i] - 6.0f) <= 6.0f * 0x1.0p-4f);
    }
    /* Blocks of tiny values only: MXFP4's exponent clamps at 0. */
    for (int i = 0; i < 32; i++)
        x[i] = 1e-44f;
    ft_quantize_row_mxfp4(x, q, 32);
    assert_int_equal(q[0], 0);
}

/* ---- dot products ----------------------------------------------------- */

static void check_matmul(ft_dtype_t fmt)
{
    enum { ROWS = 7, COLS = 1024, TOK = 3 };
    uint64_t rb;
    assert_true(ft_dtype_row_bytes(fmt, COLS, &rb));
    float *w = malloc(sizeof(float) * ROWS * COLS), *x = malloc(sizeof(float) * TOK * COLS);
    float *wd = malloc(sizeof(float) * COLS), *xd = malloc(sizeof(float) * COLS);
    uint8_t *wq = malloc(rb * ROWS);
    void *xp = malloc(ft_cpu_act_row_bytes(fmt, COLS) * TOK);
    float y[TOK * ROWS];
    assert_true(w && x && wd && xd && wq && xp);
    fill_blocks(w, ROWS * COLS, 64, -6, 1);
    for (int i = 0; i < TOK * COLS; i++)
        x[i] = (float)rnd_normal();
    for (int r = 0; r < ROWS; r++)
        ft_quantize_row(fmt, w + r * COLS, wq + r * rb, COLS);
    ft_cpu_act_prepare(fmt, x, COLS, TOK, COLS, xp);
    ft_cpu_matmul(fmt, wq, rb, xp, TOK, COLS, 0, ROWS, y, ROWS);
    const size_t xrb = ft_cpu_act_row_bytes(fmt, COLS);
    for (int t = 0; t < TOK; t++) {
        /* the activation the kernel sees: Q8_0-rounded or float32 */
        ft_dequantize_row(ft_cpu_act_type(fmt), (const uint8_t *)xp + t * xrb, xd, COLS);
        for (int r = 0; r < ROWS; r++) {
            ft_cpu_dequantize_row(fmt, wq + r * rb, wd, COLS);
            double ref = 0, mag = 0;
            for (int i = 0; i < COLS; i++) {
                ref += (double)wd[i] * xd[i];
                mag += fabs((double)wd[i] * xd[i]);
            }
            /* the fastest tier through ft_cpu_matmul, and the portable one */
            const float yp =
                ft_cpu_dot_for(fmt, 1)(COLS, wq + r * rb, (const uint8_t *)xp + t * xrb);
            const double err = fmax(fabs((double)y[t * ROWS + r] - ref), fabs((double)yp - ref));
            if (err > 1e-5 * mag) {
                fprintf(stderr, "%s: row %d token %d: %.9g and %.9g vs %.9g (scale %.3g)\n",
                        ft_dtype_name(fmt), r, t, (double)y[t * ROWS + r], (double)yp, ref, mag);
                fail();
            }
        }
    }
    assert_true(ft_cpu_supports(fmt));
    free(w);
    free(x);
    free(wd);
    free(xd);
    free(wq);
    free(xp);
}

static void test_matmul_mxfp4(void **state)
{
    (void)state;
    assert_int_equal(ft_cpu_act_type(FT_DTYPE_MXFP4), FT_DTYPE_Q8_0);
    check_matmul(FT_DTYPE_MXFP4);
}

static void test_matmul_nvfp4(void **state)
{
    (void)state;
    assert_int_equal(ft_cpu_act_type(FT_DTYPE_NVFP4), FT_DTYPE_Q8_0);
    check_matmul(FT_DTYPE_NVFP4);
}

static void test_matmul_fp8(void **state)
{
    (void)state;
    assert_int_equal(ft_cpu_act_type(FT_DTYPE_FP8), FT_DTYPE_F32);
    check_matmul(FT_DTYPE_FP8);
}

/* ---- table and GGUF import -------------------------------------------- */

static void test_dtype_table(void **state)
{
    (void)state;
    assert_int_equal(ft_dtype_from_ggml(39), FT_DTYPE_MXFP4);
    assert_int_equal(ft_dtype_from_ggml(40), FT_DTYPE_NVFP4);
    assert_int_equal(ft_dtype_from_name("fp8"), FT_DTYPE_FP8);
    assert_int_equal(ft_dtype_from_safetensors("F8_E4M3"), FT_DTYPE_F8_E4M3);
    uint64_t b;
    assert_true(ft_dtype_row_bytes(FT_DTYPE_MXFP4, 64, &b) && b == 34);
    assert_true(ft_dtype_row_bytes(FT_DTYPE_NVFP4, 128, &b) && b == 72);
    assert_true(ft_dtype_row_bytes(FT_DTYPE_FP8, 256, &b) && b == 264);
    assert_false(ft_dtype_row_bytes(FT_DTYPE_NVFP4, 32, &b));
    assert_false(ft_dtype_row_bytes(FT_DTYPE_FP8, 64, &b));
}

/* An MXFP4 tensor of 48 columns (not whole blocks of 32): the error names
 * the tensor and the byte offset of its info. */
static void test_gguf_mxfp4_bad_shape(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof(path), "%s/bad_mxfp4.gguf", ft_test_tmpdir("quants_fp"));
    ft_gguf_writer_t *w;
    assert_null(ft_gguf_writer_create(path, 0, &w));
    assert_null(ft_gguf_writer_add_string(w, "general.architecture", "qwen3moe"));
    const uint64_t ne[2] = {48, 2};
    assert_null(ft_gguf_writer_add_tensor(w, "blk.0.ffn_down_exps.weight", 39, 2, ne, 51));
    assert_null(ft_gguf_writer_write_header(w));
    uint8_t zeros[51] = {0};
    assert_null(ft_gguf_writer_write_data(w, zeros, sizeof(zeros)));
    assert_null(ft_gguf_writer_close(w));
    ft_src_model_t *src = NULL;
    ft_status_t st = ft_gguf_import(path, &src);
    assert_non_null(st);
    const char *msg = ft_status_message(st);
    print_message("%s\n", msg);
    assert_int_equal(ft_status_code(st), FT_STATUS_FORMAT);
    assert_non_null(strstr(msg, "blk.0.ffn_down_exps.weight"));
    assert_non_null(strstr(msg, "byte"));
    assert_non_null(strstr(msg, "mxfp4"));
    assert_non_null(strstr(msg, "48"));
    ft_status_free(st);
    assert_null(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_mxfp4),
        cmocka_unit_test(test_decode_nvfp4),
        cmocka_unit_test(test_e4m3_codes),
        cmocka_unit_test(test_plain_f8_rows),
        cmocka_unit_test(test_quant_mxfp4),
        cmocka_unit_test(test_quant_nvfp4),
        cmocka_unit_test(test_quant_fp8),
        cmocka_unit_test(test_quant_hostile_values),
        cmocka_unit_test(test_matmul_mxfp4),
        cmocka_unit_test(test_matmul_nvfp4),
        cmocka_unit_test(test_matmul_fp8),
        cmocka_unit_test(test_dtype_table),
        cmocka_unit_test(test_gguf_mxfp4_bad_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
