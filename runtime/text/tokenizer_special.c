/* Special and added tokens, matched in the text before pre-tokenization:
 * CONTROL tokens (<|im_start|>) only when the caller asks for them with
 * FT_TOKENIZE_SPECIAL, USER_DEFINED tokens (<think>) always, as llama.cpp
 * does. At each position the longest token wins (leftmost-longest, as
 * Hugging Face's added-token matcher does). */
#include "tokenizer_internal.h"

#include "utf8_scan.h"

#include <stdlib.h>
#include <string.h>

static size_t ft_special_len(const ft_tokenizer_t *tok, int32_t id)
{
    return (size_t)(tok->text_offs[id + 1] - tok->text_offs[id]);
}

/* A sort key, so that qsort needs no pointer back to the tokenizer. */
typedef struct ft_special_key {
    unsigned char first;
    size_t len;
    int32_t id;
} ft_special_key_t;

/* First byte ascending, then longer first, then lower id. */
static int ft_special_cmp(const void *a, const void *b)
{
    const ft_special_key_t *x = a, *y = b;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int ft_special_wanted(const ft_tokenizer_t *tok, int32_t id)
{
    const uint8_t t = tok->types[id];
    if (t != FT_TOKTYPE_CONTROL && t != FT_TOKTYPE_USER_DEFINED) return 0;
    const size_t len = ft_special_len(tok, id);
    size_t bad;
    /* Only valid UTF-8 spellings: then a match in valid text always
     * starts and ends on character boundaries. */
    return len > 0 && ft_utf8_validate(tok->text_blob + tok->text_offs[id], len, &bad);
}

ft_status_t ft_tokenizer_build_specials(ft_tokenizer_t *tok)
{
    uint32_t n = 0;
    for (uint32_t id = 0; id < tok->n_vocab; id++)
        n += ft_special_wanted(tok, (int32_t)id);
    tok->n_special = n;
    memset(tok->special_start, 0, sizeof(tok->special_start));
    if (n == 0) return FT_OK;
    tok->special_ids = malloc((size_t)n * sizeof(int32_t));
    ft_special_key_t *keys = malloc((size_t)n * sizeof(*keys));
    if (!tok->special_ids || !keys) {
        free(keys);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "tokenizer: %u special tokens", n);
    }
    uint32_t k = 0;
    for (uint32_t id = 0; id < tok->n_vocab; id++) {
        if (!ft_special_wanted(tok, (int32_t)id)) continue;
        keys[k].first = (unsigned char)tok->text_blob[tok->text_offs[id]];
        keys[k].len = ft_special_len(tok, (int32_t)id);
        keys[k].id = (int32_t)id;
        k++;
    }
    qsort(keys, n, sizeof(*keys), ft_special_cmp);
    for (k = 0; k < n; k++)
        tok->special_ids[k] = keys[k].id;
    free(keys);
    /* special_start[b]: the first entry whose first byte is >= b. */
    uint32_t i = 0;
    for (unsigned b = 0; b < 256; b++) {
        tok->special_start[b] = i;
        while (i < n && (unsigned char)tok->text_blob[tok->text_offs[tok->special_ids[i]]] == b)
            i++;
    }
    tok->special_start[256] = n;
    return FT_OK;
}

int32_t ft_tokenizer_match_special(const ft_tokenizer_t *tok, const char *s, size_t n,
                                   unsigned flags, size_t *out_len)
{
    const unsigned char b = (unsigned char)s[0];
    const uint32_t end = tok->special_start[b + 1];
    for (uint32_t i = tok->special_start[b]; i < end; i++) {
        const int32_t id = tok->special_ids[i];
        if (tok->types[id] == FT_TOKTYPE_CONTROL && !(flags & FT_TOKENIZE_SPECIAL)) continue;
        const size_t len = ft_special_len(tok, id);
        if (len <= n && memcmp(s, tok->text_blob + tok->text_offs[id], len) == 0) {
            *out_len = len;
            return id;
        }
    }
    return -1;
}
