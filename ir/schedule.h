/* The op schedule: the per-layer program a model lowers to (models/), which
 * the compiler stores in the plan (runtime/format/plan.proto, message
 * Schedule) and the runtime's executor walks. Ops read and write named
 * activation buffers and take weights by index into the IR's tensor table
 * (the plan keeps the same order). The executor knows these ops, never an
 * architecture: a new family is a new lowering plus any new op.
 *
 * Enum values mirror plan.proto (OpKind, BufferKind) and never change. */
#ifndef FT_IR_SCHEDULE_H
#define FT_IR_SCHEDULE_H

#include "freetoken.h"
#include "ir.h"

#include <stdint.h>
#include <stdio.h>

typedef enum ft_op_kind {
    FT_OP_INVALID = 0,
    FT_OP_EMBED = 1,
    FT_OP_RMSNORM = 2,
    FT_OP_LINEAR = 3,
    FT_OP_HEAD_NORM = 4,
    FT_OP_ROPE = 5,
    FT_OP_KV_APPEND = 6,
    FT_OP_ATTENTION = 7,
    FT_OP_ADD = 8,
    FT_OP_ROUTER = 9,
    FT_OP_MOE = 10,
    FT_OP_GLU = 11,
    FT_OP_DELTANET = 12,
    FT_OP_MLA = 13,
    FT_OP_COUNT
} ft_op_kind_t;

typedef enum ft_buf_kind { FT_BUF_ACTIVATION = 0, FT_BUF_LOGITS = 1 } ft_buf_kind_t;

#define FT_SCHED_MAX_BUFFERS 32 /* a lowering's fixed set */
#define FT_OP_MAX_ARGS 3 /* inputs, outputs or weights of one op */
#define FT_OP_NO_BIAS 0xFFFFFFFFu /* biases[j]: weight j has none (plan.proto's NO_BIAS) */

/* One op; which fields mean something depends on the kind (plan.proto's
 * Op documents each). */
typedef struct ft_ir_op {
    ft_op_kind_t kind;
    uint32_t n_inputs, n_outputs, n_weights;
    uint32_t inputs[FT_OP_MAX_ARGS];  /* buffer indices */
    uint32_t outputs[FT_OP_MAX_ARGS]; /* buffer indices */
    uint32_t weights[FT_OP_MAX_ARGS]; /* tensor indices */
    /* LINEAR, MOE: 0 (no biases) or n_weights entries, each a tensor index
     * or FT_OP_NO_BIAS; biases[j] is added to weight j's product. ROUTER:
     * one, the logits' bias. */
    uint32_t n_biases;
    uint32_t biases[FT_OP_MAX_ARGS];
    float eps;
    ft_rope_kind_t rope;
    uint32_t rope_dim;
    float rope_theta;
    uint32_t n_heads, n_kv_heads, head_dim, sliding_window;
    uint32_t n_experts, n_experts_used, expert_ffn;
    ft_router_scoring_t scoring;
    int norm_topk_prob;
    uint32_t n_groups, n_groups_used; /* ROUTER: group-limited routing, 0: none */
    float routed_scaling;             /* ROUTER: 1 leaves the weights as they are */
    ft_activation_t act;
    float act_alpha, act_limit; /* MOE, GLU: FT_ACT_SWIGLU_OAI's constants */
    /* ROPE: YaRN (factor 0: none), as ft_ir_hparams_t */
    float rope_yarn_factor, rope_yarn_beta_fast, rope_yarn_beta_slow;
    uint32_t rope_yarn_orig_ctx;
    uint32_t conv_kernel; /* DELTANET: the causal conv's taps */
    /* MLA: the compressed KV's rank, the value heads' width, the softmax
     * scale and RoPE's cos/sin scale (0: the defaults, plan.proto's Op) */
    uint32_t kv_lora_rank, value_head_dim;
    float attn_scale, rope_mscale;
    int heads_tiled;      /* DELTANET: value head h reads key head h % n_kv_heads */
} ft_ir_op_t;

typedef struct ft_ir_buffer {
    const char *name;
    ft_buf_kind_t kind;
    uint32_t width; /* floats per token */
} ft_ir_buffer_t;

/* A list of ops. */
typedef struct ft_ir_ops {
    uint32_t n, cap;
    ft_ir_op_t *ops;
} ft_ir_ops_t;

typedef struct ft_ir_schedule {
    uint32_t n_buffers;
    ft_ir_buffer_t buffers[FT_SCHED_MAX_BUFFERS];
    ft_ir_ops_t prologue;
    uint32_t n_blocks;
    ft_ir_ops_t *blocks; /* [n_blocks] */
    ft_ir_ops_t epilogue;
} ft_ir_schedule_t;

/* ---- building a schedule (for lowerings in models/) ----------------- */

/* An empty schedule of n_blocks blocks, its memory in model->arena. */
FT_WARN_UNUSED ft_status_t ft_sched_init(ft_ir_schedule_t *s, const ft_ir_model_t *model, uint32_t n_blocks);
/* Adds a buffer; returns its index. At most FT_SCHED_MAX_BUFFERS. */
FT_WARN_UNUSED ft_status_t ft_sched_buffer(ft_ir_schedule_t *s, const char *name, ft_buf_kind_t kind, uint32_t width,
                            uint32_t *out_index);
/* Appends op to a list (copied), growing it in the model's arena. */
FT_WARN_UNUSED ft_status_t ft_sched_push(const ft_ir_model_t *model, ft_ir_ops_t *list, const ft_ir_op_t *op);
/* The index of the tensor with this role in this layer (-1: global), or a
 * FORMAT status naming what is missing. */
FT_WARN_UNUSED ft_status_t ft_sched_weight(const ft_ir_model_t *model, ft_tensor_role_t role, int32_t layer,
                            uint32_t *out_index);

const char *ft_op_kind_name(ft_op_kind_t kind);

#endif
