/* The expert region of VRAM: pinned hot experts and the global LRU slots,
 * and the expected hit rate of each layer (lru_model.h has the model).
 *
 * Under the independent reference model the best static choice is to pin
 * the experts with the most expected hits per byte; an LRU adapts when the
 * routing drifts from the calibration. With calibration the planner tries
 * pinning 0, 1/4, 1/2 and 3/4 of the region (greedily, by popularity per
 * byte) and keeps the choice with the fewest expected missed bytes per
 * token, ties to fewer pins; it always leaves the LRU a quarter. Without
 * calibration nothing is pinned: under uniform routing pinning cannot
 * beat the LRU's C / n_items. */
#include "plan_internal.h"

#include "lru_model.h"

#include <stdlib.h>

typedef struct ft_exp_item {
    double rate;    /* requests per token */
    double key;     /* rate per byte: the pinning order */
    uint64_t bytes;
    uint32_t id;    /* layer * expert_id_stride + expert */
    uint32_t layer;
} ft_exp_item_t;

static int ft_exp_by_key(const void *a, const void *b)
{
    const ft_exp_item_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int ft_exp_by_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Fills items for the GPU's MoE layers; popularity rows normalized to sum
 * to n_used (uniform when absent or all zero). Returns the count. */
static size_t ft_exp_items(const ft_plan_model_t *m, const ft_plan_result_t *res,
                           ft_exp_item_t *items)
{
    size_t n = 0;
    for (uint32_t l = 0; l < res->n_gpu_layers; l++) {
        const ft_plan_layer_t *ly = &m->layers[l];
        if (!ly->is_moe)
            continue;
        const float *row = m->popularity ? m->popularity + (size_t)l * m->popularity_stride
                                         : NULL;
        double sum = 0.0;
        for (uint32_t e = 0; row && e < ly->n_experts; e++)
            sum += row[e];
        for (uint32_t e = 0; e < ly->n_experts; e++, n++) {
            ft_exp_item_t *it = &items[n];
            it->rate = sum > 0.0 ? row[e] * (double)ly->n_used / sum
                                 : (double)ly->n_used / ly->n_experts;
            it->bytes = ly->expert_bytes;
            it->key = it->rate / (double)it->bytes;
            it->id = l * res->expert_id_stride + e;
            it->layer = l;
        }
    }
    return n;
}

/* Expected missed bytes per token with items[0, n_pin) pinned and n_slots
 * LRU slots for the rest. With acc ([2][n_layers], zeroed) also the
 * per-layer hit rates into hit. */
static double ft_exp_eval(const ft_exp_item_t *items, size_t n, size_t n_pin, uint64_t n_slots,
                          double *rates, double *acc, float *hit, uint32_t n_layers)
{
    for (size_t i = n_pin; i < n; i++)
        rates[i - n_pin] = items[i].rate;
    double t = ft_lru_che_time(rates, n - n_pin, (double)n_slots);
    double missed = 0.0;
    for (size_t i = 0; i < n; i++) {
        double h = i < n_pin ? 1.0 : ft_lru_che_hit(items[i].rate, t);
        missed += items[i].rate * (1.0 - h) * (double)items[i].bytes;
        if (acc) {
            acc[items[i].layer] += items[i].rate * h;
            acc[n_layers + items[i].layer] += items[i].rate;
        }
    }
    for (uint32_t l = 0; acc && l < n_layers; l++) {
        double den = acc[n_layers + l];
        hit[l] = den > 0.0 ? (float)(acc[l] / den) : 0.0f;
    }
    return missed;
}

/* Pins the first n_pin items (sorted by key) and records their ids. */
FT_WARN_UNUSED static ft_status_t ft_exp_pin(const ft_exp_item_t *items, size_t n_pin, ft_plan_result_t *res)
{
    if (n_pin == 0)
        return FT_OK;
    res->pinned = malloc(n_pin * sizeof *res->pinned);
    if (!res->pinned)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "planner: pinned experts");
    for (size_t i = 0; i < n_pin; i++) {
        res->pinned[i] = items[i].id;
        res->vram_pinned += items[i].bytes;
    }
    qsort(res->pinned, n_pin, sizeof *res->pinned, ft_exp_by_u32);
    res->n_pinned = (uint32_t)n_pin;
    return FT_OK;
}

/* Chooses n_pin (a prefix of the sorted items) and the slots; returns
 * n_pin and sets *out_slots. */
static size_t ft_exp_choose(const ft_plan_model_t *m, const ft_exp_item_t *items, size_t n,
                            uint64_t region, uint64_t slot, double *rates, uint64_t *out_slots)
{
    size_t best_pin = 0;
    uint64_t best_slots = 0;
    double best = 0.0;
    int n_cand = m->popularity ? 4 : 1;
    for (int c = 0; c < n_cand; c++) {
        uint64_t cap = region / 4 * (uint64_t)c, bytes = 0;
        size_t n_pin = 0;
        while (n_pin < n && items[n_pin].bytes <= cap - bytes)
            bytes += items[n_pin++].bytes;
        uint64_t slots = (region - bytes) / slot;
        if (slots > n - n_pin)
            slots = n - n_pin;
        double missed = ft_exp_eval(items, n, n_pin, slots, rates, NULL, NULL, 0);
        if (c == 0 || missed < best) {
            best = missed;
            best_pin = n_pin;
            best_slots = slots;
        }
    }
    *out_slots = best_slots;
    return best_pin;
}

ft_status_t ft_planner_experts(const ft_plan_model_t *m, uint64_t region, ft_plan_result_t *res)
{
    res->hit_rate = calloc(m->n_layers, sizeof *res->hit_rate);
    if (!res->hit_rate)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "planner: hit rates");
    if (res->cpu_only)
        return FT_OK;
    size_t cap = (size_t)res->n_gpu_layers * res->expert_id_stride;
    ft_exp_item_t *items = cap ? malloc(cap * sizeof *items) : NULL;
    double *rates = cap ? malloc(cap * sizeof *rates) : NULL;
    double *acc = calloc(2 * (size_t)m->n_layers, sizeof *acc);
    ft_status_t st = FT_OK;
    if ((cap && (!items || !rates)) || !acc) {
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "planner: %zu experts", cap);
        goto out;
    }
    size_t n = cap ? ft_exp_items(m, res, items) : 0;
    uint64_t slot = 0, total = 0;
    for (size_t i = 0; i < n; i++) {
        slot = items[i].bytes > slot ? items[i].bytes : slot;
        total += items[i].bytes;
    }
    if (n == 0)
        goto out;
    res->slot_bytes = slot;
    qsort(items, n, sizeof *items, ft_exp_by_key);
    size_t n_pin = 0;
    uint64_t n_slots;
    if (region / slot >= n) {
        n_slots = n; /* every expert has a slot */
    } else if (total <= region) {
        n_pin = n; /* packed, they all fit: pin them all */
        n_slots = 0;
    } else {
        n_pin = ft_exp_choose(m, items, n, region, slot, rates, &n_slots);
    }
    if ((st = ft_exp_pin(items, n_pin, res)))
        goto out;
    res->n_slots = (uint32_t)n_slots;
    res->vram_slots = n_slots * slot;
    ft_exp_eval(items, n, n_pin, n_slots, rates, acc, res->hit_rate, m->n_layers);
out:
    free(acc);
    free(items);
    free(rates);
    return st;
}
