/* The plan's op schedule bound for execution: every op with its weights
 * resolved into the mapped FTW files (as ft_mat_t views of the model),
 * its buffers as indices into the session's buffer table, its parameters,
 * and the CPU fusions the plan's kernel module allows. Built once per
 * engine by ft_model_create; read-only while steps run. The executor
 * (executor.c) walks it; nothing here names an architecture. */
#ifndef FT_EXEC_PROGRAM_H
#define FT_EXEC_PROGRAM_H

#include "freetoken.h"
#include "model.h"
#include "ops.h"

#include <stdint.h>

#define FT_XOP_MAX_ARGS 3
#define FT_ROPE_MSCALE_MAX_HALF 256 /* ROPE with a YaRN scale: at most this many pairs (op_attention.c) */

/* One bound op. kind is the plan's OpKind (plan.proto). */
typedef struct ft_xop {
    int kind;
    uint32_t id;   /* the op's place in the program: prologue, blocks, epilogue in order */
    int32_t layer; /* the block (KV cache, expert block, offload layer), or -1 */
    uint32_t n_in, n_out, n_w;
    uint32_t in[FT_XOP_MAX_ARGS], out[FT_XOP_MAX_ARGS]; /* session buffer indices */
    const ft_mat_t *w[FT_XOP_MAX_ARGS];            /* LINEAR, EMBED: matrices */
    const float *bias[FT_XOP_MAX_ARGS];                 /* LINEAR: added to out[j] (w[j]->rows floats), or NULL */
    const float *vec;                                   /* RMSNORM, HEAD_NORM: the weight */
    uint32_t width;                                     /* RMSNORM, ADD: floats per row */
    float eps;
    int rope_neox;           /* ROPE: 1 NeoX halves, 0 adjacent pairs */
    uint32_t rope_dim;
    const float *inv_freq;   /* ROPE: [rope_dim / 2] */
    float rope_mscale;       /* ROPE: cos and sin times this (YaRN's 1 + 0.1 ln factor; else 1) */
    uint32_t n_heads, n_kv_heads, head_dim;
    uint32_t sliding_window; /* ATTENTION: a query sees its last this many positions; 0: all */
    const float *sinks;      /* ATTENTION: [n_heads] sink logits in each head's softmax, or NULL */
    const ft_layer_t *L; /* ROUTER, MOE: the block's expert view (stacks, blob, kernels) */
    /* ROUTER: softmax (0) or sigmoid (1) scores, group-limited choice
     * (n_groups 0: none), the weights' scale (1: as they are). */
    int scoring;
    uint32_t n_groups, n_groups_used;
    float routed_scaling;
    /* MOE: the gated activation (plan Activation: 0 SwiGLU, 2 gpt-oss's
     * clamped SwiGLU with act_alpha / act_limit); bias[j] (above) are the
     * stacks' biases, [n_experts][rows of stack j]. ROUTER: bias[0] is
     * the logits' bias [n_experts]. */
    int act;
    float act_alpha, act_limit;
    /* ROUTER: [n_experts] added to the scores for the choice only (the
     * chosen weights are the unbiased scores), or NULL. */
    const float *sel_bias;
    /* Fusions, bound with the kernel module (ft_program_bind_kernels); used
     * only when a step runs the generated kernels. RMSNORM: n_prep > 0
     * writes its rows prepared for its consumers instead of as floats:
     * for prep_type[0] into the session's prepared rows (xp), and for
     * prep_type[1] into the output buffer's memory (as bytes). */
    uint32_t n_prep;
    ft_dtype_t prep_type[2];
    ft_kabi_norm_prepare_fn prep_fn[2];
    /* ATTENTION: the module's kernel for the model's KV element type (the
     * other one NULL): over an f32 cache, or over an f16 cache. */
    ft_kabi_attn_fn attn_kernel;
    ft_kabi_attn_f16_fn attn_kernel_f16;
    /* ATTENTION: each item also prepares its slice of the output for the
     * next op, a LINEAR of this format (prepare_next), into xp; always
     * (the bytes equal preparing the whole row afterwards). */
    int prepare_next;
    ft_dtype_t next_type;
    /* GLU with ACT_SIGMOID of a one-float gate: out[t] *= sigmoid(in[0][t])
     * over width floats (the shared expert's gate). */
    int glu_bcast;
    /* DELTANET: its shape, the taps [channels][conv_kernel], dt_bias and A
     * [n_v_heads] (widened to f32), and where its state lies in the
     * session's recurrent region: [rstate_off, + rstate_bytes). */
    ft_deltanet_shape_t dn;
    ft_kabi_deltanet_fn dn_kernel; /* the module's recurrence for dn, or NULL */
    /* MLA: the compressed KV's rank, the value heads' width, the softmax
     * scale, and whether w[0] is W_kb transposed per head ([H * kv_lora,
     * nope]) rather than [H * nope, kv_lora]; w[1] W_vb; the RoPE fields
     * above (over the rope_dim last floats of each head). */
    uint32_t mla_kv_lora, mla_v_dim;
    float mla_scale;
    int mla_kb_t;
    ft_kabi_mla_fn mla_kernel; /* the module's head kernel for this shape, or NULL */
    const float *dn_conv, *dn_dt_bias, *dn_a;
    size_t rstate_off, rstate_bytes;
} ft_xop_t;

typedef struct ft_xops {
    uint32_t n;
    ft_xop_t *ops;
} ft_xops_t;

typedef struct ft_program {
    uint32_t n_buffers;
    uint32_t *widths;    /* [n_buffers] floats per token */
    int32_t logits_buf;  /* the BUF_LOGITS buffer */
    ft_xops_t prologue, epilogue;
    uint32_t n_blocks;
    ft_xops_t *blocks;   /* [n_blocks] */
    uint32_t n_ops;      /* every op of the lists (ids 0 .. n_ops - 1) */
    float *inv_freq;     /* every ROPE op's table, back to back */
    float *bias_floats;  /* every LINEAR bias and ATTENTION's sinks widened to f32, back to back */
    /* Sizes for scratch: the largest over the ops. */
    uint32_t max_group, max_kv_width, kv_buf;
    /* The recurrent state one session keeps (every DELTANET op's, each
     * slice 64-byte aligned, in program order): 0 when the model has none.
     * The session owns one zeroed region of this many bytes; snapshots
     * copy exactly it. max_dn_channels: the widest conv (scratch). */
    size_t rstate_bytes;
    uint32_t max_dn_channels;
    uint32_t max_dn_heads;       /* the most value heads of a DELTANET */
    size_t max_dn_chunk_scratch; /* floats one head's chunked form needs (ops.h) */
} ft_program_t;

/* Binds the plan's schedule against the model view m (whose mats table
 * and layer views ft_model_create fills from the same schedule): checks
 * every op's shapes against its weights and buffers, naming the op. */
FT_WARN_UNUSED ft_status_t ft_program_create(const ft_bundle_t *bundle, const ft_model_t *m, const ft_allocator_t *alloc,
                              ft_program_t **out);
void ft_program_destroy(ft_program_t *p, const ft_allocator_t *alloc);
/* Chooses the fusions the kernel module mod allows (NULL: none). */
void ft_program_bind_kernels(ft_program_t *p, const ft_model_t *m, const ft_cpu_module_t *mod);

#endif
