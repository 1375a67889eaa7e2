/* CPU kernels (runtime/backends/cpu): ft_cpu_matmul for every weight
 * format against a float64 dot product of the dequantized weight row with
 * the float32 activations, on random shapes (n_tok 1, 3, 17, 64; odd row
 * counts; row sub-ranges; padded strides), the portable and the SIMD tier
 * against each other, activation preparation, and a matmul split across a
 * thread pool.
 *
 * Tolerance. The reference uses the dequantized weights w^, exactly what
 * the kernel multiplies, so the only differences are
 *  (a) activation quantization, per element at most
 *        Q8_0: amax_b / 254 (half a step of d = amax_b / 127) plus the fp16
 *              rounding of d, 127 * d * 2^-11 = amax_b * 2^-11;
 *        Q8_K: amax_b / 254 plus the float rounding of d (amax_b * 2^-23);
 *        F32 (float formats): 0;
 *      so |dot error| <= sum_i |w^_i| * e_b(i)  (the bound is computed per
 *      dot from the actual activations, blocks b of 32 or 256);
 *  (b) float32 rounding: block sums are exact integers, then about
 *      cols / block_size float multiply-adds (cols for float formats), each
 *      rounding by 2^-24 relative to a running sum bounded by
 *      S = sum_i (|w^_i| + 2 A_b) |x_i| (A_b = max |w^| of the block covers
 *      Q4_K's separately accumulated min term, whose two halves may
 *      cancel), so (cols + 64) * 2^-24 * S.
 * The test fails when the kernel is off by more than (a) + (b). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/backends/cpu/cpu_dot.h"
#include "../../runtime/backends/cpu/kernels.h"
#include "../../runtime/base/threadpool.h"
#include "../../runtime/format/convert.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const ft_dtype_t k_formats[] = {FT_DTYPE_F32,  FT_DTYPE_F16,  FT_DTYPE_BF16, FT_DTYPE_Q8_0,
                                       FT_DTYPE_Q4_0, FT_DTYPE_Q4_K, FT_DTYPE_Q6_K};
enum { N_FORMATS = sizeof(k_formats) / sizeof(k_formats[0]) };

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static float rng_uniform(uint64_t *s)
{
    return (float)((double)(rng_next(s) >> 11) * 0x1.0p-52 - 1.0);
}

static uint32_t block_of(ft_dtype_t t)
{
    return ft_dtype_info(t)->block_elems;
}

/* A weight matrix in format t with rows of row_bytes (>= the packed size):
 * random values quantized row by row; deq receives the dequantized rows. */
struct weights {
    uint8_t *w;
    float *deq;
    size_t row_bytes;
};

static struct weights make_weights(ft_dtype_t t, uint32_t rows, uint32_t cols, size_t pad,
                                   uint64_t *s)
{
    struct weights m;
    uint64_t rb;
    assert_true(ft_dtype_row_bytes(t, cols, &rb));
    m.row_bytes = rb + pad;
    m.w = calloc(rows, m.row_bytes);
    m.deq = malloc((size_t)rows * cols * sizeof(float));
    float *tmp = malloc(cols * sizeof(float));
    assert_non_null(m.w);
    assert_non_null(m.deq);
    assert_non_null(tmp);
    for (uint32_t r = 0; r < rows; r++) {
        const float scale = 0.02f + 0.2f * (float)(r % 5); /* rows of different magnitude */
        for (uint32_t c = 0; c < cols; c++)
            tmp[c] = rng_uniform(s) * scale;
        ft_quantize_row(t, tmp, m.w + r * m.row_bytes, cols);
        ft_dequantize_row(t, m.w + r * m.row_bytes, m.deq + (size_t)r * cols, cols);
    }
    free(tmp);
    return m;
}

/* The bound (a) + (b) of the file comment for one dot. */
static double dot_tolerance(ft_dtype_t wt, const float *wd, const float *x, uint32_t cols)
{
    const ft_dtype_t at = ft_cpu_act_type(wt);
    const uint32_t ab = at == FT_DTYPE_Q8_0 ? 32 : at == FT_DTYPE_Q8_K ? 256 : cols;
    const uint32_t wb = block_of(wt) > 1 ? block_of(wt) : cols;
    double act = 0, s = 0;
    for (uint32_t b0 = 0; b0 < cols; b0 += ab) {
        double amax = 0;
        for (uint32_t i = b0; i < b0 + ab; i++)
            amax = fmax(amax, fabs(x[i]));
        const double e = at == FT_DTYPE_Q8_0   ? amax / 254 + amax * 0x1.0p-11
                         : at == FT_DTYPE_Q8_K ? amax / 254 + amax * 0x1.0p-23
                                               : 0;
        for (uint32_t i = b0; i < b0 + ab; i++)
            act += fabs(wd[i]) * e;
    }
    for (uint32_t b0 = 0; b0 < cols; b0 += wb) {
        double A = 0;
        for (uint32_t i = b0; i < b0 + wb; i++)
            A = fmax(A, fabs(wd[i]));
        for (uint32_t i = b0; i < b0 + wb; i++)
            s += (fabs(wd[i]) + (wb == 256 ? 2 * A : 0)) * fabs(x[i]);
    }
    return act + (cols + 64) * 0x1.0p-24 * s;
}

static void check_matmul(ft_dtype_t wt, uint32_t rows, uint32_t cols, uint32_t n_tok, uint32_t r0,
                         uint32_t r1, size_t pad, uint64_t seed)
{
    uint64_t s = seed;
    struct weights m = make_weights(wt, rows, cols, pad, &s);
    const size_t ldx = cols + 5, ldy = rows + 3;
    float *x = malloc(n_tok * ldx * sizeof(float));
    float *y = malloc(n_tok * ldy * sizeof(float));
    const size_t xrb = ft_cpu_act_row_bytes(wt, cols);
    uint8_t *xp = malloc(n_tok * xrb + 1);
    assert_true(x && y && xp);
    for (size_t i = 0; i < n_tok * ldx; i++)
        x[i] = rng_uniform(&s) * (i % 7 == 0 ? 3.0f : 1.0f);
    for (size_t i = 0; i < n_tok * ldy; i++)
        y[i] = -12345.0f;
    xp[n_tok * xrb] = 0x5a;
    ft_cpu_act_prepare(wt, x, ldx, n_tok, cols, xp);
    assert_int_equal(xp[n_tok * xrb], 0x5a);
    ft_cpu_matmul(wt, m.w, m.row_bytes, xp, n_tok, cols, r0, r1, y, ldy);
    for (uint32_t t = 0; t < n_tok; t++) {
        for (uint32_t r = 0; r < ldy; r++) {
            const float got = y[t * ldy + r];
            if (r < r0 || r >= r1) {
                if (got != -12345.0f)
                    fail_msg("%s: row %u outside [%u, %u) was written", ft_dtype_name(wt), r, r0, r1);
                continue;
            }
            double ref = 0;
            for (uint32_t c = 0; c < cols; c++)
                ref += (double)m.deq[(size_t)r * cols + c] * x[t * ldx + c];
            const double tol = dot_tolerance(wt, m.deq + (size_t)r * cols, x + t * ldx, cols);
            if (!(fabs(got - ref) <= tol))
                fail_msg("%s %ux%u n_tok %u: y[%u][%u] = %.9g, float64 reference %.9g, "
                         "difference %.3g above the tolerance %.3g",
                         ft_dtype_name(wt), rows, cols, n_tok, t, r, got, ref, fabs(got - ref), tol);
        }
    }
    free(x);
    free(y);
    free(xp);
    free(m.w);
    free(m.deq);
}

static void test_matmul_all_formats(void **state)
{
    (void)state;
    const uint32_t toks[] = {1, 3, 17, 64};
    uint64_t seed = 1;
    for (int f = 0; f < N_FORMATS; f++) {
        const ft_dtype_t wt = k_formats[f];
        const uint32_t b = block_of(wt);
        /* float formats also get column counts that leave a SIMD tail */
        const uint32_t cols_set[] = {b == 1 ? 7u : b, b == 1 ? 45u : 3 * b,
                                     b == 256 ? 1024u : b == 1 ? 1000u : 1024u};
        for (size_t c = 0; c < 3; c++) {
            for (size_t t = 0; t < sizeof(toks) / sizeof(toks[0]); t++) {
                const uint32_t cols = cols_set[c], n_tok = toks[t];
                const uint32_t rows = 1 + 2 * (uint32_t)(seed % 9); /* odd */
                check_matmul(wt, rows, cols, n_tok, 0, rows, 0, seed++);
                /* a row sub-range and padded row stride */
                check_matmul(wt, 37, cols, n_tok, 5, 36, 16, seed++);
            }
        }
    }
}

/* Prefill tiling: enough rows and tokens that both the weight-row blocks
 * (64 KiB) and the activation tiles (256 KiB) wrap more than once. */
static void test_matmul_tiling(void **state)
{
    (void)state;
    check_matmul(FT_DTYPE_Q8_0, 70, 4096, 70, 0, 70, 0, 77);
    check_matmul(FT_DTYPE_Q4_K, 33, 8192, 40, 3, 30, 0, 78);
    check_matmul(FT_DTYPE_F16, 40, 2048, 36, 1, 40, 4, 79);
}

/* The portable and SIMD tiers agree within the float rounding bound (b);
 * without a SIMD tier both are the same function. */
static void test_tiers_agree(void **state)
{
    (void)state;
    uint64_t s = 4242;
    const uint32_t cols = 2048;
    for (int f = 0; f < N_FORMATS; f++) {
        const ft_dtype_t wt = k_formats[f];
        const ft_cpu_dot_fn fast = ft_cpu_dot_for(wt, 0), ref = ft_cpu_dot_for(wt, 1);
        assert_non_null(fast);
        assert_non_null(ref);
        struct weights m = make_weights(wt, 16, cols, 0, &s);
        float x[2048];
        uint8_t xp[2048 * 4];
        for (int r = 0; r < 16; r++) {
            for (uint32_t i = 0; i < cols; i++)
                x[i] = rng_uniform(&s);
            ft_cpu_act_prepare(wt, x, cols, 1, cols, xp);
            float xd[2048]; /* what the kernels multiply: the prepared row */
            ft_dequantize_row(ft_cpu_act_type(wt), xp, xd, cols);
            const float a = fast(cols, m.w + r * m.row_bytes, xp);
            const float b = ref(cols, m.w + r * m.row_bytes, xp);
            double sabs = 0;
            for (uint32_t i = 0; i < cols; i++)
                sabs += fabs(m.deq[(size_t)r * cols + i]) * 3 * fabs(xd[i]);
            const double tol = 2 * (cols + 64) * 0x1.0p-24 * sabs;
            if (!(fabs((double)a - b) <= tol))
                fail_msg("%s: SIMD %.9g vs portable %.9g differ by more than %.3g",
                         ft_dtype_name(wt), a, b, tol);
        }
        free(m.w);
        free(m.deq);
    }
}

static void test_act_prepare_and_dequantize(void **state)
{
    (void)state;
    float x[2][512], y[512];
    uint64_t s = 9;
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < 512; i++)
            x[t][i] = rng_uniform(&s);
    for (int f = 0; f < N_FORMATS; f++) {
        const ft_dtype_t wt = k_formats[f];
        assert_true(ft_cpu_supports(wt));
        const ft_dtype_t at = ft_cpu_act_type(wt);
        uint64_t rb;
        assert_true(ft_dtype_row_bytes(at, 512, &rb));
        assert_int_equal(ft_cpu_act_row_bytes(wt, 512), rb);
        uint8_t out[2 * 512 * 4], expect[512 * 4];
        ft_cpu_act_prepare(wt, &x[0][0], 512, 2, 512, out);
        for (int t = 0; t < 2; t++) {
            ft_quantize_row(at, x[t], expect, 512);
            assert_memory_equal(out + t * rb, expect, rb);
        }
        /* dequantize_row: the weight row decoded exactly as format/ does */
        uint8_t w[512 * 4];
        float ref[512];
        ft_quantize_row(wt, x[0], w, 512);
        ft_dequantize_row(wt, w, ref, 512);
        ft_cpu_dequantize_row(wt, w, y, 512);
        assert_memory_equal(y, ref, sizeof(y));
    }
    assert_false(ft_cpu_supports(FT_DTYPE_Q8_1));
    assert_false(ft_cpu_supports(FT_DTYPE_I32));
    assert_int_equal(ft_cpu_act_type(FT_DTYPE_Q4_K), FT_DTYPE_Q8_K);
    assert_int_equal(ft_cpu_act_type(FT_DTYPE_Q4_0), FT_DTYPE_Q8_0);
    assert_int_equal(ft_cpu_act_type(FT_DTYPE_BF16), FT_DTYPE_F32);
}

struct split_ctx {
    const struct weights *m;
    const void *xp;
    uint32_t rows, cols, n_tok;
    float *y;
};

static void split_fn(void *p, uint32_t idx, uint32_t n)
{
    const struct split_ctx *c = p;
    uint64_t b, e;
    ft_split_range(c->rows, 4, idx, n, &b, &e);
    ft_cpu_matmul(FT_DTYPE_Q6_K, c->m->w, c->m->row_bytes, c->xp, c->n_tok, c->cols, (uint32_t)b,
                  (uint32_t)e, c->y, c->rows);
}

/* Rows split over threads give exactly the single-threaded result. */
static void test_matmul_threaded(void **state)
{
    (void)state;
    uint64_t s = 31;
    const uint32_t rows = 67, cols = 512, n_tok = 5;
    struct weights m = make_weights(FT_DTYPE_Q6_K, rows, cols, 0, &s);
    float x[5 * 512], y1[5 * 67], y2[5 * 67];
    uint8_t xp[5 * 2 * FT_Q8_K_BLOCK_BYTES];
    for (int i = 0; i < 5 * 512; i++)
        x[i] = rng_uniform(&s);
    ft_cpu_act_prepare(FT_DTYPE_Q6_K, x, cols, n_tok, cols, xp);
    ft_cpu_matmul(FT_DTYPE_Q6_K, m.w, m.row_bytes, xp, n_tok, cols, 0, rows, y1, rows);
    ft_threadpool_t *pool;
    assert_null(ft_threadpool_create(3, &pool));
    struct split_ctx c = {&m, xp, rows, cols, n_tok, y2};
    ft_threadpool_run(pool, split_fn, &c);
    ft_threadpool_destroy(pool);
    assert_memory_equal(y1, y2, sizeof(y1));
    free(m.w);
    free(m.deq);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_all_formats),
        cmocka_unit_test(test_matmul_tiling),
        cmocka_unit_test(test_tiers_agree),
        cmocka_unit_test(test_act_prepare_and_dequantize),
        cmocka_unit_test(test_matmul_threaded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
