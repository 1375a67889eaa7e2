/* The tokenizer as the compiler carries it: a byte-level BPE vocabulary in
 * GGUF's conventions (tokens ordered by id, GPT-2 byte-to-unicode spelling,
 * merges as "left right" strings). Frontends fill it from GGUF
 * tokenizer.ggml.* metadata or from HF tokenizer.json +
 * tokenizer_config.json, and the same vocabulary gives the same struct
 * either way. All strings live in the owning model's arena. */
#ifndef FT_IR_TOKENIZER_IR_H
#define FT_IR_TOKENIZER_IR_H

#include <stdint.h>

/* Token types: the values of GGUF tokenizer.ggml.token_type. */
typedef enum ft_token_type {
    FT_TOKEN_NORMAL = 1,
    FT_TOKEN_UNKNOWN = 2,
    FT_TOKEN_CONTROL = 3,      /* special tokens (<|im_start|>, <|endoftext|>) */
    FT_TOKEN_USER_DEFINED = 4, /* added, non-special tokens (<think>) */
    FT_TOKEN_UNUSED = 5,       /* padding entries up to the model's vocab size */
    FT_TOKEN_BYTE = 6,
} ft_token_type_t;

typedef struct ft_ir_tokenizer {
    const char *model;         /* "gpt2" = byte-level BPE; NULL when absent */
    const char *pre;           /* pre-tokenizer name, e.g. "qwen2" */
    const char *normalizer;    /* "NFC" or "NFKC" (static strings), or NULL: none */
    uint32_t n_tokens;
    const char **tokens;       /* [n_tokens], UTF-8 */
    const uint32_t *token_lens; /* [n_tokens] bytes (tokens may hold NUL) */
    const uint8_t *token_types; /* [n_tokens] ft_token_type_t */
    uint32_t n_merges;
    const char **merges;       /* [n_merges] "left right" */
    int32_t bos_id, eos_id, pad_id, unk_id; /* -1 when absent */
    int add_bos;               /* prepend BOS when encoding */
    const char *chat_template; /* Jinja text, NULL when absent */
} ft_ir_tokenizer_t;

/* Sets every id to -1 and everything else to zero. */
void ft_ir_tokenizer_init(ft_ir_tokenizer_t *tok);

#endif
