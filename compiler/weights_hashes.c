/* Per-blob hashes of the written weights: XXH3-64 of every ordinary
 * tensor's bytes and of every expert's whole blob, stored in the plan
 * beside the file's hash, so the runtime can check each blob the first
 * time it uses it (runtime/format/blob_verify.h) instead of hashing the
 * whole file at every open. The file is read back once, from the page
 * cache it was just written through; the hashes depend only on the bytes,
 * so bundles stay byte-reproducible. */
#include "plan_build.h"

#include "../runtime/base/arena.h"
#include "../runtime/base/mapped_file.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

/* [offset, offset + n) inside the file, or a FORMAT status naming what. */
FT_WARN_UNUSED static ft_status_t ft_hash_range(const ft_mapped_file_t *f, uint64_t offset, uint64_t n,
                                                const char *what, uint64_t *out)
{
    if (offset > f->size || n > f->size - offset)
        return ft_status_make(FT_STATUS_INTERNAL, "%s: %s at %llu + %llu is past the end (%llu bytes)", f->path,
                              what, (unsigned long long)offset, (unsigned long long)n,
                              (unsigned long long)f->size);
    *out = XXH3_64bits(f->data + offset, (size_t)n);
    return FT_OK;
}

ft_status_t ft_plan_hash_blobs(Ftplan__Plan *plan, const char *weights_path, ft_arena_t *arena)
{
    ft_mapped_file_t *f = NULL;
    ft_status_t st = ft_mapped_file_open(weights_path, &f);
    for (size_t i = 0; !st && i < plan->n_tensors; i++) {
        Ftplan__Tensor *t = plan->tensors[i];
        if (t->expert_stride) continue; /* covered by the expert blocks */
        st = ft_hash_range(f, t->offset, t->size, t->name, &t->hash);
        t->has_hash = !st;
    }
    for (size_t i = 0; !st && i < plan->n_expert_blocks; i++) {
        Ftplan__ExpertBlock *eb = plan->expert_blocks[i];
        eb->hashes = ft_arena_alloc(arena, (uint64_t)(eb->n_experts ? eb->n_experts : 1) * sizeof(uint64_t));
        if (!eb->hashes) {
            st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
            break;
        }
        eb->n_hashes = eb->n_experts;
        for (uint32_t e = 0; e < eb->n_experts && !st; e++)
            st = ft_hash_range(f, eb->offset + (uint64_t)e * eb->stride, eb->stride, "an expert blob",
                               &eb->hashes[e]);
    }
    ft_mapped_file_close(f);
    return st;
}
