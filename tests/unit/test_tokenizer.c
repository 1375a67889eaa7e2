/* The byte-level BPE tokenizer against the fixture vocabulary: regex
 * pre-tokenization, merges, special and added tokens, round trips over
 * many kinds of text, and refusals (invalid UTF-8, bad ids, bad plans). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/text/pretok.h"
#include "../../runtime/text/tokenizer.h"
#include "tok_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ft_tok_fixture_t g_fx;

static int setup(void **state)
{
    (void)state;
    ft_status_t st = ft_tok_fixture_init(&g_fx, 0, "qwen2");
    if (st) {
        fprintf(stderr, "%s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ft_tok_fixture_free(&g_fx);
    return 0;
}

static void expect_error(ft_status_t st, ft_status_code_t code, const char *needle)
{
    if (ft_status_code(st) != code || !strstr(ft_status_message(st), needle))
        fail_msg("expected %s with '%s', got %s: %s", ft_status_code_name(code), needle,
                 ft_status_code_name(ft_status_code(st)), ft_status_message(st));
    ft_status_free(st);
}

/* Splits text with pre-tokenizer `pre` and compares the pieces with the
 * NULL-terminated list want. */
static void expect_pieces(const char *pre, const char *text, const char *const *want)
{
    ft_pretok_t *pt = NULL;
    ft_pretok_match_t *m = NULL;
    assert_null(ft_pretok_create(pre, "test", &pt));
    assert_null(ft_pretok_match_create(pt, &m));
    ft_pretok_cursor_t c;
    ft_pretok_cursor_init(&c, pt, m, text, strlen(text));
    size_t start, len, i = 0;
    ft_status_t st;
    while (ft_pretok_cursor_next(&c, &start, &len, &st)) {
        if (!want[i]) fail_msg("%s: extra piece '%.*s' in '%s'", pre, (int)len, text + start, text);
        if (len != strlen(want[i]) || memcmp(text + start, want[i], len) != 0)
            fail_msg("%s: piece %zu of '%s' is '%.*s', expected '%s'", pre, i, text, (int)len,
                     text + start, want[i]);
        i++;
    }
    assert_null(st);
    if (want[i]) fail_msg("%s: missing piece '%s' in '%s'", pre, want[i], text);
    ft_pretok_match_destroy(m);
    ft_pretok_destroy(pt);
}

/* Qwen2's pattern, alternatives tried in order at each position:
 *   '[sS]|'[tT]|...  [^\r\n\p{L}\p{N}]?\p{L}+  \p{N}  ' ?[^\s\p{L}\p{N}]+[\r\n]*'
 *   \s*[\r\n]+  \s+(?!\S)  \s+
 * "Hello world's 123\n\n  x": letters with an optional leading non-letter
 * ("Hello", " world"), the contraction "'s", a lone " " (it cannot join
 * the digit: " " + \p{L}+ fails, and \s+(?!\S) fails before "1", so \s+
 * takes it), digits one at a time, "\n\n" (\s*[\r\n]+ backtracks to the
 * last newline), then of "  x" \s+(?!\S) leaves the last space to " x". */
static void test_pretok_qwen2(void **state)
{
    (void)state;
    static const char *const p1[] = {"Hello", " world", "'s", " ",  "1", "2",
                                     "3",     "\n\n",   " ",  " x", NULL};
    expect_pieces("qwen2", "Hello world's 123\n\n  x", p1);
    static const char *const p2[] = {"don", "'T", " go", NULL};
    expect_pieces("qwen2", "don'T go", p2);
    /* punctuation takes the newlines after it */
    static const char *const p3[] = {"Hi", "!!\n\n", "ok", NULL};
    expect_pieces("qwen2", "Hi!!\n\nok", p3);
    static const char *const p4[] = {"ab", "  \n", NULL};
    expect_pieces("qwen2", "ab  \n", p4);
    /* trailing whitespace stays whole at the end of the text */
    static const char *const p5[] = {"x", "   ", NULL};
    expect_pieces("qwen2", "x   ", p5);
    static const char *const p6[] = {"$hello", " (", "a", ")", NULL};
    expect_pieces("qwen2", "$hello (a)", p6);
    static const char *const p7[] = {"日本語", "1", "2", " 😀", NULL};
    expect_pieces("qwen2", "日本語12 😀", p7);
    /* a combining mark is \p{M}, not \p{L}: it ends the letter run and
     * becomes the optional non-letter prefix of the next one */
    static const char *const p8[] = {"e", "\xcc\x81t\xc3\xa9", NULL};
    expect_pieces("qwen2", "e\xcc\x81t\xc3\xa9", p8);
}

static void test_pretok_llama3_gpt2(void **state)
{
    (void)state;
    static const char *const l1[] = {"123", "45", " ab", NULL};
    expect_pieces("llama-bpe", "12345 ab", l1);
    static const char *const g1[] = {"hello", " world", " 123", "!", NULL};
    expect_pieces("gpt2", "hello world 123!", g1);
    static const char *const g2[] = {"a", " ", "\n", "b", NULL};
    expect_pieces("default", "a \nb", g2);
    ft_pretok_t *pt = NULL;
    expect_error(ft_pretok_create("deepseek-llm", "plan.ftp", &pt), FT_STATUS_UNSUPPORTED,
                 "'deepseek-llm'");
    assert_null(pt);
}

static void encode(const char *text, size_t len, unsigned flags, int32_t **ids, uint32_t *n)
{
    ft_status_t st = ft_tokenizer_encode(g_fx.tok, text, len, flags, ids, n);
    if (st) fail_msg("encode failed: %s", ft_status_message(st));
}

/* Spelling -> id, failing the test when the vocabulary lacks it. */
static int32_t id_of(const char *spelling)
{
    int32_t id = ft_tokenizer_find(g_fx.tok, spelling);
    if (id < 0) fail_msg("no token '%s'", spelling);
    return id;
}

static void expect_ids(const char *text, const int32_t *want, uint32_t n_want)
{
    int32_t *ids;
    uint32_t n;
    encode(text, strlen(text), 0, &ids, &n);
    if (n != n_want) fail_msg("'%s': %u tokens, expected %u", text, n, n_want);
    for (uint32_t i = 0; i < n; i++)
        if (ids[i] != want[i])
            fail_msg("'%s': token %u is %d, expected %d", text, i, ids[i], want[i]);
    free(ids);
}

/* The fixture's first merges are "Ġ t", "h e", ..., "Ġt he" (rank 7),
 * "in g" (15), "Ġa nd" (25), "Ġw as" (37), and merge r makes token
 * 256 + r. */
static void test_bpe_known_words(void **state)
{
    (void)state;
    const ft_bpe_vocab_t *v = &g_fx.vocab;
    assert_string_equal(v->merges[0], "Ġ t");
    assert_string_equal(v->merges[7], "Ġt he");
    assert_string_equal(v->merges[15], "in g");
    assert_string_equal(v->merges[25], "Ġa nd");
    assert_string_equal(v->merges[37], "Ġw as");
    assert_int_equal(id_of("Ġthe"), 256 + 7);
    const int32_t the[] = {256 + 7};
    expect_ids(" the", the, 1);
    const int32_t and_was[] = {256 + 25, 256 + 37};
    expect_ids(" and was", and_was, 2);
    /* "the" without its space: "t" + "he" (merge 1 "h e"); "Ġt" (merge 0)
     * cannot apply */
    const int32_t the0[] = {id_of("t"), 256 + 1};
    expect_ids("the", the0, 2);
    const int32_t sing[] = {id_of("s"), 256 + 15};
    expect_ids("sing", sing, 2);
    /* a byte the merges never touch stays a byte token, in
     * bytes_to_unicode order: '!' is id 0, byte 0x00 is 188 */
    const int32_t bang[] = {0};
    expect_ids("!", bang, 1);
    const int32_t nul[] = {188};
    int32_t *ids;
    uint32_t n;
    encode("\0", 1, 0, &ids, &n);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], nul[0]);
    free(ids);
}

static void expect_round_trip(const char *text, size_t len, unsigned flags)
{
    int32_t *ids;
    uint32_t n;
    encode(text, len, flags, &ids, &n);
    assert_true(n <= len);
    char *out;
    size_t out_len;
    assert_null(ft_tokenizer_decode(g_fx.tok, ids, n, &out, &out_len));
    if (out_len != len || memcmp(out, text, len) != 0)
        fail_msg("round trip of %zu bytes gave %zu bytes: '%.*s' -> '%s'", len, out_len,
                 (int)(len < 200 ? len : 200), text, out);
    assert_int_equal(out[out_len], '\0');
    free(out);
    free(ids);
}

static void test_round_trip_fixed(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "Hello, world!",
        "The quick brown fox jumps over the lazy dog.\n",
        "日本語のテキストと中文文本，还有한국어.",
        "emoji: 😀👍🏽👨‍👩‍👧 🇩🇪 and ZWJ sequences",
        "combining: e\xcc\x81 a\xcc\x8a\xcc\x81 Z\xcd\x91\xcd\x9b",
        "control: \x01\x02\x1b[0m\x7f tab\tcr\r\nvt\vff\f",
        "   leading and trailing   ",
        "\n\n\n\n\n\n",
        "mixed\r\n\r\n  \t \n x",
        "code: for (int i = 0; i < n; i++) { x[i] = y[i] * 2; }",
        "'s 'S 'll 'LL 're 've 'm 'd don't I'M",
        "numbers 3.14159 1,000,000 0x7fffffff",
        "non-breaking\xc2\xa0space and\xe2\x80\x83"
        "em space\xe3\x80\x80ideographic",
        "<|im_start|>user\nhi<|im_end|>\n<think>\n</think>",
        "<|im_start <|im_end| |>< think> <thinker>",
        "\xef\xbf\xbd replacement char, \xf4\x8f\xbf\xbf max code point",
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        expect_round_trip(texts[i], strlen(texts[i]), 0);
        expect_round_trip(texts[i], strlen(texts[i]), FT_TOKENIZE_SPECIAL);
    }
    expect_round_trip("a\0b\0\0c", 6, 0);
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A random code point, weighted toward what text holds: ASCII (with
 * spaces and newlines), Latin, CJK, emoji, anything. Never a surrogate. */
static uint32_t random_cp(uint64_t *s)
{
    const uint64_t r = rng_next(s);
    switch (r % 8) {
    case 0:
        return " \n\t\r"[(r >> 8) % 4];
    case 1:
    case 2:
        return 0x20 + (uint32_t)((r >> 8) % 95);
    case 3:
        return (uint32_t)((r >> 8) % 0x80);
    case 4:
        return 0x80 + (uint32_t)((r >> 8) % 0x780);
    case 5:
        return 0x4e00 + (uint32_t)((r >> 8) % 0x5000);
    case 6:
        return 0x1f300 + (uint32_t)((r >> 8) % 0x300);
    default: {
        uint32_t cp = (uint32_t)((r >> 8) % 0x110000);
        return cp >= 0xd800 && cp <= 0xdfff ? 0xfffd : cp;
    }
    }
}

static size_t put_utf8(uint32_t cp, char *out)
{
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xc0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xe0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (unsigned char)(0xf0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

static void test_round_trip_random(void **state)
{
    (void)state;
    uint64_t seed = 20240611;
    char buf[4 * 300 + 64];
    for (int t = 0; t < 500; t++) {
        const size_t n_cp = (size_t)(rng_next(&seed) % 300);
        size_t len = 0;
        for (size_t i = 0; i < n_cp; i++)
            len += put_utf8(random_cp(&seed), buf + len);
        /* sometimes splice in special tokens and ASCII words */
        if (t % 5 == 0) {
            memcpy(buf + len, "<|im_end|> the<think>", 21);
            len += 21;
        }
        expect_round_trip(buf, len, (t & 1) ? FT_TOKENIZE_SPECIAL : 0);
    }
}

static void test_long_runs(void **state)
{
    (void)state;
    const size_t n = 100000;
    char *buf = malloc(n);
    assert_non_null(buf);
    const char fills[] = {' ', '\n', 'a', '!', '7'};
    for (size_t f = 0; f < sizeof(fills); f++) {
        memset(buf, fills[f], n);
        expect_round_trip(buf, n, 0);
    }
    /* one long word of one multi-byte letter: a single BPE word of 100000
     * symbols must merge in n log n, not n^2 */
    for (size_t i = 0; i + 2 <= n; i += 2)
        memcpy(buf + i, "\xc3\xa9", 2);
    expect_round_trip(buf, n, 0);
    free(buf);
}

static int contains(const int32_t *ids, uint32_t n, int32_t id)
{
    for (uint32_t i = 0; i < n; i++)
        if (ids[i] == id) return 1;
    return 0;
}

static void test_special_tokens(void **state)
{
    (void)state;
    const ft_bpe_vocab_t *v = &g_fx.vocab;
    const char *text = "<|im_start|>user\nhi<|im_end|>";
    int32_t *ids;
    uint32_t n;
    encode(text, strlen(text), FT_TOKENIZE_SPECIAL, &ids, &n);
    assert_true(n >= 3);
    assert_int_equal(ids[0], (int32_t)v->im_start_id);
    assert_int_equal(ids[n - 1], (int32_t)v->im_end_id);
    free(ids);
    /* without the flag the markers are plain text */
    encode(text, strlen(text), 0, &ids, &n);
    assert_false(contains(ids, n, (int32_t)v->im_start_id));
    assert_false(contains(ids, n, (int32_t)v->im_end_id));
    assert_int_equal(ids[0], id_of("<"));
    free(ids);
    /* <think> and </think> are added (USER_DEFINED) tokens: always */
    text = "a<think>b</think><tool_call>";
    encode(text, strlen(text), 0, &ids, &n);
    assert_int_equal(n, 5);
    assert_int_equal(ids[1], (int32_t)v->think_id);
    assert_int_equal(ids[3], (int32_t)v->think_end_id);
    assert_int_equal(ids[4], (int32_t)v->tool_call_id);
    free(ids);
    /* the added text before and after is pre-tokenized on its own */
    text = "<think>the";
    encode(text, strlen(text), 0, &ids, &n);
    assert_int_equal(n, 3);
    assert_int_equal(ids[0], (int32_t)v->think_id);
    free(ids);
    assert_int_equal(ft_tokenizer_find(g_fx.tok, "<|im_start|>"), (int32_t)v->im_start_id);
    assert_int_equal(ft_tokenizer_find(g_fx.tok, "no such token"), -1);
}

static void test_invalid_utf8(void **state)
{
    (void)state;
    int32_t *ids = (int32_t *)&ids;
    uint32_t n = 99;
    expect_error(ft_tokenizer_encode(g_fx.tok,
                                     "ab\xff"
                                     "cd",
                                     5, 0, &ids, &n),
                 FT_STATUS_INVALID_ARGUMENT, "byte offset 2");
    assert_null(ids);
    assert_int_equal(n, 0);
    /* overlong '/', a surrogate, a truncated sequence, past U+10FFFF, a
     * lone continuation byte */
    expect_error(ft_tokenizer_encode(g_fx.tok, "x\xc0\xaf", 3, 0, &ids, &n),
                 FT_STATUS_INVALID_ARGUMENT, "byte offset 1");
    expect_error(ft_tokenizer_encode(g_fx.tok, "xy\xed\xa0\x80", 5, 0, &ids, &n),
                 FT_STATUS_INVALID_ARGUMENT, "byte offset 2");
    expect_error(ft_tokenizer_encode(g_fx.tok, "\xe6\x97", 2, 0, &ids, &n),
                 FT_STATUS_INVALID_ARGUMENT, "byte offset 0");
    expect_error(ft_tokenizer_encode(g_fx.tok, "abc\xf4\x90\x80\x80", 7, 0, &ids, &n),
                 FT_STATUS_INVALID_ARGUMENT, "byte offset 3");
    expect_error(ft_tokenizer_encode(g_fx.tok, "\xe6\x97\xa5\x80", 4, 0, &ids, &n),
                 FT_STATUS_INVALID_ARGUMENT, "byte offset 3");
}

static void test_empty_and_bos(void **state)
{
    (void)state;
    int32_t *ids;
    uint32_t n = 7;
    encode("", 0, FT_TOKENIZE_SPECIAL | FT_TOKENIZE_ADD_BOS, &ids, &n);
    assert_int_equal(n, 0); /* the fixture does not add bos */
    free(ids);
    assert_null(ft_tokenizer_encode(g_fx.tok, NULL, 0, 0, &ids, &n));
    assert_int_equal(n, 0);
    free(ids);

    /* the same vocabulary with add_bos set */
    Ftplan__Tokenizer pt = g_fx.pt;
    pt.add_bos = 1;
    ft_tokenizer_t *tok;
    assert_null(ft_tokenizer_create(&pt, "test", &tok));
    assert_null(ft_tokenizer_encode(tok, "", 0, FT_TOKENIZE_ADD_BOS, &ids, &n));
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], ft_tokenizer_bos(tok));
    free(ids);
    assert_null(ft_tokenizer_encode(tok, " the", 4, 0, &ids, &n));
    assert_int_equal(n, 1); /* no flag, no bos */
    free(ids);
    ft_tokenizer_destroy(tok);
    /* add_bos but no bos token: nothing is prepended */
    pt.bos_id = -1;
    assert_null(ft_tokenizer_create(&pt, "test", &tok));
    assert_null(ft_tokenizer_encode(tok, " the", 4, FT_TOKENIZE_ADD_BOS, &ids, &n));
    assert_int_equal(n, 1);
    assert_int_equal(ft_tokenizer_bos(tok), -1);
    free(ids);
    ft_tokenizer_destroy(tok);
}

static void test_token_bytes(void **state)
{
    (void)state;
    const char *b;
    uint32_t len;
    const uint32_t n_vocab = ft_tokenizer_n_vocab(g_fx.tok);
    assert_int_equal(n_vocab, g_fx.vocab.n_tokens);
    assert_null(ft_tokenizer_token_bytes(g_fx.tok, id_of("Ġthe"), &b, &len));
    assert_int_equal(len, 4);
    assert_memory_equal(b, " the", 4);
    assert_null(ft_tokenizer_token_bytes(g_fx.tok, 188, &b, &len)); /* byte 0x00 */
    assert_int_equal(len, 1);
    assert_int_equal(b[0], 0);
    assert_null(ft_tokenizer_token_bytes(g_fx.tok, (int32_t)g_fx.vocab.im_end_id, &b, &len));
    assert_int_equal(len, 10);
    assert_memory_equal(b, "<|im_end|>", 10);
    expect_error(ft_tokenizer_token_bytes(g_fx.tok, -1, &b, &len), FT_STATUS_INVALID_ARGUMENT,
                 "token id -1");
    expect_error(ft_tokenizer_token_bytes(g_fx.tok, (int32_t)n_vocab, &b, &len),
                 FT_STATUS_INVALID_ARGUMENT, "out of range");
    const int32_t bad[] = {0, (int32_t)n_vocab};
    char *out = NULL;
    size_t out_len;
    expect_error(ft_tokenizer_decode(g_fx.tok, bad, 2, &out, &out_len), FT_STATUS_INVALID_ARGUMENT,
                 "ids[1]");
    assert_null(out);
    assert_null(ft_tokenizer_decode(g_fx.tok, NULL, 0, &out, &out_len));
    assert_int_equal(out_len, 0);
    assert_string_equal(out, "");
    free(out);
}

static void test_eog_and_ids(void **state)
{
    (void)state;
    const ft_bpe_vocab_t *v = &g_fx.vocab;
    assert_int_equal(ft_tokenizer_eos(g_fx.tok), (int32_t)v->im_end_id);
    assert_int_equal(ft_tokenizer_bos(g_fx.tok), (int32_t)v->endoftext_id);
    assert_true(ft_tokenizer_is_eog(g_fx.tok, (int32_t)v->im_end_id));
    assert_true(ft_tokenizer_is_eog(g_fx.tok, (int32_t)v->endoftext_id));
    assert_false(ft_tokenizer_is_eog(g_fx.tok, (int32_t)v->im_start_id));
    assert_false(ft_tokenizer_is_eog(g_fx.tok, (int32_t)v->think_end_id));
    assert_false(ft_tokenizer_is_eog(g_fx.tok, 0));
    assert_false(ft_tokenizer_is_eog(g_fx.tok, -1));
    assert_non_null(strstr(ft_tokenizer_chat_template(g_fx.tok), "<|im_start|>"));
}

/* A harmony vocabulary (gpt-oss): <|return|> and <|call|> end generation,
 * <|end|> (which ends a message, the reply going on) does not; without
 * <|return|>, <|end|> ends generation as before (Phi-3). */
static void test_eog_harmony(void **state)
{
    (void)state;
    const ft_bpe_vocab_t *v = &g_fx.vocab;
    Ftplan__Tokenizer pt = g_fx.pt;
    ProtobufCBinaryData *toks = malloc(pt.n_tokens * sizeof(*toks));
    assert_non_null(toks);
    memcpy(toks, pt.tokens, pt.n_tokens * sizeof(*toks));
    pt.tokens = toks;
    static const char *const names[] = {"<|end|>", "<|return|>", "<|call|>"};
    const uint32_t ids[] = {v->think_id, v->think_end_id, v->tool_call_id};
    for (int i = 0; i < 3; i++)
        toks[ids[i]] = (ProtobufCBinaryData){strlen(names[i]), (uint8_t *)names[i]};
    ft_tokenizer_t *tok;
    assert_null(ft_tokenizer_create(&pt, "m.ftp", &tok));
    assert_false(ft_tokenizer_is_eog(tok, (int32_t)v->think_id));
    assert_true(ft_tokenizer_is_eog(tok, (int32_t)v->think_end_id));
    assert_true(ft_tokenizer_is_eog(tok, (int32_t)v->tool_call_id));
    assert_true(ft_tokenizer_is_eog(tok, (int32_t)v->im_end_id));
    ft_tokenizer_destroy(tok);
    toks[v->think_end_id] = (ProtobufCBinaryData){8, (uint8_t *)"</think>"};
    assert_null(ft_tokenizer_create(&pt, "m.ftp", &tok));
    assert_true(ft_tokenizer_is_eog(tok, (int32_t)v->think_id));
    ft_tokenizer_destroy(tok);
    free(toks);
}

/* Decodes ids[0..n) and compares with want. */
static void decodes_to(ft_tokenizer_t *tok, const int32_t *ids, uint32_t n, const char *want)
{
    char *out;
    size_t len;
    assert_null(ft_tokenizer_decode(tok, ids, n, &out, &len));
    assert_int_equal(len, strlen(want));
    assert_memory_equal(out, want, len);
    free(out);
}

/* A plan tokenizer with normalizer "NFC" normalizes the text between
 * special tokens (as Hugging Face's tokenizers do), so e + U+0301 is é; a
 * special token followed by a combining mark that would compose with its
 * last character (> + U+0338 is U+226F) is still matched; text that NFC
 * makes longer (U+0958 is 3 bytes, its NFC 6) still encodes. */
static void test_nfc_normalizer(void **state)
{
    (void)state;
    Ftplan__Tokenizer pt = g_fx.pt;
    pt.normalizer = "NFC";
    ft_tokenizer_t *tok;
    assert_null(ft_tokenizer_create(&pt, "m.ftp", &tok));
    int32_t *a, *b;
    uint32_t na, nb;
    assert_null(ft_tokenizer_encode(tok, "caf\xc3\xa9", 5, 0, &a, &na));
    assert_null(ft_tokenizer_encode(tok, "cafe\xcc\x81", 6, 0, &b, &nb));
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na * sizeof(int32_t));
    free(b);
    /* without the normalizer the two differ */
    encode("cafe\xcc\x81", 6, 0, &b, &nb);
    assert_false(na == nb && memcmp(a, b, na * sizeof(int32_t)) == 0);
    free(a);
    free(b);
    const char *text = "<|im_end|>\xcc\xb8";
    assert_null(ft_tokenizer_encode(tok, text, strlen(text), FT_TOKENIZE_SPECIAL, &a, &na));
    assert_true(na >= 2);
    assert_int_equal(a[0], (int32_t)g_fx.vocab.im_end_id);
    decodes_to(tok, a + 1, na - 1, "\xcc\xb8");
    free(a);
    char in[301], want[601];
    for (int i = 0; i < 100; i++) {
        memcpy(in + 3 * i, "\xe0\xa5\x98", 3);
        memcpy(want + 6 * i, "\xe0\xa4\x95\xe0\xa4\xbc", 6);
    }
    in[300] = want[600] = 0;
    assert_null(ft_tokenizer_encode(tok, in, 300, FT_TOKENIZE_ADD_BOS, &a, &na));
    decodes_to(tok, a, na, want);
    free(a);
    /* invalid UTF-8 is still refused before normalizing */
    expect_error(ft_tokenizer_encode(tok, "e\xcc", 2, 0, &a, &na), FT_STATUS_INVALID_ARGUMENT,
                 "byte offset 1");
    /* NFC keeps the fi ligature (U+FB01); NFKC makes it "fi" */
    assert_null(ft_tokenizer_encode(tok, "\xef\xac\x81", 3, 0, &a, &na));
    decodes_to(tok, a, na, "\xef\xac\x81");
    free(a);
    ft_tokenizer_destroy(tok);
    pt.normalizer = "NFKC";
    assert_null(ft_tokenizer_create(&pt, "m.ftp", &tok));
    assert_null(ft_tokenizer_encode(tok, "\xef\xac\x81 e\xcc\x81", 7, 0, &a, &na));
    decodes_to(tok, a, na, "fi \xc3\xa9");
    free(a);
    ft_tokenizer_destroy(tok);
}

static void test_create_refusals(void **state)
{
    (void)state;
    ft_tokenizer_t *tok = (ft_tokenizer_t *)&tok;
    Ftplan__Tokenizer pt = g_fx.pt;
    pt.model = "llama";
    expect_error(ft_tokenizer_create(&pt, "m.ftp", &tok), FT_STATUS_UNSUPPORTED, "'llama'");
    assert_null(tok);
    pt = g_fx.pt;
    pt.pre = "falcon";
    expect_error(ft_tokenizer_create(&pt, "m.ftp", &tok), FT_STATUS_UNSUPPORTED, "'falcon'");
    pt = g_fx.pt;
    pt.normalizer = "NFD";
    expect_error(ft_tokenizer_create(&pt, "m.ftp", &tok), FT_STATUS_UNSUPPORTED, "'NFD'");
    pt = g_fx.pt;
    pt.token_types.len--;
    expect_error(ft_tokenizer_create(&pt, "m.ftp", &tok), FT_STATUS_FORMAT, "token_types");
    pt = g_fx.pt;
    pt.eos_id = (int32_t)pt.n_tokens;
    expect_error(ft_tokenizer_create(&pt, "m.ftp", &tok), FT_STATUS_FORMAT, "eos_id");
    pt = g_fx.pt;
    uint8_t *types = malloc(pt.n_tokens);
    memcpy(types, pt.token_types.data, pt.n_tokens);
    types[5] = 9;
    pt.token_types.data = types;
    expect_error(ft_tokenizer_create(&pt, "m.ftp", &tok), FT_STATUS_FORMAT, "token_types[5]");
    free(types);
    pt = g_fx.pt;
    char **merges = malloc(pt.n_merges * sizeof(char *));
    memcpy(merges, pt.merges, pt.n_merges * sizeof(char *));
    merges[3] = "nospace";
    pt.merges = merges;
    expect_error(ft_tokenizer_create(&pt, "m.ftp", &tok), FT_STATUS_FORMAT, "merges[3]");
    /* merges naming tokens that do not exist are skipped, not fatal */
    merges[3] = "zz qq";
    assert_null(ft_tokenizer_create(&pt, "m.ftp", &tok));
    ft_tokenizer_destroy(tok);
    free(merges);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pretok_qwen2),      cmocka_unit_test(test_pretok_llama3_gpt2),
        cmocka_unit_test(test_bpe_known_words),   cmocka_unit_test(test_round_trip_fixed),
        cmocka_unit_test(test_round_trip_random), cmocka_unit_test(test_long_runs),
        cmocka_unit_test(test_special_tokens),    cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_empty_and_bos),     cmocka_unit_test(test_token_bytes),
        cmocka_unit_test(test_eog_and_ids),       cmocka_unit_test(test_eog_harmony),
        cmocka_unit_test(test_create_refusals),   cmocka_unit_test(test_nfc_normalizer),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
