/* Template: common. Integer types, fp16/bf16 loads and, per weight format,
 * a function that dequantizes chunk c (elements [32c, 32c + 32)) of one
 * weight row into float32. Block layouts are ggml's (runtime/format/dtype.h):
 * every format's block holds a multiple of 32 elements, so a 32-element
 * chunk is the unit every kernel below iterates over. NVRTC compiles this
 * without any CUDA header: fp16 goes through the PTX cvt instruction. */
typedef unsigned char ft_u8;
typedef signed char ft_i8;
typedef unsigned short ft_u16;
typedef unsigned int ft_u32;
typedef unsigned long long ft_u64;

__device__ __forceinline__ float ft_f16(const ft_u8 *p)
{
    const unsigned short h = (unsigned short)(p[0] | (p[1] << 8));
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ float ft_warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float ft_warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

struct ft_fmt_f32 {
    static constexpr int BLOCK_ELEMS = 1, BLOCK_BYTES = 4;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const float4 *p = (const float4 *)(row + (size_t)c * 128);
        for (int i = 0; i < 8; i++) {
            const float4 t = p[i];
            v[4 * i] = t.x, v[4 * i + 1] = t.y, v[4 * i + 2] = t.z, v[4 * i + 3] = t.w;
        }
    }
};

struct ft_fmt_f16 {
    static constexpr int BLOCK_ELEMS = 1, BLOCK_BYTES = 2;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *p = row + (size_t)c * 64;
        for (int i = 0; i < 32; i++)
            v[i] = ft_f16(p + 2 * i);
    }
};

struct ft_fmt_bf16 {
    static constexpr int BLOCK_ELEMS = 1, BLOCK_BYTES = 2;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        /* 64 bytes as four 16-byte loads (rows start 16-byte aligned). */
        const uint4 *p = (const uint4 *)(row + (size_t)c * 64);
        for (int i = 0; i < 4; i++) {
            const uint4 t = p[i];
            const ft_u32 w[4] = {t.x, t.y, t.z, t.w};
            for (int j = 0; j < 4; j++) {
                v[8 * i + 2 * j] = __uint_as_float(w[j] << 16);
                v[8 * i + 2 * j + 1] = __uint_as_float(w[j] & 0xffff0000u);
            }
        }
    }
};

/* Q8_0: fp16 d, int8 qs[32]; x = d * q. */
struct ft_fmt_q8_0 {
    static constexpr int BLOCK_ELEMS = 32, BLOCK_BYTES = 34;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)c * 34;
        const float d = ft_f16(b);
        const ft_i8 *q = (const ft_i8 *)(b + 2);
        for (int i = 0; i < 32; i++)
            v[i] = d * (float)q[i];
    }
};

/* Q4_0: fp16 d, qs[16]; x[l] = d * (lo nibble - 8), x[l + 16] = d * (hi - 8). */
struct ft_fmt_q4_0 {
    static constexpr int BLOCK_ELEMS = 32, BLOCK_BYTES = 18;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)c * 18;
        const float d = ft_f16(b);
        for (int l = 0; l < 16; l++) {
            v[l] = d * (float)((b[2 + l] & 15) - 8);
            v[l + 16] = d * (float)((b[2 + l] >> 4) - 8);
        }
    }
};

/* Q4_1: fp16 d, fp16 m, qs[16]; x[l] = lo nibble * d + m, x[l + 16] = hi
 * nibble * d + m. */
struct ft_fmt_q4_1 {
    static constexpr int BLOCK_ELEMS = 32, BLOCK_BYTES = 20;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)c * 20;
        const float d = ft_f16(b), m = ft_f16(b + 2);
        for (int l = 0; l < 16; l++) {
            v[l] = (float)(b[4 + l] & 15) * d + m;
            v[l + 16] = (float)(b[4 + l] >> 4) * d + m;
        }
    }
};

/* The u32 of fifth bits of Q5_0/Q5_1 (bit j: element j), read bytewise:
 * blocks are 2-byte aligned at most. */
__device__ __forceinline__ ft_u32 ft_qh32(const ft_u8 *p)
{
    return (ft_u32)p[0] | ((ft_u32)p[1] << 8) | ((ft_u32)p[2] << 16) | ((ft_u32)p[3] << 24);
}

/* Q5_0: fp16 d, u32 qh, qs[16]; x = ((nibble | fifth bit << 4) - 16) * d. */
struct ft_fmt_q5_0 {
    static constexpr int BLOCK_ELEMS = 32, BLOCK_BYTES = 22;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)c * 22;
        const float d = ft_f16(b);
        const ft_u32 qh = ft_qh32(b + 2);
        for (int l = 0; l < 16; l++) {
            /* qh is unsigned: the level goes through int before - 16. */
            const int q0 = (int)((b[6 + l] & 15) | ((qh >> l) & 1) << 4);
            const int q1 = (int)((b[6 + l] >> 4) | ((qh >> (l + 16)) & 1) << 4);
            v[l] = (float)(q0 - 16) * d;
            v[l + 16] = (float)(q1 - 16) * d;
        }
    }
};

/* Q5_1: fp16 d, fp16 m, u32 qh, qs[16]; x = (nibble | fifth bit << 4) * d
 * + m. */
struct ft_fmt_q5_1 {
    static constexpr int BLOCK_ELEMS = 32, BLOCK_BYTES = 24;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)c * 24;
        const float d = ft_f16(b), m = ft_f16(b + 2);
        const ft_u32 qh = ft_qh32(b + 4);
        for (int l = 0; l < 16; l++) {
            v[l] = (float)((b[8 + l] & 15) | ((qh >> l) & 1) << 4) * d + m;
            v[l + 16] = (float)((b[8 + l] >> 4) | ((qh >> (l + 16)) & 1) << 4) * d + m;
        }
    }
};

/* Scale and min j (0..7) of Q4_K's and Q5_K's 12 packed bytes s (ggml's
 * get_scale_min_k4): 6 bits each. */
__device__ __forceinline__ void ft_scale_min_k4(const ft_u8 *s, int j, int *sc, int *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* Q4_K: 256 elements in 144 bytes: fp16 d, fp16 dmin, 12 bytes of packed
 * 6-bit scales and mins (ggml get_scale_min_k4), qs[128]. Sub-block j
 * (32 elements) uses nibble j & 1 of qs[32 * (j / 2) ...]:
 * x = d * sc[j] * q - dmin * m[j]. */
struct ft_fmt_q4_k {
    static constexpr int BLOCK_ELEMS = 256, BLOCK_BYTES = 144;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)(c >> 3) * 144;
        const int j = c & 7;
        int sc, m;
        ft_scale_min_k4(b + 4, j, &sc, &m);
        const float d = ft_f16(b) * (float)sc, dm = ft_f16(b + 2) * (float)m;
        const ft_u8 *q = b + 16 + 32 * (j >> 1);
        const int shift = (j & 1) * 4;
        for (int l = 0; l < 32; l++)
            v[l] = d * (float)((q[l] >> shift) & 15) - dm;
    }
};

/* Q6_K: 256 elements in 210 bytes: ql[128], qh[64], int8 scales[16],
 * fp16 d. Half h (128 elements) uses ql + 64h, qh + 32h, scales + 8h; its
 * run k of 32 elements takes nibble k >> 1 of ql[l + 32 (k & 1)] and bits
 * 2k of qh[l]: x = d * sc[l / 16 + 2k] * (q - 32). */
struct ft_fmt_q6_k {
    static constexpr int BLOCK_ELEMS = 256, BLOCK_BYTES = 210;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)(c >> 3) * 210;
        const int h = (c & 7) >> 2, k = c & 3;
        const ft_u8 *ql = b + 64 * h + 32 * (k & 1);
        const ft_u8 *qh = b + 128 + 32 * h;
        const ft_i8 *sc = (const ft_i8 *)(b + 192) + 8 * h + 2 * k;
        const float d = ft_f16(b + 208);
        const int sl = (k >> 1) * 4, sh = 2 * k;
        for (int l = 0; l < 32; l++) {
            const int q = ((ql[l] >> sl) & 15) | (((qh[l] >> sh) & 3) << 4);
            v[l] = d * (float)sc[l >> 4] * (float)(q - 32);
        }
    }
};

/* Q5_K: 256 elements in 176 bytes: fp16 d, fp16 dmin, 12 scale bytes as
 * Q4_K, qh[32], qs[128]. Sub-block j: nibble j & 1 of qs[32 (j / 2) + l]
 * plus 16 when bit j of qh[l] is set; x = d * sc[j] * q - dmin * m[j]. */
struct ft_fmt_q5_k {
    static constexpr int BLOCK_ELEMS = 256, BLOCK_BYTES = 176;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)(c >> 3) * 176;
        const int j = c & 7;
        int sc, m;
        ft_scale_min_k4(b + 4, j, &sc, &m);
        const float d = ft_f16(b) * (float)sc, dm = ft_f16(b + 2) * (float)m;
        const ft_u8 *qh = b + 16, *q = b + 48 + 32 * (j >> 1);
        const int shift = (j & 1) * 4;
        for (int l = 0; l < 32; l++)
            v[l] = d * (float)(((q[l] >> shift) & 15) | (((qh[l] >> j) & 1) << 4)) - dm;
    }
};

/* Q3_K: 256 elements in 110 bytes: hmask[32], qs[64], 12 bytes of sixteen
 * 6-bit scales stored + 32, fp16 d. Chunk j = c & 7 (h = j / 4, k = j % 4)
 * is bits 2k of qs[32h + l] and bit j of hmask[l], level - 4 when that bit
 * is clear; scale number 2j + l / 16: x = d * (sc - 32) * q. */
struct ft_fmt_q3_k {
    static constexpr int BLOCK_ELEMS = 256, BLOCK_BYTES = 110;
    static __device__ __forceinline__ int scale(const ft_u8 *s, int g)
    {
        const int lo = g < 8 ? s[g] & 15 : s[g - 8] >> 4;
        return (lo | (((s[8 + (g & 3)] >> (2 * (g >> 2))) & 3) << 4)) - 32;
    }
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)(c >> 3) * 110;
        const int j = c & 7;
        const ft_u8 *q = b + 32 + 32 * (j >> 2);
        const int shift = 2 * (j & 3);
        const float d = ft_f16(b + 108);
        const float d0 = d * (float)scale(b + 96, 2 * j), d1 = d * (float)scale(b + 96, 2 * j + 1);
        for (int l = 0; l < 32; l++) {
            const int lv = ((q[l] >> shift) & 3) - (((b[l] >> j) & 1) ? 0 : 4);
            v[l] = (l < 16 ? d0 : d1) * (float)lv;
        }
    }
};

/* Q2_K: 256 elements in 84 bytes: scales[16] (low nibble scale, high
 * nibble min, per 16 elements), qs[64], fp16 d, fp16 dmin. Chunk j = c & 7
 * is bits 2 (j % 4) of qs[32 (j / 4) + l], scale bytes 2j and 2j + 1:
 * x = d * sc * q - dmin * m. */
struct ft_fmt_q2_k {
    static constexpr int BLOCK_ELEMS = 256, BLOCK_BYTES = 84;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)(c >> 3) * 84;
        const int j = c & 7;
        const ft_u8 *q = b + 16 + 32 * (j >> 2);
        const int shift = 2 * (j & 3);
        const float d = ft_f16(b + 80), dmin = ft_f16(b + 82);
        for (int k = 0; k < 2; k++) {
            const int s = b[2 * j + k];
            const float dl = d * (float)(s & 15), ml = dmin * (float)(s >> 4);
            for (int l = 16 * k; l < 16 * k + 16; l++)
                v[l] = dl * (float)((q[l] >> shift) & 3) - ml;
        }
    }
};

/* IQ4_NL and IQ4_XS: 4-bit indices into ggml's 16-value codebook
 * kvalues_iq4nl (runtime/format/quant_iq4.c). */
__device__ const signed char ft_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                     1,    13,   25,  38,  53,  69,  89,  113};

__device__ __forceinline__ float ft_iq4nl_value(int q)
{
    return (float)ft_kvalues_iq4nl[q];
}

/* IQ4_NL: fp16 d, qs[16]; x[l] = d * kv[lo nibble], x[l + 16] = d * kv[hi]. */
struct ft_fmt_iq4_nl {
    static constexpr int BLOCK_ELEMS = 32, BLOCK_BYTES = 18;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)c * 18;
        const float d = ft_f16(b);
        for (int l = 0; l < 16; l++) {
            v[l] = d * ft_iq4nl_value(b[2 + l] & 15);
            v[l + 16] = d * ft_iq4nl_value(b[2 + l] >> 4);
        }
    }
};

/* IQ4_XS: 256 elements in 136 bytes: fp16 d, u16 scales_h, scales_l[4],
 * qs[128]. Chunk j = c & 7 is an IQ4_NL block's nibbles at qs[16 j] with
 * scale d * (ls - 32), ls = nibble j & 1 of scales_l[j / 2] | bits 2j of
 * scales_h << 4. */
struct ft_fmt_iq4_xs {
    static constexpr int BLOCK_ELEMS = 256, BLOCK_BYTES = 136;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)(c >> 3) * 136;
        const int j = c & 7;
        const ft_u32 sh = (ft_u32)b[2] | ((ft_u32)b[3] << 8);
        const int ls =
            (int)(((b[4 + (j >> 1)] >> (4 * (j & 1))) & 15) | (((sh >> (2 * j)) & 3) << 4));
        const float dl = ft_f16(b) * (float)(ls - 32);
        const ft_u8 *q = b + 8 + 16 * j;
        for (int l = 0; l < 16; l++) {
            v[l] = dl * ft_iq4nl_value(q[l] & 15);
            v[l + 16] = dl * ft_iq4nl_value(q[l] >> 4);
        }
    }
};

/* The 4- and 8-bit float formats (runtime/format/dtype.h, minifloat.h).
 * E2M1 levels are doubled to integers and the scales halved, as ggml's
 * kvalues_mxfp4 with GGML_E8M0_TO_FP32_HALF / ggml_ue4m3_to_fp32. */
__device__ __forceinline__ float ft_e2m1_x2(int q)
{
    const int e = (q >> 1) & 3, m = q & 1;
    const int mag = e == 0 ? m : (2 + m) << (e - 1);
    return (float)(q & 8 ? -mag : mag);
}

/* 2^(e - 128): half the E8M0 scale (e < 2: float32 subnormals). */
__device__ __forceinline__ float ft_e8m0_half(ft_u32 e)
{
    return __uint_as_float(e < 2 ? 0x00200000u << e : (e - 1) << 23);
}

/* Half the UE4M3 scale; 0x00 and 0x7f read as 0, the sign bit is ignored. */
__device__ __forceinline__ float ft_ue4m3_half(ft_u32 x)
{
    if (x == 0 || x == 0x7f)
        return 0.0f;
    const ft_u32 e = (x >> 3) & 15, m = x & 7;
    if (e == 0)
        return (float)m * 0.0009765625f; /* m * 2^-10 */
    return __uint_as_float(((e + 120) << 23) | (m << 20)) * 0.5f;
}

/* OCP E4M3 (E4M3FN): bias 7, subnormals m * 2^-9, S.1111.111 NaN. */
__device__ __forceinline__ float ft_e4m3(ft_u32 x)
{
    const ft_u32 s = (x >> 7) << 31, e = (x >> 3) & 15, m = x & 7;
    if (e == 15 && m == 7)
        return __uint_as_float(s | 0x7fc00000u);
    if (e == 0)
        return __uint_as_float(s | __float_as_uint((float)m * 0.001953125f)); /* m * 2^-9 */
    return __uint_as_float(s | ((e + 120) << 23) | (m << 20));
}

/* MXFP4 (ggml block_mxfp4): u8 E8M0 e, qs[16]; x[l] = kv(lo nibble) *
 * 2^(e-128), x[l + 16] = kv(hi nibble) * 2^(e-128). */
struct ft_fmt_mxfp4 {
    static constexpr int BLOCK_ELEMS = 32, BLOCK_BYTES = 17;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)c * 17;
        const float d = ft_e8m0_half(b[0]);
        for (int l = 0; l < 16; l++) {
            v[l] = d * ft_e2m1_x2(b[1 + l] & 15);
            v[l + 16] = d * ft_e2m1_x2(b[1 + l] >> 4);
        }
    }
};

/* NVFP4 (ggml block_nvfp4): 64 elements in 36 bytes, u8 UE4M3 d[4] then
 * qs[32]; sub-block s (16 elements) is qs[8s ..]: lo nibble element j, hi
 * nibble j + 8. Chunk c is sub-blocks 2 (c & 1) and 2 (c & 1) + 1. */
struct ft_fmt_nvfp4 {
    static constexpr int BLOCK_ELEMS = 64, BLOCK_BYTES = 36;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)(c >> 1) * 36;
        for (int k = 0; k < 2; k++) {
            const int s = 2 * (c & 1) + k;
            const float d = ft_ue4m3_half(b[s]);
            const ft_u8 *q = b + 4 + 8 * s;
            for (int j = 0; j < 8; j++) {
                v[16 * k + j] = d * ft_e2m1_x2(q[j] & 15);
                v[16 * k + j + 8] = d * ft_e2m1_x2(q[j] >> 4);
            }
        }
    }
};

/* FP8: 128 E4M3 values after one float32 scale d (132 bytes); chunk c is
 * quarter c & 3 of block c >> 2. d is read bytewise: blocks are only
 * 4-byte aligned when the row is. */
struct ft_fmt_fp8 {
    static constexpr int BLOCK_ELEMS = 128, BLOCK_BYTES = 132;
    static __device__ __forceinline__ void dq32(const ft_u8 *row, int c, float *v)
    {
        const ft_u8 *b = row + (size_t)(c >> 2) * 132;
        const float d = __uint_as_float((ft_u32)b[0] | ((ft_u32)b[1] << 8) |
                                        ((ft_u32)b[2] << 16) | ((ft_u32)b[3] << 24));
        const ft_u8 *q = b + 4 + 32 * (c & 3);
        for (int i = 0; i < 32; i++)
            v[i] = d * ft_e4m3(q[i]);
    }
};

/* The IQ codebooks come next: runtime/format/iq_grids.inc, embedded as a
 * template of its own between this one and iq.cuh, as __device__ arrays
 * ft_<name> (the CPU code's names). */
typedef ft_u8 ft_iq_u8;
typedef ft_u16 ft_iq_u16;
typedef ft_u32 ft_iq_u32;
typedef ft_u64 ft_iq_u64;
/* clang-format off */
#define FT_IQ_TABLE(type, name, n) __device__ const ft_iq_##type ft_##name[n] = {
#define FT_IQ_TABLE_END };
/* clang-format on */

template <class F, int COLS> struct ft_row {
    static_assert(COLS % 32 == 0 && COLS % F::BLOCK_ELEMS == 0, "cols must fill whole blocks");
    static constexpr size_t BYTES = (size_t)(COLS / F::BLOCK_ELEMS) * F::BLOCK_BYTES;
};
