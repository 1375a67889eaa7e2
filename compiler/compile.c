#include "compile.h"

#include "plan_build.h"
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
}

ft_status_t ft_compile_bundle(const ft_ir_model_t *model, const ft_compile_options_t *opts,
                              const char *out_dir)
{
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST)
        return ft_status_make(FT_STATUS_IO, "%s: cannot create the bundle directory: %s", out_dir,
                              strerror(errno));
    char path[4096];
    if (snprintf(path, sizeof(path), "%s/%s", out_dir, FT_BUNDLE_WEIGHTS_NAME) >= (int)sizeof(path))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "%s: path too long", out_dir);
    ft_packed_weights_t pw;
    ft_status_t st = ft_weights_pack(model, opts, path, &pw);
    if (st)
        return st;
    ft_arena_t *arena = NULL;
    Ftplan__Plan *plan = NULL;
    if (!(st = ft_arena_create(0, &arena)) && !(st = ft_plan_build(model, &pw, arena, &plan))) {
        snprintf(path, sizeof(path), "%s/%s", out_dir, FT_BUNDLE_PLAN_NAME);
        st = ft_plan_write(plan, path);
    }
    ft_arena_destroy(arena);
    ft_packed_weights_release(&pw);
    return st;
}
