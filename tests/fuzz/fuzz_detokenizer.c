/* Fuzzes the streaming detokenizer and the stop matcher behind it with the
 * fixture vocabulary. The input is a sequence of 16-bit little-endian
 * token ids, spread to include negative and out-of-range ones. Ids out of
 * range must be refused and change nothing; every piece of output must be
 * valid UTF-8; the whole output must equal the lossy decoding (maximal
 * subparts to U+FFFD, written here apart from the runtime's) of the
 * tokens' bytes; the stop matcher fed those pieces must stop exactly
 * where a plain search finds the first stop string, and what it releases
 * must always be whole characters. Any disagreement abort()s. */
#include "tok_fixture.h"

#include "../../runtime/text/detokenizer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static ft_tok_fixture_t ft_fuzz_fx;
static int ft_fuzz_ready;

/* The length of the longest prefix of s[0..n) that starts a valid UTF-8
 * sequence, and in *whole whether it is a complete one (RFC 3629). */
static size_t ft_fuzz_prefix(const uint8_t *s, size_t n, int *whole)
{
    const uint8_t c = s[0];
    size_t len;
    uint8_t lo = 0x80, hi = 0xbf;
    *whole = 1;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c == 0xe0)
        len = 3, lo = 0xa0;
    else if (c == 0xed)
        len = 3, hi = 0x9f;
    else if (c >= 0xe1 && c <= 0xef)
        len = 3;
    else if (c == 0xf0)
        len = 4, lo = 0x90;
    else if (c >= 0xf1 && c <= 0xf3)
        len = 4;
    else if (c == 0xf4)
        len = 4, hi = 0x8f;
    else {
        *whole = 0;
        return 0;
    }
    size_t k = 1;
    for (; k < len && k < n; k++)
        if (s[k] < (k == 1 ? lo : 0x80) || s[k] > (k == 1 ? hi : 0xbf)) break;
    *whole = k == len;
    return k;
}

static int ft_fuzz_valid(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        int whole;
        const size_t k = ft_fuzz_prefix(s + i, n - i, &whole);
        if (!whole) return 0;
        i += k;
    }
    return 1;
}

static size_t ft_fuzz_lossy(const uint8_t *s, size_t n, uint8_t *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        int whole;
        const size_t k = ft_fuzz_prefix(s + i, n - i, &whole);
        if (whole) {
            memcpy(out + o, s + i, k);
            o += k;
        } else {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
        }
        i += k ? k : 1;
    }
    return o;
}

static const char *const ft_fuzz_stops[] = {"\xc3\xa9!", "the", "\xef\xbf\xbd\xef\xbf\xbd", "ion"};
enum { FT_FUZZ_N_STOPS = 4 };

/* Where the first stop string completes in s[0..n) starts, or -1. */
static long ft_fuzz_first_stop(const uint8_t *s, size_t n)
{
    for (size_t end = 1; end <= n; end++) {
        size_t best = 0;
        for (int j = 0; j < FT_FUZZ_N_STOPS; j++) {
            const size_t len = strlen(ft_fuzz_stops[j]);
            if (len <= end && len > best && memcmp(s + end - len, ft_fuzz_stops[j], len) == 0)
                best = len;
        }
        if (best) return (long)(end - best);
    }
    return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ft_fuzz_ready) {
        if (ft_tok_fixture_init(&ft_fuzz_fx, 0, "qwen2")) abort();
        ft_fuzz_ready = 1;
    }
    const ft_tokenizer_t *tok = ft_fuzz_fx.tok;
    const uint32_t n_vocab = ft_tokenizer_n_vocab(tok);
    const size_t n_ids = size / 2;
    /* raw: the tokens' bytes; got: the detokenizer's output */
    size_t cap = 16;
    for (size_t i = 0; i < n_ids; i++)
        cap += 3 * 64; /* tokens of the fixture are far shorter than 64 bytes */
    uint8_t *raw = malloc(cap), *got = malloc(3 * cap), *want = malloc(3 * cap);
    ft_detokenizer_t *d = NULL;
    ft_stop_matcher_t *m = NULL;
    if (!raw || !got || !want || ft_detokenizer_create_for(tok, &d) ||
        ft_stop_matcher_create(ft_fuzz_stops, FT_FUZZ_N_STOPS, &m))
        abort();
    size_t n_raw = 0, n_got = 0, released = 0, stop_at = 0, hold = 0;
    int stopped = 0;
    for (size_t i = 0; i <= n_ids; i++) {
        const char *piece;
        size_t n_piece;
        if (i < n_ids) {
            const uint32_t v = (uint32_t)data[2 * i] | (uint32_t)data[2 * i + 1] << 8;
            const int32_t id = (int32_t)(v % (n_vocab + 8)) - 4;
            ft_status_t st = ft_detokenizer_feed(d, id, &piece, &n_piece);
            if (id < 0 || (uint32_t)id >= n_vocab) {
                if (ft_status_code(st) != FT_STATUS_INVALID_ARGUMENT || n_piece != 0) abort();
                ft_status_free(st);
                continue;
            }
            if (st) abort();
            const char *b;
            uint32_t len;
            if (ft_tokenizer_token_bytes(tok, id, &b, &len) || len > 64) abort();
            memcpy(raw + n_raw, b, len);
            n_raw += len;
        } else if (ft_detokenizer_flush(d, &piece, &n_piece)) {
            abort();
        }
        if (!ft_fuzz_valid((const uint8_t *)piece, n_piece)) abort();
        memcpy(got + n_got, piece, n_piece);
        n_got += n_piece;
        if (!stopped) {
            stopped = ft_stop_matcher_feed(m, piece, n_piece, &stop_at, &hold);
            const size_t now = stopped ? stop_at : n_got - hold;
            if (now < released || !ft_fuzz_valid(got, now)) abort();
            released = now;
        }
    }
    if (ft_fuzz_lossy(raw, n_raw, want) != n_got || memcmp(want, got, n_got) != 0) abort();
    const long first = ft_fuzz_first_stop(got, n_got);
    if (stopped != (first >= 0) || (stopped && (long)stop_at != first)) abort();
    ft_stop_matcher_destroy(m);
    ft_detokenizer_destroy(d);
    free(raw);
    free(got);
    free(want);
    return 0;
}
