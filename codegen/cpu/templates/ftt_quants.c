/* template: matrix products of the formats without a SIMD tile of their
 * own: the legacy blocks Q4_1, Q5_0, Q5_1, the K-quants Q2_K, Q3_K, Q5_K,
 * the non-linear IQ4_NL, IQ4_XS, the IQ grid formats IQ2_XXS, IQ2_XS,
 * IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M (their codebooks are emitted ahead of the
 * templates, FTT_HAVE_IQ_GRIDS, only when a kernel needs them), the
 * ternary TQ1_0, TQ2_0, MXFP4, NVFP4 and FP8 (these three row by row,
 * below).
 *
 * The numerics are the portable reference kernels' (runtime/backends/cpu/
 * dot_legacy.c, dot_k_low.c, dot_iq4.c, dot_iq_grid.c, dot_tq.c,
 * dot_fp.c): each weight block is unpacked to int8 levels and integer
 * scales, its integer sums with the int8 activations are exact in int32,
 * and the block's float term is formed with the reference's float
 * operations in the reference's order and added to the row's sum block
 * after block. The result is therefore bit-identical to the portable
 * reference (the module is built with -std=c11: no FMA contraction).
 *
 * What the module adds is the shape as constants (the loops over blocks
 * and groups have known trip counts for the compiler and its -march
 * vectorizer) and, for several tokens (prefill, expert batches), one
 * unpacking of each weight block for up to FTT_UNP_TOK tokens instead of
 * one per token. */

enum { FTT_Q4_1_BYTES = 20, FTT_Q5_0_BYTES = 22, FTT_Q5_1_BYTES = 24, FTT_Q2_K_BYTES = 84,
       FTT_Q3_K_BYTES = 110, FTT_Q5_K_BYTES = 176, FTT_IQ4_NL_BYTES = 18, FTT_IQ4_XS_BYTES = 136,
       FTT_IQ2_XXS_BYTES = 66, FTT_IQ2_XS_BYTES = 74, FTT_IQ2_S_BYTES = 82, FTT_IQ3_XXS_BYTES = 98,
       FTT_IQ3_S_BYTES = 110, FTT_TQ1_0_BYTES = 54, FTT_TQ2_0_BYTES = 66, FTT_MXFP4_BYTES = 17,
       FTT_FP8_ELEMS = 128, FTT_FP8_BYTES = 132, FTT_IQ1_S_BYTES = 50, FTT_IQ1_M_BYTES = 56,
       FTT_NVFP4_ELEMS = 64, FTT_NVFP4_BYTES = 36,
       FTT_UNP_TOK = 8 };

/* ggml's kvalues_iq4nl and the E2M1 levels doubled (minifloat.h). */
static const int8_t ftt_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                             1,    13,   25,  38,  53,  69,  89,  113};
static const int8_t ftt_e2m1_x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* One weight block unpacked: levels q (32 or 256), integer scales and
 * mins per group, and the block's float factors. */
typedef struct ftt_unp {
    int8_t q[256];
    int16_t sc[16], mn[16];
    float d, dm;
} ftt_unp_t;

FTT_INLINE int32_t ftt_idot(const int8_t *a, const int8_t *b, int n)
{
    int32_t s = 0;
    for (int l = 0; l < n; l++)
        s += a[l] * b[l];
    return s;
}

FTT_INLINE int32_t ftt_isum(const int8_t *a, int n)
{
    int32_t s = 0;
    for (int l = 0; l < n; l++)
        s += a[l];
    return s;
}

FTT_INLINE uint32_t ftt_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

FTT_INLINE int16_t ftt_i16(const uint8_t *p)
{
    int16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* ---- legacy blocks (32 elements, Q8_0 activations) ---- */

/* 4-bit levels of qs[16], with the fifth bits of qh (NULL: none). */
FTT_INLINE void ftt_unp_legacy(const uint8_t *qs, const uint8_t *qh, int8_t *q)
{
    const uint32_t h = qh ? ftt_u32(qh) : 0;
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)((qs[j] & 0x0f) | ((h >> j) & 1) << 4);
        q[j + 16] = (int8_t)((qs[j] >> 4) | ((h >> (j + 16)) & 1) << 4);
    }
}

FTT_INLINE void ftt_unp_q4_1(const uint8_t *w, ftt_unp_t *u)
{
    ftt_unp_legacy(w + 4, NULL, u->q);
    u->d = ftt_f16(w), u->dm = ftt_f16(w + 2);
}

FTT_INLINE void ftt_unp_q5_1(const uint8_t *w, ftt_unp_t *u)
{
    ftt_unp_legacy(w + 8, w + 4, u->q);
    u->d = ftt_f16(w), u->dm = ftt_f16(w + 2);
}

FTT_INLINE void ftt_unp_q5_0(const uint8_t *w, ftt_unp_t *u)
{
    ftt_unp_legacy(w + 6, w + 2, u->q);
    u->d = ftt_f16(w);
}

/* x = q d + m: d dx sum(q a) + m dx sum(a) */
FTT_INLINE float ftt_bdot_q4_1(const ftt_unp_t *u, const uint8_t *x)
{
    const int8_t *a = (const int8_t *)(x + 2);
    const int32_t qa = ftt_idot(u->q, a, 32), sa = ftt_isum(a, 32);
    const float dx = ftt_f16(x);
    return u->d * dx * (float)qa + u->dm * dx * (float)sa;
}
#define ftt_bdot_q5_1 ftt_bdot_q4_1

FTT_INLINE float ftt_bdot_q5_0(const ftt_unp_t *u, const uint8_t *x)
{
    const int8_t *a = (const int8_t *)(x + 2);
    const int32_t qa = ftt_idot(u->q, a, 32), sa = ftt_isum(a, 32);
    return (float)(qa - 16 * sa) * (u->d * ftt_f16(x));
}

FTT_INLINE void ftt_unp_iq4_nl(const uint8_t *w, ftt_unp_t *u)
{
    for (int j = 0; j < 16; j++) {
        u->q[j] = ftt_kvalues_iq4nl[w[2 + j] & 0x0f];
        u->q[j + 16] = ftt_kvalues_iq4nl[w[2 + j] >> 4];
    }
    u->d = ftt_f16(w);
}

FTT_INLINE float ftt_bdot_iq4_nl(const ftt_unp_t *u, const uint8_t *x)
{
    return (u->d * ftt_f16(x)) * (float)ftt_idot(u->q, (const int8_t *)(x + 2), 32);
}

/* The 32-element formats' fused row dots (dot_legacy.c's and dot_iq4.c's
 * loops: the levels meet the activations without a stored copy), which
 * the row loop runs for a single token. */
FTT_INLINE void ftt_legacy_sums(const uint8_t *qs, const uint8_t *qh, const int8_t *a, int32_t *qa,
                                int32_t *sa)
{
    const uint32_t h = qh ? ftt_u32(qh) : 0;
    int32_t s = 0, t = 0;
    for (int j = 0; j < 16; j++) {
        const int lo = (qs[j] & 0x0f) | (int)((h >> j) & 1) << 4;
        const int hi = (qs[j] >> 4) | (int)((h >> (j + 16)) & 1) << 4;
        s += lo * a[j] + hi * a[j + 16];
    }
    for (int j = 0; j < 32; j++)
        t += a[j];
    *qa = s, *sa = t;
}

FTT_INLINE float ftt_dot_q4_1(uint32_t cols, const uint8_t *w, const uint8_t *x)
{
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FTT_QK8_0; b++, w += FTT_Q4_1_BYTES, x += FTT_Q8_0_BYTES) {
        int32_t qa, sa;
        ftt_legacy_sums(w + 4, NULL, (const int8_t *)(x + 2), &qa, &sa);
        const float dx = ftt_f16(x);
        sum += ftt_f16(w) * dx * (float)qa + ftt_f16(w + 2) * dx * (float)sa;
    }
    return sum;
}

FTT_INLINE float ftt_dot_q5_1(uint32_t cols, const uint8_t *w, const uint8_t *x)
{
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FTT_QK8_0; b++, w += FTT_Q5_1_BYTES, x += FTT_Q8_0_BYTES) {
        int32_t qa, sa;
        ftt_legacy_sums(w + 8, w + 4, (const int8_t *)(x + 2), &qa, &sa);
        const float dx = ftt_f16(x);
        sum += ftt_f16(w) * dx * (float)qa + ftt_f16(w + 2) * dx * (float)sa;
    }
    return sum;
}

FTT_INLINE float ftt_dot_q5_0(uint32_t cols, const uint8_t *w, const uint8_t *x)
{
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FTT_QK8_0; b++, w += FTT_Q5_0_BYTES, x += FTT_Q8_0_BYTES) {
        int32_t qa, sa;
        ftt_legacy_sums(w + 6, w + 2, (const int8_t *)(x + 2), &qa, &sa);
        sum += (float)(qa - 16 * sa) * (ftt_f16(w) * ftt_f16(x));
    }
    return sum;
}

FTT_INLINE float ftt_dot_iq4_nl(uint32_t cols, const uint8_t *w, const uint8_t *x)
{
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FTT_QK8_0; b++, w += FTT_IQ4_NL_BYTES, x += FTT_Q8_0_BYTES) {
        const int8_t *a = (const int8_t *)(x + 2);
        int32_t s = 0;
        for (int j = 0; j < 16; j++)
            s += ftt_kvalues_iq4nl[w[2 + j] & 0xf] * a[j] + ftt_kvalues_iq4nl[w[2 + j] >> 4] * a[j + 16];
        sum += (ftt_f16(w) * ftt_f16(x)) * (float)s;
    }
    return sum;
}

/* E8M0 e -> half its value, 2^(e - 128) (ggml_e8m0_to_fp32_half). */
FTT_INLINE float ftt_e8m0_half(uint8_t e)
{
    const uint32_t b = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* UE4M3 x -> half its value (minifloat.h's ft_ue4m3_half: E4M3 without
 * its sign bit; 0x00 and 0x7f read as 0). */
FTT_INLINE float ftt_ue4m3_half(uint8_t x)
{
    if (x == 0 || x == 0x7f) return 0.0f;
    const uint32_t e = (x >> 3) & 0xfu, m = x & 7u;
    if (e == 0) return (float)m * 0x1.0p-10f;
    const uint32_t b = ((e - 7u + 127u) << 23) | (m << 20);
    float f;
    memcpy(&f, &b, 4);
    return f * 0.5f;
}

/* ---- K-quants (256 elements, Q8_K activations) ---- */

/* Q2_K/Q3_K element 128h + 32j + l is bits 2j of qs[32h + l]. */
FTT_INLINE void ftt_unp_2bit(const uint8_t *qs, int8_t *q)
{
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 32; l++)
                q[128 * h + 32 * j + l] = (int8_t)((qs[32 * h + l] >> (2 * j)) & 3);
}

FTT_INLINE void ftt_unp_q2_k(const uint8_t *w, ftt_unp_t *u)
{
    ftt_unp_2bit(w + 16, u->q);
    for (int g = 0; g < 16; g++)
        u->sc[g] = (int16_t)(w[g] & 0xF), u->mn[g] = (int16_t)(w[g] >> 4);
    u->d = ftt_f16(w + 80), u->dm = ftt_f16(w + 82);
}

FTT_INLINE float ftt_bdot_q2_k(const ftt_unp_t *u, const uint8_t *x)
{
    const int8_t *a = (const int8_t *)(x + 4);
    int32_t sumi = 0, summ = 0;
    for (int g = 0; g < 16; g++) {
        sumi += u->sc[g] * ftt_idot(u->q + 16 * g, a + 16 * g, 16);
        summ += u->mn[g] * ftt_i16(x + 4 + FTT_QK_K + 2 * g);
    }
    const float xd = ftt_f32(x);
    return u->d * xd * (float)sumi - u->dm * xd * (float)summ;
}

FTT_INLINE void ftt_unp_q3_k(const uint8_t *w, ftt_unp_t *u)
{
    ftt_unp_2bit(w + 32, u->q);
    /* element 32m + r: high bit m of hmask[r]; clear means level - 4 */
    for (int e = 0; e < FTT_QK_K; e++)
        u->q[e] = (int8_t)(u->q[e] - ((w[e % 32] >> (e / 32)) & 1 ? 0 : 4));
    const uint8_t *s = w + 96;
    for (int g = 0; g < 16; g++) {
        const int lo = g < 8 ? s[g] & 0xF : s[g - 8] >> 4;
        u->sc[g] = (int16_t)((lo | (((s[8 + g % 4] >> (2 * (g / 4))) & 3) << 4)) - 32);
    }
    u->d = ftt_f16(w + 108);
}

/* sum over 16 groups of 16 of sc * sum(q a): Q3_K and the IQ grids */
FTT_INLINE int32_t ftt_sumi16(const ftt_unp_t *u, const int8_t *a)
{
    int32_t sumi = 0;
    for (int g = 0; g < 16; g++)
        sumi += u->sc[g] * ftt_idot(u->q + 16 * g, a + 16 * g, 16);
    return sumi;
}

FTT_INLINE float ftt_bdot_q3_k(const ftt_unp_t *u, const uint8_t *x)
{
    return u->d * ftt_f32(x) * (float)ftt_sumi16(u, (const int8_t *)(x + 4));
}

FTT_INLINE void ftt_unp_q5_k(const uint8_t *w, ftt_unp_t *u)
{
    uint8_t sm[16]; /* Q4_K's scale packing */
    ftt_q4_k_scales(w + 4, sm);
    const uint8_t *qh = w + 16, *ql = w + 48;
    for (int s = 0; s < 8; s++) {
        for (int l = 0; l < 32; l++)
            u->q[32 * s + l] = (int8_t)(((ql[32 * (s / 2) + l] >> (4 * (s & 1))) & 0xF) |
                                        (((qh[l] >> s) & 1) << 4));
        u->sc[s] = sm[s], u->mn[s] = sm[8 + s];
    }
    u->d = ftt_f16(w), u->dm = ftt_f16(w + 2);
}

FTT_INLINE float ftt_bdot_q5_k(const ftt_unp_t *u, const uint8_t *x)
{
    const int8_t *a = (const int8_t *)(x + 4);
    int32_t sumi = 0, summ = 0;
    for (int s = 0; s < 8; s++) {
        sumi += u->sc[s] * ftt_idot(u->q + 32 * s, a + 32 * s, 32);
        summ += u->mn[s] * (ftt_i16(x + 4 + FTT_QK_K + 4 * s) + ftt_i16(x + 6 + FTT_QK_K + 4 * s));
    }
    const float xd = ftt_f32(x);
    return u->d * xd * (float)sumi - u->dm * xd * (float)summ;
}

FTT_INLINE void ftt_unp_iq4_xs(const uint8_t *w, ftt_unp_t *u)
{
    const unsigned scales_h = (unsigned)w[2] | (unsigned)w[3] << 8;
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *qs = w + 8 + 16 * ib;
        for (int j = 0; j < 16; j++) {
            u->q[32 * ib + j] = ftt_kvalues_iq4nl[qs[j] & 0x0f];
            u->q[32 * ib + j + 16] = ftt_kvalues_iq4nl[qs[j] >> 4];
        }
        const int ls = ((w[4 + ib / 2] >> 4 * (ib % 2)) & 0xf) | ((scales_h >> 2 * ib) & 3) << 4;
        u->sc[ib] = (int16_t)(ls - 32);
    }
    u->d = ftt_f16(w);
}

FTT_INLINE float ftt_bdot_iq4_xs(const ftt_unp_t *u, const uint8_t *x)
{
    const int8_t *a = (const int8_t *)(x + 4);
    int32_t sumi = 0;
    for (int ib = 0; ib < 8; ib++)
        sumi += u->sc[ib] * ftt_idot(u->q + 32 * ib, a + 32 * ib, 32);
    return u->d * ftt_f32(x) * (float)sumi;
}

/* ---- ternary (256 elements, Q8_K activations) ---- */

FTT_INLINE int ftt_tq1_trit(uint8_t byte, int k)
{
    static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
    const uint8_t q = (uint8_t)(byte * pow3[k]);
    return (int)(((unsigned)q * 3) >> 8) - 1;
}

FTT_INLINE void ftt_unp_tq1_0(const uint8_t *w, ftt_unp_t *u)
{
    for (int k = 0; k < 5; k++)
        for (int m = 0; m < 32; m++)
            u->q[32 * k + m] = (int8_t)ftt_tq1_trit(w[m], k);
    for (int k = 0; k < 5; k++)
        for (int m = 0; m < 16; m++)
            u->q[160 + 16 * k + m] = (int8_t)ftt_tq1_trit(w[32 + m], k);
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 4; j++)
            u->q[240 + 4 * k + j] = (int8_t)ftt_tq1_trit(w[48 + j], k);
    u->d = ftt_f16(w + 52);
}

FTT_INLINE void ftt_unp_tq2_0(const uint8_t *w, ftt_unp_t *u)
{
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 4; l++)
            for (int m = 0; m < 32; m++)
                u->q[128 * h + 32 * l + m] = (int8_t)(((w[32 * h + m] >> (2 * l)) & 3) - 1);
    u->d = ftt_f16(w + 64);
}

FTT_INLINE float ftt_bdot_tq(const ftt_unp_t *u, const uint8_t *x)
{
    return u->d * ftt_f32(x) * (float)ftt_idot(u->q, (const int8_t *)(x + 4), FTT_QK_K);
}
#define ftt_bdot_tq1_0 ftt_bdot_tq
#define ftt_bdot_tq2_0 ftt_bdot_tq

/* ---- IQ grids (256 elements, Q8_K activations): x = d m sc q ---- */
#if defined(FTT_HAVE_IQ_GRIDS)
/* q[0..7] = the 8 magnitudes of grid point g with sign bit j of s. */
FTT_INLINE void ftt_iq_put8(uint64_t g, unsigned s, int8_t *q)
{
    for (int j = 0; j < 8; j++) {
        const int m = (int)((g >> (8 * j)) & 0xff);
        q[j] = (int8_t)((s >> j) & 1 ? -m : m);
    }
}

FTT_INLINE void ftt_unp_iq2_xxs(const uint8_t *w, ftt_unp_t *u)
{
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *s = w + 2 + 8 * ib;
        const uint32_t aux = ftt_u32(s + 4);
        u->sc[2 * ib] = u->sc[2 * ib + 1] = (int16_t)(2 * (aux >> 28) + 1);
        for (int l = 0; l < 4; l++)
            ftt_iq_put8(ftt_iq2xxs_grid[s[l]], ftt_ksigns_iq2xs[(aux >> 7 * l) & 127],
                        u->q + 32 * ib + 8 * l);
    }
    u->d = ftt_f16(w) * 0.125f;
}

FTT_INLINE void ftt_unp_iq2_xs(const uint8_t *w, ftt_unp_t *u)
{
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t s = w[66 + ib];
        u->sc[2 * ib] = (int16_t)(2 * (s & 15) + 1);
        u->sc[2 * ib + 1] = (int16_t)(2 * (s >> 4) + 1);
        for (int l = 0; l < 4; l++) {
            const unsigned v = (unsigned)w[2 + 2 * (4 * ib + l)] | (unsigned)w[3 + 2 * (4 * ib + l)] << 8;
            ftt_iq_put8(ftt_iq2xs_grid[v & 511], ftt_ksigns_iq2xs[v >> 9], u->q + 32 * ib + 8 * l);
        }
    }
    u->d = ftt_f16(w) * 0.125f;
}

FTT_INLINE void ftt_unp_iq2_s(const uint8_t *w, ftt_unp_t *u)
{
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t s = w[74 + ib];
        u->sc[2 * ib] = (int16_t)(2 * (s & 15) + 1);
        u->sc[2 * ib + 1] = (int16_t)(2 * (s >> 4) + 1);
        for (int l = 0; l < 4; l++) {
            const unsigned idx = w[2 + 4 * ib + l] | ((unsigned)w[66 + ib] << (8 - 2 * l) & 0x300);
            ftt_iq_put8(ftt_iq2s_grid[idx], w[34 + 4 * ib + l], u->q + 32 * ib + 8 * l);
        }
    }
    u->d = ftt_f16(w) * 0.125f;
}

FTT_INLINE void ftt_unp_iq3_xxs(const uint8_t *w, ftt_unp_t *u)
{
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *qs = w + 2 + 8 * ib;
        const uint32_t aux = ftt_u32(w + 66 + 4 * ib);
        u->sc[2 * ib] = u->sc[2 * ib + 1] = (int16_t)(2 * (aux >> 28) + 1);
        for (int l = 0; l < 4; l++)
            ftt_iq_put8((uint64_t)ftt_iq3xxs_grid[qs[2 * l]] | (uint64_t)ftt_iq3xxs_grid[qs[2 * l + 1]] << 32,
                        ftt_ksigns_iq2xs[(aux >> 7 * l) & 127], u->q + 32 * ib + 8 * l);
    }
    u->d = ftt_f16(w) * 0.25f;
}

FTT_INLINE void ftt_unp_iq3_s(const uint8_t *w, ftt_unp_t *u)
{
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *qs = w + 2 + 8 * ib;
        const unsigned qh = w[66 + ib];
        u->sc[2 * ib] = u->sc[2 * ib + 1] = (int16_t)(2 * ((w[106 + ib / 2] >> 4 * (ib % 2)) & 15) + 1);
        for (int l = 0; l < 4; l++)
            ftt_iq_put8((uint64_t)ftt_iq3s_grid[qs[2 * l] | ((qh << (8 - 2 * l)) & 256)] |
                            (uint64_t)ftt_iq3s_grid[qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256)] << 32,
                        w[74 + 4 * ib + l], u->q + 32 * ib + 8 * l);
    }
    u->d = ftt_f16(w);
}

/* IQ1_S / IQ1_M: q = 8 grid + delta (delta +-1), grid element j of point
 * k in {-1, 0, 1} stored as value + 1 in bits 2j of ftt_iq1s_kgrid[k]
 * (runtime/format/quant_iq1.c's ft_iq1_unpack). */
FTT_INLINE void ftt_iq1_put8(unsigned k, int delta, int8_t *q)
{
    const unsigned g = ftt_iq1s_kgrid[k];
    for (int j = 0; j < 8; j++)
        q[j] = (int8_t)(8 * (int)((g >> 2 * j) & 3) - 8 + delta);
}

/* IQ1_S (50 B): d fp16, qs[32] at 2 (low 8 index bits), qh[8] u16 at 34:
 * bits 3l..3l+2 the high index bits of group l, 12..14 ls, 15 the delta's
 * sign, shared by the 32 elements. */
FTT_INLINE void ftt_unp_iq1_s(const uint8_t *w, ftt_unp_t *u)
{
    for (int ib = 0; ib < 8; ib++) {
        const unsigned qh = (unsigned)w[34 + 2 * ib] | (unsigned)w[35 + 2 * ib] << 8;
        u->sc[2 * ib] = u->sc[2 * ib + 1] = (int16_t)(2 * ((qh >> 12) & 7) + 1);
        const int delta = qh & 0x8000 ? -1 : 1;
        for (int l = 0; l < 4; l++)
            ftt_iq1_put8(w[2 + 4 * ib + l] | ((qh >> 3 * l) & 7) << 8, delta, u->q + 32 * ib + 8 * l);
    }
    u->d = ftt_f16(w) * 0.125f;
}

/* IQ1_M (56 B): qs[32] at 0, qh[16] at 32 (a nibble per group of 8: three
 * high index bits and the delta's sign), scales as four u16 at 48: 3-bit
 * ls per 16 elements in their low 12 bits, the fp16 d in their top
 * nibbles. */
FTT_INLINE void ftt_unp_iq1_m(const uint8_t *w, ftt_unp_t *u)
{
    unsigned s16[4];
    for (int i = 0; i < 4; i++)
        s16[i] = (unsigned)w[48 + 2 * i] | (unsigned)w[49 + 2 * i] << 8;
    for (int ib = 0; ib < 8; ib++) {
        const unsigned s = s16[ib / 2] >> 6 * (ib % 2);
        u->sc[2 * ib] = (int16_t)(2 * (s & 7) + 1);
        u->sc[2 * ib + 1] = (int16_t)(2 * ((s >> 3) & 7) + 1);
        for (int l = 0; l < 4; l++) {
            const unsigned h = (unsigned)w[32 + 2 * ib + l / 2] >> 4 * (l % 2);
            ftt_iq1_put8(w[4 * ib + l] | (h & 7) << 8, h & 8 ? -1 : 1, u->q + 32 * ib + 8 * l);
        }
    }
    const unsigned db = (s16[0] >> 12) | ((s16[1] >> 8) & 0x00f0) | ((s16[2] >> 4) & 0x0f00) | (s16[3] & 0xf000);
    const uint8_t d16[2] = {(uint8_t)(db & 0xff), (uint8_t)(db >> 8)};
    u->d = ftt_f16(d16) * 0.125f;
}

FTT_INLINE float ftt_bdot_iq_grid(const ftt_unp_t *u, const uint8_t *x)
{
    return u->d * ftt_f32(x) * (float)ftt_sumi16(u, (const int8_t *)(x + 4));
}
#define ftt_bdot_iq2_xxs ftt_bdot_iq_grid
#define ftt_bdot_iq2_xs ftt_bdot_iq_grid
#define ftt_bdot_iq2_s ftt_bdot_iq_grid
#define ftt_bdot_iq3_xxs ftt_bdot_iq_grid
#define ftt_bdot_iq3_s ftt_bdot_iq_grid
#define ftt_bdot_iq1_s ftt_bdot_iq_grid
#define ftt_bdot_iq1_m ftt_bdot_iq_grid
#endif

/* Rows r0..r1 x tokens: each weight block unpacked once per FTT_UNP_TOK
 * tokens, each token's sum taking the block terms in block order, as the
 * reference's per-row dot does. */
#define FTT_DEFINE_UNPACKED_MATMUL(F, QK, WBLK, XBLK)                                          \
    FTT_INLINE void ftt_matmul_##F(uint32_t cols, const void *w, size_t wrb, const void *xp,   \
                                   uint32_t n_tok, uint32_t r0, uint32_t r1, float *y,         \
                                   size_t ldy)                                                 \
    {                                                                                          \
        const uint32_t nb = cols / (QK);                                                       \
        const size_t xrb = (size_t)nb * (XBLK);                                                \
        if (n_tok == 1) { /* decode: the fused row dot */                                      \
            FTT_ROWLOOP(ftt_dot_##F, cols, w, wrb, xp, xrb, n_tok, r0, r1, y, ldy);            \
            return;                                                                            \
        }                                                                                      \
        ftt_unp_t u;                                                                           \
        for (uint32_t r = r0; r < r1; r++) {                                                   \
            const uint8_t *wr = (const uint8_t *)w + (size_t)r * wrb;                          \
            for (uint32_t t0 = 0; t0 < n_tok; t0 += FTT_UNP_TOK) {                             \
                const uint32_t nt = n_tok - t0 < FTT_UNP_TOK ? n_tok - t0 : FTT_UNP_TOK;       \
                const uint8_t *xt = (const uint8_t *)xp + (size_t)t0 * xrb;                    \
                float acc[FTT_UNP_TOK] = {0};                                                  \
                for (uint32_t b = 0; b < nb; b++) {                                            \
                    ftt_unp_##F(wr + (size_t)b * (WBLK), &u);                                  \
                    for (uint32_t t = 0; t < nt; t++)                                          \
                        acc[t] += ftt_bdot_##F(&u, xt + t * xrb + (size_t)b * (XBLK));         \
                }                                                                              \
                for (uint32_t t = 0; t < nt; t++)                                              \
                    y[(size_t)(t0 + t) * ldy + r] = acc[t];                                    \
            }                                                                                  \
        }                                                                                      \
    }

/* The 256-element formats' row dot: unpack and dot block after block, as
 * their reference does (it unpacks to int8 too). */
#define FTT_DEFINE_UNPACKED_DOT(F, QK, WBLK, XBLK)                                             \
    FTT_INLINE float ftt_dot_##F(uint32_t cols, const uint8_t *w, const uint8_t *x)            \
    {                                                                                          \
        ftt_unp_t u;                                                                           \
        float sum = 0.0f;                                                                      \
        for (uint32_t b = 0; b < cols / (QK); b++) {                                           \
            ftt_unp_##F(w + (size_t)b * (WBLK), &u);                                           \
            sum += ftt_bdot_##F(&u, x + (size_t)b * (XBLK));                                   \
        }                                                                                      \
        return sum;                                                                            \
    }
/* Q2_K's as dot_k_low.c writes it (its bsums copied out once: measured
 * faster than reading them from the unpacked block at decode). */
FTT_INLINE float ftt_dot_q2_k(uint32_t cols, const uint8_t *w, const uint8_t *x)
{
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FTT_QK_K; b++, w += FTT_Q2_K_BYTES, x += FTT_Q8_K_BYTES) {
        int8_t q[FTT_QK_K];
        ftt_unp_2bit(w + 16, q);
        const int8_t *q8 = (const int8_t *)(x + 4);
        int16_t bsums[16];
        memcpy(bsums, x + 4 + FTT_QK_K, sizeof(bsums));
        int32_t sumi = 0, summ = 0;
        for (int g = 0; g < 16; g++) {
            sumi += (w[g] & 0xF) * ftt_idot(q + 16 * g, q8 + 16 * g, 16);
            summ += (w[g] >> 4) * bsums[g];
        }
        const float xd = ftt_f32(x);
        sum += ftt_f16(w + 80) * xd * (float)sumi - ftt_f16(w + 82) * xd * (float)summ;
    }
    return sum;
}
FTT_DEFINE_UNPACKED_DOT(q3_k, FTT_QK_K, FTT_Q3_K_BYTES, FTT_Q8_K_BYTES)
FTT_DEFINE_UNPACKED_DOT(q5_k, FTT_QK_K, FTT_Q5_K_BYTES, FTT_Q8_K_BYTES)
/* IQ4_XS's as dot_iq4.c writes it: codebook values straight into the sums. */
FTT_INLINE float ftt_dot_iq4_xs(uint32_t cols, const uint8_t *w, const uint8_t *x)
{
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FTT_QK_K; b++, w += FTT_IQ4_XS_BYTES, x += FTT_Q8_K_BYTES) {
        const unsigned scales_h = (unsigned)w[2] | (unsigned)w[3] << 8;
        const int8_t *q8 = (const int8_t *)(x + 4);
        int32_t sumi = 0;
        for (int ib = 0; ib < 8; ib++) {
            const int ls = ((w[4 + ib / 2] >> 4 * (ib % 2)) & 0xf) | ((scales_h >> 2 * ib) & 3) << 4;
            const uint8_t *qs = w + 8 + 16 * ib;
            const int8_t *a = q8 + 32 * ib;
            int32_t s = 0;
            for (int j = 0; j < 16; j++)
                s += ftt_kvalues_iq4nl[qs[j] & 0xf] * a[j] + ftt_kvalues_iq4nl[qs[j] >> 4] * a[j + 16];
            sumi += (ls - 32) * s;
        }
        sum += ftt_f16(w) * ftt_f32(x) * (float)sumi;
    }
    return sum;
}
FTT_DEFINE_UNPACKED_DOT(tq1_0, FTT_QK_K, FTT_TQ1_0_BYTES, FTT_Q8_K_BYTES)
FTT_DEFINE_UNPACKED_DOT(tq2_0, FTT_QK_K, FTT_TQ2_0_BYTES, FTT_Q8_K_BYTES)
#if defined(FTT_HAVE_IQ_GRIDS)
FTT_DEFINE_UNPACKED_DOT(iq2_xxs, FTT_QK_K, FTT_IQ2_XXS_BYTES, FTT_Q8_K_BYTES)
FTT_DEFINE_UNPACKED_DOT(iq2_xs, FTT_QK_K, FTT_IQ2_XS_BYTES, FTT_Q8_K_BYTES)
FTT_DEFINE_UNPACKED_DOT(iq2_s, FTT_QK_K, FTT_IQ2_S_BYTES, FTT_Q8_K_BYTES)
FTT_DEFINE_UNPACKED_DOT(iq3_xxs, FTT_QK_K, FTT_IQ3_XXS_BYTES, FTT_Q8_K_BYTES)
FTT_DEFINE_UNPACKED_DOT(iq3_s, FTT_QK_K, FTT_IQ3_S_BYTES, FTT_Q8_K_BYTES)
/* IQ1_S's and IQ1_M's fused row dots (decode): per group of 8,
 * sum (8 g + delta) a = 8 sum g a + delta sum a, the grid read from its
 * 2-bit fields without a stored copy; the per-16 sums times their scales
 * give dot_iq_grid.c's sumi exactly (all in int32, no rounding), and the
 * float term is its (d/8) dx sumi. The unpacked form measured 0.76x of the
 * reference at decode. */
FTT_INLINE int32_t ftt_iq1_dot8(unsigned k, int delta, const int8_t *a)
{
    const unsigned g = ftt_iq1s_kgrid[k];
    int32_t s = 0, t = 0;
    for (int j = 0; j < 8; j++) {
        s += ((int)((g >> 2 * j) & 3) - 1) * a[j];
        t += a[j];
    }
    return 8 * s + delta * t;
}

FTT_INLINE float ftt_dot_iq1_s(uint32_t cols, const uint8_t *w, const uint8_t *x)
{
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FTT_QK_K; b++, w += FTT_IQ1_S_BYTES, x += FTT_Q8_K_BYTES) {
        const int8_t *a = (const int8_t *)(x + 4);
        int32_t sumi = 0;
        for (int ib = 0; ib < 8; ib++) {
            const unsigned qh = (unsigned)w[34 + 2 * ib] | (unsigned)w[35 + 2 * ib] << 8;
            const int delta = qh & 0x8000 ? -1 : 1;
            int32_t s = 0;
            for (int l = 0; l < 4; l++)
                s += ftt_iq1_dot8(w[2 + 4 * ib + l] | ((qh >> 3 * l) & 7) << 8, delta, a + 32 * ib + 8 * l);
            sumi += (int32_t)(2 * ((qh >> 12) & 7) + 1) * s;
        }
        sum += ftt_f16(w) * 0.125f * ftt_f32(x) * (float)sumi;
    }
    return sum;
}

FTT_INLINE float ftt_dot_iq1_m(uint32_t cols, const uint8_t *w, const uint8_t *x)
{
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FTT_QK_K; b++, w += FTT_IQ1_M_BYTES, x += FTT_Q8_K_BYTES) {
        const int8_t *a = (const int8_t *)(x + 4);
        unsigned s16[4];
        for (int i = 0; i < 4; i++)
            s16[i] = (unsigned)w[48 + 2 * i] | (unsigned)w[49 + 2 * i] << 8;
        int32_t sumi = 0;
        for (int ib = 0; ib < 8; ib++) {
            const unsigned sc = s16[ib / 2] >> 6 * (ib % 2);
            for (int half = 0; half < 2; half++) {
                int32_t s = 0;
                for (int l = 2 * half; l < 2 * half + 2; l++) {
                    const unsigned h = (unsigned)w[32 + 2 * ib + l / 2] >> 4 * (l % 2);
                    s += ftt_iq1_dot8(w[4 * ib + l] | (h & 7) << 8, h & 8 ? -1 : 1, a + 32 * ib + 8 * l);
                }
                sumi += (int32_t)(2 * ((sc >> 3 * half) & 7) + 1) * s;
            }
        }
        const unsigned db = (s16[0] >> 12) | ((s16[1] >> 8) & 0x00f0) | ((s16[2] >> 4) & 0x0f00) | (s16[3] & 0xf000);
        const uint8_t d16[2] = {(uint8_t)(db & 0xff), (uint8_t)(db >> 8)};
        sum += ftt_f16(d16) * 0.125f * ftt_f32(x) * (float)sumi;
    }
    return sum;
}
#endif

FTT_DEFINE_UNPACKED_MATMUL(q4_1, FTT_QK8_0, FTT_Q4_1_BYTES, FTT_Q8_0_BYTES)
FTT_DEFINE_UNPACKED_MATMUL(q5_0, FTT_QK8_0, FTT_Q5_0_BYTES, FTT_Q8_0_BYTES)
FTT_DEFINE_UNPACKED_MATMUL(q5_1, FTT_QK8_0, FTT_Q5_1_BYTES, FTT_Q8_0_BYTES)
FTT_DEFINE_UNPACKED_MATMUL(iq4_nl, FTT_QK8_0, FTT_IQ4_NL_BYTES, FTT_Q8_0_BYTES)
FTT_DEFINE_UNPACKED_MATMUL(q2_k, FTT_QK_K, FTT_Q2_K_BYTES, FTT_Q8_K_BYTES)
FTT_DEFINE_UNPACKED_MATMUL(q3_k, FTT_QK_K, FTT_Q3_K_BYTES, FTT_Q8_K_BYTES)
FTT_DEFINE_UNPACKED_MATMUL(q5_k, FTT_QK_K, FTT_Q5_K_BYTES, FTT_Q8_K_BYTES)
FTT_DEFINE_UNPACKED_MATMUL(iq4_xs, FTT_QK_K, FTT_IQ4_XS_BYTES, FTT_Q8_K_BYTES)
FTT_DEFINE_UNPACKED_MATMUL(tq1_0, FTT_QK_K, FTT_TQ1_0_BYTES, FTT_Q8_K_BYTES)
FTT_DEFINE_UNPACKED_MATMUL(tq2_0, FTT_QK_K, FTT_TQ2_0_BYTES, FTT_Q8_K_BYTES)
#if defined(FTT_HAVE_IQ_GRIDS)
FTT_DEFINE_UNPACKED_MATMUL(iq2_xxs, FTT_QK_K, FTT_IQ2_XXS_BYTES, FTT_Q8_K_BYTES)
FTT_DEFINE_UNPACKED_MATMUL(iq2_xs, FTT_QK_K, FTT_IQ2_XS_BYTES, FTT_Q8_K_BYTES)
FTT_DEFINE_UNPACKED_MATMUL(iq2_s, FTT_QK_K, FTT_IQ2_S_BYTES, FTT_Q8_K_BYTES)
FTT_DEFINE_UNPACKED_MATMUL(iq3_xxs, FTT_QK_K, FTT_IQ3_XXS_BYTES, FTT_Q8_K_BYTES)
FTT_DEFINE_UNPACKED_MATMUL(iq3_s, FTT_QK_K, FTT_IQ3_S_BYTES, FTT_Q8_K_BYTES)
FTT_DEFINE_UNPACKED_MATMUL(iq1_s, FTT_QK_K, FTT_IQ1_S_BYTES, FTT_Q8_K_BYTES)
FTT_DEFINE_UNPACKED_MATMUL(iq1_m, FTT_QK_K, FTT_IQ1_M_BYTES, FTT_Q8_K_BYTES)
#endif

/* ---- MXFP4, NVFP4 and FP8 row by row: the runtime's reference has an AVX2 tier
 * for them (dot_fp_avx2.c), which the runtime runs on such machines. A
 * module built for AVX2 or AVX-512 does its operations in its order
 * (bit-identical to it); the portable module those of dot_fp.c. ---- */
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
FTT_INLINE float ftt_hsum8_fp(__m256 v)
{
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

/* 32 pairs of signed bytes -> eight int32 lanes of pair sums (exact). */
FTT_INLINE __m256i ftt_dot_i8x32(__m256i a, __m256i b)
{
    const __m256i abs_a = _mm256_sign_epi8(a, a), b_signed = _mm256_sign_epi8(b, a);
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), abs_a, b_signed);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(abs_a, b_signed), _mm256_set1_epi16(1));
#endif
}

FTT_INLINE float ftt_dot_mxfp4(uint32_t cols, const uint8_t *w, const uint8_t *x)
{
    const __m256i kv = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)ftt_e2m1_x2));
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256 acc = _mm256_setzero_ps();
    for (uint32_t b = 0; b < cols / FTT_QK8_0; b++, w += FTT_MXFP4_BYTES, x += FTT_Q8_0_BYTES) {
        /* low nibbles are elements 0..15, high 16..31: Q8_0's order */
        const __m128i t = _mm_loadu_si128((const __m128i *)(w + 1));
        const __m256i nib = _mm256_and_si256(
            _mm256_insertf128_si256(_mm256_castsi128_si256(t), _mm_srli_epi16(t, 4), 1), m4);
        const __m256i p = ftt_dot_i8x32(_mm256_shuffle_epi8(kv, nib), _mm256_loadu_si256((const __m256i *)(x + 2)));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(ftt_f16(x) * ftt_e8m0_half(w[0])), _mm256_cvtepi32_ps(p), acc);
    }
    return ftt_hsum8_fp(acc);
}

/* dot_fp_avx2.c's NVFP4: per Q8_0 block (half an NVFP4 block) the 16
 * bytes of sub-blocks 2k, 2k + 1, their low nibbles (elements 0..7 of
 * each) and high nibbles (8..15) put in Q8_0's element order, one pshufb
 * to levels, int32 lanes 0..3 scaled by sub-block 2k's factor, 4..7 by
 * 2k + 1's, one FMA per half block. */
FTT_INLINE float ftt_dot_nvfp4(uint32_t cols, const uint8_t *w, const uint8_t *x)
{
    const __m256i kv = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)ftt_e2m1_x2));
    const __m128i m4 = _mm_set1_epi8(0x0f);
    __m256 acc = _mm256_setzero_ps();
    for (uint32_t b = 0; b < cols / FTT_NVFP4_ELEMS; b++, w += FTT_NVFP4_BYTES) {
        for (int k = 0; k < 2; k++, x += FTT_Q8_0_BYTES) {
            const __m128i q = _mm_loadu_si128((const __m128i *)(w + 4 + 16 * k));
            const __m128i lo = _mm_and_si128(q, m4);
            const __m128i hi = _mm_and_si128(_mm_srli_epi16(q, 4), m4);
            const __m256i nib = _mm256_set_m128i(_mm_unpackhi_epi64(lo, hi), _mm_unpacklo_epi64(lo, hi));
            const __m256i p = ftt_dot_i8x32(_mm256_shuffle_epi8(kv, nib), _mm256_loadu_si256((const __m256i *)(x + 2)));
            const float dx = ftt_f16(x);
            const __m256 d = _mm256_set_m128(_mm_set1_ps(dx * ftt_ue4m3_half(w[2 * k + 1])),
                                             _mm_set1_ps(dx * ftt_ue4m3_half(w[2 * k])));
            acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc);
        }
    }
    return ftt_hsum8_fp(acc);
}

/* Eight E4M3 bytes -> eight float32, exactly (ftt_e4m3's rule). */
FTT_INLINE __m256 ftt_e4m3x8(const uint8_t *p)
{
    const __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
    const __m256i a = _mm256_and_si256(b, _mm256_set1_epi32(0x7f));
    const __m256 normal =
        _mm256_castsi256_ps(_mm256_add_epi32(_mm256_slli_epi32(a, 20), _mm256_set1_epi32(120 << 23)));
    const __m256 sub = _mm256_mul_ps(_mm256_cvtepi32_ps(a), _mm256_set1_ps(0x1.0p-9f));
    __m256 v = _mm256_blendv_ps(normal, sub, _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(8), a)));
    v = _mm256_blendv_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000)),
                         _mm256_castsi256_ps(_mm256_cmpeq_epi32(a, _mm256_set1_epi32(0x7f))));
    const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x80)), 24);
    return _mm256_or_ps(v, _mm256_castsi256_ps(sign));
}

FTT_INLINE float ftt_dot_fp8(uint32_t cols, const uint8_t *w, const uint8_t *xb)
{
    const float *x = (const float *)(const void *)xb;
    __m256 acc = _mm256_setzero_ps();
    for (uint32_t b = 0; b < cols / FTT_FP8_ELEMS; b++, w += FTT_FP8_BYTES, x += FTT_FP8_ELEMS) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0;
        for (int j = 0; j < FTT_FP8_ELEMS; j += 16) {
            a0 = _mm256_fmadd_ps(ftt_e4m3x8(w + 4 + j), _mm256_loadu_ps(x + j), a0);
            a1 = _mm256_fmadd_ps(ftt_e4m3x8(w + 12 + j), _mm256_loadu_ps(x + j + 8), a1);
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(ftt_f32(w)), _mm256_add_ps(a0, a1), acc);
    }
    return ftt_hsum8_fp(acc);
}
#else
FTT_INLINE float ftt_dot_mxfp4(uint32_t cols, const uint8_t *w, const uint8_t *x)
{
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FTT_QK8_0; b++, w += FTT_MXFP4_BYTES, x += FTT_Q8_0_BYTES) {
        int32_t sumi = 0;
        for (int j = 0; j < 16; j++)
            sumi += ftt_e2m1_x2[w[1 + j] & 0x0f] * (int8_t)x[2 + j] + ftt_e2m1_x2[w[1 + j] >> 4] * (int8_t)x[18 + j];
        sum += (ftt_f16(x) * ftt_e8m0_half(w[0])) * (float)sumi;
    }
    return sum;
}

/* dot_fp.c's NVFP4: per 16-element sub-block s, the exact int32 sum of
 * levels times Q8_0 activations (sub-blocks 0, 1 in the first Q8_0 block,
 * 2, 3 in the second), scaled by that block's d times half the UE4M3. */
FTT_INLINE float ftt_dot_nvfp4(uint32_t cols, const uint8_t *w, const uint8_t *x)
{
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FTT_NVFP4_ELEMS; b++, w += FTT_NVFP4_BYTES, x += 2 * FTT_Q8_0_BYTES) {
        for (int s = 0; s < 4; s++) {
            const uint8_t *xb = x + (s >> 1) * FTT_Q8_0_BYTES;
            const int8_t *xq = (const int8_t *)(xb + 2) + (s & 1) * 16;
            const uint8_t *wq = w + 4 + 8 * s;
            int32_t sumi = 0;
            for (int j = 0; j < 8; j++)
                sumi += ftt_e2m1_x2[wq[j] & 0x0f] * xq[j] + ftt_e2m1_x2[wq[j] >> 4] * xq[j + 8];
            sum += (ftt_f16(xb) * ftt_ue4m3_half(w[s])) * (float)sumi;
        }
    }
    return sum;
}

/* E4M3 -> float32, exact (minifloat.h's ft_e4m3_to_f32). */
FTT_INLINE float ftt_e4m3(uint8_t v)
{
    const uint32_t a = v & 0x7fu;
    float f;
    if (a == 0x7f) {
        const uint32_t nan = 0x7fc00000u;
        memcpy(&f, &nan, 4);
    } else if (a < 8) {
        f = (float)a * 0x1.0p-9f;
    } else {
        const uint32_t b = (a << 20) + (120u << 23);
        memcpy(&f, &b, 4);
    }
    uint32_t bits;
    memcpy(&bits, &f, 4);
    bits |= (uint32_t)(v & 0x80u) << 24;
    memcpy(&f, &bits, 4);
    return f;
}

/* dot_fp.c's eight partial sums per block and their tree, then d times
 * the block sum. */
FTT_INLINE float ftt_dot_fp8(uint32_t cols, const uint8_t *w, const uint8_t *x)
{
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FTT_FP8_ELEMS; b++, w += FTT_FP8_BYTES, x += 4 * FTT_FP8_ELEMS) {
        float acc[8] = {0};
        for (int j = 0; j < FTT_FP8_ELEMS; j += 8)
            for (int k = 0; k < 8; k++)
                acc[k] += ftt_e4m3(w[4 + j + k]) * ftt_f32(x + 4 * (j + k));
        for (int width = 4; width > 0; width /= 2)
            for (int k = 0; k < width; k++)
                acc[k] += acc[k + width];
        sum += ftt_f32(w) * acc[0];
    }
    return sum;
}
#endif

FTT_DEFINE_ROWLOOP_MATMUL(mxfp4, (size_t)(cols / FTT_QK8_0) * FTT_Q8_0_BYTES)
FTT_DEFINE_ROWLOOP_MATMUL(nvfp4, (size_t)(cols / FTT_QK8_0) * FTT_Q8_0_BYTES)
FTT_DEFINE_ROWLOOP_MATMUL(fp8, (size_t)cols * 4)
