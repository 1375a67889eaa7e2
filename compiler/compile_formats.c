/* Compile-time honesty about weight formats (issue 14): before anything is
 * written, every matrix's stored format (after --format) must be one that
 * each selected target computes. The CPU is always a target: the runtime
 * computes experts there (the q* split) and is the fallback backend; each
 * --cuda-arch is another. A refusal names the tensor, its format, the
 * target and the formats that target supports, instead of leaving a bundle
 * that fails when ft opens it. */
#include "compile_formats.h"

#include "weights_pack.h"

#include "../runtime/backends/cpu/kernels.h"

#include <stdio.h>

ft_status_t ft_compile_check_formats(const ft_ir_model_t *model, const ft_compile_options_t *opts)
{
    for (uint32_t i = 0; i < model->n_tensors; i++) {
        const ft_ir_tensor_t *t = &model->tensors[i];
        if (t->n_dims < 2) continue; /* norms and biases are stored as f32 */
        const ft_dtype_t d = ft_pack_target_dtype(model, t, opts);
        char list[256];
        if (!ft_cpu_supports(d))
            return ft_status_make(FT_STATUS_UNSUPPORTED,
                                  "%s: tensor '%s': weight format %s has no kernel for target cpu "
                                  "(the cpu computes %s)",
                                  model->source_name, t->name, ft_dtype_name(d),
                                  ft_dtype_list(FT_DTYPE_FLAG_WEIGHT, "and", list, sizeof(list)));
        if (opts->n_cuda_archs > 0 && !ft_dtype_has(d, FT_DTYPE_FLAG_CUDA))
            return ft_status_make(FT_STATUS_UNSUPPORTED,
                                  "%s: tensor '%s': weight format %s has no kernel for target cuda "
                                  "sm_%u (cuda computes %s; --cuda-arch none builds for the cpu "
                                  "only)",
                                  model->source_name, t->name, ft_dtype_name(d),
                                  (unsigned)opts->cuda_archs[0],
                                  ft_dtype_list(FT_DTYPE_FLAG_CUDA, "and", list, sizeof(list)));
    }
    return FT_OK;
}
