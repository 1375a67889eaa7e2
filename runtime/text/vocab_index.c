/* Token spelling -> id (see vocab_index.h). Linear probing at a load
 * factor of at most 1/2; XXH3 spreads the keys. */
#include "vocab_index.h"

#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

ft_status_t ft_vocab_index_build(ft_vocab_index_t *ix, const char *blob, const uint64_t *offs,
                                 uint32_t n)
{
    memset(ix, 0, sizeof(*ix));
    uint64_t n_slots = 16;
    while (n_slots < 2ull * n)
        n_slots *= 2;
    ix->slots = calloc(n_slots, sizeof(uint32_t));
    if (!ix->slots)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "token index: %llu slots",
                              (unsigned long long)n_slots);
    ix->mask = n_slots - 1;
    ix->blob = blob;
    ix->offs = offs;
    for (uint32_t id = 0; id < n; id++) {
        const char *s = blob + offs[id];
        const size_t len = (size_t)(offs[id + 1] - offs[id]);
        uint64_t h = XXH3_64bits(s, len) & ix->mask;
        for (;; h = (h + 1) & ix->mask) {
            const uint32_t v = ix->slots[h];
            if (v == 0) {
                ix->slots[h] = id + 1;
                break;
            }
            const uint32_t other = v - 1;
            if (offs[other + 1] - offs[other] == len && memcmp(blob + offs[other], s, len) == 0)
                break; /* a repeated spelling: the lower id stays */
        }
    }
    return FT_OK;
}

void ft_vocab_index_free(ft_vocab_index_t *ix)
{
    free(ix->slots);
    memset(ix, 0, sizeof(*ix));
}

int32_t ft_vocab_index_find(const ft_vocab_index_t *ix, const char *s, size_t len)
{
    if (!ix->slots) return -1;
    for (uint64_t h = XXH3_64bits(s, len) & ix->mask;; h = (h + 1) & ix->mask) {
        const uint32_t v = ix->slots[h];
        if (v == 0) return -1;
        const uint32_t id = v - 1;
        if (ix->offs[id + 1] - ix->offs[id] == len && memcmp(ix->blob + ix->offs[id], s, len) == 0)
            return (int32_t)id;
    }
}
