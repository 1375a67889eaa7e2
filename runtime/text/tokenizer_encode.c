/* Encoding: special tokens split the text into fragments, each fragment
 * is pre-tokenized by the model's regex, and each piece's bytes are
 * merged by BPE (see tokenizer.h). */
#include "tokenizer_internal.h"

#include "nfc.h"
#include "utf8_scan.h"

#include <stdlib.h>
#include <string.h>

typedef struct ft_encode_state {
    const ft_tokenizer_t *tok;
    ft_pretok_match_t *match;
    ft_bpe_scratch_t scratch;
    int32_t *ids; /* [cap] */
    size_t n_ids, cap;
    const char *text; /* the whole text, for offsets in messages */
} ft_encode_state_t;

/* Room for n more ids. Every token covers at least one byte of the text
 * it is encoded from, so the text's length plus bos always suffices
 * unless NFC or NFKC made a fragment longer. */
FT_WARN_UNUSED static ft_status_t ft_encode_reserve(ft_encode_state_t *es, size_t n)
{
    if (n <= es->cap - es->n_ids) return FT_OK;
    size_t cap = es->cap * 2 > es->n_ids + n ? es->cap * 2 : es->n_ids + n;
    if (cap > SIZE_MAX / sizeof(int32_t) || cap > UINT32_MAX)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "encode: more than %u tokens", UINT32_MAX);
    int32_t *ids = realloc(es->ids, cap * sizeof(int32_t));
    if (!ids) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "encode: %zu tokens", cap);
    es->ids = ids;
    es->cap = cap;
    return FT_OK;
}

/* Appends the BPE tokens of one piece p[0, len); at: its byte offset in
 * the text, for messages. */
FT_WARN_UNUSED static ft_status_t ft_encode_piece(ft_encode_state_t *es, const char *piece,
                                                  size_t len, size_t at)
{
    const ft_tokenizer_t *tok = es->tok;
    const unsigned char *p = (const unsigned char *)piece;
    ft_status_t st = ft_encode_reserve(es, len);
    if (st) return st;
    int32_t *ids = es->ids + es->n_ids;
    for (size_t i = 0; i < len; i++) {
        int32_t id = tok->byte_id[p[i]];
        if (id < 0) id = tok->unk; /* not a byte-level vocabulary: the text is lost */
        if (id < 0)
            return ft_status_make(FT_STATUS_UNSUPPORTED,
                                  "text byte %zu (0x%02x): the vocabulary has no token for this "
                                  "byte and no unknown token",
                                  at + i, p[i]);
        ids[i] = id;
    }
    size_t n_out;
    st = ft_bpe_merge(&tok->bpe, &es->scratch, ids, len, &n_out);
    if (st) return ft_status_annotate(st, "text bytes %zu..%zu", at, at + len);
    es->n_ids += n_out;
    return FT_OK;
}

/* Pre-tokenizes and merges text[start, end), which holds no special token:
 * first in NFC or NFKC when the tokenizer normalizes (as Hugging Face's
 * tokenizers do, between the added tokens), in which case byte offsets in
 * messages count in the normalized form. */
FT_WARN_UNUSED static ft_status_t ft_encode_fragment(ft_encode_state_t *es, size_t start, size_t end)
{
    if (end <= start) return FT_OK;
    const char *frag = es->text + start;
    size_t len = end - start;
    char *norm = NULL;
    const int kc = es->tok->norm == 2;
    if (es->tok->norm && !(kc ? ft_nfkc_quick_check(frag, len) : ft_nfc_quick_check(frag, len))) {
        ft_status_t st = kc ? ft_nfkc(frag, len, &norm, &len) : ft_nfc(frag, len, &norm, &len);
        if (st) return ft_status_annotate(st, "encode: text fragment at byte %zu", start);
        frag = norm;
    }
    ft_pretok_cursor_t cur;
    ft_pretok_cursor_init(&cur, es->tok->pretok, es->match, frag, len);
    size_t piece_start, piece_len;
    ft_status_t st = FT_OK, regex_st = FT_OK;
    while (!st && ft_pretok_cursor_next(&cur, &piece_start, &piece_len, &regex_st))
        st = ft_encode_piece(es, frag + piece_start, piece_len, start + piece_start);
    free(norm);
    if (regex_st) /* its offsets count from the fragment */
        return ft_status_annotate(regex_st, "encode: text fragment at byte %zu", start);
    return st;
}

FT_WARN_UNUSED static ft_status_t ft_encode_all(ft_encode_state_t *es, size_t len, unsigned flags)
{
    const ft_tokenizer_t *tok = es->tok;
    if (tok->n_special == 0) return ft_encode_fragment(es, 0, len);
    size_t frag = 0;
    for (size_t i = 0; i < len;) {
        size_t sp_len;
        const int32_t id = ft_tokenizer_match_special(tok, es->text + i, len - i, flags, &sp_len);
        if (id < 0) {
            i++;
            continue;
        }
        ft_status_t st = ft_encode_fragment(es, frag, i);
        if (!st) st = ft_encode_reserve(es, 1);
        if (st) return st;
        es->ids[es->n_ids++] = id;
        i += sp_len;
        frag = i;
    }
    return ft_encode_fragment(es, frag, len);
}

ft_status_t ft_tokenizer_encode(const ft_tokenizer_t *tok, const char *text, size_t len,
                                unsigned flags, int32_t **out_ids, uint32_t *out_n)
{
    *out_ids = NULL;
    *out_n = 0;
    if (len > 0 && !text)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "encode: %zu bytes but no text", len);
    size_t bad;
    if (len > 0 && !ft_utf8_validate(text, len, &bad))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "encode: text is not valid UTF-8 at byte offset %zu (byte 0x%02x)",
                              bad, (unsigned char)text[bad]);
    /* Every token covers at least one byte, so len + 1 (bos) ids suffice
     * (ft_encode_reserve grows them where normalizing lengthens a fragment),
     * and the count must fit the uint32 result. */
    if (len > UINT32_MAX - 2)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "encode: %zu bytes of text is more than one call can encode", len);
    ft_encode_state_t es = {.tok = tok, .text = text, .cap = len + 1};
    es.ids = malloc((len + 1) * sizeof(int32_t));
    if (!es.ids) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "encode: %zu bytes of text", len);
    if ((flags & FT_TOKENIZE_ADD_BOS) && tok->add_bos && tok->bos >= 0)
        es.ids[es.n_ids++] = tok->bos;
    ft_status_t st = len ? ft_pretok_match_create(tok->pretok, &es.match) : FT_OK;
    if (!st && len) st = ft_encode_all(&es, len, flags);
    ft_pretok_match_destroy(es.match);
    ft_bpe_scratch_free(&es.scratch);
    if (st) {
        free(es.ids);
        return st;
    }
    /* Give back the room that merging saved (about half for English). */
    if (es.n_ids > 0 && es.n_ids < es.cap) {
        int32_t *shrunk = realloc(es.ids, es.n_ids * sizeof(int32_t));
        if (shrunk) es.ids = shrunk;
    }
    *out_ids = es.ids;
    *out_n = (uint32_t)es.n_ids;
    return FT_OK;
}
