/* The step workspace: every buffer a forward pass computes in, owned by
 * the engine and shared by all its sessions (steps run one at a time,
 * under the engine's step_lock). A session keeps only what outlives a
 * step: its KV cache, its last logits, its device state. One pass may
 * carry the tokens of several sessions (executor.c): rows [row0, row0 + n)
 * of every buffer are one item's, and the row-wise ops that read a
 * session (RoPE's position, the KV cache, attention) find it per row. */
#ifndef FT_EXEC_WORK_H
#define FT_EXEC_WORK_H

#include "engine_internal.h"

typedef struct ft_work {
    void *block;    /* everything below, one allocation from the engine's memory device */
    uint32_t rows;  /* rows of every buffer: the most tokens one pass carries */
    uint32_t n_ctx; /* the longest session context (attention's score rows) */
    uint32_t items; /* the most sessions one pass carries */
    uint32_t n_threads;
    float **bufs; /* [prog->n_buffers] the schedule's buffers, [rows][width] each
                     (the logits buffer: NULL, the pass's output goes there) */
    void *xp;     /* prepared activations, [rows] rows of the widest format */
    /* Where prepared rows of a buffer are, between the op that made them
     * and its consumers (executor.c): in xp, and a second format in the
     * buffer's own memory (alt). -1: none. */
    int32_t xp_buf, alt_buf;
    ft_dtype_t xp_type, alt_type;
    int use_generated; /* this pass runs the generated kernels (engine policy) */
    float *scores;     /* [n_threads][max_group][n_ctx] */
    /* One session's K then V rows of a layer, [n_ctx] each, gathered
     * contiguous for the plan's attention kernel (op_attention.c), or NULL
     * (no kernels, or the cuda backend). */
    uint8_t *kv_stage;
    int has_stage;
    float *router;            /* [rows, max_experts] */
    float *route_scratch;     /* [2 * max_experts] group-limited routing (forward_moe.c) */
    int32_t *sel;             /* [rows, max_used] chosen experts */
    float *sel_w;             /* [rows, max_used] their weights */
    float *eo;                /* [rows, max_used, d] each chosen expert's output */
    uint32_t *e_count;        /* [max_experts] tokens routed to each expert */
    uint32_t *e_list;         /* [max_experts][rows] t * max_used + slot */
    int32_t *e_active;        /* [max_experts] experts with tokens this layer */
    uint32_t *e_active_count; /* [max_experts] tokens of each active expert */
    const uint8_t **e_blob;   /* [max_experts] offloaded expert blob, or NULL: mapped weights */
    ft_expert_scratch_t *es;  /* [n_threads] */
    /* Per row of the pass: its session and position. */
    ft_session_t **row_s; /* [rows] */
    uint32_t *row_pos;    /* [rows] */
    int32_t *tok;         /* [rows] the pass's tokens */
    float *logits;        /* [items][vocab] the last rows' logits of a pass */
} ft_work_t;

/* Makes the engine's workspace hold passes of at least `rows` tokens,
 * `items` sessions and contexts of `n_ctx` tokens (grows it, keeping
 * nothing: call it between steps, with step_lock held or before the
 * scheduler runs). */
FT_WARN_UNUSED ft_status_t ft_work_reserve(ft_engine_t *e, uint32_t rows, uint32_t items,
                                           uint32_t n_ctx);
void ft_work_free(ft_engine_t *e);
/* Bytes of the engine's workspace (ft_engine_stats). */
uint64_t ft_work_bytes(const ft_engine_t *e);

#endif
