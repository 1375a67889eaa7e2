/* The prefix tree: a radix tree over full KV pages, shared copy-on-write
 * between sessions, and the semantic anchors hung on it (DESIGN.md section
 * 7).
 *
 * A node is one full page: page_tokens token ids and the page (kv_pool.h)
 * whose KV those tokens produced after the path from the root to its
 * parent. A session whose tokens start with a path attaches those pages
 * (one reference each) instead of computing them; a session publishes each
 * page it fills. The tree holds one reference per node's page, so pages of
 * finished sessions stay cached.
 *
 * An anchor is a position the chat layer marked (end of the system prompt,
 * of a message, a tool call, a tool result): the node of the last full page
 * before it (the root when none), the tail tokens after that page, a
 * private copy of the page holding the tail's KV (the partial last page is
 * copied, never shared), and a copy of the session's recurrent state at
 * the position (ft_session_t.rstate; zero bytes for attention-only
 * models), which truncation cannot recover. Restoring an anchor attaches
 * the path's pages and copies the tail page and the state: O(pages +
 * state), not O(tokens).
 *
 * Eviction, when the pool needs a page: the leaves only (nodes with no
 * children and no anchors, and anchors), never a node whose page a session
 * still holds; low priority entries first (side requests: title and quota
 * probes), then least recently used. So short side requests evict each
 * other before they evict a conversation's pages.
 *
 * Not thread-safe: the engine calls it under its step lock. */
#ifndef FT_KV_KV_PREFIX_H
#define FT_KV_KV_PREFIX_H

#include "kv_pool.h"

typedef struct ft_kv_tree ft_kv_tree_t;
typedef struct ft_kv_node ft_kv_node_t;
typedef struct ft_kv_anchor ft_kv_anchor_t;

typedef enum ft_kv_prio {
    FT_KV_PRIO_NORMAL = 0,
    FT_KV_PRIO_LOW = 1, /* evicted before any normal entry */
} ft_kv_prio_t;

/* rstate_budget: the most bytes of recurrent state copies the anchors keep
 * (the oldest anchors go beyond it). The tree becomes the pool's evictor. */
FT_WARN_UNUSED ft_status_t ft_kv_tree_create(ft_kv_pool_t *pool, uint64_t rstate_budget,
                                             const ft_allocator_t *a, ft_kv_tree_t **out_tree);
/* Drops every node and anchor (their page references go back to the pool). */
void ft_kv_tree_destroy(ft_kv_tree_t *tree);

/* The child of parent (NULL: the root) whose page holds tokens[0,
 * page_tokens), or NULL. */
ft_kv_node_t *ft_kv_tree_child(const ft_kv_tree_t *tree, const ft_kv_node_t *parent,
                               const int32_t *tokens);
uint32_t ft_kv_node_page(const ft_kv_node_t *node);

/* Caches page as the child of parent (NULL: the root) for tokens[0,
 * page_tokens), taking a reference to it. When that child exists already
 * its node is returned and nothing is taken (the caller keeps its own page:
 * the tree's stays what other sessions attach). Either way the node is
 * marked used now, at priority prio or higher. */
FT_WARN_UNUSED ft_status_t ft_kv_tree_insert(ft_kv_tree_t *tree, ft_kv_node_t *parent,
                                             const int32_t *tokens, uint32_t page,
                                             ft_kv_prio_t prio, ft_kv_node_t **out_node);

/* What a sequence of tokens can restore. */
typedef struct ft_kv_match {
    uint32_t n_pages;             /* full pages on the path: tokens [0, n_pages * page_tokens) */
    const ft_kv_anchor_t *anchor; /* the deepest anchor that matches, or NULL */
    uint32_t anchor_pos;          /* its position (tokens it restores) */
    uint32_t anchor_depth;        /* pages of the path before its tail */
} ft_kv_match_t;

/* Walks tokens[0, max_tokens) down the tree: out_nodes[0, n_pages) get the
 * path's nodes (out_nodes holds max_tokens / page_tokens entries), and
 * the deepest anchor whose position is <= max_tokens and whose tail tokens
 * match. Marks the path and the anchor used now, at prio or higher. */
void ft_kv_tree_match(ft_kv_tree_t *tree, const int32_t *tokens, uint32_t max_tokens,
                      ft_kv_prio_t prio, ft_kv_node_t **out_nodes, ft_kv_match_t *out);

/* Records an anchor at pos: parent is the node of page pos / page_tokens -
 * 1 (NULL when pos < page_tokens), tail the tokens from that page's end to
 * pos (n_tail = pos % page_tokens), tail_page the page that holds their KV
 * (copied; ignored when n_tail is 0), rstate the recurrent state (copied;
 * rstate_bytes may be 0). An anchor already there with the same tail is
 * replaced. Errors: the copies' memory (the pool's errors, out of memory),
 * a state larger than the tree's state budget. */
FT_WARN_UNUSED ft_status_t ft_kv_anchor_add(ft_kv_tree_t *tree, ft_kv_node_t *parent, uint32_t pos,
                                            const int32_t *tail, uint32_t tail_page,
                                            const uint8_t *rstate, size_t rstate_bytes,
                                            ft_kv_prio_t prio);
/* The anchor's private tail page (FT_KV_NO_PAGE when its tail is empty),
 * and its state copy. */
uint32_t ft_kv_anchor_tail_page(const ft_kv_anchor_t *anchor);
const uint8_t *ft_kv_anchor_rstate(const ft_kv_anchor_t *anchor, size_t *out_bytes);

typedef struct ft_kv_tree_stats {
    uint64_t n_nodes, n_anchors;
    uint64_t rstate_bytes; /* held by anchors */
    uint64_t evicted_nodes, evicted_anchors;
} ft_kv_tree_stats_t;

void ft_kv_tree_stats(const ft_kv_tree_t *tree, ft_kv_tree_stats_t *out);

#endif
