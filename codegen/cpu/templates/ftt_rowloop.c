/* template: matrix products of the formats without a SIMD tile: row after
 * row through the portable dot (the compiler vectorizes it for -march).
 * F32 is instantiated by each ISA template (AVX-512 tiles it). */
#define FTT_DEFINE_ROWLOOP_MATMUL(F, XRB)                                                       \
    FTT_INLINE void ftt_matmul_##F(uint32_t cols, const void *w, size_t wrb, const void *xp,   \
                                   uint32_t n_tok, uint32_t r0, uint32_t r1, float *y,         \
                                   size_t ldy)                                                 \
    {                                                                                          \
        const size_t xrb_ = (XRB);                                                             \
        FTT_ROWLOOP(ftt_dot_##F, cols, w, wrb, xp, xrb_, n_tok, r0, r1, y, ldy);               \
    }

FTT_DEFINE_ROWLOOP_MATMUL(f16, (size_t)cols * 4)
FTT_DEFINE_ROWLOOP_MATMUL(bf16, (size_t)cols * 4)
FTT_DEFINE_ROWLOOP_MATMUL(q4_0, (size_t)(cols / FTT_QK8_0) * FTT_Q8_0_BYTES)
FTT_DEFINE_ROWLOOP_MATMUL(q6_k, (size_t)(cols / FTT_QK_K) * FTT_Q8_K_BYTES)
