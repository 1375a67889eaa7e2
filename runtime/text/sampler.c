/* Token sampling (the ft_sampler_* API in freetoken.h, which lists the
 * chain): the filters, the draw and the log-probabilities here, the logit
 * adjustments before them in sampler_penalty.c. Every buffer is made at
 * create: sampling allocates nothing. */
#include "sampler_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Top-p sorts a growing prefix (this many first, then 4x) rather than the
 * whole vocabulary, which the probability mass is rarely spread over. */
#define FT_SAMPLER_TOP_P_FIRST 64

void ft_sampler_options_init(ft_sampler_options_t *opts)
{
    opts->temperature = 0.8f;
    opts->top_k = 40;
    opts->top_p = 0.95f;
    opts->min_p = 0.05f;
    opts->repeat_penalty = 1.0f;
    opts->repeat_last_n = 64;
    opts->seed = 0;
    opts->presence_penalty = 0.0f;
    opts->frequency_penalty = 0.0f;
    opts->logit_bias = NULL;
    opts->n_logit_bias = 0;
    opts->top_logprobs = 0;
    opts->filter = NULL;
    opts->filter_user = NULL;
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
    if (o->top_logprobs > FT_SAMPLER_MAX_TOP_LOGPROBS)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "sampler: top_logprobs %u, expected 0..%d",
                              o->top_logprobs, FT_SAMPLER_MAX_TOP_LOGPROBS);
    return ft_sampler_check_penalties(o, n_vocab);
}

static void ft_sampler_seed(ft_sampler_t *s)
{
    uint64_t x = s->opts.seed;
    for (int i = 0; i < 4; i++)
        s->rng[i] = ft_splitmix64(&x);
}

ft_status_t ft_sampler_create(const ft_sampler_options_t *opts, uint32_t n_vocab,
                              ft_sampler_t **out_sampler)
{
    if (!out_sampler) return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "sampler: no out_sampler");
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
    s->count = calloc(n_vocab, sizeof(*s->count));
    s->generated = malloc((size_t)n_vocab * sizeof(*s->generated));
    s->bias = malloc((o.n_logit_bias ? o.n_logit_bias : 1) * sizeof(*s->bias));
    if (o.filter) s->allowed = malloc(n_vocab);
    if (!s->cand || !s->seen || !s->count || !s->generated || !s->bias ||
        (o.filter && !s->allowed)) {
        ft_sampler_destroy(s);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "sampler: vocabulary of %u tokens", n_vocab);
    }
    if (o.n_logit_bias) memcpy(s->bias, o.logit_bias, o.n_logit_bias * sizeof(*s->bias));
    s->opts.logit_bias = s->bias;
    ft_sampler_seed(s);
    *out_sampler = s;
    return FT_OK;
}

void ft_sampler_destroy(ft_sampler_t *s)
{
    if (!s) return;
    free(s->cand);
    free(s->seen);
    free(s->count);
    free(s->generated);
    free(s->bias);
    free(s->allowed);
    free(s);
}

void ft_sampler_reset(ft_sampler_t *s)
{
    if (!s) return;
    for (uint32_t i = 0; i < s->n_generated; i++)
        s->count[s->generated[i]] = 0;
    s->n_generated = 0;
    ft_sampler_seed(s);
}

ft_status_t ft_sampler_accept(ft_sampler_t *s, int32_t id)
{
    if (!s) return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "sampler accept: no sampler");
    if (id < 0 || (uint32_t)id >= s->n_vocab)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "sampler accept: token %d is outside the vocabulary of %u tokens", id,
                              s->n_vocab);
    ft_sampler_count(s, id);
    return FT_OK;
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

/* log sum_i exp((c[i].logit - max) / t) over c[0..n); max is the
 * highest logit, finite. */
static double ft_sampler_log_z(const ft_sampler_cand_t *c, size_t n, float max, float t)
{
    double total = 0.0;
    for (size_t i = 0; i < n; i++)
        total += exp(((double)c[i].logit - max) / t);
    return log(total); /* total >= 1: the max term is exp(0) */
}

/* One draw from the softmax at temperature t over c[0..n); returns the
 * index drawn. */
static size_t ft_sampler_draw(ft_sampler_t *s, const ft_sampler_cand_t *c, size_t n, float max,
                              double log_z, float t)
{
    const double u = ft_sampler_uniform(s) * exp(log_z);
    double cum = 0.0;
    for (size_t i = 0; i < n; i++) {
        cum += exp(((double)c[i].logit - max) / t);
        if (u < cum) return i;
    }
    return n - 1; /* u fell into the rounding gap at the top */
}

static float ft_sampler_logprob(float logit, float max, double log_z, float t)
{
    return (float)(((double)logit - max) / t - log_z);
}

/* The top_logprobs most likely of c[0..n) into out (reorders c). */
static void ft_sampler_top(ft_sampler_t *s, ft_sampler_cand_t *c, size_t n, float max,
                           double log_z, float t, ft_sample_t *out)
{
    size_t m = s->opts.top_logprobs < n ? s->opts.top_logprobs : n;
    if (m < n) ft_sampler_select(c, n, m);
    ft_sampler_sort(c, m);
    out->n_top = 0;
    for (size_t i = 0; i < m && c[i].logit != -INFINITY; i++) {
        out->top[i].id = c[i].id;
        out->top[i].logprob = ft_sampler_logprob(c[i].logit, max, log_z, t);
        out->n_top++;
    }
}

ft_status_t ft_sampler_next(ft_sampler_t *s, const float *logits, const int32_t *history,
                            uint32_t n_history, ft_sample_t *out)
{
    if (!s || !logits || !out)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "sampler: a NULL %s",
                              !s ? "sampler" : !logits ? "logits" : "out");
    ft_sampler_load(s, logits);
    if (s->opts.filter) { /* 0. the caller's constraint */
        memset(s->allowed, 1, s->n_vocab);
        s->opts.filter(s->opts.filter_user, history, n_history, s->allowed, s->n_vocab);
        for (uint32_t i = 0; i < s->n_vocab; i++)
            if (!s->allowed[i]) s->cand[i].logit = -INFINITY;
    }
    ft_status_t st = ft_sampler_penalize(s, history, n_history);
    if (st) return st;
    size_t n = s->n_vocab;
    size_t best = ft_sampler_argmax(s->cand, n);
    if (s->cand[best].logit == -INFINITY)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "sampler: nothing to sample: all %u logits are -inf or NaN after "
                              "the filter, logit_bias and penalties", s->n_vocab);
    float t = s->opts.temperature;
    if (t <= 0.0f) { /* greedy; log-probabilities at temperature 1 over all */
        t = 1.0f;
    } else {
        int sorted = 0;
        if (s->opts.top_k > 0 && s->opts.top_k < n) {
            ft_sampler_select(s->cand, n, s->opts.top_k);
            n = s->opts.top_k;
            ft_sampler_sort(s->cand, n);
            sorted = 1;
        }
        if (s->opts.top_p < 1.0f) n = ft_sampler_top_p(s->cand, n, s->opts.top_p, &sorted);
        if (s->opts.min_p > 0.0f) n = ft_sampler_min_p(s->cand, n, s->opts.min_p);
        best = ft_sampler_argmax(s->cand, n);
    }
    const float max = s->cand[best].logit;
    const double log_z = ft_sampler_log_z(s->cand, n, max, t);
    const size_t chosen =
        s->opts.temperature > 0.0f ? ft_sampler_draw(s, s->cand, n, max, log_z, t) : best;
    out->token = s->cand[chosen].id;
    out->logprob = ft_sampler_logprob(s->cand[chosen].logit, max, log_z, t);
    out->n_top = 0;
    if (s->opts.top_logprobs) ft_sampler_top(s, s->cand, n, max, log_z, t, out);
    ft_sampler_count(s, out->token);
    return FT_OK;
}

int32_t ft_sampler_sample(ft_sampler_t *s, const float *logits, const int32_t *history,
                          uint32_t n_history)
{
    ft_sample_t r;
    ft_status_t st = ft_sampler_next(s, logits, history, n_history, &r);
    if (st) {
        ft_status_free(st); /* this legacy form reports errors as -1 */
        return -1;
    }
    return r.token;
}
