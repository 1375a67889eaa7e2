/* Pre-tokenization: splitting text into the pieces ("words") that BPE
 * merges within, by the model's regex, through PCRE2 with Unicode
 * properties. The pieces tile the text: text the regex does not match
 * becomes a piece of its own, so no byte is ever dropped. */
#ifndef FT_TEXT_PRETOK_H
#define FT_TEXT_PRETOK_H

#include "freetoken.h"

#include <stddef.h>

typedef struct ft_pretok ft_pretok_t;
typedef struct ft_pretok_match ft_pretok_match_t;

/* pre: "qwen2" (Qwen2/2.5/3), "llama-bpe" (also "llama3", "llama-v3": Llama 3),
 * "gpt2", or "default"/"" (treated as gpt2). where names the source in
 * messages. An unknown name is FT_STATUS_UNSUPPORTED. */
FT_WARN_UNUSED ft_status_t ft_pretok_create(const char *pre, const char *where, ft_pretok_t **out_pretok);
void ft_pretok_destroy(ft_pretok_t *pt);

/* The regex source for a pre-tokenizer name, or NULL when unknown. */
const char *ft_pretok_pattern(const char *pre);

/* Per-call match state (PCRE2 match data): create one per encode, not per
 * piece, and never share it between threads. */
FT_WARN_UNUSED ft_status_t ft_pretok_match_create(const ft_pretok_t *pt, ft_pretok_match_t **out_match);
void ft_pretok_match_destroy(ft_pretok_match_t *m);

/* A walk over the pieces of s[0..n), which must be valid UTF-8 (it is not
 * checked again here). */
typedef struct ft_pretok_cursor {
    const ft_pretok_t *pt;
    ft_pretok_match_t *m;
    const char *s;
    size_t n;
    size_t pos;                        /* bytes consumed so far */
    size_t pending_start, pending_end; /* a match found after a gap */
    int has_pending;
} ft_pretok_cursor_t;

void ft_pretok_cursor_init(ft_pretok_cursor_t *c, const ft_pretok_t *pt, ft_pretok_match_t *m,
                           const char *s, size_t n);

/* The next piece: returns 1 with [*out_start, *out_start + *out_len), 0
 * at the end. A regex engine failure (for example a resource limit) is
 * reported through *out_status (NULL otherwise) and ends the walk. */
int ft_pretok_cursor_next(ft_pretok_cursor_t *c, size_t *out_start, size_t *out_len,
                          ft_status_t *out_status);

#endif
