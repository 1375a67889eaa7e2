/* template: the Gated DeltaNet recurrence of kernel ABI 4
 * (runtime/include/ft_kernel_abi.h, ft_kabi_deltanet_fn), emitted after the
 * fused kernels for every ISA. Each wrapper passes the layer's head counts
 * and head_dim as constants, so the loops over a state row have a fixed
 * trip count the compiler unrolls.
 *
 * Per value head and token it is the runtime's ft_op_deltanet_token after
 * the conv and norms (runtime/exec/op_deltanet.c): one pass over each row
 * of S decays it and takes S k, a second adds d k^T and takes S q. The
 * reference sums in double; here the sums run in float over SIMD lanes
 * with fused multiply-adds (4 accumulators against the FMA latency), so
 * the two agree to float rounding, not bit for bit. */

#if defined(__AVX512F__)
FTT_INLINE float ftt_dn_hsum16(__m512 a)
{
    return _mm512_reduce_add_ps(a);
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
FTT_INLINE float ftt_dn_hsum8(__m256 acc)
{
    const __m128 u = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    const __m128 p = _mm_add_ps(u, _mm_shuffle_ps(u, u, 0xB1));
    return _mm_cvtss_f32(_mm_add_ss(p, _mm_movehl_ps(p, p)));
}
#endif

/* row *= decay, returning row . k (the decayed row). */
FTT_INLINE float ftt_dn_decay_dot(const uint32_t HD, float *row, float decay, const float *k)
{
#if defined(__AVX512F__)
    if (HD % 16 == 0) {
        const __m512 dv = _mm512_set1_ps(decay);
        __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                       _mm512_setzero_ps()};
        for (uint32_t j = 0, c = 0; j < HD; j += 16, c = (c + 1) % 4) {
            const __m512 r = _mm512_mul_ps(_mm512_loadu_ps(row + j), dv);
            _mm512_storeu_ps(row + j, r);
            a[c] = _mm512_fmadd_ps(r, _mm512_loadu_ps(k + j), a[c]);
        }
        return ftt_dn_hsum16(_mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3])));
    }
#endif
#if defined(__AVX2__) && defined(__FMA__)
    if (HD % 8 == 0) {
        const __m256 dv = _mm256_set1_ps(decay);
        __m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                       _mm256_setzero_ps()};
        for (uint32_t j = 0, c = 0; j < HD; j += 8, c = (c + 1) % 4) {
            const __m256 r = _mm256_mul_ps(_mm256_loadu_ps(row + j), dv);
            _mm256_storeu_ps(row + j, r);
            a[c] = _mm256_fmadd_ps(r, _mm256_loadu_ps(k + j), a[c]);
        }
        return ftt_dn_hsum8(_mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3])));
    }
#endif
    float a[8] = {0};
    for (uint32_t j = 0; j < HD; j++) {
        row[j] *= decay;
        a[j % 8] += row[j] * k[j];
    }
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

/* row += d k, returning row . q (the updated row). */
FTT_INLINE float ftt_dn_update_dot(const uint32_t HD, float *row, float d, const float *k,
                                   const float *q)
{
#if defined(__AVX512F__)
    if (HD % 16 == 0) {
        const __m512 dv = _mm512_set1_ps(d);
        __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                       _mm512_setzero_ps()};
        for (uint32_t j = 0, c = 0; j < HD; j += 16, c = (c + 1) % 4) {
            const __m512 r = _mm512_fmadd_ps(dv, _mm512_loadu_ps(k + j), _mm512_loadu_ps(row + j));
            _mm512_storeu_ps(row + j, r);
            a[c] = _mm512_fmadd_ps(r, _mm512_loadu_ps(q + j), a[c]);
        }
        return ftt_dn_hsum16(_mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3])));
    }
#endif
#if defined(__AVX2__) && defined(__FMA__)
    if (HD % 8 == 0) {
        const __m256 dv = _mm256_set1_ps(d);
        __m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                       _mm256_setzero_ps()};
        for (uint32_t j = 0, c = 0; j < HD; j += 8, c = (c + 1) % 4) {
            const __m256 r = _mm256_fmadd_ps(dv, _mm256_loadu_ps(k + j), _mm256_loadu_ps(row + j));
            _mm256_storeu_ps(row + j, r);
            a[c] = _mm256_fmadd_ps(r, _mm256_loadu_ps(q + j), a[c]);
        }
        return ftt_dn_hsum8(_mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3])));
    }
#endif
    float a[8] = {0};
    for (uint32_t j = 0; j < HD; j++) {
        row[j] += d * k[j];
        a[j % 8] += row[j] * q[j];
    }
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

/* Value heads [h0, h1) of HV (HK key heads, tiled or grouped, head_dim HD)
 * over n_tok prepared tokens, as ft_kabi_deltanet_fn describes. */
FTT_INLINE void ftt_deltanet(const uint32_t HV, const uint32_t HK, const int TILED,
                             const uint32_t HD, const float *y, size_t ldy, const float *g,
                             const float *beta, uint32_t n_tok, uint32_t h0, uint32_t h1, float *s,
                             float *out, size_t ldo)
{
    const float scale = (float)(1.0 / sqrt((double)HD));
    if (h1 > HV) h1 = HV;
    for (uint32_t h = h0; h < h1; h++) {
        const uint32_t kh = TILED ? h % HK : h / (HV / HK);
        float *S = s + (size_t)h * HD * HD;
        for (uint32_t t = 0; t < n_tok; t++) {
            const float *yt = y + (size_t)t * ldy;
            const float *q = yt + (size_t)kh * HD, *k = yt + ((size_t)HK + kh) * HD;
            const float *v = yt + 2 * (size_t)HK * HD + (size_t)h * HD;
            const float decay = expf(g[(size_t)t * HV + h]), bt = beta[(size_t)t * HV + h];
            float *o = out + (size_t)t * ldo + (size_t)h * HD;
            for (uint32_t i = 0; i < HD; i++) {
                float *row = S + (size_t)i * HD;
                const float sk = ftt_dn_decay_dot(HD, row, decay, k);
                o[i] = ftt_dn_update_dot(HD, row, bt * (v[i] - sk), k, q) * scale;
            }
        }
    }
}
