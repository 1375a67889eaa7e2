/* ftc compile: refuse a model that cannot fit (when planning), pack the
 * weights, build the plan, calibrate through the bundle just written
 * (when asked), then store the partition solved with the calibration. */
#include "compile.h"

#include "calibrate.h"
#include "kernel_modules.h"
#include "plan_build.h"
#include "plan_partition.h"
#include "weights_pack.h"

#include "../runtime/format/plan_file.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

void ft_compile_options_init(ft_compile_options_t *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->format = FT_DTYPE_INVALID;
    opts->cpu_isa = ft_cg_cpu_host_isa();
}

/* Calibrates through the bundle (whose plan.ftp, without partition, is
 * written first so the runtime can open it), then re-solves the planner
 * with the experts' popularity. */
FT_WARN_UNUSED static ft_status_t ft_compile_calibrate(const ft_ir_model_t *model,
                                        const ft_compile_options_t *opts, const char *out_dir,
                                        const char *plan_path, const Ftplan__Plan *plan,
                                        ft_calibration_t *calib, ft_compile_plan_t *cp)
{
    ft_status_t st = ft_plan_write(plan, plan_path);
    if (!st)
        st = ft_calibrate_bundle(out_dir, opts->calibrate_path, opts->calibrate_progress,
                                 opts->calibrate_user, calib);
    if (!st && opts->hw_profile) {
        ft_compile_plan_release(cp);
        st = ft_compile_plan_solve(model, opts, calib, cp);
    }
    return st;
}

ft_status_t ft_compile_bundle(const ft_ir_model_t *model, const ft_compile_options_t *opts,
                              const char *out_dir)
{
    ft_compile_plan_t cp;
    memset(&cp, 0, sizeof(cp));
    ft_status_t st = FT_OK;
    /* Solve first: a model that cannot fit is refused before any write. */
    if (opts->hw_profile && (st = ft_compile_plan_solve(model, opts, NULL, &cp)))
        return st;
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST) {
        ft_compile_plan_release(&cp);
        return ft_status_make(FT_STATUS_IO, "%s: cannot create the bundle directory: %s", out_dir,
                              strerror(errno));
    }
    char wpath[4096], ppath[4096];
    if (snprintf(wpath, sizeof(wpath), "%s/%s", out_dir, FT_BUNDLE_WEIGHTS_NAME) >=
            (int)sizeof(wpath) ||
        snprintf(ppath, sizeof(ppath), "%s/%s", out_dir, FT_BUNDLE_PLAN_NAME) >=
            (int)sizeof(ppath)) {
        ft_compile_plan_release(&cp);
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "%s: path too long", out_dir);
    }
    ft_packed_weights_t pw;
    if ((st = ft_weights_pack(model, opts, wpath, &pw))) {
        ft_compile_plan_release(&cp);
        return st;
    }
    ft_arena_t *arena = NULL;
    Ftplan__Plan *plan = NULL;
    ft_calibration_t calib;
    memset(&calib, 0, sizeof(calib));
    if (!(st = ft_arena_create(0, &arena)))
        st = ft_plan_build(model, &pw, arena, &plan);
    /* Kernels before calibration, so calibration runs the generated ones. */
    if (!st)
        st = ft_compile_kernels(model, &pw, opts, arena, plan);
    if (!st && opts->calibrate_path &&
        !(st = ft_compile_calibrate(model, opts, out_dir, ppath, plan, &calib, &cp)))
        st = ft_plan_add_calibration(plan, &calib, arena);
    if (!st && opts->hw_profile)
        st = ft_plan_add_partition(plan, opts->hw_profile, &cp, model->hp.n_layers, arena);
    if (!st)
        st = ft_plan_write(plan, ppath);
    ft_arena_destroy(arena);
    ft_calibration_release(&calib);
    ft_compile_plan_release(&cp);
    ft_packed_weights_release(&pw);
    return st;
}
