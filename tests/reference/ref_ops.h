/* The float64 building blocks of the reference forward pass (ref_forward.h),
 * written as plainly as possible: they are the oracle the runtime is tested
 * against, so every one is a direct transcription of its formula. */
#ifndef FT_REF_OPS_H
#define FT_REF_OPS_H

#include <stdint.h>

/* y = W x for a row-major W [rows, cols]. */
void ft_ref_matvec(const double *w, uint32_t rows, uint32_t cols, const double *x, double *y);

/* y_i = x_i / sqrt(mean_j(x_j^2) + eps) * w_i, i < n. y may alias x. */
void ft_ref_rmsnorm(const double *x, const double *w, uint32_t n, double eps, double *y);

/* NeoX rotary embedding of one head vector in place: for i < rope_dim / 2,
 * the pair (x_i, x_{i + rope_dim/2}) is rotated by the angle
 * pos * theta_base^(-2i / rope_dim). Elements from rope_dim on are kept. */
void ft_ref_rope_neox(double *x, uint32_t rope_dim, uint32_t pos, double theta_base);

/* Interleaved ("normal", GPT-J) rotary embedding: for i < rope_dim / 2 the
 * pair (x_{2i}, x_{2i+1}) is rotated by the same angle as in
 * ft_ref_rope_neox. On rows permuted as llama.cpp's converter permutes
 * llama q/k it gives NeoX's result on the unpermuted rows, permuted. */
void ft_ref_rope_norm(double *x, uint32_t rope_dim, uint32_t pos, double theta_base);

/* x_i <- exp(x_i - max) / sum_j exp(x_j - max), in place. */
void ft_ref_softmax(double *x, uint32_t n);

/* silu(x) = x / (1 + exp(-x)). */
double ft_ref_silu(double x);

/* The indices of the k largest of p[0..n) in descending order of value; of
 * equal values the lower index comes first (and wins the last place). */
void ft_ref_topk(const double *p, uint32_t n, uint32_t k, uint32_t *out_idx);

/* Index of the largest value; the lowest index among equals. */
uint32_t ft_ref_argmax_d(const double *x, uint32_t n);
uint32_t ft_ref_argmax_f(const float *x, uint32_t n);

/* The normalized error of a runtime logit row a against a reference row r:
 * max_i |a_i - r_i| / max_i |r_i| (0 when r is all zero and a equals it). */
double ft_ref_rel_err(const float *a, const double *r, uint32_t n);

#endif
