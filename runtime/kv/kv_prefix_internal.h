/* The prefix tree's objects, shared by the tree (kv_prefix.c) and its
 * anchors (kv_anchor.c). */
#ifndef FT_KV_KV_PREFIX_INTERNAL_H
#define FT_KV_KV_PREFIX_INTERNAL_H

#include "kv_prefix.h"

/* What eviction looks at: a node with no children and no anchors, or an
 * anchor. Linked in the tree's candidate list while it is one. */
typedef struct ft_kv_entry {
    struct ft_kv_entry *prev, *next;
    uint64_t tick;     /* last use (the tree's clock) */
    ft_kv_prio_t prio; /* the highest priority of its users: NORMAL wins */
    int is_anchor;
    int listed;
} ft_kv_entry_t;

struct ft_kv_node {
    ft_kv_entry_t e; /* first: an entry is its node or anchor */
    ft_kv_node_t *parent, *child, *sibling;
    ft_kv_anchor_t *anchors; /* hung after this node's page */
    uint32_t page;
    int32_t tokens[]; /* [page_tokens] */
};

struct ft_kv_anchor {
    ft_kv_entry_t e;
    ft_kv_node_t *node; /* the tree's root when the anchor is inside the first page */
    ft_kv_anchor_t *next;
    uint32_t pos, n_tail;
    uint32_t tail_page; /* private copy, or FT_KV_NO_PAGE */
    uint8_t *rstate;
    size_t rstate_bytes;
    int32_t tail[]; /* [n_tail] */
};

struct ft_kv_tree {
    ft_kv_pool_t *pool;
    const ft_allocator_t *a;
    uint32_t page_tokens;
    ft_kv_node_t *root; /* no page, no tokens */
    ft_kv_entry_t cand; /* the candidate list's sentinel */
    uint64_t clock;
    uint64_t rstate_budget;
    ft_kv_tree_stats_t st;
};

/* Marks e used now at prio (or higher). */
void ft_kv_entry_touch(ft_kv_tree_t *t, ft_kv_entry_t *e, ft_kv_prio_t prio);
void ft_kv_cand_add(ft_kv_tree_t *t, ft_kv_entry_t *e);
void ft_kv_cand_remove(ft_kv_entry_t *e);
/* After a child or anchor of n went: n is a candidate again when it is a
 * leaf (not the root). */
void ft_kv_node_maybe_leaf(ft_kv_tree_t *t, ft_kv_node_t *n);
/* Unlinks and frees an anchor (its page reference and state copy). */
void ft_kv_anchor_drop(ft_kv_tree_t *t, ft_kv_anchor_t *an);
/* Evicts the oldest anchor (any priority) to make room for state copies:
 * 1 when one went. */
int ft_kv_anchor_evict_one(ft_kv_tree_t *t);

#endif
