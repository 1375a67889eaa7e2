/* template: AVX2 (+FMA, F16C) tiles for Q8_0 and Q4_K. Without VNNI the
 * signed x signed Q8_0 product moves the weight's sign onto the activation
 * (maddubs needs one unsigned operand), as ggml does; Q4_K is as in the
 * AVX-512 template at half width. Integer sums per block are exact. */

FTT_INLINE float ftt_hsum8(__m256 v)
{
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

FTT_INLINE void ftt_tile_q8_0(uint32_t cols, const uint8_t *w, size_t wrb, const int nr,
                              const uint8_t *x, size_t xrb, const int nt, float *y, size_t ldy)
{
    const uint32_t nb = cols / FTT_QK8_0;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[4][4];
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nt; t++)
            acc[r][t] = _mm256_setzero_ps();
    for (uint32_t b = 0; b < nb; b++) {
        __m256i xq[4];
        float xs[4];
        for (int t = 0; t < nt; t++) {
            const uint8_t *xb = x + t * xrb + (size_t)b * FTT_Q8_0_BYTES;
            xq[t] = _mm256_loadu_si256((const __m256i *)(xb + 2));
            xs[t] = ftt_f16(xb);
        }
        for (int r = 0; r < nr; r++) {
            const uint8_t *wb = w + r * wrb + (size_t)b * FTT_Q8_0_BYTES;
            const __m256i wq = _mm256_loadu_si256((const __m256i *)(wb + 2));
            const __m256i aw = _mm256_sign_epi8(wq, wq);
            const float ws = ftt_f16(wb);
            for (int t = 0; t < nt; t++) {
                const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(xq[t], wq)), ones);
                acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(ws * xs[t]), acc[r][t]);
            }
        }
    }
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nt; t++)
            y[t * ldy + r] = ftt_hsum8(acc[r][t]);
}

FTT_INLINE void ftt_tile_q4_k(uint32_t cols, const uint8_t *w, size_t wrb, const int nr,
                              const uint8_t *x, size_t xrb, const int nt, float *y, size_t ldy)
{
    const uint32_t nb = cols / FTT_QK_K;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256 acc[4][4];
    float accm[4][4];
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nt; t++) {
            acc[r][t] = _mm256_setzero_ps();
            accm[r][t] = 0.0f;
        }
    for (uint32_t b = 0; b < nb; b++) {
        for (int r = 0; r < nr; r++) {
            const uint8_t *wb = w + r * wrb + (size_t)b * FTT_Q4_K_BYTES;
            uint8_t sm[16];
            ftt_q4_k_scales(wb + 4, sm);
            const float d = ftt_f16(wb), dmin = ftt_f16(wb + 2);
            const __m128i mins = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(sm + 8)));
            for (int t = 0; t < nt; t++) {
                const uint8_t *xb = x + t * xrb + (size_t)b * FTT_Q8_K_BYTES;
                const uint8_t *q8 = xb + 4;
                __m256i sumi = _mm256_setzero_si256();
                for (int j = 0; j < 4; j++) {
                    const __m256i bits = _mm256_loadu_si256((const __m256i *)(wb + 16 + 32 * j));
                    const __m256i lo = _mm256_and_si256(bits, m4);
                    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
                    sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(_mm256_set1_epi16(sm[2 * j]),
                        _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)(q8 + 64 * j)))));
                    sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(_mm256_set1_epi16(sm[2 * j + 1]),
                        _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(q8 + 64 * j + 32)))));
                }
                const float xd = ftt_f32(xb);
                acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_set1_ps(d * xd), acc[r][t]);
                const __m256i bs = _mm256_loadu_si256((const __m256i *)(xb + 4 + FTT_QK_K));
                __m128i pm = _mm_madd_epi16(mins, _mm_hadd_epi16(_mm256_castsi256_si128(bs),
                                                                 _mm256_extracti128_si256(bs, 1)));
                pm = _mm_add_epi32(pm, _mm_shuffle_epi32(pm, 0x4e));
                pm = _mm_add_epi32(pm, _mm_shuffle_epi32(pm, 0xb1));
                accm[r][t] += dmin * xd * (float)_mm_cvtsi128_si32(pm);
            }
        }
    }
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nt; t++)
            y[t * ldy + r] = ftt_hsum8(acc[r][t]) - accm[r][t];
}

/* Decode (one token) takes the tiles of four rows, as prefill does. */
FTT_INLINE void ftt_decode_q8_0(uint32_t cols, const uint8_t *w, size_t wrb, uint32_t r0,
                                uint32_t r1, const uint8_t *x, float *y)
{
    uint32_t r = r0;
    for (; r + 4 <= r1; r += 4)
        ftt_tile_q8_0(cols, w + (size_t)r * wrb, wrb, 4, x, 0, 1, y + r, 0);
    for (; r < r1; r++)
        ftt_tile_q8_0(cols, w + (size_t)r * wrb, wrb, 1, x, 0, 1, y + r, 0);
}

FTT_INLINE void ftt_decode_q4_k(uint32_t cols, const uint8_t *w, size_t wrb, uint32_t r0,
                                uint32_t r1, const uint8_t *x, float *y)
{
    uint32_t r = r0;
    for (; r + 4 <= r1; r += 4)
        ftt_tile_q4_k(cols, w + (size_t)r * wrb, wrb, 4, x, 0, 1, y + r, 0);
    for (; r < r1; r++)
        ftt_tile_q4_k(cols, w + (size_t)r * wrb, wrb, 1, x, 0, 1, y + r, 0);
}

FTT_DEFINE_TILED_MATMUL(q8_0, (size_t)(cols / FTT_QK8_0) * FTT_Q8_0_BYTES)
FTT_DEFINE_TILED_MATMUL(q4_k, (size_t)(cols / FTT_QK_K) * FTT_Q8_K_BYTES)
FTT_DEFINE_ROWLOOP_MATMUL(f32, (size_t)cols * 4)
