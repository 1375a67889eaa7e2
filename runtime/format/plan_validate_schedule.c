/* The structural check of a plan's op schedule: every op of a known kind
 * with the inputs, outputs and weights its kind takes, indices inside the
 * buffer and tensor tables, enums the schema defines and parameters in
 * range. Shapes against the weights are checked where the executor binds
 * the ops (runtime/exec/program.c), which resolves them anyway. */
#include "plan_validate.h"
#include "plan_validate_internal.h"
#include "dtype.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define FT_SCHED_MAX_BUFFERS 64u
#define FT_SCHED_MAX_OPS 4096u /* per block, prologue or epilogue */

/* How many inputs, outputs and weights each kind takes (min..max). */
typedef struct ft_op_arity {
    uint8_t in_min, in_max, out_min, out_max, w_min, w_max;
} ft_op_arity_t;

static const ft_op_arity_t ft_arity[] = {
    [FTPLAN__OP_KIND__OP_EMBED] = {0, 0, 1, 1, 1, 1},
    [FTPLAN__OP_KIND__OP_RMSNORM] = {1, 1, 1, 1, 1, 1},
    [FTPLAN__OP_KIND__OP_LINEAR] = {1, 1, 1, 3, 1, 3},
    [FTPLAN__OP_KIND__OP_HEAD_NORM] = {1, 1, 0, 0, 1, 1},
    [FTPLAN__OP_KIND__OP_ROPE] = {2, 2, 0, 0, 0, 0},
    [FTPLAN__OP_KIND__OP_KV_APPEND] = {2, 2, 0, 0, 0, 0},
    [FTPLAN__OP_KIND__OP_ATTENTION] = {1, 1, 1, 1, 0, 1},
    [FTPLAN__OP_KIND__OP_ADD] = {1, 1, 1, 1, 0, 0},
    [FTPLAN__OP_KIND__OP_ROUTER] = {1, 1, 0, 0, 1, 2}, /* logits [, selection bias] */
    [FTPLAN__OP_KIND__OP_MOE] = {1, 1, 1, 1, 3, 3},
    [FTPLAN__OP_KIND__OP_GLU] = {2, 2, 1, 1, 0, 0},
    [FTPLAN__OP_KIND__OP_DELTANET] = {3, 3, 1, 1, 3,
                                      3}, /* qkv, beta, alpha -> o; conv, dt_bias, A */
    [FTPLAN__OP_KIND__OP_MLA] = {3, 3, 1, 1, 2, 2}, /* q, c, k_rope -> o; W_kb, W_vb */
};

typedef struct ft_sched_ctx {
    const Ftplan__Plan *plan;
    const char *name;
    const char *where; /* "prologue", "blocks[3]", "epilogue" */
} ft_sched_ctx_t;

#define FT_OP_ERR(code, fmt, ...)                                                                  \
    ft_status_make(code, "%s: schedule.%s.ops[%zu] (%s): " fmt, c->name, c->where, i,              \
                   ft_plan_op_kind_name(op->kind), __VA_ARGS__)

const char *ft_plan_op_kind_name(int kind)
{
    const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(&ftplan__op_kind__descriptor, kind);
    return v ? v->name : "?";
}

FT_WARN_UNUSED static ft_status_t ft_check_indices(const ft_sched_ctx_t *c, const Ftplan__Op *op, size_t i,
                                    const char *field, const uint32_t *v, size_t n, size_t limit)
{
    for (size_t j = 0; j < n; j++)
        if (v[j] >= limit)
            return FT_OP_ERR(FT_STATUS_OUT_OF_RANGE, "%s[%zu] = %u is not below %zu", field, j, v[j], limit);
    return FT_OK;
}

/* Biases: a LINEAR's one per weight, each NO_BIAS or a vector (f32, f16
 * or bf16) of its weight's rows; a ROUTER's one vector of n_experts; a
 * MOE's one per stack, [n_experts, the stack's rows]. */
FT_WARN_UNUSED static ft_status_t ft_check_biases(const ft_sched_ctx_t *c, const Ftplan__Op *op, size_t i)
{
    if (!op->n_biases)
        return FT_OK;
    const int linear = op->kind == FTPLAN__OP_KIND__OP_LINEAR, moe = op->kind == FTPLAN__OP_KIND__OP_MOE;
    if (!(linear || moe || op->kind == FTPLAN__OP_KIND__OP_ROUTER) || op->n_biases != op->n_weights)
        return FT_OP_ERR(FT_STATUS_FORMAT, "%zu biases for %zu weights (only a LINEAR, ROUTER or MOE takes "
                         "biases, one per weight)", op->n_biases, op->n_weights);
    for (size_t j = 0; j < op->n_biases; j++) {
        const uint32_t b = op->biases[j];
        if (b == FT_PLAN_NO_BIAS)
            continue;
        if (b >= c->plan->n_tensors)
            return FT_OP_ERR(FT_STATUS_OUT_OF_RANGE, "biases[%zu] = %u is not below %zu", j, b,
                             c->plan->n_tensors);
        const Ftplan__Tensor *t = c->plan->tensors[b], *w = c->plan->tensors[op->weights[j]];
        const uint64_t rows = w->n_shape >= 2 ? w->shape[w->n_shape - 2] : 0;
        if (!linear) { /* ROUTER: [n_experts]; MOE: [n_experts, rows] */
            const int ok = moe ? t->n_shape == 2 && t->shape[0] == op->n_experts && t->shape[1] == rows
                               : t->n_shape == 1 && t->shape[0] == op->n_experts;
            if (t->format != FTPLAN__WEIGHT_FORMAT__WF_F32 || !ok)
                return FT_OP_ERR(FT_STATUS_MISMATCH, "bias %zu '%s' is not an f32 %s", j, t->name,
                                 moe ? "[n_experts, rows] stack of its weight's rows" : "vector of n_experts");
            continue;
        }
        if (t->format != FTPLAN__WEIGHT_FORMAT__WF_F32 && t->format != FTPLAN__WEIGHT_FORMAT__WF_F16 &&
            t->format != FTPLAN__WEIGHT_FORMAT__WF_BF16)
            return FT_OP_ERR(FT_STATUS_UNSUPPORTED, "bias %zu '%s' is %s (a bias is f32, f16 or bf16)", j,
                             t->name, ft_dtype_name((ft_dtype_t)t->format));
        if (t->n_shape != 1 || t->shape[0] != rows)
            return FT_OP_ERR(FT_STATUS_MISMATCH, "bias %zu '%s' is not a vector of weight '%s''s %llu rows", j,
                             t->name, w->name, (unsigned long long)rows);
    }
    return FT_OK;
}

/* The parameters one kind reads, each in range. */
FT_WARN_UNUSED static ft_status_t ft_check_params(const ft_sched_ctx_t *c, const Ftplan__Op *op, size_t i)
{
    switch (op->kind) {
    case FTPLAN__OP_KIND__OP_RMSNORM:
    case FTPLAN__OP_KIND__OP_HEAD_NORM:
        if (!(op->eps > 0.0f && op->eps < 1.0f))
            return FT_OP_ERR(FT_STATUS_OUT_OF_RANGE, "eps = %g is outside (0, 1)", (double)op->eps);
        break;
    case FTPLAN__OP_KIND__OP_ROPE:
        if (!ft_plan_enum_ok(&ftplan__rope_kind__descriptor, op->rope) || op->rope == FTPLAN__ROPE_KIND__ROPE_NONE)
            return FT_OP_ERR(FT_STATUS_FORMAT, "rope kind %d is not a rotary embedding", (int)op->rope);
        if (!(op->rope_theta >= 1.0f && isfinite(op->rope_theta)))
            return FT_OP_ERR(FT_STATUS_OUT_OF_RANGE, "rope_theta = %g", (double)op->rope_theta);
        if (op->rope_dim == 0 || op->rope_dim % 2 || op->rope_dim > op->head_dim)
            return FT_OP_ERR(FT_STATUS_OUT_OF_RANGE, "rope_dim %u must be even and at most head_dim %u",
                             op->rope_dim, op->head_dim);
        if (op->rope_yarn_factor != 0.0f &&
            !(op->rope_yarn_factor >= 1.0f && op->rope_yarn_factor <= 1e6f && op->rope_yarn_orig_ctx >= 1 &&
              op->rope_yarn_beta_fast > 0.0f && op->rope_yarn_beta_fast <= 1e6f &&
              op->rope_yarn_beta_slow > 0.0f && op->rope_yarn_beta_slow <= op->rope_yarn_beta_fast))
            return FT_OP_ERR(FT_STATUS_OUT_OF_RANGE, "YaRN factor %g, original context %u, beta_fast %g, "
                             "beta_slow %g (factor in [1, 1e6], 0 < beta_slow <= beta_fast)",
                             (double)op->rope_yarn_factor, op->rope_yarn_orig_ctx,
                             (double)op->rope_yarn_beta_fast, (double)op->rope_yarn_beta_slow);
        break;
    case FTPLAN__OP_KIND__OP_ROUTER:
        if (!ft_plan_enum_ok(&ftplan__router_scoring__descriptor, op->scoring))
            return FT_OP_ERR(FT_STATUS_FORMAT, "unknown router scoring %d", (int)op->scoring);
        if (!(op->routed_scaling >= 0.0f && op->routed_scaling <= 1e6f))
            return FT_OP_ERR(FT_STATUS_OUT_OF_RANGE, "routed_scaling = %g is outside [0, 1e6]",
                             (double)op->routed_scaling);
        if (op->n_groups &&
            (op->n_experts % op->n_groups || op->n_groups_used == 0 || op->n_groups_used > op->n_groups ||
             (uint64_t)op->n_groups_used * (op->n_experts / op->n_groups) < op->n_experts_used))
            return FT_OP_ERR(FT_STATUS_OUT_OF_RANGE,
                             "%u of %u expert groups for top-%u of %u experts (groups must divide the "
                             "experts and the groups used hold at least the experts chosen)",
                             op->n_groups_used, op->n_groups, op->n_experts_used, op->n_experts);
        if (!op->n_groups && op->n_groups_used)
            return FT_OP_ERR(FT_STATUS_FORMAT, "n_groups_used %u without groups", op->n_groups_used);
        if (op->n_weights == 2) { /* the selection bias (indices checked before) */
            const Ftplan__Tensor *t = c->plan->tensors[op->weights[1]];
            if (!t || t->format != FTPLAN__WEIGHT_FORMAT__WF_F32 || t->n_shape != 1 || t->shape[0] != op->n_experts)
                return FT_OP_ERR(FT_STATUS_MISMATCH, "selection bias weights[1] = tensor %u ('%s') is not an f32 "
                                 "vector of the %u experts", op->weights[1], t && t->name ? t->name : "?",
                                 op->n_experts);
        }
        break;
    case FTPLAN__OP_KIND__OP_GLU:
        if (!ft_plan_enum_ok(&ftplan__activation__descriptor, op->act))
            return FT_OP_ERR(FT_STATUS_FORMAT, "unknown activation %d", (int)op->act);
        if (op->act == FTPLAN__ACTIVATION__ACT_SWIGLU_OAI &&
            !(op->act_alpha > 0.0f && op->act_alpha < 1e6f && op->act_limit > 0.0f && op->act_limit < 1e6f))
            return FT_OP_ERR(FT_STATUS_OUT_OF_RANGE, "swiglu_oai alpha %g, limit %g (both in (0, 1e6))",
                             (double)op->act_alpha, (double)op->act_limit);
        break;
    case FTPLAN__OP_KIND__OP_MLA:
        if (!ft_plan_enum_ok(&ftplan__rope_kind__descriptor, op->rope) || op->rope == FTPLAN__ROPE_KIND__ROPE_NONE)
            return FT_OP_ERR(FT_STATUS_FORMAT, "rope kind %d is not a rotary embedding", (int)op->rope);
        if (!(op->rope_theta >= 1.0f && isfinite(op->rope_theta)) || op->rope_dim == 0 || op->rope_dim % 2 ||
            op->rope_dim >= op->head_dim || op->kv_lora_rank == 0 || op->kv_lora_rank > FT_PLAN_MAX_HEAD_DIM ||
            op->value_head_dim == 0 || op->value_head_dim > FT_PLAN_MAX_HEAD_DIM || op->n_kv_heads != 1 ||
            !(op->attn_scale >= 0.0f && op->attn_scale < 1e3f) || !(op->rope_mscale >= 0.0f && op->rope_mscale < 1e3f))
            return FT_OP_ERR(FT_STATUS_OUT_OF_RANGE, "rope %u of head_dim %u (theta %g), kv_lora_rank %u, value "
                             "heads of %u, %u KV heads, scales %g / %g (one KV head, an even RoPE part below "
                             "head_dim, ranks and widths in 1..%u, scales in [0, 1e3))",
                             op->rope_dim, op->head_dim, (double)op->rope_theta, op->kv_lora_rank,
                             op->value_head_dim, op->n_kv_heads, (double)op->attn_scale, (double)op->rope_mscale,
                             FT_PLAN_MAX_HEAD_DIM);
        if (op->rope_yarn_factor != 0.0f &&
            !(op->rope_yarn_factor >= 1.0f && op->rope_yarn_factor <= 1e6f && op->rope_yarn_orig_ctx >= 1 &&
              op->rope_yarn_beta_fast > 0.0f && op->rope_yarn_beta_fast <= 1e6f &&
              op->rope_yarn_beta_slow > 0.0f && op->rope_yarn_beta_slow <= op->rope_yarn_beta_fast))
            return FT_OP_ERR(FT_STATUS_OUT_OF_RANGE, "YaRN factor %g, original context %u, beta_fast %g, beta_slow %g",
                             (double)op->rope_yarn_factor, op->rope_yarn_orig_ctx, (double)op->rope_yarn_beta_fast,
                             (double)op->rope_yarn_beta_slow);
        break;
    case FTPLAN__OP_KIND__OP_DELTANET:
        if (!(op->eps > 0.0f && op->eps < 1.0f))
            return FT_OP_ERR(FT_STATUS_OUT_OF_RANGE, "eps = %g is outside (0, 1)", (double)op->eps);
        if (op->conv_kernel < 2 || op->conv_kernel > FT_PLAN_MAX_CONV_KERNEL)
            return FT_OP_ERR(FT_STATUS_OUT_OF_RANGE, "conv_kernel %u is outside 2..%u",
                             op->conv_kernel, FT_PLAN_MAX_CONV_KERNEL);
        for (size_t j = 0; j < 3; j++) { /* the taps, dt_bias and A, widened to f32 at binding */
            const Ftplan__Tensor *t = c->plan->tensors[op->weights[j]];
            const uint64_t want[3][2] = {
                {(2ull * op->n_kv_heads + op->n_heads) * op->head_dim, op->conv_kernel},
                {op->n_heads, 0},
                {op->n_heads, 0}};
            const int shape_ok = t->n_shape == (j ? 1u : 2u) && t->shape[0] == want[j][0] &&
                                 (j || t->shape[1] == want[j][1]);
            if ((t->format != FTPLAN__WEIGHT_FORMAT__WF_F32 &&
                 t->format != FTPLAN__WEIGHT_FORMAT__WF_F16 &&
                 t->format != FTPLAN__WEIGHT_FORMAT__WF_BF16) ||
                !shape_ok)
                return FT_OP_ERR(FT_STATUS_MISMATCH,
                                 "weights[%zu] '%s' is not an f32, f16 or bf16 %s", j, t->name,
                                 j == 0 ? "[channels, conv_kernel] matrix of taps"
                                        : "vector of the value heads");
        }
        break;
    case FTPLAN__OP_KIND__OP_MOE:
        if (!ft_plan_enum_ok(&ftplan__activation__descriptor, op->act))
            return FT_OP_ERR(FT_STATUS_FORMAT, "unknown activation %d", (int)op->act);
        if (op->act == FTPLAN__ACTIVATION__ACT_SIGMOID)
            return FT_OP_ERR(FT_STATUS_FORMAT, "%s", "activation ACT_SIGMOID gates a GLU; experts do not take it");
        if (op->act == FTPLAN__ACTIVATION__ACT_SWIGLU_OAI &&
            !(op->act_alpha > 0.0f && op->act_alpha < 1e6f && op->act_limit > 0.0f && op->act_limit < 1e6f))
            return FT_OP_ERR(FT_STATUS_OUT_OF_RANGE, "swiglu_oai alpha %g, limit %g (both in (0, 1e6))",
                             (double)op->act_alpha, (double)op->act_limit);
        if (op->expert_ffn == 0 || op->expert_ffn > FT_PLAN_MAX_FFN)
            return FT_OP_ERR(FT_STATUS_OUT_OF_RANGE, "expert_ffn %u is outside 1..%u", op->expert_ffn,
                             FT_PLAN_MAX_FFN);
        break;
    default:
        break;
    }
    if (op->kind == FTPLAN__OP_KIND__OP_ATTENTION && op->n_weights) { /* the sinks */
        const Ftplan__Tensor *t = c->plan->tensors[op->weights[0]];
        if (t->format != FTPLAN__WEIGHT_FORMAT__WF_F32 && t->format != FTPLAN__WEIGHT_FORMAT__WF_F16 &&
            t->format != FTPLAN__WEIGHT_FORMAT__WF_BF16)
            return FT_OP_ERR(FT_STATUS_UNSUPPORTED, "sinks '%s' are %s (f32, f16 or bf16)", t->name,
                             ft_dtype_name((ft_dtype_t)t->format));
        if (t->n_shape != 1 || t->shape[0] != op->n_heads)
            return FT_OP_ERR(FT_STATUS_MISMATCH, "sinks '%s' are not a vector of the %u heads", t->name,
                             op->n_heads);
    }
    const int heads = op->kind == FTPLAN__OP_KIND__OP_ROPE ||
                      op->kind == FTPLAN__OP_KIND__OP_ATTENTION || op->kind == FTPLAN__OP_KIND__OP_MLA ||
                      op->kind == FTPLAN__OP_KIND__OP_DELTANET;
    const int kv = heads || op->kind == FTPLAN__OP_KIND__OP_KV_APPEND;
    const int hd = kv || op->kind == FTPLAN__OP_KIND__OP_HEAD_NORM;
    if (hd && (op->head_dim == 0 || op->head_dim > FT_PLAN_MAX_HEAD_DIM || op->head_dim % 2))
        return FT_OP_ERR(FT_STATUS_OUT_OF_RANGE, "head_dim %u must be even and in 2..%u", op->head_dim,
                         FT_PLAN_MAX_HEAD_DIM);
    if (kv && (op->n_kv_heads == 0 || op->n_kv_heads > FT_PLAN_MAX_HEADS))
        return FT_OP_ERR(FT_STATUS_OUT_OF_RANGE, "n_kv_heads %u is outside 1..%u", op->n_kv_heads,
                         FT_PLAN_MAX_HEADS);
    if (heads && (op->n_heads == 0 || op->n_heads > FT_PLAN_MAX_HEADS || op->n_heads % op->n_kv_heads))
        return FT_OP_ERR(FT_STATUS_OUT_OF_RANGE, "n_heads %u must be a multiple of n_kv_heads %u, at most %u",
                         op->n_heads, op->n_kv_heads, FT_PLAN_MAX_HEADS);
    const int experts = op->kind == FTPLAN__OP_KIND__OP_ROUTER || op->kind == FTPLAN__OP_KIND__OP_MOE;
    if (experts && (op->n_experts == 0 || op->n_experts > FT_PLAN_MAX_EXPERTS || op->n_experts_used == 0 ||
                    op->n_experts_used > op->n_experts))
        return FT_OP_ERR(FT_STATUS_OUT_OF_RANGE, "%u of %u experts (at most %u)", op->n_experts_used,
                         op->n_experts, FT_PLAN_MAX_EXPERTS);
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_check_op(const ft_sched_ctx_t *c, const Ftplan__Op *op, size_t i)
{
    const Ftplan__Schedule *s = c->plan->schedule;
    if (!ft_plan_enum_ok(&ftplan__op_kind__descriptor, op->kind) || op->kind == FTPLAN__OP_KIND__OP_INVALID)
        return ft_status_make(FT_STATUS_FORMAT, "%s: schedule.%s.ops[%zu]: unknown op kind %d", c->name,
                              c->where, i, (int)op->kind);
    if ((size_t)op->kind >= sizeof(ft_arity) / sizeof(ft_arity[0]))
        return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: schedule.%s.ops[%zu]: op kind %s is newer than this "
                              "runtime", c->name, c->where, i, ft_plan_op_kind_name(op->kind));
    const ft_op_arity_t *a = &ft_arity[op->kind];
    if (op->n_inputs < a->in_min || op->n_inputs > a->in_max || op->n_outputs < a->out_min ||
        op->n_outputs > a->out_max || op->n_weights < a->w_min || op->n_weights > a->w_max)
        return FT_OP_ERR(FT_STATUS_FORMAT,
                         "%zu inputs, %zu outputs, %zu weights (expected %u..%u, %u..%u, %u..%u)",
                         op->n_inputs, op->n_outputs, op->n_weights, a->in_min, a->in_max, a->out_min,
                         a->out_max, a->w_min, a->w_max);
    if (op->kind == FTPLAN__OP_KIND__OP_LINEAR && op->n_outputs != op->n_weights)
        return FT_OP_ERR(FT_STATUS_FORMAT, "%zu outputs for %zu weights", op->n_outputs, op->n_weights);
    ft_status_t st;
    if ((st = ft_check_indices(c, op, i, "inputs", op->inputs, op->n_inputs, s->n_buffers)) ||
        (st = ft_check_indices(c, op, i, "outputs", op->outputs, op->n_outputs, s->n_buffers)) ||
        (st = ft_check_indices(c, op, i, "weights", op->weights, op->n_weights, c->plan->n_tensors)) ||
        (st = ft_check_biases(c, op, i)))
        return st;
    return ft_check_params(c, op, i);
}

FT_WARN_UNUSED static ft_status_t ft_check_ops(const ft_sched_ctx_t *c, Ftplan__Op *const *ops, size_t n)
{
    if (n > FT_SCHED_MAX_OPS)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: schedule.%s has %zu ops (at most %u)", c->name,
                              c->where, n, FT_SCHED_MAX_OPS);
    for (size_t i = 0; i < n; i++) {
        if (!ops[i])
            return ft_status_make(FT_STATUS_FORMAT, "%s: schedule.%s.ops[%zu] is missing", c->name, c->where, i);
        ft_status_t st = ft_check_op(c, ops[i], i);
        if (st)
            return st;
    }
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_check_buffers(const Ftplan__Schedule *s, const char *name)
{
    if (s->n_buffers == 0 || s->n_buffers > FT_SCHED_MAX_BUFFERS)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: schedule has %zu buffers (expected 1..%u)", name,
                              s->n_buffers, FT_SCHED_MAX_BUFFERS);
    for (size_t i = 0; i < s->n_buffers; i++) {
        const Ftplan__Buffer *b = s->buffers[i];
        if (!b || !b->name || strlen(b->name) > 255)
            return ft_status_make(FT_STATUS_FORMAT, "%s: schedule.buffers[%zu]: missing or over-long name", name, i);
        if (!ft_plan_enum_ok(&ftplan__buffer_kind__descriptor, b->kind))
            return ft_status_make(FT_STATUS_FORMAT, "%s: schedule.buffers[%zu] '%s': unknown kind %d", name, i,
                                  b->name, (int)b->kind);
        if (b->width == 0 || b->width > FT_PLAN_MAX_FFN)
            return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: schedule.buffers[%zu] '%s': width %u is outside "
                                  "1..%u", name, i, b->name, b->width, FT_PLAN_MAX_FFN);
    }
    return FT_OK;
}

ft_status_t ft_plan_check_schedule(const Ftplan__Plan *plan, const char *name)
{
    const Ftplan__Schedule *s = plan->schedule;
    if (!s)
        return FT_OK; /* a plan of schema 1; the engine refuses to run it */
    ft_status_t st = ft_check_buffers(s, name);
    if (st)
        return st;
    if (s->n_blocks != plan->hparams->n_layers)
        return ft_status_make(FT_STATUS_MISMATCH, "%s: schedule has %zu blocks for %u layers", name, s->n_blocks,
                              plan->hparams->n_layers);
    ft_sched_ctx_t c = {plan, name, "prologue"};
    if ((st = ft_check_ops(&c, s->prologue, s->n_prologue)))
        return st;
    char where[32];
    for (size_t l = 0; l < s->n_blocks; l++) {
        snprintf(where, sizeof(where), "blocks[%zu]", l);
        c.where = where;
        if (!s->blocks[l])
            return ft_status_make(FT_STATUS_FORMAT, "%s: schedule.%s is missing", name, where);
        if ((st = ft_check_ops(&c, s->blocks[l]->ops, s->blocks[l]->n_ops)))
            return st;
    }
    c.where = "epilogue";
    return ft_check_ops(&c, s->epilogue, s->n_epilogue);
}
