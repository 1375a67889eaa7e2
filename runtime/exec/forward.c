#include "forward_internal.h"

#include "../backends/cpu/kernels.h"
#include "ops.h"

#include <math.h>
#include <string.h>

/* ---- matrix products on the pool ------------------------------------ */

#define FT_MM_MAX_JOBS 3

typedef struct ft_mm_job {
    const ft_mat_t *mat;
    float *y;
    size_t ldy;
} ft_mm_job_t;

typedef struct ft_mm_run {
    ft_mm_job_t jobs[FT_MM_MAX_JOBS];
    uint32_t n_jobs;
    const void *xp;
    uint32_t n_tok;
    int use_generated;
} ft_mm_run_t;

static void ft_mm_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    const ft_mm_run_t *r = ctx;
    for (uint32_t j = 0; j < r->n_jobs; j++) {
        const ft_mat_t *m = r->jobs[j].mat;
        uint64_t b, e;
        ft_split_range(m->rows, ft_mat_grain(m, FT_MM_GRAIN), ti, nt, &b, &e);
        ft_mat_mul(m, r->use_generated, m->data, r->xp, r->n_tok, (uint32_t)b, (uint32_t)e, r->jobs[j].y,
                   r->jobs[j].ldy);
    }
}

void ft_fwd_linear_prepared(ft_step_t *st, const ft_mat_t *const *mats, float *const *ys, uint32_t n_mats,
                            uint32_t n)
{
    ft_mm_run_t r = {.xp = st->w->xp, .n_tok = n, .use_generated = st->w->use_generated};
    for (uint32_t i = 0; i < n_mats; i++)
        r.jobs[r.n_jobs++] = (ft_mm_job_t){mats[i], ys[i], mats[i]->rows};
    ft_threadpool_run(st->e->pool, ft_mm_worker, &r);
}

void ft_fwd_linear(ft_step_t *st, const ft_mat_t *const *mats, float *const *ys, uint32_t n_mats,
                   const float *x, uint32_t n)
{
    uint32_t i = 0;
    while (i < n_mats) {
        const ft_dtype_t dt = mats[i]->dtype;
        ft_cpu_act_prepare(dt, x, mats[i]->cols, n, mats[i]->cols, st->w->xp);
        uint32_t j = i;
        while (j < n_mats && mats[j]->dtype == dt)
            j++;
        ft_fwd_linear_prepared(st, mats + i, ys + i, j - i, n);
        i = j;
    }
}

/* ---- fused RMSNorm + preparation (the plan's kernels) ---------------- */

typedef struct ft_norm_run {
    ft_kabi_norm_prepare_fn fn;
    const float *x, *w;
    float eps;
    uint32_t n, d;
    uint8_t *out;
    size_t out_row_bytes;
} ft_norm_run_t;

static void ft_norm_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    const ft_norm_run_t *r = ctx;
    uint64_t b, e;
    ft_split_range(r->n, 1, ti, nt, &b, &e);
    if (b < e)
        r->fn(r->x + b * r->d, r->d, r->w, r->eps, (uint32_t)(e - b), r->out + b * r->out_row_bytes);
}

void ft_fwd_norm_prepare(ft_step_t *st, ft_kabi_norm_prepare_fn fn, const float *x, const float *w,
                         float eps, uint32_t d, ft_dtype_t wtype, uint32_t n, void *out)
{
    ft_norm_run_t r = {fn, x, w, eps, n, d, out, ft_cpu_act_row_bytes(wtype, d)};
    if (n < 4)
        fn(x, d, w, r.eps, n, out);
    else
        ft_threadpool_run(st->e->pool, ft_norm_worker, &r);
}

