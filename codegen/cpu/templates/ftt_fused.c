/* template: the fused kernels of ABI 2 (runtime/include/ft_kernel_abi.h),
 * shared by every ISA and emitted after the ISA's matrix products:
 *
 *  - RMSNorm + activation preparation in one pass over the row;
 *  - router matvec + softmax + top-k + weights per token;
 *  - one token's attention over the KV cache per KV head.
 *
 * Each does the float operations of the runtime's unfused path in the
 * same order (runtime/exec/ops.c, runtime/format/convert.c, quant_k.c,
 * runtime/exec/forward.c), so the results are bit-identical to it for
 * finite inputs: the module is built with -std=c11, which turns off FMA
 * contraction as the runtime's build does, and calls the same libm. */

/* fp32 -> fp16, round to nearest even (the runtime's ft_fp32_to_fp16 for
 * every finite value: F16C's conversion, or the same bit recipe). */
FTT_INLINE uint16_t ftt_to_f16(float f)
{
#if defined(__F16C__)
    return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#else
    uint32_t w, bits;
    memcpy(&w, &f, 4);
    float base = (fabsf(f) * 0x1.0p+112f) * 0x1.0p-110f, bias_f;
    const uint32_t shl1_w = w + w, sign = w & 0x80000000u;
    uint32_t bias = shl1_w & 0xFF000000u;
    if (bias < 0x71000000u)
        bias = 0x71000000u;
    bias = (bias >> 1) + 0x07800000u;
    memcpy(&bias_f, &bias, 4);
    base = bias_f + base;
    memcpy(&bits, &base, 4);
    const uint32_t nonsign = ((bits >> 13) & 0x00007C00u) + (bits & 0x00000FFFu);
    return (uint16_t)((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
#endif
}

/* One Q8_0 block of 32 floats, as ft_quantize_row_q8_0. */
FTT_INLINE void ftt_quant_q8_0_block_c(const float *x, uint8_t *out)
{
    float amax = 0.0f;
    for (int j = 0; j < FTT_QK8_0; j++) {
        const float a = fabsf(x[j]);
        amax = amax > a ? amax : a;
    }
    const float d = amax / 127, id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t dh = ftt_to_f16(d);
    memcpy(out, &dh, 2);
    for (int j = 0; j < FTT_QK8_0; j++) {
        const float r = roundf(x[j] * id);
        const int8_t q = r >= -128.0f && r <= 127.0f ? (int8_t)r : r > 127.0f ? 127 : r < -128.0f ? -128 : 0;
        memcpy(out + 2 + j, &q, 1);
    }
}

/* Q8_0 of n floats (n a multiple of 32), as ft_quantize_row_q8_0. */
FTT_INLINE void ftt_quant_q8_0(const float *x, uint8_t *out, uint32_t n)
{
    for (uint32_t b = 0; b < n / FTT_QK8_0; b++, x += FTT_QK8_0, out += FTT_Q8_0_BYTES) {
#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX512BW__)
        /* amax is a max (order free); round(v) = trunc(v + copysign(0.5 -
         * 2^-25, v)) equals roundf for |v| < 2^23 (the sum reaches the next
         * integer exactly when v's fraction is >= 0.5); the saturating pack
         * is the reference's clamp to [-128, 127]. A block so small that
         * 1 / d overflows takes the scalar path (inf and NaN products). */
        const __m512 sgn = _mm512_set1_ps(-0.0f), half = _mm512_set1_ps(0x1.fffffep-2f);
        const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
        const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sgn, x0),
                                                              _mm512_andnot_ps(sgn, x1)));
        const float d = amax / 127, id = d != 0.0f ? 1.0f / d : 0.0f;
        if (!(id <= 0x1.fffffep+127f) || amax != amax) {
            ftt_quant_q8_0_block_c(x, out);
            continue;
        }
        const uint16_t dh = ftt_to_f16(d);
        memcpy(out, &dh, 2);
        const __m512 vid = _mm512_set1_ps(id);
        for (int h = 0; h < 2; h++) {
            const __m512 v = _mm512_mul_ps(h ? x1 : x0, vid);
            const __m512 r = _mm512_roundscale_ps(_mm512_add_ps(v, _mm512_or_ps(half, _mm512_and_ps(v, sgn))),
                                                  _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
            _mm_storeu_si128((__m128i *)(out + 2 + 16 * h), _mm512_cvtsepi32_epi8(_mm512_cvttps_epi32(r)));
        }
#else
        ftt_quant_q8_0_block_c(x, out);
#endif
    }
}

/* Q8_K of n floats (n a multiple of 256), as ft_quantize_row_q8_k. */
FTT_INLINE void ftt_quant_q8_k(const float *x, uint8_t *out, uint32_t n)
{
    for (uint32_t b = 0; b < n / FTT_QK_K; b++, x += FTT_QK_K, out += FTT_Q8_K_BYTES) {
        /* max: the first element of the largest magnitude, with its sign */
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < FTT_QK_K; j++) {
            const float ax = fabsf(x[j]);
            if (ax > amax) {
                amax = ax;
                max = x[j];
            }
        }
        if (!amax) {
            memset(out, 0, FTT_Q8_K_BYTES);
            continue;
        }
        const float iscale = -127.f / max, d = 1 / iscale;
        memcpy(out, &d, 4);
        for (int g = 0; g < FTT_QK_K / 16; g++) {
            int sum = 0;
            for (int l = 0; l < 16; l++) {
                /* nearest, ties to even: the reference's 1.5 * 2^23 trick */
                const float fv = iscale * x[16 * g + l] + 12582912.f;
                int32_t iv;
                memcpy(&iv, &fv, 4);
                int v = (iv & 0x007fffff) - 0x00400000;
                v = v < 127 ? v : 127;
                const int8_t q = (int8_t)v;
                memcpy(out + 4 + 16 * g + l, &q, 1);
                sum += q;
            }
            const int16_t s16 = (int16_t)sum;
            memcpy(out + 4 + FTT_QK_K + 2 * g, &s16, 2);
        }
    }
}

/* ---- RMSNorm + activation preparation --------------------------------- */

enum { FTT_NP_CHUNK = 256 }; /* floats normalized at a time: stays in L1 */

/* kind: 0 float32 rows, 1 Q8_0, 2 Q8_K; orb: bytes of one prepared row. */
FTT_INLINE void ftt_norm_prepare(const int kind, uint32_t cols, size_t orb, const float *x, size_t ldx,
                                 const float *w, float eps, uint32_t n_rows, void *out)
{
    for (uint32_t t = 0; t < n_rows; t++) {
        const float *xr = x + (size_t)t * ldx;
        uint8_t *o = (uint8_t *)out + (size_t)t * orb;
        double ss = 0.0; /* ft_op_rmsnorm: in double, in index order */
        for (uint32_t i = 0; i < cols; i++)
            ss += (double)xr[i] * xr[i];
        const float scale = (float)(1.0 / sqrt(ss / cols + eps));
        for (uint32_t c0 = 0; c0 < cols; c0 += FTT_NP_CHUNK) {
            const uint32_t n = cols - c0 < FTT_NP_CHUNK ? cols - c0 : FTT_NP_CHUNK;
            float h[FTT_NP_CHUNK];
            float *dst = kind == 0 ? (float *)(o + (size_t)c0 * 4) : h;
            for (uint32_t i = 0; i < n; i++)
                dst[i] = xr[c0 + i] * scale * w[c0 + i];
            if (kind == 1)
                ftt_quant_q8_0(h, o + (size_t)(c0 / FTT_QK8_0) * FTT_Q8_0_BYTES, n);
            else if (kind == 2)
                ftt_quant_q8_k(h, o + (size_t)(c0 / FTT_QK_K) * FTT_Q8_K_BYTES, n);
        }
    }
}

/* ---- router ----------------------------------------------------------- */

/* ft_op_softmax. */
FTT_INLINE void ftt_softmax(float *x, uint32_t n)
{
    if (n == 0)
        return;
    float mx = x[0];
    for (uint32_t i = 1; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    float sum = 0.0f;
    for (uint32_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
    const float inv = 1.0f / sum;
    for (uint32_t i = 0; i < n; i++)
        x[i] *= inv;
}

/* Softmax, top-k (ft_op_topk: insertion into a sorted list) and the
 * chosen weights of n_tok rows of `rows` logits. */
FTT_INLINE void ftt_router_tail(uint32_t rows, float *probs, uint32_t n_tok, uint32_t k, int norm_topk,
                                int32_t *sel, float *sel_w, size_t ld_sel)
{
    for (uint32_t t = 0; t < n_tok; t++) {
        float *p = probs + (size_t)t * rows, *w = sel_w + t * ld_sel;
        int32_t *out_idx = sel + t * ld_sel;
        ftt_softmax(p, rows);
        uint32_t have = 0;
        for (uint32_t i = 0; i < rows; i++) {
            uint32_t pos = have;
            while (pos > 0 && p[out_idx[pos - 1]] < p[i])
                pos--;
            if (pos >= k)
                continue;
            for (uint32_t j = have < k ? have : k - 1; j > pos; j--)
                out_idx[j] = out_idx[j - 1];
            out_idx[pos] = (int32_t)i;
            if (have < k)
                have++;
        }
        float sum = 0.0f;
        for (uint32_t j = 0; j < k; j++)
            sum += (w[j] = p[out_idx[j]]);
        for (uint32_t j = 0; j < k && norm_topk; j++)
            w[j] /= sum;
    }
}

/* ---- attention over the KV cache -------------------------------------- */

#if defined(__AVX2__)
/* ftt_dot8_kv's combination of its eight lanes: ((0+4) + (1+5)) + ((2+6) + (3+7)). */
FTT_INLINE float ftt_dot8_lanes(__m256 acc)
{
    const __m128 u = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    const __m128 p = _mm_add_ps(u, _mm_shuffle_ps(u, u, 0xB1));
    return _mm_cvtss_f32(_mm_add_ss(p, _mm_movehl_ps(p, p)));
}
#endif

/* Element i of a KV row: float, or an IEEE half widened exactly. */
FTT_INLINE float ftt_kv_at(const int KV16, const void *row, uint32_t i)
{
    return KV16 ? ftt_f16((const uint8_t *)row + 2 * (size_t)i) : ((const float *)row)[i];
}

#if defined(__AVX2__)
/* Eight consecutive KV elements from element i as floats (F16C: exact). */
FTT_INLINE __m256 ftt_kv_load8(const int KV16, const void *row, uint32_t i)
{
    return KV16 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)row + i)))
                : _mm256_loadu_ps((const float *)row + i);
}
#endif

/* The runtime's ft_dot8: eight partial sums, combined as it does; the
 * second operand a KV row (float or half). */
FTT_INLINE float ftt_dot8_kv(const int KV16, const float *restrict a, const void *restrict b, uint32_t n)
{
    float acc[8] = {0};
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            acc[j] += a[i + j] * ftt_kv_at(KV16, b, i + j);
    float sum = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (; i < n; i++)
        sum += a[i] * ftt_kv_at(KV16, b, i);
    return sum;
}

/* G query heads of HD floats against one KV head: the runtime's per-item
 * loop with the sizes as constants. KV16 (a constant): the cache holds
 * IEEE halves, each widened to float as it is read (exact), so the float
 * operations are those over an f32 cache of the same values. kv_stride
 * counts elements. With AVX2 and HD a multiple of 8 the same operations
 * are arranged for the vector units: a dot is ftt_dot8_kv's eight lanes
 * (separate multiply and add) combined in its order, the G dots of a key
 * run side by side, and the value pass keeps G x 32 output floats in
 * registers across all keys, each still summed over the keys in order
 * from zero. Otherwise the output rows stay in a local array. */
enum { FTT_ATTN_MAX = 8192 }; /* floats: 32 KiB of stack; the emitter checks */

#if defined(__AVX2__)
/* The G query heads' scores against one key row kp (ftt_dot8_kv's eight
 * lanes, a separate multiply and add, combined in its order), times
 * scale, into scores[g * ld]. */
FTT_INLINE void ftt_attn_key_scores(const uint32_t G, const uint32_t HD, const int KV16, const float *q,
                                    const void *kp, float scale, float *scores, size_t ld)
{
    for (uint32_t g = 0; g < G; g++) {
        __m256 acc = _mm256_setzero_ps();
        for (uint32_t i = 0; i < HD; i += 8)
            acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(q + (size_t)g * HD + i), ftt_kv_load8(KV16, kp, i)));
        scores[(size_t)g * ld] = ftt_dot8_lanes(acc) * scale;
    }
}
#endif

#if defined(__AVX512F__) && defined(__AVX512DQ__)
/* Eight elements i.. of KV rows a (lanes 0..7) and b (lanes 8..15). */
FTT_INLINE __m512 ftt_kv_load8x2(const int KV16, const void *a, const void *b, uint32_t i)
{
    if (KV16)
        return _mm512_cvtph_ps(_mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)((const uint16_t *)a + i))),
            _mm_loadu_si128((const __m128i *)((const uint16_t *)b + i)), 1));
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps((const float *)a + i)),
                              _mm256_loadu_ps((const float *)b + i), 1);
}

/* ftt_dot8_lanes of both 8-lane halves: ((a0 + a4) + (a1 + a5)) + ((a2 +
 * a6) + (a3 + a7)) per half (float addition is commutative, so each
 * lane's pairs give the same sums), the halves' results in lanes 0 and 8. */
FTT_INLINE void ftt_dot8_lanes_x2(__m512 acc, float *a, float *b)
{
    const __m512 u = _mm512_add_ps(acc, _mm512_shuffle_f32x4(acc, acc, _MM_SHUFFLE(2, 3, 0, 1)));
    const __m512 p = _mm512_add_ps(u, _mm512_permute_ps(u, 0xB1));
    const __m512 s = _mm512_add_ps(p, _mm512_permute_ps(p, 0x4E));
    *a = _mm512_cvtss_f32(s);
    *b = _mm512_cvtss_f32(_mm512_shuffle_f32x4(s, s, _MM_SHUFFLE(3, 2, 3, 2)));
}

/* ftt_attn's AVX2 arrangement on 512-bit registers, the same float
 * operations lane for lane: two keys per register for the dots (lanes
 * 0..7 key p, 8..15 key p + 1, each the eight partial sums of ftt_dot8_kv
 * in its order), and sixteen output columns per register for the value
 * pass (each column summed over the keys in order from zero, a separate
 * multiply and add per key). Bit-identical to the AVX2 arrangement. */
FTT_INLINE void ftt_attn_avx512(const uint32_t G, const uint32_t HD, const int KV16, const float *q,
                                const uint8_t *kb, const uint8_t *vb, size_t kv_stride, uint32_t n_keys,
                                float scale, float *scores, size_t ld, float *out)
{
    const size_t eb = KV16 ? 2 : 4, rs = kv_stride * eb;
    uint32_t p = 0;
    for (; p + 2 <= n_keys; p += 2) {
        const void *k0 = kb + (size_t)p * rs, *k1 = kb + (size_t)(p + 1) * rs;
        __m512 kk[HD / 8];
        for (uint32_t i = 0; i < HD; i += 8)
            kk[i / 8] = ftt_kv_load8x2(KV16, k0, k1, i);
        for (uint32_t g = 0; g < G; g++) {
            __m512 acc = _mm512_setzero_ps();
            for (uint32_t i = 0; i < HD; i += 8) {
                const __m512 qq = _mm512_broadcast_f32x8(_mm256_loadu_ps(q + (size_t)g * HD + i));
                acc = _mm512_add_ps(acc, _mm512_mul_ps(qq, kk[i / 8]));
            }
            float a, b;
            ftt_dot8_lanes_x2(acc, &a, &b);
            scores[(size_t)g * ld + p] = a * scale;
            scores[(size_t)g * ld + p + 1] = b * scale;
        }
    }
    for (; p < n_keys; p++)
        ftt_attn_key_scores(G, HD, KV16, q, kb + (size_t)p * rs, scale, scores + p, ld);
    for (uint32_t g = 0; g < G; g++)
        ftt_softmax(scores + (size_t)g * ld, n_keys);
    enum { C = 4 }; /* 16-float columns per pass */
    const uint32_t cw = G <= 4 ? C : G <= 8 ? 2 : 1;
    for (uint32_t i0 = 0; i0 < HD; i0 += 16 * cw) {
        const uint32_t nc = (HD - i0) / 16 < cw ? (HD - i0) / 16 : cw;
        __m512 o[16][C];
        for (uint32_t g = 0; g < G; g++)
            for (uint32_t c = 0; c < nc; c++)
                o[g][c] = _mm512_setzero_ps();
        for (uint32_t pp = 0; pp < n_keys; pp++) {
            const uint8_t *vp = vb + (size_t)pp * rs;
            __m512 vv[C];
            for (uint32_t c = 0; c < nc; c++)
                vv[c] = KV16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)vp + i0 + 16 * c)))
                             : _mm512_loadu_ps((const float *)vp + i0 + 16 * c);
            for (uint32_t g = 0; g < G; g++) {
                const __m512 wg = _mm512_set1_ps(scores[(size_t)g * ld + pp]);
                for (uint32_t c = 0; c < nc; c++)
                    o[g][c] = _mm512_add_ps(o[g][c], _mm512_mul_ps(wg, vv[c]));
            }
        }
        for (uint32_t g = 0; g < G; g++)
            for (uint32_t c = 0; c < nc; c++)
                _mm512_storeu_ps(out + (size_t)g * HD + i0 + 16 * c, o[g][c]);
    }
}
#endif

FTT_INLINE void ftt_attn(const uint32_t G, const uint32_t HD, const int KV16, const float *q, const void *k,
                         const void *v, size_t kv_stride, uint32_t n_keys, float scale, float *scores,
                         size_t ld, float *out)
{
    const size_t eb = KV16 ? 2 : 4; /* bytes of a KV element */
    const uint8_t *kb = (const uint8_t *)k, *vb = (const uint8_t *)v;
#if defined(__AVX512F__) && defined(__AVX512DQ__)
    if (HD % 16 == 0 && HD <= 256 && G <= 16) {
        ftt_attn_avx512(G, HD, KV16, q, kb, vb, kv_stride, n_keys, scale, scores, ld, out);
        return;
    }
#endif
#if defined(__AVX2__)
    if (HD % 8 == 0 && G <= 16) {
        for (uint32_t p = 0; p < n_keys; p++)
            ftt_attn_key_scores(G, HD, KV16, q, kb + (size_t)p * kv_stride * eb, scale, scores + p, ld);
        for (uint32_t g = 0; g < G; g++)
            ftt_softmax(scores + (size_t)g * ld, n_keys);
        enum { C = 4 }; /* 8-float columns per pass */
        const uint32_t cw = G <= 4 ? C : G <= 8 ? 2 : 1;
        for (uint32_t i0 = 0; i0 < HD; i0 += 8 * cw) {
            const uint32_t nc = (HD - i0) / 8 < cw ? (HD - i0) / 8 : cw;
            __m256 o[16][C];
            for (uint32_t g = 0; g < G; g++)
                for (uint32_t c = 0; c < nc; c++)
                    o[g][c] = _mm256_setzero_ps();
            for (uint32_t p = 0; p < n_keys; p++) {
                const void *vp = vb + (size_t)p * kv_stride * eb;
                __m256 vv[C];
                for (uint32_t c = 0; c < nc; c++)
                    vv[c] = ftt_kv_load8(KV16, vp, i0 + 8 * c);
                for (uint32_t g = 0; g < G; g++) {
                    const __m256 wg = _mm256_broadcast_ss(scores + (size_t)g * ld + p);
                    for (uint32_t c = 0; c < nc; c++)
                        o[g][c] = _mm256_add_ps(o[g][c], _mm256_mul_ps(wg, vv[c]));
                }
            }
            for (uint32_t g = 0; g < G; g++)
                for (uint32_t c = 0; c < nc; c++)
                    _mm256_storeu_ps(out + (size_t)g * HD + i0 + 8 * c, o[g][c]);
        }
        return;
    }
#endif
    for (uint32_t p = 0; p < n_keys; p++) {
        const void *kp = kb + (size_t)p * kv_stride * eb;
        for (uint32_t g = 0; g < G; g++)
            scores[(size_t)g * ld + p] = ftt_dot8_kv(KV16, q + (size_t)g * HD, kp, HD) * scale;
    }
    for (uint32_t g = 0; g < G; g++)
        ftt_softmax(scores + (size_t)g * ld, n_keys);
    float o[FTT_ATTN_MAX];
    memset(o, 0, (size_t)G * HD * sizeof(float));
    for (uint32_t p = 0; p < n_keys; p++) {
        const void *vp = vb + (size_t)p * kv_stride * eb;
        for (uint32_t g = 0; g < G; g++) {
            const float wgt = scores[(size_t)g * ld + p];
            for (uint32_t i = 0; i < HD; i++)
                o[g * HD + i] += wgt * ftt_kv_at(KV16, vp, i);
        }
    }
    memcpy(out, o, (size_t)G * HD * sizeof(float));
}
