/* The small float encodings inside the 4- and 8-bit weight formats, as
 * inline decoders (the CPU dot products decode one per weight) and the one
 * encoder FP8 needs.
 *
 * E2M1 (OCP MX v1.0 FP4): sign, 2 exponent bits (bias 1), 1 mantissa bit:
 *   0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives. ft_e2m1_x2 holds twice
 *   those values as integers, exactly ggml's kvalues_mxfp4 (ggml-common.h,
 *   "e2m1 values (doubled)"), so that dot products stay in integers; the
 *   scale decoders below return half the scale to make up for it, as ggml's
 *   GGML_E8M0_TO_FP32_HALF and ggml_ue4m3_to_fp32 do.
 * E8M0 (MX shared scale): 2^(e - 127), no sign, no mantissa.
 * UE4M3 (NVFP4 block scale): E4M3 read without its sign bit, as ggml's
 *   ggml_ue4m3_to_fp32 (ggml-impl.h): 0x00 and 0x7f (NaN) read as 0.
 * E4M3 (OCP FP8 "E4M3FN", safetensors F8_E4M3): bias 7, subnormals
 *   m * 2^-9, no infinities, S.1111.111 is NaN, largest finite 448.
 * E5M2 (OCP FP8, safetensors F8_E5M2): the high byte of an IEEE fp16. */
#ifndef FT_FORMAT_MINIFLOAT_H
#define FT_FORMAT_MINIFLOAT_H

#include <stdint.h>
#include <string.h>

static const int8_t ft_e2m1_x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

static inline float ft_mf_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* 2^(e - 128): half the E8M0 value (ggml_e8m0_to_fp32_half). e < 2 are
 * float32 subnormals. */
static inline float ft_e8m0_half(uint8_t e)
{
    return ft_mf_from_bits(e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23);
}

/* Half the UE4M3 value: exp 0 is m * 2^-9, else (1 + m/8) * 2^(exp - 7).
 * Built from bits (exact, no libm): (8 + m) * 2^(exp - 10) / 2. */
static inline float ft_ue4m3_half(uint8_t x)
{
    if (x == 0 || x == 0x7f) return 0.0f;
    const uint32_t e = (x >> 3) & 0xfu, m = x & 7u;
    if (e == 0) return (float)m * 0x1.0p-10f;
    return ft_mf_from_bits(((e - 7u + 127u) << 23) | (m << 20)) * 0.5f;
}

/* E4M3 -> float32, exact. The 7 bits below the sign, shifted to float32's
 * top mantissa bits and rebiased by 120 in the exponent, are the value for
 * every exponent e >= 1; e = 0 is the subnormal m * 2^-9 (computed apart,
 * never as a float32 subnormal, which is slow on x86). */
static inline float ft_e4m3_to_f32(uint8_t x)
{
    const uint32_t a = x & 0x7fu;
    const float v = a == 0x7f ? ft_mf_from_bits(0x7fc00000u)
                    : a < 8   ? (float)a * 0x1.0p-9f
                              : ft_mf_from_bits((a << 20) + (120u << 23));
    uint32_t u;
    memcpy(&u, &v, sizeof(u));
    return ft_mf_from_bits(u | (uint32_t)(x & 0x80u) << 24);
}

/* float32 -> E4M3, round to nearest even, saturating to +-448 (the
 * .satfinite behaviour of NVIDIA's cvt and of the FP8 quantizers: a value
 * scaled to the top of the range must not become NaN); NaN stays NaN. */
uint8_t ft_f32_to_e4m3(float f);

#endif
