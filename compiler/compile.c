/* ftc compile: refuse a model that cannot fit (when planning), pack the
 * weights, build the plan, calibrate through the bundle just written
 * (when asked), then store the partition solved with the calibration. */
#include "compile.h"
#include "compile_formats.h"

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
    opts->kv_format = FT_DTYPE_F16;
    opts->cpu_isa = ft_cg_cpu_host_isa();
}

/* Calibrates through the bundle (whose plan.ftp, without partition, is
 * written first so the runtime can open it), stores the counts in the plan
 * and then re-solves the planner, which takes the experts' popularity from
 * them. */
FT_WARN_UNUSED static ft_status_t ft_compile_calibrate(const ft_compile_options_t *opts, const char *out_dir,
                                                       const char *plan_path, Ftplan__Plan *plan,
                                                       ft_calibration_t *calib, ft_arena_t *arena,
                                                       ft_compile_plan_t *cp)
{
    ft_status_t st = ft_plan_write(plan, plan_path);
    if (!st)
        st = ft_calibrate_bundle(out_dir, opts->calibrate_path, opts->calibrate_progress,
                                 opts->calibrate_user, calib);
    if (!st)
        st = ft_plan_add_calibration(plan, calib, arena);
    if (!st && opts->hw_profile) {
        ft_compile_plan_release(cp);
        st = ft_compile_plan_solve(plan, opts, cp);
    }
    return st;
}

/* The bundle's paths, or INVALID_ARGUMENT when out_dir is too long. */
FT_WARN_UNUSED static ft_status_t ft_compile_paths(const char *out_dir, char *wpath, char *ppath, size_t n)
{
    if (snprintf(wpath, n, "%s/%s", out_dir, FT_BUNDLE_WEIGHTS_NAME) >= (int)n ||
        snprintf(ppath, n, "%s/%s", out_dir, FT_BUNDLE_PLAN_NAME) >= (int)n)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "%s: path too long", out_dir);
    return FT_OK;
}

ft_status_t ft_compile_bundle(const ft_ir_model_t *model, const ft_compile_options_t *opts,
                              const char *out_dir)
{
    ft_compile_plan_t cp;
    memset(&cp, 0, sizeof(cp));
    char wpath[4096], ppath[4096];
    ft_packed_weights_t pw;
    ft_arena_t *arena = NULL;
    Ftplan__Plan *plan = NULL;
    ft_calibration_t calib;
    memset(&calib, 0, sizeof(calib));
    ft_status_t st = ft_compile_paths(out_dir, wpath, ppath, sizeof(wpath));
    if (!st)
        st = ft_compile_check_formats(model, opts); /* before any write */
    if (st)
        return st;
    /* The plan is built from the weights' layout and solved first, so that
     * a model that cannot fit is refused before any write. */
    if ((st = ft_weights_layout(model, opts, &pw)))
        return st;
    if (!(st = ft_arena_create(0, &arena)))
        st = ft_plan_build(model, &pw, opts->kv_format, arena, &plan);
    if (!st && opts->hw_profile)
        st = ft_compile_plan_solve(plan, opts, &cp);
    if (!st && mkdir(out_dir, 0755) != 0 && errno != EEXIST)
        st = ft_status_make(FT_STATUS_IO, "%s: cannot create the bundle directory: %s", out_dir,
                            strerror(errno));
    if (!st && !(st = ft_weights_pack(model, opts, wpath, &pw))) {
        ft_plan_set_weights(plan, &pw);
        st = ft_plan_hash_blobs(plan, wpath, arena);
    }
    /* Kernels before calibration, so calibration runs the generated ones. */
    if (!st)
        st = ft_compile_kernels(model, &pw, opts, arena, plan);
    if (!st && opts->calibrate_path)
        st = ft_compile_calibrate(opts, out_dir, ppath, plan, &calib, arena, &cp);
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
