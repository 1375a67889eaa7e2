/* Expected hit rates of the global LRU expert cache, and the routing
 * statistics the planner derives from the router's top-k.
 *
 * Hit rates use Che's approximation for LRU under the independent
 * reference model (IRM): every item (a layer's expert, flat id = layer *
 * n_experts + expert) is requested as an independent Poisson stream of
 * rate r_i requests per token; an LRU of C slots then behaves as if each
 * item stayed for a fixed characteristic time T after its last request,
 * with T solving sum_i (1 - exp(-r_i T)) = C, and item i hits with
 * probability 1 - exp(-r_i T). With uniform routing every item has the
 * same rate and the hit rate is exactly C / n_items, the IRM result for
 * any demand policy; with skewed popularity Che is accurate to a few
 * percent for caches of more than a few dozen slots (Fricker, Robert,
 * Roberts 2012). The unit test checks it against a simulated LRU. */
#ifndef FT_PLAN_LRU_MODEL_H
#define FT_PLAN_LRU_MODEL_H

#include <stddef.h>
#include <stdint.h>

/* Che's characteristic time in tokens for an LRU of n_slots over items of
 * the given rates (requests per token, >= 0). HUGE_VAL when every item
 * with a positive rate fits (each then always hits); 0 when n_slots is 0. */
double ft_lru_che_time(const double *rates, size_t n_items, double n_slots);

/* The hit probability of an item of `rate` under characteristic time t. */
double ft_lru_che_hit(double rate, double t);

/* Expected distinct experts a layer touches in a step of `tokens` tokens,
 * each choosing n_used of n_experts uniformly:
 * N (1 - (1 - k/N)^tokens). Tokens may be fractional. */
double ft_lru_expected_distinct(uint32_t n_experts, uint32_t n_used, double tokens);

/* The step size (tokens) at which the touched experts average
 * `per_expert` tokens each (>= 1): inverts tokens * k / distinct(tokens),
 * which grows from 1 at one token. */
double ft_lru_tokens_for_load(uint32_t n_experts, uint32_t n_used, double per_expert);

#endif
