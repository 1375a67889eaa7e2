/* Template: iq. Decoders of the IQ grid formats (layouts:
 * runtime/format/quant_iq_grid.c, quant_iq1.c), after their codebooks (the iq_grids
 * template), and of the ternary TQ1_0 and TQ2_0 (runtime/format/
 * quant_tq.c). Chunk c is sub-block c & 7 of super-block c >> 3; every
 * value is d * (ggml's sub-block factor) * grid magnitude * sign (TQ:
 * d * digit), exact in float32. */

/* Element j of an 8-element point: byte j. */
__device__ __forceinline__ float ft_iq_mag(ft_u64 g, int j)
{
    return (float)((g >> (8 * j)) & 0xff);
}

/* v[0..7] = db * point g with sign bit j of s. */
__device__ __forceinline__ void ft_iq_emit8(ft_u64 g, ft_u32 s, float db, float *v)
{
    for (int j = 0; j < 8; j++)
        v[j] = db * ft_iq_mag(g, j) * ((s >> j) & 1 ? -1.0f : 1.0f);
}

/* A u32 read bytewise (blocks are 2-byte aligned). */
__device__ __forceinline__ ft_u32 ft_iq_rd32(const ft_u8 *p)
{
    return (ft_u32)p[0] | ((ft_u32)p[1] << 8) | ((ft_u32)p[2] << 16) | ((ft_u32)p[3] << 24);
}

/* IQ2_XXS (66 B): sub-block j is 8 bytes at 2 + 8j: four grid indices,
 * then a u32 of four 7-bit ksigns indices and ls in bits 28..31;
 * db = d (0.5 + ls) / 4. */
struct ft_fmt_iq2_xxs {
    static constexpr int BLOCK_ELEMS = 256, BLOCK_BYTES = 66;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)(c >> 3) * 66;
        const ft_u8 *s = b + 2 + 8 * (c & 7);
        const ft_u32 aux = ft_iq_rd32(s + 4);
        const float db = ft_f16(b) * (0.5f + (float)(aux >> 28)) * 0.25f;
        for (int l = 0; l < 4; l++)
            ft_iq_emit8(ft_iq2xxs_grid[s[l]], ft_ksigns_iq2xs[(aux >> (7 * l)) & 127], db,
                        v + 8 * l);
    }
};

/* IQ2_XS (74 B): u16 qs[32] (grid index bits 0..8, ksigns index 9..15),
 * scales[8] at 66: group l of sub-block j has ls = nibble l / 2 of
 * scales[j]. */
struct ft_fmt_iq2_xs {
    static constexpr int BLOCK_ELEMS = 256, BLOCK_BYTES = 74;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)(c >> 3) * 74;
        const int j = c & 7;
        const float d = ft_f16(b);
        for (int l = 0; l < 4; l++) {
            const ft_u8 *p = b + 2 + 2 * (4 * j + l);
            const ft_u32 q = (ft_u32)p[0] | ((ft_u32)p[1] << 8);
            const int ls = (b[66 + j] >> (4 * (l >> 1))) & 15;
            ft_iq_emit8(ft_iq2xs_grid[q & 511], ft_ksigns_iq2xs[q >> 9],
                        d * (0.5f + (float)ls) * 0.25f, v + 8 * l);
        }
    }
};

/* IQ2_S (82 B): qs[64] at 2 (index low bits at 4j + l, signs at 32 + 4j +
 * l), qh[8] at 66 (bits 2l, 2l + 1 of qh[j]: index bits 8, 9), scales[8]
 * at 74 as IQ2_XS. */
struct ft_fmt_iq2_s {
    static constexpr int BLOCK_ELEMS = 256, BLOCK_BYTES = 82;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)(c >> 3) * 82;
        const int j = c & 7;
        const float d = ft_f16(b);
        for (int l = 0; l < 4; l++) {
            const ft_u32 idx = b[2 + 4 * j + l] | (((ft_u32)b[66 + j] << (8 - 2 * l)) & 0x300);
            const int ls = (b[74 + j] >> (4 * (l >> 1))) & 15;
            ft_iq_emit8(ft_iq2s_grid[idx], b[34 + 4 * j + l], d * (0.5f + (float)ls) * 0.25f,
                        v + 8 * l);
        }
    }
};

/* IQ3_XXS (98 B): 64 bytes of 4-element grid indices at 2 (two per group:
 * 8j + 2l, 8j + 2l + 1), then per sub-block a u32 at 66 + 4j as
 * IQ2_XXS's; db = d (0.5 + ls) / 2. */
struct ft_fmt_iq3_xxs {
    static constexpr int BLOCK_ELEMS = 256, BLOCK_BYTES = 98;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)(c >> 3) * 98;
        const int j = c & 7;
        const ft_u8 *qs = b + 2 + 8 * j;
        const ft_u32 aux = ft_iq_rd32(b + 66 + 4 * j);
        const float db = ft_f16(b) * (0.5f + (float)(aux >> 28)) * 0.5f;
        for (int l = 0; l < 4; l++) {
            const ft_u64 g =
                (ft_u64)ft_iq3xxs_grid[qs[2 * l]] | ((ft_u64)ft_iq3xxs_grid[qs[2 * l + 1]] << 32);
            ft_iq_emit8(g, ft_ksigns_iq2xs[(aux >> (7 * l)) & 127], db, v + 8 * l);
        }
    }
};

/* IQ3_S (110 B): qs[64] at 2 (as IQ3_XXS's, low 8 bits), qh[8] at 66 (bit
 * 2l of qh[j]: bit 8 of index 2l, bit 2l + 1: of index 2l + 1), signs[32]
 * at 74 (byte 4j + l), scales[4] at 106 (nibble j & 1 of scales[j / 2]);
 * db = d (1 + 2 ls). */
struct ft_fmt_iq3_s {
    static constexpr int BLOCK_ELEMS = 256, BLOCK_BYTES = 110;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)(c >> 3) * 110;
        const int j = c & 7;
        const ft_u8 *qs = b + 2 + 8 * j;
        const ft_u32 qh = b[66 + j];
        const int ls = (b[106 + (j >> 1)] >> (4 * (j & 1))) & 15;
        const float db = ft_f16(b) * (float)(1 + 2 * ls);
        for (int l = 0; l < 4; l++) {
            const ft_u64 g =
                (ft_u64)ft_iq3s_grid[qs[2 * l] | ((qh << (8 - 2 * l)) & 256)] |
                ((ft_u64)ft_iq3s_grid[qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256)] << 32);
            ft_iq_emit8(g, b[74 + 4 * j + l], db, v + 8 * l);
        }
    }
};

/* IQ1_S and IQ1_M: point g of iq1s_kgrid holds element k's value + 1 in
 * bits 2k..2k+1; v[k] = dl (value + delta), as ggml's dequantize_row_iq1_*
 * (each factor and the product exact). */
__device__ __forceinline__ void ft_iq1_emit8(ft_u32 g, float dl, float delta, float *v)
{
    for (int k = 0; k < 8; k++)
        v[k] = dl * ((float)((int)((g >> (2 * k)) & 3) - 1) + delta);
}

/* IQ1_S (50 B): fp16 d, qs[32] at 2, u16 qh[8] at 34; qh[j]: bits 3l..3l+2
 * index bits 8..10 of group l (low bits qs[4j + l]), 12..14 ls, 15 the
 * delta's sign; dl = d (2 ls + 1). */
struct ft_fmt_iq1_s {
    static constexpr int BLOCK_ELEMS = 256, BLOCK_BYTES = 50;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)(c >> 3) * 50;
        const int j = c & 7;
        const ft_u32 qh = (ft_u32)b[34 + 2 * j] | ((ft_u32)b[35 + 2 * j] << 8);
        const float dl = ft_f16(b) * (float)(2 * ((qh >> 12) & 7) + 1);
        const float delta = (qh & 0x8000) ? -0.125f : 0.125f;
        for (int l = 0; l < 4; l++)
            ft_iq1_emit8(ft_iq1s_kgrid[b[2 + 4 * j + l] | (((qh >> (3 * l)) & 7) << 8)], dl, delta,
                         v + 8 * l);
    }
};

/* IQ1_M (56 B): qs[32], qh[16] at 32, u16 scales[4] at 48. Group l of
 * sub-block j: index low bits qs[4j + l], high bits and delta sign (bit 3)
 * the nibble l & 1 of qh[2j + l / 2]; the 3-bit ls of elements 0..15
 * (16..31) bits 6 (j & 1) (+ 3) of scales[j / 2]; fp16 d the top nibbles
 * of scales[0..3]. */
struct ft_fmt_iq1_m {
    static constexpr int BLOCK_ELEMS = 256, BLOCK_BYTES = 56;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)(c >> 3) * 56;
        const int j = c & 7;
        ft_u32 sc[4];
        for (int i = 0; i < 4; i++)
            sc[i] = (ft_u32)b[48 + 2 * i] | ((ft_u32)b[49 + 2 * i] << 8);
        const ft_u32 dh =
            (sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000);
        const ft_u8 dbytes[2] = {(ft_u8)dh, (ft_u8)(dh >> 8)};
        const float d = ft_f16(dbytes);
        const ft_u32 s = sc[j >> 1] >> (6 * (j & 1));
        for (int l = 0; l < 4; l++) {
            const ft_u32 h = b[32 + 2 * j + (l >> 1)] >> (4 * (l & 1));
            const float dl = d * (float)(2 * ((s >> (3 * (l >> 1))) & 7) + 1);
            ft_iq1_emit8(ft_iq1s_kgrid[b[4 * j + l] | ((h & 7) << 8)], dl,
                         (h & 8) ? -0.125f : 0.125f, v + 8 * l);
        }
    }
};

/* TQ1_0 (54 B): qs[48], qh[4], fp16 d at 52; base-3 digits packed as a
 * fraction of 256 (runtime/format/quant_tq.c): digit n of byte b is
 * ((u8)(b 3^n) 3) >> 8, element 32n + m of qs[m] (n < 5), 160 + 16n + m
 * of qs[32 + m], 240 + 4n + j of qh[j]; x = (digit - 1) d. */
__device__ __forceinline__ float ft_tq1_trit(ft_u32 byte, int n)
{
    const ft_u32 p3[5] = {1, 3, 9, 27, 81};
    const ft_u32 q = (byte * p3[n]) & 255;
    return (float)((int)((q * 3) >> 8) - 1);
}

struct ft_fmt_tq1_0 {
    static constexpr int BLOCK_ELEMS = 256, BLOCK_BYTES = 54;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)(c >> 3) * 54;
        const int k = c & 7;
        const float d = ft_f16(b + 52);
        if (k < 5) {
            for (int m = 0; m < 32; m++)
                v[m] = ft_tq1_trit(b[m], k) * d;
        } else if (k < 7) {
            for (int h = 0; h < 2; h++)
                for (int m = 0; m < 16; m++)
                    v[16 * h + m] = ft_tq1_trit(b[32 + m], 2 * (k - 5) + h) * d;
        } else {
            for (int m = 0; m < 16; m++)
                v[m] = ft_tq1_trit(b[32 + m], 4) * d;
            for (int n = 0; n < 4; n++)
                for (int j = 0; j < 4; j++)
                    v[16 + 4 * n + j] = ft_tq1_trit(b[48 + j], n) * d;
        }
    }
};

/* TQ2_0 (66 B): qs[64], fp16 d at 64; chunk k is bits 2 (k & 3) of
 * qs[32 (k >> 2) + m]; x = (bits - 1) d. */
struct ft_fmt_tq2_0 {
    static constexpr int BLOCK_ELEMS = 256, BLOCK_BYTES = 66;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)(c >> 3) * 66;
        const int k = c & 7;
        const float d = ft_f16(b + 64);
        const ft_u8 *q = b + 32 * (k >> 2);
        for (int m = 0; m < 32; m++)
            v[m] = (float)((int)((q[m] >> (2 * (k & 3))) & 3) - 1) * d;
    }
};
