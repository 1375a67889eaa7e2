/* Ordering sampling candidates without allocating: a total order
 * (higher logit first, lower id on ties), selection of the best k in
 * O(n) and an in-place sort of a prefix. */
#ifndef FT_TEXT_SAMPLER_SELECT_H
#define FT_TEXT_SAMPLER_SELECT_H

#include <stddef.h>
#include <stdint.h>

typedef struct ft_sampler_cand {
    float logit;
    int32_t id;
} ft_sampler_cand_t;

/* 1 when a comes before b: a higher logit, or the same and a lower id. */
static inline int ft_sampler_cand_before(const ft_sampler_cand_t *a, const ft_sampler_cand_t *b)
{
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

/* Rearranges c[0..n) so that c[0..k) holds the k first candidates in the
 * order above (in no particular order among themselves). 0 < k < n. */
void ft_sampler_select(ft_sampler_cand_t *c, size_t n, size_t k);

/* Sorts c[0..n) into the order above (heapsort: in place, n log n). */
void ft_sampler_sort(ft_sampler_cand_t *c, size_t n);

#endif
