/* Streaming detokenization: whole UTF-8 characters only, across every
 * split of multi-byte characters; U+FFFD for invalid bytes by the Unicode
 * Standard's maximal-subpart practice (its own examples, tables 3-8 to
 * 3-11, and an independent whole-string decoder over random bytes and
 * random splits); through a tokenizer, a 4-byte emoji across three tokens,
 * <0xNN> byte-fallback tokens, bad ids; and stop strings over the detokenized stream, across tokens and
 * inside characters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "freetoken.h"
#include "../../runtime/text/byte_unicode.h"
#include "../../runtime/text/detokenizer.h"
#include "../../runtime/text/utf8_stream.h"

#include <stdlib.h>
#include <string.h>

/* ---- an independent reference: RFC 3629 and maximal subparts ---- */

/* The length of the longest prefix of s[0..n) that is a prefix of some
 * valid UTF-8 sequence, and in *complete whether it is a whole one. */
static size_t ref_prefix(const unsigned char *s, size_t n, int *complete)
{
    static const struct {
        unsigned char lead_lo, lead_hi, len, lo, hi;
    } forms[] = {
        {0x00, 0x7f, 1, 0, 0},       {0xc2, 0xdf, 2, 0x80, 0xbf}, {0xe0, 0xe0, 3, 0xa0, 0xbf},
        {0xe1, 0xec, 3, 0x80, 0xbf}, {0xed, 0xed, 3, 0x80, 0x9f}, {0xee, 0xef, 3, 0x80, 0xbf},
        {0xf0, 0xf0, 4, 0x90, 0xbf}, {0xf1, 0xf3, 4, 0x80, 0xbf}, {0xf4, 0xf4, 4, 0x80, 0x8f},
    };
    *complete = 0;
    for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
        if (s[0] < forms[f].lead_lo || s[0] > forms[f].lead_hi) continue;
        size_t k = 1;
        while (k < forms[f].len && k < n) {
            const unsigned char lo = k == 1 ? forms[f].lo : 0x80, hi = k == 1 ? forms[f].hi : 0xbf;
            if (s[k] < lo || s[k] > hi) break;
            k++;
        }
        *complete = k == forms[f].len;
        return k;
    }
    return 0;
}

/* Lossy decoding of the whole input; returns the output length. */
static size_t ref_lossy(const unsigned char *s, size_t n, unsigned char *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        int complete;
        const size_t len = ref_prefix(s + i, n - i, &complete);
        if (complete) {
            memcpy(out + k, s + i, len);
            k += len;
            i += len;
        } else {
            memcpy(out + k, "\xef\xbf\xbd", 3);
            k += 3;
            i += len ? len : 1;
        }
    }
    return k;
}

static int ref_valid(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        int complete;
        const size_t len = ref_prefix(s + i, n - i, &complete);
        if (!complete) return 0;
        i += len;
    }
    return 1;
}

/* Streams in[0..n) cut at the bits of `cuts` (bit i: a cut after byte i),
 * checking that every piece is valid UTF-8; returns the output length. */
static size_t stream_split(const unsigned char *in, size_t n, uint64_t cuts, unsigned char *out)
{
    ft_utf8_stream_t u;
    ft_utf8_stream_init(&u);
    size_t k = 0, start = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 1 < n && !((cuts >> i) & 1)) continue;
        const size_t w = ft_utf8_stream_push(&u, in + start, i + 1 - start, out + k);
        assert_true(w <= FT_UTF8_STREAM_OUT_MAX(i + 1 - start));
        if (!ref_valid(out + k, w)) fail_msg("piece at byte %zu is not valid UTF-8", start);
        k += w;
        start = i + 1;
    }
    const size_t w = ft_utf8_stream_flush(&u, out + k);
    assert_true(ref_valid(out + k, w));
    return k + w;
}

static void expect_every_split(const char *in_c, size_t n, const char *want_c, size_t n_want)
{
    const unsigned char *in = (const unsigned char *)in_c;
    unsigned char out[256];
    assert_true(n <= 20 && FT_UTF8_STREAM_OUT_MAX(n) <= sizeof(out));
    for (uint64_t cuts = 0; cuts < (1ull << (n ? n - 1 : 0)); cuts++) {
        const size_t k = stream_split(in, n, cuts, out);
        if (k != n_want || memcmp(out, want_c, k) != 0)
            fail_msg("split %llx: %zu bytes out, expected %zu", (unsigned long long)cuts, k, n_want);
    }
}

#define FFFD "\xef\xbf\xbd"
#define S(lit) lit, sizeof(lit) - 1

/* The Unicode Standard's examples (chapter 3, tables 3-8 to 3-11), in
 * every split of the input. */
static void test_unicode_examples(void **state)
{
    (void)state;
    expect_every_split(S("\x61\xf1\x80\x80\xe1\x80\xc2\x62\x80\x63\x80\xbf\x64"),
                       S("a" FFFD FFFD FFFD "b" FFFD "c" FFFD FFFD "d"));
    expect_every_split(S("\xc0\xaf\xe0\x80\xbf\xf0\x81\x82\x41"),
                       S(FFFD FFFD FFFD FFFD FFFD FFFD FFFD FFFD "A"));
    expect_every_split(S("\xed\xa0\x80\xed\xbf\xbf\xed\xaf\x41"),
                       S(FFFD FFFD FFFD FFFD FFFD FFFD FFFD FFFD "A"));
    expect_every_split(S("\xf4\x91\x92\x93\xff\x41\x80\xbf\x42"),
                       S(FFFD FFFD FFFD FFFD FFFD "A" FFFD FFFD "B"));
    expect_every_split(S("\xe1\x80\xe2\xf0\x91\x92\xf1\xbf\x41"), S(FFFD FFFD FFFD FFFD "A"));
    /* an incomplete character at the very end: one U+FFFD at flush */
    expect_every_split(S("ok\xf0\x9f\x98"), S("ok" FFFD));
    expect_every_split(S(""), S(""));
}

/* Valid text with 1-, 2-, 3- and 4-byte characters in every split: after
 * each piece the output so far is exactly the text up to the last whole
 * character fed. */
static void test_every_split_valid(void **state)
{
    (void)state;
    const unsigned char text[] = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z"; /* aé€😀z */
    const size_t n = sizeof(text) - 1;
    for (uint64_t cuts = 0; cuts < (1ull << (n - 1)); cuts++) {
        ft_utf8_stream_t u;
        ft_utf8_stream_init(&u);
        unsigned char out[64];
        size_t k = 0, start = 0;
        for (size_t i = 0; i < n; i++) {
            if (i + 1 < n && !((cuts >> i) & 1)) continue;
            k += ft_utf8_stream_push(&u, text + start, i + 1 - start, out + k);
            start = i + 1;
            /* the whole characters among text[0..start) */
            size_t whole = 0;
            for (size_t j = 0; j < start;) {
                int complete;
                const size_t len = ref_prefix(text + j, start - j, &complete);
                if (!complete) break;
                j += len;
                whole = j;
            }
            if (k != whole || memcmp(out, text, k) != 0)
                fail_msg("split %llx, after byte %zu: %zu bytes out, expected %zu",
                         (unsigned long long)cuts, i, k, whole);
        }
        assert_int_equal(ft_utf8_stream_flush(&u, out + k), 0);
    }
}

static uint64_t rng_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Random bytes (drawn mostly from lead and continuation bytes, so that
 * valid and nearly valid sequences are common) in random splits against
 * the whole-string reference. */
static void test_random_bytes(void **state)
{
    (void)state;
    static const unsigned char alphabet[] = {0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf,
                                             0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xed, 0xee,
                                             0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xfe, 0xff};
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int iter = 0; iter < 20000; iter++) {
        unsigned char in[40], want[200], got[200];
        const size_t n = rng_next(&x) % 40;
        for (size_t i = 0; i < n; i++)
            in[i] = alphabet[rng_next(&x) % sizeof(alphabet)];
        const size_t n_want = ref_lossy(in, n, want);
        const size_t n_got = stream_split(in, n, rng_next(&x), got);
        if (n_got != n_want || memcmp(got, want, n_got) != 0)
            fail_msg("iteration %d (%zu bytes): %zu bytes out, expected %zu", iter, n, n_got,
                     n_want);
    }
}

/* ---- through a tokenizer: 256 byte tokens and a few longer ones ---- */

typedef struct tiny_tok {
    ProtobufCBinaryData tokens[300];
    char spell[300][64];
    uint8_t types[300];
    uint32_t n;
    ft_tokenizer_t *tok;
} tiny_tok_t;

/* Adds a token standing for bytes b[0..n) (byte-level spelling); returns its id. */
static int32_t tiny_add(tiny_tok_t *t, const char *b, size_t n, uint8_t type)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const uint32_t cp = type == 1 ? ft_byte_unicode_encode((uint8_t)b[i]) : (uint8_t)b[i];
        if (cp < 0x80) {
            t->spell[t->n][k++] = (char)cp;
        } else {
            t->spell[t->n][k++] = (char)(0xc0 | (cp >> 6));
            t->spell[t->n][k++] = (char)(0x80 | (cp & 0x3f));
        }
    }
    t->tokens[t->n].data = (uint8_t *)t->spell[t->n];
    t->tokens[t->n].len = k;
    t->types[t->n] = type;
    return (int32_t)t->n++;
}

static int32_t id_emoji_a, id_emoji_b, id_emoji_c, id_im_end;
static int32_t id_fb_e2, id_fb_82, id_fb_ac, id_fb_f0, id_fb_bad; /* byte fallback */

static int tiny_setup(void **state)
{
    tiny_tok_t *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    for (int b = 0; b < 256; b++) {
        const char c = (char)b;
        tiny_add(t, &c, 1, 1);
    }
    /* 😀 = F0 9F 98 80: tokens F0 9F, 98 (the byte token) and 98 80 */
    id_emoji_a = tiny_add(t, S("\xf0\x9f"), 1);
    id_emoji_b = 0x98;
    id_emoji_c = tiny_add(t, S("\x98\x80"), 1);
    id_im_end = tiny_add(t, S("<|im_end|>"), 3);
    /* SentencePiece-style byte fallback (GGUF token type 6, BYTE) */
    id_fb_e2 = tiny_add(t, S("<0xE2>"), 6);
    id_fb_82 = tiny_add(t, S("<0x82>"), 6);
    id_fb_ac = tiny_add(t, S("<0xAC>"), 6);
    id_fb_f0 = tiny_add(t, S("<0xf0>"), 6);
    id_fb_bad = tiny_add(t, S("<0xZZ>"), 6); /* not a byte: its own text */
    Ftplan__Tokenizer pt;
    ftplan__tokenizer__init(&pt);
    pt.model = "gpt2";
    pt.pre = "default";
    pt.n_tokens = t->n;
    pt.tokens = t->tokens;
    pt.token_types.data = t->types;
    pt.token_types.len = t->n;
    pt.bos_id = pt.eos_id = id_im_end;
    pt.pad_id = pt.unk_id = -1;
    ft_status_t st = ft_tokenizer_create(&pt, "tiny", &t->tok);
    if (st) fail_msg("%s", ft_status_message(st));
    *state = t;
    return 0;
}

static int tiny_teardown(void **state)
{
    tiny_tok_t *t = *state;
    ft_tokenizer_destroy(t->tok);
    free(t);
    return 0;
}

static ft_detokenizer_t *make_detok(const tiny_tok_t *t)
{
    ft_detokenizer_t *d = NULL;
    ft_status_t st = ft_detokenizer_create_for(t->tok, &d);
    if (st) fail_msg("%s", ft_status_message(st));
    return d;
}

static void feed_expect(ft_detokenizer_t *d, int32_t id, const char *want, size_t n_want)
{
    const char *out = NULL;
    size_t n = 99;
    ft_status_t st = ft_detokenizer_feed(d, id, &out, &n);
    if (st) fail_msg("token %d: %s", id, ft_status_message(st));
    if (n != n_want || memcmp(out, want, n) != 0)
        fail_msg("token %d: %zu bytes out, expected %zu", id, n, n_want);
}

static void flush_expect(ft_detokenizer_t *d, const char *want, size_t n_want)
{
    const char *out = NULL;
    size_t n = 99;
    ft_status_t st = ft_detokenizer_flush(d, &out, &n);
    if (st) fail_msg("flush: %s", ft_status_message(st));
    if (n != n_want || memcmp(out, want, n) != 0)
        fail_msg("flush: %zu bytes out, expected %zu", n, n_want);
}

static void test_tokens(void **state)
{
    tiny_tok_t *t = *state;
    ft_detokenizer_t *d = make_detok(t);
    /* 😀 across three tokens, two ways */
    feed_expect(d, 0xf0, S(""));
    feed_expect(d, 0x9f, S(""));
    feed_expect(d, id_emoji_c, S("\xf0\x9f\x98\x80"));
    feed_expect(d, id_emoji_a, S(""));
    feed_expect(d, id_emoji_b, S(""));
    feed_expect(d, 0x80, S("\xf0\x9f\x98\x80"));
    /* special tokens give their text */
    feed_expect(d, 'h', S("h"));
    feed_expect(d, id_im_end, S("<|im_end|>"));
    /* an incomplete character cut by a plain token, and by the end */
    feed_expect(d, 0xe2, S(""));
    feed_expect(d, 0x82, S(""));
    feed_expect(d, 'x', S(FFFD "x"));
    feed_expect(d, 0xc3, S(""));
    flush_expect(d, S(FFFD));
    flush_expect(d, S("")); /* empty afterwards */
    /* a bad id is an error and changes nothing */
    feed_expect(d, 0xc3, S(""));
    const char *out;
    size_t n;
    ft_status_t st = ft_detokenizer_feed(d, (int32_t)t->n, &out, &n);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ft_status_message(st), "out of range"));
    assert_int_equal(n, 0);
    ft_status_free(st);
    st = ft_detokenizer_feed(d, -1, &out, &n);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    feed_expect(d, 0xa9, S("\xc3\xa9"));
    /* reset drops what is held */
    feed_expect(d, 0xf0, S(""));
    ft_detokenizer_reset(d);
    flush_expect(d, S(""));
    ft_detokenizer_destroy(d);

    st = ft_detokenizer_create_for(NULL, &d);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    assert_null(d);
    ft_status_free(st);
    st = ft_detokenizer_create(NULL, &d);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    st = ft_detokenizer_feed(NULL, 0, &out, &n);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    ft_detokenizer_destroy(NULL);
}

/* <0xNN> byte-fallback tokens stand for one byte each and join byte-level
 * tokens into characters. */
static void test_byte_fallback(void **state)
{
    tiny_tok_t *t = *state;
    const char *b;
    uint32_t len;
    assert_null(ft_tokenizer_token_bytes(t->tok, id_fb_e2, &b, &len));
    assert_int_equal(len, 1);
    assert_int_equal((unsigned char)b[0], 0xe2);
    assert_null(ft_tokenizer_token_bytes(t->tok, id_fb_bad, &b, &len));
    assert_int_equal(len, 6);
    assert_memory_equal(b, "<0xZZ>", 6);
    ft_detokenizer_t *d = make_detok(t);
    /* € = E2 82 AC across three fallback tokens */
    feed_expect(d, id_fb_e2, S(""));
    feed_expect(d, id_fb_82, S(""));
    feed_expect(d, id_fb_ac, S("\xe2\x82\xac"));
    /* 😀 = F0 9F 98 80: a fallback byte, then byte-level tokens */
    feed_expect(d, id_fb_f0, S(""));
    feed_expect(d, 0x9f, S(""));
    feed_expect(d, id_emoji_c, S("\xf0\x9f\x98\x80"));
    /* a fallback byte that cannot continue the character */
    feed_expect(d, id_fb_e2, S(""));
    feed_expect(d, id_fb_f0, S(FFFD));
    feed_expect(d, id_fb_bad, S(FFFD "<0xZZ>"));
    flush_expect(d, S(""));
    ft_detokenizer_destroy(d);
}

/* ---- stop strings over the detokenized stream ---- */

/* The longest suffix of text[0..n) that is a proper prefix of a stop. */
static size_t ref_hold(const char *text, size_t n, const char *const *stops, size_t n_stops)
{
    size_t best = 0;
    for (size_t j = 0; j < n_stops; j++) {
        const size_t len = strlen(stops[j]);
        for (size_t h = len - 1; h > best; h--)
            if (h <= n && memcmp(text + n - h, stops[j], h) == 0) {
                best = h;
                break;
            }
    }
    return best;
}

/* The first stop to complete in text[0..n): *at its start, or 0 when none. */
static int ref_stop(const char *text, size_t n, const char *const *stops, size_t n_stops,
                    size_t *at)
{
    for (size_t end = 1; end <= n; end++) {
        size_t best = 0;
        for (size_t j = 0; j < n_stops; j++) {
            const size_t len = strlen(stops[j]);
            if (len <= end && len > best && memcmp(text + end - len, stops[j], len) == 0)
                best = len;
        }
        if (best) {
            *at = end - best;
            return 1;
        }
    }
    return 0;
}

/* Byte tokens carrying text in random splits through the detokenizer into
 * the matcher; the released text (all but the held bytes) always ends on a
 * character boundary and agrees with a brute-force search. */
static void test_stops_inside_characters(void **state)
{
    tiny_tok_t *t = *state;
    /* é = C3 A9 and è = C3 A8 share their first byte; 😀 = F0 9F 98 80 and
     * 😁 = F0 9F 98 81 their first three */
    const char *const stops[] = {"\xc3\xa8!", "\xf0\x9f\x98\x81", "END"};
    static const char *const pieces[] = {"\xc3\xa9", "\xc3\xa8", "!", "\xf0\x9f\x98\x80",
                                         "\xf0\x9f\x98\x81", "E", "N", "D", "a"};
    uint64_t x = 12345;
    ft_detokenizer_t *d = make_detok(t);
    for (int iter = 0; iter < 3000; iter++) {
        char text[128];
        size_t n = 0;
        const size_t n_pieces = 1 + rng_next(&x) % 12;
        for (size_t i = 0; i < n_pieces; i++) {
            const char *p = pieces[rng_next(&x) % (sizeof(pieces) / sizeof(pieces[0]))];
            memcpy(text + n, p, strlen(p));
            n += strlen(p);
        }
        ft_stop_matcher_t *m = NULL;
        ft_status_t st = ft_stop_matcher_create(stops, 3, &m);
        if (st) fail_msg("%s", ft_status_message(st));
        char shown[128];
        size_t n_shown = 0, n_out = 0, stop_at = 0, hold = 0;
        int stopped = 0;
        /* one byte token at a time: characters split at every byte */
        for (size_t i = 0; i < n && !stopped; i++) {
            const char *out;
            size_t n_piece;
            st = ft_detokenizer_feed(d, (uint8_t)text[i], &out, &n_piece);
            assert_null(st);
            memcpy(shown + n_out, out, n_piece);
            n_out += n_piece;
            stopped = ft_stop_matcher_feed(m, out, n_piece, &stop_at, &hold);
            const size_t release = stopped ? stop_at : n_out - hold;
            assert_true(release >= n_shown);
            n_shown = release;
            /* whole characters only, and exactly what cannot start a stop */
            assert_true(ref_valid((const unsigned char *)shown, n_shown));
            if (!stopped) assert_int_equal(hold, ref_hold(shown, n_out, stops, 3));
        }
        size_t want_at = 0;
        const int want_stop = ref_stop(text, n, stops, 3, &want_at);
        if (stopped != want_stop || (stopped && stop_at != want_at))
            fail_msg("iteration %d: stop %d at %zu, expected %d at %zu", iter, stopped, stop_at,
                     want_stop, want_at);
        if (stopped) {
            const int which = ft_stop_matcher_which(m);
            assert_true(which >= 0 && which < 3);
            assert_memory_equal(text + want_at, stops[which], strlen(stops[which]));
        } else {
            assert_int_equal(ft_stop_matcher_which(m), -1);
            assert_int_equal(n_out, n);
        }
        ft_detokenizer_reset(d);
        ft_stop_matcher_destroy(m);
    }
    ft_detokenizer_destroy(d);
}

static void test_stop_refusals(void **state)
{
    (void)state;
    ft_stop_matcher_t *m = (ft_stop_matcher_t *)&m;
    const char *const bad[] = {"ok", "\xc3"};
    ft_status_t st = ft_stop_matcher_create(bad, 2, &m);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ft_status_message(st), "stop string 1 is not valid UTF-8"));
    assert_null(m);
    ft_status_free(st);
    const char *const surrogate[] = {"\xed\xa0\x80"};
    st = ft_stop_matcher_create(surrogate, 1, &m);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unicode_examples),
        cmocka_unit_test(test_every_split_valid),
        cmocka_unit_test(test_random_bytes),
        cmocka_unit_test(test_tokens),
        cmocka_unit_test(test_byte_fallback),
        cmocka_unit_test(test_stops_inside_characters),
        cmocka_unit_test(test_stop_refusals),
    };
    return cmocka_run_group_tests(tests, tiny_setup, tiny_teardown);
}
