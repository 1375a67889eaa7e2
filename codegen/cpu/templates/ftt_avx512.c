/* template: AVX-512 (F, BW, VL, VNNI) tiles for Q8_0 and Q4_K.
 *
 * Q8_0 x Q8_0: two 32-element blocks per 512-bit register. dpbusd takes an
 * unsigned and a signed operand, so the weights are biased to w + 128 (an
 * xor with 0x80) and the bias is removed exactly by starting the sum at
 * -128 * sum(x), computed once per activation block and reused by every
 * row: one dpbusd per block pair per (row, token).
 *
 * Q4_K x Q8_K: the low nibbles of 32 bytes dot activations [64j, 64j+32)
 * and the high nibbles [64j+32, 64j+64), so one register of 64 nibbles
 * lines up with 64 contiguous activations; maddubs (u4 x s8 pairs, at most
 * 3840 in magnitude: no saturation) then madd with the 6-bit sub-block
 * scales gives exact int32 sums per super-block, as the reference. */

/* Two fp16 scales (at a and b) -> lanes 0..7 = a, lanes 8..15 = b. */
FTT_INLINE __m512 ftt_scale2(const uint8_t *a, const uint8_t *b)
{
    uint16_t ha, hb;
    memcpy(&ha, a, 2);
    memcpy(&hb, b, 2);
    const __m128 f = _mm_cvtph_ps(_mm_insert_epi16(_mm_cvtsi32_si128(ha), hb, 1));
    const __m512i idx = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi32(1), 1);
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(f));
}

FTT_INLINE __m512i ftt_load2x32(const uint8_t *a, const uint8_t *b)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a)),
                              _mm256_loadu_si256((const __m256i *)b), 1);
}

FTT_INLINE void ftt_tile_q8_0(uint32_t cols, const uint8_t *w, size_t wrb, const int nr,
                              const uint8_t *x, size_t xrb, const int nt, float *y, size_t ldy)
{
    const uint32_t nb = cols / FTT_QK8_0;
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    __m512 acc[4][4];
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nt; t++)
            acc[r][t] = _mm512_setzero_ps();
    for (uint32_t b = 0; b < nb; b += 2) {
        const int two = b + 1 < nb;
        __m512i xq[4], xc[4];
        __m512 xs[4];
        for (int t = 0; t < nt; t++) {
            const uint8_t *xb = x + t * xrb + (size_t)b * FTT_Q8_0_BYTES;
            if (two) {
                xq[t] = ftt_load2x32(xb + 2, xb + 2 + FTT_Q8_0_BYTES);
                xs[t] = ftt_scale2(xb, xb + FTT_Q8_0_BYTES);
            } else {
                xq[t] = _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(xb + 2)));
                xs[t] = _mm512_zextps256_ps512(_mm256_set1_ps(ftt_f16(xb)));
            }
            xc[t] = _mm512_sub_epi32(_mm512_setzero_si512(),
                                     _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, xq[t]));
        }
        for (int r = 0; r < nr; r++) {
            const uint8_t *wb = w + r * wrb + (size_t)b * FTT_Q8_0_BYTES;
            __m512i wq;
            __m512 ws;
            if (two) {
                wq = ftt_load2x32(wb + 2, wb + 2 + FTT_Q8_0_BYTES);
                ws = ftt_scale2(wb, wb + FTT_Q8_0_BYTES);
            } else {
                wq = _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(wb + 2)));
                ws = _mm512_zextps256_ps512(_mm256_set1_ps(ftt_f16(wb)));
            }
            wq = _mm512_xor_si512(wq, bias);
            for (int t = 0; t < nt; t++) {
                const __m512i p = _mm512_dpbusd_epi32(xc[t], wq, xq[t]);
                acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(ws, xs[t]), acc[r][t]);
            }
        }
    }
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nt; t++)
            y[t * ldy + r] = _mm512_reduce_add_ps(acc[r][t]);
}

/* The mins term of one Q4_K super-block as 16 float lanes: lane i holds
 * dmin * mins[i / 2] (weights) and xd * bsums[i] (activations), so one
 * fnmadd per (row, token) removes dmin * xd * sum_j mins[j] * (bsums[2j]
 * + bsums[2j + 1]) from the accumulator. Each lane product is float
 * (rounded once), not the reference's exact integer sum times one scale:
 * the difference is float32 roundoff, within the generated kernels'
 * tolerance, and the same in the tiled and the decode paths. */
FTT_INLINE __m512 ftt_q4_k_wmins(const uint8_t sm[16], float dmin)
{
    const __m128i m8 = _mm_loadl_epi64((const __m128i *)(sm + 8));
    const __m128i m16 = _mm_unpacklo_epi8(m8, m8); /* mins[i / 2], i < 16 */
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(m16)), _mm512_set1_ps(dmin));
}

FTT_INLINE __m512 ftt_q8_k_xbsums(const uint8_t *xb)
{
    const __m256i bs = _mm256_loadu_si256((const __m256i *)(xb + 4 + FTT_QK_K));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(bs)), _mm512_set1_ps(ftt_f32(xb)));
}

FTT_INLINE void ftt_tile_q4_k(uint32_t cols, const uint8_t *w, size_t wrb, const int nr,
                              const uint8_t *x, size_t xrb, const int nt, float *y, size_t ldy)
{
    const uint32_t nb = cols / FTT_QK_K;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m512 acc[4][4];
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nt; t++)
            acc[r][t] = _mm512_setzero_ps();
    for (uint32_t b = 0; b < nb; b++) {
        float xd[4];
        __m512 xbs[4];
        for (int t = 0; t < nt; t++) {
            const uint8_t *xb = x + t * xrb + (size_t)b * FTT_Q8_K_BYTES;
            xd[t] = ftt_f32(xb);
            xbs[t] = ftt_q8_k_xbsums(xb);
        }
        for (int r = 0; r < nr; r++) {
            const uint8_t *wb = w + r * wrb + (size_t)b * FTT_Q4_K_BYTES;
            uint8_t sm[16];
            ftt_q4_k_scales(wb + 4, sm);
            const float d = ftt_f16(wb);
            const __m512 wmins = ftt_q4_k_wmins(sm, ftt_f16(wb + 2));
            __m512i wq[4], sc[4];
            for (int j = 0; j < 4; j++) {
                const __m256i bits = _mm256_loadu_si256((const __m256i *)(wb + 16 + 32 * j));
                wq[j] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(bits, m4)),
                                           _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4), 1);
                sc[j] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16(sm[2 * j])),
                                           _mm256_set1_epi16(sm[2 * j + 1]), 1);
            }
            for (int t = 0; t < nt; t++) {
                const uint8_t *q8 = x + t * xrb + (size_t)b * FTT_Q8_K_BYTES + 4;
                __m512i sumi = _mm512_setzero_si512();
                for (int j = 0; j < 4; j++) {
                    const __m512i a = _mm512_loadu_si512((const void *)(q8 + 64 * j));
                    sumi = _mm512_add_epi32(sumi, _mm512_madd_epi16(sc[j], _mm512_maddubs_epi16(wq[j], a)));
                }
                acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(d * xd[t]), acc[r][t]);
                acc[r][t] = _mm512_fnmadd_ps(wmins, xbs[t], acc[r][t]);
            }
        }
    }
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nt; t++)
            y[t * ldy + r] = _mm512_reduce_add_ps(acc[r][t]);
}

/* Decode (one token): one row at a time, as the reference kernels do
 * (the same arithmetic over two or four interleaved rows streamed weights
 * about 30% slower in codegen_bench on a 2-core Zen 5), no tile
 * bookkeeping, and a software prefetch FTT_PF_BYTES ahead in the row
 * (2 KiB measured best of 0.5-2 KiB in ft bench on the bench fixture).
 * The per-row arithmetic is the tile's, in the same order: the results are
 * bit-identical to the tiled path. */
enum { FTT_PF_BYTES = 2048 };

/* The activation side of one block pair, prepared once per call: the
 * quants, the bias correction and the two scales as the tile forms them. */
typedef struct ftt_xpair {
    __m512i q, c;
    __m512 s;
} ftt_xpair_t;
enum { FTT_DEC_PAIRS = 64 }; /* prepared pairs on the stack: up to 4096 cols, 12 KiB */

FTT_INLINE ftt_xpair_t ftt_q8_0_xpair(const uint8_t *xb)
{
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    ftt_xpair_t p;
    p.q = ftt_load2x32(xb + 2, xb + 2 + FTT_Q8_0_BYTES);
    p.c = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, p.q));
    p.s = ftt_scale2(xb, xb + FTT_Q8_0_BYTES);
    return p;
}

/* acc + one row's block pair at wb against the activation pair xp. */
FTT_INLINE __m512 ftt_q8_0_wpair(const uint8_t *wb, const ftt_xpair_t *xp, __m512 acc)
{
    _mm_prefetch((const char *)(wb + FTT_PF_BYTES), _MM_HINT_T0);
    const __m512i wq = _mm512_xor_si512(ftt_load2x32(wb + 2, wb + 2 + FTT_Q8_0_BYTES),
                                        _mm512_set1_epi8((char)0x80));
    const __m512 s = _mm512_mul_ps(ftt_scale2(wb, wb + FTT_Q8_0_BYTES), xp->s);
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(xp->c, wq, xp->q)), s, acc);
}

FTT_INLINE void ftt_decode_q8_0(uint32_t cols, const uint8_t *w, size_t wrb, uint32_t r0,
                                uint32_t r1, const uint8_t *x, float *y)
{
    const uint32_t nb = cols / FTT_QK8_0, np = nb / 2;
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    ftt_xpair_t xpre[FTT_DEC_PAIRS];
    if (np <= FTT_DEC_PAIRS) /* a constant: cols is the kernel's */
        for (uint32_t i = 0; i < np; i++)
            xpre[i] = ftt_q8_0_xpair(x + (size_t)i * 2 * FTT_Q8_0_BYTES);
    for (uint32_t r = r0; r < r1; r++) {
        const uint8_t *wr = w + (size_t)r * wrb;
        __m512 acc = _mm512_setzero_ps();
        for (uint32_t i = 0; i < np; i++) {
            const size_t o = (size_t)i * 2 * FTT_Q8_0_BYTES;
            if (np <= FTT_DEC_PAIRS) {
                acc = ftt_q8_0_wpair(wr + o, &xpre[i], acc);
            } else {
                const ftt_xpair_t xp = ftt_q8_0_xpair(x + o);
                acc = ftt_q8_0_wpair(wr + o, &xp, acc);
            }
        }
        if (nb & 1) {
            /* odd block count: the last block alone, as the tile does */
            const size_t o = (size_t)(nb - 1) * FTT_Q8_0_BYTES;
            const uint8_t *wb = wr + o, *xb = x + o;
            const __m512i xq = _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(xb + 2)));
            const __m512i xc = _mm512_sub_epi32(_mm512_setzero_si512(),
                                                _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, xq));
            const __m512i wq = _mm512_xor_si512(
                _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(wb + 2))), bias);
            const __m512 s = _mm512_mul_ps(_mm512_zextps256_ps512(_mm256_set1_ps(ftt_f16(wb))),
                                           _mm512_zextps256_ps512(_mm256_set1_ps(ftt_f16(xb))));
            acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(xc, wq, xq)), s, acc);
        }
        y[r] = _mm512_reduce_add_ps(acc);
    }
}

/* Q4_K decode: one row at a time, as Q8_0. The integer sums and the float
 * steps per super-block are the tile's, lane for lane, so the results are
 * bit-identical to the tiled path; what differs is how they are formed
 * (about 35% more super-blocks per second from L2 than the tile's per-row
 * work, in a micro-benchmark on a 2-core Zen 5) and the prefetch:
 *  - the activation side of the mins term (ftt_q8_k_xbsums) is formed
 *    once per call for every super-block, not once per row;
 *  - the sub-block scales and mins are unpacked in a 128-bit register
 *    (ftt_q4_k_scales_v) instead of through memory, which also avoids
 *    the store-to-load stalls of reading 16 bytes written as four words;
 *  - 32 bytes of nibbles are broadcast to both halves of a register by the
 *    load, and one masked shift and one AND leave the low nibbles in the
 *    low half and the high nibbles in the high half (the tile's layout);
 *  - the scales reach their lanes with one in-lane byte shuffle per 64
 *    elements, and vpdpwssd does the tile's madd and add in one step;
 *  - every line of the weights is prefetched FTT_PF_Q4K_BYTES ahead, three
 *    prefetches per 144-byte super-block (two, as before, left one line in
 *    nine to a demand miss, the main stall of this loop), and the first
 *    FTT_PF_Q4K_BYTES of the call's rows up front: an expert's gate is
 *    only 147 KiB per thread. 8 KiB measured best of 4-16 KiB: with it,
 *    Q4_K decode in ft bench on the bench fixture went from ~39 to ~49 GB/s
 *    of weights. */
enum { FTT_DEC_Q4K_BLOCKS = 16 }; /* super-blocks prepared on the stack: 4096 cols, 1 KiB */
enum { FTT_PF_Q4K_BYTES = 8192 }; /* bytes */

/* ftt_q4_k_scales on the 16 bytes of a super-block's header (d, dmin,
 * the 12 packed bytes): bytes 0..7 the scales, 8..15 the mins. */
FTT_INLINE __m128i ftt_q4_k_scales_v(__m128i hdr)
{
    /* 32-bit words u0, u1, u2 of the packed bytes are lanes 1, 2, 3 */
    const __m128i a = _mm_srlv_epi32(_mm_shuffle_epi32(hdr, _MM_SHUFFLE(3, 2, 3, 1)), _mm_set_epi32(4, 0, 0, 0));
    const __m128i b = _mm_srli_epi32(_mm_shuffle_epi32(hdr, _MM_SHUFFLE(2, 2, 1, 1)), 2);
    const __m128i ma = _mm_set_epi32(0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f);
    const __m128i mb = _mm_set_epi32(0x30303030, 0, 0x30303030, 0);
    /* (a & ma) | (b & mb): ((u >> 6) & 3) << 4 is (u >> 2) & 0x30 per byte */
    return _mm_or_si128(_mm_and_si128(a, ma), _mm_and_si128(b, mb));
}

FTT_INLINE void ftt_decode_q4_k(uint32_t cols, const uint8_t *w, size_t wrb, uint32_t r0,
                                uint32_t r1, const uint8_t *x, float *y)
{
    const uint32_t nb = cols / FTT_QK_K;
    __m512 xbs[FTT_DEC_Q4K_BLOCKS];
    if (nb <= FTT_DEC_Q4K_BLOCKS) /* a constant: cols is the kernel's */
        for (uint32_t b = 0; b < nb; b++)
            xbs[b] = ftt_q8_k_xbsums(x + (size_t)b * FTT_Q8_K_BYTES);
    /* the first FTT_PF_Q4K_BYTES of the rows, ahead of the loop's prefetch */
    for (size_t o = 0; o < FTT_PF_Q4K_BYTES && o < (size_t)(r1 - r0) * wrb; o += 64)
        _mm_prefetch((const char *)(w + (size_t)r0 * wrb + o), _MM_HINT_T0);
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    /* byte shuffles spreading scale 2j over lanes 0..15 and 2j + 1 over
     * lanes 16..31 as 16-bit values (odd bytes zeroed: index bit 7 set) */
    __m512i sctl[4];
    for (int j = 0; j < 4; j++)
        sctl[j] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16((short)(0x8000 | (2 * j)))),
                                     _mm256_set1_epi16((short)(0x8000 | (2 * j + 1))), 1);
    for (uint32_t r = r0; r < r1; r++) {
        const uint8_t *wr = w + (size_t)r * wrb;
        __m512 acc = _mm512_setzero_ps();
        for (uint32_t b = 0; b < nb; b++) {
            const uint8_t *wb = wr + (size_t)b * FTT_Q4_K_BYTES, *xb = x + (size_t)b * FTT_Q8_K_BYTES;
            /* the three lines a 144-byte super-block can touch */
            _mm_prefetch((const char *)(wb + FTT_PF_Q4K_BYTES), _MM_HINT_T0);
            _mm_prefetch((const char *)(wb + FTT_PF_Q4K_BYTES + 64), _MM_HINT_T0);
            _mm_prefetch((const char *)(wb + FTT_PF_Q4K_BYTES + 128), _MM_HINT_T0);
            const __m128i hdr = _mm_loadu_si128((const __m128i *)wb);
            const __m128i sm = ftt_q4_k_scales_v(hdr);
            const __m128 dd = _mm_cvtph_ps(hdr); /* d, dmin */
            const __m512i sm4 = _mm512_broadcast_i32x4(sm);
            __m512i sumi = _mm512_setzero_si512();
            for (int j = 0; j < 4; j++) {
                const __m512i bits = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(wb + 16 + 32 * j)));
                const __m512i wq = _mm512_and_si512(_mm512_mask_srli_epi16(bits, 0xFFFF0000u, bits, 4), m4);
                const __m512i a = _mm512_loadu_si512((const void *)(xb + 4 + 64 * j));
                sumi = _mm512_dpwssd_epi32(sumi, _mm512_shuffle_epi8(sm4, sctl[j]), _mm512_maddubs_epi16(wq, a));
            }
            const float d = _mm_cvtss_f32(dd), xd = ftt_f32(xb);
            /* lanes i: mins[i / 2] * dmin, as ftt_q4_k_wmins */
            const __m512 wmins = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpackhi_epi8(sm, sm))),
                                               _mm512_set1_ps(_mm_cvtss_f32(_mm_movehdup_ps(dd))));
            const __m512 xb_s = nb <= FTT_DEC_Q4K_BLOCKS ? xbs[b] : ftt_q8_k_xbsums(xb);
            /* the tile's two steps, in its order */
            acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(d * xd), acc);
            acc = _mm512_fnmadd_ps(wmins, xb_s, acc);
        }
        y[r] = _mm512_reduce_add_ps(acc);
    }
}

/* F32 x F32 tiles: ftt_dot_f32's eight partial sums per (row, token), each
 * a separate multiply and add in the same order, reduced in its pairing,
 * so a tile's results are bit-identical to the row loop's; a tile of four
 * rows and four tokens keeps sixteen independent sums in flight where the
 * row loop waits on one. Rows of a length that is not a multiple of 8 go
 * through the row loop. */
FTT_INLINE float ftt_hsum8_pairs(__m256 v)
{
    const __m256 p = _mm256_add_ps(v, _mm256_permute_ps(v, 0xB1)); /* s0+s1, s2+s3, ... */
    const __m256 q = _mm256_add_ps(p, _mm256_permute_ps(p, 0x4E)); /* (s0+s1)+(s2+s3), ... */
    return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(q), _mm256_extractf128_ps(q, 1)));
}

FTT_INLINE void ftt_tile_f32(uint32_t cols, const uint8_t *w, size_t wrb, const int nr,
                             const uint8_t *x, size_t xrb, const int nt, float *y, size_t ldy)
{
    if (cols % 8) {
        for (int r = 0; r < nr; r++)
            for (int t = 0; t < nt; t++)
                y[t * ldy + r] = ftt_dot_f32(cols, w + r * wrb, x + t * xrb);
        return;
    }
    __m256 acc[4][4];
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nt; t++)
            acc[r][t] = _mm256_setzero_ps();
    for (uint32_t i = 0; i < cols; i += 8) {
        __m256 xv[4];
        for (int t = 0; t < nt; t++)
            xv[t] = _mm256_loadu_ps((const float *)(x + t * xrb) + i);
        for (int r = 0; r < nr; r++) {
            const __m256 wv = _mm256_loadu_ps((const float *)(w + r * wrb) + i);
            for (int t = 0; t < nt; t++)
                acc[r][t] = _mm256_add_ps(acc[r][t], _mm256_mul_ps(wv, xv[t]));
        }
    }
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nt; t++)
            y[t * ldy + r] = ftt_hsum8_pairs(acc[r][t]);
}

FTT_INLINE void ftt_decode_f32(uint32_t cols, const uint8_t *w, size_t wrb, uint32_t r0,
                               uint32_t r1, const uint8_t *x, float *y)
{
    uint32_t r = r0;
    for (; r + 4 <= r1; r += 4)
        ftt_tile_f32(cols, w + (size_t)r * wrb, wrb, 4, x, 0, 1, y + r, 0);
    for (; r < r1; r++)
        ftt_tile_f32(cols, w + (size_t)r * wrb, wrb, 1, x, 0, 1, y + r, 0);
}

#define ftt_matmul_q8_0 ftt_matmul_q8_0_tiles
FTT_DEFINE_TILED_MATMUL(q8_0, (size_t)(cols / FTT_QK8_0) * FTT_Q8_0_BYTES)
#undef ftt_matmul_q8_0

/* Q8_0 prefill with the activation side prepared once per token tile:
 * the tiled loop of ftt_tiled.c, except that the quants, bias corrections
 * and scales of four tokens' block pairs (ftt_q8_0_xpair, 192 bytes per
 * pair) are formed once and then read by every row tile of the weight
 * block instead of being re-formed per row tile. Per (row, token) the
 * arithmetic is ftt_tile_q8_0's, so the results are bit-identical to it
 * and to the decode path. Odd block counts and rows past FTT_DEC_PAIRS
 * pairs take the plain tiles. */
FTT_INLINE void ftt_tile_q8_0_px(uint32_t np, const uint8_t *w, size_t wrb, const int nr,
                                 const ftt_xpair_t *px, const int nt, float *y, size_t ldy)
{
    __m512 acc[4][4];
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nt; t++)
            acc[r][t] = _mm512_setzero_ps();
    for (uint32_t i = 0; i < np; i++) {
        const size_t o = (size_t)i * 2 * FTT_Q8_0_BYTES;
        for (int r = 0; r < nr; r++) {
            const uint8_t *wb = w + r * wrb + o;
            const __m512i wq = _mm512_xor_si512(ftt_load2x32(wb + 2, wb + 2 + FTT_Q8_0_BYTES),
                                                _mm512_set1_epi8((char)0x80));
            const __m512 ws = ftt_scale2(wb, wb + FTT_Q8_0_BYTES);
            for (int t = 0; t < nt; t++) {
                const ftt_xpair_t *xp = &px[(size_t)t * FTT_DEC_PAIRS + i];
                const __m512i p = _mm512_dpbusd_epi32(xp->c, wq, xp->q);
                acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(ws, xp->s), acc[r][t]);
            }
        }
    }
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nt; t++)
            y[t * ldy + r] = _mm512_reduce_add_ps(acc[r][t]);
}

FTT_INLINE void ftt_matmul_q8_0(uint32_t cols, const void *w, size_t wrb, const void *xp, uint32_t n_tok,
                                uint32_t r0, uint32_t r1, float *y, size_t ldy)
{
    const uint8_t *wb = w, *xb = xp;
    const size_t xrb = (size_t)(cols / FTT_QK8_0) * FTT_Q8_0_BYTES;
    const uint32_t nb = cols / FTT_QK8_0, np = nb / 2;
    if (n_tok == 1) {
        ftt_decode_q8_0(cols, wb, wrb, r0, r1, xb, y);
        return;
    }
    if ((nb & 1) || np > FTT_DEC_PAIRS) { /* constants: one branch survives */
        ftt_matmul_q8_0_tiles(cols, w, wrb, xp, n_tok, r0, r1, y, ldy);
        return;
    }
    ftt_xpair_t px[4 * FTT_DEC_PAIRS];
    uint32_t rpb = wrb >= FTT_W_BLOCK ? 4 : (uint32_t)(FTT_W_BLOCK / wrb) & ~3u;
    if (rpb < 4)
        rpb = 4;
    for (uint32_t rb = r0; rb < r1; rb += rpb) {
        const uint32_t re = r1 - rb < rpb ? r1 : rb + rpb;
        for (uint32_t t = 0; t < n_tok; t += 4) {
            const int nt = n_tok - t >= 4 ? 4 : (int)(n_tok - t);
            for (int k = 0; k < nt; k++)
                for (uint32_t i = 0; i < np; i++)
                    px[(size_t)k * FTT_DEC_PAIRS + i] = ftt_q8_0_xpair(xb + (t + k) * xrb + (size_t)i * 2 * FTT_Q8_0_BYTES);
            uint32_t r = rb;
            if (nt == 4) {
                for (; r + 4 <= re; r += 4)
                    ftt_tile_q8_0_px(np, wb + r * wrb, wrb, 4, px, 4, y + t * ldy + r, ldy);
                for (; r < re; r++)
                    ftt_tile_q8_0_px(np, wb + r * wrb, wrb, 1, px, 4, y + t * ldy + r, ldy);
            } else {
                for (int k = 0; k < nt; k++) {
                    for (r = rb; r + 4 <= re; r += 4)
                        ftt_tile_q8_0_px(np, wb + r * wrb, wrb, 4, px + (size_t)k * FTT_DEC_PAIRS, 1,
                                         y + (t + k) * ldy + r, ldy);
                    for (; r < re; r++)
                        ftt_tile_q8_0_px(np, wb + r * wrb, wrb, 1, px + (size_t)k * FTT_DEC_PAIRS, 1,
                                         y + (t + k) * ldy + r, ldy);
                }
            }
        }
    }
}

/* Q4_K prefill with each tile of four weight rows unpacked once: the
 * nibbles, sub-block scales, mins and d of its super-blocks as the tile
 * forms them (640 bytes per super-block, on the stack), then every token
 * tile passes over them; the activations of all tokens (1168 bytes per 256
 * columns and token) stay in L2. Per (row, token) the arithmetic is
 * ftt_tile_q4_k's, so the results are bit-identical to it and to the
 * decode path. Rows longer than FTT_UNP_BLOCKS super-blocks take the
 * plain tiles. */
typedef struct ftt_q4k_unp {
    __m512i wq[4], sc[4];
    __m512 wmins;
    float d;
} ftt_q4k_unp_t;
enum { FTT_UNP_BLOCKS = 16 }; /* super-blocks per row: 4096 columns, 40 KiB for four rows */

FTT_INLINE void ftt_q4_k_unpack(const uint8_t *wb, ftt_q4k_unp_t *u)
{
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    uint8_t sm[16];
    ftt_q4_k_scales(wb + 4, sm);
    u->d = ftt_f16(wb);
    u->wmins = ftt_q4_k_wmins(sm, ftt_f16(wb + 2));
    for (int j = 0; j < 4; j++) {
        const __m256i bits = _mm256_loadu_si256((const __m256i *)(wb + 16 + 32 * j));
        u->wq[j] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(bits, m4)),
                                      _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4), 1);
        u->sc[j] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16(sm[2 * j])),
                                      _mm256_set1_epi16(sm[2 * j + 1]), 1);
    }
}

FTT_INLINE void ftt_tile_q4_k_unp(uint32_t nb, const ftt_q4k_unp_t *wu, const int nr, const uint8_t *x,
                                  size_t xrb, const int nt, float *y, size_t ldy)
{
    __m512 acc[4][4];
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nt; t++)
            acc[r][t] = _mm512_setzero_ps();
    for (uint32_t b = 0; b < nb; b++) {
        float xd[4];
        __m512 xbs[4];
        for (int t = 0; t < nt; t++) {
            const uint8_t *xb = x + t * xrb + (size_t)b * FTT_Q8_K_BYTES;
            xd[t] = ftt_f32(xb);
            xbs[t] = ftt_q8_k_xbsums(xb);
        }
        for (int r = 0; r < nr; r++) {
            const ftt_q4k_unp_t *u = &wu[(size_t)r * nb + b];
            for (int t = 0; t < nt; t++) {
                const uint8_t *q8 = x + t * xrb + (size_t)b * FTT_Q8_K_BYTES + 4;
                __m512i sumi = _mm512_setzero_si512();
                for (int j = 0; j < 4; j++) {
                    const __m512i a = _mm512_loadu_si512((const void *)(q8 + 64 * j));
                    sumi = _mm512_add_epi32(sumi, _mm512_madd_epi16(u->sc[j], _mm512_maddubs_epi16(u->wq[j], a)));
                }
                acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(u->d * xd[t]), acc[r][t]);
                acc[r][t] = _mm512_fnmadd_ps(u->wmins, xbs[t], acc[r][t]);
            }
        }
    }
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nt; t++)
            y[t * ldy + r] = _mm512_reduce_add_ps(acc[r][t]);
}

/* nr (4 or 1) weight rows at w against every token. */
FTT_INLINE void ftt_q4_k_rows(uint32_t nb, const uint8_t *w, size_t wrb, const int nr, const uint8_t *x,
                              size_t xrb, uint32_t n_tok, float *y, size_t ldy, ftt_q4k_unp_t *wu)
{
    for (int k = 0; k < nr; k++)
        for (uint32_t b = 0; b < nb; b++)
            ftt_q4_k_unpack(w + k * wrb + (size_t)b * FTT_Q4_K_BYTES, &wu[(size_t)k * nb + b]);
    uint32_t t = 0;
    for (; t + 4 <= n_tok; t += 4)
        ftt_tile_q4_k_unp(nb, wu, nr, x + t * xrb, xrb, 4, y + t * ldy, ldy);
    for (; t < n_tok; t++)
        ftt_tile_q4_k_unp(nb, wu, nr, x + t * xrb, xrb, 1, y + t * ldy, ldy);
}

#define ftt_matmul_q4_k ftt_matmul_q4_k_tiles
FTT_DEFINE_TILED_MATMUL(q4_k, (size_t)(cols / FTT_QK_K) * FTT_Q8_K_BYTES)
#undef ftt_matmul_q4_k

FTT_INLINE void ftt_matmul_q4_k(uint32_t cols, const void *w, size_t wrb, const void *xp, uint32_t n_tok,
                                uint32_t r0, uint32_t r1, float *y, size_t ldy)
{
    const uint32_t nb = cols / FTT_QK_K;
    const size_t xrb = (size_t)nb * FTT_Q8_K_BYTES;
    if (n_tok == 1 || nb > FTT_UNP_BLOCKS) { /* constants: one branch survives */
        ftt_matmul_q4_k_tiles(cols, w, wrb, xp, n_tok, r0, r1, y, ldy);
        return;
    }
    const uint8_t *wb = w;
    ftt_q4k_unp_t wu[4 * FTT_UNP_BLOCKS];
    uint32_t r = r0;
    for (; r + 4 <= r1; r += 4)
        ftt_q4_k_rows(nb, wb + (size_t)r * wrb, wrb, 4, xp, xrb, n_tok, y + r, ldy, wu);
    for (; r < r1; r++)
        ftt_q4_k_rows(nb, wb + (size_t)r * wrb, wrb, 1, xp, xrb, n_tok, y + r, ldy, wu);
}

FTT_DEFINE_TILED_MATMUL(f32, (size_t)cols * 4)

/* Q8_0 weights in rows interleaved by 16 (FT_KABI_LAYOUT_R16; the byte
 * layout is runtime/format/wlayout.h's FT_WLAYOUT_Q8_0_R16): per block
 * column of a group, the 16 rows' fp16 scales, then 8 chunks of 4 columns
 * x 16 rows, quants stored + 128. One dpbusd of a chunk against 4
 * activation bytes broadcast adds 4 products to each of the 16 rows' lanes,
 * so a block is 8 dpbusd per token into one integer sum per row, started
 * at -128 * sum(x) to remove the +128 (exact), then one fused multiply-add
 * by (row scale * activation scale) per 16 rows; the rows stay in lanes to
 * the end, no horizontal sums. Per (row, token) the operations and their
 * order are the same whatever the tile (exact integer sums, then one fma
 * per block in block order), so a token's results do not depend on the
 * other tokens of the call (batch invariance) and decode equals prefill
 * bit for bit. */
enum { FTT_R16 = 16, FTT_R16_BLOCK = 16 * FTT_Q8_0_BYTES, FTT_R16_XPREP = 8192 };

/* The activation side of tokens [0, nt) x blocks [0, nb): the scale as a
 * float and -128 times the sum of the block's quants. */
FTT_INLINE void ftt_r16_xprep(uint32_t nb, const uint8_t *x, size_t xrb, uint32_t nt, float *xs, int32_t *xc)
{
    for (uint32_t t = 0; t < nt; t++)
        for (uint32_t b = 0; b < nb; b++) {
            const uint8_t *xb = x + t * xrb + (size_t)b * FTT_Q8_0_BYTES;
            const __m256i q = _mm256_loadu_si256((const __m256i *)(xb + 2));
            const __m256i s16 = _mm256_maddubs_epi16(_mm256_set1_epi8(1), q); /* pairs, signed */
            const __m256i s32 = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
            __m128i s = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
            s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
            s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
            xs[t * nb + b] = ftt_f16(xb);
            xc[t * nb + b] = -128 * _mm_cvtsi128_si32(s);
        }
}

FTT_INLINE __m512i ftt_bcast4(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* One group of 16 rows at g against nt (<= 8) tokens; each token's 16
 * sums stored to y[t * ldy + lanes of mask]. */
FTT_INLINE void ftt_r16_tile(uint32_t nb, const uint8_t *g, const uint8_t *x, size_t xrb, const int nt,
                             const float *xs, const int32_t *xc, float *y, size_t ldy, __mmask16 mask)
{
    __m512 acc[8];
    for (int t = 0; t < nt; t++)
        acc[t] = _mm512_setzero_ps();
    for (uint32_t b = 0; b < nb; b++) {
        const uint8_t *gb = g + (size_t)b * FTT_R16_BLOCK;
        const __m512 ws = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)gb));
        __m512i wq[8];
        for (int k = 0; k < 8; k++)
            wq[k] = _mm512_loadu_si512((const void *)(gb + 32 + 64 * k));
        for (int t = 0; t < nt; t++) {
            const uint8_t *xq = x + t * xrb + (size_t)b * FTT_Q8_0_BYTES + 2;
            __m512i s = _mm512_set1_epi32(xc[t * nb + b]);
            if (nt <= 6) { /* two chains: the integer sum is the same, sooner */
                __m512i s1 = _mm512_setzero_si512();
                for (int k = 0; k < 8; k += 2) {
                    s = _mm512_dpbusd_epi32(s, wq[k], ftt_bcast4(xq + 4 * k));
                    s1 = _mm512_dpbusd_epi32(s1, wq[k + 1], ftt_bcast4(xq + 4 * k + 4));
                }
                s = _mm512_add_epi32(s, s1);
            } else {
                for (int k = 0; k < 8; k++)
                    s = _mm512_dpbusd_epi32(s, wq[k], ftt_bcast4(xq + 4 * k));
            }
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(ws, _mm512_set1_ps(xs[t * nb + b])),
                                     acc[t]);
        }
    }
    for (int t = 0; t < nt; t++)
        _mm512_mask_storeu_ps(y + t * ldy, mask, acc[t]);
}

/* Decode: one token, group after group, every line of the weights
 * prefetched FTT_PF_BYTES ahead. */
FTT_INLINE void ftt_r16_decode(uint32_t nb, const uint8_t *g, const uint8_t *x, const float *xs,
                               const int32_t *xc, float *y, __mmask16 mask)
{
    __m512 acc = _mm512_setzero_ps();
    for (uint32_t b = 0; b < nb; b++) {
        const uint8_t *gb = g + (size_t)b * FTT_R16_BLOCK;
        for (int l = 0; l < FTT_R16_BLOCK; l += 64)
            _mm_prefetch((const char *)(gb + FTT_PF_BYTES + l), _MM_HINT_T0);
        const __m512 ws = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)gb));
        const uint8_t *xq = x + (size_t)b * FTT_Q8_0_BYTES + 2;
        __m512i s = _mm512_set1_epi32(xc[b]), s1 = _mm512_setzero_si512();
        for (int k = 0; k < 8; k += 2) {
            s = _mm512_dpbusd_epi32(s, _mm512_loadu_si512((const void *)(gb + 32 + 64 * k)), ftt_bcast4(xq + 4 * k));
            s1 = _mm512_dpbusd_epi32(s1, _mm512_loadu_si512((const void *)(gb + 96 + 64 * k)),
                                     ftt_bcast4(xq + 4 * k + 4));
        }
        s = _mm512_add_epi32(s, s1);
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(ws, _mm512_set1_ps(xs[b])), acc);
    }
    _mm512_mask_storeu_ps(y, mask, acc);
}

/* The rows of [r0, r1) that group g0 (its first row) holds, as lanes. */
FTT_INLINE __mmask16 ftt_r16_mask(uint32_t g0, uint32_t r0, uint32_t r1)
{
    const uint32_t a = r0 > g0 ? r0 - g0 : 0, b = r1 - g0 < FTT_R16 ? r1 - g0 : FTT_R16;
    return (__mmask16)(((1u << b) - 1u) & ~((1u << a) - 1u));
}

FTT_INLINE void ftt_matmul_q8_0_r16(uint32_t cols, const void *w, size_t wrb, const void *xp, uint32_t n_tok,
                                    uint32_t r0, uint32_t r1, float *y, size_t ldy)
{
    const uint32_t nb = cols / FTT_QK8_0;
    const uint8_t *wb = w, *xb = xp;
    const size_t xrb = (size_t)nb * FTT_Q8_0_BYTES, grb = FTT_R16 * wrb;
    /* tokens per pass: their prepared scales and sums fit the stack */
    const uint32_t chunk = FTT_R16_XPREP / nb > 64 ? 64 : FTT_R16_XPREP / nb ? FTT_R16_XPREP / nb : 1;
    float xs[FTT_R16_XPREP];
    int32_t xc[FTT_R16_XPREP];
    if (r0 >= r1)
        return;
    for (uint32_t t0 = 0; t0 < n_tok; t0 += chunk) {
        const uint32_t nt = n_tok - t0 < chunk ? n_tok - t0 : chunk;
        const uint8_t *xt = xb + (size_t)t0 * xrb;
        ftt_r16_xprep(nb, xt, xrb, nt, xs, xc);
        for (uint32_t g0 = r0 - r0 % FTT_R16; g0 < r1; g0 += FTT_R16) {
            const uint8_t *g = wb + (size_t)(g0 / FTT_R16) * grb;
            const __mmask16 mask = ftt_r16_mask(g0, r0, r1);
            float *yg = y + (size_t)t0 * ldy + g0;
            if (nt == 1) {
                ftt_r16_decode(nb, g, xt, xs, xc, yg, mask);
                continue;
            }
            uint32_t t = 0;
            for (; t + 6 <= nt; t += 6)
                ftt_r16_tile(nb, g, xt + t * xrb, xrb, 6, xs + t * nb, xc + t * nb, yg + t * ldy, ldy, mask);
            if (t + 4 <= nt) {
                ftt_r16_tile(nb, g, xt + t * xrb, xrb, 4, xs + t * nb, xc + t * nb, yg + t * ldy, ldy, mask);
                t += 4;
            }
            if (t + 2 <= nt) {
                ftt_r16_tile(nb, g, xt + t * xrb, xrb, 2, xs + t * nb, xc + t * nb, yg + t * ldy, ldy, mask);
                t += 2;
            }
            if (t < nt)
                ftt_r16_tile(nb, g, xt + t * xrb, xrb, 1, xs + t * nb, xc + t * nb, yg + t * ldy, ldy, mask);
        }
    }
}
