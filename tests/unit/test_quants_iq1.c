/* IQ1_S and IQ1_M (runtime/format/quant_iq1.c, the codebook iq1s_kgrid of
 * iq_grids.inc, the CPU dots of backends/cpu/dot_iq_grid.c):
 *
 *  - The codebook: 2048 strictly increasing entries, every 2-bit field in
 *    0..2; checked against the two other forms ggml keeps it in
 *    (ggml-common.h, MIT licence): entries of iq1s_grid (uint64, byte j =
 *    element j, 0xff for -1) at 96 indices spread over the table,
 *    including its last 16, and the first 96 entries of iq1s_grid_gpu
 *    (element j in nibble 2 (j % 4) + j / 4, holding value + 1), copied
 *    below. (When the table was transcribed, all of iq1s_grid_gpu's first
 *    648 entries and iq1s_grid's last 60 were compared as well.)
 *  - Decoding: random blocks (finite fp16 d of either sign), every one of
 *    the 2048 grid indices seen, against float64 decoders written here in
 *    the form of ggml's dequantize_row_iq1_s / _m (dl (grid + delta); the
 *    factors are exact in float32, so y == (float)exact bit for bit).
 *  - Quantizing (ours, a least-squares grid fit, not ggml's imatrix
 *    quantizer): zero rows give zeros, hostile rows do not crash, ordinary
 *    rows round-trip within an rms bound printed and checked.
 *  - Dot products with Q8_K activations against the float64 sum of the
 *    dequantized products: exact int32 sums, then per super-block the
 *    int32 sum as a float (one rounding above 2^24), two products and the
 *    running float32 sum: |y - ref| <= 2^-24 (4 + nb) sum |w a|. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/backends/cpu/cpu_dot.h"
#include "../../runtime/format/convert.h"
#include "../../runtime/format/iq_grids.h"

#include <math.h>
#include <string.h>

enum { COLS = 512, NB = COLS / 256, MAX_BYTES = NB * 56 };

/* ggml-common.h iq1s_grid[index]. */
static const struct {
    int i;
    uint64_t g;
} k_iq1s_grid[] = {
    {48, 0xffffff01ffffffff},   {49, 0xffffff01ffffff01},   {50, 0xffffff01ffff01ff},
    {51, 0xffffff01ffff0101},   {52, 0xffffff01ff000000},   {53, 0xffffff01ff01ffff},
    {54, 0xffffff01ff01ff01},   {55, 0xffffff01ff0101ff},   {84, 0xffff00ff01000100},
    {85, 0xffff00ff01010000},   {86, 0xffff0000ffffff00},   {87, 0xffff0000ffff00ff},
    {292, 0xff0000ff01000101},  {293, 0xff0000ff0101ff00},  {294, 0xff0000ff010100ff},
    {295, 0xff0000ff01010000},  {460, 0xff01ffff0101ffff},  {461, 0xff01ffff0101ff01},
    {462, 0xff01ffff01010000},  {463, 0xff01ffff010101ff},  {624, 0xff01010101000000},
    {625, 0xff0101010101ffff},  {626, 0xff0101010101ff01},  {627, 0xff010101010101ff},
    {628, 0xff01010101010101},  {629, 0x00ffffffffff0000},  {630, 0x00ffffffff00ff00},
    {631, 0x00ffffffff000001},  {768, 0x00ff0001ff0100ff},  {769, 0x00ff0001ff010100},
    {770, 0x00ff000100ffffff},  {771, 0x00ff000100ffff01},  {904, 0x0000ff0000ff0001},
    {905, 0x0000ff0000ff0100},  {906, 0x0000ff000000ffff},  {907, 0x0000ff000000ff00},
    {908, 0x0000ff000000ff01},  {909, 0x0000ff00000000ff},  {910, 0x0000ff0000000000},
    {911, 0x0000ff0000000001},  {1016, 0x00000000ff010100}, {1017, 0x0000000000ffffff},
    {1018, 0x0000000000ffff00}, {1019, 0x0000000000ffff01}, {1020, 0x0000000000ff00ff},
    {1021, 0x0000000000ff0000}, {1022, 0x0000000000ff0001}, {1023, 0x0000000000ff01ff},
    {1140, 0x000001ff0101ff00}, {1141, 0x000001ff01010100}, {1142, 0x00000100ffffff00},
    {1143, 0x00000100ffffff01}, {1260, 0x0001ff0100000001}, {1261, 0x0001ff01000001ff},
    {1262, 0x0001ff010001ffff}, {1263, 0x0001ff0101ff0000}, {1368, 0x000101ffff000001},
    {1369, 0x000101ffff000100}, {1370, 0x000101ffff010000}, {1371, 0x000101ff00ffff00},
    {1468, 0x01ffff0000010001}, {1469, 0x01ffff0000010100}, {1470, 0x01ffff0001ff0000},
    {1471, 0x01ffff0001ff0100}, {1544, 0x01ff000100ffff00}, {1545, 0x01ff000100ff00ff},
    {1546, 0x01ff000100ff0100}, {1547, 0x01ff000100ff0101}, {1612, 0x01ff0101ff010101},
    {1613, 0x01ff010100ff0000}, {1614, 0x01ff01010000ff00}, {1615, 0x01ff0101000000ff},
    {1656, 0x0100ff00ff010001}, {1657, 0x0100ff00ff010100}, {1658, 0x0100ff0000ffffff},
    {1659, 0x0100ff0000ff0000}, {1660, 0x0100ff000000ffff}, {1661, 0x0100ff000000ff00},
    {1662, 0x0100ff00000000ff}, {1663, 0x0100ff0000000000}, {2032, 0x01010101ff01ffff},
    {2033, 0x01010101ff01ff01}, {2034, 0x01010101ff0101ff}, {2035, 0x01010101ff010101},
    {2036, 0x010101010000ff00}, {2037, 0x01010101000000ff}, {2038, 0x0101010100000001},
    {2039, 0x0101010101ffffff}, {2040, 0x0101010101ffff01}, {2041, 0x0101010101ff01ff},
    {2042, 0x0101010101ff0101}, {2043, 0x0101010101000000}, {2044, 0x010101010101ffff},
    {2045, 0x010101010101ff01}, {2046, 0x01010101010101ff}, {2047, 0x0101010101010101},
};

/* ggml-common.h iq1s_grid_gpu[0..95]. */
static const uint32_t k_iq1s_grid_gpu[96] = {
    0x00000000, 0x00000002, 0x00000101, 0x00000200, 0x00000202, 0x00010001, 0x00010101, 0x00020000,
    0x00020002, 0x00020200, 0x00020202, 0x01000101, 0x01010001, 0x01010100, 0x01010102, 0x01020101,
    0x02000000, 0x02000002, 0x02000200, 0x02000202, 0x02010101, 0x02020000, 0x02020002, 0x02020200,
    0x02020202, 0x00000110, 0x00000111, 0x00010011, 0x00010110, 0x00010112, 0x00010211, 0x00010212,
    0x00020111, 0x01000011, 0x01000112, 0x01000211, 0x01010012, 0x01010111, 0x01010212, 0x01020011,
    0x01020110, 0x01020112, 0x01020210, 0x02000111, 0x02010011, 0x02010110, 0x02010112, 0x02020111,
    0x00000020, 0x00000022, 0x00000220, 0x00000222, 0x00010121, 0x00020020, 0x00020022, 0x00020220,
    0x00020222, 0x01000121, 0x01010021, 0x01010221, 0x01020120, 0x01020221, 0x02000020, 0x02000022,
    0x02000220, 0x02000222, 0x02010021, 0x02010121, 0x02010221, 0x02020020, 0x02020022, 0x02020220,
    0x02020222, 0x00011001, 0x00011100, 0x00011102, 0x00021101, 0x01001001, 0x01001201, 0x01011101,
    0x01011202, 0x01021100, 0x01021101, 0x02011001, 0x02011201, 0x02021101, 0x00001011, 0x00001110,
    0x00001111, 0x00001112, 0x00011111, 0x00011210, 0x00011212, 0x00021211, 0x01001010, 0x01001111,
};

static uint64_t g_rng = 0x2545f4914f6cdd1dull;

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

/* A finite fp16 in +-[2^-12, 2^4). */
static uint16_t rnd_scale(void)
{
    return (uint16_t)((rnd_u32() & 1 ? 0x8000 : 0) | (3 + rnd_u32() % 16) << 10 |
                      (rnd_u32() & 0x3ff));
}

/* ggml's iq1s_grid entry k, built from the compact table. */
static uint64_t grid64(int k)
{
    uint64_t u = 0;
    for (int j = 0; j < 8; j++)
        u |= (uint64_t)(uint8_t)(int8_t)((int)((ft_iq1s_kgrid[k] >> 2 * j) & 3) - 1) << 8 * j;
    return u;
}

/* ---- float64 decoders in the form of ggml's dequantize_row_iq1_s / _m ---- */
#define IQ1S_DELTA 0.125

static void dec_iq1_s(const uint8_t *b, double *y, uint8_t *seen)
{
    uint16_t dh, qh[8];
    memcpy(&dh, b, 2);
    memcpy(qh, b + 34, 16);
    const double d = (double)ft_fp16_to_fp32(dh);
    const uint8_t *qs = b + 2;
    for (int ib = 0; ib < 8; ++ib) {
        const double dl = d * (2 * ((qh[ib] >> 12) & 7) + 1);
        const double delta = qh[ib] & 0x8000 ? -IQ1S_DELTA : IQ1S_DELTA;
        for (int l = 0; l < 4; ++l) {
            const int idx = qs[l] | (((qh[ib] >> 3 * l) & 7) << 8);
            const uint64_t g = grid64(idx);
            const int8_t *grid = (const int8_t *)&g;
            seen[idx] = 1;
            for (int j = 0; j < 8; ++j)
                y[j] = dl * (grid[j] + delta);
            y += 8;
        }
        qs += 4;
    }
}

static void dec_iq1_m(const uint8_t *b, double *y, uint8_t *seen)
{
    uint16_t sc[4];
    memcpy(sc, b + 48, 8);
    const uint16_t dh = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) |
                                   ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
    const double d = (double)ft_fp16_to_fp32(dh);
    const uint8_t *qs = b, *qh = b + 32;
    for (int ib = 0; ib < 8; ++ib) {
        const double dl1 = d * (2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 0x7) + 1);
        const double dl2 = d * (2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 0x7) + 1);
        const int idx[4] = {qs[0] | ((qh[0] << 8) & 0x700), qs[1] | ((qh[0] << 4) & 0x700),
                            qs[2] | ((qh[1] << 8) & 0x700), qs[3] | ((qh[1] << 4) & 0x700)};
        const double delta[4] = {
            qh[0] & 0x08 ? -IQ1S_DELTA : IQ1S_DELTA, qh[0] & 0x80 ? -IQ1S_DELTA : IQ1S_DELTA,
            qh[1] & 0x08 ? -IQ1S_DELTA : IQ1S_DELTA, qh[1] & 0x80 ? -IQ1S_DELTA : IQ1S_DELTA};
        for (int l = 0; l < 4; ++l) {
            const uint64_t g = grid64(idx[l]);
            const int8_t *grid = (const int8_t *)&g;
            seen[idx[l]] = 1;
            for (int j = 0; j < 8; ++j)
                y[j] = (l < 2 ? dl1 : dl2) * (grid[j] + delta[l]);
            y += 8;
        }
        qs += 4;
        qh += 2;
    }
}

typedef struct fmt {
    ft_dtype_t t;
    uint32_t bytes;
    void (*dec)(const uint8_t *b, double *y, uint8_t *seen);
    double rms_bound; /* of the round trip, relative to the rows' rms */
} fmt_t;

static const fmt_t k_fmts[] = {
    {FT_DTYPE_IQ1_S, 50, dec_iq1_s, 0.6},
    {FT_DTYPE_IQ1_M, 56, dec_iq1_m, 0.55},
};
enum { N_FMTS = sizeof(k_fmts) / sizeof(k_fmts[0]) };

static void test_codebook(void **state)
{
    (void)state;
    assert_int_equal(sizeof(ft_iq1s_kgrid) / sizeof(ft_iq1s_kgrid[0]), 2048);
    for (int k = 0; k < 2048; k++) {
        if (k && !(ft_iq1s_kgrid[k] > ft_iq1s_kgrid[k - 1]))
            fail_msg("iq1s_kgrid[%d] is not above [%d]", k, k - 1);
        for (int j = 0; j < 8; j++)
            if (((ft_iq1s_kgrid[k] >> 2 * j) & 3) == 3) fail_msg("iq1s_kgrid[%d] element %d", k, j);
    }
    for (size_t i = 0; i < sizeof(k_iq1s_grid) / sizeof(k_iq1s_grid[0]); i++)
        if (grid64(k_iq1s_grid[i].i) != k_iq1s_grid[i].g)
            fail_msg("iq1s_grid[%d]: %016llx, ggml's %016llx", k_iq1s_grid[i].i,
                     (unsigned long long)grid64(k_iq1s_grid[i].i),
                     (unsigned long long)k_iq1s_grid[i].g);
    for (int k = 0; k < 96; k++) {
        uint32_t u = 0;
        for (int j = 0; j < 8; j++)
            u |= (uint32_t)((ft_iq1s_kgrid[k] >> 2 * j) & 3) << (8 * (j % 4) + 4 * (j / 4));
        if (u != k_iq1s_grid_gpu[k]) fail_msg("iq1s_grid_gpu[%d]", k);
    }
}

static void random_blocks(const fmt_t *f, uint8_t *w)
{
    for (uint32_t i = 0; i < NB * f->bytes; i++)
        w[i] = (uint8_t)rnd_u32();
    for (int b = 0; b < NB; b++) {
        uint8_t *p = w + b * f->bytes;
        const uint16_t h = rnd_scale();
        if (f->t == FT_DTYPE_IQ1_S) {
            p[0] = (uint8_t)h;
            p[1] = (uint8_t)(h >> 8);
        } else {
            for (int i = 0; i < 4; i++)
                p[49 + 2 * i] = (uint8_t)((p[49 + 2 * i] & 0x0f) | ((h >> 4 * i) & 15) << 4);
        }
    }
}

static void test_dequantize_exact(void **state)
{
    (void)state;
    for (int k = 0; k < N_FMTS; k++) {
        const fmt_t *f = &k_fmts[k];
        assert_int_equal(ft_dtype_info(f->t)->block_bytes, f->bytes);
        assert_true(ft_quant_supported(f->t));
        uint8_t seen[2048] = {0};
        for (int rep = 0; rep < 1500; rep++) {
            uint8_t w[MAX_BYTES];
            float y[COLS];
            double ref[256];
            random_blocks(f, w);
            ft_dequantize_row(f->t, w, y, COLS);
            for (int b = 0; b < NB; b++) {
                f->dec(w + b * f->bytes, ref, seen);
                for (int j = 0; j < 256; j++)
                    if (y[256 * b + j] != (float)ref[j])
                        fail_msg("%s rep %d block %d element %d: %.9g, expected %.9g",
                                 ft_dtype_name(f->t), rep, b, j, y[256 * b + j], ref[j]);
            }
        }
        for (int i = 0; i < 2048; i++)
            if (!seen[i]) fail_msg("%s: grid index %d never decoded", ft_dtype_name(f->t), i);
    }
}

static void test_quantize(void **state)
{
    (void)state;
    for (int k = 0; k < N_FMTS; k++) {
        const fmt_t *f = &k_fmts[k];
        const char *name = ft_dtype_name(f->t);
        float x[COLS], y[COLS];
        uint8_t w[MAX_BYTES];
        memset(x, 0, sizeof(x));
        ft_quantize_row(f->t, x, w, COLS);
        ft_dequantize_row(f->t, w, y, COLS);
        for (int i = 0; i < COLS; i++)
            assert_true(y[i] == 0);
        /* ordinary rows at several scales */
        double e2 = 0, x2 = 0;
        for (int rep = 0; rep < 20; rep++) {
            const double scale = pow(10.0, rep % 5 - 2.0);
            for (int i = 0; i < COLS; i++)
                x[i] = (float)(scale * (rnd_sym() + rnd_sym() + rnd_sym()));
            ft_quantize_row(f->t, x, w, COLS);
            ft_dequantize_row(f->t, w, y, COLS);
            for (int i = 0; i < COLS; i++) {
                e2 += ((double)y[i] - x[i]) * ((double)y[i] - x[i]) / (scale * scale);
                x2 += (double)x[i] * x[i] / (scale * scale);
            }
        }
        print_message("%s: round-trip rms error %.3g of the rms value (bound %.2g)\n", name,
                      sqrt(e2 / x2), f->rms_bound);
        assert_true(sqrt(e2 / x2) < f->rms_bound);
        /* a row on the grid's own levels, every group a random point with
         * delta +1/8 and the largest scale (x = 15/8 (grid + 1/8): d = 1/8,
         * ls = 7), comes back exactly */
        for (int g = 0; g < COLS / 8; g++) {
            const int pk = (int)(rnd_u32() % 2048);
            for (int j = 0; j < 8; j++)
                x[8 * g + j] =
                    (float)(15.0 / 8 * ((int)((ft_iq1s_kgrid[pk] >> 2 * j) & 3) - 1 + 0.125));
        }
        ft_quantize_row(f->t, x, w, COLS);
        ft_dequantize_row(f->t, w, y, COLS);
        double worst = 0;
        for (int i = 0; i < COLS; i++)
            worst = fmax(worst, fabs((double)y[i] - x[i]));
        if (worst != 0) fail_msg("%s: a row on the grid comes back with error %.3g", name, worst);
        /* hostile rows: any bytes, no crash */
        const float hostile[] = {NAN, INFINITY, -INFINITY, 3e38f, -3e38f, 1e-30f};
        for (size_t h = 0; h < sizeof(hostile) / sizeof(hostile[0]); h++) {
            for (int i = 0; i < COLS; i++)
                x[i] = (float)rnd_sym();
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
        uint8_t seen[2048];
        for (int rep = 0; rep < 300; rep++) {
            uint8_t w[MAX_BYTES], xq[NB * FT_Q8_K_BLOCK_BYTES];
            float x[COLS], xf[COLS];
            double wd[COLS];
            if (rep % 4) {
                random_blocks(f, w);
            } else {
                for (int i = 0; i < COLS; i++)
                    x[i] = (float)(rnd_sym() + rnd_sym());
                ft_quantize_row(f->t, x, w, COLS);
            }
            for (int i = 0; i < COLS; i++)
                x[i] = (float)rnd_sym() * (rep % 3 ? 1.0f : 30.0f);
            ft_cpu_act_prepare(f->t, x, COLS, 1, COLS, xq);
            ft_dequantize_row(FT_DTYPE_Q8_K, xq, xf, COLS);
            for (int b = 0; b < NB; b++)
                f->dec(w + b * f->bytes, wd + 256 * b, seen);
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
        cmocka_unit_test(test_codebook),
        cmocka_unit_test(test_dequantize_exact),
        cmocka_unit_test(test_quantize),
        cmocka_unit_test(test_dot_products),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
