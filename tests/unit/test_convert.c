/* fp16 / bf16 / Q8_0 conversions against known bit patterns, the
 * compiler's own _Float16 (IEEE round to nearest even) where available, and
 * round trips. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/format/convert.h"

#include <float.h>
#include <math.h>
#include <string.h>

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void test_fp16_edges(void **state)
{
    (void)state;
    assert_int_equal(ft_fp32_to_fp16(0.0f), 0x0000);
    assert_int_equal(ft_fp32_to_fp16(-0.0f), 0x8000);
    assert_int_equal(ft_fp32_to_fp16(1.0f), 0x3c00);
    assert_int_equal(ft_fp32_to_fp16(-2.0f), 0xc000);
    assert_int_equal(ft_fp32_to_fp16(65504.0f), 0x7bff);  /* max */
    assert_int_equal(ft_fp32_to_fp16(65519.99f), 0x7bff); /* below the midpoint to inf */
    assert_int_equal(ft_fp32_to_fp16(65520.0f), 0x7c00);  /* tie rounds to even = inf */
    assert_int_equal(ft_fp32_to_fp16(1e6f), 0x7c00);
    assert_int_equal(ft_fp32_to_fp16(-1e6f), 0xfc00);
    assert_int_equal(ft_fp32_to_fp16(INFINITY), 0x7c00);
    assert_int_equal(ft_fp32_to_fp16(-INFINITY), 0xfc00);
    /* Subnormals: 2^-24 is the smallest, 2^-14 - 2^-24 the largest. */
    assert_int_equal(ft_fp32_to_fp16(0x1.0p-24f), 0x0001);
    assert_int_equal(ft_fp32_to_fp16(0x1.ff8p-15f), 0x03ff);
    assert_int_equal(ft_fp32_to_fp16(0x1.0p-14f), 0x0400);
    assert_int_equal(ft_fp32_to_fp16(0x1.0p-25f), 0x0000);      /* tie to even: 0 */
    assert_int_equal(ft_fp32_to_fp16(0x1.8p-24f), 0x0002);      /* 1.5 ulp: tie to even 2 */
    assert_int_equal(ft_fp32_to_fp16(0x1.000002p-25f), 0x0001); /* above the tie */
    /* Ties to even among normals: 1 + 2^-11 is halfway between 1 and 1+2^-10. */
    assert_int_equal(ft_fp32_to_fp16(1.0f + 0x1.0p-11f), 0x3c00);
    assert_int_equal(ft_fp32_to_fp16(1.0f + 3 * 0x1.0p-11f), 0x3c02);
    assert_int_equal(ft_fp32_to_fp16(1.0f + 0x1.0p-11f + 0x1.0p-20f), 0x3c01);
    /* NaN: ggml writes the quiet NaN 0x7e00 and keeps the sign. */
    assert_int_equal(ft_fp32_to_fp16(NAN), 0x7e00);
    assert_int_equal(ft_fp32_to_fp16(-NAN), 0xfe00);
    assert_true(isnan(ft_fp16_to_fp32(0x7e00)));
    assert_true(isnan(ft_fp16_to_fp32(0x7c01)));
    /* fp16 -> fp32 */
    assert_int_equal(bits_of(ft_fp16_to_fp32(0x8000)), 0x80000000u);
    assert_true(ft_fp16_to_fp32(0x7bff) == 65504.0f);
    assert_true(ft_fp16_to_fp32(0x0001) == 0x1.0p-24f);
    assert_true(ft_fp16_to_fp32(0x03ff) == 0x1.ff8p-15f);
    assert_true(ft_fp16_to_fp32(0x7c00) == INFINITY);
    assert_true(ft_fp16_to_fp32(0xfc00) == -INFINITY);
    assert_true(ft_fp16_to_fp32(0x3555) == 0x1.554p-2f);
}

/* Every fp16 value decodes and re-encodes to itself; NaNs stay NaN. */
static void test_fp16_exhaustive_round_trip(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        const float f = ft_fp16_to_fp32((uint16_t)h);
        const int is_nan = (h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0;
        if (is_nan) {
            assert_true(isnan(f));
            assert_true(isnan(ft_fp16_to_fp32(ft_fp32_to_fp16(f))));
            continue;
        }
        assert_int_equal(ft_fp32_to_fp16(f), h);
#ifdef __FLT16_MAX__
        _Float16 ref;
        const uint16_t hh = (uint16_t)h;
        memcpy(&ref, &hh, 2);
        assert_int_equal(bits_of((float)ref), bits_of(f));
#endif
    }
}

#ifdef __FLT16_MAX__
static void check_ieee(uint32_t u)
{
    const float f = float_of(u);
    if (isnan(f)) return;
    const _Float16 ref = (_Float16)f;
    uint16_t rb;
    memcpy(&rb, &ref, 2);
    if (ft_fp32_to_fp16(f) != rb)
        fail_msg("fp32 0x%08x: got 0x%04x, IEEE 0x%04x", (unsigned)u, ft_fp32_to_fp16(f), rb);
}

/* fp32 -> fp16 against the compiler's IEEE conversion: a sweep of bit
 * patterns (every 1009th float hits every exponent), plus every midpoint
 * between adjacent fp16 values and the floats either side of it. */
static void test_fp16_matches_ieee(void **state)
{
    (void)state;
    for (uint64_t u = 0; u <= 0xffffffffu; u += 1009)
        check_ieee((uint32_t)u);
    for (uint32_t h = 0; h < 0x7c00; h++) {
        const double lo = ft_fp16_to_fp32((uint16_t)h);
        const double hi = h + 1 < 0x7c00 ? ft_fp16_to_fp32((uint16_t)(h + 1)) : 65536.0;
        const uint32_t mid = bits_of((float)((lo + hi) / 2)); /* exact in float */
        for (uint32_t d = 0; d < 3; d++) {
            check_ieee(mid - 1 + d);
            check_ieee((mid - 1 + d) | 0x80000000u);
        }
    }
}
#endif

static void test_bf16_edges(void **state)
{
    (void)state;
    assert_int_equal(ft_fp32_to_bf16(0.0f), 0x0000);
    assert_int_equal(ft_fp32_to_bf16(-0.0f), 0x8000);
    assert_int_equal(ft_fp32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(ft_fp32_to_bf16(INFINITY), 0x7f80);
    assert_int_equal(ft_fp32_to_bf16(-INFINITY), 0xff80);
    /* Largest finite float rounds up to inf (as torch). */
    assert_int_equal(ft_fp32_to_bf16(FLT_MAX), 0x7f80);
    assert_int_equal(ft_fp32_to_bf16(float_of(0x7f7f7fffu)), 0x7f7f);
    /* Ties to even: 0x3f808000 is halfway between 0x3f80 and 0x3f81. */
    assert_int_equal(ft_fp32_to_bf16(float_of(0x3f808000u)), 0x3f80);
    assert_int_equal(ft_fp32_to_bf16(float_of(0x3f818000u)), 0x3f82);
    assert_int_equal(ft_fp32_to_bf16(float_of(0x3f808001u)), 0x3f81);
    /* Subnormals round like normals. */
    assert_int_equal(ft_fp32_to_bf16(float_of(0x00008000u)), 0x0000);
    assert_int_equal(ft_fp32_to_bf16(float_of(0x00018000u)), 0x0002);
    assert_int_equal(ft_fp32_to_bf16(float_of(0x00010001u)), 0x0001);
    /* NaN stays NaN, even a payload that truncation would turn into inf. */
    assert_int_equal(ft_fp32_to_bf16(float_of(0x7f800001u)), 0x7fc0);
    assert_int_equal(ft_fp32_to_bf16(float_of(0xffc00000u)), 0xffc0);
    assert_true(isnan(ft_bf16_to_fp32(ft_fp32_to_bf16(NAN))));
    assert_int_equal(bits_of(ft_bf16_to_fp32(0x3f80)), 0x3f800000u);
    assert_int_equal(bits_of(ft_bf16_to_fp32(0x8001)), 0x80010000u);
    for (uint32_t h = 0; h < 65536; h++) {
        const float f = ft_bf16_to_fp32((uint16_t)h);
        if (isnan(f))
            assert_true(isnan(ft_bf16_to_fp32(ft_fp32_to_bf16(f))));
        else
            assert_int_equal(ft_fp32_to_bf16(f), h);
    }
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float rng_float(uint64_t *s, float scale)
{
    return ((float)(rng_next(s) >> 40) / (float)(1 << 24) * 2.0f - 1.0f) * scale;
}

static void test_q8_0_round_trip(void **state)
{
    (void)state;
    enum { N = 32 * 64 };
    float x[N], y[N];
    uint8_t q[N / 32 * 34];
    uint64_t s = 1;
    for (int i = 0; i < N; i++)
        x[i] = rng_float(&s, (float)(1 + i / 32)); /* a different range per block */
    ft_quantize_row_q8_0(x, q, N);
    ft_dequantize_row_q8_0(q, y, N);
    for (int b = 0; b < N / 32; b++) {
        float amax = 0;
        for (int j = 0; j < 32; j++)
            amax = fmaxf(amax, fabsf(x[b * 32 + j]));
        uint16_t dh;
        memcpy(&dh, q + b * 34, 2);
        assert_int_equal(dh, ft_fp32_to_fp16(amax / 127.0f));
        const float d = ft_fp16_to_fp32(dh);
        for (int j = 0; j < 32; j++) {
            const float err = fabsf(x[b * 32 + j] - y[b * 32 + j]);
            /* half a step, plus what the fp16 rounding of d adds at |q|=127 */
            const float bound = d / 2 + 127 * fabsf(d - amax / 127.0f) + 1e-6f;
            if (err > bound) fail_msg("block %d elem %d: error %g > %g", b, j, err, bound);
        }
    }
    /* The element holding amax maps to +-127 exactly. */
    float z[32] = {0};
    z[5] = -3.0f;
    z[6] = 1.5f;
    ft_quantize_row_q8_0(z, q, 32);
    assert_int_equal((int8_t)q[2 + 5], -127);
    assert_int_equal((int8_t)q[2 + 6], 64); /* roundf(63.5) rounds away from zero */
    assert_int_equal((int8_t)q[2 + 0], 0);
}

static void test_q8_0_zero_block(void **state)
{
    (void)state;
    float x[64] = {0}, y[64];
    uint8_t q[68];
    memset(q, 0xaa, sizeof(q));
    x[40] = 0.25f; /* second block non-zero */
    ft_quantize_row_q8_0(x, q, 64);
    assert_int_equal(q[0], 0);
    assert_int_equal(q[1], 0);
    for (int j = 0; j < 32; j++)
        assert_int_equal(q[2 + j], 0);
    ft_dequantize_row_q8_0(q, y, 64);
    for (int j = 0; j < 64; j++)
        assert_true(y[j] == (j == 40 ? ft_fp16_to_fp32(ft_fp32_to_fp16(0.25f / 127)) * 127 : 0.0f));
}

/* Converts a random row through every supported pair and checks the result
 * against converting element by element through f32. */
static void test_convert_row_pairs(void **state)
{
    (void)state;
    enum { N = 32 * 20 }; /* > one 256-element chunk, not a multiple of it */
    const ft_dtype_t types[] = {FT_DTYPE_F32, FT_DTYPE_F16, FT_DTYPE_BF16, FT_DTYPE_Q8_0};
    float x[N], ref_src[N], got[N];
    static uint8_t src[N * 4], dst[N * 4];
    uint64_t s = 7;
    for (int i = 0; i < N; i++)
        x[i] = rng_float(&s, 4.0f);
    for (int a = 0; a < 4; a++) {
        for (int b = 0; b < 4; b++) {
            const ft_dtype_t st = types[a], dt = types[b];
            assert_null(ft_convert_row(st, src, FT_DTYPE_F32, x, N));
            assert_null(ft_convert_row(FT_DTYPE_F32, ref_src, st, src, N));
            memset(dst, 0, sizeof(dst));
            assert_null(ft_convert_row(dt, dst, st, src, N));
            assert_null(ft_convert_row(FT_DTYPE_F32, got, dt, dst, N));
            /* expected: src values as f32, encoded to dt, decoded */
            static uint8_t expect[N * 4];
            float expect_f[N];
            if (dt == FT_DTYPE_Q8_0) {
                ft_quantize_row_q8_0(ref_src, expect, N);
                ft_dequantize_row_q8_0(expect, expect_f, N);
            } else {
                for (int i = 0; i < N; i++) {
                    expect_f[i] = dt == FT_DTYPE_F32 ? ref_src[i]
                                  : dt == FT_DTYPE_F16
                                      ? ft_fp16_to_fp32(ft_fp32_to_fp16(ref_src[i]))
                                      : ft_bf16_to_fp32(ft_fp32_to_bf16(ref_src[i]));
                }
            }
            if (memcmp(got, expect_f, sizeof(got)) != 0)
                fail_msg("convert %s -> %s differs from the element-wise path", ft_dtype_name(st),
                         ft_dtype_name(dt));
            if (st == dt) {
                uint64_t nb;
                assert_true(ft_dtype_row_bytes(st, N, &nb));
                assert_memory_equal(dst, src, nb);
            }
        }
    }
}

static void test_convert_row_errors(void **state)
{
    (void)state;
    float x[64] = {0};
    uint8_t out[256];
    ft_status_t st = ft_convert_row(FT_DTYPE_Q8_1, out, FT_DTYPE_F32, x, 64);
    assert_non_null(st);
    assert_int_equal(ft_status_code(st), FT_STATUS_UNSUPPORTED);
    assert_non_null(strstr(ft_status_message(st), "q8_1"));
    assert_non_null(strstr(ft_status_message(st), "f32"));
    ft_status_free(st);
    st = ft_convert_row(FT_DTYPE_F16, out, FT_DTYPE_I32, x, 4);
    assert_int_equal(ft_status_code(st), FT_STATUS_UNSUPPORTED);
    assert_non_null(strstr(ft_status_message(st), "i32"));
    ft_status_free(st);
    st = ft_convert_row(FT_DTYPE_Q8_0, out, FT_DTYPE_F32, x, 33);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp16_edges),
        cmocka_unit_test(test_fp16_exhaustive_round_trip),
#ifdef __FLT16_MAX__
        cmocka_unit_test(test_fp16_matches_ieee),
#endif
        cmocka_unit_test(test_bf16_edges),
        cmocka_unit_test(test_q8_0_round_trip),
        cmocka_unit_test(test_q8_0_zero_block),
        cmocka_unit_test(test_convert_row_pairs),
        cmocka_unit_test(test_convert_row_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
