/* BPE merge table and per-word merging (see bpe.h). */
#include "bpe.h"

#include <stdlib.h>
#include <string.h>

/* A candidate merge of the symbols at positions left and right; stale
 * once either symbol changed (checked against the ids recorded here). */
struct ft_bpe_cand {
    uint32_t rank;
    uint32_t left, right;
    int32_t left_id, right_id;
    int32_t merged;
};

#define FT_BPE_EMPTY UINT64_MAX

static uint64_t ft_bpe_hash(uint64_t key, uint64_t mask)
{
    key ^= key >> 29;
    key *= 0x9e3779b97f4a7c15ull; /* Fibonacci hashing spreads the ids */
    return (key >> 17) & mask;
}

static const ft_bpe_slot_t *ft_bpe_find(const ft_bpe_t *bpe, int32_t left, int32_t right)
{
    const uint64_t key = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    for (uint64_t h = ft_bpe_hash(key, bpe->mask);; h = (h + 1) & bpe->mask) {
        const ft_bpe_slot_t *s = &bpe->slots[h];
        if (s->key == key) return s;
        if (s->key == FT_BPE_EMPTY) return NULL;
    }
}

static void ft_bpe_insert(ft_bpe_t *bpe, int32_t left, int32_t right, uint32_t rank, int32_t merged)
{
    const uint64_t key = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    for (uint64_t h = ft_bpe_hash(key, bpe->mask);; h = (h + 1) & bpe->mask) {
        ft_bpe_slot_t *s = &bpe->slots[h];
        if (s->key == key) return; /* a repeated merge: the first (lowest) rank stays */
        if (s->key == FT_BPE_EMPTY) {
            s->key = key;
            s->rank = rank;
            s->merged = merged;
            bpe->n_used++;
            return;
        }
    }
}

ft_status_t ft_bpe_build(ft_bpe_t *bpe, char *const *merges, size_t n, const ft_vocab_index_t *ix,
                         const char *where)
{
    memset(bpe, 0, sizeof(*bpe));
    if (n > UINT32_MAX / 4)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: tokenizer.merges: %zu merges", where, n);
    uint64_t n_slots = 16;
    while (n_slots < 2ull * n)
        n_slots *= 2;
    bpe->slots = malloc(n_slots * sizeof(ft_bpe_slot_t));
    if (!bpe->slots)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: tokenizer.merges: %zu merges", where,
                              n);
    for (uint64_t i = 0; i < n_slots; i++)
        bpe->slots[i].key = FT_BPE_EMPTY;
    bpe->mask = n_slots - 1;

    char *joined = NULL; /* left + right, reused across merges */
    size_t joined_cap = 0;
    ft_status_t st = FT_OK;
    for (size_t r = 0; r < n && !st; r++) {
        const char *m = merges[r] ? merges[r] : "";
        /* Byte-level spellings hold no raw space, so the first space
         * after the first byte separates the two halves. */
        const char *sp = m[0] ? strchr(m + 1, ' ') : NULL;
        if (!sp) {
            st = ft_status_make(FT_STATUS_FORMAT,
                                "%s: tokenizer.merges[%zu] '%.40s' is not two tokens separated "
                                "by a space",
                                where, r, m);
            break;
        }
        const size_t left_len = (size_t)(sp - m), right_len = strlen(sp + 1);
        if (left_len + right_len > joined_cap) {
            joined_cap = 2 * (left_len + right_len);
            char *p = realloc(joined, joined_cap);
            if (!p) {
                st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: tokenizer.merges", where);
                break;
            }
            joined = p;
        }
        memcpy(joined, m, left_len);
        memcpy(joined + left_len, sp + 1, right_len);
        const int32_t left = ft_vocab_index_find(ix, m, left_len);
        const int32_t right = ft_vocab_index_find(ix, sp + 1, right_len);
        const int32_t both = ft_vocab_index_find(ix, joined, left_len + right_len);
        if (left >= 0 && right >= 0 && both >= 0)
            ft_bpe_insert(bpe, left, right, (uint32_t)r, both);
    }
    free(joined);
    if (st) ft_bpe_free(bpe);
    return st;
}

void ft_bpe_free(ft_bpe_t *bpe)
{
    free(bpe->slots);
    memset(bpe, 0, sizeof(*bpe));
}

void ft_bpe_scratch_free(ft_bpe_scratch_t *s)
{
    free(s->prev);
    free(s->next);
    free(s->heap);
    memset(s, 0, sizeof(*s));
}

FT_WARN_UNUSED static ft_status_t ft_bpe_scratch_reserve(ft_bpe_scratch_t *s, size_t n)
{
    if (n <= s->cap_syms) return FT_OK;
    /* Each merge removes one symbol and adds at most two candidates, so a
     * word of n symbols never holds more than 3n candidates. */
    if (n > SIZE_MAX / (3 * sizeof(struct ft_bpe_cand)))
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "BPE: a word of %zu bytes", n);
    size_t cap = s->cap_syms ? s->cap_syms : 64;
    while (cap < n)
        cap = cap > SIZE_MAX / 2 / (3 * sizeof(struct ft_bpe_cand)) ? n : cap * 2;
    int32_t *prev = realloc(s->prev, cap * sizeof(int32_t));
    if (prev) s->prev = prev;
    int32_t *next = realloc(s->next, cap * sizeof(int32_t));
    if (next) s->next = next;
    struct ft_bpe_cand *heap = realloc(s->heap, 3 * cap * sizeof(*heap));
    if (heap) s->heap = heap;
    if (!prev || !next || !heap)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "BPE: scratch for a word of %zu bytes", n);
    s->cap_syms = cap;
    s->cap_heap = 3 * cap;
    return FT_OK;
}

/* Min-heap on (rank, left position). */
static int ft_bpe_before(const struct ft_bpe_cand *a, const struct ft_bpe_cand *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static void ft_bpe_push(struct ft_bpe_cand *heap, size_t *n, struct ft_bpe_cand c)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!ft_bpe_before(&c, &heap[parent])) break;
        heap[i] = heap[parent];
        i = parent;
    }
    heap[i] = c;
}

static struct ft_bpe_cand ft_bpe_pop(struct ft_bpe_cand *heap, size_t *n)
{
    struct ft_bpe_cand top = heap[0], last = heap[--*n];
    size_t i = 0;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= *n) break;
        if (child + 1 < *n && ft_bpe_before(&heap[child + 1], &heap[child])) child++;
        if (!ft_bpe_before(&heap[child], &last)) break;
        heap[i] = heap[child];
        i = child;
    }
    if (*n > 0) heap[i] = last;
    return top;
}

/* Queues the pair (left, right) when it has a merge. */
static void ft_bpe_consider(const ft_bpe_t *bpe, const int32_t *ids, int32_t left, int32_t right,
                            struct ft_bpe_cand *heap, size_t *n_heap)
{
    if (left < 0 || right < 0) return;
    const ft_bpe_slot_t *m = ft_bpe_find(bpe, ids[left], ids[right]);
    if (!m) return;
    struct ft_bpe_cand c = {m->rank,   (uint32_t)left, (uint32_t)right,
                            ids[left], ids[right],     m->merged};
    ft_bpe_push(heap, n_heap, c);
}

ft_status_t ft_bpe_merge(const ft_bpe_t *bpe, ft_bpe_scratch_t *s, int32_t *ids, size_t n,
                         size_t *out_n)
{
    *out_n = n;
    if (n < 2) return FT_OK;
    if (n > INT32_MAX) return ft_status_make(FT_STATUS_OUT_OF_RANGE, "BPE: a word of %zu bytes", n);
    ft_status_t st = ft_bpe_scratch_reserve(s, n);
    if (st) return st;
    int32_t *prev = s->prev, *next = s->next;
    size_t n_heap = 0;
    for (size_t i = 0; i < n; i++) {
        prev[i] = (int32_t)i - 1;
        next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    }
    for (size_t i = 0; i + 1 < n; i++)
        ft_bpe_consider(bpe, ids, (int32_t)i, (int32_t)i + 1, s->heap, &n_heap);
    while (n_heap > 0) {
        const struct ft_bpe_cand c = ft_bpe_pop(s->heap, &n_heap);
        /* Stale: a symbol was merged away or changed since c was queued. */
        if (ids[c.left] != c.left_id || ids[c.right] != c.right_id ||
            next[c.left] != (int32_t)c.right)
            continue;
        ids[c.left] = c.merged;
        ids[c.right] = -1;
        next[c.left] = next[c.right];
        if (next[c.right] >= 0) prev[next[c.right]] = (int32_t)c.left;
        ft_bpe_consider(bpe, ids, prev[c.left], (int32_t)c.left, s->heap, &n_heap);
        ft_bpe_consider(bpe, ids, (int32_t)c.left, next[c.left], s->heap, &n_heap);
    }
    /* Compact the surviving symbols, in order. */
    size_t k = 0;
    for (int32_t i = 0; i >= 0; i = next[i])
        ids[k++] = ids[i];
    *out_n = k;
    return FT_OK;
}
