/* ftc compile's kernel step: the CPU module (emitted C, checked through
 * libclang, built by the system compiler) and the CUDA images (NVRTC),
 * specialized for the model's shapes in the bundle's weight formats and
 * stored in the plan. */
#ifndef FT_COMPILER_KERNEL_MODULES_H
#define FT_COMPILER_KERNEL_MODULES_H

#include "compile.h"
#include "plan.pb-c.h"
#include "weights_pack.h"

#include "../codegen/cpu/cg_cpu.h"

/* Fills plan->cpu_module (when opts->cpu_isa) and plan->cuda_images /
 * cuda_ptx (when opts->n_cuda_archs); the bytes live in arena. Errors name
 * the step (emit, libclang, cc, NVRTC) and the model. */
FT_WARN_UNUSED ft_status_t ft_compile_kernels(const ft_ir_model_t *model, const ft_packed_weights_t *pw,
                               const ft_compile_options_t *opts, ft_arena_t *arena,
                               Ftplan__Plan *plan);

#endif
