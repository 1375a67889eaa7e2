/* The prefix tree (kv_prefix.h): nodes of full pages, the candidate list
 * eviction scans, and the evictor the pool calls.
 *
 * Children are a singly linked list scanned with memcmp: a node has few
 * children (the branches where conversations part). Eviction scans the
 * candidate list for the lowest priority, then the oldest entry, whose page
 * no session holds: the list is the tree's leaves, far fewer than its
 * nodes. */
#include "kv_prefix_internal.h"

#include "../base/alloc.h"

#include <string.h>

void ft_kv_entry_touch(ft_kv_tree_t *t, ft_kv_entry_t *e, ft_kv_prio_t prio)
{
    e->tick = ++t->clock;
    if (prio < e->prio) e->prio = prio;
}

void ft_kv_cand_add(ft_kv_tree_t *t, ft_kv_entry_t *e)
{
    if (e->listed) return;
    e->prev = t->cand.prev;
    e->next = &t->cand;
    t->cand.prev->next = e;
    t->cand.prev = e;
    e->listed = 1;
}

void ft_kv_cand_remove(ft_kv_entry_t *e)
{
    if (!e->listed) return;
    e->prev->next = e->next;
    e->next->prev = e->prev;
    e->prev = e->next = NULL;
    e->listed = 0;
}

void ft_kv_node_maybe_leaf(ft_kv_tree_t *t, ft_kv_node_t *n)
{
    if (n != t->root && !n->child && !n->anchors) ft_kv_cand_add(t, &n->e);
}

static ft_kv_node_t *ft_kv_node_new(ft_kv_tree_t *t)
{
    return ft_mem_calloc(t->a, 1, sizeof(ft_kv_node_t) + (size_t)t->page_tokens * sizeof(int32_t));
}

/* A leaf node goes: out of its parent's children, its page reference
 * dropped. */
static void ft_kv_node_evict(ft_kv_tree_t *t, ft_kv_node_t *n)
{
    ft_kv_node_t *p = n->parent;
    for (ft_kv_node_t **c = &p->child; *c; c = &(*c)->sibling)
        if (*c == n) {
            *c = n->sibling;
            break;
        }
    ft_kv_cand_remove(&n->e);
    ft_kv_page_unref(t->pool, n->page);
    ft_mem_free(t->a, n);
    t->st.n_nodes--;
    t->st.evicted_nodes++;
    ft_kv_node_maybe_leaf(t, p);
}

/* The pool's evictor: the best candidate (low priority first, then the
 * oldest) whose page no session holds. */
static int ft_kv_tree_evict(void *user)
{
    ft_kv_tree_t *t = user;
    ft_kv_entry_t *best = NULL;
    for (ft_kv_entry_t *e = t->cand.next; e != &t->cand; e = e->next) {
        if (!e->is_anchor && ft_kv_page_refs(t->pool, ((ft_kv_node_t *)e)->page) > 1)
            continue; /* a session holds it */
        if (!best || e->prio > best->prio || (e->prio == best->prio && e->tick < best->tick))
            best = e;
    }
    if (!best) return 0;
    if (best->is_anchor) {
        ft_kv_anchor_drop(t, (ft_kv_anchor_t *)best);
        t->st.evicted_anchors++;
    } else {
        ft_kv_node_evict(t, (ft_kv_node_t *)best);
    }
    return 1;
}

ft_status_t ft_kv_tree_create(ft_kv_pool_t *pool, uint64_t rstate_budget, const ft_allocator_t *a,
                              ft_kv_tree_t **out)
{
    *out = NULL;
    ft_kv_tree_t *t = ft_mem_calloc(a, 1, sizeof(*t));
    if (!t) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "prefix tree: out of memory");
    t->pool = pool;
    t->a = a;
    t->page_tokens = ft_kv_pool_page_tokens(pool);
    t->rstate_budget = rstate_budget;
    t->cand.prev = t->cand.next = &t->cand;
    t->root = ft_kv_node_new(t);
    if (!t->root) {
        ft_mem_free(a, t);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "prefix tree: out of memory");
    }
    t->root->page = FT_KV_NO_PAGE;
    ft_kv_pool_set_evictor(pool, ft_kv_tree_evict, t);
    *out = t;
    return FT_OK;
}

static void ft_kv_node_free_all(ft_kv_tree_t *t, ft_kv_node_t *n)
{
    /* Depth-first without recursion: descend to a leaf, free it, go on. */
    while (n) {
        if (n->child) {
            n = n->child;
            continue;
        }
        while (n->anchors)
            ft_kv_anchor_drop(t, n->anchors);
        ft_kv_node_t *p = n->parent;
        if (p) p->child = n->sibling;
        if (n->page != FT_KV_NO_PAGE) ft_kv_page_unref(t->pool, n->page);
        ft_kv_cand_remove(&n->e);
        ft_mem_free(t->a, n);
        n = p;
    }
}

void ft_kv_tree_destroy(ft_kv_tree_t *t)
{
    if (!t) return;
    ft_kv_pool_set_evictor(t->pool, NULL, NULL);
    ft_kv_node_free_all(t, t->root);
    ft_mem_free(t->a, t);
}

ft_kv_node_t *ft_kv_tree_child(const ft_kv_tree_t *t, const ft_kv_node_t *parent,
                               const int32_t *tokens)
{
    const ft_kv_node_t *p = parent ? parent : t->root;
    const size_t bytes = (size_t)t->page_tokens * sizeof(int32_t);
    for (ft_kv_node_t *c = p->child; c; c = c->sibling)
        if (c->tokens[0] == tokens[0] && !memcmp(c->tokens, tokens, bytes)) return c;
    return NULL;
}

uint32_t ft_kv_node_page(const ft_kv_node_t *n)
{
    return n->page;
}

ft_status_t ft_kv_tree_insert(ft_kv_tree_t *t, ft_kv_node_t *parent, const int32_t *tokens,
                              uint32_t page, ft_kv_prio_t prio, ft_kv_node_t **out_node)
{
    *out_node = NULL;
    ft_kv_node_t *p = parent ? parent : t->root;
    ft_kv_node_t *n = ft_kv_tree_child(t, p, tokens);
    if (!n) {
        if (!(n = ft_kv_node_new(t)))
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "prefix tree: out of memory for a node");
        n->parent = p;
        n->page = page;
        n->e.prio = prio;
        memcpy(n->tokens, tokens, (size_t)t->page_tokens * sizeof(int32_t));
        ft_kv_page_ref(t->pool, page);
        n->sibling = p->child;
        p->child = n;
        ft_kv_cand_remove(&p->e); /* no longer a leaf */
        ft_kv_cand_add(t, &n->e);
        t->st.n_nodes++;
    }
    ft_kv_entry_touch(t, &n->e, prio);
    *out_node = n;
    return FT_OK;
}

void ft_kv_tree_match(ft_kv_tree_t *t, const int32_t *tokens, uint32_t max_tokens,
                      ft_kv_prio_t prio, ft_kv_node_t **out_nodes, ft_kv_match_t *out)
{
    memset(out, 0, sizeof(*out));
    const uint32_t P = t->page_tokens;
    ft_kv_node_t *n = t->root;
    for (uint32_t depth = 0;; depth++) {
        /* Anchors hung after this node: tails inside the next page. */
        for (ft_kv_anchor_t *an = n->anchors; an; an = an->next) {
            if (an->pos > max_tokens || (out->anchor && an->pos <= out->anchor_pos)) continue;
            if (an->n_tail &&
                memcmp(an->tail, tokens + (size_t)depth * P, an->n_tail * sizeof(int32_t)))
                continue;
            out->anchor = an;
            out->anchor_pos = an->pos;
            out->anchor_depth = depth;
        }
        if ((uint64_t)(depth + 1) * P > max_tokens) break;
        ft_kv_node_t *c = ft_kv_tree_child(t, n, tokens + (size_t)depth * P);
        if (!c) break;
        ft_kv_entry_touch(t, &c->e, prio);
        out_nodes[depth] = c;
        out->n_pages = depth + 1;
        n = c;
    }
    if (out->anchor) ft_kv_entry_touch(t, &((ft_kv_anchor_t *)out->anchor)->e, prio);
}

void ft_kv_tree_stats(const ft_kv_tree_t *t, ft_kv_tree_stats_t *out)
{
    *out = t->st;
}
