/* Weight and tensor element formats: plain types and GGUF block-quantized
 * formats. One table (dtype.c) describes all of them, one row per format:
 * name, block size, bytes per block, GGUF ggml_type id, safetensors dtype
 * name, the row quantizer and dequantizer (convert.h), the activation
 * format the CPU reference dot product takes, and which kernels compute
 * it (flags). Code that needs a per-format property looks it up here
 * instead of switching over formats. Adding a format is then:
 *   - its row in dtype.c (a new number also needs its enum value below,
 *     plan.proto's WeightFormat and a line in dtype_mirrors.c);
 *   - its quantize/dequantize functions (quant_*.c, declared in convert.h);
 *   - CPU kernels: its dot products (backends/cpu, cpu_dot.h) and their
 *     row in matmul.c's table, and cpu_act here;
 *   - CUDA: its struct ft_fmt_<name> decoder in
 *     codegen/cuda/templates/common.cuh and FT_DTYPE_FLAG_CUDA;
 *   - generated CPU kernels: ftt_matmul_<name> in codegen/cpu/templates,
 *     an FT_KABI_FMT_* number (ft_kernel_abi.h, asserted in
 *     dtype_mirrors.c) and FT_DTYPE_FLAG_CPU_GEN;
 *   - FT_DTYPE_FLAG_WEIGHT (ftc --format): the profiler's GEMV list
 *     (hwprofiles/cpu_gemv.c);
 *   - its tests. test_dtype_table fails while these disagree.
 *
 * The enum values are stored in plans (plan.proto WeightFormat mirrors them):
 * never renumber, only append. They are freetoken's own numbers; a format
 * GGUF also has records its ggml_type id in the table (ggml_id), others -1.
 *
 * The 4- and 8-bit float weight formats (quant_fp4.c, quant_fp8.c):
 *
 * MXFP4 (OCP Microscaling v1.0, gpt-oss experts): ggml's GGML_TYPE_MXFP4
 *   (39) block, so a GGUF tensor is copied as it is: 32 elements in 17
 *   bytes, u8 E8M0 shared exponent, then 16 bytes of E2M1 nibbles: element
 *   j in the low nibble of byte j, element j + 16 in the high nibble.
 *
 * NVFP4 (NVIDIA): ggml's GGML_TYPE_NVFP4 (40) block: 64 elements in 36
 *   bytes, four UE4M3 scales (one per 16 elements, E4M3 without a sign),
 *   then 32 bytes of E2M1 nibbles, 8 per 16-element sub-block (element j
 *   low, j + 8 high). NVIDIA's checkpoints add a per-tensor float32
 *   second-level scale; ggml's block has none (llama.cpp keeps it as a
 *   separate tensor), and neither has FTW: a weight compiled from
 *   f32/bf16 gets its UE4M3 scales straight from each sub-block's amax / 6
 *   (ggml's quantize_row_nvfp4_ref). UE4M3 holds that with its full 3
 *   mantissa bits for amax from 6 * 2^-6 ~ 0.09 up to 1536 (ggml's encoder
 *   sends scales of 256 and more to 448); below, the
 *   scale is a subnormal m * 2^-9 with fewer bits, and a sub-block whose
 *   amax is under ~0.006 becomes zero: the price of one level of scales
 *   (MXFP4, whose E8M0 scale spans 2^-127 .. 2^127, has no such floor).
 *   An importer of a two-level checkpoint folds the tensor scale by
 *   dequantizing (UE4M3 scale x tensor scale, exact in float32) and
 *   re-encoding, which ft_convert_row does from any readable format.
 *
 * FP8 (E4M3 with a block scale): not a ggml type. 128 E4M3 values (OCP
 *   "E4M3FN", as safetensors F8_E4M3 stores them) after one float32 scale d,
 *   x = e4m3(q) * d: 132 bytes, 8.25 bits a weight. Why 128 and f32: it is
 *   the layout of DeepSeek-V3's FP8 weights (one float32 weight_scale_inv
 *   per 128 x 128 tile, so per 128 columns of every row), which therefore
 *   import without re-rounding, and the K-group of Hopper/Blackwell FP8
 *   GEMMs with per-group scales; a power-of-two (E8M0) scale per 32, as
 *   MXFP8, would force re-rounding those checkpoints, and 32 f32 scales
 *   would cost 12.5% instead of 3%. E4M3 is a float, so a scale's own
 *   precision does not limit the elements' relative precision (2^-4). A
 *   plain F8_E4M3 tensor without scales converts to FP8 with d = 1, bytes
 *   kept. Rows must be a multiple of 128 columns. */
#ifndef FT_FORMAT_DTYPE_H
#define FT_FORMAT_DTYPE_H

#include <stddef.h>
#include <stdint.h>

typedef enum ft_dtype {
    FT_DTYPE_INVALID = 0,
    FT_DTYPE_F32 = 1,
    FT_DTYPE_F16 = 2,
    FT_DTYPE_BF16 = 3,
    FT_DTYPE_F64 = 4,
    FT_DTYPE_I8 = 5,
    FT_DTYPE_I16 = 6,
    FT_DTYPE_I32 = 7,
    FT_DTYPE_I64 = 8,
    FT_DTYPE_U8 = 9,
    FT_DTYPE_U16 = 10,
    FT_DTYPE_U32 = 11,
    FT_DTYPE_U64 = 12,
    FT_DTYPE_BOOL = 13,
    FT_DTYPE_F8_E4M3 = 14,
    FT_DTYPE_F8_E5M2 = 15,
    FT_DTYPE_Q4_0 = 16,
    FT_DTYPE_Q4_1 = 17,
    FT_DTYPE_Q5_0 = 18,
    FT_DTYPE_Q5_1 = 19,
    FT_DTYPE_Q8_0 = 20,
    FT_DTYPE_Q8_1 = 21,
    FT_DTYPE_Q2_K = 22,
    FT_DTYPE_Q3_K = 23,
    FT_DTYPE_Q4_K = 24,
    FT_DTYPE_Q5_K = 25,
    FT_DTYPE_Q6_K = 26,
    FT_DTYPE_Q8_K = 27,
    FT_DTYPE_IQ2_XXS = 28,
    FT_DTYPE_IQ2_XS = 29,
    FT_DTYPE_IQ3_XXS = 30,
    FT_DTYPE_IQ1_S = 31,
    FT_DTYPE_IQ4_NL = 32,
    FT_DTYPE_IQ3_S = 33,
    FT_DTYPE_IQ2_S = 34,
    FT_DTYPE_IQ4_XS = 35,
    FT_DTYPE_IQ1_M = 36,
    FT_DTYPE_TQ1_0 = 37,
    FT_DTYPE_TQ2_0 = 38,
    FT_DTYPE_MXFP4 = 39,
    FT_DTYPE_NVFP4 = 40,
    FT_DTYPE_FP8 = 41,
    FT_DTYPE_COUNT
} ft_dtype_t;

/* Rows of n elements (a multiple of the block size) between float32 and
 * a format; y needs no alignment (convert.h). */
typedef void (*ft_quantize_row_fn)(const float *x, void *y, uint64_t n);
typedef void (*ft_dequantize_row_fn)(const void *x, float *y, uint64_t n);

/* ft_dtype_info_t.flags */
enum {
    /* A weight format of the compiler: ftc compile --format writes it, the
     * weight packer converts to it, and the CPU reference kernels compute
     * it (so it has quantize, dequantize and cpu_act). */
    FT_DTYPE_FLAG_WEIGHT = 1u << 0,
    /* The CUDA templates decode it (codegen/cuda/templates/common.cuh,
     * struct ft_fmt_<name>); its name is the format part of the emitted
     * kernels' names ("ft_gemv_q4_k_k2048", ft_cuda_kernels.h). Part of
     * the kernel ABI: changing the set bumps FT_KABI_VERSION. */
    FT_DTYPE_FLAG_CUDA = 1u << 1,
    /* codegen/cpu's templates compute it (ftt_matmul_<name>); its number
     * is an FT_KABI_FMT_* of ft_kernel_abi.h. */
    FT_DTYPE_FLAG_CPU_GEN = 1u << 2,
    /* Only ever an activation format (Q8_K): rows are quantized to it for
     * dot products, never stored as weights or converted to or from. */
    FT_DTYPE_FLAG_ACT_ONLY = 1u << 3,
};

typedef struct ft_dtype_info {
    const char *name;       /* lower-case, e.g. "q8_0", "bf16" */
    uint32_t block_elems;   /* elements per block (1 for plain types) */
    uint32_t block_bytes;   /* bytes per block */
    int ggml_id;            /* GGUF ggml_type, or -1 if GGUF has none */
    const char *st_name;    /* safetensors dtype, or NULL if it has none */
    /* float32 -> this format, or NULL when nothing writes it. */
    ft_quantize_row_fn quantize;
    /* this format -> float32, or NULL when nothing reads it. */
    ft_dequantize_row_fn dequantize;
    /* The format the CPU kernels prepare activation rows in for weights of
     * this format (ggml's vec_dot_type: F32, Q8_0 or Q8_K), or
     * FT_DTYPE_INVALID when the CPU kernels do not compute it. */
    ft_dtype_t cpu_act;
    uint32_t flags; /* FT_DTYPE_FLAG_WEIGHT, FT_DTYPE_FLAG_CUDA, ... */
} ft_dtype_info_t;

/* NULL for FT_DTYPE_INVALID or out-of-range values. */
const ft_dtype_info_t *ft_dtype_info(ft_dtype_t dtype);
const char *ft_dtype_name(ft_dtype_t dtype); /* "invalid" when unknown */

/* Lookups; FT_DTYPE_INVALID when not found. Names are case-insensitive. */
ft_dtype_t ft_dtype_from_name(const char *name);
ft_dtype_t ft_dtype_from_ggml(uint32_t ggml_id);
ft_dtype_t ft_dtype_from_safetensors(const char *st_name);

/* Name of any ggml_type id ever assigned, including ids that were removed
 * from ggml (e.g. "q4_2 (removed)"); NULL for ids never assigned. */
const char *ft_ggml_type_name(uint32_t ggml_id);

/* 1 when dtype is a known format with every flag of `flags` set. */
int ft_dtype_has(ft_dtype_t dtype, uint32_t flags);

/* The names of the formats with every flag of `flags`, in enum order, as
 * an English list ("f32, f16 or q8_0" with conj "or") into buf (always
 * terminated; cut after the last name that fits). For messages that list
 * what is supported. Returns buf. */
const char *ft_dtype_list(uint32_t flags, const char *conj, char *buf, size_t buf_size);

/* Bytes of a row of n_elems elements. Returns 0 and leaves *out_bytes alone
 * when n_elems is not a multiple of the block size or the product overflows. */
int ft_dtype_row_bytes(ft_dtype_t dtype, uint64_t n_elems, uint64_t *out_bytes);

#endif
