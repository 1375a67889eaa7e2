/* BPE merges over token ids: the plan's "left right" merge strings become
 * a table (left id, right id) -> (rank, merged id), and a word's symbols
 * are merged lowest rank first, leftmost first on ties (as GPT-2 and
 * llama.cpp do), in O(m log m) for a word of m symbols. */
#ifndef FT_TEXT_BPE_H
#define FT_TEXT_BPE_H

#include "freetoken.h"
#include "vocab_index.h"

#include <stddef.h>
#include <stdint.h>

typedef struct ft_bpe_slot {
    uint64_t key; /* left << 32 | right; UINT64_MAX when empty */
    uint32_t rank;
    int32_t merged;
} ft_bpe_slot_t;

typedef struct ft_bpe {
    ft_bpe_slot_t *slots;
    uint64_t mask;
    uint32_t n_used; /* merges whose three tokens all exist */
} ft_bpe_t;

/* Builds the table from n merges (rank = position). A merge whose left,
 * right or joined spelling is not a token is skipped (it could never
 * produce a token id); a merge without a separating space is an error
 * naming where and its index. A repeated pair keeps its first rank. */
FT_WARN_UNUSED ft_status_t ft_bpe_build(ft_bpe_t *bpe, char *const *merges, size_t n, const ft_vocab_index_t *ix,
                         const char *where);
void ft_bpe_free(ft_bpe_t *bpe);

/* Working memory for merging, grown to the longest word seen and reused. */
typedef struct ft_bpe_scratch {
    int32_t *prev, *next;
    struct ft_bpe_cand *heap;
    size_t cap_syms, cap_heap;
} ft_bpe_scratch_t;

void ft_bpe_scratch_free(ft_bpe_scratch_t *s);

/* Merges ids[0..n) in place; *out_n gets the number of tokens left, which
 * are ids[0..*out_n). */
FT_WARN_UNUSED ft_status_t ft_bpe_merge(const ft_bpe_t *bpe, ft_bpe_scratch_t *s, int32_t *ids, size_t n,
                         size_t *out_n);

#endif
