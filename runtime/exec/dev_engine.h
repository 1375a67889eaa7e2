/* The plan run on a device (the cuda backend): the dense weights every op
 * reads resident in device memory, routed experts in device slots managed
 * by the shared offload code (runtime/moe: expert cache, q* dispatch,
 * whole-layer prefill streaming, re-plan), a KV cache per session on the
 * device, one step workspace shared by the sessions (a pass carries the
 * rows of several), and each op of the schedule as launches of the plan's kernels
 * through the device interface (backends/backend.h); the experts the
 * dispatch keeps on the CPU run on the CPU's kernels.
 *
 * The executor (executor.c) walks the schedule and hands each op here
 * (ft_dev_run_op) between ft_dev_step_begin and ft_dev_step_end. */
#ifndef FT_EXEC_DEV_ENGINE_H
#define FT_EXEC_DEV_ENGINE_H

#include "freetoken.h"
#include "../format/blob_verify.h"

#include "../backends/backend.h"
#include "../base/threadpool.h"
#include "../format/bundle.h"
#include "../moe/offload.h"
#include "../format/hw.h"
#include "model.h"
#include "program.h"

#include <stdint.h>

typedef struct ft_dev_engine ft_dev_engine_t;
typedef struct ft_dev_session ft_dev_session_t;

typedef struct ft_dev_engine_options {
    const ft_hw_t *hw;       /* the machine for the q* split; NULL: generic figures */
    uint64_t vram_bytes;     /* budget; 0: the device's free memory less a headroom */
    uint32_t plan_ctx;       /* tokens of KV the plan reserves */
    /* The plan's stored partition is used when hw is its embedded profile
     * and vram_bytes its budget (ft_offload_create); calibration comes
     * from the plan. */
    int poll_vram; /* 1: re-plan when free device memory changes under us */
    /* Experts the dispatch keeps on the CPU run the plan's generated
     * kernels (bound in the model) when they have at least this many
     * tokens, as the cpu backend's do; 0: always the reference kernels. */
    uint32_t gen_min_tokens;
    /* The engine's weight checks: each expert before its first use (may be
     * NULL); it must outlive the device engine. */
    ft_blob_verify_t *verify;
} ft_dev_engine_options_t;

/* Takes the device dev (owned from here on, also on failure), binds the
 * program's ops to its kernels, pins the mapped FTW files in place, plans
 * the memory partition and uploads the dense weights. OUT_OF_RANGE when
 * the budget cannot keep every layer on the device (the message says what
 * it needs). m, bundle and pool must outlive it. */
FT_WARN_UNUSED ft_status_t ft_dev_engine_create(ft_device_t *dev, const ft_bundle_t *bundle, const ft_model_t *m,
                                                ft_threadpool_t *pool, const ft_dev_engine_options_t *opts,
                                                const ft_allocator_t *alloc, ft_dev_engine_t **out);
void ft_dev_engine_destroy(ft_dev_engine_t *ce);
/* The offload state (cache, dispatch, stats, re-plan) the engine drives. */
ft_offload_t *ft_dev_engine_offload(ft_dev_engine_t *ce);
/* Re-plans for a new budget (ft_engine_replan). */
FT_WARN_UNUSED ft_status_t ft_dev_engine_replan(ft_dev_engine_t *ce, uint64_t vram_bytes);

/* Device state of one session: its KV cache for n_ctx tokens and its
 * recurrent state; the engine's step workspace grows to its batches of
 * n_batch and its context (between steps, under the engine's step_lock). */
FT_WARN_UNUSED ft_status_t ft_dev_session_create(ft_dev_engine_t *ce, uint32_t n_ctx, uint32_t n_batch,
                                                 ft_dev_session_t **out);
void ft_dev_session_destroy(ft_dev_session_t *cs);
/* Bytes of the session's device KV cache (K and V). */
uint64_t ft_dev_session_kv_bytes(const ft_dev_session_t *cs);
/* Makes the workspace carry passes of at least `items` sessions. */
FT_WARN_UNUSED ft_status_t ft_dev_engine_reserve(ft_dev_engine_t *ce, uint32_t items);
/* The most rows and items one pass may carry (ft_dev_step_begin). */
uint32_t ft_dev_engine_pass_rows(const ft_dev_engine_t *ce);
uint32_t ft_dev_engine_pass_items(const ft_dev_engine_t *ce);
/* Host room for a pass's tokens, [ft_dev_engine_pass_rows]. */
int32_t *ft_dev_engine_tokens(ft_dev_engine_t *ce);

/* One session's share of a pass: n tokens at positions n_past.. (n <= its
 * n_batch, validated by the caller); the epilogue computes its rows from
 * `first` (n - 1: only the last one's logits). */
typedef struct ft_dev_item {
    ft_dev_session_t *s;
    uint32_t n, n_past, first;
} ft_dev_item_t;

/* A pass over the rows of n_items items laid out one after another
 * (their sum at most ft_dev_engine_pass_rows): begin; then every op of
 * the prologue and the blocks in schedule order over all rows (row0 0, n
 * the sum; tokens the rows' tokens); then the epilogue once per item k
 * over the rows ft_dev_epilogue_item gives, writing its logits into the
 * logits buffer at the item's own rows; then end, which brings item k's
 * logits (n - first rows) to all_logits[k] when that is not NULL and its
 * last row's to last_logits[k]. A pass whose items are all one token is
 * a decode pass, else every item must be a chunk of several tokens: each
 * row then takes the kernels its item takes alone (batch invariance).
 * cpu_gen: the experts the dispatch keeps on the CPU run the generated
 * kernels. routing: NULL, or calibration counts [n_layers][max_experts].
 * Between passes it may poll free device memory and re-plan. */
FT_WARN_UNUSED ft_status_t ft_dev_step_begin(ft_dev_engine_t *ce, const ft_dev_item_t *items, uint32_t n_items,
                                             int cpu_gen, uint64_t *routing);
FT_WARN_UNUSED ft_status_t ft_dev_run_op(ft_dev_engine_t *ce, const ft_xop_t *x, const int32_t *tokens,
                                         uint32_t row0, uint32_t n);
/* Item k's epilogue rows: [*row0, *row0 + *n). */
void ft_dev_epilogue_item(ft_dev_engine_t *ce, uint32_t k, uint32_t *row0, uint32_t *n);
FT_WARN_UNUSED ft_status_t ft_dev_step_end(ft_dev_engine_t *ce, float *const *all_logits,
                                           float *const *last_logits);

#endif
