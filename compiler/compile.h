/* ftc compile: IR -> bundle directory (plan.ftp + weights.ftw). */
#ifndef FT_COMPILER_COMPILE_H
#define FT_COMPILER_COMPILE_H

#include "freetoken.h"
#include "ir.h"

#include <stdint.h>

#define FT_BUNDLE_PLAN_NAME "plan.ftp"
#define FT_BUNDLE_WEIGHTS_NAME "weights.ftw"

/* Called as work advances: `done` of `total` bytes of weights written. */
typedef void (*ft_progress_fn)(void *user, const char *stage, uint64_t done, uint64_t total);

typedef struct ft_compile_options {
    ft_dtype_t format;      /* weight format for matrices; FT_DTYPE_INVALID keeps the source's */
    ft_progress_fn progress; /* may be NULL */
    void *progress_user;
} ft_compile_options_t;

void ft_compile_options_init(ft_compile_options_t *opts);

/* Writes out_dir/plan.ftp and out_dir/weights.ftw (creating out_dir).
 * The same model and options always give byte-identical files. */
ft_status_t ft_compile_bundle(const ft_ir_model_t *model, const ft_compile_options_t *opts,
                              const char *out_dir);

#endif
