/* Fuzzes the tokenizer with the fixture vocabulary. The first input byte
 * picks the flags (bit 0 FT_TOKENIZE_SPECIAL, bit 1 FT_TOKENIZE_ADD_BOS)
 * and the pre-tokenizer (bits 2-3: qwen2, llama-bpe, gpt2, default); the
 * rest is the text. Encoding must never crash; it must succeed exactly
 * when the text is valid UTF-8 (checked here independently), and then
 * decode(encode(x)) == x byte for byte, with every id in range. Any
 * disagreement abort()s. */
#include "tok_fixture.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const ft_fuzz_pres[4] = {"qwen2", "llama-bpe", "gpt2", "default"};
static ft_tok_fixture_t ft_fuzz_fx[4];
static int ft_fuzz_ready[4];

/* RFC 3629 UTF-8, written apart from the runtime's validator. */
static int ft_fuzz_valid_utf8(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        const uint8_t c = s[i];
        size_t len;
        uint32_t lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            len = 2;
        } else if (c == 0xe0) {
            len = 3, lo = 0xa0;
        } else if (c == 0xed) {
            len = 3, hi = 0x9f; /* no surrogates */
        } else if (c >= 0xe1 && c <= 0xef) {
            len = 3;
        } else if (c == 0xf0) {
            len = 4, lo = 0x90;
        } else if (c >= 0xf1 && c <= 0xf3) {
            len = 4;
        } else if (c == 0xf4) {
            len = 4, hi = 0x8f;
        } else {
            return 0;
        }
        if (n - i < len || s[i + 1] < lo || s[i + 1] > hi) return 0;
        for (size_t k = 2; k < len; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xbf) return 0;
        i += len;
    }
    return 1;
}

static const ft_tokenizer_t *ft_fuzz_tokenizer(unsigned which)
{
    if (!ft_fuzz_ready[which]) {
        ft_status_t st = ft_tok_fixture_init(&ft_fuzz_fx[which], 0, ft_fuzz_pres[which]);
        if (st) abort();
        ft_fuzz_ready[which] = 1;
    }
    return ft_fuzz_fx[which].tok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    const unsigned flags = data[0] & 3u;
    const ft_tokenizer_t *tok = ft_fuzz_tokenizer((data[0] >> 2) & 3u);
    const char *text = (const char *)data + 1;
    const size_t len = size - 1;

    int32_t *ids = NULL;
    uint32_t n = 0;
    ft_status_t st = ft_tokenizer_encode(tok, text, len, flags, &ids, &n);
    const int valid = ft_fuzz_valid_utf8(data + 1, len);
    if (st) {
        if (valid || ft_status_code(st) != FT_STATUS_INVALID_ARGUMENT || ids || n) abort();
        ft_status_free(st);
        return 0;
    }
    if (!valid) abort();
    /* with ADD_BOS the fixture (add_bos off) prepends nothing */
    for (uint32_t i = 0; i < n; i++)
        if (ids[i] < 0 || (uint32_t)ids[i] >= ft_tokenizer_n_vocab(tok)) abort();
    char *out = NULL;
    size_t out_len = 0;
    st = ft_tokenizer_decode(tok, ids, n, &out, &out_len);
    if (st || out_len != len || memcmp(out, text, len) != 0) abort();
    free(out);
    free(ids);
    return 0;
}
