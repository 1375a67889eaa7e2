/* The engine and session objects behind the opaque public handles. */
#ifndef FT_EXEC_ENGINE_INTERNAL_H
#define FT_EXEC_ENGINE_INTERNAL_H

#include "freetoken.h"
#include "../backends/cpu/cpu_module.h"
#include "../base/threadpool.h"
#include "../format/blob_verify.h"
#include "../format/bundle.h"
#include "../kv/kv_table.h"
#include "../moe/offload.h"
#include "../text/tokenizer.h"
#include "model.h"

#include <pthread.h>
#include <stdint.h>

struct ft_engine {
    ft_allocator_t alloc; /* copy of the caller's, or all-NULL for libc */
    const ft_allocator_t *a;
    ft_bundle_t *bundle;
    ft_model_t *model;
    ft_tokenizer_t *tok;
    ft_threadpool_t *pool;
    ft_model_info_t info;
    uint32_t n_sessions;
    /* Held while anything runs on the thread pool, the device or the
     * offload state (a scheduler step, a session's device buffers being
     * made or freed, a re-plan), and by the calls that read or reset their
     * counters: the one lock between the scheduler and the engine's other
     * callers (freetoken.h, "Threads"). */
    pthread_mutex_t step_lock;
    struct ft_sched *sched; /* runtime/sched: the engine's scheduler (owned there) */
    uint64_t expert_bytes_read; /* ft_engine_stats_t; written under step_lock */
    uint64_t sched_steps;       /* steps the scheduler ran (it counts them, under step_lock) */
    ft_offload_t *offload; /* sim and cuda backends: expert cache, q* dispatch, streaming; else NULL */
    struct ft_dev_engine *dev; /* a device backend (cuda; owns offload then), else NULL */
    ft_blob_verify_t *verify;  /* the weights' checks against the plan's hashes (ft_verify_kind_t) */
    ft_offload_device_t sim;   /* sim backend: the simulated device and its streams, else zero */
    /* Where sessions get their memory (KV cache, the schedule's buffers,
     * scratch): the simulated device on sim, else the cpu device below. */
    ft_device_t *mem;
    ft_device_t *cpu;          /* cpu and cuda backends: the cpu device (host memory), owned */
    uint64_t *routing;     /* [n_layers * max_experts] calibration counts, or NULL */
    uint64_t routing_tokens;
    ft_cpu_module_t *kmod;  /* the plan's CPU kernel module, or NULL: reference kernels */
    char kernels_desc[48];  /* info.kernels */
    uint32_t gen_min_tokens; /* batches of at least this many tokens use the module's kernels */
    /* The module's DeltaNet recurrence runs every step, decode included
     * (a SIMD module's beats the reference at one token: deltanet_bench). */
    int dn_every;
    struct ft_work *work;    /* the step workspace every session's passes run in (work.h) */
    uint64_t work_bytes;
    /* cpu and sim backends: the KV page pool every session's cache lives
     * in (from mem), and the prefix tree over it; NULL on cuda (device KV).
     * Used under step_lock. */
    ft_kv_pool_t *kv_pool;
    ft_kv_tree_t *kv_tree;
    uint64_t kv_restored; /* positions restored from the prefix cache (stats; under step_lock) */
};

/* Per-thread scratch for one MoE expert job. */
typedef struct ft_expert_scratch {
    void *xp;       /* gathered + prepared input rows */
    float *g, *u;   /* [n_batch, ffn] gate and up outputs */
    void *ap;       /* prepared SwiGLU rows for down */
    float *dn;      /* [n_batch, d] down outputs */
    float *xrows;   /* [n_batch, d] gathered float rows */
} ft_expert_scratch_t;

struct ft_session {
    ft_engine_t *engine;
    struct ft_sched_session *sched; /* runtime/sched: refcount, queue, token history */
    const ft_model_t *m;
    uint32_t n_ctx, n_batch, n_past;
    int has_logits;
    void *block;      /* the logits, one allocation (from engine->mem); the buffers a step
                         computes in are the engine's (work.h) */
    /* The KV cache: pages of the engine's pool (runtime/kv), elements of
     * m->kv_dtype (float, or IEEE half bits); empty on the cuda backend
     * (device KV, in dev). Written and read under step_lock. */
    ft_kv_table_t kv;
    int prefix_cache;     /* shares pages through the engine's prefix tree */
    ft_kv_prio_t kv_prio; /* the priority of what it caches */
    uint32_t n_restored;  /* positions its last request restored from the cache */
    float *logits;    /* [vocab] last position */
    /* The recurrent state of the model's linear-attention layers (the
     * program's rstate_bytes, each DELTANET op's slice at its rstate_off),
     * zeroed at create and on a rewind to 0; NULL when the model has none.
     * All of a session's recurrent state is here and nowhere else, so a
     * snapshot is one copy of these bytes (an anchor's, runtime/kv). */
    uint8_t *rstate;
    size_t rstate_bytes;
    float *dn_scratch;          /* [max_dn_channels] the DELTANET kernel's conv output */
    /* The chunked form (generated kernels, long steps): the step's
     * prepared rows [n_batch][max_dn_channels], g and beta [n_batch]
     * [max_dn_heads], and each thread's scratch [n_threads][max_dn_chunk_scratch]. */
    float *dn_rows, *dn_g, *dn_beta, *dn_chunk;
    struct ft_dev_session *dev; /* a device backend: the device's KV and recurrent state (the
                                   host KV cache above is then empty), else NULL */
};

#endif
