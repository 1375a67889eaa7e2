/* AVX2 dot products: the same sums as the portable ones (dot_*.c), with
 * ggml's x86 techniques (ggml-cpu/arch/x86/quants.c). The integer sums
 * within a block are exact in both tiers; only the float32 accumulation
 * order across blocks differs (eight lanes here).
 *
 * The key instruction is maddubs (u8 x s8 -> pairs summed in s16): Q4
 * nibbles and Q6 levels are unsigned, so they multiply the signed Q8
 * activations directly; for two signed operands (Q8_0 x Q8_0, Q4_0 - 8)
 * the sign is moved onto the activation first. With AVX-VNNI, dpbusd does
 * the maddubs + madd pair in one instruction. Built only for AVX2 targets. */
#include "cpu_dot.h"

#if FT_CPU_HAVE_AVX2

#include "dot_avx2.h"

float ft_cpu_dot_f32_avx2(uint32_t cols, const void *w_row, const void *x_row)
{
    const float *w = w_row, *x = x_row;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    uint32_t i = 0;
    for (; i + 32 <= cols; i += 32) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 16), _mm256_loadu_ps(x + i + 16), a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 24), _mm256_loadu_ps(x + i + 24), a3);
    }
    float tail = 0.0f;
    for (; i < cols; i++)
        tail += ft_cpu_f32((const uint8_t *)w_row + 4 * (size_t)i) * x[i];
    return ft_avx2_hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3))) + tail;
}

float ft_cpu_dot_f16_avx2(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row;
    const float *x = x_row;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    uint32_t i = 0;
#define FT_F16X8(off) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + 2 * ((size_t)i + (off)))))
    for (; i + 32 <= cols; i += 32) {
        a0 = _mm256_fmadd_ps(FT_F16X8(0), _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(FT_F16X8(8), _mm256_loadu_ps(x + i + 8), a1);
        a2 = _mm256_fmadd_ps(FT_F16X8(16), _mm256_loadu_ps(x + i + 16), a2);
        a3 = _mm256_fmadd_ps(FT_F16X8(24), _mm256_loadu_ps(x + i + 24), a3);
    }
#undef FT_F16X8
    float tail = 0.0f;
    for (; i < cols; i++)
        tail += ft_cpu_f16(w + 2 * (size_t)i) * x[i];
    return ft_avx2_hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3))) + tail;
}

float ft_cpu_dot_bf16_avx2(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row;
    const float *x = x_row;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0;
    uint32_t i = 0;
    for (; i + 16 <= cols; i += 16) {
        const __m256i h = _mm256_loadu_si256((const __m256i *)(w + 2 * (size_t)i));
        /* bf16 -> f32 is a 16-bit shift into the high half of each word */
        const __m256 lo = _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(h)), 16));
        const __m256 hi = _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(h, 1)), 16));
        a0 = _mm256_fmadd_ps(lo, _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(hi, _mm256_loadu_ps(x + i + 8), a1);
    }
    float tail = 0.0f;
    for (; i < cols; i++) {
        const uint32_t u = (uint32_t)(w[2 * (size_t)i] | (w[2 * (size_t)i + 1] << 8)) << 16;
        float f;
        memcpy(&f, &u, 4);
        tail += f * x[i];
    }
    return ft_avx2_hsum(_mm256_add_ps(a0, a1)) + tail;
}

float ft_cpu_dot_q8_0_avx2(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row, *x = x_row;
    const uint32_t nb = cols / FT_CPU_QK8_0;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
    uint32_t b = 0;
    /* Two blocks a step, two accumulators: the FMA latency is hidden. */
    for (; b + 2 <= nb; b += 2, w += 2 * FT_CPU_Q8_0_BYTES, x += 2 * FT_CPU_Q8_0_BYTES) {
        const __m256i p0 = ft_avx2_dot_i8(_mm256_loadu_si256((const __m256i *)(w + 2)),
                                          _mm256_loadu_si256((const __m256i *)(x + 2)));
        const __m256i p1 = ft_avx2_dot_i8(_mm256_loadu_si256((const __m256i *)(w + 36)),
                                          _mm256_loadu_si256((const __m256i *)(x + 36)));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(ft_cpu_f16(w) * ft_cpu_f16(x)),
                               _mm256_cvtepi32_ps(p0), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(ft_cpu_f16(w + 34) * ft_cpu_f16(x + 34)),
                               _mm256_cvtepi32_ps(p1), acc1);
    }
    for (; b < nb; b++, w += FT_CPU_Q8_0_BYTES, x += FT_CPU_Q8_0_BYTES) {
        const __m256i p = ft_avx2_dot_i8(_mm256_loadu_si256((const __m256i *)(w + 2)),
                                         _mm256_loadu_si256((const __m256i *)(x + 2)));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(ft_cpu_f16(w) * ft_cpu_f16(x)),
                               _mm256_cvtepi32_ps(p), acc0);
    }
    return ft_avx2_hsum(_mm256_add_ps(acc0, acc1));
}

float ft_cpu_dot_q4_0_avx2(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row, *x = x_row;
    const uint32_t nb = cols / FT_CPU_QK8_0;
    const __m256i eight = _mm256_set1_epi8(8);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
    uint32_t b = 0;
    for (; b + 2 <= nb; b += 2, w += 2 * FT_CPU_Q4_0_BYTES, x += 2 * FT_CPU_Q8_0_BYTES) {
        const __m256i q0 = _mm256_sub_epi8(ft_avx2_nibbles(w + 2), eight);
        const __m256i q1 = _mm256_sub_epi8(ft_avx2_nibbles(w + 20), eight);
        const __m256i p0 = ft_avx2_dot_i8(q0, _mm256_loadu_si256((const __m256i *)(x + 2)));
        const __m256i p1 = ft_avx2_dot_i8(q1, _mm256_loadu_si256((const __m256i *)(x + 36)));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(ft_cpu_f16(w) * ft_cpu_f16(x)),
                               _mm256_cvtepi32_ps(p0), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(ft_cpu_f16(w + 18) * ft_cpu_f16(x + 34)),
                               _mm256_cvtepi32_ps(p1), acc1);
    }
    for (; b < nb; b++, w += FT_CPU_Q4_0_BYTES, x += FT_CPU_Q8_0_BYTES) {
        const __m256i q = _mm256_sub_epi8(ft_avx2_nibbles(w + 2), eight);
        const __m256i p = ft_avx2_dot_i8(q, _mm256_loadu_si256((const __m256i *)(x + 2)));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(ft_cpu_f16(w) * ft_cpu_f16(x)),
                               _mm256_cvtepi32_ps(p), acc0);
    }
    return ft_avx2_hsum(_mm256_add_ps(acc0, acc1));
}

/* Unsigned bytes (u) times signed bytes (s), pairs summed to int16 and
 * multiplied by the int16 scales, summed to eight int32 lanes. */
static inline __m256i ft_avx2_scaled_dot_u8(__m256i u, __m256i s, __m256i scale16)
{
    return _mm256_madd_epi16(scale16, _mm256_maddubs_epi16(u, s));
}

float ft_cpu_dot_q4_k_avx2(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row, *x = x_row;
    const uint32_t nb = cols / FT_CPU_QK_K;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256 acc = _mm256_setzero_ps();
    float acc_m = 0.0f;
    for (uint32_t b = 0; b < nb; b++, w += FT_CPU_Q4_K_BYTES, x += FT_CPU_Q8_K_BYTES) {
        uint8_t sm[16];
        ft_cpu_q4_k_scales(w + 4, sm);
        const float xd = ft_cpu_f32(x);
        const uint8_t *q4 = w + 16;
        const uint8_t *q8 = x + 4;
        /* mins . (pairwise sums of bsums): 8 int16 x 8 int16 -> int32 */
        const __m256i bs = _mm256_loadu_si256((const __m256i *)(x + 4 + FT_CPU_QK_K));
        const __m128i bs2 = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
        const __m128i mins = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(sm + 8)));
        __m128i pm = _mm_madd_epi16(mins, bs2);
        pm = _mm_add_epi32(pm, _mm_shuffle_epi32(pm, 0x4e));
        pm = _mm_add_epi32(pm, _mm_shuffle_epi32(pm, 0xb1));
        acc_m += ft_cpu_f16(w + 2) * xd * (float)_mm_cvtsi128_si32(pm);

        __m256i sumi = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++, q4 += 32, q8 += 64) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)q4);
            const __m256i lo = _mm256_and_si256(bits, m4);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
            sumi = _mm256_add_epi32(sumi, ft_avx2_scaled_dot_u8(lo, _mm256_loadu_si256((const __m256i *)q8),
                                                                _mm256_set1_epi16(sm[2 * j])));
            sumi = _mm256_add_epi32(sumi, ft_avx2_scaled_dot_u8(hi, _mm256_loadu_si256((const __m256i *)(q8 + 32)),
                                                                _mm256_set1_epi16(sm[2 * j + 1])));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(ft_cpu_f16(w) * xd), _mm256_cvtepi32_ps(sumi), acc);
    }
    return ft_avx2_hsum(acc) - acc_m;
}

float ft_cpu_dot_q6_k_avx2(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row, *x = x_row;
    const uint32_t nb = cols / FT_CPU_QK_K;
    const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(3);
    const __m256i m32 = _mm256_set1_epi8(32);
    __m256 acc = _mm256_setzero_ps();
    for (uint32_t b = 0; b < nb; b++, w += FT_CPU_Q6_K_BYTES, x += FT_CPU_Q8_K_BYTES) {
        const uint8_t *ql = w, *qh = w + 128, *q8 = x + 4;
        int8_t sc[16];
        memcpy(sc, w + 192, sizeof(sc));
        __m256i sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++, ql += 64, qh += 32, q8 += 128) {
            const __m256i b1 = _mm256_loadu_si256((const __m256i *)ql);
            const __m256i b2 = _mm256_loadu_si256((const __m256i *)(ql + 32));
            const __m256i bh = _mm256_loadu_si256((const __m256i *)qh);
            __m256i q[4]; /* levels 0..63 of elements [32k, 32k + 32) of this half */
            q[0] = _mm256_or_si256(_mm256_and_si256(b1, m4), _mm256_slli_epi16(_mm256_and_si256(bh, m2), 4));
            q[1] = _mm256_or_si256(_mm256_and_si256(b2, m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(bh, 2), m2), 4));
            q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b1, 4), m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(bh, 4), m2), 4));
            q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b2, 4), m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(bh, 6), m2), 4));
            for (int k = 0; k < 4; k++) {
                const __m256i a = _mm256_loadu_si256((const __m256i *)(q8 + 32 * k));
                /* (q - 32) . a = q . a - 32 * sum(a), in int16 pairs: at
                 * most 2 * 63 * 128 in magnitude, no saturation */
                const __m256i p16 = _mm256_sub_epi16(_mm256_maddubs_epi16(q[k], a),
                                                     _mm256_maddubs_epi16(m32, a));
                /* elements 0..15 of the run (low 128 bits) use scale 2k of
                 * this half, elements 16..31 scale 2k + 1 */
                const __m256i scale = _mm256_set_m128i(_mm_set1_epi16(sc[8 * h + 2 * k + 1]),
                                                       _mm_set1_epi16(sc[8 * h + 2 * k]));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(scale, p16));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(ft_cpu_f16(w + 208) * ft_cpu_f32(x)), _mm256_cvtepi32_ps(sumi), acc);
    }
    return ft_avx2_hsum(acc);
}

#else
typedef int ft_cpu_dot_avx2_not_built; /* keeps the translation unit non-empty */
#endif
