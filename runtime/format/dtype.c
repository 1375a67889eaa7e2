#include "dtype.h"
#include "convert.h"

#include "../base/checked.h"

#include <stddef.h>
#include <stdio.h>
#include <strings.h>

/* Shorthands for the table below. The functions are convert.h's. */
#define FT_Q(f) ft_quantize_row_##f, ft_dequantize_row_##f
#define FT_NOQ NULL, NULL
#define FT_READ(f) NULL, ft_dequantize_row_##f /* read, never written */
/* Weights the compiler writes and the CPU and CUDA kernels compute; _GEN:
 * the generated CPU kernels too. */
#define FT_KERN (FT_DTYPE_FLAG_WEIGHT | FT_DTYPE_FLAG_CUDA)
#define FT_KERN_GEN (FT_KERN | FT_DTYPE_FLAG_CPU_GEN)

/* One row per format. Block geometry follows ggml's block structs
 * (ggml-common.h); FP8 is ours (dtype.h). Columns: name, elements and
 * bytes per block, ggml_type, safetensors name, quantize + dequantize,
 * the CPU kernels' activation format, flags. */
static const ft_dtype_info_t ft_dtype_table[FT_DTYPE_COUNT] = {
    [FT_DTYPE_F32] = {"f32", 1, 4, 0, "F32", FT_Q(f32), FT_DTYPE_F32, FT_KERN_GEN},
    [FT_DTYPE_F16] = {"f16", 1, 2, 1, "F16", FT_Q(f16), FT_DTYPE_F32, FT_KERN_GEN},
    [FT_DTYPE_BF16] = {"bf16", 1, 2, 30, "BF16", FT_Q(bf16), FT_DTYPE_F32, FT_KERN_GEN},
    [FT_DTYPE_F64] = {"f64", 1, 8, 28, "F64", FT_NOQ, FT_DTYPE_INVALID, 0},
    [FT_DTYPE_I8] = {"i8", 1, 1, 24, "I8", FT_NOQ, FT_DTYPE_INVALID, 0},
    [FT_DTYPE_I16] = {"i16", 1, 2, 25, "I16", FT_NOQ, FT_DTYPE_INVALID, 0},
    [FT_DTYPE_I32] = {"i32", 1, 4, 26, "I32", FT_NOQ, FT_DTYPE_INVALID, 0},
    [FT_DTYPE_I64] = {"i64", 1, 8, 27, "I64", FT_NOQ, FT_DTYPE_INVALID, 0},
    [FT_DTYPE_U8] = {"u8", 1, 1, -1, "U8", FT_NOQ, FT_DTYPE_INVALID, 0},
    [FT_DTYPE_U16] = {"u16", 1, 2, -1, "U16", FT_NOQ, FT_DTYPE_INVALID, 0},
    [FT_DTYPE_U32] = {"u32", 1, 4, -1, "U32", FT_NOQ, FT_DTYPE_INVALID, 0},
    [FT_DTYPE_U64] = {"u64", 1, 8, -1, "U64", FT_NOQ, FT_DTYPE_INVALID, 0},
    [FT_DTYPE_BOOL] = {"bool", 1, 1, -1, "BOOL", FT_NOQ, FT_DTYPE_INVALID, 0},
    [FT_DTYPE_F8_E4M3] = {"f8_e4m3", 1, 1, -1, "F8_E4M3", FT_Q(e4m3), FT_DTYPE_INVALID, 0},
    [FT_DTYPE_F8_E5M2] = {"f8_e5m2", 1, 1, -1, "F8_E5M2", FT_READ(e5m2), FT_DTYPE_INVALID, 0},
    [FT_DTYPE_Q4_0] = {"q4_0", 32, 18, 2, NULL, FT_Q(q4_0), FT_DTYPE_Q8_0, FT_KERN_GEN},
    [FT_DTYPE_Q4_1] = {"q4_1", 32, 20, 3, NULL, FT_Q(q4_1), FT_DTYPE_Q8_0, FT_KERN_GEN},
    [FT_DTYPE_Q5_0] = {"q5_0", 32, 22, 6, NULL, FT_Q(q5_0), FT_DTYPE_Q8_0, FT_KERN_GEN},
    [FT_DTYPE_Q5_1] = {"q5_1", 32, 24, 7, NULL, FT_Q(q5_1), FT_DTYPE_Q8_0, FT_KERN_GEN},
    [FT_DTYPE_Q8_0] = {"q8_0", 32, 34, 8, NULL, FT_Q(q8_0), FT_DTYPE_Q8_0, FT_KERN_GEN},
    [FT_DTYPE_Q8_1] = {"q8_1", 32, 36, 9, NULL, FT_NOQ, FT_DTYPE_INVALID, 0},
    [FT_DTYPE_Q2_K] = {"q2_k", 256, 84, 10, NULL, FT_Q(q2_k), FT_DTYPE_Q8_K, FT_KERN_GEN},
    [FT_DTYPE_Q3_K] = {"q3_k", 256, 110, 11, NULL, FT_Q(q3_k), FT_DTYPE_Q8_K, FT_KERN_GEN},
    [FT_DTYPE_Q4_K] = {"q4_k", 256, 144, 12, NULL, FT_Q(q4_k), FT_DTYPE_Q8_K, FT_KERN_GEN},
    [FT_DTYPE_Q5_K] = {"q5_k", 256, 176, 13, NULL, FT_Q(q5_k), FT_DTYPE_Q8_K, FT_KERN_GEN},
    [FT_DTYPE_Q6_K] = {"q6_k", 256, 210, 14, NULL, FT_Q(q6_k), FT_DTYPE_Q8_K, FT_KERN_GEN},
    [FT_DTYPE_Q8_K] = {"q8_k", 256, 292, 15, NULL, FT_Q(q8_k), FT_DTYPE_INVALID,
                       FT_DTYPE_FLAG_ACT_ONLY},
    [FT_DTYPE_IQ2_XXS] = {"iq2_xxs", 256, 66, 16, NULL, FT_Q(iq2_xxs), FT_DTYPE_Q8_K, FT_KERN_GEN},
    [FT_DTYPE_IQ2_XS] = {"iq2_xs", 256, 74, 17, NULL, FT_Q(iq2_xs), FT_DTYPE_Q8_K, FT_KERN_GEN},
    [FT_DTYPE_IQ3_XXS] = {"iq3_xxs", 256, 98, 18, NULL, FT_Q(iq3_xxs), FT_DTYPE_Q8_K, FT_KERN_GEN},
    [FT_DTYPE_IQ1_S] = {"iq1_s", 256, 50, 19, NULL, FT_Q(iq1_s), FT_DTYPE_Q8_K, FT_KERN_GEN},
    [FT_DTYPE_IQ4_NL] = {"iq4_nl", 32, 18, 20, NULL, FT_Q(iq4_nl), FT_DTYPE_Q8_0, FT_KERN_GEN},
    [FT_DTYPE_IQ3_S] = {"iq3_s", 256, 110, 21, NULL, FT_Q(iq3_s), FT_DTYPE_Q8_K, FT_KERN_GEN},
    [FT_DTYPE_IQ2_S] = {"iq2_s", 256, 82, 22, NULL, FT_Q(iq2_s), FT_DTYPE_Q8_K, FT_KERN_GEN},
    [FT_DTYPE_IQ4_XS] = {"iq4_xs", 256, 136, 23, NULL, FT_Q(iq4_xs), FT_DTYPE_Q8_K, FT_KERN_GEN},
    [FT_DTYPE_IQ1_M] = {"iq1_m", 256, 56, 29, NULL, FT_Q(iq1_m), FT_DTYPE_Q8_K, FT_KERN_GEN},
    [FT_DTYPE_TQ1_0] = {"tq1_0", 256, 54, 34, NULL, FT_Q(tq1_0), FT_DTYPE_Q8_K, FT_KERN_GEN},
    [FT_DTYPE_TQ2_0] = {"tq2_0", 256, 66, 35, NULL, FT_Q(tq2_0), FT_DTYPE_Q8_K, FT_KERN_GEN},
    [FT_DTYPE_MXFP4] = {"mxfp4", 32, 17, 39, NULL, FT_Q(mxfp4), FT_DTYPE_Q8_0, FT_KERN_GEN},
    [FT_DTYPE_NVFP4] = {"nvfp4", 64, 36, 40, NULL, FT_Q(nvfp4), FT_DTYPE_Q8_0, FT_KERN_GEN},
    [FT_DTYPE_FP8] = {"fp8", 128, 132, -1, NULL, FT_Q(fp8), FT_DTYPE_F32, FT_KERN_GEN},
};

/* convert.h names the block geometry its code relies on: the same numbers. */
_Static_assert(
    FT_Q8_0_BLOCK_ELEMS == 32 && FT_Q8_0_BLOCK_BYTES == 34 && FT_Q4_0_BLOCK_ELEMS == 32 &&
        FT_Q4_0_BLOCK_BYTES == 18 && FT_QK_K == 256 && FT_Q4_K_BLOCK_BYTES == 144 &&
        FT_Q2_K_BLOCK_BYTES == 84 && FT_Q3_K_BLOCK_BYTES == 110 && FT_Q5_K_BLOCK_BYTES == 176 &&
        FT_Q4_1_BLOCK_BYTES == 20 && FT_Q5_0_BLOCK_BYTES == 22 && FT_Q5_1_BLOCK_BYTES == 24 &&
        FT_IQ4_NL_BLOCK_BYTES == 18 && FT_IQ4_XS_BLOCK_BYTES == 136 && FT_TQ1_0_BLOCK_BYTES == 54 &&
        FT_IQ1_S_BLOCK_BYTES == 50 && FT_IQ1_M_BLOCK_BYTES == 56 &&
        FT_TQ2_0_BLOCK_BYTES == 66 && FT_Q6_K_BLOCK_BYTES == 210 && FT_Q8_K_BLOCK_BYTES == 292 &&
        FT_MXFP4_BLOCK_ELEMS == 32 && FT_MXFP4_BLOCK_BYTES == 17 && FT_NVFP4_BLOCK_ELEMS == 64 &&
        FT_NVFP4_BLOCK_BYTES == 36 && FT_FP8_BLOCK_ELEMS == 128 && FT_FP8_BLOCK_BYTES == 132,
    "convert.h block sizes must match the dtype table");

/* Every ggml_type id ever assigned. Removed ones are named so that an old
 * file gets "unsupported type q4_2 (removed from ggml)" rather than "unknown". */
static const char *const ft_ggml_names[] = {
    [0] = "f32",      [1] = "f16",       [2] = "q4_0",     [3] = "q4_1",
    [4] = "q4_2 (removed from ggml)",    [5] = "q4_3 (removed from ggml)",
    [6] = "q5_0",     [7] = "q5_1",      [8] = "q8_0",     [9] = "q8_1",
    [10] = "q2_k",    [11] = "q3_k",     [12] = "q4_k",    [13] = "q5_k",
    [14] = "q6_k",    [15] = "q8_k",     [16] = "iq2_xxs", [17] = "iq2_xs",
    [18] = "iq3_xxs", [19] = "iq1_s",    [20] = "iq4_nl",  [21] = "iq3_s",
    [22] = "iq2_s",   [23] = "iq4_xs",   [24] = "i8",      [25] = "i16",
    [26] = "i32",     [27] = "i64",      [28] = "f64",     [29] = "iq1_m",
    [30] = "bf16",
    [31] = "q4_0_4_4 (removed from ggml)", [32] = "q4_0_4_8 (removed from ggml)",
    [33] = "q4_0_8_8 (removed from ggml)", [34] = "tq1_0", [35] = "tq2_0",
    [36] = "iq4_nl_4_4 (removed from ggml)", [37] = "iq4_nl_4_8 (removed from ggml)",
    [38] = "iq4_nl_8_8 (removed from ggml)", [39] = "mxfp4",
    [40] = "nvfp4",   [41] = "q1_0",     [42] = "q2_0",
};

const ft_dtype_info_t *ft_dtype_info(ft_dtype_t dtype)
{
    if ((int)dtype <= FT_DTYPE_INVALID || dtype >= FT_DTYPE_COUNT)
        return NULL;
    return &ft_dtype_table[dtype];
}

const char *ft_dtype_name(ft_dtype_t dtype)
{
    const ft_dtype_info_t *info = ft_dtype_info(dtype);
    return info ? info->name : "invalid";
}

ft_dtype_t ft_dtype_from_name(const char *name)
{
    for (int i = 1; i < FT_DTYPE_COUNT; i++)
        if (strcasecmp(ft_dtype_table[i].name, name) == 0)
            return (ft_dtype_t)i;
    return FT_DTYPE_INVALID;
}

ft_dtype_t ft_dtype_from_ggml(uint32_t ggml_id)
{
    for (int i = 1; i < FT_DTYPE_COUNT; i++)
        if (ft_dtype_table[i].ggml_id == (int)ggml_id && ggml_id < 1000)
            return (ft_dtype_t)i;
    return FT_DTYPE_INVALID;
}

ft_dtype_t ft_dtype_from_safetensors(const char *st_name)
{
    for (int i = 1; i < FT_DTYPE_COUNT; i++)
        if (ft_dtype_table[i].st_name && strcasecmp(ft_dtype_table[i].st_name, st_name) == 0)
            return (ft_dtype_t)i;
    return FT_DTYPE_INVALID;
}

const char *ft_ggml_type_name(uint32_t ggml_id)
{
    if (ggml_id >= sizeof(ft_ggml_names) / sizeof(ft_ggml_names[0]))
        return NULL;
    return ft_ggml_names[ggml_id];
}

int ft_dtype_row_bytes(ft_dtype_t dtype, uint64_t n_elems, uint64_t *out_bytes)
{
    const ft_dtype_info_t *info = ft_dtype_info(dtype);
    if (!info || n_elems % info->block_elems != 0)
        return 0;
    return ft_mul_u64(n_elems / info->block_elems, info->block_bytes, out_bytes);
}

int ft_dtype_has(ft_dtype_t dtype, uint32_t flags)
{
    const ft_dtype_info_t *info = ft_dtype_info(dtype);
    return info && (info->flags & flags) == flags;
}

const char *ft_dtype_list(uint32_t flags, const char *conj, char *buf, size_t buf_size)
{
    int n_match = 0, seen = 0;
    for (int i = 1; i < FT_DTYPE_COUNT; i++)
        n_match += (ft_dtype_table[i].flags & flags) == flags;
    if (!buf_size)
        return buf;
    buf[0] = '\0';
    size_t len = 0;
    for (int i = 1; i < FT_DTYPE_COUNT; i++) {
        if ((ft_dtype_table[i].flags & flags) != flags)
            continue;
        seen++;
        const int last = seen > 1 && seen == n_match;
        const char *sep = seen == 1 ? "" : last ? " " : ", ";
        const int n = snprintf(buf + len, buf_size - len, "%s%s%s%s", sep, last ? conj : "",
                               last ? " " : "", ft_dtype_table[i].name);
        if (n < 0 || (size_t)n >= buf_size - len) {
            buf[len] = '\0'; /* cut after the last whole name */
            break;
        }
        len += (size_t)n;
    }
    return buf;
}
