/* The sampler object, shared by sampler.c (options, filters, the draw,
 * log-probabilities) and sampler_penalty.c (logit bias, repetition,
 * presence and frequency penalties, the generated-token counts). */
#ifndef FT_TEXT_SAMPLER_INTERNAL_H
#define FT_TEXT_SAMPLER_INTERNAL_H

#include "freetoken.h"

#include "sampler_select.h"

struct ft_sampler {
    ft_sampler_options_t opts; /* opts.logit_bias points at bias below */
    uint32_t n_vocab;
    ft_sampler_cand_t *cand; /* [n_vocab] working candidates */
    uint32_t *seen;          /* [n_vocab] stamp of the last penalty pass that saw the id */
    uint32_t stamp;
    ft_logit_bias_t *bias;   /* [opts.n_logit_bias] the caller's, copied */
    uint32_t *count;         /* [n_vocab] times each id was generated (saturating) */
    int32_t *generated;      /* [n_vocab] the distinct ids generated, first use first */
    uint32_t n_generated;
    uint8_t *allowed; /* [n_vocab] the filter's verdicts (opts.filter only) */
    uint64_t rng[4];  /* xoshiro256** state */
};

/* Checks the penalty and bias options against a vocabulary of n_vocab. */
FT_WARN_UNUSED ft_status_t ft_sampler_check_penalties(const ft_sampler_options_t *o,
                                                      uint32_t n_vocab);

/* Steps 1-3 of the chain on s->cand (cand[i].id == i): logit bias, the
 * repetition penalty over history, presence and frequency penalties. An
 * out-of-range history id is an error, before anything changes. */
FT_WARN_UNUSED ft_status_t ft_sampler_penalize(ft_sampler_t *s, const int32_t *history,
                                               uint32_t n_history);

/* Counts id (in range) as generated. */
void ft_sampler_count(ft_sampler_t *s, int32_t id);

#endif
