/* Internal to the executor (executor.c) and its CPU ops (forward.c,
 * forward_moe.c): one step's view of the session's buffers, the matrix
 * products on the thread pool, and the ops. */
#ifndef FT_EXEC_FORWARD_INTERNAL_H
#define FT_EXEC_FORWARD_INTERNAL_H

#include "engine_internal.h"
#include "program.h"
#include "work.h"

#define FT_MM_GRAIN 4 /* rows per split unit of a product */
#define FT_STEP_MAX_BUFFERS 64 /* = the plan validator's limit */

/* The buffers one list of ops runs on: the workspace's, offset to the
 * first row the list computes (the epilogue computes only the rows whose
 * logits are asked for), the logits buffer pointing at the output. A pass
 * carries the rows of one or more sessions; the row-wise ops find each
 * row's session and position in w->row_s / w->row_pos [row0 + t]. */
typedef struct ft_step {
    ft_engine_t *e;
    ft_work_t *w;
    ft_session_t *s; /* the device target's one session (dev_ops.c), else NULL */
    float *buf[FT_STEP_MAX_BUFFERS];
    uint32_t n;      /* rows */
    uint32_t n_step; /* tokens of the pass */
    uint32_t row0;   /* the workspace buffers' row that buf[] starts at */
    ft_offload_t *off; /* sim: the modelled device's offload state (MOE's expert weights), else NULL */
} ft_step_t;

/* y_j = W_j x for up to three matrices of one format over n activation
 * rows already prepared for that format in w->xp. */
void ft_fwd_linear_prepared(ft_step_t *st, const ft_mat_t *const *mats, float *const *ys, uint32_t n_mats,
                            uint32_t n);

/* y_j = x W_j^T for up to three matrices that read the same input rows
 * x [n, cols]. Matrices of one format share one activation preparation. */
void ft_fwd_linear(ft_step_t *st, const ft_mat_t *const *mats, float *const *ys, uint32_t n_mats,
                   const float *x, uint32_t n);

/* out = prepare(rmsnorm(x rows [0, n), w)) of d floats for weights of
 * wtype through the module's fused kernel fn: bit-identical to
 * ft_op_rmsnorm followed by ft_cpu_act_prepare. Rows split over the pool
 * when there are several (a decode token runs on the calling thread: no
 * barrier). */
void ft_fwd_norm_prepare(ft_step_t *st, ft_kabi_norm_prepare_fn fn, const float *x, const float *w,
                         float eps, uint32_t d, ft_dtype_t wtype, uint32_t n, void *out);

/* The ops (program.h documents the fields each reads). */
void ft_xop_head_norm(ft_step_t *st, const ft_xop_t *x);
void ft_xop_rope(ft_step_t *st, const ft_xop_t *x);
void ft_xop_kv_append(ft_step_t *st, const ft_xop_t *x);
void ft_xop_attention(ft_step_t *st, const ft_xop_t *x);
/* MLA: allocates its scratch per run (an OUT_OF_MEMORY status). */
FT_WARN_UNUSED ft_status_t ft_xop_mla(ft_step_t *st, const ft_xop_t *x);
/* ROUTER into w->sel / w->sel_w; prepared: the input's rows are in w->xp
 * for the router's format. */
void ft_xop_router(ft_step_t *st, const ft_xop_t *x, int prepared);
/* MOE over the ROUTER's choice; xp_rows: the input prepared for the
 * experts' format, or NULL: prepare its float rows per expert. off: the
 * sim's offload state, whose dispatch says where each expert's weights
 * are (its slots and streaming buffers), or NULL: the mapped weights. */
FT_WARN_UNUSED ft_status_t ft_xop_moe(ft_step_t *st, const ft_xop_t *x, const uint8_t *xp_rows, ft_offload_t *off);

#endif
