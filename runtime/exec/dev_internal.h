/* Internal to the device executor (dev_engine.c, dev_kernels.c,
 * dev_session.c, dev_ops.c, dev_moe.c): the plan's ops run on a device
 * through the device interface (backends/backend.h). */
#ifndef FT_EXEC_DEV_INTERNAL_H
#define FT_EXEC_DEV_INTERNAL_H

#include "dev_engine.h"
#include "program.h"

#include "../backends/backend.h"
#include "../moe/vram_policy.h"

/* A matrix resident in device memory with its kernels: GEMV for one
 * token, GEMM for batches. */
typedef struct ft_dev_mat {
    ft_dptr_t w;
    uint32_t rows, cols;
    ft_dfn_t gemv, gemm;
} ft_dev_mat_t;

/* Kernels of one expert matrix (gate, up or down) read from a slot or a
 * streaming buffer at `offset` bytes into the expert's blob. */
typedef struct ft_dev_xmat {
    uint64_t offset;
    uint32_t rows, cols;
    ft_dfn_t gemv_experts, gemm;
} ft_dev_xmat_t;

/* One op of the schedule bound to the device (by ft_xop_t.id): its
 * resident weights and the module's kernels for its shapes. */
typedef struct ft_dev_op {
    ft_dev_mat_t w[FT_XOP_MAX_ARGS]; /* LINEAR's matrices; ROUTER: w[0] the router */
    /* f32 vectors: RMSNORM, HEAD_NORM: the weight; ATTENTION: the sink
     * logits [n_heads]; ROPE with a table (YaRN): inv_freq [rope_dim / 2];
     * ROUTER: the selection bias [n_experts]; 0 for none. */
    ft_dptr_t vec;
    /* f32 biases (ft_xop_t.bias), 0 for none: LINEAR's per weight, the
     * ROUTER's logit bias in [0], MOE's gate, up and down stacks. */
    ft_dptr_t bias[FT_XOP_MAX_ARGS];
    /* RMSNORM, HEAD_NORM: the norm of the row width; ROPE: the rotation
     * (from the table when vec is set); ATTENTION: attention at a given
     * position count (with sinks when vec is set); ROUTER: softmax + top-k,
     * or the extended router (ext). */
    ft_dfn_t fn;
    int ext;                      /* ROUTER: fn is ft_router_ext */
    ft_dfn_t fn_pos;              /* ATTENTION: reading positions from device memory, or NULL */
    ft_dev_xmat_t gate, up, down; /* MOE */
} ft_dev_op_t;


/* Per-thread scratch for the experts the CPU computes. */
typedef struct ft_dev_cpu_scratch {
    float *xrows;  /* [rows, d] gathered inputs */
    void *xp, *ap; /* prepared rows for gate/up and for down */
    float *g, *u;  /* [rows, ffn] */
} ft_dev_cpu_scratch_t;

/* One device session: what outlives a step (its KV cache and recurrent
 * state) and its decode graphs; the buffers a step computes in are the
 * engine's workspace (dev_work.c). */
struct ft_dev_session {
    ft_dev_engine_t *ce;
    uint32_t n_ctx, n_batch;
    ft_dptr_t block; /* k_cache, v_cache and rstate */
    uint64_t block_bytes;
    ft_dptr_t k_cache, v_cache; /* [kv blocks][n_ctx][kv_width] of m->kv_dtype (f32 or f16):
                                   full-attention blocks only (ft_dev_kv_slot) */
    uint64_t kv_bytes;          /* k_cache and v_cache together */
    ft_dptr_t rstate;           /* the DELTANET layers' conv + recurrent state (prog->rstate_bytes) */
    /* Decode as graphs: one per segment between host round trips (the
     * MOE ops read the router's choices back), captured at the session's
     * first decode step alone in a pass and replayed after. Segment j <
     * n_moe ends at the j-th MOE op; the last one ends with the logits.
     * They hold the workspace's addresses of generation graphs_gen. */
    ft_dgraph_t *graphs; /* [n_moe + 1], host memory */
    int graphs_off;      /* 1: capture failed or unsupported: launch directly */
    uint32_t graphs_gen;
};

/* One item of the pass in flight: a session's rows [row0, row0 + n) at
 * positions n_past..; the epilogue computes its rows from `first` into
 * the logits buffer from row lrow0. */
typedef struct ft_dev_row_item {
    ft_dev_session_t *s;
    uint32_t row0, n, n_past, first, lrow0;
} ft_dev_row_item_t;

/* The step workspace every pass computes in, owned by the engine and
 * shared by its sessions (passes run one at a time, under the engine's
 * step_lock). A pass lays out the rows of its items one after another;
 * the row-wise ops that read a session (KV append, attention, DeltaNet)
 * find each item's rows, every other op runs over all rows. */
typedef struct ft_dev_work {
    uint32_t rows;   /* rows of every buffer: the most tokens one pass carries */
    uint32_t n_ctx;  /* the longest session context (attention's score rows) */
    uint32_t items;  /* the most sessions one pass carries */
    uint32_t gen;    /* bumped whenever the buffers move (graphs are then stale) */
    ft_dptr_t block; /* every device buffer below */
    uint64_t block_bytes;
    ft_dptr_t *buf;                  /* [prog->n_buffers] the schedule's buffers, [rows][width] */
    ft_dptr_t rl;                    /* [rows, max_experts] router logits */
    ft_dptr_t ids, wts;              /* [rows, max_used] */
    ft_dptr_t eo;                    /* [max_used][rows][d] expert outputs, slot-major */
    ft_dptr_t xg, g, u, dn;          /* expert work: [X][d], [X][ffn] x2, [X][d], X the larger of
                                        rows and items * max_used */
    ft_dptr_t scores;                /* [max_heads][n_ctx] attention scratch */
    ft_dptr_t cpu_rows;              /* [rows * max_used][d] outputs of CPU experts */
    ft_dptr_t pos, iota, ones;       /* [rows] int, [rows] int, [rows * max_used] float */
    ft_dptr_t dn_y;                  /* [dn_channels] one token's conv output */
    ft_dptr_t meta;                  /* per layer: expert tables and indices */
    uint64_t meta_bytes;
    /* Host side, one allocation. */
    void *host;
    float *x_host;     /* [rows, d] embeddings */
    float *h_host;     /* [rows, d] inputs of CPU experts */
    float *cpu_out;    /* [rows * max_used, d] their outputs */
    int32_t *ids_host; /* [rows, max_used] */
    float *wts_host;
    uint8_t *meta_host;         /* mirror of meta */
    uint32_t *e_count, *e_list; /* [E], [E][rows] t * n_used + k */
    int32_t *e_active;          /* [E] */
    uint32_t *e_active_count;
    uint32_t *cpu_row0;             /* [E] first cpu_out row of each active expert */
    uint32_t *cpu_items;            /* [E] active indices the CPU computes */
    ft_dev_cpu_scratch_t *scratch;  /* [n_threads] */
    const ft_xop_t **seg_ops;       /* [n_ops] the ops of the segment being captured, to run
                                       them again as plain launches if the capture fails */
    ft_dev_row_item_t *it;          /* [items] the pass's items */
    int32_t *tok;                   /* [rows] the pass's tokens */
    /* The pass in flight (dev_ops.c). */
    uint32_t n, n_items;
    /* Decode pass: every item is one token, and each row's products take
     * the one-token kernels (GEMV, the grouped expert GEMV) it takes
     * alone; else every item is a chunk of several and every row takes
     * the GEMM kernels. Either way a row's kernels are those of its item
     * alone: batch invariance. */
    int gemv;
    int cpu_gen;              /* the CPU's experts run the generated kernels this pass */
    uint32_t lrow;            /* the logits buffer's row the epilogue writes first */
    uint64_t t0_ns;
    uint64_t *routing;        /* this pass's calibration counts, or NULL */
    ft_dev_session_t *gs;     /* a decode pass of one session through its graphs, or NULL */
    uint32_t seg;             /* the segment the ops are in */
    int seg_state;            /* 0 closed, 1 capturing, 2 replaying, 3 plain launches */
    uint32_t seg_n;
    const ft_xop_t *seg_moe;  /* the MOE op whose combine opened the segment, or NULL */
    ft_dptr_t moe_in;         /* the MOE op in flight (dev_moe.c): its input rows */
    const ft_dev_op_t *moe_op;
    const ft_xop_t *moe_x; /* its op: biases and activation */
} ft_dev_work_t;

struct ft_dev_engine {
    const ft_allocator_t *a;
    const ft_model_t *m;
    const ft_program_t *prog;
    const ft_bundle_t *bundle;
    ft_threadpool_t *pool;
    ft_device_t *dev;        /* owned */
    ft_dstream_t cs, xs;     /* compute stream, copy stream (the offload's copies run there) */
    /* Kernels every op shares. kv_append: NULL in plans compiled before it
     * (then: copies, and no graphs). */
    ft_dfn_t gather, scatter_add, swiglu, kv_append;
    /* The variants' kernels (templates/variants.cuh), NULL where the plan
     * has no op that needs them. */
    ft_dfn_t bias_add, swiglu_oai, sigmoid_mul;
    /* Gated DeltaNet (templates/deltanet.cuh) and the shared expert's
     * one-float sigmoid gate, NULL where the plan has none. dn_channels:
     * the widest DELTANET's conv channels (the session's y scratch). */
    ft_dfn_t dn_conv, dn_recur, sigmoid_bcast;
    uint32_t dn_channels;
    ft_dev_op_t *ops; /* [prog->n_ops] */
    uint32_t n_moe;   /* MOE ops: a decode step has n_moe + 1 graph segments */
    ft_dptr_t dense;  /* every resident weight, one allocation */
    uint64_t dense_bytes;
    uint8_t *pinned_ok;      /* [n_weight_files] 1: registered */
    ft_offload_t *off;       /* the expert cache, q* dispatch, and the slots in device memory */
    uint64_t session_bytes;  /* device memory held by live sessions and the workspace */
    ft_dev_work_t ws;        /* the step workspace (dev_work.c); rows 0 until a session needs it */
    /* Free-VRAM polling (vram_policy.h). */
    int poll_vram;
    uint32_t gen_min_tokens; /* CPU experts: generated kernels from this many tokens; 0: never */
    ft_blob_verify_t *verify; /* each expert's blob before its first use, or NULL */
    ft_vram_policy_t policy;
    uint32_t steps_since_poll;
    uint64_t last_poll_ns;
};

/* dev_kernels.c: binds every op of the program to the module's kernels
 * (names built as codegen/cuda/cuda_emit.c builds them). */
FT_WARN_UNUSED ft_status_t ft_dev_engine_kernels(ft_dev_engine_t *ce);

/* Launch helpers (dev_kernels.c); all on the compute stream. */
FT_WARN_UNUSED ft_status_t ft_dev_run(ft_dev_engine_t *ce, ft_dfn_t fn, uint32_t gx, uint32_t gy, uint32_t block,
                                      void **params);
/* y [n, rows] = x [n, cols] W^T; GEMV for one token, GEMM otherwise. */
FT_WARN_UNUSED ft_status_t ft_dev_linear(ft_dev_engine_t *ce, const ft_dev_mat_t *w, ft_dptr_t x,
                                         ft_dptr_t y, uint32_t n);
/* y[r] += b + (sel ? sel[r] : 0) * cols for n rows of cols floats; b 0: nothing. */
FT_WARN_UNUSED ft_status_t ft_dev_bias_add(ft_dev_engine_t *ce, ft_dptr_t y, ft_dptr_t b,
                                           ft_dptr_t sel, uint32_t n, uint32_t cols);
/* h = act(g) * u over n floats: SwiGLU, the clamped SwiGLU of act
 * ACT_SWIGLU_OAI (x: the GLU or MOE op, its alpha and limit), or the
 * sigmoid gate of act ACT_SIGMOID (a GLU). */
FT_WARN_UNUSED ft_status_t ft_dev_glu(ft_dev_engine_t *ce, const ft_xop_t *x, ft_dptr_t g,
                                      ft_dptr_t u, ft_dptr_t h, uint32_t n);
/* The KV cache slot of block `layer`: how many blocks before it append
 * to the cache (only full-attention blocks have rows; dev_session.c). */
uint32_t ft_dev_kv_slot(const ft_program_t *p, uint32_t layer);

/* h[r] *= sigmoid(g[r]) for n rows of cols (the shared expert's gate). */
FT_WARN_UNUSED ft_status_t ft_dev_sigmoid_bcast(ft_dev_engine_t *ce, ft_dptr_t g, ft_dptr_t h, uint32_t n,
                                                uint32_t cols);
/* y[idx[i]] += weight[i] * in[i] for n rows of cols floats. */
FT_WARN_UNUSED ft_status_t ft_dev_scatter_add(ft_dev_engine_t *ce, ft_dptr_t in, ft_dptr_t idx, ft_dptr_t weight,
                                              uint32_t n, ft_dptr_t y, uint32_t cols);

/* dev_engine.c: between steps, polls free device memory at the policy's
 * rate and re-plans when another program took or returned some. */
void ft_dev_engine_poll(ft_dev_engine_t *ce);

/* dev_moe.c: the MOE op x on the device (its input rows at h): the
 * router's choices back to the host, the dispatch, copies and the
 * experts' products into eo; ft_dev_combine adds eo into the output
 * buffer in slot order (queued only). */
FT_WARN_UNUSED ft_status_t ft_dev_moe(ft_dev_engine_t *ce, const ft_xop_t *x, ft_dptr_t h, uint32_t n);
FT_WARN_UNUSED ft_status_t ft_dev_combine(ft_dev_engine_t *ce, const ft_xop_t *x, uint32_t n);

/* dev_work.c: grows the workspace to passes of `rows` tokens of `items`
 * sessions with contexts of `n_ctx` (keeps nothing; between steps). */
FT_WARN_UNUSED ft_status_t ft_dev_work_reserve(ft_dev_engine_t *ce, uint32_t rows, uint32_t items,
                                               uint32_t n_ctx);
void ft_dev_work_free(ft_dev_engine_t *ce);
/* Entries of the grouped GEMV's blob table in a workspace of `items`: an
 * active expert each in a prefill pass, an (expert, token) pair each in a
 * decode pass (one token per item). */
uint64_t ft_dev_work_entries(const ft_model_t *m, uint64_t items);
/* y [n, rows] = x [n, cols] W^T with the kernels each row takes alone:
 * one GEMV per row in a decode pass (w->gemv), else ft_dev_linear. */
FT_WARN_UNUSED ft_status_t ft_dev_linear_rows(ft_dev_engine_t *ce, const ft_dev_mat_t *w, ft_dptr_t x,
                                              ft_dptr_t y, uint32_t n);

#endif
