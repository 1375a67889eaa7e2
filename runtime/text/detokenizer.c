/* Streaming detokenization (ft_detokenizer_* in freetoken.h): token ids
 * in, whole UTF-8 characters out. Each token's bytes (byte-level BPE
 * bytes, <0xNN> byte-fallback bytes, special tokens' text: what
 * ft_tokenizer_token_bytes gives) go through the UTF-8 repair stream
 * (utf8_stream.h), which holds an incomplete character until the token
 * that completes it and turns bytes that cannot become one into U+FFFD.
 * The output buffer is sized at create for the longest token, so feeding
 * allocates nothing. */
#include "detokenizer.h"

#include "utf8_stream.h"

#include <stdlib.h>

struct ft_detokenizer {
    const ft_tokenizer_t *tok;
    ft_utf8_stream_t u;
    unsigned char *out; /* FT_UTF8_STREAM_OUT_MAX(longest token) bytes */
};

ft_status_t ft_detokenizer_create_for(const ft_tokenizer_t *tok, ft_detokenizer_t **out_detok)
{
    if (!out_detok) return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "detokenizer: no out_detok");
    *out_detok = NULL;
    if (!tok) return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "detokenizer: no tokenizer");
    size_t longest = 0;
    const uint32_t n = ft_tokenizer_n_vocab(tok);
    for (uint32_t i = 0; i < n; i++) {
        const char *b;
        uint32_t len;
        ft_status_t st = ft_tokenizer_token_bytes(tok, (int32_t)i, &b, &len);
        if (st) return ft_status_annotate(st, "detokenizer");
        if (len > longest) longest = len;
    }
    ft_detokenizer_t *d = calloc(1, sizeof(*d));
    if (!d) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "detokenizer");
    d->tok = tok;
    ft_utf8_stream_init(&d->u);
    d->out = malloc(FT_UTF8_STREAM_OUT_MAX(longest));
    if (!d->out) {
        free(d);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "detokenizer: %zu bytes",
                              FT_UTF8_STREAM_OUT_MAX(longest));
    }
    *out_detok = d;
    return FT_OK;
}

void ft_detokenizer_destroy(ft_detokenizer_t *d)
{
    if (!d) return;
    free(d->out);
    free(d);
}

ft_status_t ft_detokenizer_feed(ft_detokenizer_t *d, int32_t id, const char **out_text,
                                size_t *out_len)
{
    if (!d || !out_text || !out_len)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "detokenizer feed: a NULL argument");
    *out_text = (const char *)d->out;
    *out_len = 0;
    const char *b;
    uint32_t len;
    ft_status_t st = ft_tokenizer_token_bytes(d->tok, id, &b, &len);
    if (st) return ft_status_annotate(st, "detokenizer");
    *out_len = ft_utf8_stream_push(&d->u, (const unsigned char *)b, len, d->out);
    return FT_OK;
}

ft_status_t ft_detokenizer_flush(ft_detokenizer_t *d, const char **out_text, size_t *out_len)
{
    if (!d || !out_text || !out_len)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "detokenizer flush: a NULL argument");
    *out_text = (const char *)d->out;
    *out_len = ft_utf8_stream_flush(&d->u, d->out);
    return FT_OK;
}

void ft_detokenizer_reset(ft_detokenizer_t *d)
{
    if (d) ft_utf8_stream_init(&d->u);
}
