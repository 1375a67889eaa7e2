/* Stop strings over streamed text: matches split across tokens, the
 * bytes held back while a stop string may be starting, several stop
 * strings, and agreement with a plain search over random splits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "freetoken.h"

#include <stdlib.h>
#include <string.h>

static ft_stop_matcher_t *make(const char *const *stops, size_t n)
{
    ft_stop_matcher_t *m = NULL;
    ft_status_t st = ft_stop_matcher_create(stops, n, &m);
    if (st) fail_msg("%s", ft_status_message(st));
    return m;
}

/* Feeds s; expects no stop and the given hold. */
static void feed_hold(ft_stop_matcher_t *m, const char *s, size_t want_hold)
{
    size_t at = 12345, hold = 999;
    assert_int_equal(ft_stop_matcher_feed(m, s, strlen(s), &at, &hold), 0);
    if (hold != want_hold) fail_msg("after '%s': hold %zu, expected %zu", s, hold, want_hold);
}

static void feed_stop(ft_stop_matcher_t *m, const char *s, size_t want_at)
{
    size_t at = 12345, hold = 999;
    assert_int_equal(ft_stop_matcher_feed(m, s, strlen(s), &at, &hold), 1);
    if (at != want_at) fail_msg("after '%s': stop at %zu, expected %zu", s, at, want_at);
}

static void test_split_across_tokens(void **state)
{
    (void)state;
    const char *stops[] = {"</s>"};
    ft_stop_matcher_t *m = make(stops, 1);
    feed_hold(m, "Hello <", 1);
    feed_hold(m, "/", 2);
    feed_hold(m, "s", 3);
    feed_stop(m, "> and more", 6);
    /* stays stopped */
    feed_stop(m, "x", 6);
    feed_stop(m, "", 6);
    ft_stop_matcher_destroy(m);

    m = make(stops, 1);
    feed_hold(m, "a </", 2);
    feed_hold(m, "b>", 0); /* not a stop after all: release */
    feed_hold(m, "<", 1);
    feed_stop(m, "/s>", 6);
    ft_stop_matcher_destroy(m);
}

static void test_several_stops(void **state)
{
    (void)state;
    const char *stops[] = {"\n\nUser:", "###"};
    ft_stop_matcher_t *m = make(stops, 2);
    feed_hold(m, "abc\n\nUs", 4);
    feed_hold(m, "er", 6);
    feed_stop(m, ":", 3);
    ft_stop_matcher_destroy(m);

    m = make(stops, 2);
    feed_hold(m, "x#", 1);
    feed_hold(m, "#", 2);
    feed_stop(m, "#", 1);
    ft_stop_matcher_destroy(m);

    /* both end on the same byte: the longer, earlier-starting one wins */
    const char *nested[] = {"b", "ab"};
    m = make(nested, 2);
    feed_stop(m, "xab", 1);
    ft_stop_matcher_destroy(m);
    /* the first to end wins */
    const char *spans[] = {"abcd", "c"};
    m = make(spans, 2);
    feed_stop(m, "abcd", 2);
    ft_stop_matcher_destroy(m);
}

/* A stop string that overlaps itself: "aab" in "aaab" needs the
 * automaton to fall back, not restart. */
static void test_self_overlap(void **state)
{
    (void)state;
    const char *stops[] = {"aab"};
    ft_stop_matcher_t *m = make(stops, 1);
    feed_hold(m, "a", 1);
    feed_hold(m, "a", 2);
    feed_hold(m, "a", 2);
    feed_stop(m, "b", 1);
    ft_stop_matcher_destroy(m);

    const char *abab[] = {"abac"};
    m = make(abab, 1);
    feed_hold(m, "ababa", 3);
    feed_stop(m, "c", 2);
    ft_stop_matcher_destroy(m);
}

static void test_none_and_refusals(void **state)
{
    (void)state;
    ft_stop_matcher_t *m = make(NULL, 0);
    feed_hold(m, "anything at all", 0);
    ft_stop_matcher_destroy(m);

    const char *empty[] = {"ok", ""};
    m = (ft_stop_matcher_t *)&m;
    ft_status_t st = ft_stop_matcher_create(empty, 2, &m);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ft_status_message(st), "stop string 1 is empty"));
    assert_null(m);
    ft_status_free(st);
    const char *null_one[] = {NULL};
    st = ft_stop_matcher_create(null_one, 1, &m);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    st = ft_stop_matcher_create(NULL, 3, &m);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
}

/* The earliest end of any stop string in text, as a plain search finds
 * it: returns its start (longest on a tie) or -1. */
static long naive_stop(const char *text, size_t len, const char *const *stops, size_t n)
{
    for (size_t end = 1; end <= len; end++) {
        long best = -1;
        for (size_t j = 0; j < n; j++) {
            const size_t sl = strlen(stops[j]);
            if (sl <= end && memcmp(text + end - sl, stops[j], sl) == 0 &&
                (best < 0 || (long)(end - sl) < best))
                best = (long)(end - sl);
        }
        if (best >= 0) return best;
    }
    return -1;
}

static void test_random_splits(void **state)
{
    (void)state;
    const char *stops[] = {"<|im_end|>", "\n\n\n", "aba"};
    uint64_t x = 3;
    char text[256];
    for (int t = 0; t < 2000; t++) {
        size_t len = 0;
        while (len < 200) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            const unsigned r = (unsigned)(x >> 40);
            if (r % 50 == 0 && len + 10 < sizeof(text)) {
                memcpy(text + len, "<|im_end", 8); /* a near miss or a hit */
                len += 8;
            } else {
                text[len++] = "ab<|\n xe>m_nd"[r % 13];
            }
        }
        const long want = naive_stop(text, len, stops, 3);
        ft_stop_matcher_t *m = make(stops, 3);
        size_t fed = 0, at = 0, hold = 0;
        int stopped = 0;
        while (fed < len && !stopped) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            size_t chunk = 1 + (size_t)((x >> 40) % 7);
            if (chunk > len - fed) chunk = len - fed;
            stopped = ft_stop_matcher_feed(m, text + fed, chunk, &at, &hold);
            fed += chunk;
            if (!stopped) {
                /* what may be shown never includes the start of a stop */
                assert_true(want < 0 || (size_t)want >= fed - hold);
            }
        }
        if (want < 0)
            assert_false(stopped);
        else if (!stopped || at != (size_t)want)
            fail_msg("case %d: stop at %zu (stopped %d), expected %ld", t, at, stopped, want);
        ft_stop_matcher_destroy(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_across_tokens), cmocka_unit_test(test_several_stops),
        cmocka_unit_test(test_self_overlap),        cmocka_unit_test(test_none_and_refusals),
        cmocka_unit_test(test_random_splits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
