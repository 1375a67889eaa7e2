/* Weight and tensor element formats: plain types and GGUF block-quantized
 * formats. One table describes all of them (name, block size, bytes per
 * block, GGUF ggml_type id, safetensors dtype name).
 *
 * The enum values are stored in plans (plan.proto WeightFormat mirrors them):
 * never renumber, only append. */
#ifndef FT_FORMAT_DTYPE_H
#define FT_FORMAT_DTYPE_H

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
    FT_DTYPE_COUNT
} ft_dtype_t;

typedef struct ft_dtype_info {
    const char *name;       /* lower-case, e.g. "q8_0", "bf16" */
    uint32_t block_elems;   /* elements per block (1 for plain types) */
    uint32_t block_bytes;   /* bytes per block */
    int ggml_id;            /* GGUF ggml_type, or -1 if GGUF has none */
    const char *st_name;    /* safetensors dtype, or NULL if it has none */
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

/* Bytes of a row of n_elems elements. Returns 0 and leaves *out_bytes alone
 * when n_elems is not a multiple of the block size or the product overflows. */
int ft_dtype_row_bytes(ft_dtype_t dtype, uint64_t n_elems, uint64_t *out_bytes);

#endif
