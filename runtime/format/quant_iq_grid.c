/* The IQ grid formats IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S (ggml
 * types 16, 17, 22, 18, 21): groups of 8 (IQ3: 4) element magnitudes are
 * one index into a codebook of points (iq_grids.inc), with signs and a
 * scale per 16 or 32 elements. Layouts (ggml-common.h, little-endian,
 * 256 elements a super-block, fp16 d first; sub-block ib of 32 elements):
 *   IQ2_XXS (66 B): u16 qs[32] @2. Sub-block ib is 8 bytes at 2 + 8 ib:
 *     four u8 grid indices, then a u32 whose bits 7l..7l+6 index
 *     ksigns_iq2xs for group l and bits 28..31 are ls;
 *     x = d (0.5 + ls) / 4 * grid * sign.
 *   IQ2_XS (74 B): u16 qs[32] @2 (group l of ib: qs[4 ib + l], grid index
 *     bits 0..8, ksigns index bits 9..15), scales[8] @66 (nibble l / 2 of
 *     scales[ib] is ls); x as IQ2_XXS.
 *   IQ2_S (82 B): qs[64] @2 (grid index low 8 bits of group l of ib at
 *     qs[4 ib + l], its 8 plain sign bits at qs[32 + 4 ib + l]), qh[8] @66
 *     (bits 2l, 2l + 1 of qh[ib]: index bits 8, 9), scales[8] @74 as IQ2_XS.
 *   IQ3_XXS (98 B): qs[96] @2: 64 bytes of indices into the 4-element grid
 *     (two per group of 8: qs[8 ib + 2l], qs[8 ib + 2l + 1]), then one u32
 *     per sub-block as IQ2_XXS's (signs, ls); x = d (0.5 + ls) / 2 * grid
 *     * sign.
 *   IQ3_S (110 B): qs[64] @2 (as IQ3_XXS's indices, low 8 bits), qh[8]
 *     @66 (bit 2l of qh[ib]: index bit 8 of qs[8 ib + 2l], bit 2l + 1 that
 *     of qs[8 ib + 2l + 1]), signs[32] @74 (8 plain bits a group), scales[4]
 *     @106 (nibble ib % 2 of scales[ib / 2] is ls); x = d (1 + 2 ls) *
 *     grid * sign.
 * ksigns_iq2xs holds 7 sign bits and the eighth that makes their parity
 * even, so IQ2_XXS, IQ2_XS and IQ3_XXS groups always have an even number
 * of negative elements.
 *
 * The quantizer is ours, not ggml's (whose IQ quantizers need an importance
 * matrix and neighbour tables): a simple nearest-grid fit that writes valid
 * blocks. Per sub-block (per 16 elements where the format has a scale per
 * 16) the largest magnitude is mapped to the grid's largest level; the
 * super-block scale d is the largest such scale over the 4-bit ls range,
 * each ls the nearest that fits; each group's signs are the elements'
 * (for the parity formats, the smallest element takes the sign the parity
 * forces), and its index the grid point nearest the scaled magnitudes in
 * squared error. Good enough for fixtures; llama-quantize's files are what
 * real models use, and those only need the decoders. */
#include "convert.h"
#include "iq_grids.h"
#include "quant_k_fit.h"

#include <math.h>
#include <string.h>

enum { FT_IQ_QK = 256 };

static inline uint32_t ft_iq_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void ft_iq_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Byte j of a grid point: its magnitude for element j. */
static inline int ft_iq_g8(uint64_t g, int j)
{
    return (int)((g >> (8 * j)) & 0xff);
}

/* q[0..7] = the 8 magnitudes of g with sign bit j of s. */
static inline void ft_iq_put8(uint64_t g, unsigned s, int8_t *q)
{
    for (int j = 0; j < 8; j++)
        q[j] = (int8_t)((s >> j) & 1 ? -ft_iq_g8(g, j) : ft_iq_g8(g, j));
}

/* As ft_iq_put8 for two 4-element points (IQ3). */
static inline void ft_iq_put4x2(uint32_t g1, uint32_t g2, unsigned s, int8_t *q)
{
    ft_iq_put8((uint64_t)g1 | (uint64_t)g2 << 32, s, q);
}

int ft_iq_is_grid(ft_dtype_t t)
{
    return t == FT_DTYPE_IQ2_XXS || t == FT_DTYPE_IQ2_XS || t == FT_DTYPE_IQ2_S ||
           t == FT_DTYPE_IQ3_XXS || t == FT_DTYPE_IQ3_S || t == FT_DTYPE_IQ1_S ||
           t == FT_DTYPE_IQ1_M;
}

float ft_iq_unpack(ft_dtype_t t, const uint8_t *b, int8_t q[256], int16_t sc[16])
{
    if (t == FT_DTYPE_IQ1_S || t == FT_DTYPE_IQ1_M) return ft_iq1_unpack(t, b, q, sc);
    const float d = ft_qk_get_f16(b);
    switch (t) {
    case FT_DTYPE_IQ2_XXS:
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *s = b + 2 + 8 * ib;
            const uint32_t aux = ft_iq_u32(s + 4);
            sc[2 * ib] = sc[2 * ib + 1] = (int16_t)(2 * (aux >> 28) + 1);
            for (int l = 0; l < 4; l++)
                ft_iq_put8(ft_iq2xxs_grid[s[l]], ft_ksigns_iq2xs[(aux >> 7 * l) & 127],
                           q + 32 * ib + 8 * l);
        }
        return d * 0.125f;
    case FT_DTYPE_IQ2_XS:
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t s = b[66 + ib];
            sc[2 * ib] = (int16_t)(2 * (s & 15) + 1);
            sc[2 * ib + 1] = (int16_t)(2 * (s >> 4) + 1);
            for (int l = 0; l < 4; l++) {
                const unsigned v =
                    (unsigned)b[2 + 2 * (4 * ib + l)] | (unsigned)b[3 + 2 * (4 * ib + l)] << 8;
                ft_iq_put8(ft_iq2xs_grid[v & 511], ft_ksigns_iq2xs[v >> 9], q + 32 * ib + 8 * l);
            }
        }
        return d * 0.125f;
    case FT_DTYPE_IQ2_S:
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t s = b[74 + ib];
            sc[2 * ib] = (int16_t)(2 * (s & 15) + 1);
            sc[2 * ib + 1] = (int16_t)(2 * (s >> 4) + 1);
            for (int l = 0; l < 4; l++) {
                const unsigned idx =
                    b[2 + 4 * ib + l] | ((unsigned)b[66 + ib] << (8 - 2 * l) & 0x300);
                ft_iq_put8(ft_iq2s_grid[idx], b[34 + 4 * ib + l], q + 32 * ib + 8 * l);
            }
        }
        return d * 0.125f;
    case FT_DTYPE_IQ3_XXS:
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *qs = b + 2 + 8 * ib;
            const uint32_t aux = ft_iq_u32(b + 66 + 4 * ib);
            sc[2 * ib] = sc[2 * ib + 1] = (int16_t)(2 * (aux >> 28) + 1);
            for (int l = 0; l < 4; l++)
                ft_iq_put4x2(ft_iq3xxs_grid[qs[2 * l]], ft_iq3xxs_grid[qs[2 * l + 1]],
                             ft_ksigns_iq2xs[(aux >> 7 * l) & 127], q + 32 * ib + 8 * l);
        }
        return d * 0.25f;
    case FT_DTYPE_IQ3_S:
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *qs = b + 2 + 8 * ib;
            const unsigned qh = b[66 + ib];
            sc[2 * ib] = sc[2 * ib + 1] =
                (int16_t)(2 * ((b[106 + ib / 2] >> 4 * (ib % 2)) & 15) + 1);
            for (int l = 0; l < 4; l++)
                ft_iq_put4x2(ft_iq3s_grid[qs[2 * l] | ((qh << (8 - 2 * l)) & 256)],
                             ft_iq3s_grid[qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256)],
                             b[74 + 4 * ib + l], q + 32 * ib + 8 * l);
        }
        return d;
    default:
        memset(q, 0, 256);
        memset(sc, 0, 16 * sizeof(sc[0]));
        return 0;
    }
}

static const uint32_t ft_iq_block_bytes[] = {
    [FT_DTYPE_IQ2_XXS] = 66, [FT_DTYPE_IQ2_XS] = 74, [FT_DTYPE_IQ2_S] = 82,
    [FT_DTYPE_IQ3_XXS] = 98, [FT_DTYPE_IQ3_S] = 110,
};

/* y = (d m) sc q: every product exact (iq_grids.h), so these are ggml's
 * dequantized values bit for bit. */
static void ft_iq_dequantize(ft_dtype_t t, const void *vx, float *y, uint64_t n)
{
    const uint8_t *x = vx;
    for (uint64_t b = 0; b < n / FT_IQ_QK; b++, x += ft_iq_block_bytes[t], y += FT_IQ_QK) {
        int8_t q[256];
        int16_t sc[16];
        const float dm = ft_iq_unpack(t, x, q, sc);
        for (int i = 0; i < FT_IQ_QK; i++)
            y[i] = dm * (float)sc[i / 16] * (float)q[i];
    }
}

/* ---- the quantizer ---- */

/* A format's codebook as the fitter sees it. */
typedef struct ft_iq_fit {
    const uint64_t *grid8; /* 8-element points, or NULL */
    const uint32_t *grid4; /* 4-element points (IQ3), or NULL */
    int n_grid;
    float gmax; /* the largest level */
    float m;    /* x = d m sc q */
    int parity; /* signs through ksigns_iq2xs (even count of negatives) */
    int per16;  /* a scale per 16 elements (else per 32) */
} ft_iq_fit_t;

/* Index of the point of g (n of them, `w` elements each) nearest t[0..w-1]
 * in squared error; ties and NaN keep the first. */
static int ft_iq_nearest(const ft_iq_fit_t *f, const float *t, int w)
{
    int best = 0;
    float best_e = INFINITY;
    for (int k = 0; k < f->n_grid; k++) {
        const uint64_t g = f->grid8 ? f->grid8[k] : f->grid4[k];
        float e = 0;
        for (int j = 0; j < w; j++) {
            const float r = (float)ft_iq_g8(g, j) - t[j];
            e += r * r;
        }
        if (e < best_e) {
            best_e = e;
            best = k;
        }
    }
    return best;
}

/* Signs (bit j: x[j] < 0), the parity fixed if the format needs it, and
 * the targets t (magnitudes / db; an element whose sign is forced wrong
 * gets a negative target, so its nearest level is the smallest). */
static unsigned ft_iq_signs(const ft_iq_fit_t *f, const float *x, float idb, float *t)
{
    unsigned s = 0;
    int jmin = 0;
    for (int j = 0; j < 8; j++) {
        s |= (unsigned)(x[j] < 0) << j;
        t[j] = fabsf(x[j]) * idb;
        if (fabsf(x[j]) < fabsf(x[jmin])) jmin = j;
    }
    if (f->parity && __builtin_popcount(s) % 2) {
        s ^= 1u << jmin;
        t[jmin] = -t[jmin];
    }
    return s;
}

/* ls in 0..15 with (2 ls + 1) D nearest s (NaN: 0). */
static int ft_iq_ls(float s, float D)
{
    const float f = D > 0 ? (s / D - 1) * 0.5f : 0;
    if (!(f > 0)) return 0;
    if (f >= 15) return 15;
    return (int)(f + 0.5f);
}

/* One super-block: fills d (fp16 at b), and through put() the ls of each
 * scale group and each group of 8's index and signs. */
typedef void (*ft_iq_put_fn)(uint8_t *b, int ib, int l, int idx1, int idx2, unsigned signs);
typedef void (*ft_iq_put_ls_fn)(uint8_t *b, int g, int ls);

static void ft_iq_quantize_block(const ft_iq_fit_t *f, const float *x, uint8_t *b, ft_iq_put_fn put,
                                 ft_iq_put_ls_fn put_ls)
{
    const int gs = f->per16 ? 16 : 32, ng = FT_IQ_QK / gs;
    float want[16];
    float smax = 0;
    for (int g = 0; g < ng; g++) {
        float amax = 0;
        for (int i = 0; i < gs; i++)
            amax = FT_QK_MAX(amax, fabsf(x[gs * g + i]));
        want[g] = amax / f->gmax;
        if (!(want[g] <= smax)) smax = want[g]; /* NaN propagates */
    }
    ft_qk_put_f16(b, smax / 31 / f->m);
    const float D = ft_qk_get_f16(b) * f->m;
    for (int g = 0; g < ng; g++) {
        const int ls = ft_iq_ls(want[g], D);
        put_ls(b, g, ls);
        const float db = D * (float)(2 * ls + 1), idb = db > 0 ? 1 / db : 0;
        for (int k = 0; k < gs / 8; k++) {
            const int i8 = gs * g + 8 * k; /* first element of this group of 8 */
            float t[8];
            const unsigned s = ft_iq_signs(f, x + i8, idb, t);
            if (f->grid8)
                put(b, i8 / 32, (i8 % 32) / 8, ft_iq_nearest(f, t, 8), 0, s);
            else
                put(b, i8 / 32, (i8 % 32) / 8, ft_iq_nearest(f, t, 4), ft_iq_nearest(f, t + 4, 4),
                    s);
        }
    }
}

/* IQ2_XXS: indices in bytes 0..3 of the sub-block, sign indices and ls in
 * the u32 after them. */
static void ft_iq2xxs_put(uint8_t *b, int ib, int l, int idx1, int idx2, unsigned s)
{
    (void)idx2;
    uint8_t *p = b + 2 + 8 * ib;
    p[l] = (uint8_t)idx1;
    ft_iq_put_u32(p + 4, ft_iq_u32(p + 4) | (s & 127u) << 7 * l);
}
static void ft_iq2xxs_put_ls(uint8_t *b, int g, int ls)
{
    uint8_t *p = b + 2 + 8 * g + 4;
    ft_iq_put_u32(p, ft_iq_u32(p) | (uint32_t)ls << 28);
}

static void ft_iq2xs_put(uint8_t *b, int ib, int l, int idx1, int idx2, unsigned s)
{
    (void)idx2;
    const unsigned v = (unsigned)idx1 | (s & 127u) << 9;
    b[2 + 2 * (4 * ib + l)] = (uint8_t)v;
    b[3 + 2 * (4 * ib + l)] = (uint8_t)(v >> 8);
}
static void ft_iq2xs_put_ls(uint8_t *b, int g, int ls)
{
    b[66 + g / 2] |= (uint8_t)(ls << 4 * (g % 2));
}

static void ft_iq2s_put(uint8_t *b, int ib, int l, int idx1, int idx2, unsigned s)
{
    (void)idx2;
    b[2 + 4 * ib + l] = (uint8_t)idx1;
    b[34 + 4 * ib + l] = (uint8_t)s;
    b[66 + ib] |= (uint8_t)((idx1 >> 8) << 2 * l);
}
static void ft_iq2s_put_ls(uint8_t *b, int g, int ls)
{
    b[74 + g / 2] |= (uint8_t)(ls << 4 * (g % 2));
}

static void ft_iq3xxs_put(uint8_t *b, int ib, int l, int idx1, int idx2, unsigned s)
{
    b[2 + 8 * ib + 2 * l] = (uint8_t)idx1;
    b[2 + 8 * ib + 2 * l + 1] = (uint8_t)idx2;
    uint8_t *p = b + 66 + 4 * ib;
    ft_iq_put_u32(p, ft_iq_u32(p) | (s & 127u) << 7 * l);
}
static void ft_iq3xxs_put_ls(uint8_t *b, int g, int ls)
{
    uint8_t *p = b + 66 + 4 * g;
    ft_iq_put_u32(p, ft_iq_u32(p) | (uint32_t)ls << 28);
}

static void ft_iq3s_put(uint8_t *b, int ib, int l, int idx1, int idx2, unsigned s)
{
    b[2 + 8 * ib + 2 * l] = (uint8_t)idx1;
    b[2 + 8 * ib + 2 * l + 1] = (uint8_t)idx2;
    b[66 + ib] |= (uint8_t)(((idx1 >> 8) & 1) << 2 * l | ((idx2 >> 8) & 1) << (2 * l + 1));
    b[74 + 4 * ib + l] = (uint8_t)s;
}
static void ft_iq3s_put_ls(uint8_t *b, int g, int ls)
{
    b[106 + g / 2] |= (uint8_t)(ls << 4 * (g % 2));
}

static void ft_iq_quantize(const ft_iq_fit_t *f, ft_dtype_t t, ft_iq_put_fn put,
                           ft_iq_put_ls_fn put_ls, const float *x, void *vy, uint64_t n)
{
    uint8_t *y = vy;
    for (uint64_t b = 0; b < n / FT_IQ_QK; b++, x += FT_IQ_QK, y += ft_iq_block_bytes[t]) {
        memset(y, 0, ft_iq_block_bytes[t]);
        ft_iq_quantize_block(f, x, y, put, put_ls);
    }
}

static const ft_iq_fit_t ft_fit_iq2xxs = {ft_iq2xxs_grid, NULL, 256, 43, 0.125f, 1, 0};
static const ft_iq_fit_t ft_fit_iq2xs = {ft_iq2xs_grid, NULL, 512, 43, 0.125f, 1, 1};
static const ft_iq_fit_t ft_fit_iq2s = {ft_iq2s_grid, NULL, 1024, 43, 0.125f, 0, 1};
static const ft_iq_fit_t ft_fit_iq3xxs = {NULL, ft_iq3xxs_grid, 256, 62, 0.25f, 1, 0};
static const ft_iq_fit_t ft_fit_iq3s = {NULL, ft_iq3s_grid, 512, 15, 1.0f, 0, 0};

#define FT_IQ_ROW_FNS(name, T, fit, put)                                                           \
    void ft_quantize_row_##name(const float *x, void *y, uint64_t n)                               \
    {                                                                                              \
        ft_iq_quantize(&fit, T, put, put##_ls, x, y, n);                                           \
    }                                                                                              \
    void ft_dequantize_row_##name(const void *x, float *y, uint64_t n)                             \
    {                                                                                              \
        ft_iq_dequantize(T, x, y, n);                                                              \
    }

FT_IQ_ROW_FNS(iq2_xxs, FT_DTYPE_IQ2_XXS, ft_fit_iq2xxs, ft_iq2xxs_put)
FT_IQ_ROW_FNS(iq2_xs, FT_DTYPE_IQ2_XS, ft_fit_iq2xs, ft_iq2xs_put)
FT_IQ_ROW_FNS(iq2_s, FT_DTYPE_IQ2_S, ft_fit_iq2s, ft_iq2s_put)
FT_IQ_ROW_FNS(iq3_xxs, FT_DTYPE_IQ3_XXS, ft_fit_iq3xxs, ft_iq3xxs_put)
FT_IQ_ROW_FNS(iq3_s, FT_DTYPE_IQ3_S, ft_fit_iq3s, ft_iq3s_put)
