/* The anchors a server remembers, and a request's segments (srv_anchor.h). */
#include "srv_anchor.h"

#include <stdlib.h>
#include <string.h>

int ft_srv_anchors_init(ft_srv_anchors_t *a, uint32_t log2_slots)
{
    memset(a, 0, sizeof(*a));
    pthread_mutex_init(&a->mu, NULL);
    a->keys = calloc((size_t)1 << log2_slots, sizeof(*a->keys));
    a->mask = (1u << log2_slots) - 1;
    return a->keys != NULL;
}

void ft_srv_anchors_free(ft_srv_anchors_t *a)
{
    free(a->keys);
    pthread_mutex_destroy(&a->mu);
    memset(a, 0, sizeof(*a));
}

static uint64_t ft_srv_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t ft_srv_anchor_chain(uint64_t h, const int32_t *t, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        h = ft_srv_mix64(h ^ ((uint64_t)(uint32_t)t[i] + 0x9e3779b97f4a7c15ull));
    return h;
}

uint64_t ft_srv_anchor_key(uint64_t chain, uint32_t n)
{
    const uint64_t k = ft_srv_mix64(chain ^ ((uint64_t)n << 32 | 0x5bd1e995u));
    return k ? k : 1;
}

void ft_srv_anchors_note(ft_srv_anchors_t *a, uint64_t key)
{
    pthread_mutex_lock(&a->mu);
    a->keys[key & a->mask] = key; /* a collision forgets the older one */
    pthread_mutex_unlock(&a->mu);
}

int ft_srv_anchors_known(ft_srv_anchors_t *a, uint64_t key)
{
    pthread_mutex_lock(&a->mu);
    const int known = a->keys[key & a->mask] == key;
    pthread_mutex_unlock(&a->mu);
    return known;
}

uint32_t ft_srv_anchor_plan(ft_srv_anchors_t *a, const int32_t *t, uint32_t n,
                            const uint32_t *bounds, uint32_t n_bounds, uint32_t *ends,
                            uint64_t *keys, uint32_t *out_hint)
{
    /* The boundaries kept (FT_SRV_MIN_SEGMENT apart, and as far from the
     * end), newest last, with their keys. */
    uint32_t *kept = n_bounds ? malloc(n_bounds * sizeof(*kept)) : NULL;
    uint64_t *kk = n_bounds ? malloc(n_bounds * sizeof(*kk)) : NULL;
    uint32_t n_kept = 0, prev = 0;
    uint64_t h = 0;
    *out_hint = 0;
    if (kept && kk)
        for (uint32_t i = 0; i < n_bounds; i++) {
            const uint32_t b = bounds[i];
            if (b < prev + FT_SRV_MIN_SEGMENT || b + FT_SRV_MIN_SEGMENT > n) continue;
            h = ft_srv_anchor_chain(h, t + prev, b - prev);
            kept[n_kept] = b;
            kk[n_kept++] = ft_srv_anchor_key(h, b);
            prev = b;
        }
    const uint64_t key_n = ft_srv_anchor_key(ft_srv_anchor_chain(h, t + prev, n - prev), n);
    /* the deepest one anchored before */
    uint32_t from = 0; /* kept[from..] are after it */
    for (uint32_t i = n_kept; i-- > 0;)
        if (ft_srv_anchors_known(a, kk[i])) {
            *out_hint = kept[i];
            from = i + 1;
            break;
        }
    uint32_t n_ends = 0;
    if (from == 0 && n_kept) { /* the first boundary: the system turn others share */
        ends[n_ends] = kept[0];
        keys[n_ends++] = kk[0];
        from = 1;
    }
    if (n_kept - from > FT_SRV_MAX_ANCHORS) from = n_kept - FT_SRV_MAX_ANCHORS;
    for (uint32_t i = from; i < n_kept; i++) {
        ends[n_ends] = kept[i];
        keys[n_ends++] = kk[i];
    }
    ends[n_ends] = n;
    keys[n_ends++] = key_n;
    free(kept);
    free(kk);
    return n_ends;
}
