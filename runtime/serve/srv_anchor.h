/* Semantic anchors in ft serve (issue 11, item 4; DESIGN.md section 7).
 *
 * The renderer marks message boundaries (srv_template.h), srv_chat.c
 * turns them into token positions. A request on a prefix_cache session
 * (engines with a KV page pool: cpu and sim) marks an anchor at its
 * boundaries (ft_session_anchor: the KV before it and, for recurrent
 * layers, the state at exactly that position), one at the prompt's end
 * (after the generation prompt), and one where the reply ended (after a
 * generated tool call). A model with recurrent state is evaluated in
 * segments that end at the boundaries, each anchored when it is done; an
 * attention-only model in one request, anchored at its boundaries after
 * it (ft_model_info_t.recurrent_state_bytes tells them apart). The
 * library restores the deepest anchor (or the longest cached page prefix)
 * a new request's first segment matches.
 *
 * The first segment must reach past the anchor it should restore (the
 * library restores only what leaves at least the last tokens of the
 * request to compute), so the server remembers which prefixes it has
 * anchored: a hash of the tokens up to each anchor, in a fixed table
 * (an entry may be overwritten or outlive its anchor's eviction; either
 * only costs reuse, never correctness, since the library matches tokens).
 * The first segment then ends at the first boundary after the deepest
 * remembered one.
 *
 * Not every boundary becomes an anchor: boundaries less than
 * FT_SRV_MIN_SEGMENT tokens apart are merged (a single-token segment may
 * run other kernels than a batch), and past the first boundary (the
 * system turn, shared by conversations) only the last FT_SRV_MAX_ANCHORS
 * of a request are anchored, where agents resume (appends, an edited last
 * tool result); the pages before them are shared through the prefix tree
 * anyway. */
#ifndef FT_SERVE_SRV_ANCHOR_H
#define FT_SERVE_SRV_ANCHOR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define FT_SRV_MIN_SEGMENT 2
#define FT_SRV_MAX_ANCHORS 32

typedef struct ft_srv_anchors {
    pthread_mutex_t mu;
    uint64_t *keys; /* [mask + 1]; 0: empty */
    uint32_t mask;
    /* /metrics */
    _Atomic uint64_t n_marked;      /* anchors marked */
    _Atomic uint64_t n_failed;      /* anchors the library refused (a full pool, ...) */
    _Atomic uint64_t n_prefix_hits; /* requests that restored cached positions */
    _Atomic uint64_t n_anchor_hits; /* ... exactly up to one of their boundaries */
} ft_srv_anchors_t;

/* 0 on out of memory. */
int ft_srv_anchors_init(ft_srv_anchors_t *a, uint32_t log2_slots);
void ft_srv_anchors_free(ft_srv_anchors_t *a);

/* The key of the prefix tokens[0, n): h is the chain over the tokens
 * (ft_srv_anchor_chain from 0), n the length. Never 0. */
uint64_t ft_srv_anchor_chain(uint64_t h, const int32_t *tokens, uint32_t n);
uint64_t ft_srv_anchor_key(uint64_t chain, uint32_t n);

void ft_srv_anchors_note(ft_srv_anchors_t *a, uint64_t key);
int ft_srv_anchors_known(ft_srv_anchors_t *a, uint64_t key);

/* A request's segments: out_ends[0, return) ascending, the last n (the
 * prompt's end), each at least FT_SRV_MIN_SEGMENT past the one before
 * (the first from the deepest remembered boundary, whose position goes
 * to *out_hint, 0 when none); out_keys[i] the key of tokens[0,
 * out_ends[i]). bounds: the prompt's boundaries (ascending token
 * positions). out_ends and out_keys hold FT_SRV_MAX_ANCHORS + 2 entries. */
uint32_t ft_srv_anchor_plan(ft_srv_anchors_t *a, const int32_t *tokens, uint32_t n,
                            const uint32_t *bounds, uint32_t n_bounds, uint32_t *out_ends,
                            uint64_t *out_keys, uint32_t *out_hint);

#endif
