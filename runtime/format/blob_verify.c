#include "blob_verify.h"

#include "../base/alloc.h"
#include "ftw.h"

#include <stdatomic.h>
#include <stdio.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

enum { FT_BLOB_UNCHECKED = 0, FT_BLOB_OK = 1, FT_BLOB_DAMAGED = 2 };

struct ft_blob_verify {
    const ft_bundle_t *b;
    const ft_allocator_t *a;
    int lazy;                     /* expert blobs are checked on first use */
    uint32_t n_layers;
    const Ftplan__ExpertBlock **eb; /* [n_layers] the layer's expert block, or NULL */
    atomic_uchar **state;         /* [n_layers][n_experts] FT_BLOB_* */
    atomic_ullong n_checked, n_damaged;
    char note[160];
    /* The first damaged blob's error, for reports: written once by whoever
     * moves damage_state from 0 to 1, readable when it is 2. */
    atomic_int damage_state;
    char damage[512];
    atomic_ullong cursor; /* ft_blob_verify_pass: the next (layer << 32 | expert) to look at */
    uint64_t n_blobs;     /* expert blobs with hashes */
};

void ft_blob_verify_destroy(ft_blob_verify_t *v)
{
    if (!v) return;
    for (uint32_t l = 0; v->state && l < v->n_layers; l++)
        ft_mem_free(v->a, v->state[l]);
    ft_mem_free(v->a, v->state);
    ft_mem_free(v->a, v->eb);
    ft_mem_free(v->a, v);
}

/* The ordinary tensors: each against its recorded hash. */
FT_WARN_UNUSED static ft_status_t ft_blob_verify_tensors(const ft_bundle_t *b)
{
    const Ftplan__Plan *plan = b->plan;
    for (size_t i = 0; i < plan->n_tensors; i++) {
        const Ftplan__Tensor *t = plan->tensors[i];
        if (!t->has_hash || t->expert_stride) continue;
        const ft_ftw_t *f = b->weight_files[t->file];
        const uint8_t *p;
        ft_status_t st = ft_ftw_range(f, t->offset, t->size, &p);
        if (st) return ft_status_annotate(st, "%s: tensors[%zu] %s", b->plan_file->path, i, t->name);
        const uint64_t h = XXH3_64bits(p, (size_t)t->size);
        if (h != t->hash)
            return ft_status_make(FT_STATUS_MISMATCH,
                                  "%s: tensor %s (bytes %llu to %llu of %s) hashes to %016llx, the plan "
                                  "says %016llx: the weights file is damaged (ftc verify checks the "
                                  "whole file; copy or compile the bundle again)",
                                  b->dir, t->name, (unsigned long long)t->offset,
                                  (unsigned long long)(t->offset + t->size), ft_ftw_path(f),
                                  (unsigned long long)h, (unsigned long long)t->hash);
    }
    return FT_OK;
}

ft_status_t ft_blob_verify_create(const ft_bundle_t *b, int mode, const ft_allocator_t *alloc,
                                  ft_blob_verify_t **out)
{
    *out = NULL;
    if (mode != FT_VERIFY_LAZY && mode != FT_VERIFY_FULL && mode != FT_VERIFY_OFF)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "verify: unknown mode %d (lazy, full or off)", mode);
    ft_blob_verify_t *v = ft_mem_calloc(alloc, 1, sizeof(*v));
    if (!v) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "verify: out of memory");
    v->b = b;
    v->a = alloc;
    atomic_init(&v->n_checked, 0);
    atomic_init(&v->n_damaged, 0);
    atomic_init(&v->damage_state, 0);
    atomic_init(&v->cursor, 0);
    const Ftplan__Plan *plan = b->plan;
    ft_status_t st = FT_OK;
    if (mode == FT_VERIFY_FULL) {
        st = ft_bundle_verify(b);
    } else if (mode == FT_VERIFY_LAZY) {
        int hashed = plan->n_expert_blocks == 0;
        for (size_t i = 0; i < plan->n_tensors && !hashed; i++)
            hashed = plan->tensors[i]->has_hash;
        for (size_t i = 0; i < plan->n_expert_blocks && !hashed; i++)
            hashed = plan->expert_blocks[i]->n_hashes != 0;
        if (!hashed)
            snprintf(v->note, sizeof(v->note),
                     "verify: %s has no per-blob hashes (an older ftc compiled it): weights are not checked "
                     "on use; recompile, or use --verify full",
                     b->dir);
        st = ft_blob_verify_tensors(b);
        v->n_layers = plan->hparams->n_layers;
        v->eb = ft_mem_calloc(alloc, v->n_layers ? v->n_layers : 1, sizeof(*v->eb));
        v->state = ft_mem_calloc(alloc, v->n_layers ? v->n_layers : 1, sizeof(*v->state));
        if (!st && (!v->eb || !v->state)) st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "verify: out of memory");
        for (size_t i = 0; !st && i < plan->n_expert_blocks; i++) {
            const Ftplan__ExpertBlock *eb = plan->expert_blocks[i];
            if (!eb->n_hashes || eb->layer >= v->n_layers) continue;
            v->eb[eb->layer] = eb;
            v->state[eb->layer] = ft_mem_calloc(alloc, eb->n_experts ? eb->n_experts : 1, sizeof(atomic_uchar));
            if (!v->state[eb->layer]) st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "verify: out of memory");
            for (uint32_t e = 0; !st && e < eb->n_experts; e++)
                atomic_init(&v->state[eb->layer][e], FT_BLOB_UNCHECKED);
            if (!st) v->n_blobs += eb->n_experts;
        }
        v->lazy = 1;
    }
    if (st) {
        ft_blob_verify_destroy(v);
        return st;
    }
    *out = v;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_blob_damaged(const ft_blob_verify_t *v, uint32_t layer, uint32_t e,
                                                  uint64_t have)
{
    const Ftplan__ExpertBlock *eb = v->eb[layer];
    const uint64_t at = eb->offset + (uint64_t)e * eb->stride;
    return ft_status_make(FT_STATUS_MISMATCH,
                          "%s: layer %u expert %u (bytes %llu to %llu of %s) hashes to %016llx, the plan says "
                          "%016llx: the weights file is damaged (ftc verify checks the whole file; copy or "
                          "compile the bundle again)",
                          v->b->dir, layer, e, (unsigned long long)at, (unsigned long long)(at + eb->stride),
                          ft_ftw_path(v->b->weight_files[eb->file]), (unsigned long long)have,
                          (unsigned long long)eb->hashes[e]);
}

ft_status_t ft_blob_verify_expert(ft_blob_verify_t *v, uint32_t layer, uint32_t e)
{
    if (!v || !v->lazy || layer >= v->n_layers || !v->eb[layer] || e >= v->eb[layer]->n_experts) return FT_OK;
    atomic_uchar *s = &v->state[layer][e];
    const unsigned char now = atomic_load_explicit(s, memory_order_acquire);
    if (now == FT_BLOB_OK) return FT_OK;
    const Ftplan__ExpertBlock *eb = v->eb[layer];
    const uint8_t *p;
    ft_status_t st = ft_ftw_range(v->b->weight_files[eb->file], eb->offset + (uint64_t)e * eb->stride,
                                  eb->stride, &p);
    if (st) return ft_status_annotate(st, "%s: layer %u expert %u", v->b->dir, layer, e);
    const uint64_t h = XXH3_64bits(p, (size_t)eb->stride);
    if (h != eb->hashes[e]) {
        ft_status_t bad = ft_blob_damaged(v, layer, e, h);
        if (now == FT_BLOB_UNCHECKED) {
            atomic_store_explicit(s, FT_BLOB_DAMAGED, memory_order_release);
            atomic_fetch_add(&v->n_damaged, 1);
            int zero = 0;
            if (atomic_compare_exchange_strong(&v->damage_state, &zero, 1)) {
                snprintf(v->damage, sizeof(v->damage), "%s", ft_status_message(bad));
                atomic_store_explicit(&v->damage_state, 2, memory_order_release);
            }
        }
        return bad;
    }
    if (now == FT_BLOB_UNCHECKED) atomic_fetch_add(&v->n_checked, 1);
    atomic_store_explicit(s, FT_BLOB_OK, memory_order_release);
    return FT_OK;
}

void ft_blob_verify_counts(const ft_blob_verify_t *v, uint64_t *out_checked, uint64_t *out_damaged)
{
    *out_checked = v ? atomic_load(&v->n_checked) : 0;
    *out_damaged = v ? atomic_load(&v->n_damaged) : 0;
}

const char *ft_blob_verify_note(const ft_blob_verify_t *v)
{
    return v ? v->note : "";
}

const char *ft_blob_verify_damage(const ft_blob_verify_t *v)
{
    return v && atomic_load_explicit(&v->damage_state, memory_order_acquire) == 2 ? v->damage : "";
}

ft_status_t ft_blob_verify_pass(ft_blob_verify_t *v, uint64_t max_bytes, uint64_t *out_left)
{
    *out_left = 0;
    if (!v || !v->lazy) return FT_OK;
    uint64_t spent = 0;
    ft_status_t bad = FT_OK;
    for (;;) {
        const uint64_t at = atomic_fetch_add(&v->cursor, 1);
        const uint32_t layer = (uint32_t)(at >> 32), e = (uint32_t)at;
        if (layer >= v->n_layers) {
            atomic_store(&v->cursor, (uint64_t)v->n_layers << 32); /* stays past the end */
            break;
        }
        const Ftplan__ExpertBlock *eb = v->eb[layer];
        if (!eb || e >= eb->n_experts) { /* the next layer */
            uint64_t want = at + 1;
            atomic_compare_exchange_strong(&v->cursor, &want, (uint64_t)(layer + 1) << 32);
            continue;
        }
        if (atomic_load_explicit(&v->state[layer][e], memory_order_acquire) != FT_BLOB_UNCHECKED) continue;
        ft_status_t st = ft_blob_verify_expert(v, layer, e);
        if (st && !bad)
            bad = st;
        else
            ft_status_free(st);
        spent += eb->stride;
        if (spent >= max_bytes) break;
    }
    const uint64_t done = atomic_load(&v->n_checked) + atomic_load(&v->n_damaged);
    *out_left = v->n_blobs > done ? v->n_blobs - done : 0;
    return bad;
}
