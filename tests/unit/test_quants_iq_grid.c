/* The IQ grid formats IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S
 * (runtime/format/quant_iq_grid.c, the codebooks of iq_grids.inc, the CPU
 * dots of backends/cpu/dot_iq_grid.c):
 *
 *  - The codebooks: their sizes, the value set of every byte (IQ2: 8, 25,
 *    43; IQ3_XXS: 4, 12, .., 52, 62; IQ3_S: 1, 3, .., 15), strictly
 *    increasing entries, ksigns_iq2xs[i] = i with the parity bit on top;
 *    and IQ2_XXS's and IQ2_XS's grids rebuilt from the second form ggml
 *    keeps them in (kgrid_2bit_256 / kgrid_2bit_512 of iq2xs_init_impl in
 *    ggml-quants.c, MIT licence: 2 bits per element indexing {8, 25, 43}),
 *    copied below: the two copies must agree entry for entry.
 *  - Decoding: random blocks (finite fp16 d of either sign), every grid
 *    index of each codebook seen, against float64 decoders written here in
 *    the form of ggml's dequantize_row_iq* (the factors are exact in
 *    float32, so y == (float)exact bit for bit).
 *  - Quantizing (ours, a nearest-grid fit): zero rows give zeros, hostile
 *    rows do not crash, ordinary rows round-trip within an rms bound
 *    printed and checked, and the written blocks decode to what the fit
 *    chose (every group's signs satisfy the parity rule of the format).
 *  - Dot products with Q8_K activations against the float64 sum of the
 *    dequantized products: exact int32 sums, then per super-block the
 *    int32 sum as a float (one rounding above 2^24), two products, and the
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

enum { COLS = 512, NB = COLS / 256, MAX_BYTES = NB * 110 };

/* kgrid_2bit_256 and kgrid_2bit_512 (ggml-quants.c, iq2xs_init_impl). */
static const uint16_t k_kgrid_256[256] = {
    0,     2,     5,     8,     10,    17,    20,    32,    34,    40,    42,    65,    68,
    80,    88,    97,    100,   128,   130,   138,   162,   257,   260,   272,   277,   320,
    388,   408,   512,   514,   546,   642,   1025,  1028,  1040,  1057,  1060,  1088,  1090,
    1096,  1120,  1153,  1156,  1168,  1188,  1280,  1282,  1288,  1312,  1350,  1385,  1408,
    1425,  1545,  1552,  1600,  1668,  1700,  2048,  2053,  2056,  2068,  2088,  2113,  2116,
    2128,  2130,  2184,  2308,  2368,  2562,  2580,  4097,  4100,  4112,  4129,  4160,  4192,
    4228,  4240,  4245,  4352,  4360,  4384,  4432,  4442,  4480,  4644,  4677,  5120,  5128,
    5152,  5157,  5193,  5248,  5400,  5474,  5632,  5654,  6145,  6148,  6160,  6208,  6273,
    6400,  6405,  6560,  6737,  8192,  8194,  8202,  8260,  8289,  8320,  8322,  8489,  8520,
    8704,  8706,  9217,  9220,  9232,  9280,  9302,  9472,  9537,  9572,  9872,  10248, 10272,
    10388, 10820, 16385, 16388, 16400, 16408, 16417, 16420, 16448, 16456, 16470, 16480, 16513,
    16516, 16528, 16640, 16672, 16737, 16768, 16773, 16897, 16912, 16968, 16982, 17000, 17408,
    17416, 17440, 17536, 17561, 17682, 17700, 17920, 18433, 18436, 18448, 18496, 18501, 18688,
    18776, 18785, 18818, 19013, 19088, 20480, 20488, 20497, 20505, 20512, 20608, 20616, 20740,
    20802, 20900, 21137, 21648, 21650, 21770, 22017, 22100, 22528, 22545, 22553, 22628, 22848,
    23048, 24580, 24592, 24640, 24680, 24832, 24917, 25112, 25184, 25600, 25605, 25872, 25874,
    25988, 26690, 32768, 32770, 32778, 32833, 32898, 33028, 33048, 33088, 33297, 33793, 33796,
    33808, 33813, 33856, 33888, 34048, 34118, 34196, 34313, 34368, 34400, 34818, 35076, 35345,
    36868, 36880, 36900, 36928, 37025, 37142, 37248, 37445, 37888, 37922, 37956, 38225, 39041,
    39200, 40962, 41040, 41093, 41225, 41472, 42008, 43088, 43268,
};
static const uint16_t k_kgrid_512[512] = {
    0,     2,     5,     8,     10,    17,    20,    22,    25,    32,    34,    37,    40,
    65,    68,    70,    73,    80,    82,    85,    88,    97,    100,   128,   130,   133,
    136,   145,   148,   153,   160,   257,   260,   262,   265,   272,   274,   277,   280,
    282,   289,   292,   320,   322,   325,   328,   337,   340,   352,   360,   385,   388,
    400,   512,   514,   517,   520,   529,   532,   544,   577,   580,   592,   597,   640,
    650,   1025,  1028,  1030,  1033,  1040,  1042,  1045,  1048,  1057,  1060,  1088,  1090,
    1093,  1096,  1105,  1108,  1110,  1120,  1153,  1156,  1168,  1280,  1282,  1285,  1288,
    1297,  1300,  1312,  1345,  1348,  1360,  1377,  1408,  1537,  1540,  1552,  1574,  1600,
    1602,  1668,  2048,  2050,  2053,  2056,  2058,  2065,  2068,  2080,  2085,  2113,  2116,
    2128,  2136,  2176,  2208,  2218,  2305,  2308,  2320,  2368,  2433,  2441,  2560,  2592,
    2600,  2710,  2720,  4097,  4100,  4102,  4105,  4112,  4114,  4117,  4120,  4129,  4132,
    4160,  4162,  4165,  4168,  4177,  4180,  4192,  4202,  4225,  4228,  4240,  4352,  4354,
    4357,  4360,  4369,  4372,  4384,  4417,  4420,  4432,  4480,  4500,  4502,  4609,  4612,
    4614,  4624,  4672,  4704,  5120,  5122,  5125,  5128,  5137,  5140,  5152,  5185,  5188,
    5193,  5200,  5220,  5248,  5377,  5380,  5392,  5440,  5632,  5652,  5705,  6145,  6148,
    6160,  6162,  6208,  6228,  6278,  6400,  6405,  6502,  6737,  6825,  8192,  8194,  8197,
    8200,  8202,  8209,  8212,  8224,  8257,  8260,  8272,  8320,  8352,  8449,  8452,  8464,
    8512,  8520,  8549,  8704,  8738,  8832,  8872,  9217,  9220,  9232,  9257,  9280,  9472,
    9537,  9554,  9625,  9729,  9754,  9894,  10240, 10248, 10250, 10272, 10325, 10376, 10402,
    10600, 10640, 10760, 10784, 10882, 10888, 10890, 16385, 16388, 16390, 16393, 16400, 16402,
    16405, 16408, 16417, 16420, 16448, 16450, 16453, 16456, 16458, 16465, 16468, 16480, 16485,
    16513, 16516, 16528, 16640, 16642, 16645, 16648, 16657, 16660, 16672, 16705, 16708, 16720,
    16768, 16773, 16802, 16897, 16900, 16912, 16914, 16937, 16960, 17408, 17410, 17413, 17416,
    17425, 17428, 17433, 17440, 17473, 17476, 17488, 17536, 17556, 17665, 17668, 17680, 17700,
    17728, 17818, 17920, 17930, 17988, 18000, 18433, 18436, 18448, 18496, 18501, 18516, 18530,
    18688, 18705, 18756, 18768, 18793, 18948, 20480, 20482, 20485, 20488, 20497, 20500, 20512,
    20520, 20545, 20548, 20560, 20608, 20737, 20740, 20752, 20757, 20800, 20802, 20992, 21060,
    21162, 21505, 21508, 21520, 21537, 21568, 21600, 21633, 21665, 21760, 21768, 21888, 21896,
    22049, 22120, 22177, 22528, 22548, 22593, 22608, 22681, 22810, 22848, 22850, 23173, 24577,
    24580, 24592, 24640, 24660, 24674, 24710, 24745, 24832, 25124, 25162, 25234, 25600, 25622,
    25872, 25920, 25925, 26020, 26625, 26730, 26917, 27142, 27220, 27234, 32768, 32770, 32773,
    32776, 32785, 32788, 32800, 32810, 32833, 32836, 32848, 32896, 32898, 32936, 32938, 33025,
    33028, 33030, 33040, 33088, 33105, 33113, 33280, 33312, 33408, 33410, 33440, 33448, 33793,
    33796, 33808, 33810, 33813, 33856, 33888, 33929, 34048, 34116, 34213, 34328, 34410, 34816,
    34824, 34853, 34906, 34944, 34946, 34984, 35078, 35362, 35456, 35464, 35478, 35496, 36865,
    36868, 36880, 36928, 36950, 36996, 37120, 37154, 37220, 37462, 37513, 37888, 37893, 37956,
    37968, 37976, 38185, 38288, 38290, 38465, 38993, 39078, 39241, 39445, 39520, 40960, 40962,
    40968, 40970, 40992, 41002, 41120, 41297, 41305, 41382, 41472, 41474, 41480, 41514, 41600,
    41632, 42048, 42133, 42597, 42648, 43018, 43040, 43042, 43048, 43168, 43176, 43268, 43396,
    43398, 43560, 43562, 43665, 43690,
};

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

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

/* A finite fp16 in +-[2^-12, 2^4). */
static void put_scale(uint8_t *p)
{
    const uint16_t h =
        (uint16_t)((rnd_u32() & 1 ? 0x8000 : 0) | (3 + rnd_u32() % 16) << 10 | (rnd_u32() & 0x3ff));
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

/* ---- float64 decoders in the form of ggml's dequantize_row_iq* ---- */
static const uint8_t kmask_iq2xs[8] = {1, 2, 4, 8, 16, 32, 64, 128};

static void dec_iq2_xxs(const uint8_t *b, double *y, uint8_t *seen)
{
    const double d = f16(b);
    for (int ib32 = 0; ib32 < 8; ++ib32) {
        uint32_t aux32[2];
        memcpy(aux32, b + 2 + 8 * ib32, 8);
        const uint8_t *aux8 = (const uint8_t *)aux32;
        const double db = d * (0.5 + (aux32[1] >> 28)) * 0.25;
        for (int l = 0; l < 4; ++l) {
            const uint8_t *grid = (const uint8_t *)(ft_iq2xxs_grid + aux8[l]);
            const uint8_t signs = ft_ksigns_iq2xs[(aux32[1] >> 7 * l) & 127];
            seen[aux8[l]] = 1;
            for (int j = 0; j < 8; ++j)
                y[j] = db * grid[j] * (signs & kmask_iq2xs[j] ? -1.0 : 1.0);
            y += 8;
        }
    }
}

static void dec_iq2_xs(const uint8_t *b, double *y, uint8_t *seen)
{
    const double d = f16(b);
    for (int ib32 = 0; ib32 < 8; ++ib32) {
        const uint8_t sc = b[66 + ib32];
        const double db[2] = {d * (0.5 + (sc & 0xf)) * 0.25, d * (0.5 + (sc >> 4)) * 0.25};
        for (int l = 0; l < 4; ++l) {
            uint16_t qs;
            memcpy(&qs, b + 2 + 2 * (4 * ib32 + l), 2);
            const uint8_t *grid = (const uint8_t *)(ft_iq2xs_grid + (qs & 511));
            const uint8_t signs = ft_ksigns_iq2xs[qs >> 9];
            seen[qs & 511] = 1;
            for (int j = 0; j < 8; ++j)
                y[j] = db[l / 2] * grid[j] * (signs & kmask_iq2xs[j] ? -1.0 : 1.0);
            y += 8;
        }
    }
}

static void dec_iq2_s(const uint8_t *b, double *y, uint8_t *seen)
{
    const double d = f16(b);
    const uint8_t *qs = b + 2, *qh = b + 66, *scales = b + 74;
    const uint8_t *signs = qs + 32;
    for (int ib32 = 0; ib32 < 8; ++ib32) {
        const double db[2] = {d * (0.5 + (scales[ib32] & 0xf)) * 0.25,
                              d * (0.5 + (scales[ib32] >> 4)) * 0.25};
        for (int l = 0; l < 4; ++l) {
            const int idx = qs[l] | (qh[ib32] << (8 - 2 * l) & 0x300);
            const uint8_t *grid = (const uint8_t *)(ft_iq2s_grid + idx);
            seen[idx] = 1;
            for (int j = 0; j < 8; ++j)
                y[j] = db[l / 2] * grid[j] * (signs[l] & kmask_iq2xs[j] ? -1.0 : 1.0);
            y += 8;
        }
        qs += 4;
        signs += 4;
    }
}

static void dec_iq3_xxs(const uint8_t *b, double *y, uint8_t *seen)
{
    const double d = f16(b);
    const uint8_t *qs = b + 2;
    const uint8_t *scales_and_signs = qs + 64;
    for (int ib32 = 0; ib32 < 8; ++ib32) {
        uint32_t aux32;
        memcpy(&aux32, scales_and_signs + 4 * ib32, 4);
        const double db = d * (0.5 + (aux32 >> 28)) * 0.5;
        for (int l = 0; l < 4; ++l) {
            const uint8_t signs = ft_ksigns_iq2xs[(aux32 >> 7 * l) & 127];
            const uint8_t *grid1 = (const uint8_t *)(ft_iq3xxs_grid + qs[2 * l + 0]);
            const uint8_t *grid2 = (const uint8_t *)(ft_iq3xxs_grid + qs[2 * l + 1]);
            seen[qs[2 * l]] = seen[qs[2 * l + 1]] = 1;
            for (int j = 0; j < 4; ++j) {
                y[j + 0] = db * grid1[j] * (signs & kmask_iq2xs[j + 0] ? -1.0 : 1.0);
                y[j + 4] = db * grid2[j] * (signs & kmask_iq2xs[j + 4] ? -1.0 : 1.0);
            }
            y += 8;
        }
        qs += 8;
    }
}

static void dec_iq3_s(const uint8_t *b, double *y, uint8_t *seen)
{
    const double d = f16(b);
    const uint8_t *qs = b + 2, *qh = b + 66, *signs = b + 74, *scales = b + 106;
    for (int ib32 = 0; ib32 < 8; ib32 += 2) {
        const double db1 = d * (1 + 2 * (scales[ib32 / 2] & 0xf));
        const double db2 = d * (1 + 2 * (scales[ib32 / 2] >> 4));
        for (int half = 0; half < 2; half++) {
            const double db = half ? db2 : db1;
            for (int l = 0; l < 4; ++l) {
                const int i1 = qs[2 * l + 0] | ((qh[half] << (8 - 2 * l)) & 256);
                const int i2 = qs[2 * l + 1] | ((qh[half] << (7 - 2 * l)) & 256);
                const uint8_t *grid1 = (const uint8_t *)(ft_iq3s_grid + i1);
                const uint8_t *grid2 = (const uint8_t *)(ft_iq3s_grid + i2);
                seen[i1] = seen[i2] = 1;
                for (int j = 0; j < 4; ++j) {
                    y[j + 0] = db * grid1[j] * (signs[l] & kmask_iq2xs[j + 0] ? -1.0 : 1.0);
                    y[j + 4] = db * grid2[j] * (signs[l] & kmask_iq2xs[j + 4] ? -1.0 : 1.0);
                }
                y += 8;
            }
            qs += 8;
            signs += 4;
        }
        qh += 2;
    }
}

typedef struct fmt {
    ft_dtype_t t;
    uint32_t bytes;
    void (*dec)(const uint8_t *b, double *y, uint8_t *seen);
    int n_grid;
    int parity;       /* sign patterns through ksigns (even count of negatives) */
    double rms_bound; /* of the round trip, relative to the rows' rms */
} fmt_t;

static const fmt_t k_fmts[] = {
    {FT_DTYPE_IQ2_XXS, 66, dec_iq2_xxs, 256, 1, 0.45},
    {FT_DTYPE_IQ2_XS, 74, dec_iq2_xs, 512, 1, 0.45},
    {FT_DTYPE_IQ2_S, 82, dec_iq2_s, 1024, 0, 0.45},
    {FT_DTYPE_IQ3_XXS, 98, dec_iq3_xxs, 256, 1, 0.3},
    {FT_DTYPE_IQ3_S, 110, dec_iq3_s, 512, 0, 0.3},
};
enum { N_FMTS = sizeof(k_fmts) / sizeof(k_fmts[0]) };

/* Every byte of n entries of w bytes in vals (n_vals of them), entries
 * strictly increasing. */
static void check_grid(const char *name, const void *grid, int n, int w, const int *vals,
                       int n_vals)
{
    for (int k = 0; k < n; k++) {
        uint64_t e = 0, prev = 0;
        memcpy(&e, (const uint8_t *)grid + (size_t)w * k, (size_t)w);
        if (k) memcpy(&prev, (const uint8_t *)grid + (size_t)w * (k - 1), (size_t)w);
        if (k && !(e > prev)) fail_msg("%s[%d] is not above [%d]", name, k, k - 1);
        for (int j = 0; j < w; j++) {
            const int v = (int)((e >> (8 * j)) & 0xff);
            int ok = 0;
            for (int i = 0; i < n_vals; i++)
                ok |= v == vals[i];
            if (!ok) fail_msg("%s[%d] byte %d is %d", name, k, j, v);
        }
    }
}

static void test_codebooks(void **state)
{
    (void)state;
    assert_int_equal(sizeof(ft_iq2xxs_grid) / 8, 256);
    assert_int_equal(sizeof(ft_iq2xs_grid) / 8, 512);
    assert_int_equal(sizeof(ft_iq2s_grid) / 8, 1024);
    assert_int_equal(sizeof(ft_iq3xxs_grid) / 4, 256);
    assert_int_equal(sizeof(ft_iq3s_grid) / 4, 512);
    const int v2[] = {8, 25, 43}, v3xxs[] = {4, 12, 20, 28, 36, 44, 52, 62},
              v3s[] = {1, 3, 5, 7, 9, 11, 13, 15};
    check_grid("iq2xxs_grid", ft_iq2xxs_grid, 256, 8, v2, 3);
    check_grid("iq2xs_grid", ft_iq2xs_grid, 512, 8, v2, 3);
    check_grid("iq2s_grid", ft_iq2s_grid, 1024, 8, v2, 3);
    check_grid("iq3xxs_grid", ft_iq3xxs_grid, 256, 4, v3xxs, 8);
    check_grid("iq3s_grid", ft_iq3s_grid, 512, 4, v3s, 8);
    for (int i = 0; i < 128; i++)
        assert_int_equal(ft_ksigns_iq2xs[i], i | (__builtin_popcount((unsigned)i) % 2) << 7);
    /* the second copy: 2 bits per element indexing {8, 25, 43} */
    for (int k = 0; k < 512; k++) {
        uint64_t a = 0, b = 0;
        for (int j = 0; j < 8; j++) {
            if (k < 256) a |= (uint64_t)v2[(k_kgrid_256[k] >> 2 * j) & 3] << 8 * j;
            b |= (uint64_t)v2[(k_kgrid_512[k] >> 2 * j) & 3] << 8 * j;
        }
        if (k < 256 && a != ft_iq2xxs_grid[k]) fail_msg("iq2xxs_grid[%d] != kgrid_2bit_256", k);
        if (b != ft_iq2xs_grid[k]) fail_msg("iq2xs_grid[%d] != kgrid_2bit_512", k);
    }
}

static void random_blocks(const fmt_t *f, uint8_t *w)
{
    for (uint32_t i = 0; i < NB * f->bytes; i++)
        w[i] = (uint8_t)rnd_u32();
    for (int b = 0; b < NB; b++)
        put_scale(w + b * f->bytes);
}

static void test_dequantize_exact(void **state)
{
    (void)state;
    for (int k = 0; k < N_FMTS; k++) {
        const fmt_t *f = &k_fmts[k];
        assert_int_equal(ft_dtype_info(f->t)->block_bytes, f->bytes);
        uint8_t seen[1024] = {0};
        for (int rep = 0; rep < 400; rep++) {
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
        for (int i = 0; i < f->n_grid; i++)
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
        /* zeros */
        memset(x, 0, sizeof(x));
        ft_quantize_row(f->t, x, w, COLS);
        ft_dequantize_row(f->t, w, y, COLS);
        for (int i = 0; i < COLS; i++)
            assert_true(y[i] == 0);
        /* ordinary rows at several scales: rms error, and signs kept but for
         * at most one element per group of 8 (the smallest, parity formats) */
        double e2 = 0, x2 = 0;
        for (int rep = 0; rep < 60; rep++) {
            const double scale = pow(10.0, rep % 5 - 2.0);
            for (int i = 0; i < COLS; i++)
                x[i] = (float)(scale * (rnd_sym() + rnd_sym() + rnd_sym()));
            ft_quantize_row(f->t, x, w, COLS);
            ft_dequantize_row(f->t, w, y, COLS);
            for (int g = 0; g < COLS / 8; g++) {
                int wrong = 0, jmin = 8 * g;
                for (int j = 8 * g; j < 8 * g + 8; j++) {
                    wrong += (x[j] < 0) != (y[j] < 0);
                    if (fabsf(x[j]) < fabsf(x[jmin])) jmin = j;
                }
                if (wrong > f->parity || (wrong && (x[jmin] < 0) == (y[jmin] < 0)))
                    fail_msg("%s rep %d group %d: %d signs lost", name, rep, g, wrong);
            }
            for (int i = 0; i < COLS; i++) {
                e2 += ((double)y[i] - x[i]) * ((double)y[i] - x[i]) / (scale * scale);
                x2 += (double)x[i] * x[i] / (scale * scale);
            }
        }
        print_message("%s: round-trip rms error %.3g of the rms value (bound %.2g)\n", name,
                      sqrt(e2 / x2), f->rms_bound);
        assert_true(sqrt(e2 / x2) < f->rms_bound);
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
        uint8_t seen[1024];
        for (int rep = 0; rep < 300; rep++) {
            uint8_t w[MAX_BYTES], xq[NB * FT_Q8_K_BLOCK_BYTES];
            float x[COLS], xf[COLS];
            double wd[COLS];
            if (rep % 2) {
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
        cmocka_unit_test(test_codebooks),
        cmocka_unit_test(test_dequantize_exact),
        cmocka_unit_test(test_quantize),
        cmocka_unit_test(test_dot_products),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
