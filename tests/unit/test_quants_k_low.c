/* Q2_K, Q3_K and Q5_K (runtime/format/quant_k_low.c, the CPU dots of
 * backends/cpu/dot_k_low.c):
 *
 *  - Decoding: random blocks (every byte random but the fp16 scales, kept
 *    finite) against float64 decoders written below from ggml-common.h's
 *    block definitions, looping as the struct comments describe (not as
 *    the runtime does). The runtime's value is one float32 rounding of the
 *    exact one: d * sc * q and dmin * m are exact in float32 (11 + 6 + 5
 *    significant bits at most), and their difference is rounded once, so
 *    y == (float)exact must hold bit for bit. Exactness of the float64
 *    value needs the two terms' exponents within 53 - 22 bits: the scales
 *    are drawn from [2^-12, 2^4).
 *  - Quantizing: the error of a round trip on random rows, against a bound
 *    per format (each derived at its check), plus all-zero and hostile
 *    (NaN, inf, huge) rows that must not crash. Bit identity with ggml's
 *    reference quantizers: test_quants_k_ggml.c.
 *  - Dot products with Q8_K activations against the float64 sum of the
 *    dequantized products. The integer sums are exact; per super-block the
 *    kernel computes d * xd * sumi - dmin * xd * summ in float32 (at most 4
 *    roundings of 2^-24 relative each, of terms whose magnitudes we know)
 *    and adds it to a float32 running sum over nb blocks (each addition
 *    one rounding of at most the running magnitude). So |y - ref| <=
 *    2^-24 * (4 + nb) * sum_b (|d xd sumi| + |dmin xd summ|), which the
 *    test computes in float64 from the blocks themselves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/backends/cpu/cpu_dot.h"
#include "../../runtime/format/convert.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { QK = 256, NB = 4, COLS = NB * QK };

static uint64_t g_rng = 0x243f6a8885a308d3ull;

static uint32_t rnd_u32(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}

static double rnd_sym(void) /* [-1, 1) */
{
    return (double)rnd_u32() / 2147483648.0 - 1.0;
}

/* A roughly normal weight with occasional outliers, as real rows have. */
static float rnd_weight(void)
{
    double v = rnd_sym() + rnd_sym() + rnd_sym() + rnd_sym();
    if (rnd_u32() % 61 == 0) v *= 6.0;
    return (float)(0.03 * v);
}

static double f16(const uint8_t *p)
{
    return (double)ft_fp16_to_fp32((uint16_t)(p[0] | (p[1] << 8)));
}

/* A finite fp16 in [2^-12, 2^4), positive, at p. */
static void put_scale(uint8_t *p)
{
    const uint16_t e = (uint16_t)(3 + rnd_u32() % 16), m = (uint16_t)(rnd_u32() & 0x3ff);
    const uint16_t h = (uint16_t)((e << 10) | m);
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

/* ---- float64 decoders from ggml-common.h's definitions ---- */

/* block_q2_K {u8 scales[16]; u8 qs[64]; half d, dmin}: 16 groups of 16;
 * qs holds 4 values a byte: in each 128-element half, byte l of the half's
 * 32 gives elements l, l + 32, l + 64, l + 96 in bit pairs 0, 2, 4, 6. */
static void dec_q2_k(const uint8_t *b, double *y)
{
    const double d = f16(b + 80), dmin = f16(b + 82);
    for (int half = 0; half < 2; half++)
        for (int pair = 0; pair < 4; pair++)
            for (int l = 0; l < 32; l++) {
                const int e = 128 * half + 32 * pair + l;
                const int q = (b[16 + 32 * half + l] >> (2 * pair)) & 3;
                const uint8_t sc = b[e / 16];
                y[e] = d * (sc & 15) * q - dmin * (sc >> 4);
            }
}

/* block_q3_K {u8 hmask[32]; u8 qs[64]; u8 scales[12]; half d}: the low 2
 * bits as Q2_K; the third bit of element e is bit e / 32 of hmask[e % 32]
 * (set: q, clear: q - 4); scales are sixteen 6-bit values minus 32: the
 * low 4 bits of scale j in nibble j / 8 of byte j % 8, the high 2 bits in
 * bits 2 (j / 4) of byte 8 + j % 4. */
static void dec_q3_k(const uint8_t *b, double *y)
{
    const double d = f16(b + 108);
    int sc[16];
    for (int j = 0; j < 16; j++) {
        const int lo = (b[96 + j % 8] >> (4 * (j / 8))) & 15;
        const int hi = (b[96 + 8 + j % 4] >> (2 * (j / 4))) & 3;
        sc[j] = (lo | hi << 4) - 32;
    }
    for (int half = 0; half < 2; half++)
        for (int pair = 0; pair < 4; pair++)
            for (int l = 0; l < 32; l++) {
                const int e = 128 * half + 32 * pair + l;
                int q = (b[32 + 32 * half + l] >> (2 * pair)) & 3;
                if (!((b[e % 32] >> (e / 32)) & 1)) q -= 4;
                y[e] = d * sc[e / 16] * q;
            }
}

/* block_q5_K {half d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}: 8
 * groups of 32 with 6-bit scale and min packed as Q4_K's (groups 0-3: low
 * 6 bits of bytes j and j + 4; groups 4-7: nibbles of byte j + 4 and the
 * top 2 bits of bytes j - 4 and j); qs byte l of each 64-element pair of
 * groups holds element l (low nibble) and l + 32 (high); the fifth bit of
 * group g's element l is bit g of qh[l]. */
static void dec_q5_k(const uint8_t *b, double *y)
{
    const double d = f16(b), dmin = f16(b + 2);
    const uint8_t *s = b + 4;
    for (int g = 0; g < 8; g++) {
        int sc, m;
        if (g < 4) {
            sc = s[g] & 63;
            m = s[g + 4] & 63;
        } else {
            sc = (s[g + 4] & 15) | (s[g - 4] >> 6) << 4;
            m = (s[g + 4] >> 4) | (s[g] >> 6) << 4;
        }
        for (int l = 0; l < 32; l++) {
            const int q =
                ((b[48 + 32 * (g / 2) + l] >> (4 * (g % 2))) & 15) | ((b[16 + l] >> g) & 1) << 4;
            y[32 * g + l] = d * sc * q - dmin * m;
        }
    }
}

typedef struct fmt {
    ft_dtype_t t;
    uint32_t bytes;
    void (*dec)(const uint8_t *b, double *y);
    void (*rand_scales)(uint8_t *b);
    double rel_rms; /* round-trip bound, see test_round_trip */
} fmt_t;

static void scales_q2(uint8_t *b)
{
    put_scale(b + 80);
    put_scale(b + 82);
}
static void scales_q3(uint8_t *b)
{
    put_scale(b + 108);
}
static void scales_q5(uint8_t *b)
{
    put_scale(b);
    put_scale(b + 2);
}

/* Round-trip bounds, relative rms error over a row of the random weights
 * above (sigma ~0.035, a few outliers of 6x). A level step of s = range /
 * (levels - 1) gives rms s / sqrt(12) when the levels cover the values;
 * the 6-bit (Q3_K/Q5_K) and 4-bit (Q2_K) scales add a little. Per group
 * the range is ~5 sigma (16 or 32 values, 2 x 2.5 sigma): Q5_K 31 steps:
 * 5/31/3.46 = 0.047, plus the min's own rounding (a 6-bit multiple of
 * the block's largest min / 63, off by up to half of that, i.e. up to a
 * few tenths of a step for every element of a group): 0.06; Q2_K 3
 * steps: 0.48. Q3_K has 8 symmetric levels, but
 * its fit weighs each value by x^2, so a group with an outlier (6x, in
 * ~1 of 4 groups of 16) gets a step of ~2 x 6 x 2.5 sigma / 8 ~ 4 sigma
 * and its other values round to 0 (error ~1 sigma each): 1/4 of the
 * groups at ~1 and the rest at 0.18 give sqrt(0.25 + 0.75 x 0.03) ~ 0.5
 * at worst; 0.3 sits between that and the outlier-free 0.18 (measured
 * 0.22). The fits beat the estimates, measured under each. */
static const fmt_t k_fmts[] = {
    {FT_DTYPE_Q2_K, FT_Q2_K_BLOCK_BYTES, dec_q2_k, scales_q2, 0.48},
    {FT_DTYPE_Q3_K, FT_Q3_K_BLOCK_BYTES, dec_q3_k, scales_q3, 0.3},
    {FT_DTYPE_Q5_K, FT_Q5_K_BLOCK_BYTES, dec_q5_k, scales_q5, 0.06},
};
enum { N_FMTS = sizeof(k_fmts) / sizeof(k_fmts[0]) };

static void random_blocks(const fmt_t *f, uint8_t *w, int nb)
{
    for (int i = 0; i < nb * (int)f->bytes; i++)
        w[i] = (uint8_t)rnd_u32();
    for (int i = 0; i < nb; i++)
        f->rand_scales(w + i * f->bytes);
}

static void test_dequantize_exact(void **state)
{
    (void)state;
    for (int k = 0; k < N_FMTS; k++) {
        const fmt_t *f = &k_fmts[k];
        const ft_dtype_info_t *info = ft_dtype_info(f->t);
        assert_int_equal(info->block_bytes, f->bytes);
        assert_int_equal(info->block_elems, QK);
        for (int rep = 0; rep < 200; rep++) {
            uint8_t w[NB * 176];
            float y[COLS];
            double ref[QK];
            random_blocks(f, w, NB);
            ft_dequantize_row(f->t, w, y, COLS);
            for (int b = 0; b < NB; b++) {
                f->dec(w + b * f->bytes, ref);
                for (int e = 0; e < QK; e++)
                    if (y[b * QK + e] != (float)ref[e])
                        fail_msg("%s block %d element %d: %.9g, expected %.9g", info->name, b, e,
                                 y[b * QK + e], ref[e]);
            }
        }
    }
}

static void test_round_trip(void **state)
{
    (void)state;
    for (int k = 0; k < N_FMTS; k++) {
        const fmt_t *f = &k_fmts[k];
        float x[COLS], y[COLS];
        uint8_t w[NB * 176];
        double worst = 0;
        for (int rep = 0; rep < 50; rep++) {
            for (int i = 0; i < COLS; i++)
                x[i] = rnd_weight();
            ft_quantize_row(f->t, x, w, COLS);
            ft_dequantize_row(f->t, w, y, COLS);
            double se = 0, sx = 0;
            for (int i = 0; i < COLS; i++) {
                se += ((double)y[i] - x[i]) * ((double)y[i] - x[i]);
                sx += (double)x[i] * x[i];
            }
            const double rel = sqrt(se / sx);
            worst = rel > worst ? rel : worst;
        }
        print_message("%s: worst relative rms round-trip error %.3g (bound %.3g)\n",
                      ft_dtype_name(f->t), worst, f->rel_rms);
        assert_true(worst <= f->rel_rms);
    }
}

/* All-zero rows give all-zero blocks' values; NaN, inf and huge values
 * must not crash (the output is unspecified, as ggml's). */
static void test_zero_and_hostile(void **state)
{
    (void)state;
    for (int k = 0; k < N_FMTS; k++) {
        const fmt_t *f = &k_fmts[k];
        float x[QK], y[QK];
        uint8_t w[176];
        memset(x, 0, sizeof(x));
        ft_quantize_row(f->t, x, w, QK);
        ft_dequantize_row(f->t, w, y, QK);
        for (int i = 0; i < QK; i++)
            assert_true(y[i] == 0.0f);
        const float hostile[] = {NAN, INFINITY, -INFINITY, 3e38f, -3e38f, 1e-40f};
        for (size_t h = 0; h < sizeof(hostile) / sizeof(hostile[0]); h++) {
            for (int i = 0; i < QK; i++)
                x[i] = i % 7 == 3 ? hostile[h] : rnd_weight();
            ft_quantize_row(f->t, x, w, QK);
            ft_dequantize_row(f->t, w, y, QK);
        }
    }
}

static void test_dot_products(void **state)
{
    (void)state;
    for (int k = 0; k < N_FMTS; k++) {
        const fmt_t *f = &k_fmts[k];
        const ft_cpu_dot_fn dot = ft_cpu_dot_for(f->t, 1);
        assert_non_null(dot);
        assert_non_null(ft_cpu_dot_for(f->t, 0));
        assert_int_equal(ft_cpu_act_type(f->t), FT_DTYPE_Q8_K);
        double worst = 0;
        for (int rep = 0; rep < 300; rep++) {
            float x[COLS], xq_f[COLS];
            uint8_t w[NB * 176], xq[NB * FT_Q8_K_BLOCK_BYTES];
            double wd[COLS];
            if (rep % 2) {
                random_blocks(f, w, NB);
            } else {
                for (int i = 0; i < COLS; i++)
                    x[i] = rnd_weight();
                ft_quantize_row(f->t, x, w, COLS);
            }
            for (int i = 0; i < COLS; i++)
                x[i] = (float)rnd_sym() * (rep % 3 ? 1.0f : 40.0f);
            ft_cpu_act_prepare(f->t, x, COLS, 1, COLS, xq);
            ft_dequantize_row(FT_DTYPE_Q8_K, xq, xq_f, COLS);
            for (int b = 0; b < NB; b++)
                f->dec(w + b * f->bytes, wd + b * QK);
            double ref = 0, mag = 0;
            for (int i = 0; i < COLS; i++) {
                ref += wd[i] * xq_f[i];
                mag += fabs(wd[i] * xq_f[i]);
            }
            const float y = dot(COLS, w, xq);
            float y_mm = 0;
            ft_cpu_matmul(f->t, w, f->bytes * NB, xq, 1, COLS, 0, 1, &y_mm, 1);
            assert_true(y_mm == y); /* no faster tier for these formats yet */
            const double err = fabs((double)y - ref);
            /* The terms' magnitudes: with the min subtracted per block,
             * |d xd sumi| + |dmin xd summ| <= sum over elements of
             * (|d sc q| + |dmin m|) |x_i|. */
            double terms = 0;
            for (int b = 0; b < NB; b++) {
                double wpos[QK];
                uint8_t tmp[176];
                memcpy(tmp, w + b * f->bytes, f->bytes);
                /* dmin = 0 gives the d sc q part alone; the min part is
                 * the difference. */
                if (f->t == FT_DTYPE_Q2_K)
                    memset(tmp + 82, 0, 2);
                else if (f->t == FT_DTYPE_Q5_K)
                    memset(tmp + 2, 0, 2);
                f->dec(tmp, wpos);
                for (int e = 0; e < QK; e++) {
                    const double xi = fabs((double)xq_f[b * QK + e]);
                    terms += (fabs(wpos[e]) + fabs(wd[b * QK + e] - wpos[e])) * xi;
                }
            }
            const double bound = 0x1.0p-24 * (4 + NB) * terms;
            if (err > bound)
                fail_msg("%s rep %d: dot %.9g, float64 %.9g, error %.3g > bound %.3g",
                         ft_dtype_name(f->t), rep, y, ref, err, bound);
            if (mag > 0 && err / mag > worst) worst = err / mag;
        }
        print_message("%s: worst dot error %.3g of sum |w x|\n", ft_dtype_name(f->t), worst);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dequantize_exact),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_zero_and_hostile),
        cmocka_unit_test(test_dot_products),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
