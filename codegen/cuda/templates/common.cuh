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
        const ft_u8 *s = b + 4;
        int sc, m;
        if (j < 4) {
            sc = s[j] & 63;
            m = s[j + 4] & 63;
        } else {
            sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
            m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
        }
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

template <class F, int COLS> struct ft_row {
    static_assert(COLS % 32 == 0 && COLS % F::BLOCK_ELEMS == 0, "cols must fill whole blocks");
    static constexpr size_t BYTES = (size_t)(COLS / F::BLOCK_ELEMS) * F::BLOCK_BYTES;
};
