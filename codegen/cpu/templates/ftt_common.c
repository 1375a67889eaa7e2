/* template: common helpers and the portable dot products of every format
 * (the reference numerics of runtime/backends/cpu/dot_*.c). */
#include <math.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#if defined(__clang__)
#define FTK_META(s) __attribute__((annotate(s)))
#else
#define FTK_META(s)
#endif
#define FTT_INLINE static inline __attribute__((always_inline))
#define FTK_EXPORT __attribute__((visibility("default")))

enum { FTT_QK8_0 = 32, FTT_Q8_0_BYTES = 34, FTT_Q4_0_BYTES = 18, FTT_QK_K = 256,
       FTT_Q4_K_BYTES = 144, FTT_Q6_K_BYTES = 210, FTT_Q8_K_BYTES = 292 };

static const ft_kabi_host_t *ftt_host;

FTT_INLINE float ftt_f32(const uint8_t *p)
{
    float f;
    memcpy(&f, p, 4);
    return f;
}

FTT_INLINE float ftt_f16(const uint8_t *p)
{
    const uint16_t h = (uint16_t)(p[0] | (p[1] << 8));
#if defined(__F16C__)
    return _cvtsh_ss(h);
#else
    const uint32_t w = (uint32_t)h << 16, sign = w & 0x80000000u, two_w = w + w;
    uint32_t u = (two_w >> 4) + (0xE0u << 23), nb, db;
    float normalized, denormalized, f;
    memcpy(&normalized, &u, 4);
    normalized *= 0x1.0p-112f;
    u = (two_w >> 17) | (126u << 23);
    memcpy(&denormalized, &u, 4);
    denormalized -= 0.5f;
    memcpy(&nb, &normalized, 4);
    memcpy(&db, &denormalized, 4);
    const uint32_t bits = sign | (two_w < (1u << 27) ? db : nb);
    memcpy(&f, &bits, 4);
    return f;
#endif
}

FTT_INLINE float ftt_bf16(const uint8_t *p)
{
    const uint32_t u = (uint32_t)(p[0] | (p[1] << 8)) << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

FTT_INLINE void ftt_q4_k_scales(const uint8_t *packed, uint8_t out[16])
{
    const uint32_t kmask1 = 0x3f3f3f3f, kmask2 = 0x0f0f0f0f, kmask3 = 0x03030303;
    uint32_t utmp[4];
    memcpy(utmp, packed, 12);
    utmp[3] = ((utmp[2] >> 4) & kmask2) | (((utmp[1] >> 6) & kmask3) << 4);
    const uint32_t uaux = utmp[1] & kmask1;
    utmp[1] = (utmp[2] & kmask2) | (((utmp[0] >> 6) & kmask3) << 4);
    utmp[2] = uaux;
    utmp[0] &= kmask1;
    memcpy(out, utmp, 16);
}

FTT_INLINE float ftt_dot_f32(uint32_t cols, const uint8_t *w, const uint8_t *x)
{
    float s[8] = {0};
    for (uint32_t i = 0; i < cols; i += 8)
        for (int l = 0; l < 8 && i + l < cols; l++)
            s[l] += ftt_f32(w + 4 * (size_t)(i + l)) * ftt_f32(x + 4 * (size_t)(i + l));
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

FTT_INLINE float ftt_dot_f16(uint32_t cols, const uint8_t *w, const uint8_t *x)
{
    float s[8] = {0};
    for (uint32_t i = 0; i < cols; i += 8)
        for (int l = 0; l < 8 && i + l < cols; l++)
            s[l] += ftt_f16(w + 2 * (size_t)(i + l)) * ftt_f32(x + 4 * (size_t)(i + l));
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

FTT_INLINE float ftt_dot_bf16(uint32_t cols, const uint8_t *w, const uint8_t *x)
{
    float s[8] = {0};
    for (uint32_t i = 0; i < cols; i += 8)
        for (int l = 0; l < 8 && i + l < cols; l++)
            s[l] += ftt_bf16(w + 2 * (size_t)(i + l)) * ftt_f32(x + 4 * (size_t)(i + l));
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

FTT_INLINE float ftt_dot_q8_0(uint32_t cols, const uint8_t *w, const uint8_t *x)
{
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FTT_QK8_0; b++, w += FTT_Q8_0_BYTES, x += FTT_Q8_0_BYTES) {
        const int8_t *wq = (const int8_t *)(w + 2), *xq = (const int8_t *)(x + 2);
        int32_t sumi = 0;
        for (int j = 0; j < FTT_QK8_0; j++)
            sumi += wq[j] * xq[j];
        sum += (float)sumi * (ftt_f16(w) * ftt_f16(x));
    }
    return sum;
}

FTT_INLINE float ftt_dot_q4_0(uint32_t cols, const uint8_t *w, const uint8_t *x)
{
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FTT_QK8_0; b++, w += FTT_Q4_0_BYTES, x += FTT_Q8_0_BYTES) {
        const uint8_t *wq = w + 2;
        const int8_t *xq = (const int8_t *)(x + 2);
        int32_t sumi = 0, suma = 0;
        for (int j = 0; j < FTT_QK8_0 / 2; j++)
            sumi += (wq[j] & 0x0f) * xq[j] + (wq[j] >> 4) * xq[j + 16];
        for (int j = 0; j < FTT_QK8_0; j++)
            suma += xq[j];
        sumi -= 8 * suma;
        sum += (float)sumi * (ftt_f16(w) * ftt_f16(x));
    }
    return sum;
}

FTT_INLINE float ftt_dot_q4_k(uint32_t cols, const uint8_t *w, const uint8_t *x)
{
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FTT_QK_K; b++, w += FTT_Q4_K_BYTES, x += FTT_Q8_K_BYTES) {
        uint8_t sm[16];
        ftt_q4_k_scales(w + 4, sm);
        const uint8_t *q4 = w + 16;
        const int8_t *q8 = (const int8_t *)(x + 4);
        int16_t bsums[16];
        memcpy(bsums, x + 4 + FTT_QK_K, sizeof(bsums));
        int32_t sumi = 0, summ = 0;
        for (int j = 0; j < 4; j++, q4 += 32, q8 += 64) {
            int32_t lo = 0, hi = 0;
            for (int l = 0; l < 32; l++) {
                lo += (q4[l] & 0x0f) * q8[l];
                hi += (q4[l] >> 4) * q8[l + 32];
            }
            sumi += sm[2 * j] * lo + sm[2 * j + 1] * hi;
        }
        for (int j = 0; j < 8; j++)
            summ += sm[8 + j] * (bsums[2 * j] + bsums[2 * j + 1]);
        const float xd = ftt_f32(x);
        sum += ftt_f16(w) * xd * (float)sumi - ftt_f16(w + 2) * xd * (float)summ;
    }
    return sum;
}

FTT_INLINE float ftt_dot_q6_k(uint32_t cols, const uint8_t *w, const uint8_t *x)
{
    float sum = 0.0f;
    for (uint32_t b = 0; b < cols / FTT_QK_K; b++, w += FTT_Q6_K_BYTES, x += FTT_Q8_K_BYTES) {
        const uint8_t *ql = w, *qh = w + 128;
        const int8_t *sc = (const int8_t *)(w + 192);
        const int8_t *q8 = (const int8_t *)(x + 4);
        int16_t bsums[16];
        memcpy(bsums, x + 4 + FTT_QK_K, sizeof(bsums));
        int32_t sumi = 0;
        for (int g = 0; g < 16; g++)
            sumi -= 32 * sc[g] * bsums[g];
        for (int h = 0; h < 2; h++, ql += 64, qh += 32, sc += 8, q8 += 128) {
            for (int half = 0; half < 2; half++) {
                int32_t s[4] = {0, 0, 0, 0};
                for (int l = 16 * half; l < 16 * half + 16; l++) {
                    s[0] += ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) * q8[l];
                    s[1] += ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) * q8[l + 32];
                    s[2] += ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) * q8[l + 64];
                    s[3] += ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) * q8[l + 96];
                }
                for (int k = 0; k < 4; k++)
                    sumi += sc[half + 2 * k] * s[k];
            }
        }
        sum += ftt_f16(w + 208) * ftt_f32(x) * (float)sumi;
    }
    return sum;
}

/* The row loop for formats without a SIMD tile: one row, one token. */
#define FTT_ROWLOOP(DOT, cols, w, wrb, xp, xrb, n_tok, r0, r1, y, ldy)                          \
    for (uint32_t r_ = (r0); r_ < (r1); r_++)                                                   \
        for (uint32_t t_ = 0; t_ < (n_tok); t_++)                                               \
            (y)[(size_t)t_ * (ldy) + r_] = DOT((cols), (const uint8_t *)(w) + (size_t)r_ * (wrb), \
                                               (const uint8_t *)(xp) + (size_t)t_ * (xrb))
