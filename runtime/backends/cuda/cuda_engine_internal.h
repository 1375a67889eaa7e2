/* Internal to the CUDA engine (cuda_engine.c, cuda_kernels.c,
 * cuda_session.c, cuda_forward.c, cuda_moe.c). */
#ifndef FT_BACKENDS_CUDA_ENGINE_INTERNAL_H
#define FT_BACKENDS_CUDA_ENGINE_INTERNAL_H

#include "cuda_device.h"
#include "cuda_engine.h"

#include "../../moe/vram_policy.h"

/* A matrix resident in VRAM with its kernels: GEMV for one token, GEMM for
 * batches. */
typedef struct ft_cuda_mat {
    ft_cu_deviceptr w;
    uint32_t rows, cols;
    ft_cu_function gemv, gemm;
} ft_cuda_mat_t;

/* Kernels of one expert matrix (gate, up or down) read from a slot or a
 * streaming buffer at `offset` bytes into the expert's blob. */
typedef struct ft_cuda_xmat {
    uint64_t offset;
    uint32_t rows, cols;
    ft_cu_function gemv_experts, gemm;
} ft_cuda_xmat_t;

typedef struct ft_cuda_layer {
    ft_cuda_mat_t wq, wk, wv, wo, router;
    ft_cu_deviceptr attn_norm, ffn_norm, q_norm, k_norm; /* f32 vectors */
    ft_cuda_xmat_t gate, up, down;
} ft_cuda_layer_t;

/* The kernels that are not matrix products. */
typedef struct ft_cuda_fns {
    ft_cu_function rms_d, rms_hd, rope, attn, router, gather, scatter_add, swiglu;
    /* Position from device memory, for replayable decode graphs; NULL in
     * plans compiled before they existed (then: copies and no graphs). */
    ft_cu_function kv_append, attn_pos;
} ft_cuda_fns_t;

struct ft_cuda_engine {
    const ft_allocator_t *a;
    const ft_model_t *m;
    const ft_bundle_t *bundle;
    ft_threadpool_t *pool;
    ft_cuda_device_t *dev;
    ft_cuda_module_t *mod;
    ft_cu_stream cs, xs;     /* compute stream, copy stream */
    ft_cu_event copied;      /* this layer's expert copies are in */
    ft_cu_event streamed[2]; /* a streaming buffer's layer is in */
    int32_t stream_layer[2]; /* the layer copied into each buffer this chunk, or -1 */
    ft_cuda_fns_t fn;
    ft_cuda_layer_t *layers; /* [n_layers] */
    ft_cuda_mat_t output;
    ft_cu_deviceptr output_norm;
    ft_cu_deviceptr dense; /* every resident weight, one allocation */
    uint64_t dense_bytes;
    /* Expert slots and the two streaming buffers, one allocation. */
    ft_cu_deviceptr slots, stream[2];
    uint64_t slots_alloc_bytes, slot_bytes;
    uint32_t n_slots;
    uint32_t n_pinned_files; /* FTW files registered with the driver */
    uint8_t *pinned_ok;      /* [n_weight_files] 1: registered */
    ft_offload_t *off;
    uint64_t session_bytes; /* device memory held by live sessions */
    /* Free-VRAM polling (vram_policy.h). */
    int poll_vram;
    uint32_t gen_min_tokens; /* CPU experts: generated kernels from this many tokens; 0: never */
    ft_vram_policy_t policy;
    uint32_t steps_since_poll;
    uint64_t last_poll_ns;
};

/* Per-thread scratch for the experts the CPU computes. */
typedef struct ft_cuda_cpu_scratch {
    float *xrows;  /* [n_batch, d] gathered inputs */
    void *xp, *ap; /* prepared rows for gate/up and for down */
    float *g, *u;  /* [n_batch, ffn] */
} ft_cuda_cpu_scratch_t;

struct ft_cuda_session {
    ft_cuda_engine_t *ce;
    uint32_t n_ctx, n_batch;
    ft_cu_deviceptr block; /* every device buffer below */
    uint64_t block_bytes;
    ft_cu_deviceptr k_cache, v_cache; /* [n_layers][n_ctx][kv_dim] f32 */
    ft_cu_deviceptr x, h, q, k, v, att, o;
    ft_cu_deviceptr rl;              /* [n_batch, n_experts] router logits */
    ft_cu_deviceptr ids, wts;        /* [n_batch, n_used] */
    ft_cu_deviceptr eo;              /* [n_used][n_batch][d] expert outputs, slot-major */
    ft_cu_deviceptr xg, g, u, dn;    /* expert work: [rows][d], [rows][ffn] x2, [rows][d] */
    ft_cu_deviceptr scores;          /* [n_heads][n_ctx] attention scratch */
    ft_cu_deviceptr logits;          /* [n_batch][vocab] */
    ft_cu_deviceptr cpu_rows;        /* [n_batch * n_used][d] outputs of CPU experts */
    ft_cu_deviceptr pos, iota, ones; /* [n_batch] int, [n_batch] int, [n_batch * n_used] float */
    ft_cu_deviceptr meta;            /* per layer: expert tables and indices */
    uint64_t meta_bytes;
    /* Host side, one allocation. */
    void *host;
    float *x_host;     /* [n_batch, d] embeddings */
    float *h_host;     /* [n_batch, d] normed inputs of CPU experts */
    float *cpu_out;    /* [n_batch * n_used, d] their outputs */
    int32_t *ids_host; /* [n_batch, n_used] */
    float *wts_host;
    uint8_t *meta_host;         /* mirror of meta */
    uint32_t *e_count, *e_list; /* [n_experts], [n_experts][n_batch] t * n_used + k */
    int32_t *e_active;          /* [n_experts] */
    uint32_t *e_active_count;
    uint32_t *cpu_row0;             /* [n_experts] first cpu_out row of each active expert */
    uint32_t *cpu_items;            /* [n_experts] active indices the CPU computes */
    ft_cuda_cpu_scratch_t *scratch; /* [n_threads] */
    /* Decode as CUDA graphs: one per segment between host round trips
     * (segment l < n_layers: combine of layer l - 1, attention and routing
     * of layer l; segment n_layers: the last combine and the logits),
     * captured at the first decode step, replayed after. */
    ft_cu_graph_exec *graphs; /* [n_layers + 1] */
    int graphs_off;           /* 1: capture failed or unsupported: launch directly */
    uint64_t *routing;        /* this chunk's calibration counts, or NULL */
};

/* cuda_kernels.c: looks every kernel the model needs up in the module and
 * checks the shapes the kernels assume. */
FT_WARN_UNUSED ft_status_t ft_cuda_engine_kernels(ft_cuda_engine_t *ce);

/* Launch helpers (cuda_kernels.c); all on the compute stream. */
FT_WARN_UNUSED ft_status_t ft_cuda_launch(ft_cuda_engine_t *ce, ft_cu_function fn, uint32_t gx, uint32_t gy,
                           uint32_t block, void **params);
/* y [n, rows] = x [n, cols] W^T; GEMV for one token, GEMM otherwise. */
FT_WARN_UNUSED ft_status_t ft_cuda_linear(ft_cuda_engine_t *ce, const ft_cuda_mat_t *w, ft_cu_deviceptr x,
                           ft_cu_deviceptr y, uint32_t n);
/* y[idx[i]] += weight[i] * in[i] for n rows of cols floats. */
FT_WARN_UNUSED ft_status_t ft_cuda_scatter_add(ft_cuda_engine_t *ce, ft_cu_deviceptr in, ft_cu_deviceptr idx,
                                ft_cu_deviceptr weight, uint32_t n, ft_cu_deviceptr y,
                                uint32_t cols);

/* cuda_engine.c: between steps, polls free VRAM at the policy's rate and
 * re-plans when another program took or returned device memory. */
void ft_cuda_engine_poll(ft_cuda_engine_t *ce);

/* cuda_moe.c: the MoE half of a layer. route: FFN norm, router and top-k
 * kernels (queued only); moe: the choices back to the host, the dispatch,
 * copies and the experts' products into eo; combine: eo into the residual
 * stream in slot order (queued only). */
FT_WARN_UNUSED ft_status_t ft_cuda_route(ft_cuda_session_t *cs, uint32_t layer, uint32_t n);
FT_WARN_UNUSED ft_status_t ft_cuda_moe(ft_cuda_session_t *cs, uint32_t layer, uint32_t n);
FT_WARN_UNUSED ft_status_t ft_cuda_combine(ft_cuda_session_t *cs, uint32_t layer, uint32_t n);

#endif
