/* Semantic anchors (kv_prefix.h): what a session records at a position
 * the chat layer marked, beyond the full pages the tree shares: the tail
 * page's copy and the recurrent state's. State copies have their own byte
 * budget: the oldest anchors go when a new copy would pass it. */
#include "kv_prefix_internal.h"

#include "../base/alloc.h"

#include <string.h>

void ft_kv_anchor_drop(ft_kv_tree_t *t, ft_kv_anchor_t *an)
{
    ft_kv_node_t *n = an->node;
    for (ft_kv_anchor_t **p = &n->anchors; *p; p = &(*p)->next)
        if (*p == an) {
            *p = an->next;
            break;
        }
    ft_kv_cand_remove(&an->e);
    if (an->tail_page != FT_KV_NO_PAGE) ft_kv_page_unref(t->pool, an->tail_page);
    t->st.rstate_bytes -= an->rstate_bytes;
    t->st.n_anchors--;
    ft_mem_free(t->a, an->rstate);
    ft_mem_free(t->a, an);
    ft_kv_node_maybe_leaf(t, n);
}

int ft_kv_anchor_evict_one(ft_kv_tree_t *t)
{
    ft_kv_entry_t *best = NULL;
    for (ft_kv_entry_t *e = t->cand.next; e != &t->cand; e = e->next)
        if (e->is_anchor && ((ft_kv_anchor_t *)e)->rstate_bytes &&
            (!best || e->prio > best->prio || (e->prio == best->prio && e->tick < best->tick)))
            best = e;
    if (!best) return 0;
    ft_kv_anchor_drop(t, (ft_kv_anchor_t *)best);
    t->st.evicted_anchors++;
    return 1;
}

ft_status_t ft_kv_anchor_add(ft_kv_tree_t *t, ft_kv_node_t *parent, uint32_t pos,
                             const int32_t *tail, uint32_t tail_page, const uint8_t *rstate,
                             size_t rstate_bytes, ft_kv_prio_t prio)
{
    ft_kv_node_t *n = parent ? parent : t->root;
    const uint32_t n_tail = pos % t->page_tokens;
    if (rstate_bytes > t->rstate_budget)
        return ft_status_make(
            FT_STATUS_RESOURCE_EXHAUSTED,
            "anchor at %u: a recurrent state of %zu bytes is larger than the anchors' state "
            "budget of %llu bytes",
            pos, rstate_bytes, (unsigned long long)t->rstate_budget);
    /* The same anchor again (a conversation re-sent): replace it. */
    for (ft_kv_anchor_t *an = n->anchors; an; an = an->next)
        if (an->pos == pos && !memcmp(an->tail, tail, n_tail * sizeof(int32_t))) {
            ft_kv_anchor_drop(t, an);
            break;
        }
    while (t->st.rstate_bytes + rstate_bytes > t->rstate_budget)
        if (!ft_kv_anchor_evict_one(t)) break;
    ft_kv_anchor_t *an = ft_mem_calloc(t->a, 1, sizeof(*an) + (size_t)n_tail * sizeof(int32_t));
    uint8_t *state = an && rstate_bytes ? ft_mem_alloc(t->a, rstate_bytes) : NULL;
    if (!an || (rstate_bytes && !state)) {
        ft_mem_free(t->a, an);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY,
                              "anchor at %u: out of memory for %zu bytes of state", pos,
                              rstate_bytes);
    }
    an->tail_page = FT_KV_NO_PAGE;
    if (n_tail) {
        /* The new page may evict cached pages, never n's (a session that
         * marks the anchor holds it) nor tail_page (its own). */
        ft_status_t st = ft_kv_page_alloc(t->pool, &an->tail_page);
        if (st) {
            ft_mem_free(t->a, state);
            ft_mem_free(t->a, an);
            return ft_status_annotate(st, "anchor at %u: its tail page", pos);
        }
        memcpy(ft_kv_page_data(t->pool, an->tail_page), ft_kv_page_data(t->pool, tail_page),
               ft_kv_pool_page_bytes(t->pool));
        memcpy(an->tail, tail, n_tail * sizeof(int32_t));
    }
    if (rstate_bytes) memcpy(state, rstate, rstate_bytes);
    an->rstate = state;
    an->rstate_bytes = rstate_bytes;
    an->node = n;
    an->pos = pos;
    an->n_tail = n_tail;
    an->e.is_anchor = 1;
    an->e.prio = prio;
    ft_kv_entry_touch(t, &an->e, prio);
    an->next = n->anchors;
    n->anchors = an;
    ft_kv_cand_remove(&n->e); /* not a leaf while it has anchors */
    ft_kv_cand_add(t, &an->e);
    t->st.n_anchors++;
    t->st.rstate_bytes += rstate_bytes;
    return FT_OK;
}

uint32_t ft_kv_anchor_tail_page(const ft_kv_anchor_t *an)
{
    return an->tail_page;
}

const uint8_t *ft_kv_anchor_rstate(const ft_kv_anchor_t *an, size_t *out_bytes)
{
    *out_bytes = an->rstate_bytes;
    return an->rstate;
}
