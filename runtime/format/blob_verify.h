/* Checking weights against the plan's per-blob hashes before they are
 * used, so a damaged weights file (a flipped bit on a disk, a patched-up
 * copy) stops a request with a clear error instead of printing different
 * tokens. ftc compile records an XXH3-64 for every ordinary tensor and every
 * expert blob (plan.proto Tensor.hash, ExpertBlock.hashes).
 *
 * Modes (ft_verify_kind_t in freetoken.h):
 *  - lazy (the default): the ordinary tensors at open (the first token reads
 *    every one of them), each expert blob the first time a step routes a
 *    token to it, before any kernel reads it (ft_blob_verify_expert): at
 *    most one extra read of each blob in the engine's lifetime; a bitmap
 *    remembers what was checked;
 *  - full: the whole weights file re-hashed at open (ftc verify's check),
 *    padding included;
 *  - off: only the cheap checks at open (sizes, the header hash against the
 *    plan's, which catches weights from another compile).
 * A plan from an ftc before per-blob hashes has none to check: lazy then
 * checks nothing, and ft_blob_verify_note says so.
 *
 * A damaged blob fails every use the same way (it is hashed again each
 * time: only failing requests pay), while requests that do not touch it go
 * on. The checks are safe to
 * call from several threads. */
#ifndef FT_FORMAT_BLOB_VERIFY_H
#define FT_FORMAT_BLOB_VERIFY_H

#include "freetoken.h"
#include "bundle.h"

#include <stdint.h>

typedef struct ft_blob_verify ft_blob_verify_t;

/* Checks what the mode checks at open (a FT_STATUS_MISMATCH naming the
 * tensor, the file and the byte range on a damaged tensor) and prepares
 * the lazy checks. mode: ft_verify_kind_t. */
FT_WARN_UNUSED ft_status_t ft_blob_verify_create(const ft_bundle_t *bundle, int mode, const ft_allocator_t *alloc,
                                                 ft_blob_verify_t **out);
void ft_blob_verify_destroy(ft_blob_verify_t *v);

/* Expert e of layer before its first use: FT_OK when its blob matches (or
 * was checked before, or nothing is to be checked: v NULL, mode off or
 * full, a plan without hashes); else FT_STATUS_MISMATCH naming the bundle,
 * the layer, the expert, the file and the blob's byte range. */
FT_WARN_UNUSED ft_status_t ft_blob_verify_expert(ft_blob_verify_t *v, uint32_t layer, uint32_t e);

/* Expert blobs checked so far and found damaged (for statistics). */
void ft_blob_verify_counts(const ft_blob_verify_t *v, uint64_t *out_checked, uint64_t *out_damaged);
/* "" or one line: the plan has no per-blob hashes. */
const char *ft_blob_verify_note(const ft_blob_verify_t *v);
/* "" or the error of the first damaged blob found (for reports). */
const char *ft_blob_verify_damage(const ft_blob_verify_t *v);
/* The background pass (lazy mode): checks expert blobs not checked yet, in
 * order, until about max_bytes were read; *out_left: blobs still unchecked.
 * Returns the first damaged blob's FT_STATUS_MISMATCH it met (the pass goes
 * on past it at the next call), else FT_OK. Safe beside steps. */
FT_WARN_UNUSED ft_status_t ft_blob_verify_pass(ft_blob_verify_t *v, uint64_t max_bytes, uint64_t *out_left);

#endif
