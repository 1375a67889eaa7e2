/* The ternary TQ1_0 and TQ2_0 (runtime/format/quant_tq.c, the CPU dots of
 * backends/cpu/dot_tq.c):
 *
 *  - Decoding: random blocks (every byte value at every position over the
 *    run, finite fp16 d of either sign) against float64 decoders written
 *    here in the form of ggml's dequantize_row_tq{1,2}_0; (t - 1) d is
 *    exact, so y == (float)exact bit for bit.
 *  - Quantizing: bit-identical to ggml's quantize_row_tq{1,2}_0_ref,
 *    transcribed below in ggml's form from ggml-quants.c, on random rows
 *    (with zero, constant and one-signed blocks, scales 1e-3..1e3); hostile
 *    rows must not crash. Ternary rows (every x in {-a, 0, a}) round-trip
 *    exactly when a is an fp16 value; gaussian-like rows within an rms
 *    error of 0.8 of their rms value (measured ~0.7: most become 0).
 *  - Dot products with Q8_K activations against the float64 sum of the
 *    dequantized products: an exact int32 sum per super-block, then two
 *    float32 products and the running sum: |y - ref| <= 2^-24 (4 + nb)
 *    sum |w a|. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/backends/cpu/cpu_dot.h"
#include "../../runtime/format/convert.h"

#include <math.h>
#include <string.h>

enum { QK_K = 256, NB = 4, COLS = NB * QK_K, MAX_BYTES = NB * 66 };

static uint64_t g_rng = 0x6a09e667f3bcc909ull;

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

/* ---- ggml-common.h's blocks and ggml-quants.c's code, transcribed ---- */
#define MAX(a, b) ((a) > (b) ? (a) : (b))
typedef struct {
    uint8_t qs[(QK_K - 4 * QK_K / 64) / 5];
    uint8_t qh[QK_K / 64];
    uint16_t d;
} block_tq1_0;
typedef struct {
    uint8_t qs[QK_K / 4];
    uint16_t d;
} block_tq2_0;
_Static_assert(sizeof(block_tq1_0) == 54 && sizeof(block_tq2_0) == 66, "ggml block sizes");

static void quantize_row_tq1_0_ref(const float *x, block_tq1_0 *y, int64_t k)
{
    const int64_t nb = k / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        float amax = 0.0f;
        for (int j = 0; j < QK_K; j++) {
            const float v = x[j];
            amax = MAX(amax, fabsf(v));
        }
        const float d = amax;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = ft_fp32_to_fp16(d);
        for (size_t j = 0; j < sizeof(y->qs) - sizeof(y->qs) % 32; j += 32) {
            for (size_t m = 0; m < 32; ++m) {
                uint8_t q = 0;
                for (size_t n = 0; n < 5; ++n) {
                    int xi = lroundf(x[m + n * 32] * id) + 1;
                    q *= 3;
                    q += xi;
                }
                q = ((uint16_t)q * 256 + (243 - 1)) / 243;
                y[i].qs[j + m] = q;
            }
            x += 5 * 32;
        }
        for (size_t j = sizeof(y->qs) - sizeof(y->qs) % 32; j < sizeof(y->qs); j += 16) {
            for (size_t m = 0; m < 16; ++m) {
                uint8_t q = 0;
                for (size_t n = 0; n < 5; ++n) {
                    int xi = lroundf(x[m + n * 16] * id) + 1;
                    q *= 3;
                    q += xi;
                }
                q = ((uint16_t)q * 256 + (243 - 1)) / 243;
                y[i].qs[j + m] = q;
            }
            x += 5 * 16;
        }
        for (size_t j = 0; j < sizeof(y->qh); ++j) {
            uint8_t q = 0;
            for (size_t m = 0; m < 4; ++m) {
                int xi = lroundf(x[j + m * sizeof(y->qh)] * id) + 1;
                q *= 3;
                q += xi;
            }
            q *= 3;
            q = ((uint16_t)q * 256 + (243 - 1)) / 243;
            y[i].qh[j] = q;
        }
        x += 4 * sizeof(y->qh);
    }
}

static void quantize_row_tq2_0_ref(const float *x, block_tq2_0 *y, int64_t k)
{
    const int64_t nb = k / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        float amax = 0.0f;
        for (int j = 0; j < QK_K; j++) {
            const float v = x[j];
            amax = MAX(amax, fabsf(v));
        }
        const float d = amax;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = ft_fp32_to_fp16(d);
        for (size_t j = 0; j < sizeof(y->qs); j += 32) {
            for (size_t m = 0; m < 32; ++m) {
                uint8_t q = 0;
                for (size_t n = 0; n < 4; ++n) {
                    int xi = lroundf(x[m + n * 32] * id) + 1;
                    q += (xi & 3) << (2 * n);
                }
                y[i].qs[j + m] = q;
            }
            x += 4 * 32;
        }
    }
}

/* dequantize_row_tq{1,2}_0 in float64 */
static void dec_tq1_0(const uint8_t *b, double *y)
{
    const block_tq1_0 *x = (const block_tq1_0 *)b;
    const uint8_t pow3[6] = {1, 3, 9, 27, 81, 243};
    const double d = ft_fp16_to_fp32(x->d);
    for (size_t j = 0; j < sizeof(x->qs) - sizeof(x->qs) % 32; j += 32)
        for (size_t n = 0; n < 5; ++n)
            for (size_t m = 0; m < 32; ++m) {
                uint8_t q = x->qs[j + m] * pow3[n];
                int16_t xi = ((uint16_t)q * 3) >> 8;
                *y++ = (double)(xi - 1) * d;
            }
    for (size_t j = sizeof(x->qs) - sizeof(x->qs) % 32; j < sizeof(x->qs); j += 16)
        for (size_t n = 0; n < 5; ++n)
            for (size_t m = 0; m < 16; ++m) {
                uint8_t q = x->qs[j + m] * pow3[n];
                int16_t xi = ((uint16_t)q * 3) >> 8;
                *y++ = (double)(xi - 1) * d;
            }
    for (size_t n = 0; n < 4; ++n)
        for (size_t j = 0; j < sizeof(x->qh); ++j) {
            uint8_t q = x->qh[j] * pow3[n];
            int16_t xi = ((uint16_t)q * 3) >> 8;
            *y++ = (double)(xi - 1) * d;
        }
}

static void dec_tq2_0(const uint8_t *b, double *y)
{
    const block_tq2_0 *x = (const block_tq2_0 *)b;
    const double d = ft_fp16_to_fp32(x->d);
    for (size_t j = 0; j < sizeof(x->qs); j += 32)
        for (size_t l = 0; l < 4; ++l)
            for (size_t m = 0; m < 32; ++m) {
                int8_t q = (x->qs[j + m] >> (l * 2)) & 3;
                *y++ = (double)(q - 1) * d;
            }
}

static void ggml_tq1_0(const float *x, void *y, int64_t k)
{
    quantize_row_tq1_0_ref(x, y, k);
}
static void ggml_tq2_0(const float *x, void *y, int64_t k)
{
    quantize_row_tq2_0_ref(x, y, k);
}

typedef struct fmt {
    ft_dtype_t t;
    uint32_t bytes, d_off;
    void (*dec)(const uint8_t *b, double *y);
    void (*ggml)(const float *x, void *y, int64_t k);
} fmt_t;

static const fmt_t k_fmts[] = {
    {FT_DTYPE_TQ1_0, 54, 52, dec_tq1_0, ggml_tq1_0},
    {FT_DTYPE_TQ2_0, 66, 64, dec_tq2_0, ggml_tq2_0},
};
enum { N_FMTS = sizeof(k_fmts) / sizeof(k_fmts[0]) };

/* Random bytes; rep < 256: every digit byte is rep (all values over the
 * run); a finite fp16 d in +-[2^-12, 2^4). */
static void random_blocks(const fmt_t *f, uint8_t *w, int rep)
{
    for (uint32_t b = 0; b < NB; b++) {
        uint8_t *blk = w + b * f->bytes;
        for (uint32_t i = 0; i < f->d_off; i++)
            blk[i] = (uint8_t)(rep < 256 ? rep : (int)rnd_u32());
        const uint16_t h = (uint16_t)((rnd_u32() & 1 ? 0x8000 : 0) | (3 + rnd_u32() % 16) << 10 |
                                      (rnd_u32() & 0x3ff));
        blk[f->d_off] = (uint8_t)h;
        blk[f->d_off + 1] = (uint8_t)(h >> 8);
    }
}

static void test_dequantize_exact(void **state)
{
    (void)state;
    for (int k = 0; k < N_FMTS; k++) {
        const fmt_t *f = &k_fmts[k];
        assert_int_equal(ft_dtype_info(f->t)->block_bytes, f->bytes);
        for (int rep = 0; rep < 400; rep++) {
            uint8_t w[MAX_BYTES];
            float y[COLS];
            double ref[QK_K];
            random_blocks(f, w, rep);
            ft_dequantize_row(f->t, w, y, COLS);
            for (int b = 0; b < NB; b++) {
                f->dec(w + b * f->bytes, ref);
                for (int j = 0; j < QK_K; j++)
                    if (y[QK_K * b + j] != (float)ref[j])
                        fail_msg("%s rep %d block %d element %d: %.9g, expected %.9g",
                                 ft_dtype_name(f->t), rep, b, j, y[QK_K * b + j], ref[j]);
            }
        }
    }
}

static void make_row(int rep, float *x)
{
    const double scale = pow(10.0, (double)(rep % 7) - 3.0);
    for (int i = 0; i < COLS; i++)
        x[i] = (float)(scale * (rnd_sym() + rnd_sym()));
    for (int b = 0; b < NB; b++) {
        const int kind = (b * 5 + rep) % 11;
        for (int i = QK_K * b; i < QK_K * b + QK_K; i++) {
            if (kind == 0) x[i] = 0;
            if (kind == 1) x[i] = (float)-scale;
            if (kind == 2) x[i] = fabsf(x[i]) + 0.5f * (float)scale;
        }
    }
}

static void test_quantize_as_ggml(void **state)
{
    (void)state;
    for (int k = 0; k < N_FMTS; k++) {
        const fmt_t *f = &k_fmts[k];
        for (int rep = 0; rep < 400; rep++) {
            float x[COLS];
            uint8_t want[MAX_BYTES], got[MAX_BYTES];
            make_row(rep, x);
            memset(want, 0xA5, sizeof(want));
            memset(got, 0x5A, sizeof(got));
            f->ggml(x, want, COLS);
            ft_quantize_row(f->t, x, got, COLS);
            for (uint32_t i = 0; i < NB * f->bytes; i++)
                if (want[i] != got[i])
                    fail_msg("%s row %d: byte %u (block %u) is 0x%02x, ggml 0x%02x",
                             ft_dtype_name(f->t), rep, i, i / f->bytes, got[i], want[i]);
        }
        /* ternary rows round-trip exactly */
        for (int rep = 0; rep < 20; rep++) {
            float x[COLS], y[COLS];
            uint8_t w[MAX_BYTES];
            const float a = ft_fp16_to_fp32(ft_fp32_to_fp16((float)(0.01 + fabs(rnd_sym()))));
            for (int i = 0; i < COLS; i++)
                x[i] = (float)((int)(rnd_u32() % 3) - 1) * a;
            for (int b = 0; b < NB; b++)
                x[QK_K * b] = a; /* amax is a in every block */
            ft_quantize_row(f->t, x, w, COLS);
            ft_dequantize_row(f->t, w, y, COLS);
            assert_memory_equal(x, y, sizeof(x));
        }
        /* gaussian-like rows: the round trip's rms error (the ternary
         * rounding of weights not trained for it; test_forward_formats
         * derives its f32 bound from this one) */
        double e2 = 0, x2 = 0;
        for (int rep = 0; rep < 40; rep++) {
            float x[COLS], y[COLS];
            uint8_t w[MAX_BYTES];
            for (int i = 0; i < COLS; i++)
                x[i] = (float)(rnd_sym() + rnd_sym() + rnd_sym());
            ft_quantize_row(f->t, x, w, COLS);
            ft_dequantize_row(f->t, w, y, COLS);
            for (int i = 0; i < COLS; i++) {
                e2 += ((double)y[i] - x[i]) * ((double)y[i] - x[i]);
                x2 += (double)x[i] * x[i];
            }
        }
        print_message("%s: round-trip rms error %.3g of the rms value\n", ft_dtype_name(f->t),
                      sqrt(e2 / x2));
        assert_true(sqrt(e2 / x2) < 0.8);
        /* hostile rows: any bytes, no crash */
        const float hostile[] = {NAN, INFINITY, -INFINITY, 3e38f, -3e38f};
        for (size_t h = 0; h < sizeof(hostile) / sizeof(hostile[0]); h++) {
            float x[COLS], y[COLS];
            uint8_t w[MAX_BYTES];
            make_row(1, x);
            for (int i = 3; i < COLS; i += 11)
                x[i] = hostile[h];
            ft_quantize_row(f->t, x, w, COLS);
            ft_dequantize_row(f->t, w, y, COLS);
        }
    }
}

static void test_dot_products(void **state)
{
    (void)state;
    for (int k = 0; k < N_FMTS; k++) {
        const fmt_t *f = &k_fmts[k];
        assert_int_equal(ft_cpu_act_type(f->t), FT_DTYPE_Q8_K);
        const ft_cpu_dot_fn dot = ft_cpu_dot_for(f->t, 1);
        assert_non_null(dot);
        double worst = 0;
        for (int rep = 0; rep < 400; rep++) {
            uint8_t w[MAX_BYTES], xq[NB * FT_Q8_K_BLOCK_BYTES];
            float x[COLS], xf[COLS];
            double wd[COLS];
            if (rep % 2) {
                random_blocks(f, w, 256 + rep);
            } else {
                make_row(rep, x);
                ft_quantize_row(f->t, x, w, COLS);
            }
            for (int i = 0; i < COLS; i++)
                x[i] = (float)rnd_sym() * (rep % 3 ? 1.0f : 30.0f);
            ft_cpu_act_prepare(f->t, x, COLS, 1, COLS, xq);
            ft_dequantize_row(FT_DTYPE_Q8_K, xq, xf, COLS);
            for (int b = 0; b < NB; b++)
                f->dec(w + b * f->bytes, wd + QK_K * b);
            double ref = 0, terms = 0;
            for (int i = 0; i < COLS; i++) {
                ref += wd[i] * xf[i];
                terms += fabs(wd[i] * xf[i]);
            }
            const float y = dot(COLS, w, xq);
            float y_mm = 0;
            ft_cpu_matmul(f->t, w, f->bytes * NB, xq, 1, COLS, 0, 1, &y_mm, 1);
            assert_true(y_mm == y);
            const double err = fabs((double)y - ref), bound = 0x1.0p-24 * (4 + NB) * terms;
            if (err > bound)
                fail_msg("%s rep %d: dot %.9g, float64 %.9g, error %.3g > %.3g",
                         ft_dtype_name(f->t), rep, y, ref, err, bound);
            if (terms > 0 && err / terms > worst) worst = err / terms;
        }
        print_message("%s: worst dot error %.3g of the terms' magnitude\n", ft_dtype_name(f->t),
                      worst);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dequantize_exact),
        cmocka_unit_test(test_quantize_as_ggml),
        cmocka_unit_test(test_dot_products),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
