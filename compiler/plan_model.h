/* A model's shape for planning, from whatever the user has before
 * downloading weights: an HF directory (only config.json is read), a
 * config.json file alone, or a GGUF file (only its header and tensor
 * table are read). */
#ifndef FT_COMPILER_PLAN_MODEL_H
#define FT_COMPILER_PLAN_MODEL_H

#include "freetoken.h"
#include "quant_mix.h"
#include "shape.h"

typedef struct ft_plan_model_opts {
    /* FT_DTYPE_INVALID: the checkpoint's own (GGUF: the tensors' formats;
     * config.json: mxfp4 experts when quantization_config.quant_method is
     * "mxfp4" or expert_dtype is "fp4", fp8 dense weights when quant_method
     * is "fp8", else torch_dtype / dtype, else bf16). An expert format
     * alone also sets the dense format, except mxfp4 (no checkpoint keeps
     * attention in mxfp4), which leaves the checkpoint's dense format. */
    ft_dtype_t expert_format, dense_format;
    /* A quantization mix (`--format q4_k_m`): every matrix in the format
     * `ftc compile --format` with that mix gives it (ft_pack_target_dtype),
     * each expert part timed in its own. Needs the tensor table: a GGUF,
     * or an HF directory with its safetensors; config.json alone is
     * refused. expert_format / dense_format must then be unset. */
    ft_quant_mix_t mix;
} ft_plan_model_opts_t;

typedef struct ft_plan_model_info {
    /* as used (a mix: its base type, e.g. q4_k for q4_k_m) */
    ft_dtype_t expert_format, dense_format;
    ft_quant_mix_t mix;
    int from_gguf;
} ft_plan_model_info_t;

FT_WARN_UNUSED ft_status_t ft_plan_model_load(const char *path, const ft_plan_model_opts_t *opts,
                               ft_plan_model_t **out_shape, ft_plan_model_info_t *out_info);

#endif
