/* IQ4_NL and IQ4_XS (runtime/format/quant_iq4.c, the CPU dots of
 * backends/cpu/dot_iq4.c):
 *
 *  - Decoding: blocks whose nibbles run through all 16 codes (and, for
 *    IQ4_XS, sub-block scales through all 64 values) plus random ones,
 *    with finite fp16 scales of either sign, against float64 decoders
 *    written here from ggml-common.h's block definitions and its
 *    kvalues_iq4nl. d (11 bits) * (ls - 32) (6 bits) is exact in float32,
 *    and times a codebook value (8 bits) is one rounding, so y ==
 *    (float)exact bit for bit.
 *  - Quantizing: bit-identical to ggml's quantize_iq4_nl / quantize_iq4_xs
 *    without an importance matrix (quantize_row_iq4_nl_impl, ntry 7),
 *    transcribed below in ggml's form from ggml-quants.c, on random rows
 *    with zero, constant, one-signed and tiny blocks at scales 1e-3..1e3;
 *    hostile rows (NaN, inf, huge) must not crash.
 *  - Dot products with the 8-bit activations (Q8_0 for IQ4_NL, Q8_K for
 *    IQ4_XS) against the float64 sum of the dequantized products. The
 *    int32 sums are exact; per block (super-block) the int32 sum becomes a
 *    float (one rounding when it exceeds 2^24), two float32 products, then
 *    the running float32 sum over nb blocks: |y - ref| <= 2^-24 (4 + nb)
 *    sum |w a|. */
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

enum { COLS = 1024, MAX_BYTES = COLS / 32 * 18 };

/* ggml-common.h's kvalues_iq4nl, typed in from the definition. */
static const int k_kvalues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                  1,    13,   25,  38,  53,  69,  89,  113};

static uint64_t g_rng = 0x3c6ef372fe94f82bull;

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

/* ---- float64 decoders from ggml-common.h ---- */

/* block_iq4_nl {half d; u8 qs[16]}: element j is the low nibble of qs[j]
 * (j < 16) or the high nibble of qs[j - 16]; x = d * kvalues[q]. */
static void dec_iq4_nl(const uint8_t *b, double *y)
{
    for (int j = 0; j < 32; j++)
        y[j] = f16(b) * k_kvalues[(b[2 + j % 16] >> (4 * (j / 16))) & 15];
}

/* block_iq4_xs {half d; u16 scales_h; u8 scales_l[4]; u8 qs[128]}:
 * sub-block ib's scale is the 4 bits ib % 2 of scales_l[ib / 2] and bits
 * 2 ib .. 2 ib + 1 of scales_h as bits 4, 5, minus 32; its 32 elements
 * are qs[16 ib ..] as IQ4_NL's. */
static void dec_iq4_xs(const uint8_t *b, double *y)
{
    const unsigned sh = b[2] | b[3] << 8;
    for (int ib = 0; ib < 8; ib++) {
        const int ls = ((b[4 + ib / 2] >> (ib % 2 ? 4 : 0)) & 15) + 16 * ((sh >> (2 * ib)) & 3);
        for (int j = 0; j < 32; j++)
            y[32 * ib + j] =
                f16(b) * (ls - 32) * k_kvalues[(b[8 + 16 * ib + j % 16] >> (4 * (j / 16))) & 15];
    }
}

/* ---- ggml's quantizer (no importance matrix), transcribed ---- */
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define GROUP_MAX_EPS 1e-15f
#define QK4_NL 32
#define QK_K 256
typedef uint16_t ggml_fp16_t;
typedef struct {
    ggml_fp16_t d;
    uint8_t qs[QK4_NL / 2];
} block_iq4_nl;
typedef struct {
    ggml_fp16_t d;
    uint16_t scales_h;
    uint8_t scales_l[QK_K / 64];
    uint8_t qs[QK_K / 2];
} block_iq4_xs;
_Static_assert(sizeof(block_iq4_nl) == 18 && sizeof(block_iq4_xs) == 136, "ggml block sizes");
static const int8_t kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                         1,    13,   25,  38,  53,  69,  89,  113};

static inline int nearest_int(float fval)
{
    float val = fval + 12582912.f;
    int i;
    memcpy(&i, &val, sizeof(int));
    return (i & 0x007fffff) - 0x00400000;
}

static inline int best_index_int8(int n, const int8_t *val, float x)
{
    if (x <= val[0]) return 0;
    if (x >= val[n - 1]) return n - 1;
    int ml = 0, mu = n - 1;
    while (mu - ml > 1) {
        int mav = (ml + mu) / 2;
        if (x < val[mav])
            mu = mav;
        else
            ml = mav;
    }
    return x - val[mu - 1] < val[mu] - x ? mu - 1 : mu;
}

static void quantize_row_iq4_nl_impl(const int super_block_size, const int block_size,
                                     const int nvalues, const float *x, ggml_fp16_t *dh,
                                     uint8_t *q4, uint8_t *qh, uint16_t *scales_h,
                                     uint8_t *scales_l, float *scales, float *weight, uint8_t *L,
                                     const int8_t *values, const float *quant_weights,
                                     const int ntry)
{
    float sigma2 = 0;
    for (int j = 0; j < super_block_size; ++j)
        sigma2 += x[j] * x[j];
    sigma2 *= 2.f / super_block_size;

    memset(q4, 0, nvalues > 8 ? super_block_size / 2 : super_block_size / 4);
    if (qh) memset(qh, 0, super_block_size / 8);
    dh[0] = ft_fp32_to_fp16(0.f);

    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < super_block_size / block_size; ++ib) {
        const float *xb = x + ib * block_size;
        uint8_t *Lb = L + ib * block_size;
        if (quant_weights) {
            const float *qw = quant_weights + ib * block_size;
            for (int j = 0; j < block_size; ++j)
                weight[j] = qw[j] * sqrtf(sigma2 + xb[j] * xb[j]);
        } else {
            for (int j = 0; j < block_size; ++j)
                weight[j] = xb[j] * xb[j];
        }
        float amax = 0, max = 0;
        for (int j = 0; j < block_size; ++j) {
            float ax = fabsf(xb[j]);
            if (ax > amax) {
                amax = ax;
                max = xb[j];
            }
        }
        if (amax < GROUP_MAX_EPS) {
            scales[ib] = 0;
            memset(Lb, 0, block_size);
            continue;
        }
        float d = ntry > 0 ? -max / values[0] : max / values[0];
        float id = 1 / d;
        float sumqx = 0, sumq2 = 0;
        for (int j = 0; j < block_size; ++j) {
            float al = id * xb[j];
            int l = best_index_int8(nvalues, values, al);
            Lb[j] = l;
            float q = values[l];
            float w = weight[j];
            sumqx += w * q * xb[j];
            sumq2 += w * q * q;
        }
        d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
        float best = d * sumqx;
        for (int itry = -ntry; itry <= ntry; ++itry) {
            id = (itry + values[0]) / max;
            sumqx = sumq2 = 0;
            for (int j = 0; j < block_size; ++j) {
                float al = id * xb[j];
                int l = best_index_int8(nvalues, values, al);
                float q = values[l];
                float w = weight[j];
                sumqx += w * q * xb[j];
                sumq2 += w * q * q;
            }
            if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                d = sumqx / sumq2;
                best = d * sumqx;
            }
        }
        scales[ib] = d;
        float abs_d = fabsf(d);
        if (abs_d > amax_scale) {
            amax_scale = abs_d;
            max_scale = d;
        }
    }

    if (super_block_size / block_size > 1) {
        int nb = super_block_size / block_size;
        memset(scales_h, 0, ((nb + 7) / 8) * sizeof(uint16_t));
        float d = -max_scale / 32;
        dh[0] = ft_fp32_to_fp16(d);
        float id = d ? 1 / d : 0.f;
        for (int ib = 0; ib < super_block_size / block_size; ++ib) {
            int l = nearest_int(id * scales[ib]);
            l = MAX(-32, MIN(31, l));
            float dl = d * l;
            float idl = dl ? 1 / dl : 0.f;
            uint8_t *Lb = L + ib * block_size;
            const float *xb = x + ib * block_size;
            for (int j = 0; j < block_size; ++j) {
                Lb[j] = best_index_int8(nvalues, values, idl * xb[j]);
            }
            l += 32;
            uint8_t l_l = l & 0xf;
            uint8_t l_h = l >> 4;
            if (ib % 2 == 0)
                scales_l[ib / 2] = l_l;
            else
                scales_l[ib / 2] |= (l_l << 4);
            scales_h[ib / 8] |= (l_h << 2 * (ib % 8));
        }
    } else {
        dh[0] = ft_fp32_to_fp16(scales[0]);
        if (ntry > 0) {
            float id = scales[0] ? 1 / scales[0] : 0;
            for (int j = 0; j < super_block_size; ++j) {
                L[j] = best_index_int8(nvalues, values, id * x[j]);
            }
        }
    }

    for (int i = 0; i < super_block_size / 32; ++i) {
        for (int j = 0; j < 16; ++j) {
            q4[16 * i + j] = L[32 * i + j] | (L[32 * i + 16 + j] << 4);
        }
    }
}

static size_t quantize_iq4_nl(const float *src, void *dst, int64_t nrow, int64_t n_per_row,
                              const float *quant_weights)
{
    int64_t nblock = n_per_row / QK4_NL;
    char *qrow = (char *)dst;
    uint8_t L[QK4_NL];
    float weight[QK4_NL];
    uint16_t unused_h;
    uint8_t *unused_l = NULL;
    float scale;
    for (int64_t row = 0; row < nrow; ++row) {
        block_iq4_nl *iq4 = (block_iq4_nl *)qrow;
        for (int ibl = 0; ibl < nblock; ++ibl) {
            const float *qw = quant_weights ? quant_weights + QK4_NL * ibl : NULL;
            quantize_row_iq4_nl_impl(QK4_NL, 32, 16, src + QK4_NL * ibl, &iq4[ibl].d, iq4[ibl].qs,
                                     NULL, &unused_h, unused_l, &scale, weight, L, kvalues_iq4nl,
                                     qw, 7);
        }
        src += n_per_row;
        qrow += nblock * sizeof(block_iq4_nl);
    }
    return nrow * nblock * sizeof(block_iq4_nl);
}

static size_t quantize_iq4_xs(const float *src, void *dst, int64_t nrow, int64_t n_per_row,
                              const float *quant_weights)
{
    int64_t nblock = n_per_row / QK_K;
    char *qrow = (char *)dst;
    uint8_t L[QK_K];
    float weight[32];
    float scales[QK_K / 32];
    for (int64_t row = 0; row < nrow; ++row) {
        block_iq4_xs *iq4 = (block_iq4_xs *)qrow;
        for (int ibl = 0; ibl < nblock; ++ibl) {
            const float *qw = quant_weights ? quant_weights + QK_K * ibl : NULL;
            quantize_row_iq4_nl_impl(QK_K, 32, 16, src + QK_K * ibl, &iq4[ibl].d, iq4[ibl].qs, NULL,
                                     &iq4[ibl].scales_h, iq4[ibl].scales_l, scales, weight, L,
                                     kvalues_iq4nl, qw, 7);
        }
        src += n_per_row;
        qrow += nblock * sizeof(block_iq4_xs);
    }
    return nrow * nblock * sizeof(block_iq4_xs);
}

static void ggml_iq4_nl(const float *x, void *y, int64_t k)
{
    quantize_iq4_nl(x, y, 1, k, NULL);
}
static void ggml_iq4_xs(const float *x, void *y, int64_t k)
{
    quantize_iq4_xs(x, y, 1, k, NULL);
}

typedef struct fmt {
    ft_dtype_t t;
    uint32_t elems, bytes;
    void (*dec)(const uint8_t *b, double *y);
    void (*ggml)(const float *x, void *y, int64_t k);
    ft_dtype_t act;
} fmt_t;

static const fmt_t k_fmts[] = {
    {FT_DTYPE_IQ4_NL, 32, FT_IQ4_NL_BLOCK_BYTES, dec_iq4_nl, ggml_iq4_nl, FT_DTYPE_Q8_0},
    {FT_DTYPE_IQ4_XS, 256, FT_IQ4_XS_BLOCK_BYTES, dec_iq4_xs, ggml_iq4_xs, FT_DTYPE_Q8_K},
};
enum { N_FMTS = sizeof(k_fmts) / sizeof(k_fmts[0]) };

/* COLS elements of random blocks; rep 0 walks the codes: nibble j of
 * block b is (j + b) % 16, and IQ4_XS sub-block scale i of super-block b
 * is 8 b + i (all 64 over the first 8 super-blocks of two rows). */
static void random_blocks(const fmt_t *f, uint8_t *w, int rep)
{
    const uint32_t nb = COLS / f->elems;
    for (uint32_t i = 0; i < nb * f->bytes; i++)
        w[i] = (uint8_t)rnd_u32();
    for (uint32_t b = 0; b < nb; b++) {
        uint8_t *blk = w + b * f->bytes;
        put_scale(blk);
        if (rep > 1) continue;
        const uint32_t qs = f->t == FT_DTYPE_IQ4_NL ? 2 : 8;
        for (uint32_t j = qs; j < f->bytes; j++)
            blk[j] = (uint8_t)(((2 * j + b) % 16) | ((2 * j + 1 + b) % 16) << 4);
        if (f->t == FT_DTYPE_IQ4_XS) {
            unsigned sh = 0;
            for (int i = 0; i < 8; i++) {
                const unsigned ls = (unsigned)(8 * (b + 4u * (unsigned)rep) + (unsigned)i) % 64;
                blk[4 + i / 2] =
                    (uint8_t)(i % 2 ? (blk[4 + i / 2] & 15) | (ls & 15) << 4 : ls & 15);
                sh |= (ls >> 4) << (2 * i);
            }
            blk[2] = (uint8_t)sh;
            blk[3] = (uint8_t)(sh >> 8);
        }
    }
}

static void test_dequantize_exact(void **state)
{
    (void)state;
    for (int k = 0; k < N_FMTS; k++) {
        const fmt_t *f = &k_fmts[k];
        assert_int_equal(ft_dtype_info(f->t)->block_bytes, f->bytes);
        assert_int_equal(ft_dtype_info(f->t)->block_elems, f->elems);
        int seen_code[16] = {0}, seen_scale[64] = {0};
        for (int rep = 0; rep < 300; rep++) {
            uint8_t w[MAX_BYTES];
            float y[COLS];
            double ref[256];
            random_blocks(f, w, rep);
            ft_dequantize_row(f->t, w, y, COLS);
            for (uint32_t b = 0; b < COLS / f->elems; b++) {
                const uint8_t *blk = w + b * f->bytes;
                f->dec(blk, ref);
                for (uint32_t j = 0; j < f->elems; j++)
                    if (y[b * f->elems + j] != (float)ref[j])
                        fail_msg("%s rep %d block %u element %u: %.9g, expected %.9g",
                                 ft_dtype_name(f->t), rep, b, j, y[b * f->elems + j], ref[j]);
                for (uint32_t j = f->t == FT_DTYPE_IQ4_NL ? 2 : 8; j < f->bytes; j++)
                    seen_code[blk[j] & 15] = seen_code[blk[j] >> 4] = 1;
                if (f->t == FT_DTYPE_IQ4_XS)
                    for (int i = 0; i < 8; i++)
                        seen_scale[((blk[4 + i / 2] >> (4 * (i % 2))) & 15) |
                                   (((blk[2] | blk[3] << 8) >> (2 * i)) & 3) << 4] = 1;
            }
        }
        for (int c = 0; c < 16; c++)
            assert_true(seen_code[c]);
        if (f->t == FT_DTYPE_IQ4_XS)
            for (int c = 0; c < 64; c++)
                assert_true(seen_scale[c]);
    }
}

static void make_row(int rep, float *x, uint32_t group)
{
    const double scale = pow(10.0, (double)(rep % 7) - 3.0);
    for (int i = 0; i < COLS; i++)
        x[i] = (float)(scale *
                       (rnd_sym() + rnd_sym() + (rep % 5 == 0 ? rnd_sym() * rnd_sym() * 4 : 0)));
    for (uint32_t b = 0; b < COLS / group; b++) {
        const int kind = (int)(b * 5 + (uint32_t)rep) % 13;
        for (uint32_t i = group * b; i < group * b + group; i++) {
            if (kind == 0) x[i] = 0;
            if (kind == 1) x[i] = (float)-scale;
            if (kind == 2) x[i] = fabsf(x[i]) + 0.5f * (float)scale;
            if (kind == 3) x[i] = x[i] * 1e-14f;    /* near ggml's 1e-15 "all zero" threshold */
            if (kind == 4 && i % 32 < 16) x[i] = 0; /* half a sub-block zero */
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
            /* groups of 32 for both: IQ4_XS's sub-blocks get the kinds too */
            make_row(rep, x, rep % 2 ? 32 : f->elems);
            memset(want, 0xA5, sizeof(want));
            memset(got, 0x5A, sizeof(got));
            f->ggml(x, want, COLS);
            ft_quantize_row(f->t, x, got, COLS);
            for (uint32_t i = 0; i < COLS / f->elems * f->bytes; i++)
                if (want[i] != got[i])
                    fail_msg("%s row %d: byte %u (block %u) is 0x%02x, ggml 0x%02x",
                             ft_dtype_name(f->t), rep, i, i / f->bytes, got[i], want[i]);
        }
        /* hostile rows: any bytes, no crash */
        const float hostile[] = {NAN, INFINITY, -INFINITY, 3e38f, -3e38f};
        for (size_t h = 0; h < sizeof(hostile) / sizeof(hostile[0]); h++) {
            float x[COLS], y[COLS];
            uint8_t w[MAX_BYTES];
            make_row(1, x, 32);
            for (int i = 3; i < COLS; i += 11)
                x[i] = hostile[h];
            ft_quantize_row(f->t, x, w, COLS);
            ft_dequantize_row(f->t, w, y, COLS);
        }
        /* the round trip of ordinary rows: rms error well under a step */
        double e2 = 0, x2 = 0;
        for (int rep = 0; rep < 20; rep++) {
            float x[COLS], y[COLS];
            uint8_t w[MAX_BYTES];
            for (int i = 0; i < COLS; i++)
                x[i] = (float)(rnd_sym() + rnd_sym() + rnd_sym());
            ft_quantize_row(f->t, x, w, COLS);
            ft_dequantize_row(f->t, w, y, COLS);
            for (int i = 0; i < COLS; i++) {
                e2 += (double)(y[i] - x[i]) * (y[i] - x[i]);
                x2 += (double)x[i] * x[i];
            }
        }
        /* 16 levels over ~+-2.5 sigma: rms error ~ (5 sigma / 15) / sqrt(12) ~ 0.1 sigma */
        print_message("%s: round-trip rms error %.3g of the rms value\n", ft_dtype_name(f->t),
                      sqrt(e2 / x2));
        assert_true(sqrt(e2 / x2) < 0.15);
    }
}

static void test_dot_products(void **state)
{
    (void)state;
    for (int k = 0; k < N_FMTS; k++) {
        const fmt_t *f = &k_fmts[k];
        assert_int_equal(ft_cpu_act_type(f->t), f->act);
        const ft_cpu_dot_fn dot = ft_cpu_dot_for(f->t, 1);
        assert_non_null(dot);
        const uint32_t nb = COLS / f->elems;
        double worst = 0;
        for (int rep = 0; rep < 400; rep++) {
            uint8_t w[MAX_BYTES], xq[COLS / 256 * FT_Q8_K_BLOCK_BYTES + COLS / 32 * 34];
            float x[COLS], xf[COLS];
            double wd[COLS];
            if (rep % 2) {
                random_blocks(f, w, rep);
            } else {
                make_row(rep, x, 32);
                ft_quantize_row(f->t, x, w, COLS);
            }
            for (int i = 0; i < COLS; i++)
                x[i] = (float)rnd_sym() * (rep % 3 ? 1.0f : 30.0f);
            ft_cpu_act_prepare(f->t, x, COLS, 1, COLS, xq);
            ft_dequantize_row(f->act, xq, xf, COLS);
            double ref = 0, terms = 0;
            for (uint32_t b = 0; b < nb; b++)
                f->dec(w + b * f->bytes, wd + b * f->elems);
            for (int i = 0; i < COLS; i++) {
                ref += wd[i] * xf[i];
                terms += fabs(wd[i] * xf[i]);
            }
            const float y = dot(COLS, w, xq);
            float y_mm = 0;
            ft_cpu_matmul(f->t, w, f->bytes * nb, xq, 1, COLS, 0, 1, &y_mm, 1);
            assert_true(y_mm == y);
            const double err = fabs((double)y - ref), bound = 0x1.0p-24 * (4 + nb) * terms;
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
