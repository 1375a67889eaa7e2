/* Token sampling (the ft_sampler_* API in freetoken.h).
 *
 * The chain follows llama.cpp's default order (common/sampling:
 * penalties, top_k, top_p, min_p, temperature, then a draw):
 *   1. repetition penalty over the last repeat_last_n history ids, each
 *      distinct id once: a positive logit is divided by the penalty, a
 *      negative one multiplied;
 *   2. temperature <= 0: greedy, the highest logit (lowest id on ties);
 *   3. top_k: keep the k highest;
 *   4. top_p: keep the smallest highest-first prefix whose probability
 *      (softmax of the logits left) reaches top_p;
 *   5. min_p: keep logits >= max + ln(min_p), i.e. probability >= min_p
 *      times the best one's;
 *   6. temperature divides the logits; softmax; one draw from
 *      xoshiro256** (seeded through splitmix64).
 * Filters 3-5 always keep at least one candidate. Every buffer is made at
 * create: sampling allocates nothing. */
#include "freetoken.h"

#include "sampler_select.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Top-p sorts a growing prefix (this many first, then 4x) rather than the
 * whole vocabulary, which the probability mass is rarely spread over. */
#define FT_SAMPLER_TOP_P_FIRST 64

struct ft_sampler {
    ft_sampler_options_t opts;
    uint32_t n_vocab;
    ft_sampler_cand_t *cand; /* [n_vocab] working candidates */
    uint32_t *seen;          /* [n_vocab] stamp of the last penalty pass that saw the id */
    uint32_t stamp;
    uint64_t rng[4]; /* xoshiro256** state */
};

void ft_sampler_options_init(ft_sampler_options_t *opts)
{
    opts->temperature = 0.8f;
    opts->top_k = 40;
    opts->top_p = 0.95f;
    opts->min_p = 0.05f;
    opts->repeat_penalty = 1.0f;
    opts->repeat_last_n = 64;
    opts->seed = 0;
}

static uint64_t ft_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t ft_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t ft_xoshiro_next(uint64_t *s)
{
    const uint64_t result = ft_rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = ft_rotl(s[3], 45);
    return result;
}

/* Uniform in [0, 1), 53 random bits. */
static double ft_sampler_uniform(ft_sampler_t *s)
{
    return (double)(ft_xoshiro_next(s->rng) >> 11) * 0x1.0p-53;
}

FT_WARN_UNUSED static ft_status_t ft_sampler_check(const ft_sampler_options_t *o, uint32_t n_vocab)
{
    if (n_vocab == 0 || n_vocab > INT32_MAX)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "sampler: vocabulary of %u tokens",
                              n_vocab);
    if (isnan(o->temperature) || isinf(o->temperature))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "sampler: temperature %g",
                              o->temperature);
    if (!(o->top_p >= 0.0f))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "sampler: top_p %g, expected 0..1 (1: off)", o->top_p);
    if (!(o->min_p >= 0.0f && o->min_p <= 1.0f))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "sampler: min_p %g, expected 0..1 (0: off)", o->min_p);
    if (!(o->repeat_penalty > 0.0f) || isinf(o->repeat_penalty))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "sampler: repeat_penalty %g, expected > 0 (1: off)",
                              o->repeat_penalty);
    return FT_OK;
}

ft_status_t ft_sampler_create(const ft_sampler_options_t *opts, uint32_t n_vocab,
                              ft_sampler_t **out_sampler)
{
    *out_sampler = NULL;
    ft_sampler_options_t o;
    if (opts)
        o = *opts;
    else
        ft_sampler_options_init(&o);
    ft_status_t st = ft_sampler_check(&o, n_vocab);
    if (st) return st;
    ft_sampler_t *s = calloc(1, sizeof(*s));
    if (!s) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "sampler");
    s->opts = o;
    s->n_vocab = n_vocab;
    s->cand = malloc((size_t)n_vocab * sizeof(*s->cand));
    s->seen = calloc(n_vocab, sizeof(*s->seen));
    if (!s->cand || !s->seen) {
        ft_sampler_destroy(s);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "sampler: vocabulary of %u tokens", n_vocab);
    }
    uint64_t x = o.seed;
    for (int i = 0; i < 4; i++)
        s->rng[i] = ft_splitmix64(&x);
    *out_sampler = s;
    return FT_OK;
}

void ft_sampler_destroy(ft_sampler_t *s)
{
    if (!s) return;
    free(s->cand);
    free(s->seen);
    free(s);
}

/* Copies the logits into the candidates (cand[i].id == i), NaN as -inf
 * and +inf as the largest float so that softmax stays finite. */
static void ft_sampler_load(ft_sampler_t *s, const float *logits)
{
    for (uint32_t i = 0; i < s->n_vocab; i++) {
        float l = logits[i];
        if (isnan(l))
            l = -INFINITY;
        else if (l > FLT_MAX)
            l = FLT_MAX;
        s->cand[i].logit = l;
        s->cand[i].id = (int32_t)i;
    }
}

static void ft_sampler_penalize(ft_sampler_t *s, const int32_t *history, uint32_t n_history)
{
    const float penalty = s->opts.repeat_penalty;
    if (penalty == 1.0f || s->opts.repeat_last_n == 0 || !history || n_history == 0) return;
    if (++s->stamp == 0) { /* wrapped after 2^32 calls: forget old stamps */
        memset(s->seen, 0, (size_t)s->n_vocab * sizeof(*s->seen));
        s->stamp = 1;
    }
    const uint32_t n = n_history < s->opts.repeat_last_n ? n_history : s->opts.repeat_last_n;
    for (uint32_t i = n_history - n; i < n_history; i++) {
        const int32_t id = history[i];
        if (id < 0 || (uint32_t)id >= s->n_vocab || s->seen[id] == s->stamp) continue;
        s->seen[id] = s->stamp;
        float *l = &s->cand[id].logit;
        *l = *l > 0.0f ? *l / penalty : *l * penalty;
    }
}

static size_t ft_sampler_argmax(const ft_sampler_cand_t *c, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (ft_sampler_cand_before(&c[i], &c[best])) best = i;
    return best;
}

/* The kept count for top_p over c[0..n); sorts the prefix it looks at and
 * sets *sorted when that prefix is all of what is kept. */
static size_t ft_sampler_top_p(ft_sampler_cand_t *c, size_t n, float top_p, int *sorted)
{
    const float max = c[ft_sampler_argmax(c, n)].logit;
    double total = 0.0;
    for (size_t i = 0; i < n; i++)
        total += exp((double)c[i].logit - max);
    const double want = (double)top_p * total;
    size_t m = *sorted ? n : (n < FT_SAMPLER_TOP_P_FIRST ? n : FT_SAMPLER_TOP_P_FIRST);
    for (;;) {
        if (!*sorted) {
            ft_sampler_select(c, n, m);
            ft_sampler_sort(c, m);
        }
        double cum = 0.0;
        for (size_t i = 0; i < m; i++) {
            cum += exp((double)c[i].logit - max);
            if (cum >= want) {
                *sorted = 1;
                return i + 1;
            }
        }
        if (m == n) /* rounding kept the sum just short: keep everything */
            return n;
        m = m > n / 4 ? n : m * 4;
    }
}

/* The kept count for min_p: the candidates with logit >= max + ln(min_p),
 * moved to the front in their present order (a sorted prefix stays
 * sorted). */
static size_t ft_sampler_min_p(ft_sampler_cand_t *c, size_t n, float min_p)
{
    const size_t best = ft_sampler_argmax(c, n);
    const double threshold = (double)c[best].logit + log((double)min_p);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if ((double)c[i].logit >= threshold || i == best) {
            ft_sampler_cand_t t = c[k];
            c[k++] = c[i];
            c[i] = t;
        }
    }
    return k;
}

/* Softmax at temperature t over c[0..n) and one draw. */
static int32_t ft_sampler_draw(ft_sampler_t *s, const ft_sampler_cand_t *c, size_t n, float t)
{
    const float max = c[ft_sampler_argmax(c, n)].logit;
    double total = 0.0;
    for (size_t i = 0; i < n; i++)
        total += exp(((double)c[i].logit - max) / t);
    if (!(total > 0.0) || isinf(total)) return c[ft_sampler_argmax(c, n)].id;
    const double u = ft_sampler_uniform(s) * total;
    double cum = 0.0;
    for (size_t i = 0; i < n; i++) {
        cum += exp(((double)c[i].logit - max) / t);
        if (u < cum) return c[i].id;
    }
    return c[n - 1].id; /* u fell into the rounding gap at the top */
}

int32_t ft_sampler_sample(ft_sampler_t *s, const float *logits, const int32_t *history,
                          uint32_t n_history)
{
    if (!s || !logits) return -1;
    ft_sampler_load(s, logits);
    ft_sampler_penalize(s, history, n_history);
    size_t n = s->n_vocab;
    if (s->opts.temperature <= 0.0f) return s->cand[ft_sampler_argmax(s->cand, n)].id;
    int sorted = 0;
    if (s->opts.top_k > 0 && s->opts.top_k < n) {
        ft_sampler_select(s->cand, n, s->opts.top_k);
        n = s->opts.top_k;
        ft_sampler_sort(s->cand, n);
        sorted = 1;
    }
    if (s->opts.top_p < 1.0f) n = ft_sampler_top_p(s->cand, n, s->opts.top_p, &sorted);
    if (s->opts.min_p > 0.0f) n = ft_sampler_min_p(s->cand, n, s->opts.min_p);
    return ft_sampler_draw(s, s->cand, n, s->opts.temperature);
}
