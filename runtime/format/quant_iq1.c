/* IQ1_S and IQ1_M (ggml types 19 and 29): groups of 8 elements are one
 * index into a codebook of 2048 points in {-1, 0, 1}^8 (iq_grids.inc's
 * iq1s_kgrid, ggml's iq1s_grid in compact form), shifted by a delta of
 * +-1/8 and scaled. Layouts (ggml-common.h, little-endian, 256 elements a
 * super-block, sub-block ib of 32 elements, group l of 8 in it):
 *   IQ1_S (50 B): d f16 @0, qs[32] @2, qh u16[8] @34. Sub-block ib: qh[ib]
 *     bits 3l..3l+2 are index bits 8..10 of group l (low 8 bits qs[4 ib +
 *     l]), bits 12..14 the 3-bit scale ls, bit 15 the delta's sign;
 *     x = d (2 ls + 1) (grid + delta), delta = bit 15 ? -1/8 : 1/8.
 *   IQ1_M (56 B): qs[32] @0, qh[16] @32, scales[8] @48. Group l of ib:
 *     index low bits qs[4 ib + l], high 3 bits the low (l even) or high
 *     (l odd) nibble of qh[2 ib + l / 2], whose bit 3 is the group's delta
 *     sign. scales read as u16 sc[4]: the fp16 d is the top nibbles of
 *     sc[0..3] (bits 0..3 of d from sc[0] >> 12, ..., 12..15 from sc[3]),
 *     and the 3-bit scales of ib are bits 6 (ib % 2) + 0..2 (elements 0..15
 *     of ib) and + 3..5 (16..31) of sc[ib / 2]; x = d (2 ls + 1) (grid +
 *     delta).
 * Every value is (d / 8) (2 ls + 1) (8 grid +- 1), each factor exact in
 * float32 and so their product: ft_iq1_unpack gives q = 8 grid +- 1 (|q|
 * <= 9), the odd scales per 16 and d / 8, which is the form of
 * iq_grids.h's ft_iq_unpack, and so the dequantized values are ggml's bit
 * for bit.
 *
 * The quantizer is ours, not ggml's (whose quantize_iq1_s / _m need an
 * importance matrix and neighbour tables), and not bit-identical to it: per
 * scale group (32 elements for IQ1_S, 16 for IQ1_M) a scale is chosen
 * among a few fractions of the largest magnitude by the error of the
 * unconstrained ternary fit, the super-block's d is the largest of them
 * over the 3-bit ls range and each ls the nearest that fits; then each
 * group of 8 takes the grid point and delta (per group for IQ1_M, shared
 * by the sub-block for IQ1_S) of least squared error, searched over the
 * whole codebook. Good enough for fixtures; llama-quantize's files, which
 * real models use, need only the decoders. */
#include "convert.h"
#include "iq_grids.h"
#include "quant_k_fit.h"

#include <math.h>
#include <string.h>

enum { FT_IQ1_QK = 256, FT_IQ1_NGRID = 2048 };

/* Element j of point k: -1, 0 or 1. */
static inline int ft_iq1_elem(int k, int j)
{
    return (int)((ft_iq1s_kgrid[k] >> (2 * j)) & 3) - 1;
}

/* The 8 values of group (index k, delta sign neg) into q: 8 grid +- 1. */
static inline void ft_iq1_put8(int k, int neg, int8_t *q)
{
    for (int j = 0; j < 8; j++)
        q[j] = (int8_t)(8 * ft_iq1_elem(k, j) + (neg ? -1 : 1));
}

static inline unsigned ft_iq1_u16(const uint8_t *p)
{
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}

/* d of an IQ1_M block: the top nibbles of its four u16 scales. */
static inline uint16_t ft_iq1m_d_bits(const uint8_t *b)
{
    const uint8_t *s = b + 48;
    return (uint16_t)((ft_iq1_u16(s) >> 12) | ((ft_iq1_u16(s + 2) >> 8) & 0x00f0) |
                      ((ft_iq1_u16(s + 4) >> 4) & 0x0f00) | (ft_iq1_u16(s + 6) & 0xf000));
}

float ft_iq1_unpack(ft_dtype_t t, const uint8_t *b, int8_t q[256], int16_t sc[16])
{
    if (t == FT_DTYPE_IQ1_S) {
        for (int ib = 0; ib < 8; ib++) {
            const unsigned qh = ft_iq1_u16(b + 34 + 2 * ib);
            sc[2 * ib] = sc[2 * ib + 1] = (int16_t)(2 * ((qh >> 12) & 7) + 1);
            for (int l = 0; l < 4; l++)
                ft_iq1_put8((int)(b[2 + 4 * ib + l] | ((qh >> 3 * l) & 7) << 8), qh >> 15 & 1,
                            q + 32 * ib + 8 * l);
        }
        return ft_qk_get_f16(b) * 0.125f;
    }
    for (int ib = 0; ib < 8; ib++) {
        const unsigned s = ft_iq1_u16(b + 48 + 2 * (ib / 2)) >> 6 * (ib % 2);
        sc[2 * ib] = (int16_t)(2 * (s & 7) + 1);
        sc[2 * ib + 1] = (int16_t)(2 * ((s >> 3) & 7) + 1);
        for (int l = 0; l < 4; l++) {
            const unsigned h = b[32 + 2 * ib + l / 2] >> 4 * (l % 2);
            ft_iq1_put8((int)(b[4 * ib + l] | (h & 7) << 8), h >> 3 & 1, q + 32 * ib + 8 * l);
        }
    }
    return ft_fp16_to_fp32(ft_iq1m_d_bits(b)) * 0.125f;
}

static void ft_iq1_dequantize(ft_dtype_t t, uint32_t bytes, const uint8_t *x, float *y, uint64_t n)
{
    for (uint64_t b = 0; b < n / FT_IQ1_QK; b++, x += bytes, y += FT_IQ1_QK) {
        int8_t q[256];
        int16_t sc[16];
        const float dm = ft_iq1_unpack(t, x, q, sc);
        for (int i = 0; i < FT_IQ1_QK; i++)
            y[i] = dm * (float)sc[i / 16] * (float)q[i];
    }
}

/* ---- the quantizer ---- */

/* The point of least squared error sum_j (8 g_j + s - t_j)^2 (t in units of
 * db / 8, s = +-1); *err gets it. Ties and NaN keep the first. */
static int ft_iq1_nearest(const float *t, int s, float *err)
{
    /* the error splits per element: c[j][v + 1] for value v */
    float c[8][3];
    for (int j = 0; j < 8; j++)
        for (int v = -1; v <= 1; v++) {
            const float r = (float)(8 * v + s) - t[j];
            c[j][v + 1] = r * r;
        }
    int best = 0;
    float best_e = INFINITY;
    for (int k = 0; k < FT_IQ1_NGRID; k++) {
        const unsigned g = ft_iq1s_kgrid[k];
        float e = 0;
        for (int j = 0; j < 8; j++)
            e += c[j][(g >> 2 * j) & 3];
        if (e < best_e) {
            best_e = e;
            best = k;
        }
    }
    *err = best_e;
    return best;
}

/* The scale (value of q = 8 per unit) a group of gs elements wants: among
 * fractions of its largest magnitude, the one of least error when each
 * element takes the nearest of {-9/8, -7/8, -1/8, 1/8, 7/8, 9/8}. */
static float ft_iq1_want(const float *x, int gs)
{
    static const float k_frac[] = {1.0f / 1.125f, 0.8f, 0.68f, 0.56f, 0.46f};
    float amax = 0;
    for (int i = 0; i < gs; i++)
        amax = FT_QK_MAX(amax, fabsf(x[i]));
    if (!(amax > 0) || !isfinite(amax)) return amax;
    float best = amax * k_frac[0], best_e = INFINITY;
    for (size_t f = 0; f < sizeof(k_frac) / sizeof(k_frac[0]); f++) {
        const float s = amax * k_frac[f];
        float e = 0;
        for (int i = 0; i < gs; i++) {
            const float a = fabsf(x[i]) / s;
            const float l = a < 0.5f ? 0.125f : a < 1.0f ? 0.875f : 1.125f;
            e += (a - l) * (a - l);
        }
        e *= s * s;
        if (e < best_e) {
            best_e = e;
            best = s;
        }
    }
    return best;
}

/* ls in 0..7 with (2 ls + 1) D nearest s (NaN: 0). */
static int ft_iq1_ls(float s, float D)
{
    const float f = D > 0 ? (s / D - 1) * 0.5f : 0;
    if (!(f > 0)) return 0;
    if (f >= 7) return 7;
    return (int)(f + 0.5f);
}

/* One scale group of gs elements at x with scale db: each group of 8's
 * index into idx[], delta signs into neg[] (shared: one sign for all, the
 * better one). */
static void ft_iq1_fit(const float *x, int gs, float db, int shared, int *idx, int *neg)
{
    const float idb = db > 0 ? 8 / db : 0;
    float t[32];
    for (int i = 0; i < gs; i++)
        t[i] = x[i] * idb;
    float tot[2] = {0, 0};
    int k2[2][4];
    for (int l = 0; l < gs / 8; l++) {
        float e[2];
        k2[0][l] = ft_iq1_nearest(t + 8 * l, 1, &e[0]);
        k2[1][l] = ft_iq1_nearest(t + 8 * l, -1, &e[1]);
        tot[0] += e[0];
        tot[1] += e[1];
        if (!shared) {
            neg[l] = e[1] < e[0];
            idx[l] = k2[neg[l]][l];
        }
    }
    if (shared) {
        const int n = tot[1] < tot[0];
        for (int l = 0; l < gs / 8; l++) {
            neg[l] = n;
            idx[l] = k2[n][l];
        }
    }
}

static void ft_iq1s_block(const float *x, uint8_t *b)
{
    float want[8], smax = 0;
    for (int ib = 0; ib < 8; ib++) {
        want[ib] = ft_iq1_want(x + 32 * ib, 32);
        if (!(want[ib] <= smax)) smax = want[ib]; /* NaN propagates */
    }
    /* x = (d / 8) (2 ls + 1) q with q up to 9: want is the value of q = 8 */
    ft_qk_put_f16(b, smax / 15);
    const float D = ft_qk_get_f16(b);
    for (int ib = 0; ib < 8; ib++) {
        const int ls = ft_iq1_ls(want[ib], D);
        int idx[4], neg[4];
        ft_iq1_fit(x + 32 * ib, 32, D * (float)(2 * ls + 1), 1, idx, neg);
        unsigned qh = (unsigned)ls << 12 | (unsigned)neg[0] << 15;
        for (int l = 0; l < 4; l++) {
            b[2 + 4 * ib + l] = (uint8_t)idx[l];
            qh |= (unsigned)(idx[l] >> 8) << 3 * l;
        }
        b[34 + 2 * ib] = (uint8_t)qh;
        b[35 + 2 * ib] = (uint8_t)(qh >> 8);
    }
}

static void ft_iq1m_block(const float *x, uint8_t *b)
{
    float want[16], smax = 0;
    for (int g = 0; g < 16; g++) {
        want[g] = ft_iq1_want(x + 16 * g, 16);
        if (!(want[g] <= smax)) smax = want[g];
    }
    const uint16_t dh = ft_fp32_to_fp16(smax / 15);
    const float D = ft_fp16_to_fp32(dh);
    uint16_t sc[4] = {0, 0, 0, 0};
    for (int g = 0; g < 16; g++) {
        const int ls = ft_iq1_ls(want[g], D);
        sc[g / 4] |= (uint16_t)(ls << 3 * (g % 4));
        int idx[2], neg[2];
        ft_iq1_fit(x + 16 * g, 16, D * (float)(2 * ls + 1), 0, idx, neg);
        for (int h = 0; h < 2; h++) {
            const int l = 2 * (g % 2) + h, ib = g / 2;
            b[4 * ib + l] = (uint8_t)idx[h];
            b[32 + 2 * ib + l / 2] |= (uint8_t)(((idx[h] >> 8) | neg[h] << 3) << 4 * (l % 2));
        }
    }
    for (int i = 0; i < 4; i++) {
        sc[i] |= (uint16_t)(((dh >> 4 * i) & 15) << 12);
        b[48 + 2 * i] = (uint8_t)sc[i];
        b[49 + 2 * i] = (uint8_t)(sc[i] >> 8);
    }
}

void ft_quantize_row_iq1_s(const float *x, void *vy, uint64_t n)
{
    uint8_t *y = vy;
    for (uint64_t b = 0; b < n / FT_IQ1_QK; b++, x += FT_IQ1_QK, y += FT_IQ1_S_BLOCK_BYTES) {
        memset(y, 0, FT_IQ1_S_BLOCK_BYTES);
        ft_iq1s_block(x, y);
    }
}

void ft_dequantize_row_iq1_s(const void *x, float *y, uint64_t n)
{
    ft_iq1_dequantize(FT_DTYPE_IQ1_S, FT_IQ1_S_BLOCK_BYTES, x, y, n);
}

void ft_quantize_row_iq1_m(const float *x, void *vy, uint64_t n)
{
    uint8_t *y = vy;
    for (uint64_t b = 0; b < n / FT_IQ1_QK; b++, x += FT_IQ1_QK, y += FT_IQ1_M_BLOCK_BYTES) {
        memset(y, 0, FT_IQ1_M_BLOCK_BYTES);
        ft_iq1m_block(x, y);
    }
}

void ft_dequantize_row_iq1_m(const void *x, float *y, uint64_t n)
{
    ft_iq1_dequantize(FT_DTYPE_IQ1_M, FT_IQ1_M_BLOCK_BYTES, x, y, n);
}
