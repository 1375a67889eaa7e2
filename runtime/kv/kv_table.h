/* A session's page table: which pool page (kv_pool.h) holds each run of
 * page_tokens positions of its sequence, and which of those pages are the
 * prefix tree's (kv_prefix.h).
 *
 * Entry i covers positions [i * page_tokens, (i + 1) * page_tokens). Pages
 * the session shares (with the tree or other sessions: more than one
 * reference) are read-only: a write to one first copies it (copy on
 * write), which happens only when a session rewinds into a shared page and
 * appends there. The session holds one reference per entry.
 *
 * Not thread-safe: the engine calls it under its step lock. */
#ifndef FT_KV_KV_TABLE_H
#define FT_KV_KV_TABLE_H

#include "kv_prefix.h"

typedef struct ft_kv_table {
    ft_kv_pool_t *pool;
    uint32_t page_shift;  /* log2(page_tokens) */
    size_t block_bytes;   /* one layer's K (or V) rows of a page */
    uint32_t cap;         /* entries: n_ctx / page_tokens, rounded up */
    uint32_t n_pages;     /* entries holding a page */
    uint32_t n_published; /* entries [0, n_published) are on the tree's path (nodes[]) */
    uint32_t *pages;      /* [cap] */
    uint8_t **data;       /* [cap] each page's memory */
    ft_kv_node_t **nodes; /* [cap] the tree's node for the page's tokens, or NULL */
} ft_kv_table_t;

FT_WARN_UNUSED ft_status_t ft_kv_table_init(ft_kv_table_t *t, ft_kv_pool_t *pool, uint32_t n_ctx,
                                            const ft_allocator_t *a);
/* Drops every page reference and frees the arrays. */
void ft_kv_table_free(ft_kv_table_t *t, const ft_allocator_t *a);

/* Layer `layer`'s K (kv 0) or V (kv 1) rows of entry i: page_tokens rows
 * of the pool's row_elems elements. The attention loops' one accessor. */
static inline uint8_t *ft_kv_table_rows(const ft_kv_table_t *t, uint32_t i, uint32_t layer,
                                        uint32_t kv)
{
    return ft_kv_page_rows(t->data[i], t->block_bytes, layer, kv);
}

/* Makes positions [pos0, pos0 + n) writable: a page for every entry they
 * touch, a private copy of a shared one. Errors: the pool's (a full pool:
 * FT_STATUS_RESOURCE_EXHAUSTED); what was prepared stays. */
FT_WARN_UNUSED ft_status_t ft_kv_table_prepare(ft_kv_table_t *t, uint32_t pos0, uint32_t n);
/* Keeps positions [0, n_past): drops the entries past them (a partial page
 * stays, and is copied when next written if shared). */
void ft_kv_table_truncate(ft_kv_table_t *t, uint32_t n_past);
/* Caches the full pages of tokens[0, n_past) (the session's sequence) not
 * yet in the tree. A page whose tokens the tree has already (computed by
 * another session at the same time) is replaced by the tree's: the same
 * KV, one copy. */
FT_WARN_UNUSED ft_status_t ft_kv_table_publish(ft_kv_table_t *t, ft_kv_tree_t *tree,
                                               const int32_t *tokens, uint32_t n_past,
                                               ft_kv_prio_t prio);
/* An empty table takes the longest prefix of tokens[0, max_tokens) the
 * tree can restore: with rstate_bytes 0 (attention only) the full pages on
 * the path or the deepest anchor, whichever is longer; else only an
 * anchor, whose state is copied into rstate. *out_n: the positions
 * restored (0: nothing). Errors: the tail page's allocation. */
FT_WARN_UNUSED ft_status_t ft_kv_table_restore(ft_kv_table_t *t, ft_kv_tree_t *tree,
                                               const int32_t *tokens, uint32_t max_tokens,
                                               uint8_t *rstate, size_t rstate_bytes,
                                               ft_kv_prio_t prio, uint32_t *out_n);
/* Records an anchor at pos (<= the positions the table holds, whose full
 * pages before pos must be published: tokens[0, pos) is the sequence),
 * with a copy of rstate. */
FT_WARN_UNUSED ft_status_t ft_kv_table_anchor(ft_kv_table_t *t, ft_kv_tree_t *tree,
                                              const int32_t *tokens, uint32_t pos,
                                              const uint8_t *rstate, size_t rstate_bytes,
                                              ft_kv_prio_t prio);

#endif
