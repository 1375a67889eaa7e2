/* Helpers for tests that compare libfreetoken's forward pass (through the
 * public API only) with the float64 reference. */
#ifndef FT_REF_RUNTIME_H
#define FT_REF_RUNTIME_H

#include "freetoken.h"

#include <stdint.h>

/* Opens the bundle, creates a session with n_ctx positions and prefill
 * chunks of n_batch tokens (0: defaults), evaluates tokens[0..n) in calls
 * of `step` tokens (step 0: all n in one call) and writes every
 * position's logits to out (n x vocab_size floats). */
ft_status_t ft_ref_runtime_logits(const char *bundle, uint32_t n_ctx, uint32_t n_batch,
                                  uint32_t step, const int32_t *tokens, uint32_t n, float *out);
/* The same with a choice of CPU kernels (ft_kernels_kind_t). */
ft_status_t ft_ref_runtime_logits_k(const char *bundle, int kernels, uint32_t n_ctx, uint32_t n_batch,
                                    uint32_t step, const int32_t *tokens, uint32_t n, float *out);

/* Runtime rows a (float) against reference rows r (double), n_pos rows of
 * n_vocab: the largest per-position error ft_ref_rel_err and where it
 * occurs, and on how many positions the argmax agrees. */
typedef struct ft_ref_cmp {
    double max_err;
    uint32_t worst_pos;
    uint32_t n_top1_agree;
} ft_ref_cmp_t;

ft_ref_cmp_t ft_ref_compare(const float *a, const double *r, uint32_t n_pos, uint32_t n_vocab);

#endif
