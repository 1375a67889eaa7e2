/* Byte-level BPE tokenizer (GPT-2 / Qwen style) built from a plan's
 * tokenizer message: pre-tokenization by the model's regex through PCRE2
 * (Unicode properties), GPT-2 byte-to-unicode mapping, merges by rank,
 * special and added tokens matched before pre-tokenization, the text
 * between them normalized first (NFC or NFKC, nfc.h) when the plan's
 * tokenizer says so. Encoding then decoding any valid UTF-8 text gives back
 * the same bytes, or their normalized form under a normalizer. */
#ifndef FT_TEXT_TOKENIZER_H
#define FT_TEXT_TOKENIZER_H

#include "freetoken.h"
#include "plan.pb-c.h"

#include <stddef.h>
#include <stdint.h>

typedef struct ft_tokenizer ft_tokenizer_t;

/* where: a name for messages (the plan file). Copies what it needs from pt.
 * Refuses tokenizer models other than "gpt2" and pre-tokenizers it does
 * not know, naming them. */
FT_WARN_UNUSED ft_status_t ft_tokenizer_create(const Ftplan__Tokenizer *pt, const char *where,
                                ft_tokenizer_t **out_tok);
void ft_tokenizer_destroy(ft_tokenizer_t *tok);

uint32_t ft_tokenizer_n_vocab(const ft_tokenizer_t *tok);
int32_t ft_tokenizer_bos(const ft_tokenizer_t *tok); /* -1 when none */
int32_t ft_tokenizer_eos(const ft_tokenizer_t *tok);
/* End of generation: eos, <|im_end|>, <|endoftext|> and other end tokens. */
int ft_tokenizer_is_eog(const ft_tokenizer_t *tok, int32_t id);
/* The id of a token spelled exactly `text` (special tokens too), or -1. */
int32_t ft_tokenizer_find(const ft_tokenizer_t *tok, const char *text);

/* flags: FT_TOKENIZE_SPECIAL, FT_TOKENIZE_ADD_BOS (freetoken.h). */
/* Encodes len bytes of UTF-8. Invalid UTF-8 is an error naming the byte
 * offset. *out_ids is malloc'ed (free()); *out_n may be 0 for "". */
FT_WARN_UNUSED ft_status_t ft_tokenizer_encode(const ft_tokenizer_t *tok, const char *text, size_t len,
                                unsigned flags, int32_t **out_ids, uint32_t *out_n);

/* The bytes a token stands for (after byte-level decoding; special tokens
 * give their text). Valid while tok lives. An id out of range is an error. */
FT_WARN_UNUSED ft_status_t ft_tokenizer_token_bytes(const ft_tokenizer_t *tok, int32_t id, const char **out_bytes,
                                     uint32_t *out_len);

/* Decodes ids into malloc'ed bytes (NUL-terminated, *out_len without it). */
FT_WARN_UNUSED ft_status_t ft_tokenizer_decode(const ft_tokenizer_t *tok, const int32_t *ids, uint32_t n,
                                char **out_text, size_t *out_len);

/* The chat template text from the plan ("" when none). */
const char *ft_tokenizer_chat_template(const ft_tokenizer_t *tok);

#endif
