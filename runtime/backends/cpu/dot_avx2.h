/* Internal to the CPU kernels: the AVX2 building blocks the dot products
 * of dot_avx2.c and dot_fp_avx2.c share. Include only where
 * FT_CPU_HAVE_AVX2 (cpu_dot.h) is 1. */
#ifndef FT_CPU_DOT_AVX2_H
#define FT_CPU_DOT_AVX2_H

#include "cpu_dot.h"

#include <immintrin.h>

static inline float ft_avx2_hsum(__m256 v)
{
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

/* Sum of products of 32 pairs of signed bytes, as eight int32 lanes. */
static inline __m256i ft_avx2_dot_i8(__m256i a, __m256i b)
{
    const __m256i abs_a = _mm256_sign_epi8(a, a);
    const __m256i b_signed = _mm256_sign_epi8(b, a);
#if defined(__AVXVNNI__)
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), abs_a, b_signed);
#elif defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), abs_a, b_signed);
#else
    const __m256i p16 = _mm256_maddubs_epi16(abs_a, b_signed);
    return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
#endif
}

/* 16 bytes of nibble pairs -> 32 bytes: low nibbles (elements 0..15) in
 * the low lane, high nibbles (elements 16..31) in the high lane. */
static inline __m256i ft_avx2_nibbles(const uint8_t *p)
{
    const __m128i t = _mm_loadu_si128((const __m128i *)p);
    const __m256i both =
        _mm256_insertf128_si256(_mm256_castsi128_si256(t), _mm_srli_epi16(t, 4), 1);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

#endif
