/* Internal to the forward pass (forward.c, forward_moe.c): the matrix
 * products on the thread pool, the plan's fused norm + preparation, and
 * the MoE half of a layer. */
#ifndef FT_EXEC_FORWARD_INTERNAL_H
#define FT_EXEC_FORWARD_INTERNAL_H

#include "engine_internal.h"

#define FT_MM_GRAIN 4 /* rows per split unit of a product */

/* y_j = W_j x for up to three matrices of one format over n activation
 * rows already prepared for that format in s->xp. */
void ft_fwd_linear_prepared(ft_session_t *s, const ft_mat_t *const *mats, float *const *ys,
                            uint32_t n_mats, uint32_t n);

/* y_j = x W_j^T for up to three matrices that read the same input rows
 * x [n, cols]. Matrices of one format share one activation preparation. */
void ft_fwd_linear(ft_session_t *s, const ft_mat_t *const *mats, float *const *ys, uint32_t n_mats,
                   const float *x, uint32_t n);

/* out = prepare(rmsnorm(x rows [0, n), w)) for weights of wtype through
 * the module's fused kernel fn: bit-identical to ft_op_rmsnorm followed by
 * ft_cpu_act_prepare. Rows split over the pool when there are several (a
 * decode token runs on the calling thread: no barrier). */
void ft_fwd_norm_prepare(ft_session_t *s, ft_kabi_norm_prepare_fn fn, const float *x, const float *w,
                         ft_dtype_t wtype, uint32_t n, void *out);

/* The MoE half of layer `layer` for n tokens: s->x += sum_k w_k E_k(norm(s->x)). */
void ft_fwd_moe(ft_session_t *s, const ft_layer_t *L, uint32_t layer, uint32_t n);

#endif
