/* template: multi-head latent attention of kernel ABI 5
 * (runtime/include/ft_kernel_abi.h, ft_kabi_mla_fn), emitted after the
 * DeltaNet template for every ISA. Each wrapper passes the layer's
 * q_nope, RoPE, compressed-KV and value widths as constants, so every
 * loop below has a fixed trip count the compiler unrolls and vectorises.
 *
 * One head over a run of tokens, the runtime's ft_op_mla_absorbed (decode)
 * or ft_op_mla_decompress + ft_op_mla_expanded (prefill) of
 * runtime/exec/op_mla.c. Everything is a dot product or an axpy over
 * contiguous floats: the compressed row (kv_lora_rank wide, 512 for V3),
 * a row of W_kb or W_vb, or a head's q / k / v. The reference sums in
 * double; here the sums run in float over SIMD lanes with fused
 * multiply-adds (4 accumulators against the FMA latency), so the two
 * agree to float rounding, not bit for bit. */

#if defined(__AVX2__) && defined(__FMA__)
FTT_INLINE float ftt_mla_hsum8(__m256 acc)
{
    const __m128 u = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    const __m128 p = _mm_add_ps(u, _mm_shuffle_ps(u, u, 0xB1));
    return _mm_cvtss_f32(_mm_add_ss(p, _mm_movehl_ps(p, p)));
}
#endif

/* a . b over N floats. */
FTT_INLINE float ftt_mla_dot(const uint32_t N, const float *a, const float *b)
{
#if defined(__AVX512F__)
    if (N % 16 == 0) {
        __m512 s[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                       _mm512_setzero_ps()};
        for (uint32_t j = 0, c = 0; j < N; j += 16, c = (c + 1) % 4)
            s[c] = _mm512_fmadd_ps(_mm512_loadu_ps(a + j), _mm512_loadu_ps(b + j), s[c]);
        return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s[0], s[1]), _mm512_add_ps(s[2], s[3])));
    }
#endif
#if defined(__AVX2__) && defined(__FMA__)
    if (N % 8 == 0) {
        __m256 s[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                       _mm256_setzero_ps()};
        for (uint32_t j = 0, c = 0; j < N; j += 8, c = (c + 1) % 4)
            s[c] = _mm256_fmadd_ps(_mm256_loadu_ps(a + j), _mm256_loadu_ps(b + j), s[c]);
        return ftt_mla_hsum8(_mm256_add_ps(_mm256_add_ps(s[0], s[1]), _mm256_add_ps(s[2], s[3])));
    }
#endif
    float s[8] = {0};
    for (uint32_t j = 0; j < N; j++)
        s[j % 8] += a[j] * b[j];
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

/* y += a x over N floats. */
FTT_INLINE void ftt_mla_axpy(const uint32_t N, float *y, float a, const float *x)
{
#if defined(__AVX512F__)
    if (N % 16 == 0) {
        const __m512 av = _mm512_set1_ps(a);
        for (uint32_t j = 0; j < N; j += 16)
            _mm512_storeu_ps(y + j, _mm512_fmadd_ps(av, _mm512_loadu_ps(x + j), _mm512_loadu_ps(y + j)));
        return;
    }
#endif
#if defined(__AVX2__) && defined(__FMA__)
    if (N % 8 == 0) {
        const __m256 av = _mm256_set1_ps(a);
        for (uint32_t j = 0; j < N; j += 8)
            _mm256_storeu_ps(y + j, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + j), _mm256_loadu_ps(y + j)));
        return;
    }
#endif
    for (uint32_t j = 0; j < N; j++)
        y[j] += a * x[j];
}

/* One head over n_tok query rows, as ft_kabi_mla_fn describes. */
FTT_INLINE void ftt_mla(const uint32_t NOPE, const uint32_t ROPE, const uint32_t R, const uint32_t V,
                        const float *wk, const float *wv, const float *q, size_t ldq, const float *g,
                        const uint32_t *n_keys, uint32_t n_tok, int expanded, float scale, float *scratch,
                        float *out, size_t ldo)
{
    const size_t row = (size_t)R + ROPE;
    uint32_t n_max = 0;
    for (uint32_t t = 0; t < n_tok; t++)
        n_max = n_keys[t] > n_max ? n_keys[t] : n_max;
    float *kn = scratch, *vv = kn + (size_t)n_max * NOPE, *s = vv + (size_t)n_max * V, *qc = s + n_max,
          *oc = qc + R;
    if (expanded) /* every key the run reads, decompressed once for all its queries */
        for (uint32_t j = 0; j < n_max; j++) {
            const float *c = g + (size_t)j * row;
            for (uint32_t i = 0; i < NOPE; i++)
                kn[(size_t)j * NOPE + i] = ftt_mla_dot(R, wk + (size_t)i * R, c);
            for (uint32_t i = 0; i < V; i++)
                vv[(size_t)j * V + i] = ftt_mla_dot(R, wv + (size_t)i * R, c);
        }
    for (uint32_t t = 0; t < n_tok; t++) {
        const float *qt = q + (size_t)t * ldq;
        const uint32_t n = n_keys[t];
        float *o = out + (size_t)t * ldo;
        if (!expanded) { /* qc = W_kb^T q_nope: the query in the compressed space */
            for (uint32_t c = 0; c < R; c++)
                qc[c] = 0.0f;
            for (uint32_t i = 0; i < NOPE; i++)
                ftt_mla_axpy(R, qc, qt[i], wk + (size_t)i * R);
        }
        float mx = -INFINITY;
        for (uint32_t j = 0; j < n; j++) {
            const float *gj = g + (size_t)j * row;
            float d = expanded ? ftt_mla_dot(NOPE, qt, kn + (size_t)j * NOPE) : ftt_mla_dot(R, qc, gj);
            d += ftt_mla_dot(ROPE, qt + NOPE, gj + R);
            s[j] = d * scale;
            mx = s[j] > mx ? s[j] : mx;
        }
        float sum = 0.0f;
        for (uint32_t j = 0; j < n; j++) {
            s[j] = expf(s[j] - mx);
            sum += s[j];
        }
        const float inv = 1.0f / sum;
        if (expanded) {
            for (uint32_t i = 0; i < V; i++)
                o[i] = 0.0f;
            for (uint32_t j = 0; j < n; j++)
                ftt_mla_axpy(V, o, s[j] * inv, vv + (size_t)j * V);
        } else { /* the softmax-weighted compressed rows, then W_vb once */
            for (uint32_t c = 0; c < R; c++)
                oc[c] = 0.0f;
            for (uint32_t j = 0; j < n; j++)
                ftt_mla_axpy(R, oc, s[j] * inv, g + (size_t)j * row);
            for (uint32_t i = 0; i < V; i++)
                o[i] = ftt_mla_dot(R, wv + (size_t)i * R, oc);
        }
    }
}
