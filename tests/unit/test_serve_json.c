/* ft serve's JSON recognizer for response_format json_object
 * (runtime/serve/srv_json_filter.c), against jansson's parser: random JSON
 * objects (nested values, escapes, UTF-8, every number form, whitespace)
 * are accepted whole and at every prefix, complete only at their end; and
 * for many random one-byte mutations of them, the recognizer accepts the
 * whole text as a complete object exactly when jansson parses it as one
 * (within the recognizer's documented limits: depth, whitespace runs, no
 * whitespace after the object). Plus hand-written refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "srv_json_filter.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gen {
    char buf[8192];
    size_t n;
    uint64_t rng;
} gen_t;

static uint32_t rnd(gen_t *g, uint32_t n)
{
    g->rng = g->rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(g->rng >> 33) % n;
}

static void put(gen_t *g, const char *s)
{
    const size_t n = strlen(s);
    if (g->n + n < sizeof(g->buf)) {
        memcpy(g->buf + g->n, s, n);
        g->n += n;
    }
}

static void ws(gen_t *g)
{
    static const char *const w[] = {"", "", "", " ", "\n", "\t", "\r\n  ", "  "};
    put(g, w[rnd(g, 8)]);
}

static void string(gen_t *g)
{
    static const char *const parts[] = {"a",
                                        "key",
                                        " ",
                                        "\\\"",
                                        "\\\\",
                                        "\\/",
                                        "\\n",
                                        "\\t",
                                        "\\u00e9",
                                        "\\u20AC",
                                        "\xc3\xa9",
                                        "\xe2\x82\xac",
                                        "\xf0\x9f\x98\x80",
                                        "x y",
                                        "<",
                                        "{",
                                        "]"};
    put(g, "\"");
    for (uint32_t i = rnd(g, 5); i > 0; i--)
        put(g, parts[rnd(g, sizeof(parts) / sizeof(parts[0]))]);
    put(g, "\"");
}

static void number(gen_t *g)
{
    static const char *const nums[] = {"0",    "-0",    "7",        "42",  "-13",
                                       "0.5",  "3.25",  "-0.0",     "1e5", "2E-3",
                                       "6e+2", "1.5e3", "-9.75E+1", "100", "12345"};
    put(g, nums[rnd(g, sizeof(nums) / sizeof(nums[0]))]);
}

static void value(gen_t *g, int depth);

static void object(gen_t *g, int depth)
{
    put(g, "{");
    ws(g);
    for (uint32_t i = 0, n = depth < 4 ? rnd(g, 4) : 0; i < n; i++) {
        if (i) {
            put(g, ",");
            ws(g);
        }
        string(g);
        ws(g);
        put(g, ":");
        ws(g);
        value(g, depth + 1);
        ws(g);
    }
    put(g, "}");
}

static void value(gen_t *g, int depth)
{
    switch (rnd(g, 8)) {
    case 0:
        object(g, depth);
        break;
    case 1:
        put(g, "[");
        ws(g);
        for (uint32_t i = 0, n = depth < 4 ? rnd(g, 4) : 0; i < n; i++) {
            if (i) {
                put(g, ",");
                ws(g);
            }
            value(g, depth + 1);
            ws(g);
        }
        put(g, "]");
        break;
    case 2:
    case 3:
        string(g);
        break;
    case 4:
    case 5:
        number(g);
        break;
    default: {
        static const char *const lits[] = {"true", "false", "null"};
        put(g, lits[rnd(g, 3)]);
    }
    }
}

static int ours(const char *s, size_t n)
{
    ft_srv_json_t j;
    ft_srv_json_init(&j);
    return ft_srv_json_feed(&j, s, n) && ft_srv_json_done(&j);
}

static int theirs(const char *s, size_t n)
{
    json_error_t e;
    json_t *v = json_loadb(s, n, JSON_ALLOW_NUL, &e);
    const int ok = v && json_is_object(v);
    json_decref(v);
    return ok;
}

static void test_valid_and_prefixes(void **state)
{
    (void)state;
    gen_t g = {.rng = 1};
    for (int it = 0; it < 2000; it++) {
        g.n = 0;
        ws(&g);
        object(&g, 0);
        assert_true(theirs(g.buf, g.n));
        ft_srv_json_t j;
        ft_srv_json_init(&j);
        for (size_t i = 0; i < g.n; i++) {
            assert_false(ft_srv_json_done(&j));
            if (!ft_srv_json_feed(&j, g.buf + i, 1))
                fail_msg("refused byte %zu of %.*s", i, (int)g.n, g.buf);
        }
        assert_true(ft_srv_json_done(&j));
        /* nothing after the object, not even whitespace */
        assert_false(ft_srv_json_feed(&j, " ", 1));
    }
}

static void test_mutations_agree_with_jansson(void **state)
{
    (void)state;
    static const char alphabet[] = "{}[]\":,0123456789-+.eEtrufalsn "
                                   "\\\n\t\x01\x7f\x80\xc3\xa9\"abu/\xe0\xed\xf4\x9f\xa0\x90\x8f";
    gen_t g = {.rng = 7};
    int both = 0, neither = 0;
    for (int it = 0; it < 40000; it++) {
        g.n = 0;
        object(&g, 0);
        const size_t at = rnd(&g, (uint32_t)g.n);
        const char c = alphabet[rnd(&g, sizeof(alphabet) - 1)];
        switch (rnd(&g, 3)) {
        case 0: /* replace */
            g.buf[at] = c;
            break;
        case 1: /* insert */
            memmove(g.buf + at + 1, g.buf + at, g.n - at);
            g.buf[at] = c;
            g.n++;
            break;
        default: /* delete */
            memmove(g.buf + at, g.buf + at + 1, g.n - at - 1);
            g.n--;
        }
        if (!g.n) continue;
        const char last = g.buf[g.n - 1];
        const int trailing_ws = last == ' ' || last == '\n' || last == '\t' || last == '\r';
        const int a = ours(g.buf, g.n), b = theirs(g.buf, g.n);
        if (a && !b) fail_msg("accepted what jansson refuses: %.*s", (int)g.n, g.buf);
        if (b && !a && !trailing_ws) fail_msg("refused what jansson parses: %.*s", (int)g.n, g.buf);
        both += a && b;
        neither += !a && !b;
    }
    /* the mutations hit both sides */
    assert_true(both > 1000);
    assert_true(neither > 1000);
}

static void test_refusals(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "[1]", /* the top level is an object */
        "\"s\"",
        "1",
        "{\"a\":}",
        "{\"a\" 1}",
        "{\"a\":01}",
        "{\"a\":1.}",
        "{\"a\":-}",
        "{\"a\":.5}",
        "{\"a\":1e}",
        "{\"a\":trux}",
        "{\"a\":\"\x01\"}",
        "{\"a\":\"\\q\"}",
        "{\"a\":\"\\u12G4\"}",
        "{]",
        "{\"a\":[1}",
        "{\"a\":1,}",
        "{,}",
        "{}x",
        "{\"a\":\"\xc0\x80\"}",
        "{\"a\":\"\x80\"}",
        "{\"a\":\"\xc3\"}",
        "{\"a\":[1 2]}",
        "{'a':1}",
        "{\"a\":NaN}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (ours(bad[i], strlen(bad[i]))) fail_msg("accepted %s", bad[i]);
    /* nesting: FT_SRV_JSON_MAX_DEPTH containers, not one more */
    char deep[200] = "{\"a\":";
    size_t n = strlen(deep);
    for (int i = 1; i < FT_SRV_JSON_MAX_DEPTH; i++)
        deep[n++] = '[';
    for (int i = 1; i < FT_SRV_JSON_MAX_DEPTH; i++)
        deep[n++] = ']';
    deep[n++] = '}';
    assert_true(ours(deep, n));
    ft_srv_json_t j;
    ft_srv_json_init(&j);
    assert_true(ft_srv_json_feed(&j, deep, 5 + FT_SRV_JSON_MAX_DEPTH - 1));
    assert_false(ft_srv_json_feed(&j, "[", 1));
    /* whitespace runs */
    ft_srv_json_init(&j);
    char spaces[FT_SRV_JSON_MAX_WS + 1];
    memset(spaces, ' ', sizeof(spaces));
    assert_true(ft_srv_json_feed(&j, spaces, FT_SRV_JSON_MAX_WS));
    assert_false(ft_srv_json_feed(&j, " ", 1));
    ft_srv_json_init(&j);
    assert_true(ft_srv_json_feed(&j, "{\"k\":", 5));
    assert_true(ft_srv_json_feed(&j, spaces, FT_SRV_JSON_MAX_WS));
    assert_false(ft_srv_json_feed(&j, " ", 1));
    /* ... but not inside strings */
    ft_srv_json_init(&j);
    assert_true(ft_srv_json_feed(&j, "{\"", 2));
    for (int i = 0; i < 100; i++)
        assert_true(ft_srv_json_feed(&j, " ", 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_and_prefixes),
        cmocka_unit_test(test_mutations_agree_with_jansson),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
