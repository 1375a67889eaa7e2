/* The reference's dequantizer (ref_dequant.h), one decoder per format,
 * each written from the format's definition:
 *
 *   minifloats   f16 (IEEE binary16), bf16 (the high half of binary32),
 *                E4M3 and E5M2 (OCP FP8: E4M3FN has no infinities and
 *                S.1111.111 is NaN), E2M1 (OCP MX FP4), E8M0 (2^(e-127)),
 *                UE4M3 (E4M3 read without its sign bit; 0x7f, its NaN,
 *                reads as 0 as ggml does);
 *   ggml blocks  (ggml-common.h's block_* structs, little-endian):
 *     q4_0  d:f16 qs[16]             x = (nibble - 8) d
 *     q4_1  d:f16 m:f16 qs[16]       x = nibble d + m
 *     q5_0  d:f16 qh:u32 qs[16]      x = (nibble | bit << 4 - 16) d
 *     q5_1  d:f16 m:f16 qh:u32 qs[16]
 *     q8_0  d:f16 qs:i8[32]          x = q d
 *     q8_k  d:f32 qs:i8[256] bsums:i16[16] (the CPU kernels' activation
 *           blocks; the sums are not needed to decode)
 *           (element j of the low nibble of byte j, j + 16 of the high one;
 *           q5's fifth bit of element j is bit j of qh)
 *     q2_k  scales[16] qs[64] d:f16 dmin:f16 (256 elements: 16 groups of
 *           16, scale and min 4 bits each, 2-bit values)
 *     q3_k  hmask[32] qs[64] scales[12] d:f16 (6-bit signed scales - 32;
 *           the high bit missing subtracts 4)
 *     q4_k  d dmin scales[12] qs[128] (8 groups of 32, 6-bit scale and min)
 *     q5_k  d dmin scales[12] qh[32] qs[128]
 *     q6_k  ql[128] qh[64] scales:i8[16] d:f16 (values - 32)
 *     mxfp4 e:E8M0 qs[16] (E2M1; element j low nibble of byte j, j + 16
 *           high)
 *     nvfp4 scales:UE4M3[4] qs[32] (one scale per 16 elements; in sub-block
 *           s, element j low nibble of byte 8s + j, j + 8 high)
 *     iq4_nl d:f16 qs[16]            x = kvalues_iq4nl[nibble] d (j low, j + 16 high)
 *     iq4_xs d:f16 scales_h:u16 scales_l[4] qs[128] (8 sub-blocks of 32: 6-bit
 *           scale ls = 4 low bits from scales_l, 2 high from scales_h, x =
 *           kvalues_iq4nl[nibble] d (ls - 32))
 *     iq2_*, iq3_*, iq1_s, iq1_m: grid indices into ggml's codebooks
 *           (runtime/format/iq_grids.inc), as written at each case below
 *   fp8     d:f32 q:E4M3[128] (freetoken's, runtime/format/dtype.h)
 *
 * The K-quants' element order: each 128 (q2_k, q3_k, q6_k) or 64 (q4_k,
 * q5_k) elements take the next 32 bytes of packed values, the 2-bit ones
 * four times with shifts 0, 2, 4, 6, the 4-bit ones twice (low, high). */
#include "ref_dequant.h"

#include <math.h>
#include <string.h>

static double ref_f16(const uint8_t *p)
{
    const unsigned h = (unsigned)p[0] | (unsigned)p[1] << 8;
    const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 0)
        v = ldexp(m, -24);
    else if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = ldexp(1024 + m, e - 25);
    return s ? -v : v;
}

static double ref_bf16(const uint8_t *p)
{
    const uint32_t u = ((uint32_t)p[0] | (uint32_t)p[1] << 8) << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static double ref_f32(const uint8_t *p)
{
    const uint32_t u =
        (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static double ref_e4m3(uint8_t x)
{
    const int s = x >> 7, e = (x >> 3) & 15, m = x & 7;
    double v;
    if (e == 15 && m == 7) return NAN;
    v = e == 0 ? ldexp(m, -9) : ldexp(8 + m, e - 10);
    return s ? -v : v;
}

static double ref_e5m2(uint8_t x)
{
    const int s = x >> 7, e = (x >> 2) & 31, m = x & 3;
    double v;
    if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = e == 0 ? ldexp(m, -16) : ldexp(4 + m, e - 17);
    return s ? -v : v;
}

static double ref_e2m1(unsigned x)
{
    const int s = (x >> 3) & 1, e = (x >> 1) & 3, m = x & 1;
    const double v = e == 0 ? 0.5 * m : ldexp(2 + m, e - 2);
    return s ? -v : v;
}

static double ref_e8m0(uint8_t e)
{
    return e == 255 ? NAN : ldexp(1.0, e - 127);
}

static double ref_ue4m3(uint8_t x)
{
    x &= 0x7f;
    return x == 0x7f ? 0.0 : ref_e4m3(x);
}

/* q4_k and q5_k's 6-bit scale and min of group g (0..7) from 12 bytes: the
 * first four groups take the low 6 bits of bytes g and g + 4; the last four
 * the nibbles of byte g + 4 with the top 2 bits of bytes g - 4 and g. */
static void ref_k4_scale_min(const uint8_t *s, int g, int *sc, int *mn)
{
    if (g < 4) {
        *sc = s[g] & 63;
        *mn = s[g + 4] & 63;
    } else {
        *sc = (s[g + 4] & 15) | (s[g - 4] >> 6) << 4;
        *mn = (s[g + 4] >> 4) | (s[g] >> 6) << 4;
    }
}

/* q3_k's 6-bit scale j (0..15): its low 4 bits are the low (j < 8) or high
 * nibble of byte j % 8, its high 2 bits bits 2 (j / 4) of byte 8 + j % 4. */
static int ref_q3k_scale(const uint8_t *s, int j)
{
    const int lo = j < 8 ? s[j] & 15 : s[j - 8] >> 4;
    const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (lo | hi << 4) - 32;
}

/* The IQ grid formats' codebooks: ggml's tables as data (the format's
 * definition: an index means a grid point), the decoders below ours. */
#define FT_IQ_TABLE(type, name, count) static const ref_##type ref_##name[count] = {
#define FT_IQ_TABLE_END                                                                            \
    }                                                                                              \
    ;
typedef uint8_t ref_u8;
typedef uint16_t ref_u16;
typedef uint32_t ref_u32;
typedef uint64_t ref_u64;
#include "format/iq_grids.inc"
#undef FT_IQ_TABLE
#undef FT_IQ_TABLE_END

/* Byte j of a grid point (little-endian: element j in byte j). */
static double ref_grid8(uint64_t g, int j)
{
    return (double)((g >> (8 * j)) & 0xff);
}

static uint32_t ref_u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Element j of an IQ1 point: 2 bits each, value + 1 (-1, 0 or 1). */
static double ref_grid1(uint16_t g, int j)
{
    return (double)(int)(g >> (2 * j) & 3) - 1.0;
}

/* sign bit j of an 8-bit sign mask: -1 or 1 */
static double ref_sign(unsigned mask, int j)
{
    return mask >> j & 1 ? -1.0 : 1.0;
}

/* IQ4_NL's and IQ4_XS's 16 levels (ggml-common.h kvalues_iq4nl). */
static const int k_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                1,    13,   25,  38,  53,  69,  89,  113};

static void ref_block(ft_dtype_t dt, const uint8_t *b, double *y)
{
    switch (dt) {
    case FT_DTYPE_Q4_0:
    case FT_DTYPE_Q4_1: {
        const double d = ref_f16(b), m = dt == FT_DTYPE_Q4_1 ? ref_f16(b + 2) : 0;
        const uint8_t *qs = b + (dt == FT_DTYPE_Q4_1 ? 4 : 2);
        const int off = dt == FT_DTYPE_Q4_0 ? 8 : 0;
        for (int j = 0; j < 16; j++) {
            y[j] = ((qs[j] & 15) - off) * d + m;
            y[j + 16] = ((qs[j] >> 4) - off) * d + m;
        }
        return;
    }
    case FT_DTYPE_Q5_0:
    case FT_DTYPE_Q5_1: {
        const int one = dt == FT_DTYPE_Q5_1;
        const double d = ref_f16(b), m = one ? ref_f16(b + 2) : 0;
        const uint8_t *p = b + (one ? 4 : 2);
        const uint32_t qh =
            (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        const uint8_t *qs = p + 4;
        const int off = one ? 0 : 16;
        for (int j = 0; j < 16; j++) {
            y[j] = ((int)((qs[j] & 15) | ((qh >> j) & 1) << 4) - off) * d + m;
            y[j + 16] = ((int)((qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4) - off) * d + m;
        }
        return;
    }
    case FT_DTYPE_Q8_0: {
        const double d = ref_f16(b);
        for (int j = 0; j < 32; j++)
            y[j] = (int8_t)b[2 + j] * d;
        return;
    }
    case FT_DTYPE_Q8_K: {
        const double d = ref_f32(b);
        for (int j = 0; j < 256; j++)
            y[j] = (int8_t)b[4 + j] * d;
        return;
    }
    case FT_DTYPE_Q2_K: {
        const uint8_t *sc = b, *qs = b + 16;
        const double d = ref_f16(b + 80), dmin = ref_f16(b + 82);
        for (int h = 0; h < 2; h++)
            for (int s = 0; s < 4; s++)
                for (int half = 0; half < 2; half++) {
                    const uint8_t g = sc[h * 8 + 2 * s + half];
                    for (int l = 0; l < 16; l++) {
                        const int q = (qs[h * 32 + half * 16 + l] >> (2 * s)) & 3;
                        y[h * 128 + s * 32 + half * 16 + l] = d * (g & 15) * q - dmin * (g >> 4);
                    }
                }
        return;
    }
    case FT_DTYPE_Q3_K: {
        const uint8_t *hm = b, *qs = b + 32, *sc = b + 96;
        const double d = ref_f16(b + 108);
        for (int h = 0; h < 2; h++)
            for (int s = 0; s < 4; s++)
                for (int half = 0; half < 2; half++) {
                    const double dl = d * ref_q3k_scale(sc, h * 8 + 2 * s + half);
                    for (int l = 0; l < 16; l++) {
                        const int i = half * 16 + l;
                        const int q = ((qs[h * 32 + i] >> (2 * s)) & 3) -
                                      ((hm[i] >> (h * 4 + s)) & 1 ? 0 : 4);
                        y[h * 128 + s * 32 + i] = dl * q;
                    }
                }
        return;
    }
    case FT_DTYPE_Q4_K:
    case FT_DTYPE_Q5_K: {
        const int five = dt == FT_DTYPE_Q5_K;
        const double d = ref_f16(b), dmin = ref_f16(b + 2);
        const uint8_t *sc = b + 4, *qh = b + 16, *qs = b + (five ? 48 : 16);
        for (int c = 0; c < 4; c++)
            for (int half = 0; half < 2; half++) {
                int s, m;
                ref_k4_scale_min(sc, 2 * c + half, &s, &m);
                for (int l = 0; l < 32; l++) {
                    int q = half ? qs[32 * c + l] >> 4 : qs[32 * c + l] & 15;
                    if (five) q |= ((qh[l] >> (2 * c + half)) & 1) << 4;
                    y[64 * c + 32 * half + l] = d * s * q - dmin * m;
                }
            }
        return;
    }
    case FT_DTYPE_Q6_K: {
        const uint8_t *ql = b, *qh = b + 128;
        const int8_t *sc = (const int8_t *)(b + 192);
        const double d = ref_f16(b + 208);
        for (int h = 0; h < 2; h++)
            for (int l = 0; l < 32; l++) {
                const uint8_t lo0 = ql[h * 64 + l], lo1 = ql[h * 64 + 32 + l], hi = qh[h * 32 + l];
                const int q[4] = {(lo0 & 15) | (hi & 3) << 4, (lo1 & 15) | ((hi >> 2) & 3) << 4,
                                  (lo0 >> 4) | ((hi >> 4) & 3) << 4,
                                  (lo1 >> 4) | ((hi >> 6) & 3) << 4};
                for (int k = 0; k < 4; k++)
                    y[h * 128 + 32 * k + l] = d * sc[h * 8 + l / 16 + 2 * k] * (q[k] - 32);
            }
        return;
    }
    case FT_DTYPE_IQ4_NL: { /* fp16 d, qs[16]: element j low nibble, j + 16 high, into the codebook
                             */
        const double d = ref_f16(b);
        for (int j = 0; j < 16; j++) {
            y[j] = d * k_iq4nl[b[2 + j] & 15];
            y[j + 16] = d * k_iq4nl[b[2 + j] >> 4];
        }
        return;
    }
    case FT_DTYPE_IQ4_XS: { /* fp16 d, u16 scales_h, u8 scales_l[4], qs[128]: 8 sub-blocks of 32 */
        const double d = ref_f16(b);
        const unsigned sh = (unsigned)b[2] | (unsigned)b[3] << 8;
        for (int ib = 0; ib < 8; ib++) {
            const int ls = ((b[4 + ib / 2] >> 4 * (ib % 2)) & 15) | (int)((sh >> 2 * ib) & 3) << 4;
            const double dl = d * (ls - 32);
            const uint8_t *q = b + 8 + 16 * ib;
            for (int j = 0; j < 16; j++) {
                y[32 * ib + j] = dl * k_iq4nl[q[j] & 15];
                y[32 * ib + j + 16] = dl * k_iq4nl[q[j] >> 4];
            }
        }
        return;
    }
    case FT_DTYPE_IQ2_XXS: /* d:f16 then per 32: 4 grid bytes, a u32 of 4 x 7 sign bits + 4-bit
                              scale */
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *q = b + 2 + 8 * ib;
            const uint32_t aux = ref_u32le(q + 4);
            const double db = ref_f16(b) * (0.5 + (aux >> 28)) * 0.25;
            for (int l = 0; l < 4; l++) {
                const uint64_t g = ref_iq2xxs_grid[q[l]];
                const unsigned sg = ref_ksigns_iq2xs[(aux >> 7 * l) & 127];
                for (int j = 0; j < 8; j++)
                    y[32 * ib + 8 * l + j] = db * ref_grid8(g, j) * ref_sign(sg, j);
            }
        }
        return;
    case FT_DTYPE_IQ2_XS: /* d, qs:u16[32] (9-bit index, 7 sign bits), scales[8] (two 4-bit) */
        for (int ib = 0; ib < 8; ib++)
            for (int l = 0; l < 4; l++) {
                const uint8_t *q = b + 2 + 2 * (4 * ib + l);
                const unsigned v = (unsigned)q[0] | (unsigned)q[1] << 8;
                const unsigned sc = b[66 + ib] >> 4 * (l / 2) & 15;
                const double db = ref_f16(b) * (0.5 + sc) * 0.25;
                const uint64_t g = ref_iq2xs_grid[v & 511];
                const unsigned sg = ref_ksigns_iq2xs[v >> 9];
                for (int j = 0; j < 8; j++)
                    y[32 * ib + 8 * l + j] = db * ref_grid8(g, j) * ref_sign(sg, j);
            }
        return;
    case FT_DTYPE_IQ2_S: /* d, qs[32] low index bits, signs[32], qh[8] (2 high bits each), scales[8]
                          */
        for (int ib = 0; ib < 8; ib++)
            for (int l = 0; l < 4; l++) {
                const unsigned idx =
                    b[2 + 4 * ib + l] | ((unsigned)b[66 + ib] << (8 - 2 * l) & 0x300);
                const unsigned sc = b[74 + ib] >> 4 * (l / 2) & 15;
                const double db = ref_f16(b) * (0.5 + sc) * 0.25;
                const unsigned sg = b[34 + 4 * ib + l];
                for (int j = 0; j < 8; j++)
                    y[32 * ib + 8 * l + j] =
                        db * ref_grid8(ref_iq2s_grid[idx], j) * ref_sign(sg, j);
            }
        return;
    case FT_DTYPE_IQ3_XXS: /* d, qs[64] grid bytes, then per 32 a u32 of 4 x 7 sign bits + 4-bit
                              scale */
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t aux = ref_u32le(b + 66 + 4 * ib);
            const double db = ref_f16(b) * (0.5 + (aux >> 28)) * 0.5;
            for (int l = 0; l < 4; l++) {
                const unsigned sg = ref_ksigns_iq2xs[(aux >> 7 * l) & 127];
                for (int h = 0; h < 2; h++) {
                    const uint32_t g = ref_iq3xxs_grid[b[2 + 8 * ib + 2 * l + h]];
                    for (int j = 0; j < 4; j++)
                        y[32 * ib + 8 * l + 4 * h + j] =
                            db * (double)(g >> 8 * j & 0xff) * ref_sign(sg, 4 * h + j);
                }
            }
        }
        return;
    case FT_DTYPE_IQ3_S: /* d, qs[64] low index bits, qh[8] (9th bits), signs[32], scales[4] (two
                            4-bit) */
        for (int ib = 0; ib < 8; ib++) {
            const unsigned sc = b[106 + ib / 2] >> 4 * (ib % 2) & 15;
            const double db = ref_f16(b) * (1 + 2 * sc);
            for (int l = 0; l < 4; l++) {
                const unsigned sg = b[74 + 4 * ib + l];
                for (int h = 0; h < 2; h++) {
                    const unsigned idx =
                        b[2 + 8 * ib + 2 * l + h] | ((unsigned)b[66 + ib] << (8 - 2 * l - h) & 256);
                    const uint32_t g = ref_iq3s_grid[idx];
                    for (int j = 0; j < 4; j++)
                        y[32 * ib + 8 * l + 4 * h + j] =
                            db * (double)(g >> 8 * j & 0xff) * ref_sign(sg, 4 * h + j);
                }
            }
        }
        return;
    case FT_DTYPE_IQ1_S: /* d, qs[32] low index bits, qh:u16[8] (3 high bits per group, 3-bit
                            scale, delta sign) */
        for (int ib = 0; ib < 8; ib++) {
            const unsigned qh = (unsigned)b[34 + 2 * ib] | (unsigned)b[35 + 2 * ib] << 8;
            const double dl = ref_f16(b) * (2 * (qh >> 12 & 7) + 1);
            const double delta = qh >> 15 ? -0.125 : 0.125;
            for (int l = 0; l < 4; l++) {
                const unsigned idx = b[2 + 4 * ib + l] | (qh >> 3 * l & 7) << 8;
                for (int j = 0; j < 8; j++)
                    y[32 * ib + 8 * l + j] = dl * (ref_grid1(ref_iq1s_kgrid[idx], j) + delta);
            }
        }
        return;
    case FT_DTYPE_IQ1_M: { /* qs[32], qh[16] (a nibble per group: 3 index bits, delta sign),
                              scales:u16[4] (3-bit scales, the fp16 d in the top nibbles) */
        unsigned sc[4];
        for (int i = 0; i < 4; i++)
            sc[i] = (unsigned)b[48 + 2 * i] | (unsigned)b[49 + 2 * i] << 8;
        const unsigned dh =
            (sc[0] >> 12) | (sc[1] >> 12) << 4 | (sc[2] >> 12) << 8 | (sc[3] >> 12) << 12;
        const uint8_t dbytes[2] = {(uint8_t)dh, (uint8_t)(dh >> 8)};
        const double d = ref_f16(dbytes);
        for (int ib = 0; ib < 8; ib++)
            for (int l = 0; l < 4; l++) {
                const unsigned h = b[32 + 2 * ib + l / 2] >> 4 * (l % 2) & 15;
                const unsigned ls = sc[ib / 2] >> (6 * (ib % 2) + 3 * (l / 2)) & 7;
                const double dl = d * (2 * ls + 1), delta = h & 8 ? -0.125 : 0.125;
                const unsigned idx = b[4 * ib + l] | (h & 7) << 8;
                for (int j = 0; j < 8; j++)
                    y[32 * ib + 8 * l + j] = dl * (ref_grid1(ref_iq1s_kgrid[idx], j) + delta);
            }
        return;
    }
    case FT_DTYPE_TQ1_0: { /* qs[48] five base-3 digits a byte, qh[4] four, d:f16 last: x = (t - 1)
                              d */
        static const unsigned pow3[5] = {1, 3, 9, 27, 81};
        const double d = ref_f16(b + 52);
        int k = 0;
        for (int j0 = 0, len = 32; j0 < 48; j0 += len, len = 16)
            for (int n = 0; n < 5; n++)
                for (int m = 0; m < len; m++) {
                    const uint8_t q = (uint8_t)(b[j0 + m] * pow3[n]);
                    y[k++] = ((int)(((unsigned)q * 3) >> 8) - 1) * d;
                }
        for (int n = 0; n < 4; n++)
            for (int j = 0; j < 4; j++) {
                const uint8_t q = (uint8_t)(b[48 + j] * pow3[n]);
                y[k++] = ((int)(((unsigned)q * 3) >> 8) - 1) * d;
            }
        return;
    }
    case FT_DTYPE_TQ2_0: { /* qs[64] four 2-bit values a byte, d:f16 last: x = (q - 1) d */
        const double d = ref_f16(b + 64);
        for (int j0 = 0; j0 < 64; j0 += 32)
            for (int l = 0; l < 4; l++)
                for (int m = 0; m < 32; m++)
                    y[4 * j0 + 32 * l + m] = ((b[j0 + m] >> 2 * l & 3) - 1) * d;
        return;
    }
    case FT_DTYPE_MXFP4: {
        const double s = ref_e8m0(b[0]);
        for (int j = 0; j < 16; j++) {
            y[j] = ref_e2m1(b[1 + j] & 15) * s;
            y[j + 16] = ref_e2m1(b[1 + j] >> 4) * s;
        }
        return;
    }
    case FT_DTYPE_NVFP4:
        for (int s = 0; s < 4; s++) {
            const double sc = ref_ue4m3(b[s]);
            for (int j = 0; j < 8; j++) {
                y[16 * s + j] = ref_e2m1(b[4 + 8 * s + j] & 15) * sc;
                y[16 * s + 8 + j] = ref_e2m1(b[4 + 8 * s + j] >> 4) * sc;
            }
        }
        return;
    case FT_DTYPE_FP8: {
        const double d = ref_f32(b);
        for (int j = 0; j < 128; j++)
            y[j] = ref_e4m3(b[4 + j]) * d;
        return;
    }
    case FT_DTYPE_F32:
        y[0] = ref_f32(b);
        return;
    case FT_DTYPE_F16:
        y[0] = ref_f16(b);
        return;
    case FT_DTYPE_BF16:
        y[0] = ref_bf16(b);
        return;
    case FT_DTYPE_F8_E4M3:
        y[0] = ref_e4m3(b[0]);
        return;
    case FT_DTYPE_F8_E5M2:
        y[0] = ref_e5m2(b[0]);
        return;
    default:
        return;
    }
}

/* Elements and bytes of a block, or 0 for a format this file does not read. */
static void ref_block_size(ft_dtype_t dt, uint32_t *elems, uint32_t *bytes)
{
    static const struct {
        ft_dtype_t dt;
        uint32_t elems, bytes;
    } k_sizes[] = {
        {FT_DTYPE_F32, 1, 4},        {FT_DTYPE_F16, 1, 2},       {FT_DTYPE_BF16, 1, 2},
        {FT_DTYPE_F8_E4M3, 1, 1},    {FT_DTYPE_F8_E5M2, 1, 1},   {FT_DTYPE_Q4_0, 32, 18},
        {FT_DTYPE_Q4_1, 32, 20},     {FT_DTYPE_Q5_0, 32, 22},    {FT_DTYPE_Q5_1, 32, 24},
        {FT_DTYPE_Q8_0, 32, 34},     {FT_DTYPE_Q8_K, 256, 292},  {FT_DTYPE_Q2_K, 256, 84},
        {FT_DTYPE_Q3_K, 256, 110},   {FT_DTYPE_Q4_K, 256, 144},  {FT_DTYPE_Q5_K, 256, 176},
        {FT_DTYPE_Q6_K, 256, 210},   {FT_DTYPE_MXFP4, 32, 17},   {FT_DTYPE_NVFP4, 64, 36},
        {FT_DTYPE_FP8, 128, 132},    {FT_DTYPE_IQ4_NL, 32, 18},  {FT_DTYPE_IQ4_XS, 256, 136},
        {FT_DTYPE_IQ2_XXS, 256, 66}, {FT_DTYPE_IQ2_XS, 256, 74}, {FT_DTYPE_IQ2_S, 256, 82},
        {FT_DTYPE_IQ3_XXS, 256, 98}, {FT_DTYPE_IQ3_S, 256, 110}, {FT_DTYPE_TQ1_0, 256, 54},
        {FT_DTYPE_TQ2_0, 256, 66},   {FT_DTYPE_IQ1_S, 256, 50},  {FT_DTYPE_IQ1_M, 256, 56},
    };
    *elems = *bytes = 0;
    for (size_t i = 0; i < sizeof(k_sizes) / sizeof(k_sizes[0]); i++)
        if (k_sizes[i].dt == dt) {
            *elems = k_sizes[i].elems;
            *bytes = k_sizes[i].bytes;
        }
}

uint64_t ft_ref_row_bytes(ft_dtype_t dt, uint64_t n)
{
    uint32_t be, bb;
    ref_block_size(dt, &be, &bb);
    return be && n % be == 0 ? n / be * bb : 0;
}

ft_status_t ft_ref_dequant_row(ft_dtype_t dt, const uint8_t *src, uint64_t n, double *out)
{
    uint32_t be, bb;
    ref_block_size(dt, &be, &bb);
    if (!be)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "the reference reads no format %d (%s)",
                              (int)dt, ft_dtype_name(dt));
    if (n % be)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "a row of %llu %s elements (blocks of %u)", (unsigned long long)n,
                              ft_dtype_name(dt), be);
    for (uint64_t i = 0; i < n / be; i++)
        ref_block(dt, src + i * bb, out + i * be);
    return FT_OK;
}
