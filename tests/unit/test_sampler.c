/* Sampling: greedy, top-k/top-p/min-p cuts on crafted logits, the
 * repetition penalty, seeding, and the drawn distribution. */
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
    /* out-of-range history ids are ignored; the logits are not modified */
    assert_int_equal(ft_sampler_sample(s, logits, (const int32_t[]){-3, 99}, 2), 0);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
