/* Token spelling -> id: an open-addressing hash table over the token
 * strings of a vocabulary (which it does not own). */
#ifndef FT_TEXT_VOCAB_INDEX_H
#define FT_TEXT_VOCAB_INDEX_H

#include "freetoken.h"

#include <stddef.h>
#include <stdint.h>

typedef struct ft_vocab_index {
    uint32_t *slots;      /* id + 1; 0 is an empty slot */
    uint64_t mask;        /* slot count - 1 (a power of two) */
    const char *blob;     /* token strings, concatenated */
    const uint64_t *offs; /* [n + 1] byte offsets into blob */
} ft_vocab_index_t;

/* Indexes n tokens whose spellings are blob[offs[i], offs[i + 1]). When a
 * spelling repeats, the lowest id is kept. */
FT_WARN_UNUSED ft_status_t ft_vocab_index_build(ft_vocab_index_t *ix, const char *blob, const uint64_t *offs,
                                 uint32_t n);
void ft_vocab_index_free(ft_vocab_index_t *ix);

/* The id spelled exactly s[0..len), or -1. */
int32_t ft_vocab_index_find(const ft_vocab_index_t *ix, const char *s, size_t len);

#endif
