/* A prompt and its greedy continuation, computed by the float64 reference
 * and by an engine through the public API, and how far apart they are:
 * the comparison the per-architecture and per-op tests share. */
#ifndef FT_REF_GREEDY_H
#define FT_REF_GREEDY_H

#include "freetoken.h"
#include "ref_forward.h"

#include <stdint.h>

typedef struct ft_ref_greedy {
    uint32_t vocab, n_prompt, n_gen;
    double *prompt;  /* [n_prompt][vocab]: every prompt position's logits */
    double *steps;   /* [n_gen][vocab]: the logits greedy token i was chosen from */
    int32_t *tokens; /* [n_gen] */
} ft_ref_greedy_t;

/* The reference's logits for prompt[0..n_prompt) and n_gen greedy tokens,
 * one a call, in a session of n_ctx positions. Free with
 * ft_ref_greedy_free. */
ft_status_t ft_ref_greedy_reference(const ft_ref_model_t *m, const int32_t *prompt, uint32_t n_prompt,
                                    uint32_t n_gen, uint32_t n_ctx, ft_ref_greedy_t *out);
void ft_ref_greedy_free(ft_ref_greedy_t *g);

/* How far two references' prompt logits are apart: the largest
 * ft_ref_rel_err over the positions both have, a's rows rounded to float32
 * as an engine's would be (a feature's reference against the one without
 * it, to show the feature changes the result). -1 when out of memory. */
double ft_ref_greedy_apart(const ft_ref_greedy_t *a, const ft_ref_greedy_t *b);

typedef struct ft_ref_greedy_run {
    float *prompt;       /* [n_prompt][vocab]: the engine's prompt logits (free()) */
    double prompt_err;   /* the largest ft_ref_rel_err over the prompt positions */
    uint32_t top1_agree; /* prompt positions whose argmax is the reference's */
    double step_err;     /* the largest over the greedy steps */
    int32_t first_diff;  /* the first greedy token that differs from the reference's, or -1 */
    int32_t got, want;   /* at first_diff */
} ft_ref_greedy_run_t;

/* Opens bundle with eo, evaluates the prompt in one call and the greedy
 * continuation one token a call in a session of n_ctx positions (each
 * step fed the reference's token, so one difference does not hide the
 * rest), and compares every logit row with ref. */
ft_status_t ft_ref_greedy_engine(const char *bundle, const ft_engine_options_t *eo, uint32_t n_ctx,
                                 const int32_t *prompt, const ft_ref_greedy_t *ref, ft_ref_greedy_run_t *out);

#endif
