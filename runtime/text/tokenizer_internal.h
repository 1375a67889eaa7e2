/* The tokenizer object, shared by tokenizer.c (building, lookups,
 * decoding), tokenizer_special.c and tokenizer_encode.c. */
#ifndef FT_TEXT_TOKENIZER_INTERNAL_H
#define FT_TEXT_TOKENIZER_INTERNAL_H

#include "bpe.h"
#include "pretok.h"
#include "tokenizer.h"
#include "vocab_index.h"

#define FT_TOKENIZER_MAX_EOG 8

/* Token types as the plan stores them (one byte per token): GGUF's
 * tokenizer.ggml.token_type values, which the compiler's ft_token_type_t
 * also uses. */
enum {
    FT_TOKTYPE_NORMAL = 1,
    FT_TOKTYPE_UNKNOWN = 2,
    FT_TOKTYPE_CONTROL = 3,      /* special: <|im_start|>, <|endoftext|> */
    FT_TOKTYPE_USER_DEFINED = 4, /* added, not special: <think> */
    FT_TOKTYPE_UNUSED = 5,
    FT_TOKTYPE_BYTE = 6,
};

struct ft_tokenizer {
    uint32_t n_vocab;
    uint8_t *types;       /* [n_vocab] ft_token_type_t */
    char *text_blob;      /* spellings as the plan has them, concatenated */
    uint64_t *text_offs;  /* [n_vocab + 1] */
    char *bytes_blob;     /* what each token decodes to, concatenated */
    uint64_t *bytes_offs; /* [n_vocab + 1] */
    ft_vocab_index_t index;
    ft_bpe_t bpe;
    ft_pretok_t *pretok;
    int norm;             /* normalize each text fragment first: 0 no, 1 NFC, 2 NFKC */
    int32_t byte_id[256]; /* the token of each single byte, -1 when absent */

    /* Tokens matched in the text before pre-tokenization (CONTROL with
     * FT_TOKENIZE_SPECIAL, USER_DEFINED always), sorted by first byte,
     * then longest first; those starting with byte b are
     * special_ids[special_start[b] .. special_start[b + 1]). */
    int32_t *special_ids;
    uint32_t n_special;
    uint32_t special_start[257];

    int32_t bos, eos, pad, unk;
    int add_bos;
    int32_t eog[FT_TOKENIZER_MAX_EOG];
    uint32_t n_eog;
    char *chat_template;
};

/* Builds the special-token table of tok (types and spellings set). */
FT_WARN_UNUSED ft_status_t ft_tokenizer_build_specials(ft_tokenizer_t *tok);

/* The special token that starts at s[0..n) under flags, longest first,
 * or -1. *out_len gets its length in bytes. */
int32_t ft_tokenizer_match_special(const ft_tokenizer_t *tok, const char *s, size_t n,
                                   unsigned flags, size_t *out_len);

#endif
