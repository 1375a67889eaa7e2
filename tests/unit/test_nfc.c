/* NFC (runtime/text/nfc.c) against the Unicode Consortium's own
 * conformance data, NormalizationTest.txt of Debian's unicode-data (the
 * release the tables are generated from):
 *  - every line of every part: c2 == NFC(c1) == NFC(c2) == NFC(c3),
 *    c4 == NFC(c4) == NFC(c5), and c4 == NFKC(c1..c5);
 *  - every code point not listed in part 1 is its own NFC and NFKC;
 *  - the quick check never says "already NFC" of a text NFC changes;
 *  - pseudo-random strings of combining marks, Hangul jamo and syllables,
 *    and the code points of the test file: NFC's output is valid UTF-8,
 *    NFC is idempotent, and NFC of a string split in two starter-led
 *    halves is the halves' NFC put together; NFKC is idempotent too;
 *  - invalid UTF-8 is refused with its offset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/text/nfc.h"
#include "../../runtime/text/utf8_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NORM_TEST FT_UNICODE_DATA_DIR "/NormalizationTest.txt.bz2"

/* Code points seen in the test file, for the random strings. */
static uint32_t *g_cps;
static size_t g_n_cps, g_cap_cps;
static uint8_t *g_in_part1; /* [0x110000] listed in part 1 */

static void add_cp(uint32_t cp)
{
    if (g_n_cps == g_cap_cps) {
        g_cap_cps = g_cap_cps ? g_cap_cps * 2 : 4096;
        g_cps = realloc(g_cps, g_cap_cps * sizeof(*g_cps));
        assert_non_null(g_cps);
    }
    g_cps[g_n_cps++] = cp;
}

/* A field of hex code points separated by spaces -> UTF-8 in out. */
static size_t field_utf8(const char *f, char *out, size_t cap, int record)
{
    size_t n = 0;
    while (*f) {
        char *end;
        unsigned long cp = strtoul(f, &end, 16);
        assert_true(end != f && cp <= 0x10ffff);
        assert_true(n + 4 < cap);
        n += ft_utf8_put((uint32_t)cp, (unsigned char *)out + n);
        if (record) add_cp((uint32_t)cp);
        f = end;
        while (*f == ' ')
            f++;
    }
    out[n] = 0;
    return n;
}

/* NFC(s) (kc: NFKC(s)) must be want; returns 0 and prints the line
 * otherwise. */
static int nfc_is(int kc, const char *s, size_t n, const char *want, size_t wn, unsigned line,
                  int col)
{
    const char *form = kc ? "NFKC" : "NFC";
    char *out;
    size_t on;
    ft_status_t st = kc ? ft_nfkc(s, n, &out, &on) : ft_nfc(s, n, &out, &on);
    if (st) fail_msg("line %u column %d: %s", line, col, ft_status_message(st));
    const int ok = on == wn && memcmp(out, want, wn) == 0;
    if (!ok)
        print_error("NormalizationTest.txt line %u: %s(c%d) is not the %s column\n", line, form,
                    col, form);
    if ((kc ? ft_nfkc_quick_check(s, n) : ft_nfc_quick_check(s, n)) &&
        !(on == n && memcmp(out, s, n) == 0))
        fail_msg("line %u column %d: the quick check says %s but %s changes it", line, col, form,
                 form);
    free(out);
    return ok;
}

static void test_conformance_file(void **state)
{
    (void)state;
    FILE *f = popen("bzcat " NORM_TEST, "r");
    assert_non_null(f);
    g_in_part1 = calloc(0x110000, 1);
    assert_non_null(g_in_part1);
    char line[4096], c[5][1024];
    size_t cl[5];
    unsigned ln = 0, n_lines = 0, n_bad = 0, part = 0;
    while (fgets(line, sizeof(line), f)) {
        ln++;
        if (line[0] == '#' || line[0] == '\n') continue;
        if (line[0] == '@') {
            part = (unsigned)atoi(line + 5);
            continue;
        }
        char *p = line;
        for (int k = 0; k < 5; k++) {
            char *semi = strchr(p, ';');
            assert_non_null(semi);
            *semi = 0;
            cl[k] = field_utf8(p, c[k], sizeof(c[k]), k == 0);
            p = semi + 1;
        }
        if (part == 1) {
            uint32_t cp;
            assert_int_not_equal(ft_utf8_next((const unsigned char *)c[0], cl[0], &cp), 0);
            g_in_part1[cp] = 1;
        }
        for (int k = 0; k < 3; k++)
            n_bad += !nfc_is(0, c[k], cl[k], c[1], cl[1], ln, k + 1);
        for (int k = 3; k < 5; k++)
            n_bad += !nfc_is(0, c[k], cl[k], c[3], cl[3], ln, k + 1);
        for (int k = 0; k < 5; k++)
            n_bad += !nfc_is(1, c[k], cl[k], c[3], cl[3], ln, k + 1);
        n_lines++;
    }
    assert_int_equal(pclose(f), 0);
    print_message("NormalizationTest.txt: %u lines, %u NFC/NFKC mismatches\n", n_lines, n_bad);
    assert_true(n_lines > 15000); /* the file was read, not skipped */
    assert_int_equal(n_bad, 0);
    /* Everything else is its own NFC and NFKC (surrogates are not text). */
    unsigned n_other = 0;
    for (uint32_t cp = 1; cp < 0x110000; cp++) {
        if (g_in_part1[cp] || (cp >= 0xd800 && cp <= 0xdfff)) continue;
        char s[5], *out;
        size_t n = ft_utf8_put(cp, (unsigned char *)s), on;
        ft_status_t st = ft_nfc(s, n, &out, &on);
        if (st) fail_msg("U+%04X: %s", cp, ft_status_message(st));
        if (on != n || memcmp(out, s, n) != 0) fail_msg("U+%04X is not its own NFC", cp);
        free(out);
        st = ft_nfkc(s, n, &out, &on);
        if (st) fail_msg("U+%04X: %s", cp, ft_status_message(st));
        if (on != n || memcmp(out, s, n) != 0) fail_msg("U+%04X is not its own NFKC", cp);
        free(out);
        n_other++;
    }
    assert_true(n_other > 1000000);
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng % n);
}

static uint32_t random_cp(void)
{
    switch (rnd(6)) {
    case 0:
        return 'a' + rnd(26);
    case 1:
        return 0x300 + rnd(0x70); /* combining diacritics */
    case 2:
        return 0x1100 + rnd(0x100); /* Hangul jamo */
    case 3:
        return 0xac00 + rnd(11172); /* Hangul syllables */
    default:
        return g_n_cps ? g_cps[rnd((uint32_t)g_n_cps)] : 0x41;
    }
}

static void test_random_strings(void **state)
{
    (void)state;
    for (int iter = 0; iter < 20000; iter++) {
        char s[256];
        size_t n = 0, split = 0;
        const int k = 1 + (int)rnd(12);
        for (int i = 0; i < k; i++) {
            if (i == k / 2) split = n;
            n += ft_utf8_put(random_cp(), (unsigned char *)s + n);
        }
        char *a, *b;
        size_t an, bn, bad;
        ft_status_t st = ft_nfc(s, n, &a, &an);
        if (st) fail_msg("%s", ft_status_message(st));
        if (!ft_utf8_validate(a, an, &bad))
            fail_msg("NFC output is not valid UTF-8 at byte %zu", bad);
        assert_true(an <= 3 * n);
        assert_int_equal(a[an], 0);
        st = ft_nfc(a, an, &b, &bn);
        if (st) fail_msg("%s", ft_status_message(st));
        if (bn != an || memcmp(a, b, an) != 0)
            fail_msg("NFC is not idempotent (iteration %d)", iter);
        free(b);
        char *k1, *k2;
        size_t kn1, kn2;
        assert_null(ft_nfkc(s, n, &k1, &kn1));
        if (!ft_utf8_validate(k1, kn1, &bad)) fail_msg("NFKC output is not valid UTF-8");
        assert_null(ft_nfkc(k1, kn1, &k2, &kn2));
        if (kn2 != kn1 || memcmp(k1, k2, kn1) != 0)
            fail_msg("NFKC is not idempotent (iteration %d)", iter);
        free(k1);
        free(k2);
        /* Split before an ASCII letter (a starter that composes with
         * nothing before it): the halves normalize independently. */
        char t[260];
        memcpy(t, s, split);
        t[split] = 'q';
        memcpy(t + split + 1, s + split, n - split);
        char *h1, *h2, *whole;
        size_t n1, n2, nw;
        assert_null(ft_nfc(t, split + 1, &h1, &n1));
        assert_null(ft_nfc(t + split + 1, n - split, &h2, &n2));
        assert_null(ft_nfc(t, n + 1, &whole, &nw));
        if (nw != n1 + n2 || memcmp(whole, h1, n1) != 0 || memcmp(whole + n1, h2, n2) != 0)
            fail_msg("NFC of a string split at a starter differs (iteration %d)", iter);
        free(h1);
        free(h2);
        free(whole);
        free(a);
    }
}

static void test_known_forms(void **state)
{
    (void)state;
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"e\xcc\x81", "\xc3\xa9"},                                /* e + acute -> é */
        {"\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8", "\xea\xb0\x81"}, /* jamo G A G -> 각 */
        {"\xe2\x84\xab", "\xc3\x85"},                             /* ANGSTROM SIGN -> Å */
        {"\xe0\xa5\x98", "\xe0\xa4\x95\xe0\xa4\xbc"},             /* U+0958 excluded: stays apart */
        {"a\xcc\xa3\xcc\x87", "\xe1\xba\xa1\xcc\x87"},            /* a + dot below + dot above */
        {"a\xcc\x87\xcc\xa3", "\xe1\xba\xa1\xcc\x87"},            /* reordered first */
        {"", ""},
        {"plain ascii", "plain ascii"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *out;
        size_t on;
        assert_null(ft_nfc(cases[i].in, strlen(cases[i].in), &out, &on));
        assert_int_equal(on, strlen(cases[i].want));
        assert_memory_equal(out, cases[i].want, on);
        free(out);
    }
    /* A long run of marks in alternating classes (the sort that is not
     * insertion): a + (U+0301 U+0323) x 500 is U+1EA1 (a with dot below),
     * then 499 dots below (220) before the 500 acutes (230). */
    {
        const size_t pairs = 500;
        char *in = malloc(1 + 4 * pairs), *want = malloc(3 + 4 * pairs);
        assert_true(in && want);
        in[0] = 'a';
        for (size_t i = 0; i < pairs; i++)
            memcpy(in + 1 + 4 * i, "\xcc\x81\xcc\xa3", 4);
        memcpy(want, "\xe1\xba\xa1", 3);
        for (size_t i = 0; i < pairs - 1; i++)
            memcpy(want + 3 + 2 * i, "\xcc\xa3", 2);
        for (size_t i = 0; i < pairs; i++)
            memcpy(want + 3 + 2 * (pairs - 1) + 2 * i, "\xcc\x81", 2);
        char *out;
        size_t on;
        assert_null(ft_nfc(in, 1 + 4 * pairs, &out, &on));
        assert_int_equal(on, 3 + 2 * (pairs - 1) + 2 * pairs);
        assert_memory_equal(out, want, on);
        free(out);
        free(in);
        free(want);
    }
    /* 400 000 marks in a row: n log n, not n squared (seconds otherwise) */
    {
        const size_t n_marks = 400000;
        char *in = malloc(2 * n_marks);
        assert_non_null(in);
        for (size_t i = 0; i < n_marks; i++)
            memcpy(in + 2 * i, i % 2 ? "\xcc\xa3" : "\xcc\x81", 2);
        char *out;
        size_t on;
        assert_null(ft_nfc(in, 2 * n_marks, &out, &on));
        assert_int_equal(on, 2 * n_marks);
        assert_memory_equal(out + n_marks, "\xcc\x81", 2); /* the acutes come second */
        free(out);
        free(in);
    }
    assert_true(ft_nfc_quick_check("plain \xc3\xa9", 8));
    assert_false(ft_nfc_quick_check("e\xcc\x81", 3));
    char *out = (char *)1;
    size_t on = 1;
    ft_status_t st = ft_nfc("ab\xff", 3, &out, &on);
    assert_non_null(st);
    assert_non_null(strstr(ft_status_message(st), "byte offset 2"));
    assert_null(out);
    ft_status_free(st);
}

static int teardown(void **state)
{
    (void)state;
    free(g_cps);
    free(g_in_part1);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_forms),
        cmocka_unit_test(test_conformance_file),
        cmocka_unit_test(test_random_strings),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
