/* Byte-level BPE tokenizer: building it from the plan, lookups and
 * decoding (encoding is in tokenizer_encode.c, special tokens in
 * tokenizer_special.c). */
#include "tokenizer_internal.h"

#include "base/checked.h"
#include "byte_unicode.h"
#include "utf8_scan.h"

#include <stdlib.h>
#include <string.h>

/* Tokens that end generation besides eos, when the vocabulary has them. */
static const char *const ft_tokenizer_eog_names[] = {"<|im_end|>", "<|endoftext|>", "<|eot_id|>",
                                                     "<|end|>", "<|return|>", "<|call|>"};

static int ft_tokenizer_hex(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The byte a SentencePiece-style byte-fallback token <0xNN> stands for,
 * or -1 when s[0..len) is not spelled so. */
static int ft_tokenizer_fallback_byte(const unsigned char *s, size_t len)
{
    if (len != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    const int hi = ft_tokenizer_hex(s[3]), lo = ft_tokenizer_hex(s[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

/* What a token stands for, written to out (room for len bytes: the result
 * is never longer than the spelling). Special and added tokens stand for
 * their own text; byte tokens spelled <0xNN> (byte fallback, GGUF token
 * type BYTE) for that one byte, a piece of a UTF-8 character that the
 * detokenizer puts together; the others are byte-level spellings, one code
 * point per byte. A code point that spells no byte (not a byte-level
 * vocabulary) is kept as its UTF-8, as are bytes that are not valid
 * UTF-8. */
static size_t ft_tokenizer_decode_spelling(uint8_t type, const unsigned char *s, size_t len,
                                           unsigned char *out)
{
    const int fallback = type == FT_TOKTYPE_BYTE ? ft_tokenizer_fallback_byte(s, len) : -1;
    if (fallback >= 0) {
        out[0] = (unsigned char)fallback;
        return 1;
    }
    if (type == FT_TOKTYPE_CONTROL || type == FT_TOKTYPE_USER_DEFINED ||
        type == FT_TOKTYPE_UNKNOWN) {
        memcpy(out, s, len);
        return len;
    }
    size_t k = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = ft_utf8_next(s + i, len - i, &cp);
        int b = n ? ft_byte_unicode_decode(cp) : -1;
        if (n == 0) n = 1;
        if (b >= 0) {
            out[k++] = (unsigned char)b;
        } else {
            memcpy(out + k, s + i, n);
            k += n;
        }
        i += n;
    }
    return k;
}

FT_WARN_UNUSED static ft_status_t ft_tokenizer_check_id(const char *where, const char *field, int32_t id,
                                         uint32_t n)
{
    if (id < -1 || (id >= 0 && (uint32_t)id >= n))
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: tokenizer.%s is %d, expected -1 or a token id below %u", where,
                              field, id, n);
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_tokenizer_check(const Ftplan__Tokenizer *pt, const char *where)
{
    if (!pt->model || strcmp(pt->model, "gpt2") != 0)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: tokenizer.model '%s' is not supported (only 'gpt2': "
                              "byte-level BPE)",
                              where, pt->model ? pt->model : "");
    if (pt->n_tokens == 0 || pt->n_tokens >= INT32_MAX)
        return ft_status_make(FT_STATUS_FORMAT, "%s: tokenizer.tokens: %zu tokens", where,
                              pt->n_tokens);
    if (pt->token_types.len != pt->n_tokens)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: tokenizer.token_types: %zu bytes for %zu "
                              "tokens",
                              where, pt->token_types.len, pt->n_tokens);
    for (size_t i = 0; i < pt->n_tokens; i++) {
        const uint8_t t = pt->token_types.data[i];
        if (t < FT_TOKTYPE_NORMAL || t > FT_TOKTYPE_BYTE)
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: tokenizer.token_types[%zu] is %u, expected 1..6", where, i,
                                  t);
        if (pt->tokens[i].len > 0 && !pt->tokens[i].data)
            return ft_status_make(FT_STATUS_FORMAT, "%s: tokenizer.tokens[%zu] has no data", where,
                                  i);
    }
    const uint32_t n = (uint32_t)pt->n_tokens;
    ft_status_t st = ft_tokenizer_check_id(where, "bos_id", pt->bos_id, n);
    if (!st) st = ft_tokenizer_check_id(where, "eos_id", pt->eos_id, n);
    if (!st) st = ft_tokenizer_check_id(where, "pad_id", pt->pad_id, n);
    if (!st) st = ft_tokenizer_check_id(where, "unk_id", pt->unk_id, n);
    return st;
}

/* Copies the spellings and decodes each token's bytes. */
FT_WARN_UNUSED static ft_status_t ft_tokenizer_load_tokens(ft_tokenizer_t *tok, const Ftplan__Tokenizer *pt,
                                            const char *where)
{
    const uint32_t n = tok->n_vocab;
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!ft_add_u64(total, pt->tokens[i].len, &total) || total > SIZE_MAX / 2)
            return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                                  "%s: tokenizer.tokens: spellings overflow at token %u", where, i);
    tok->types = malloc(n);
    tok->text_offs = malloc(((size_t)n + 1) * sizeof(uint64_t));
    tok->bytes_offs = malloc(((size_t)n + 1) * sizeof(uint64_t));
    tok->text_blob = malloc(total ? (size_t)total : 1);
    tok->bytes_blob = malloc(total ? (size_t)total : 1);
    if (!tok->types || !tok->text_offs || !tok->bytes_offs || !tok->text_blob || !tok->bytes_blob)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: tokenizer: %u tokens, %llu bytes",
                              where, n, (unsigned long long)total);
    memcpy(tok->types, pt->token_types.data, n);
    uint64_t text_at = 0, bytes_at = 0;
    for (uint32_t i = 0; i < n; i++) {
        const size_t len = pt->tokens[i].len;
        tok->text_offs[i] = text_at;
        tok->bytes_offs[i] = bytes_at;
        if (len) {
            memcpy(tok->text_blob + text_at, pt->tokens[i].data, len);
            bytes_at += ft_tokenizer_decode_spelling(tok->types[i], pt->tokens[i].data, len,
                                                     (unsigned char *)tok->bytes_blob + bytes_at);
        }
        text_at += len;
    }
    tok->text_offs[n] = text_at;
    tok->bytes_offs[n] = bytes_at;
    return FT_OK;
}

static void ft_tokenizer_find_bytes(ft_tokenizer_t *tok)
{
    for (int b = 0; b < 256; b++) {
        unsigned char spell[4];
        size_t len = ft_utf8_put(ft_byte_unicode_encode((uint8_t)b), spell);
        tok->byte_id[b] = ft_vocab_index_find(&tok->index, (const char *)spell, len);
    }
}

static void ft_tokenizer_find_eog(ft_tokenizer_t *tok)
{
    tok->n_eog = 0;
    if (tok->eos >= 0) tok->eog[tok->n_eog++] = tok->eos;
    for (size_t i = 0; i < sizeof(ft_tokenizer_eog_names) / sizeof(ft_tokenizer_eog_names[0]);
         i++) {
        const char *name = ft_tokenizer_eog_names[i];
        /* harmony (gpt-oss): <|end|> ends a message and the reply goes on (a
         * final answer after the analysis); <|return|> and <|call|> end it */
        if (!strcmp(name, "<|end|>") && ft_vocab_index_find(&tok->index, "<|return|>", 10) >= 0)
            continue;
        const int32_t id = ft_vocab_index_find(&tok->index, name, strlen(name));
        if (id >= 0 && !ft_tokenizer_is_eog(tok, id) && tok->n_eog < FT_TOKENIZER_MAX_EOG)
            tok->eog[tok->n_eog++] = id;
    }
}

/* tokenizer.normalizer: "" (none), "NFC" or "NFKC"; a plan asking for another
 * would tokenize differently from its model's, so it is refused. */
FT_WARN_UNUSED static ft_status_t ft_tokenizer_normalizer(ft_tokenizer_t *tok, const char *norm,
                                                          const char *where)
{
    if (!norm || !*norm) return FT_OK;
    if (strcmp(norm, "NFC") == 0 || strcmp(norm, "NFKC") == 0) {
        tok->norm = norm[2] == 'K' ? 2 : 1;
        return FT_OK;
    }
    return ft_status_make(FT_STATUS_UNSUPPORTED,
                          "%s: tokenizer.normalizer '%.40s' is not one freetoken applies (known: "
                          "NFC, NFKC)",
                          where, norm);
}

ft_status_t ft_tokenizer_create(const Ftplan__Tokenizer *pt, const char *where,
                                ft_tokenizer_t **out_tok)
{
    *out_tok = NULL;
    if (!where) where = "tokenizer";
    if (!pt) return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "%s: no tokenizer", where);
    ft_status_t st = ft_tokenizer_check(pt, where);
    if (st) return st;
    ft_tokenizer_t *tok = calloc(1, sizeof(*tok));
    if (!tok) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: tokenizer", where);
    tok->n_vocab = (uint32_t)pt->n_tokens;
    tok->bos = pt->bos_id;
    tok->eos = pt->eos_id;
    tok->pad = pt->pad_id;
    tok->unk = pt->unk_id;
    tok->add_bos = pt->add_bos;
    tok->chat_template = strdup(pt->chat_template ? pt->chat_template : "");
    if (!tok->chat_template)
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: tokenizer.chat_template", where);
    if (!st) st = ft_tokenizer_load_tokens(tok, pt, where);
    if (!st) st = ft_vocab_index_build(&tok->index, tok->text_blob, tok->text_offs, tok->n_vocab);
    if (!st) st = ft_bpe_build(&tok->bpe, pt->merges, pt->n_merges, &tok->index, where);
    if (!st) st = ft_pretok_create(pt->pre, where, &tok->pretok);
    if (!st) st = ft_tokenizer_normalizer(tok, pt->normalizer, where);
    if (!st) st = ft_tokenizer_build_specials(tok);
    if (st) {
        ft_tokenizer_destroy(tok);
        return st;
    }
    ft_tokenizer_find_bytes(tok);
    ft_tokenizer_find_eog(tok);
    *out_tok = tok;
    return FT_OK;
}

void ft_tokenizer_destroy(ft_tokenizer_t *tok)
{
    if (!tok) return;
    ft_pretok_destroy(tok->pretok);
    ft_bpe_free(&tok->bpe);
    ft_vocab_index_free(&tok->index);
    free(tok->special_ids);
    free(tok->types);
    free(tok->text_blob);
    free(tok->text_offs);
    free(tok->bytes_blob);
    free(tok->bytes_offs);
    free(tok->chat_template);
    free(tok);
}

uint32_t ft_tokenizer_n_vocab(const ft_tokenizer_t *tok)
{
    return tok->n_vocab;
}

int32_t ft_tokenizer_bos(const ft_tokenizer_t *tok)
{
    return tok->bos;
}

int32_t ft_tokenizer_eos(const ft_tokenizer_t *tok)
{
    return tok->eos;
}

int ft_tokenizer_is_eog(const ft_tokenizer_t *tok, int32_t id)
{
    for (uint32_t i = 0; i < tok->n_eog; i++)
        if (tok->eog[i] == id) return 1;
    return 0;
}

int32_t ft_tokenizer_find(const ft_tokenizer_t *tok, const char *text)
{
    return text ? ft_vocab_index_find(&tok->index, text, strlen(text)) : -1;
}

const char *ft_tokenizer_chat_template(const ft_tokenizer_t *tok)
{
    return tok->chat_template;
}

ft_status_t ft_tokenizer_token_bytes(const ft_tokenizer_t *tok, int32_t id, const char **out_bytes,
                                     uint32_t *out_len)
{
    if (id < 0 || (uint32_t)id >= tok->n_vocab)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "token id %d is out of range (vocabulary of %u tokens)", id,
                              tok->n_vocab);
    *out_bytes = tok->bytes_blob + tok->bytes_offs[id];
    *out_len = (uint32_t)(tok->bytes_offs[id + 1] - tok->bytes_offs[id]);
    return FT_OK;
}

ft_status_t ft_tokenizer_decode(const ft_tokenizer_t *tok, const int32_t *ids, uint32_t n,
                                char **out_text, size_t *out_len)
{
    *out_text = NULL;
    *out_len = 0;
    if (n > 0 && !ids)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "decode: %u ids but no array", n);
    size_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (ids[i] < 0 || (uint32_t)ids[i] >= tok->n_vocab)
            return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                                  "decode: ids[%u] = %d is out of range (vocabulary of %u tokens)",
                                  i, ids[i], tok->n_vocab);
        const size_t len = (size_t)(tok->bytes_offs[ids[i] + 1] - tok->bytes_offs[ids[i]]);
        if (total > SIZE_MAX - 1 - len)
            return ft_status_make(FT_STATUS_OUT_OF_RANGE, "decode: output overflows at ids[%u]", i);
        total += len;
    }
    char *text = malloc(total + 1);
    if (!text) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "decode: %zu bytes", total + 1);
    size_t at = 0;
    for (uint32_t i = 0; i < n; i++) {
        const size_t len = (size_t)(tok->bytes_offs[ids[i] + 1] - tok->bytes_offs[ids[i]]);
        memcpy(text + at, tok->bytes_blob + tok->bytes_offs[ids[i]], len);
        at += len;
    }
    text[at] = '\0';
    *out_text = text;
    *out_len = at;
    return FT_OK;
}
