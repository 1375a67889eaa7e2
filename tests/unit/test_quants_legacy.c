/* Q4_1, Q5_0 and Q5_1 (runtime/format/quant_legacy.c, the CPU dots of
 * backends/cpu/dot_legacy.c):
 *
 *  - Decoding: random blocks (finite fp16 scales in [2^-12, 2^4) and
 *    mins of either sign) against float64 decoders written from
 *    ggml-common.h's block definitions. q * d is exact in float32 (5 + 11
 *    bits) and + m is one rounding, so y == (float)exact bit for bit.
 *  - Quantizing: bit-identical to ggml's quantize_row_q{4_1,5_0,5_1}_ref,
 *    transcribed below in ggml's form (its structs, MIN, the int8/uint8
 *    casts) from ggml-quants.c, on random rows with zero, constant and
 *    one-signed blocks; plus hostile rows (NaN, inf, huge) that must not
 *    crash.
 *  - Dot products with Q8_0 activations against the float64 sum of the
 *    dequantized products. The int32 sums are exact; per block two (Q5_0:
 *    one) float32 products of three factors and a sum, then the running
 *    float32 sum over nb blocks: |y - ref| <= 2^-24 (4 + nb) sum_b (|d dx
 *    sum(q a)| + |m dx sum(a)|), computed here from the blocks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/backends/cpu/cpu_dot.h"
#include "../../runtime/format/convert.h"

#include <float.h>
#include <math.h>
#include <string.h>

enum { QK = 32, NB = 16, COLS = NB * QK };

static uint64_t g_rng = 0xa4093822299f31d0ull;

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

static double f16(const uint8_t *p)
{
    return (double)ft_fp16_to_fp32((uint16_t)(p[0] | (p[1] << 8)));
}

static void put_f16(uint8_t *p, float f)
{
    const uint16_t h = ft_fp32_to_fp16(f);
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

/* A finite fp16 in +-[2^-12, 2^4) (sign: neg). */
static void put_scale(uint8_t *p, int neg)
{
    const uint16_t h =
        (uint16_t)((neg ? 0x8000 : 0) | (3 + rnd_u32() % 16) << 10 | (rnd_u32() & 0x3ff));
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

/* ---- float64 decoders from ggml-common.h ---- */

/* block_q4_1 {half d, m; u8 qs[16]}: element j is the low nibble of qs[j]
 * (j < 16) or the high nibble of qs[j - 16]; x = q d + m. */
static void dec_q4_1(const uint8_t *b, double *y)
{
    for (int j = 0; j < QK; j++) {
        const int q = (b[4 + j % 16] >> (4 * (j / 16))) & 15;
        y[j] = q * f16(b) + f16(b + 2);
    }
}

/* block_q5_0 {half d; u8 qh[4]; u8 qs[16]}: as Q4_1's nibbles, plus bit j
 * of the little-endian u32 qh as 16; x = (q - 16) d. */
static void dec_q5_0(const uint8_t *b, double *y)
{
    for (int j = 0; j < QK; j++) {
        const int q = ((b[6 + j % 16] >> (4 * (j / 16))) & 15) | ((b[2 + j / 8] >> (j % 8)) & 1)
                                                                     << 4;
        y[j] = (q - 16) * f16(b);
    }
}

/* block_q5_1 {half d, m; u8 qh[4]; u8 qs[16]}: x = q d + m. */
static void dec_q5_1(const uint8_t *b, double *y)
{
    for (int j = 0; j < QK; j++) {
        const int q = ((b[8 + j % 16] >> (4 * (j / 16))) & 15) | ((b[4 + j / 8] >> (j % 8)) & 1)
                                                                     << 4;
        y[j] = q * f16(b) + f16(b + 2);
    }
}

/* ---- ggml's reference quantizers, transcribed ---- */
#define MIN(a, b) ((a) < (b) ? (a) : (b))
typedef struct {
    uint16_t d, m;
    uint8_t qs[16];
} block_q4_1;
typedef struct {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[16];
} block_q5_0;
typedef struct {
    uint16_t d, m;
    uint8_t qh[4];
    uint8_t qs[16];
} block_q5_1;
_Static_assert(sizeof(block_q4_1) == 20 && sizeof(block_q5_0) == 22 && sizeof(block_q5_1) == 24,
               "ggml block sizes");

static void quantize_row_q4_1_ref(const float *x, block_q4_1 *y, int64_t k)
{
    const int qk = 32, nb = (int)(k / qk);
    for (int i = 0; i < nb; i++) {
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < qk; j++) {
            const float v = x[i * qk + j];
            if (v < min) min = v;
            if (v > max) max = v;
        }
        const float d = (max - min) / ((1 << 4) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = ft_fp32_to_fp16(d);
        y[i].m = ft_fp32_to_fp16(min);
        for (int j = 0; j < qk / 2; ++j) {
            const float x0 = (x[i * qk + 0 + j] - min) * id;
            const float x1 = (x[i * qk + qk / 2 + j] - min) * id;
            const uint8_t xi0 = (uint8_t)MIN(15, (int8_t)(x0 + 0.5f));
            const uint8_t xi1 = (uint8_t)MIN(15, (int8_t)(x1 + 0.5f));
            y[i].qs[j] = xi0;
            y[i].qs[j] |= (uint8_t)(xi1 << 4);
        }
    }
}

static void quantize_row_q5_0_ref(const float *x, block_q5_0 *y, int64_t k)
{
    const int qk = 32, nb = (int)(k / qk);
    for (int i = 0; i < nb; i++) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < qk; j++) {
            const float v = x[i * qk + j];
            if (amax < fabsf(v)) {
                amax = fabsf(v);
                max = v;
            }
        }
        const float d = max / -16;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = ft_fp32_to_fp16(d);
        uint32_t qh = 0;
        for (int j = 0; j < qk / 2; ++j) {
            const float x0 = x[i * qk + 0 + j] * id;
            const float x1 = x[i * qk + qk / 2 + j] * id;
            const uint8_t xi0 = (uint8_t)MIN(31, (int8_t)(x0 + 16.5f));
            const uint8_t xi1 = (uint8_t)MIN(31, (int8_t)(x1 + 16.5f));
            y[i].qs[j] = (uint8_t)((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
            qh |= ((xi0 & 0x10u) >> 4) << (j + 0);
            qh |= ((xi1 & 0x10u) >> 4) << (j + qk / 2);
        }
        memcpy(&y[i].qh, &qh, sizeof(qh)); /* little-endian host */
    }
}

static void quantize_row_q5_1_ref(const float *x, block_q5_1 *y, int64_t k)
{
    const int qk = 32, nb = (int)(k / qk);
    for (int i = 0; i < nb; i++) {
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < qk; j++) {
            const float v = x[i * qk + j];
            if (v < min) min = v;
            if (v > max) max = v;
        }
        const float d = (max - min) / ((1 << 5) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = ft_fp32_to_fp16(d);
        y[i].m = ft_fp32_to_fp16(min);
        uint32_t qh = 0;
        for (int j = 0; j < qk / 2; ++j) {
            const float x0 = (x[i * qk + 0 + j] - min) * id;
            const float x1 = (x[i * qk + qk / 2 + j] - min) * id;
            const uint8_t xi0 = (uint8_t)(x0 + 0.5f);
            const uint8_t xi1 = (uint8_t)(x1 + 0.5f);
            y[i].qs[j] = (uint8_t)((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
            qh |= ((xi0 & 0x10u) >> 4) << (j + 0);
            qh |= ((xi1 & 0x10u) >> 4) << (j + qk / 2);
        }
        memcpy(&y[i].qh, &qh, sizeof(y[i].qh));
    }
}

static void ggml_q4_1(const float *x, void *y, int64_t k)
{
    quantize_row_q4_1_ref(x, y, k);
}
static void ggml_q5_0(const float *x, void *y, int64_t k)
{
    quantize_row_q5_0_ref(x, y, k);
}
static void ggml_q5_1(const float *x, void *y, int64_t k)
{
    quantize_row_q5_1_ref(x, y, k);
}

typedef struct fmt {
    ft_dtype_t t;
    uint32_t bytes;
    void (*dec)(const uint8_t *b, double *y);
    void (*ggml)(const float *x, void *y, int64_t k);
    int has_min; /* fp16 m at offset 2 */
} fmt_t;

static const fmt_t k_fmts[] = {
    {FT_DTYPE_Q4_1, FT_Q4_1_BLOCK_BYTES, dec_q4_1, ggml_q4_1, 1},
    {FT_DTYPE_Q5_0, FT_Q5_0_BLOCK_BYTES, dec_q5_0, ggml_q5_0, 0},
    {FT_DTYPE_Q5_1, FT_Q5_1_BLOCK_BYTES, dec_q5_1, ggml_q5_1, 1},
};
enum { N_FMTS = sizeof(k_fmts) / sizeof(k_fmts[0]) };

static void random_blocks(const fmt_t *f, uint8_t *w)
{
    for (uint32_t i = 0; i < NB * f->bytes; i++)
        w[i] = (uint8_t)rnd_u32();
    for (int b = 0; b < NB; b++) {
        put_scale(w + b * f->bytes, 0);
        if (f->has_min) put_scale(w + b * f->bytes + 2, (int)(rnd_u32() & 1));
    }
}

static void test_dequantize_exact(void **state)
{
    (void)state;
    for (int k = 0; k < N_FMTS; k++) {
        const fmt_t *f = &k_fmts[k];
        assert_int_equal(ft_dtype_info(f->t)->block_bytes, f->bytes);
        for (int rep = 0; rep < 500; rep++) {
            uint8_t w[NB * 24];
            float y[COLS];
            double ref[QK];
            random_blocks(f, w);
            ft_dequantize_row(f->t, w, y, COLS);
            for (int b = 0; b < NB; b++) {
                f->dec(w + b * f->bytes, ref);
                for (int j = 0; j < QK; j++)
                    if (y[b * QK + j] != (float)ref[j])
                        fail_msg("%s block %d element %d: %.9g, expected %.9g", ft_dtype_name(f->t),
                                 b, j, y[b * QK + j], ref[j]);
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
        const int kind = (b * 5 + rep) % 13;
        for (int i = QK * b; i < QK * b + QK; i++) {
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
        for (int rep = 0; rep < 500; rep++) {
            float x[COLS];
            uint8_t want[NB * 24], got[NB * 24];
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
        /* hostile rows: any bytes, no crash */
        const float hostile[] = {NAN, INFINITY, -INFINITY, 3e38f, -3e38f};
        for (size_t h = 0; h < sizeof(hostile) / sizeof(hostile[0]); h++) {
            float x[COLS], y[COLS];
            uint8_t w[NB * 24];
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
        assert_int_equal(ft_cpu_act_type(f->t), FT_DTYPE_Q8_0);
        const ft_cpu_dot_fn dot = ft_cpu_dot_for(f->t, 1);
        assert_non_null(dot);
        double worst = 0;
        for (int rep = 0; rep < 500; rep++) {
            uint8_t w[NB * 24], xq[NB * FT_Q8_0_BLOCK_BYTES];
            float x[COLS], xf[COLS];
            double wd[COLS];
            if (rep % 2) {
                random_blocks(f, w);
            } else {
                make_row(rep, x);
                ft_quantize_row(f->t, x, w, COLS);
            }
            for (int i = 0; i < COLS; i++)
                x[i] = (float)rnd_sym() * (rep % 3 ? 1.0f : 30.0f);
            ft_cpu_act_prepare(f->t, x, COLS, 1, COLS, xq);
            ft_dequantize_row(FT_DTYPE_Q8_0, xq, xf, COLS);
            double ref = 0, terms = 0;
            for (int b = 0; b < NB; b++) {
                const uint8_t *wb = w + b * f->bytes;
                f->dec(wb, wd + b * QK);
                /* |d dx sum(q a)| and |m dx sum(a)| bounded per element */
                uint8_t no_min[24];
                memcpy(no_min, wb, f->bytes);
                if (f->has_min) put_f16(no_min + 2, 0.0f);
                double part[QK];
                f->dec(no_min, part);
                for (int j = 0; j < QK; j++) {
                    const double a = xf[b * QK + j];
                    ref += wd[b * QK + j] * a;
                    terms += (fabs(part[j]) + fabs(wd[b * QK + j] - part[j])) * fabs(a);
                }
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
