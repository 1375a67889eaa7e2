/* The float64 reference's own dequantizer (tests/reference/ref_dequant.c)
 * against values known from the formats' definitions, against the
 * runtime's dequantizers on random blocks (two implementations written
 * apart: a layout misread by one is caught by the other), and against
 * the original data after the runtime's quantizers (so the two cannot
 * agree on a wrong layout either: the reference's reading of what the
 * runtime wrote must be close to what was quantized). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ref_dequant.h"

#include "../../runtime/format/convert.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_rng = 0x2545f4914f6cdd1dull;

static uint32_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}

/* A finite, normal f16 of moderate size (2^-10 .. 2^5), random sign. */
static void put_f16(uint8_t *p)
{
    const unsigned e = 5 + rnd() % 16, m = rnd() % 1024, s = rnd() & 1;
    const unsigned h = s << 15 | e << 10 | m;
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

/* An E4M3 byte that is not NaN. */
static uint8_t e4m3_byte(void)
{
    uint8_t x = (uint8_t)rnd();
    return (x & 0x7f) == 0x7f ? (uint8_t)(x - 1) : x;
}

/* Random bytes for a row of n elements of dt, with every scale and
 * minifloat field a finite value of moderate size. */
static void random_row(ft_dtype_t dt, uint8_t *p, uint64_t n)
{
    const uint64_t nb = ft_ref_row_bytes(dt, n);
    for (uint64_t i = 0; i < nb; i++)
        p[i] = (uint8_t)rnd();
    switch (dt) {
    case FT_DTYPE_F32:
        for (uint64_t i = 0; i < n; i++) {
            const float f = ((float)rnd() / 4294967296.0f - 0.5f) * 8;
            memcpy(p + 4 * i, &f, 4);
        }
        return;
    case FT_DTYPE_F16:
        for (uint64_t i = 0; i < n; i++)
            put_f16(p + 2 * i);
        return;
    case FT_DTYPE_BF16:
        for (uint64_t i = 0; i < n; i++)
            p[2 * i + 1] =
                (uint8_t)((p[2 * i + 1] & 0x80) | (0x30 + rnd() % 32)); /* exponent 96..159 */
        return;
    case FT_DTYPE_F8_E4M3:
        for (uint64_t i = 0; i < n; i++)
            p[i] = e4m3_byte();
        return;
    default:
        break;
    }
    uint32_t be = 0, bb = 0;
    for (be = 1; ft_ref_row_bytes(dt, be) == 0; be++) {
    }
    bb = (uint32_t)ft_ref_row_bytes(dt, be);
    for (uint8_t *b = p; b < p + nb; b += bb) {
        switch (dt) {
        case FT_DTYPE_Q4_0:
        case FT_DTYPE_Q5_0:
        case FT_DTYPE_Q8_0:
        case FT_DTYPE_IQ4_NL:
        case FT_DTYPE_IQ4_XS:
        case FT_DTYPE_IQ2_XXS:
        case FT_DTYPE_IQ2_XS:
        case FT_DTYPE_IQ2_S:
        case FT_DTYPE_IQ3_XXS:
        case FT_DTYPE_IQ3_S:
            put_f16(b);
            break;
        case FT_DTYPE_IQ1_S:
            put_f16(b);
            break;
        case FT_DTYPE_IQ1_M: { /* the fp16 d lives in the scales' top nibbles */
            uint8_t h[2];
            put_f16(h);
            const unsigned dh = (unsigned)h[0] | (unsigned)h[1] << 8;
            for (int i = 0; i < 4; i++)
                b[49 + 2 * i] = (uint8_t)((b[49 + 2 * i] & 0x0f) | ((dh >> 4 * i) & 15) << 4);
            break;
        }
        case FT_DTYPE_TQ1_0:
            put_f16(b + 52);
            break;
        case FT_DTYPE_TQ2_0:
            put_f16(b + 64);
            break;
        case FT_DTYPE_Q4_1:
        case FT_DTYPE_Q5_1:
        case FT_DTYPE_Q4_K:
        case FT_DTYPE_Q5_K:
            put_f16(b);
            put_f16(b + 2);
            break;
        case FT_DTYPE_Q2_K:
            put_f16(b + 80);
            put_f16(b + 82);
            break;
        case FT_DTYPE_Q3_K:
            put_f16(b + 108);
            break;
        case FT_DTYPE_Q6_K:
            put_f16(b + 208);
            break;
        case FT_DTYPE_MXFP4:
            b[0] = (uint8_t)(100 + rnd() % 50);
            break;
        case FT_DTYPE_NVFP4:
            for (int s = 0; s < 4; s++) {
                b[s] &= 0x7f;
                if (b[s] == 0x7f) b[s] = 0x7e;
            }
            break;
        case FT_DTYPE_FP8: {
            const float d = (float)(rnd() % 1000 + 1) / 4096.0f;
            memcpy(b, &d, 4);
            for (int j = 0; j < 128; j++)
                b[4 + j] = e4m3_byte();
            break;
        }
        default:
            break;
        }
    }
}

static const ft_dtype_t k_formats[] = {
    FT_DTYPE_F32,    FT_DTYPE_F16,   FT_DTYPE_BF16,    FT_DTYPE_F8_E4M3, FT_DTYPE_Q4_0,
    FT_DTYPE_Q4_1,   FT_DTYPE_Q5_0,  FT_DTYPE_Q5_1,    FT_DTYPE_Q8_0,    FT_DTYPE_Q2_K,
    FT_DTYPE_Q3_K,   FT_DTYPE_Q4_K,  FT_DTYPE_Q5_K,    FT_DTYPE_Q6_K,    FT_DTYPE_MXFP4,
    FT_DTYPE_NVFP4,  FT_DTYPE_FP8,   FT_DTYPE_IQ4_NL,  FT_DTYPE_IQ4_XS,  FT_DTYPE_IQ2_XXS,
    FT_DTYPE_IQ2_XS, FT_DTYPE_IQ2_S, FT_DTYPE_IQ3_XXS, FT_DTYPE_IQ3_S,   FT_DTYPE_TQ1_0,
    FT_DTYPE_TQ2_0,  FT_DTYPE_IQ1_S, FT_DTYPE_IQ1_M,
};
#define N_FORMATS (sizeof(k_formats) / sizeof(k_formats[0]))
enum { N = 1024 }; /* a multiple of every block */

/* The block sizes are the runtime's too. */
static void test_row_bytes(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_FORMATS; i++) {
        uint64_t rt = 0;
        assert_true(ft_dtype_row_bytes(k_formats[i], N, &rt));
        if (rt != ft_ref_row_bytes(k_formats[i], N))
            fail_msg("%s: %llu bytes for %d elements, the runtime says %llu",
                     ft_dtype_name(k_formats[i]),
                     (unsigned long long)ft_ref_row_bytes(k_formats[i], N), N,
                     (unsigned long long)rt);
    }
    assert_int_equal(ft_ref_row_bytes(FT_DTYPE_Q4_K, 100), 0);
    double y[32];
    ft_status_t st = ft_ref_dequant_row(FT_DTYPE_Q8_1, (const uint8_t *)"", 32, y);
    assert_int_equal(ft_status_code(st), FT_STATUS_UNSUPPORTED);
    ft_status_free(st);
}

/* Values from the definitions, by hand. */
static void test_known_values(void **state)
{
    (void)state;
    double y[256];
    /* f16: 1.0, the smallest subnormal 2^-24, -2.5, 65504. */
    const uint8_t f16[] = {0x00, 0x3c, 0x01, 0x00, 0x00, 0xc1, 0xff, 0x7b};
    assert_null(ft_ref_dequant_row(FT_DTYPE_F16, f16, 4, y));
    assert_true(y[0] == 1.0 && y[1] == ldexp(1, -24) && y[2] == -2.5 && y[3] == 65504.0);
    /* bf16: 1.0, -3.0. */
    const uint8_t bf16[] = {0x80, 0x3f, 0x40, 0xc0};
    assert_null(ft_ref_dequant_row(FT_DTYPE_BF16, bf16, 2, y));
    assert_true(y[0] == 1.0 && y[1] == -3.0);
    /* E4M3: 1.0, 448 (largest), 2^-9 (smallest subnormal), -0.875 (subnormal 7 * 2^-9 is
     * 0x07: 7/512), NaN. */
    const uint8_t e4[] = {0x38, 0x7e, 0x01, 0x87, 0x7f};
    assert_null(ft_ref_dequant_row(FT_DTYPE_F8_E4M3, e4, 5, y));
    assert_true(y[0] == 1.0 && y[1] == 448.0 && y[2] == ldexp(1, -9) && y[3] == -7.0 / 512 &&
                isnan(y[4]));
    /* q8_0: d = 0.5 (f16 0x3800), q_j = j - 16: x_j = (j - 16) / 2. */
    uint8_t q8[34] = {0x00, 0x38};
    for (int j = 0; j < 32; j++)
        q8[2 + j] = (uint8_t)(int8_t)(j - 16);
    assert_null(ft_ref_dequant_row(FT_DTYPE_Q8_0, q8, 32, y));
    for (int j = 0; j < 32; j++)
        assert_true(y[j] == (j - 16) * 0.5);
    /* q4_0: d = 2, byte j = j | (15 - j) << 4: x_j = 2 (j - 8), x_{j+16} = 2 (7 - j). */
    uint8_t q4[18] = {0x00, 0x40};
    for (int j = 0; j < 16; j++)
        q4[2 + j] = (uint8_t)(j | (15 - j) << 4);
    assert_null(ft_ref_dequant_row(FT_DTYPE_Q4_0, q4, 32, y));
    for (int j = 0; j < 16; j++)
        assert_true(y[j] == 2.0 * (j - 8) && y[j + 16] == 2.0 * (7 - j));
    /* q5_0: d = 1, the fifth bit set for even elements: x_j = (j % 16 | 16 (j even)) - 16. */
    uint8_t q5[22] = {0x00, 0x3c, 0x55, 0x55, 0x55, 0x55};
    for (int j = 0; j < 16; j++)
        q5[6 + j] = (uint8_t)(j | j << 4);
    assert_null(ft_ref_dequant_row(FT_DTYPE_Q5_0, q5, 32, y));
    for (int j = 0; j < 32; j++)
        assert_true(y[j] == (double)((j % 16) | (j % 2 == 0 ? 16 : 0)) - 16);
    /* mxfp4: scale 2^(129 - 127) = 4; E2M1 codes 0..15 in the low nibbles, 15 - j high:
     * 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives, times 4. */
    static const double e2m1[16] = {0,    0.5,  1,  1.5,  2,  3,  4,  6,
                                    -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
    uint8_t mx[17] = {129};
    for (int j = 0; j < 16; j++)
        mx[1 + j] = (uint8_t)(j | (15 - j) << 4);
    assert_null(ft_ref_dequant_row(FT_DTYPE_MXFP4, mx, 32, y));
    for (int j = 0; j < 16; j++)
        assert_true(y[j] == 4 * e2m1[j] && y[j + 16] == 4 * e2m1[15 - j]);
    /* nvfp4: sub-block scales 1.0 (0x38), 0.5 (0x30), 0x7f (NaN: 0), 2^-9 (0x01); every
     * byte 0x71: low nibble 1 (0.5), high 7 (6). */
    uint8_t nv[36] = {0x38, 0x30, 0x7f, 0x01};
    memset(nv + 4, 0x71, 32);
    assert_null(ft_ref_dequant_row(FT_DTYPE_NVFP4, nv, 64, y));
    const double nvs[4] = {1.0, 0.5, 0.0, ldexp(1, -9)};
    for (int s = 0; s < 4; s++)
        for (int j = 0; j < 8; j++)
            assert_true(y[16 * s + j] == 0.5 * nvs[s] && y[16 * s + 8 + j] == 6 * nvs[s]);
    /* fp8: d = 0.25, E4M3 1.0 everywhere but -448 in element 127. */
    uint8_t f8[132];
    const float d = 0.25f;
    memcpy(f8, &d, 4);
    memset(f8 + 4, 0x38, 128);
    f8[131] = 0xfe;
    assert_null(ft_ref_dequant_row(FT_DTYPE_FP8, f8, 128, y));
    assert_true(y[0] == 0.25 && y[126] == 0.25 && y[127] == -112.0);
    /* q6_k: d = 1, scales 1..16, ql all 0x21, qh all 0xe4 (bits 00, 01, 10, 11 for
     * the four quarters): quarter k of a half has q = (lo | k << 4) - 32, lo 1 for
     * quarters 0 and 1 (low nibbles), 2 for 2 and 3 (high nibbles). */
    uint8_t q6[210];
    memset(q6, 0x21, 128);
    memset(q6 + 128, 0xe4, 64);
    for (int i = 0; i < 16; i++)
        q6[192 + i] = (uint8_t)(i + 1);
    q6[208] = 0x00;
    q6[209] = 0x3c;
    assert_null(ft_ref_dequant_row(FT_DTYPE_Q6_K, q6, 256, y));
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++)
            for (int l = 0; l < 32; l++) {
                const int lo = k < 2 ? 1 : 2, sc = h * 8 + l / 16 + 2 * k + 1;
                assert_true(y[h * 128 + 32 * k + l] == (double)sc * ((lo | k << 4) - 32));
            }
}

/* The runtime's dequantizer gives the same values (to float32's rounding
 * of the formats whose values take more than 24 bits). */
static void test_matches_runtime(void **state)
{
    (void)state;
    uint8_t *src = malloc(ft_ref_row_bytes(FT_DTYPE_F32, N));
    double *ref = malloc(N * sizeof(double));
    float *rt = malloc(N * sizeof(float));
    assert_non_null(src);
    for (size_t i = 0; i < N_FORMATS; i++) {
        const ft_dtype_t dt = k_formats[i];
        for (int rep = 0; rep < 20; rep++) {
            random_row(dt, src, N);
            assert_null(ft_ref_dequant_row(dt, src, N, ref));
            assert_null(ft_convert_row(FT_DTYPE_F32, rt, dt, src, N));
            double max = 0;
            for (int j = 0; j < N; j++)
                max = fmax(max, fabs(ref[j]));
            for (int j = 0; j < N; j++)
                if (!(fabs(ref[j] - rt[j]) <= 1e-6 * max))
                    fail_msg("%s, row %d, element %d: the reference reads %.9g, the runtime %.9g",
                             ft_dtype_name(dt), rep, j, ref[j], (double)rt[j]);
        }
    }
    free(src);
    free(ref);
    free(rt);
}

/* What the runtime's quantizer wrote, as the reference reads it, is close
 * to the data quantized (relative RMS error under each format's bound). */
static void test_reads_what_was_quantized(void **state)
{
    (void)state;
    static const struct {
        ft_dtype_t dt;
        double bound;
    } k_bounds[] = {
        {FT_DTYPE_F16, 1e-3},   {FT_DTYPE_BF16, 5e-3},  {FT_DTYPE_Q8_0, 0.01},
        {FT_DTYPE_Q6_K, 0.02},  {FT_DTYPE_Q5_0, 0.04},  {FT_DTYPE_Q5_1, 0.04},
        {FT_DTYPE_Q5_K, 0.04},  {FT_DTYPE_Q4_0, 0.08},  {FT_DTYPE_Q4_1, 0.08},
        {FT_DTYPE_Q4_K, 0.08},  {FT_DTYPE_Q3_K, 0.16},  {FT_DTYPE_Q2_K, 0.35},
        {FT_DTYPE_MXFP4, 0.15}, {FT_DTYPE_NVFP4, 0.12}, {FT_DTYPE_FP8, 0.05},
    };
    float *x = malloc(N * sizeof(float));
    uint8_t *q = malloc(ft_ref_row_bytes(FT_DTYPE_F32, N));
    double *y = malloc(N * sizeof(double));
    for (int j = 0; j < N; j++) /* smooth, with a spread of magnitudes and signs */
        x[j] = (float)(sin(0.37 * j) * (1.0 + 0.5 * cos(0.011 * j)) + 0.1 * sin(3.1 * j));
    double norm = 0;
    for (int j = 0; j < N; j++)
        norm += (double)x[j] * x[j];
    for (size_t i = 0; i < sizeof(k_bounds) / sizeof(k_bounds[0]); i++) {
        const ft_dtype_t dt = k_bounds[i].dt;
        assert_null(ft_convert_row(dt, q, FT_DTYPE_F32, x, N));
        assert_null(ft_ref_dequant_row(dt, q, N, y));
        double err = 0;
        for (int j = 0; j < N; j++)
            err += (y[j] - x[j]) * (y[j] - x[j]);
        const double rel = sqrt(err / norm);
        print_message("%-6s relative RMS error %.5f (bound %.3f)\n", ft_dtype_name(dt), rel,
                      k_bounds[i].bound);
        if (!(rel < k_bounds[i].bound))
            fail_msg("%s: the reference reads the quantized row with relative RMS error %.4f",
                     ft_dtype_name(dt), rel);
    }
    free(x);
    free(q);
    free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row_bytes),
        cmocka_unit_test(test_known_values),
        cmocka_unit_test(test_matches_runtime),
        cmocka_unit_test(test_reads_what_was_quantized),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
