/* template: the tiled matrix product shared by the SIMD templates. A tile
 * is nr (<= 4) weight rows x nt (<= 4) tokens: each weight block is loaded
 * once per tile and each activation block once per row, so decode streams
 * four rows at once (more loads in flight) and prefill reuses every weight
 * byte for four tokens from registers. The tile shapes are passed as
 * constants so the compiler keeps the accumulators in registers.
 *
 * Prefill additionally keeps a block of weight rows (FTT_W_BLOCK bytes) in
 * L2 while every token tile passes over it, so each weight byte comes from
 * DRAM once per op. A single token (decode) takes the template's
 * ftt_decode_F instead, which needs no tiles. */
enum { FTT_W_BLOCK = 96 * 1024 };

#define FTT_DEFINE_TILED_MATMUL(F, XRB)                                                         \
    FTT_INLINE void ftt_matmul_##F(uint32_t cols, const void *w, size_t wrb, const void *xp,   \
                                   uint32_t n_tok, uint32_t r0, uint32_t r1, float *y,         \
                                   size_t ldy)                                                 \
    {                                                                                          \
        const uint8_t *wb = w, *xb = xp;                                                       \
        const size_t xrb = (XRB);                                                              \
        if (n_tok == 1) {                                                                      \
            ftt_decode_##F(cols, wb, wrb, r0, r1, xb, y);                                      \
            return;                                                                            \
        }                                                                                      \
        uint32_t rpb = wrb >= FTT_W_BLOCK ? 4 : (uint32_t)(FTT_W_BLOCK / wrb) & ~3u;           \
        if (rpb < 4)                                                                           \
            rpb = 4;                                                                           \
        for (uint32_t rb = r0; rb < r1; rb += rpb) {                                           \
            const uint32_t re = r1 - rb < rpb ? r1 : rb + rpb;                                 \
            uint32_t t = 0;                                                                    \
            for (; t + 4 <= n_tok; t += 4) {                                                   \
                uint32_t r = rb;                                                               \
                for (; r + 4 <= re; r += 4)                                                    \
                    ftt_tile_##F(cols, wb + r * wrb, wrb, 4, xb + t * xrb, xrb, 4,             \
                                 y + t * ldy + r, ldy);                                        \
                for (; r < re; r++)                                                            \
                    ftt_tile_##F(cols, wb + r * wrb, wrb, 1, xb + t * xrb, xrb, 4,             \
                                 y + t * ldy + r, ldy);                                        \
            }                                                                                  \
            for (; t < n_tok; t++) {                                                           \
                uint32_t r = rb;                                                               \
                for (; r + 4 <= re; r += 4)                                                    \
                    ftt_tile_##F(cols, wb + r * wrb, wrb, 4, xb + t * xrb, xrb, 1,             \
                                 y + t * ldy + r, ldy);                                        \
                for (; r < re; r++)                                                            \
                    ftt_tile_##F(cols, wb + r * wrb, wrb, 1, xb + t * xrb, xrb, 1,             \
                                 y + t * ldy + r, ldy);                                        \
            }                                                                                  \
        }                                                                                      \
    }
