/* Che's approximation for the global LRU and routing statistics
 * (lru_model.h has the model). Sums run in array order: deterministic. */
#include "lru_model.h"

#include <math.h>

/* Items expected in the cache after time t, minus n_slots. */
static double ft_lru_che_excess(const double *rates, size_t n, double n_slots, double t)
{
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        if (rates[i] > 0.0)
            sum += -expm1(-rates[i] * t);
    return sum - n_slots;
}

double ft_lru_che_time(const double *rates, size_t n_items, double n_slots)
{
    if (!(n_slots > 0.0))
        return 0.0;
    size_t n_pos = 0;
    for (size_t i = 0; i < n_items; i++)
        n_pos += rates[i] > 0.0;
    if ((double)n_pos <= n_slots)
        return HUGE_VAL;
    /* The excess rises from -n_slots at t = 0 towards n_pos - n_slots > 0:
     * bracket the root by doubling, then bisect. */
    double lo = 0.0, hi = 1.0;
    for (int i = 0; i < 2000 && ft_lru_che_excess(rates, n_items, n_slots, hi) < 0.0; i++) {
        lo = hi;
        hi *= 2.0;
    }
    for (int i = 0; i < 100 && hi - lo > 1e-12 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (ft_lru_che_excess(rates, n_items, n_slots, mid) < 0.0)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

double ft_lru_che_hit(double rate, double t)
{
    if (!(rate > 0.0) || !(t > 0.0))
        return 0.0;
    if (isinf(t))
        return 1.0;
    return -expm1(-rate * t);
}

double ft_lru_expected_distinct(uint32_t n_experts, uint32_t n_used, double tokens)
{
    if (n_experts == 0 || n_used == 0 || !(tokens > 0.0))
        return 0.0;
    double miss = 1.0 - (double)n_used / n_experts; /* one token skips an expert */
    return n_experts * (1.0 - pow(miss, tokens));
}

double ft_lru_tokens_for_load(uint32_t n_experts, uint32_t n_used, double per_expert)
{
    if (n_experts == 0 || n_used == 0 || !(per_expert > 1.0))
        return 1.0;
    /* load(t) = t k / distinct(t) >= t k / N, so t = per_expert N / k is
     * an upper bound. */
    double lo = 1.0, hi = fmax(1.0, per_expert * n_experts / n_used);
    for (int i = 0; i < 200 && hi - lo > 1e-9 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        double load = mid * n_used / ft_lru_expected_distinct(n_experts, n_used, mid);
        if (load < per_expert)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}
