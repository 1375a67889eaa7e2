/* Sampling: greedy, top-k/top-p/min-p cuts on crafted logits, the
 * repetition penalty, seeding, and the drawn distribution; the serving
 * fields: logit bias and bans, presence and frequency penalties against a
 * hand-computed distribution, which tokens they count, per-request seeds
 * (reproducible, independent of other samplers), and log-probabilities
 * against a float64 log-softmax. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "freetoken.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static ft_sampler_options_t opts(float temperature, uint32_t top_k, float top_p, float min_p)
{
    ft_sampler_options_t o;
    ft_sampler_options_init(&o);
    o.temperature = temperature;
    o.top_k = top_k;
    o.top_p = top_p;
    o.min_p = min_p;
    return o;
}

static ft_sampler_t *make(const ft_sampler_options_t *o, uint32_t n_vocab)
{
    ft_sampler_t *s = NULL;
    ft_status_t st = ft_sampler_create(o, n_vocab, &s);
    if (st) fail_msg("sampler: %s", ft_status_message(st));
    return s;
}

/* counts[id] over n draws; returns the sampler to its caller's seed path */
static void draw_counts(ft_sampler_t *s, const float *logits, uint32_t n_vocab, int n,
                        uint32_t *counts)
{
    memset(counts, 0, n_vocab * sizeof(*counts));
    for (int i = 0; i < n; i++) {
        int32_t id = ft_sampler_sample(s, logits, NULL, 0);
        assert_true(id >= 0 && (uint32_t)id < n_vocab);
        counts[id]++;
    }
}

static void test_defaults(void **state)
{
    (void)state;
    ft_sampler_options_t o;
    ft_sampler_options_init(&o);
    assert_true(o.temperature == 0.8f && o.top_k == 40 && o.top_p == 0.95f && o.min_p == 0.05f);
    assert_true(o.repeat_penalty == 1.0f && o.repeat_last_n == 64 && o.seed == 0);
}

static void test_greedy(void **state)
{
    (void)state;
    ft_sampler_options_t o = opts(0.0f, 40, 0.95f, 0.05f);
    ft_sampler_t *s = make(&o, 5);
    const float logits[] = {1.0f, 5.0f, 3.0f, 5.0f, -2.0f};
    for (int i = 0; i < 10; i++)
        assert_int_equal(ft_sampler_sample(s, logits, NULL, 0), 1); /* tie: lowest id */
    const float with_nan[] = {NAN, 0.5f, 0.25f, NAN, 0.0f};
    assert_int_equal(ft_sampler_sample(s, with_nan, NULL, 0), 1);
    assert_int_equal(ft_sampler_sample(s, NULL, NULL, 0), -1);
    ft_sampler_destroy(s);
    o.temperature = -1.0f; /* any temperature <= 0 */
    s = make(&o, 5);
    assert_int_equal(ft_sampler_sample(s, logits, NULL, 0), 1);
    ft_sampler_destroy(s);
}

static uint64_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

/* top_k 1 at any temperature picks exactly what greedy picks, ties too. */
static void test_top_k_one_is_greedy(void **state)
{
    (void)state;
    enum { N = 1000 };
    float logits[N];
    ft_sampler_options_t og = opts(0.0f, 0, 1.0f, 0.0f);
    ft_sampler_options_t o1 = opts(1.5f, 1, 1.0f, 0.0f);
    o1.seed = 77;
    ft_sampler_t *g = make(&og, N), *k1 = make(&o1, N);
    uint64_t x = 5;
    for (int t = 0; t < 100; t++) {
        for (int i = 0; i < N; i++) /* coarse values: many ties */
            logits[i] = (float)(lcg(&x) % 64) * 0.25f - 8.0f;
        assert_int_equal(ft_sampler_sample(k1, logits, NULL, 0),
                         ft_sampler_sample(g, logits, NULL, 0));
    }
    ft_sampler_destroy(g);
    ft_sampler_destroy(k1);
}

static int cmp_desc(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* top_k keeps exactly the k best: at a huge temperature (near uniform
 * over what is kept) every kept id shows up and nothing else does. */
static void test_top_k_set(void **state)
{
    (void)state;
    enum { N = 5000, K = 10 };
    float *logits = malloc(N * sizeof(float)), *sorted = malloc(N * sizeof(float));
    uint32_t *counts = malloc(N * sizeof(uint32_t));
    uint64_t x = 11;
    for (int i = 0; i < N; i++)
        logits[i] = (float)(lcg(&x) % 100000) * 1e-3f; /* distinct enough */
    memcpy(sorted, logits, N * sizeof(float));
    qsort(sorted, N, sizeof(float), cmp_desc);
    assert_true(sorted[K - 1] > sorted[K]); /* the cut is well defined */
    ft_sampler_options_t o = opts(1e6f, K, 1.0f, 0.0f);
    ft_sampler_t *s = make(&o, N);
    draw_counts(s, logits, N, 2000, counts);
    for (int i = 0; i < N; i++) {
        if (logits[i] >= sorted[K - 1])
            assert_true(counts[i] > 100); /* ~200 expected */
        else
            assert_int_equal(counts[i], 0);
    }
    ft_sampler_destroy(s);
    free(logits);
    free(sorted);
    free(counts);
}

/* Probabilities 0.5, 0.3, 0.15, 0.05 (logits are their logs). */
static const float g_p4[] = {0.5f, 0.3f, 0.15f, 0.05f};

static void log_probs(const float *p, float *logits, int n)
{
    for (int i = 0; i < n; i++)
        logits[i] = logf(p[i]);
}

static void expect_support(const ft_sampler_options_t *o, const int *want, int n_draws)
{
    float logits[4];
    log_probs(g_p4, logits, 4);
    ft_sampler_t *s = make(o, 4);
    uint32_t counts[4];
    draw_counts(s, logits, 4, n_draws, counts);
    for (int i = 0; i < 4; i++) {
        if (want[i] && counts[i] == 0)
            fail_msg("id %d never drawn (top_p %g min_p %g)", i, o->top_p, o->min_p);
        if (!want[i] && counts[i] != 0)
            fail_msg("id %d drawn %u times (top_p %g min_p %g)", i, counts[i], o->top_p, o->min_p);
    }
    ft_sampler_destroy(s);
}

static void test_top_p(void **state)
{
    (void)state;
    /* cumulative 0.5, 0.8, 0.95, 1.0: the prefix that first reaches p */
    ft_sampler_options_t o = opts(1.0f, 0, 0.75f, 0.0f);
    expect_support(&o, (const int[]){1, 1, 0, 0}, 2000);
    o.top_p = 0.85f;
    expect_support(&o, (const int[]){1, 1, 1, 0}, 2000);
    o.top_p = 0.4f;
    expect_support(&o, (const int[]){1, 0, 0, 0}, 500);
    o.top_p = 0.0f; /* always keeps one */
    expect_support(&o, (const int[]){1, 0, 0, 0}, 500);
    o.top_p = 1.0f; /* off */
    expect_support(&o, (const int[]){1, 1, 1, 1}, 2000);
}

/* top_p without top_k over a wide flat distribution: the sorted prefix
 * grows (64, 256, 1024, 4096, all) until it holds 90% of the mass. */
static void test_top_p_wide(void **state)
{
    (void)state;
    enum { N = 5000 };
    float *logits = calloc(N, sizeof(float));
    uint32_t *counts = malloc(N * sizeof(uint32_t));
    ft_sampler_options_t o = opts(1.0f, 0, 0.9f, 0.0f);
    ft_sampler_t *s = make(&o, N);
    draw_counts(s, logits, N, 1000, counts);
    uint32_t max_id = 0;
    for (uint32_t i = 0; i < N; i++) {
        if (counts[i]) max_id = i;
        if (i >= 4500) /* equal logits: the lowest ids come first */
            assert_int_equal(counts[i], 0);
    }
    assert_true(max_id > 3500); /* (3500 / 4500)^1000: never by chance */
    ft_sampler_destroy(s);
    free(logits);
    free(counts);
}

static void test_min_p(void **state)
{
    (void)state;
    /* min_p 0.2 of the best 0.5 is 0.1: 0.05 goes */
    ft_sampler_options_t o = opts(1.0f, 0, 1.0f, 0.2f);
    expect_support(&o, (const int[]){1, 1, 1, 0}, 2000);
    o.min_p = 0.5f; /* 0.25: only 0.5 and 0.3 stay */
    expect_support(&o, (const int[]){1, 1, 0, 0}, 2000);
    o.min_p = 1.0f;
    expect_support(&o, (const int[]){1, 0, 0, 0}, 500);
    /* after top_k 3 and top_p 0.75 (cut to 2), min_p 0.7 keeps just one */
    o = opts(1.0f, 3, 0.75f, 0.7f);
    expect_support(&o, (const int[]){1, 0, 0, 0}, 500);
}

static void test_repeat_penalty(void **state)
{
    (void)state;
    ft_sampler_options_t o = opts(0.0f, 0, 1.0f, 0.0f);
    o.repeat_penalty = 1.5f;
    o.repeat_last_n = 2;
    ft_sampler_t *s = make(&o, 4);
    const float logits[] = {2.0f, 1.9f, -1.0f, -1.1f};
    assert_int_equal(ft_sampler_sample(s, logits, NULL, 0), 0);
    /* 2.0 / 1.5 = 1.33 < 1.9 */
    assert_int_equal(ft_sampler_sample(s, logits, (const int32_t[]){0}, 1), 1);
    /* only the last repeat_last_n = 2 ids count */
    assert_int_equal(ft_sampler_sample(s, logits, (const int32_t[]){0, 3, 3}, 3), 0);
    /* negative logits are multiplied: -1.0 * 1.5 = -1.5 < -1.1 */
    const float neg[] = {-5.0f, -5.0f, -1.0f, -1.1f};
    assert_int_equal(ft_sampler_sample(s, neg, (const int32_t[]){2}, 1), 3);
    /* each distinct id once, however often it repeats: 2 / 1.5 = 1.33 > 1 */
    const float two[] = {2.0f, 1.0f, 0.0f, 0.0f};
    assert_int_equal(ft_sampler_sample(s, two, (const int32_t[]){0, 0}, 2), 0);
    /* out-of-range history ids are an error (-1 from the legacy call);
     * the logits are not modified */
    assert_int_equal(ft_sampler_sample(s, logits, (const int32_t[]){-3, 99}, 2), -1);
    ft_sample_t r;
    ft_status_t st = ft_sampler_next(s, logits, (const int32_t[]){1, 99}, 2, &r);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ft_status_message(st), "history[1] = 99"));
    ft_status_free(st);
    assert_true(logits[0] == 2.0f);
    ft_sampler_destroy(s);

    /* sampled (temperature > 0): the penalized id loses probability */
    o = opts(1.0f, 0, 1.0f, 0.0f);
    o.repeat_penalty = 4.0f;
    s = make(&o, 2);
    const float even[] = {1.0f, 1.0f};
    uint32_t n0 = 0;
    for (int i = 0; i < 2000; i++)
        n0 += ft_sampler_sample(s, even, (const int32_t[]){0}, 1) == 0;
    /* logit 0.25 against 1.0: p0 = 1 / (1 + e^0.75) = 0.32 */
    assert_true(n0 > 550 && n0 < 730);
    ft_sampler_destroy(s);
}

static void test_seeds(void **state)
{
    (void)state;
    enum { N = 100, DRAWS = 200 };
    float logits[N];
    for (int i = 0; i < N; i++)
        logits[i] = 0.01f * (float)i;
    ft_sampler_options_t o = opts(1.0f, 0, 1.0f, 0.0f);
    int32_t a[DRAWS], b[DRAWS], c[DRAWS];
    o.seed = 42;
    ft_sampler_t *s1 = make(&o, N), *s2 = make(&o, N);
    o.seed = 43;
    ft_sampler_t *s3 = make(&o, N);
    int n_diff = 0;
    for (int i = 0; i < DRAWS; i++) {
        a[i] = ft_sampler_sample(s1, logits, NULL, 0);
        b[i] = ft_sampler_sample(s2, logits, NULL, 0);
        c[i] = ft_sampler_sample(s3, logits, NULL, 0);
        n_diff += a[i] != c[i];
    }
    assert_memory_equal(a, b, sizeof(a));
    assert_true(n_diff > DRAWS / 2);
    ft_sampler_destroy(s1);
    ft_sampler_destroy(s2);
    ft_sampler_destroy(s3);
}

/* Draw counts against expected probabilities: each within 5 standard
 * deviations, and Pearson's chi-square below the 0.1% critical value for
 * 3 degrees of freedom (16.27). The seed is fixed, so this is exact. */
static void expect_distribution(const float *logits, float temperature, const double *p,
                                uint64_t seed)
{
    enum { DRAWS = 20000 };
    ft_sampler_options_t o = opts(temperature, 0, 1.0f, 0.0f);
    o.seed = seed;
    ft_sampler_t *s = make(&o, 4);
    uint32_t counts[4];
    draw_counts(s, logits, 4, DRAWS, counts);
    double chi2 = 0.0;
    for (int i = 0; i < 4; i++) {
        const double e = DRAWS * p[i], sd = sqrt(DRAWS * p[i] * (1 - p[i]));
        if (fabs(counts[i] - e) > 5 * sd)
            fail_msg("id %d: %u draws, expected %.0f +- %.0f", i, counts[i], e, 5 * sd);
        chi2 += (counts[i] - e) * (counts[i] - e) / e;
    }
    if (chi2 > 16.27) fail_msg("chi-square %.2f over 16.27", chi2);
    ft_sampler_destroy(s);
}

static void test_distribution(void **state)
{
    (void)state;
    const double p[] = {0.1, 0.2, 0.3, 0.4};
    float logits[4];
    for (int i = 0; i < 4; i++)
        logits[i] = (float)log(p[i]) + 3.0f; /* a shift changes nothing */
    expect_distribution(logits, 1.0f, p, 1);
    expect_distribution(logits, 1.0f, p, 2);
    /* temperature 0.5 squares the probabilities: 1, 4, 9, 16 over 30 */
    const double p2[] = {1.0 / 30, 4.0 / 30, 9.0 / 30, 16.0 / 30};
    expect_distribution(logits, 0.5f, p2, 3);
}

static void test_create_refusals(void **state)
{
    (void)state;
    ft_sampler_t *s = (ft_sampler_t *)&s;
    ft_sampler_options_t o = opts(1.0f, 0, 1.0f, 0.0f);
    ft_status_t st = ft_sampler_create(&o, 0, &s);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    assert_null(s);
    ft_status_free(st);
    for (int i = 0; i < 6; i++) {
        o = opts(1.0f, 0, 1.0f, 0.0f);
        switch (i) {
        case 0:
            o.temperature = NAN;
            break;
        case 1:
            o.temperature = INFINITY;
            break;
        case 2:
            o.top_p = NAN;
            break;
        case 3:
            o.min_p = 2.0f;
            break;
        case 4:
            o.repeat_penalty = 0.0f;
            break;
        default:
            o.repeat_penalty = -1.0f;
            break;
        }
        st = ft_sampler_create(&o, 10, &s);
        if (ft_status_code(st) != FT_STATUS_INVALID_ARGUMENT)
            fail_msg("case %d: got %s", i, ft_status_message(st));
        ft_status_free(st);
    }
    assert_null(ft_sampler_create(NULL, 10, &s)); /* NULL options: defaults */
    ft_sampler_destroy(s);
}

/* ---- the serving fields ---- */

/* log-softmax of l[0..n) / t in float64 (-inf stays -inf). */
static void ref_log_softmax(const double *l, int n, double t, double *out)
{
    double max = -INFINITY;
    for (int i = 0; i < n; i++)
        if (l[i] > max) max = l[i];
    double sum = 0.0;
    for (int i = 0; i < n; i++)
        sum += exp((l[i] - max) / t);
    for (int i = 0; i < n; i++)
        out[i] = (l[i] - max) / t - log(sum);
}

/* The logprobs reported are the reference's: the token's own, and top[]
 * holding every token with probability > 0, most likely first, up to
 * n_want. The logprobs are computed in double and rounded to float once,
 * so each is within half an ulp of the float64 value (2^-24 relative) plus
 * double rounding: 1e-6 * max(1, |ref|) holds with a wide margin. */
static void expect_logprobs(const ft_sample_t *r, const double *ref, int n, uint32_t n_want)
{
    const double tol = 1e-6;
    if (!(fabs(r->logprob - ref[r->token]) <= tol * fmax(1.0, fabs(ref[r->token]))))
        fail_msg("token %d: logprob %.9g, expected %.9g", r->token, r->logprob, ref[r->token]);
    uint32_t n_finite = 0;
    for (int i = 0; i < n; i++)
        n_finite += ref[i] > -INFINITY;
    assert_int_equal(r->n_top, n_finite < n_want ? n_finite : n_want);
    for (uint32_t k = 0; k < r->n_top; k++) {
        const int32_t id = r->top[k].id;
        assert_true(id >= 0 && id < n);
        if (!(fabs(r->top[k].logprob - ref[id]) <= tol * fmax(1.0, fabs(ref[id]))))
            fail_msg("top[%u] = token %d: logprob %.9g, expected %.9g", k, id, r->top[k].logprob,
                     ref[id]);
        /* most likely first; no token outside top[] is more likely */
        if (k > 0) assert_true(r->top[k].logprob <= r->top[k - 1].logprob);
        for (int i = 0; i < n; i++) {
            int listed = 0;
            for (uint32_t j = 0; j < r->n_top; j++)
                listed |= r->top[j].id == i;
            if (!listed) assert_true(ref[i] <= ref[id]);
        }
    }
}

static ft_sample_t next_ok(ft_sampler_t *s, const float *logits, const int32_t *history,
                           uint32_t n_history)
{
    ft_sample_t r;
    memset(&r, 0xa5, sizeof(r));
    ft_status_t st = ft_sampler_next(s, logits, history, n_history, &r);
    if (st) fail_msg("%s", ft_status_message(st));
    return r;
}

/* Logit bias, a ban, presence and frequency penalties: the distribution
 * drawn from against one computed by hand. Every input is a short binary
 * fraction, so the penalized logits are exact. */
static void test_bias_penalties_by_hand(void **state)
{
    (void)state;
    const float logits[6] = {1.0f, 0.5f, -0.25f, 2.0f, 0.0f, -1.5f};
    const ft_logit_bias_t bias[] = {{3, -INFINITY}, {4, 1.5f}};
    ft_sampler_options_t o = opts(1.0f, 0, 1.0f, 0.0f);
    o.presence_penalty = 0.5f;
    o.frequency_penalty = 0.25f;
    o.logit_bias = bias;
    o.n_logit_bias = 2;
    o.top_logprobs = 6;
    ft_sampler_t *s = make(&o, 6);
    /* generated so far: token 1 twice, token 2 once (forced: accept) */
    assert_null(ft_sampler_accept(s, 1));
    assert_null(ft_sampler_accept(s, 1));
    assert_null(ft_sampler_accept(s, 2));
    /* by hand: 0: 1.0; 1: 0.5 - (0.5 + 0.25 * 2) = -0.5;
     * 2: -0.25 - (0.5 + 0.25 * 1) = -1.0; 3: banned; 4: 0.0 + 1.5 = 1.5;
     * 5: -1.5. The prompt history {0, 0, 0} does not count. */
    const double hand[6] = {1.0, -0.5, -1.0, -INFINITY, 1.5, -1.5};
    double ref[6];
    ref_log_softmax(hand, 6, 1.0, ref);
    const int32_t prompt[] = {0, 0, 0};
    ft_sample_t r = next_ok(s, logits, prompt, 3);
    expect_logprobs(&r, ref, 6, 6);
    static const int32_t order[] = {4, 0, 1, 2, 5};
    for (int k = 0; k < 5; k++)
        assert_int_equal(r.top[k].id, order[k]);
    ft_sampler_destroy(s);

    /* the same at temperature 0.5: the log-softmax of logit / 0.5 */
    o.temperature = 0.5f;
    o.top_logprobs = 3;
    s = make(&o, 6);
    assert_null(ft_sampler_accept(s, 1));
    assert_null(ft_sampler_accept(s, 1));
    assert_null(ft_sampler_accept(s, 2));
    ref_log_softmax(hand, 6, 0.5, ref);
    r = next_ok(s, logits, NULL, 0);
    expect_logprobs(&r, ref, 6, 3);
    ft_sampler_destroy(s);

    /* greedy reports the temperature-1 distribution of what it chose from */
    o.temperature = 0.0f;
    o.top_logprobs = 6;
    s = make(&o, 6);
    ref_log_softmax((const double[]){1.0, 0.5, -0.25, -INFINITY, 1.5, -1.5}, 6, 1.0, ref);
    r = next_ok(s, logits, NULL, 0);
    assert_int_equal(r.token, 4);
    expect_logprobs(&r, ref, 6, 6);
    /* now 4 was generated once: 1.5 - 0.75 = 0.75 < 1.0 */
    ref_log_softmax((const double[]){1.0, 0.5, -0.25, -INFINITY, 0.75, -1.5}, 6, 1.0, ref);
    r = next_ok(s, logits, NULL, 0);
    assert_int_equal(r.token, 0);
    expect_logprobs(&r, ref, 6, 6);
    /* reset: a new request, nothing generated */
    ft_sampler_reset(s);
    assert_int_equal(next_ok(s, logits, NULL, 0).token, 4);
    ft_sampler_destroy(s);
}

/* Sampled tokens count for the penalties (a drawn token's count goes up),
 * a ban holds over many draws, and the reported logprob is always the
 * drawn token's in the distribution of that step. */
static void test_counts_follow_draws(void **state)
{
    (void)state;
    enum { N = 8, DRAWS = 300 };
    const float logits[N] = {0.5f, 0.25f, 0.0f, -0.5f, 1.0f, 0.75f, -1.0f, 0.125f};
    const ft_logit_bias_t ban[] = {{4, -INFINITY}};
    ft_sampler_options_t o = opts(1.0f, 0, 1.0f, 0.0f);
    o.presence_penalty = 0.375f;
    o.frequency_penalty = 0.0625f;
    o.logit_bias = ban;
    o.n_logit_bias = 1;
    o.top_logprobs = 3;
    o.seed = 9;
    ft_sampler_t *s = make(&o, N);
    uint32_t count[N] = {0};
    for (int i = 0; i < DRAWS; i++) {
        double l[N], ref[N];
        for (int k = 0; k < N; k++)
            l[k] = k == 4 ? -INFINITY
                          : (double)logits[k] - (count[k] ? 0.375 : 0.0) - 0.0625 * count[k];
        ref_log_softmax(l, N, 1.0, ref);
        const ft_sample_t r = next_ok(s, logits, NULL, 0);
        assert_int_not_equal(r.token, 4);
        expect_logprobs(&r, ref, N, 3);
        count[r.token]++;
    }
    ft_sampler_destroy(s);
}

/* A per-request seed: the same seed and request give the same tokens
 * whatever other samplers do in between; other seeds give others; reset
 * starts the request again. */
static void test_seed_per_request(void **state)
{
    (void)state;
    enum { N = 50, DRAWS = 200 };
    float logits[N], other[N];
    for (int i = 0; i < N; i++) {
        logits[i] = 0.02f * (float)i;
        other[i] = -0.03f * (float)i;
    }
    ft_sampler_options_t o = opts(1.0f, 0, 1.0f, 0.0f);
    o.presence_penalty = 0.5f; /* the counts are per request too */
    o.seed = 1234;
    int32_t alone[DRAWS], mixed[DRAWS], again[DRAWS];
    ft_sampler_t *a = make(&o, N);
    for (int i = 0; i < DRAWS; i++)
        alone[i] = next_ok(a, logits, NULL, 0).token;
    ft_sampler_t *b = make(&o, N); /* same seed, another request */
    o.seed = 99;
    ft_sampler_t *c = make(&o, N), *d = NULL;
    o.seed = 1234;
    d = make(&o, N);
    int n_diff = 0;
    for (int i = 0; i < DRAWS; i++) {
        (void)next_ok(b, other, NULL, 0);
        const int32_t tc = next_ok(c, logits, NULL, 0).token;
        mixed[i] = next_ok(d, logits, NULL, 0).token;
        (void)next_ok(b, logits, NULL, 0);
        n_diff += tc != alone[i];
    }
    assert_memory_equal(alone, mixed, sizeof(alone));
    assert_true(n_diff > DRAWS / 2);
    ft_sampler_reset(a);
    for (int i = 0; i < DRAWS; i++)
        again[i] = next_ok(a, logits, NULL, 0).token;
    assert_memory_equal(alone, again, sizeof(alone));
    ft_sampler_destroy(a);
    ft_sampler_destroy(b);
    ft_sampler_destroy(c);
    ft_sampler_destroy(d);
}

/* After top_k, top_p and min_p the logprobs are those of the kept
 * candidates alone, at the temperature, on random logits. */
static void test_logprobs_after_filters(void **state)
{
    (void)state;
    enum { N = 64 };
    uint64_t x = 77;
    for (int iter = 0; iter < 60; iter++) {
        float logits[N];
        double l[N], ref[N];
        for (int i = 0; i < N; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            logits[i] = (float)((double)(x >> 11) * 0x1.0p-53 * 12.0 - 6.0);
        }
        const float t = 0.3f + 0.1f * (float)(iter % 10);
        ft_sampler_options_t o = opts(t, 0, 1.0f, 0.0f);
        o.top_logprobs = FT_SAMPLER_MAX_TOP_LOGPROBS;
        o.seed = (uint64_t)iter;
        /* which candidates each filter keeps, by sorting a copy */
        int idx[N];
        for (int i = 0; i < N; i++)
            idx[i] = i;
        for (int i = 0; i < N; i++) /* insertion sort, highest first */
            for (int j = i; j > 0 && logits[idx[j]] > logits[idx[j - 1]]; j--) {
                int tmp = idx[j];
                idx[j] = idx[j - 1];
                idx[j - 1] = tmp;
            }
        int kept = N;
        if (iter % 3 == 0) {
            o.top_k = 5 + (uint32_t)iter % 7;
            kept = (int)o.top_k;
        } else if (iter % 3 == 1) {
            o.min_p = 0.05f;
            kept = 0;
            while (kept < N && (double)logits[idx[kept]] >= (double)logits[idx[0]] + log(0.05))
                kept++;
        } else {
            o.top_p = 0.8f;
            double z = 0.0, cum = 0.0;
            for (int i = 0; i < N; i++)
                z += exp((double)logits[i] - logits[idx[0]]);
            kept = 0;
            while (kept < N && cum < 0.8 * z)
                cum += exp((double)logits[idx[kept++]] - logits[idx[0]]);
        }
        for (int i = 0; i < N; i++)
            l[i] = -INFINITY;
        for (int k = 0; k < kept; k++)
            l[idx[k]] = logits[idx[k]];
        ref_log_softmax(l, N, t, ref);
        ft_sampler_t *s = make(&o, N);
        const ft_sample_t r = next_ok(s, logits, NULL, 0);
        assert_true(ref[r.token] > -INFINITY); /* drawn from the kept ones */
        expect_logprobs(&r, ref, N, FT_SAMPLER_MAX_TOP_LOGPROBS);
        ft_sampler_destroy(s);
    }
}

static void expect_create_error(const ft_sampler_options_t *o, uint32_t n_vocab, const char *what)
{
    ft_sampler_t *s = (ft_sampler_t *)&s;
    ft_status_t st = ft_sampler_create(o, n_vocab, &s);
    if (ft_status_code(st) != FT_STATUS_INVALID_ARGUMENT || !strstr(ft_status_message(st), what))
        fail_msg("expected an error naming '%s', got %s", what, ft_status_message(st));
    assert_null(s);
    ft_status_free(st);
}

static void test_serving_refusals(void **state)
{
    (void)state;
    ft_sampler_options_t o = opts(1.0f, 0, 1.0f, 0.0f);
    o.presence_penalty = NAN;
    expect_create_error(&o, 10, "presence_penalty");
    o = opts(1.0f, 0, 1.0f, 0.0f);
    o.frequency_penalty = 2e6f;
    expect_create_error(&o, 10, "frequency_penalty");
    o = opts(1.0f, 0, 1.0f, 0.0f);
    o.top_logprobs = FT_SAMPLER_MAX_TOP_LOGPROBS + 1;
    expect_create_error(&o, 10, "top_logprobs");
    o = opts(1.0f, 0, 1.0f, 0.0f);
    o.n_logit_bias = 1;
    expect_create_error(&o, 10, "no array");
    const ft_logit_bias_t out_of_range[] = {{0, 1.0f}, {10, 1.0f}};
    o.logit_bias = out_of_range;
    o.n_logit_bias = 2;
    expect_create_error(&o, 10, "logit_bias[1] is for token 10");
    const ft_logit_bias_t twice[] = {{3, 1.0f}, {3, -1.0f}};
    o.logit_bias = twice;
    expect_create_error(&o, 10, "both for token 3");
    const ft_logit_bias_t nan_bias[] = {{3, NAN}};
    o.logit_bias = nan_bias;
    o.n_logit_bias = 1;
    expect_create_error(&o, 10, "logit_bias[0]");
    const ft_logit_bias_t plus_inf[] = {{3, INFINITY}};
    o.logit_bias = plus_inf;
    expect_create_error(&o, 10, "logit_bias[0]");

    /* everything banned: an error, and the random state is untouched */
    const ft_logit_bias_t all[] = {{0, -INFINITY}, {1, -INFINITY}};
    o = opts(1.0f, 0, 1.0f, 0.0f);
    o.logit_bias = all;
    o.n_logit_bias = 2;
    o.seed = 5;
    ft_sampler_t *s = make(&o, 3), *fresh = make(&o, 3);
    const float dead[3] = {0.0f, 1.0f, NAN};
    ft_sample_t r;
    ft_status_t st = ft_sampler_next(s, dead, NULL, 0, &r);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ft_status_message(st), "nothing to sample"));
    ft_status_free(st);
    const float live[3] = {0.0f, 0.0f, 0.0f}; /* only token 2 left: its count must be 0 */
    for (int i = 0; i < 20; i++) {
        const ft_sample_t a = next_ok(s, live, NULL, 0), b = next_ok(fresh, live, NULL, 0);
        assert_int_equal(a.token, 2);
        assert_int_equal(a.token, b.token);
        assert_true(a.logprob == 0.0f);
    }
    st = ft_sampler_accept(s, 3);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    st = ft_sampler_next(s, NULL, NULL, 0, &r);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    st = ft_sampler_next(s, live, NULL, 0, NULL);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    st = ft_sampler_next(s, live, NULL, 2, &r);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    assert_int_equal(ft_sampler_sample(NULL, live, NULL, 0), -1);
    ft_sampler_destroy(s);
    ft_sampler_destroy(fresh);
}

/* The token filter (constrained output): called first with the history;
 * what it rules out is banned even greedy, before the logit bias; the
 * logprobs are those of the distribution without the banned tokens; a
 * filter that bans everything makes sampling fail. */
typedef struct filter_rec {
    uint32_t calls, n_history;
    int32_t last;
    uint32_t ban_below; /* ids < this are banned */
} filter_rec_t;

static void ban_low(void *user, const int32_t *history, uint32_t n_history, uint8_t *allowed,
                    uint32_t n_vocab)
{
    filter_rec_t *f = user;
    f->calls++;
    f->n_history = n_history;
    f->last = n_history ? history[n_history - 1] : -1;
    for (uint32_t i = 0; i < n_vocab; i++) {
        assert_int_equal(allowed[i], 1); /* all allowed on entry */
        if (i < f->ban_below) allowed[i] = 0;
    }
}

static void test_filter(void **state)
{
    (void)state;
    filter_rec_t rec = {.ban_below = 2};
    ft_sampler_options_t o = opts(0.0f, 0, 1.0f, 0.0f);
    const ft_logit_bias_t up[] = {{1, 50.0f}};
    o.logit_bias = up;
    o.n_logit_bias = 1;
    o.filter = ban_low;
    o.filter_user = &rec;
    ft_sampler_t *s = make(&o, 4);
    const float logits[4] = {9.0f, 1.0f, 3.0f, 2.0f};
    const int32_t hist[3] = {3, 0, 2};
    ft_sample_t r = next_ok(s, logits, hist, 3);
    assert_int_equal(r.token, 2); /* 0 is the best and 1 the biased one: both banned */
    assert_int_equal(rec.calls, 1);
    assert_int_equal(rec.n_history, 3);
    assert_int_equal(rec.last, 2);
    /* greedy logprob: the log-softmax over what is left (2 and 3) */
    const double want = 3.0 - log(exp(3.0) + exp(2.0));
    assert_true(fabs(r.logprob - want) < 1e-5);
    rec.ban_below = 4;
    ft_status_t st = ft_sampler_next(s, logits, hist, 3, &r);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ft_status_message(st), "filter"));
    ft_status_free(st);
    ft_sampler_destroy(s);
    /* without the filter, the biased token */
    o.filter = NULL;
    s = make(&o, 4);
    assert_int_equal(next_ok(s, logits, hist, 3).token, 1);
    ft_sampler_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_greedy),
        cmocka_unit_test(test_top_k_one_is_greedy),
        cmocka_unit_test(test_top_k_set),
        cmocka_unit_test(test_top_p),
        cmocka_unit_test(test_top_p_wide),
        cmocka_unit_test(test_min_p),
        cmocka_unit_test(test_repeat_penalty),
        cmocka_unit_test(test_seeds),
        cmocka_unit_test(test_distribution),
        cmocka_unit_test(test_create_refusals),
        cmocka_unit_test(test_bias_penalties_by_hand),
        cmocka_unit_test(test_counts_follow_draws),
        cmocka_unit_test(test_seed_per_request),
        cmocka_unit_test(test_logprobs_after_filters),
        cmocka_unit_test(test_serving_refusals),
        cmocka_unit_test(test_filter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
