/* Q4_0, Q4_K, Q6_K and Q8_K (runtime/format/quant_q4_0.c, quant_k.c):
 * hand-computed known answers where ggml's algorithm makes them easy,
 * all-zero and constant blocks, per-element error bounds on random data
 * (each bound derived in the comment above its check), hostile values
 * (inf, NaN, huge) that must not crash, and ft_convert_row across every
 * pair of row formats. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/format/convert.h"

#include <float.h>
#include <math.h>
#include <string.h>

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static float rng_uniform(uint64_t *s) /* [-1, 1) */
{
    return (float)((double)(rng_next(s) >> 11) * 0x1.0p-52 - 1.0);
}

/* Roughly Gaussian (sum of four uniforms), with an occasional outlier as
 * real weight rows have. */
static float rng_weight(uint64_t *s)
{
    float v = rng_uniform(s) + rng_uniform(s) + rng_uniform(s) + rng_uniform(s);
    if (rng_next(s) % 97 == 0)
        v *= 8.0f;
    return v * 0.05f;
}

static uint16_t le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

/* q4_0 of the ramp -16..15: the largest magnitude is -16, so d = -16/-8 =
 * 2 and id = 0.5; q_j = trunc((j - 16) * 0.5 + 8.5) = floor((j + 1) / 2),
 * capped at 15 (j = 31 would give 16). */
static void test_q4_0_ramp_known_answer(void **state)
{
    (void)state;
    float x[32], y[32];
    uint8_t blk[FT_Q4_0_BLOCK_BYTES];
    for (int j = 0; j < 32; j++)
        x[j] = (float)(j - 16);
    ft_quantize_row_q4_0(x, blk, 32);
    assert_int_equal(le16(blk), 0x4000); /* fp16 2.0 */
    for (int j = 0; j < 16; j++) {
        const int lo = (j + 1) / 2, hi = (j + 16 + 1) / 2 > 15 ? 15 : (j + 16 + 1) / 2;
        assert_int_equal(blk[2 + j], lo | (hi << 4));
    }
    ft_dequantize_row_q4_0(blk, y, 32);
    for (int j = 0; j < 32; j++) {
        const int q = (j + 1) / 2 > 15 ? 15 : (j + 1) / 2;
        assert_true(y[j] == (float)((q - 8) * 2));
    }
    /* A positive maximum flips the sign of d: 0..31 has max 31, d = -3.875. */
    for (int j = 0; j < 32; j++)
        x[j] = (float)j;
    ft_quantize_row_q4_0(x, blk, 32);
    assert_int_equal(le16(blk), ft_fp32_to_fp16(-3.875f));
    assert_int_equal(blk[2 + 15] >> 4, 0); /* x = 31 -> level 0 -> -8 * d = 31 */
    ft_dequantize_row_q4_0(blk, y, 32);
    assert_true(y[31] == 31.0f);
}

/* q8_K of the ramp -128..127: max = -128, iscale = -127 / -128, so q_j =
 * nearest(0.9921875 * (j - 128)), d = 1 / iscale = 128 / 127 (a float), and
 * bsums are the sums of 16 consecutive q. */
static void test_q8_k_known_answer(void **state)
{
    (void)state;
    float x[256], y[256];
    uint8_t blk[FT_Q8_K_BLOCK_BYTES];
    for (int j = 0; j < 256; j++)
        x[j] = (float)(j - 128);
    ft_quantize_row_q8_k(x, blk, 256);
    float d;
    memcpy(&d, blk, 4);
    assert_true(d == 1.0f / (-127.0f / -128.0f));
    int8_t q[256];
    memcpy(q, blk + 4, 256);
    assert_int_equal(q[0], -127);
    assert_int_equal(q[128], 0);
    assert_int_equal(q[255], 126); /* 127 * 0.9921875 = 126.0078 */
    for (int j = 0; j < 256; j++)
        assert_int_equal(q[j], (int)rintf(0.9921875f * (float)(j - 128)));
    for (int g = 0; g < 16; g++) {
        int16_t bs;
        memcpy(&bs, blk + 4 + 256 + 2 * g, 2);
        int sum = 0;
        for (int i = 0; i < 16; i++)
            sum += q[16 * g + i];
        assert_int_equal(bs, sum);
    }
    ft_dequantize_row_q8_k(blk, y, 256);
    for (int j = 0; j < 256; j++)
        assert_true(y[j] == d * q[j]);
}

/* Constant rows. q6_K of 1.0: every group of 16 gets scale 1/32 (level -32
 * -> stored 0, so the fitted scale is -1/32), the super-block scale is
 * 1 / (-128 / (-1/32)) = 2^-12 (exact in fp16, 0x0c00) with int8 scales
 * -128, and 1.0 comes back exactly. q4_0 of
 * 1.0: d = -1/8, level 0, exact. q4_K of 1.0: every element lands on one
 * level; the value comes back within the fp16 rounding of the scales. */
static void test_constant_blocks(void **state)
{
    (void)state;
    float x[512], y[512];
    uint8_t buf[2 * FT_Q4_K_BLOCK_BYTES + 2 * FT_Q6_K_BLOCK_BYTES];
    for (int j = 0; j < 512; j++)
        x[j] = 1.0f;
    ft_quantize_row_q6_k(x, buf, 512);
    for (int b = 0; b < 2; b++) {
        const uint8_t *blk = buf + b * FT_Q6_K_BLOCK_BYTES;
        assert_int_equal(le16(blk + 208), 0x0c00);
        for (int i = 0; i < 16; i++)
            assert_int_equal(blk[192 + i], 0x80);
        for (int i = 0; i < 192; i++)
            assert_int_equal(blk[i], 0);
    }
    ft_dequantize_row_q6_k(buf, y, 512);
    for (int j = 0; j < 512; j++)
        assert_true(y[j] == 1.0f);

    ft_quantize_row_q4_0(x, buf, 64);
    ft_dequantize_row_q4_0(buf, y, 64);
    for (int j = 0; j < 64; j++)
        assert_true(y[j] == 1.0f);

    for (int j = 0; j < 512; j++)
        x[j] = -0.75f;
    ft_quantize_row_q4_k(x, buf, 512);
    ft_dequantize_row_q4_k(buf, y, 512);
    for (int j = 0; j < 512; j++)
        assert_true(fabsf(y[j] - x[j]) <= 0.75f * 0x1.0p-9f);
    for (int j = 0; j < 512; j++)
        x[j] = 3.0f;
    ft_quantize_row_q4_k(x, buf, 512);
    ft_dequantize_row_q4_k(buf, y, 512);
    for (int j = 0; j < 512; j++)
        assert_true(fabsf(y[j] - x[j]) <= 3.0f * 0x1.0p-9f);
}

/* All-zero rows give all-zero values in every format, and the bytes ggml
 * writes: q4_0 d = 0.0f / -8 = -0 (fp16 0x8000) with every level 8 (0x88),
 * q4_K / q6_K / q8_K all zero bytes. */
static void test_zero_blocks(void **state)
{
    (void)state;
    float x[256] = {0}, y[256];
    uint8_t blk[FT_Q8_K_BLOCK_BYTES];
    const ft_dtype_t fmts[] = {FT_DTYPE_Q4_0, FT_DTYPE_Q4_K, FT_DTYPE_Q6_K, FT_DTYPE_Q8_K};
    for (size_t f = 0; f < sizeof(fmts) / sizeof(fmts[0]); f++) {
        memset(blk, 0xa5, sizeof(blk));
        ft_quantize_row(fmts[f], x, blk, 256);
        uint64_t nb;
        assert_true(ft_dtype_row_bytes(fmts[f], 256, &nb));
        for (uint64_t i = 0; i < nb; i++) {
            const int expect = fmts[f] != FT_DTYPE_Q4_0 ? 0 : i % 18 >= 2 ? 0x88 : i % 18 == 1 ? 0x80 : 0;
            if (blk[i] != expect)
                fail_msg("%s: zero row byte %llu is 0x%02x, expected 0x%02x",
                         ft_dtype_name(fmts[f]), (unsigned long long)i, blk[i], expect);
        }
        for (int j = 0; j < 256; j++)
            y[j] = 1.0f;
        ft_dequantize_row(fmts[f], blk, y, 256);
        for (int j = 0; j < 256; j++)
            assert_true(y[j] == 0.0f);
    }
}

/* Per-element error on random weight-like rows, against bounds that follow
 * from each format's construction:
 *  q8_K: levels are nearest(x * 127 / amax): error <= amax/254, plus float
 *        rounding of x * iscale (2^-24 relative), so amax/254 * (1 + 1e-5).
 *  q4_0: levels are x/d + 8.5 truncated, i.e. x/d rounded half up, with
 *        |d| = amax/8 (then rounded to fp16, 2^-11 relative): error <=
 *        |d|/2 except at the one clamped level +8 -> 7, error <= |d|; so
 *        <= amax/8 * (1 + 2^-10) everywhere, and <= amax/16 * (1 + 2^-7)
 *        for elements with x/d < 7.5.
 *  q6_K: a group of 16 has scale ~ amax16/32 and levels in [-32, 31];
 *        the group scales are stored as int8 multiples of maxscale/128, so
 *        a step is at most maxscale * (1 + 1/256) and an element is within
 *        half a step, or (at the clamped top level) a full step, of its
 *        value. The fitting may pick a scale up to 10% (0.9 * 32 ... 0.1
 *        steps of the rmse search) smaller, bounded here by amax_sb/32
 *        (one full step of the largest group's scale, with margin for the
 *        fp16 d).
 *  q4_K: a sub-block of 32 spans [min, max] with 15 steps; scales and
 *        mins are stored as 6-bit multiples of their super-block maxima
 *        (error <= max/126 each), and the rmse search may stretch the
 *        step by up to (15 + 1)/15 or shrink it by 14/15 with clamping at
 *        the ends. A full step of the widest sub-block, R/15 with R the
 *        super-block's largest sub-block range, plus the min rounding
 *        max_min/126, bounds every element; we check R/15 + max_min/126
 *        (measured worst cases stay near R/20).
 * Also the RMS error is checked against a fraction of these bounds, which
 * a broken fit (wrong level packing, wrong scale nibble) exceeds by far:
 * half for the bounds that are a full step, 0.62 for q8_K's half-step
 * bound (an error uniform in [-b, b] has RMS b / sqrt(3) = 0.577 b). */
static void check_errors(ft_dtype_t t, const float *x, const float *y, uint64_t n)
{
    const uint32_t block = t == FT_DTYPE_Q4_0 ? 32 : 256;
    double sq = 0, bound_sq = 0;
    for (uint64_t b = 0; b < n / block; b++) {
        const float *xb = x + b * block, *yb = y + b * block;
        float amax = 0, max_sub_range = 0, max_min = 0;
        for (uint32_t j = 0; j < block; j++)
            amax = fmaxf(amax, fabsf(xb[j]));
        for (uint32_t s = 0; s < block / 32; s++) {
            float lo = xb[32 * s], hi = xb[32 * s];
            for (int j = 0; j < 32; j++) {
                lo = fminf(lo, xb[32 * s + j]);
                hi = fmaxf(hi, xb[32 * s + j]);
            }
            max_sub_range = fmaxf(max_sub_range, hi - fminf(lo, 0.0f));
            max_min = fmaxf(max_min, -fminf(lo, 0.0f));
        }
        float bound;
        switch (t) {
        case FT_DTYPE_Q8_K: bound = amax / 254.0f * (1.0f + 1e-5f); break;
        case FT_DTYPE_Q4_0: bound = amax / 8.0f * (1.0f + 0x1.0p-10f); break;
        case FT_DTYPE_Q6_K: bound = amax / 32.0f; break;
        default: bound = max_sub_range / 15.0f + max_min / 126.0f; break;
        }
        for (uint32_t j = 0; j < block; j++) {
            const float err = fabsf(yb[j] - xb[j]);
            if (!(err <= bound))
                fail_msg("%s: element %llu: %g -> %g, error %g above the bound %g",
                         ft_dtype_name(t), (unsigned long long)(b * block + j), xb[j], yb[j], err,
                         bound);
            sq += (double)err * err;
        }
        bound_sq += (double)bound * bound * block;
    }
    const double frac = t == FT_DTYPE_Q8_K ? 0.62 : 0.5;
    if (!(sqrt(sq) <= frac * sqrt(bound_sq)))
        fail_msg("%s: RMS error %g above %g of the bound, %g", ft_dtype_name(t), sqrt(sq / n),
                 frac, frac * sqrt(bound_sq / n));
}

static void test_random_error_bounds(void **state)
{
    (void)state;
    enum { N = 256 * 64 };
    static float x[N], y[N];
    static uint8_t q[N / 256 * FT_Q8_K_BLOCK_BYTES];
    const ft_dtype_t fmts[] = {FT_DTYPE_Q4_0, FT_DTYPE_Q4_K, FT_DTYPE_Q6_K, FT_DTYPE_Q8_K};
    uint64_t s = 12345;
    for (int dist = 0; dist < 3; dist++) {
        for (int i = 0; i < N; i++) {
            x[i] = rng_weight(&s);
            if (dist == 1) x[i] = fabsf(x[i]) + 0.01f; /* all positive: q4_K min = 0 */
            if (dist == 2) x[i] = rng_uniform(&s) * 1000.0f - 400.0f; /* offset, wide */
        }
        for (size_t f = 0; f < sizeof(fmts) / sizeof(fmts[0]); f++) {
            ft_quantize_row(fmts[f], x, q, N);
            ft_dequantize_row(fmts[f], q, y, N);
            check_errors(fmts[f], x, y, N);
        }
    }
}

/* q4_0 and q8_K check half-step errors on the interior levels too. */
static void test_q4_0_interior_half_step(void **state)
{
    (void)state;
    enum { N = 32 * 256 };
    static float x[N], y[N];
    static uint8_t q[N / 32 * FT_Q4_0_BLOCK_BYTES];
    uint64_t s = 99;
    for (int i = 0; i < N; i++)
        x[i] = rng_weight(&s);
    ft_quantize_row_q4_0(x, q, N);
    ft_dequantize_row_q4_0(q, y, N);
    for (int b = 0; b < N / 32; b++) {
        const float d = ft_fp16_to_fp32(le16(q + b * FT_Q4_0_BLOCK_BYTES));
        for (int j = 0; j < 32; j++) {
            const float v = x[32 * b + j];
            if (v / d < 7.5f)
                assert_true(fabsf(y[32 * b + j] - v) <= fabsf(d) / 2 * (1 + 0x1.0p-7f));
        }
    }
}

/* inf, NaN, huge and tiny values must not crash or trip UBSan; finite
 * blocks next to them are unaffected (blocks are independent). */
static void test_hostile_values(void **state)
{
    (void)state;
    enum { N = 512 };
    static float x[N], y[N], ref[N];
    static uint8_t q[N * 2], qr[N * 2]; /* f16/bf16 are the largest: 2 bytes each */
    const float specials[] = {INFINITY, -INFINITY, NAN, FLT_MAX, -FLT_MAX, 1e-40f, 1e30f};
    const ft_dtype_t fmts[] = {FT_DTYPE_Q4_0, FT_DTYPE_Q4_K, FT_DTYPE_Q6_K, FT_DTYPE_Q8_K,
                               FT_DTYPE_Q8_0, FT_DTYPE_F16, FT_DTYPE_BF16};
    uint64_t s = 5;
    for (size_t k = 0; k < sizeof(specials) / sizeof(specials[0]); k++) {
        for (int i = 0; i < N; i++)
            x[i] = rng_weight(&s);
        memcpy(ref, x, sizeof(ref));
        x[7] = specials[k];
        x[100] = specials[k];
        for (size_t f = 0; f < sizeof(fmts) / sizeof(fmts[0]); f++) {
            uint64_t nb;
            assert_true(ft_dtype_row_bytes(fmts[f], N, &nb));
            ft_quantize_row(fmts[f], x, q, N);
            ft_dequantize_row(fmts[f], q, y, N);
            ft_quantize_row(fmts[f], ref, qr, N);
            /* the second super-block (elements 256..511) is untouched */
            assert_memory_equal(q + nb / 2, qr + nb / 2, nb / 2);
        }
    }
}

/* Every pair of row formats through ft_convert_row equals decoding the
 * source to f32 and encoding that, and the same format is a plain copy. */
static void test_convert_row_all_pairs(void **state)
{
    (void)state;
    enum { N = 256 * 3 };
    const ft_dtype_t types[] = {FT_DTYPE_F32,  FT_DTYPE_F16,  FT_DTYPE_BF16, FT_DTYPE_Q8_0,
                                FT_DTYPE_Q4_0, FT_DTYPE_Q4_K, FT_DTYPE_Q6_K};
    enum { NT = sizeof(types) / sizeof(types[0]) };
    static float x[N], src_f[N], got[N], expect_f[N];
    static uint8_t src[N * 4], dst[N * 4 + 16], expect[N * 4];
    uint64_t s = 77;
    for (int i = 0; i < N; i++)
        x[i] = rng_weight(&s);
    for (int a = 0; a < NT; a++) {
        for (int b = 0; b < NT; b++) {
            const ft_dtype_t st = types[a], dt = types[b];
            uint64_t sb, db;
            assert_true(ft_dtype_row_bytes(st, N, &sb));
            assert_true(ft_dtype_row_bytes(dt, N, &db));
            assert_null(ft_convert_row(st, src, FT_DTYPE_F32, x, N));
            memset(dst, 0xcd, sizeof(dst));
            assert_null(ft_convert_row(dt, dst, st, src, N));
            /* same format: a copy (re-encoding is not idempotent for the
             * fitted K-quants), otherwise decode + encode */
            ft_dequantize_row(st, src, src_f, N);
            if (st == dt)
                memcpy(expect, src, sb);
            else
                ft_quantize_row(dt, src_f, expect, N);
            if (memcmp(dst, expect, db) != 0)
                fail_msg("convert %s -> %s differs from decode + encode", ft_dtype_name(st),
                         ft_dtype_name(dt));
            if (dst[db] != 0xcd) /* nothing written past the row */
                fail_msg("convert %s -> %s wrote past the row", ft_dtype_name(st), ft_dtype_name(dt));
            assert_null(ft_convert_row(FT_DTYPE_F32, got, dt, dst, N));
            ft_dequantize_row(dt, expect, expect_f, N);
            assert_memory_equal(got, expect_f, sizeof(got));
        }
    }
}

static void test_convert_row_block_errors(void **state)
{
    (void)state;
    float x[256] = {0};
    uint8_t out[1024];
    ft_status_t st = ft_convert_row(FT_DTYPE_Q4_K, out, FT_DTYPE_F32, x, 96);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ft_status_message(st), "q4_k"));
    assert_non_null(strstr(ft_status_message(st), "256"));
    ft_status_free(st);
    st = ft_convert_row(FT_DTYPE_F16, out, FT_DTYPE_Q6_K, x, 255);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    st = ft_convert_row(FT_DTYPE_Q4_0, out, FT_DTYPE_F32, x, 48);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    /* Q8_K is an activation format, not a storage format. */
    st = ft_convert_row(FT_DTYPE_Q8_K, out, FT_DTYPE_F32, x, 256);
    assert_int_equal(ft_status_code(st), FT_STATUS_UNSUPPORTED);
    ft_status_free(st);
    assert_true(ft_quant_supported(FT_DTYPE_Q8_K));
    assert_false(ft_quant_supported(FT_DTYPE_Q8_1)); /* an activation layout: not written */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q4_0_ramp_known_answer),
        cmocka_unit_test(test_q8_k_known_answer),
        cmocka_unit_test(test_constant_blocks),
        cmocka_unit_test(test_zero_blocks),
        cmocka_unit_test(test_random_error_bounds),
        cmocka_unit_test(test_q4_0_interior_half_step),
        cmocka_unit_test(test_hostile_values),
        cmocka_unit_test(test_convert_row_all_pairs),
        cmocka_unit_test(test_convert_row_block_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
