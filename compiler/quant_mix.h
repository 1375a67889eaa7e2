/* Per-tensor weight formats of the quantization mixes (quant_mix.c):
 * `ftc compile --format q4_k_m` and the like give each matrix the type
 * llama.cpp's llama-quantize gives it for the same file type. */
#ifndef FT_COMPILER_QUANT_MIX_H
#define FT_COMPILER_QUANT_MIX_H

#include "ir.h"
#include "../runtime/format/dtype.h"

typedef enum ft_quant_mix {
    FT_QUANT_MIX_NONE = 0,
    FT_QUANT_MIX_Q3_K_M,
    FT_QUANT_MIX_Q4_K_M,
    FT_QUANT_MIX_Q5_K_M,
    FT_QUANT_MIX_Q6_K, /* llama's Q6_K file type (not --format q6_k: every matrix Q6_K) */
    FT_QUANT_MIX_Q8_0, /* llama's Q8_0 file type */
    FT_QUANT_MIX_COUNT
} ft_quant_mix_t;

/* The mix named `name` ("q3_k_m", "q4_k_m", "q5_k_m"; case-insensitive),
 * or FT_QUANT_MIX_NONE. The Q6_K and Q8_0 file types are not named here:
 * as --format values those names are the plain formats. */
ft_quant_mix_t ft_quant_mix_from_name(const char *name);
const char *ft_quant_mix_name(ft_quant_mix_t mix);

/* The format llama-quantize writes tensor t of model m in for mix (no
 * importance matrix, no overrides). Only for the matrices it quantizes:
 * the caller keeps norms, biases and routers as it does for every
 * --format. The rows of the result always hold whole blocks (llama's
 * fallbacks, then f16). */
ft_dtype_t ft_quant_mix_dtype(const ft_ir_model_t *m, const ft_ir_tensor_t *t, ft_quant_mix_t mix);

#endif
