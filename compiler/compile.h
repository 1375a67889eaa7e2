/* ftc compile: IR -> bundle directory (plan.ftp + weights.ftw). */
#ifndef FT_COMPILER_COMPILE_H
#define FT_COMPILER_COMPILE_H

#include "freetoken.h"
#include "hwprofile.pb-c.h"
#include "ir.h"
#include "quant_mix.h"
#include "../runtime/plan/planner.h"

#include <stdint.h>

#define FT_BUNDLE_PLAN_NAME "plan.ftp"
#define FT_BUNDLE_WEIGHTS_NAME "weights.ftw"

/* Called as work advances: `done` of `total` bytes of weights written. */
typedef void (*ft_progress_fn)(void *user, const char *stage, uint64_t done, uint64_t total);

/* Called before each step that has no byte count (building kernels):
 * `what` is one line such as "cpu kernels (avx2): compiling". */
typedef void (*ft_stage_fn)(void *user, const char *what);

/* The most CUDA targets one compile stores (= FT_CG_CUDA_MAX_ARCHS). */
#define FT_COMPILE_MAX_CUDA_ARCHS 16

typedef struct ft_compile_options {
    ft_dtype_t format;      /* weight format for matrices; FT_DTYPE_INVALID keeps the source's */
    /* A quantization mix (quant_mix.h) instead: each matrix in the type
     * llama-quantize gives it. Used when format is FT_DTYPE_INVALID. */
    ft_quant_mix_t mix;
    /* The KV cache's element type, stored in the plan (kv_format) and used
     * by the planner and every backend: FT_DTYPE_F16 (the default: half
     * the KV memory) or FT_DTYPE_F32 (exact against the float64 reference
     * where a test needs it). */
    ft_dtype_t kv_format;
    ft_progress_fn progress; /* may be NULL */
    void *progress_user;
    /* Planning (DESIGN.md sections 5 and 6): with a profile the planner is
     * solved for the model's shape in the bundle's weight formats and the
     * result, budgets and profile are stored in the plan. Borrowed. */
    const Fthw__Profile *hw_profile; /* NULL: no partition */
    ft_plan_budget_t budget; /* 0 fields: the profile's; ctx 0: min(4096, context length) */
    /* Calibration: the text file is run through the compiled bundle on the
     * CPU, its routing counts stored in the plan and, with a profile, given
     * to the planner as expert popularity. NULL: none. */
    const char *calibrate_path;
    ft_progress_fn calibrate_progress; /* done / total are tokens; may be NULL */
    void *calibrate_user;
    /* Kernel modules (DESIGN.md section 9). cpu_isa: "avx512", "avx2",
     * "portable" or NULL for none; ft_compile_options_init sets this
     * machine's ISA (ft_cg_cpu_host_isa). cuda_archs: the targets to
     * compile cubins for (10 * major + minor, ascending), plus PTX for the
     * lowest; none by default. */
    const char *cpu_isa;
    uint32_t cuda_archs[FT_COMPILE_MAX_CUDA_ARCHS];
    uint32_t n_cuda_archs;
    ft_stage_fn stage; /* may be NULL; gets progress_user */
} ft_compile_options_t;

void ft_compile_options_init(ft_compile_options_t *opts);

/* Writes out_dir/plan.ftp and out_dir/weights.ftw (creating out_dir).
 * The same model and options always give byte-identical files. A model
 * that cannot fit the RAM budget is refused (FT_STATUS_OUT_OF_RANGE, the
 * planner's message with the shortfall) before anything is written. */
FT_WARN_UNUSED ft_status_t ft_compile_bundle(const ft_ir_model_t *model, const ft_compile_options_t *opts,
                              const char *out_dir);

#endif
