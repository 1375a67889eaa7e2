/* AVX2 dot products of the 4- and 8-bit float formats: the same sums as
 * dot_fp.c, in ggml's x86 manner (ggml-cpu/arch/x86/quants.c,
 * ggml_vec_dot_mxfp4_q8_0): the 16 doubled E2M1 levels sit in one register
 * and pshufb turns 32 nibbles into 32 signed levels at once, which then
 * multiply the Q8_0 activations as int8 pairs (|level| <= 12, so the
 * maddubs pairs cannot saturate). Integer sums per block are exact in
 * both tiers; the float32 accumulation order differs (eight lanes here).
 *
 * FP8 decodes eight E4M3 bytes per step with integer shifts (minifloat.h's
 * rule, subnormals and NaN blended in) and accumulates with FMA. */
#include "cpu_dot.h"

#if FT_CPU_HAVE_AVX2

#include "../../format/minifloat.h"
#include "dot_avx2.h"

static inline __m256i ft_avx2_e2m1_levels(void)
{
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)ft_e2m1_x2));
}

float ft_cpu_dot_mxfp4_avx2(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row, *x = x_row;
    const uint32_t nb = cols / FT_CPU_QK8_0;
    const __m256i kv = ft_avx2_e2m1_levels();
    __m256 acc = _mm256_setzero_ps();
    for (uint32_t b = 0; b < nb; b++, w += FT_CPU_MXFP4_BYTES, x += FT_CPU_Q8_0_BYTES) {
        /* low nibbles are elements 0..15, high 16..31: Q8_0's order */
        const __m256i wv = _mm256_shuffle_epi8(kv, ft_avx2_nibbles(w + 1));
        const __m256i p = ft_avx2_dot_i8(wv, _mm256_loadu_si256((const __m256i *)(x + 2)));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(ft_cpu_f16(x) * ft_e8m0_half(w[0])),
                              _mm256_cvtepi32_ps(p), acc);
    }
    return ft_avx2_hsum(acc);
}

float ft_cpu_dot_nvfp4_avx2(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row, *x = x_row;
    const uint32_t nb = cols / FT_CPU_NVFP4_ELEMS;
    const __m256i kv = ft_avx2_e2m1_levels();
    const __m128i m4 = _mm_set1_epi8(0x0f);
    __m256 acc = _mm256_setzero_ps();
    for (uint32_t b = 0; b < nb; b++, w += FT_CPU_NVFP4_BYTES) {
        for (int k = 0; k < 2; k++, x += FT_CPU_Q8_0_BYTES) {
            /* 16 bytes = sub-blocks 2k (bytes 0..7) and 2k + 1 (8..15);
             * each sub-block's low nibbles are its elements 0..7, its
             * high nibbles 8..15. */
            const __m128i q = _mm_loadu_si128((const __m128i *)(w + 4 + 16 * k));
            const __m128i lo = _mm_and_si128(q, m4);
            const __m128i hi = _mm_and_si128(_mm_srli_epi16(q, 4), m4);
            const __m256i nib =
                _mm256_set_m128i(_mm_unpackhi_epi64(lo, hi), _mm_unpacklo_epi64(lo, hi));
            const __m256i p = ft_avx2_dot_i8(_mm256_shuffle_epi8(kv, nib),
                                             _mm256_loadu_si256((const __m256i *)(x + 2)));
            /* int32 lanes 0..3 hold sub-block 2k, lanes 4..7 sub-block 2k + 1 */
            const float dx = ft_cpu_f16(x);
            const __m256 d = _mm256_set_m128(_mm_set1_ps(dx * ft_ue4m3_half(w[2 * k + 1])),
                                             _mm_set1_ps(dx * ft_ue4m3_half(w[2 * k])));
            acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc);
        }
    }
    return ft_avx2_hsum(acc);
}

/* Eight E4M3 bytes -> eight float32, exactly as ft_e4m3_to_f32. */
static inline __m256 ft_avx2_e4m3x8(const uint8_t *p)
{
    const __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
    const __m256i a = _mm256_and_si256(b, _mm256_set1_epi32(0x7f));
    const __m256 normal = _mm256_castsi256_ps(
        _mm256_add_epi32(_mm256_slli_epi32(a, 20), _mm256_set1_epi32(120 << 23)));
    const __m256 sub = _mm256_mul_ps(_mm256_cvtepi32_ps(a), _mm256_set1_ps(0x1.0p-9f));
    __m256 v = _mm256_blendv_ps(normal, sub,
                                _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(8), a)));
    v = _mm256_blendv_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000)),
                         _mm256_castsi256_ps(_mm256_cmpeq_epi32(a, _mm256_set1_epi32(0x7f))));
    const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x80)), 24);
    return _mm256_or_ps(v, _mm256_castsi256_ps(sign));
}

float ft_cpu_dot_fp8_avx2(uint32_t cols, const void *w_row, const void *x_row)
{
    const uint8_t *w = w_row;
    const float *x = x_row;
    const uint32_t nb = cols / FT_CPU_FP8_ELEMS;
    __m256 acc = _mm256_setzero_ps();
    for (uint32_t b = 0; b < nb; b++, w += FT_CPU_FP8_BYTES, x += FT_CPU_FP8_ELEMS) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0;
        for (int j = 0; j < FT_CPU_FP8_ELEMS; j += 16) {
            a0 = _mm256_fmadd_ps(ft_avx2_e4m3x8(w + 4 + j), _mm256_loadu_ps(x + j), a0);
            a1 = _mm256_fmadd_ps(ft_avx2_e4m3x8(w + 12 + j), _mm256_loadu_ps(x + j + 8), a1);
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(ft_cpu_f32(w)), _mm256_add_ps(a0, a1), acc);
    }
    return ft_avx2_hsum(acc);
}

#endif
