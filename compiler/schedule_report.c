#include "schedule_report.h"

#include "../runtime/format/dtype.h"
#include "../runtime/format/plan_validate.h"

#include <ctype.h>
#include <string.h>

/* "OP_KV_APPEND" -> "kv_append" into buf. */
static const char *ft_sr_kind(int kind, char *buf, size_t n)
{
    const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(&ftplan__op_kind__descriptor, kind);
    const char *name = v ? v->name : "OP_?";
    if (!strncmp(name, "OP_", 3))
        name += 3;
    size_t i = 0;
    for (; name[i] && i + 1 < n; i++)
        buf[i] = (char)tolower((unsigned char)name[i]);
    buf[i] = 0;
    return buf;
}

static const char *ft_sr_buf(const Ftplan__Schedule *s, uint32_t i)
{
    return i < s->n_buffers ? s->buffers[i]->name : "?";
}

static const char *ft_sr_rope(int rope)
{
    return rope == FTPLAN__ROPE_KIND__ROPE_NEOX ? "neox" : rope == FTPLAN__ROPE_KIND__ROPE_NORM ? "norm" : "none";
}

/* "silu" for ACT_SILU: the activation's enum name without its prefix, in
 * lower case. */
static const char *ft_sr_act_name(int act)
{
    switch (act) {
    case FTPLAN__ACTIVATION__ACT_SILU: return "silu";
    case FTPLAN__ACTIVATION__ACT_GELU: return "gelu";
    case FTPLAN__ACTIVATION__ACT_SWIGLU_OAI: return "swiglu_oai";
    case FTPLAN__ACTIVATION__ACT_SIGMOID: return "sigmoid";
    default: return "?";
    }
}

static void ft_sr_bufs(const Ftplan__Schedule *s, const uint32_t *v, size_t n, FILE *out)
{
    for (size_t i = 0; i < n; i++)
        fprintf(out, "%s%s", i ? ", " : "", ft_sr_buf(s, v[i]));
}

/* The parameters the kind reads, as "key value" text. */
static void ft_sr_params(const Ftplan__Op *op, FILE *out)
{
    switch (op->kind) {
    case FTPLAN__OP_KIND__OP_RMSNORM:
        fprintf(out, "  eps %g", (double)op->eps);
        break;
    case FTPLAN__OP_KIND__OP_HEAD_NORM:
        fprintf(out, "  %u heads x %u, eps %g", op->n_heads, op->head_dim, (double)op->eps);
        break;
    case FTPLAN__OP_KIND__OP_ROPE:
        fprintf(out, "  %s, %u of %u dims, theta %g, %u + %u heads", ft_sr_rope(op->rope), op->rope_dim,
                op->head_dim, (double)op->rope_theta, op->n_heads, op->n_kv_heads);
        if (op->rope_yarn_factor != 0.0f)
            fprintf(out, ", YaRN x%g of %u (beta %g/%g)", (double)op->rope_yarn_factor, op->rope_yarn_orig_ctx,
                    (double)op->rope_yarn_beta_fast, (double)op->rope_yarn_beta_slow);
        break;
    case FTPLAN__OP_KIND__OP_KV_APPEND:
        fprintf(out, "  %u KV heads x %u", op->n_kv_heads, op->head_dim);
        break;
    case FTPLAN__OP_KIND__OP_ATTENTION:
        fprintf(out, "  %u heads, %u KV heads x %u, %s", op->n_heads, op->n_kv_heads, op->head_dim,
                op->sliding_window ? "sliding window" : "causal");
        if (op->sliding_window)
            fprintf(out, " %u", op->sliding_window);
        if (op->n_weights)
            fputs(", with sinks", out);
        break;
    case FTPLAN__OP_KIND__OP_ROUTER:
        fprintf(out, "  %s, top %u of %u%s", op->scoring == FTPLAN__ROUTER_SCORING__ROUTER_SIGMOID ? "sigmoid" : "softmax",
                op->n_experts_used, op->n_experts, op->norm_topk_prob ? ", renormalized" : "");
        if (op->n_groups)
            fprintf(out, ", in the best %u of %u groups", op->n_groups_used, op->n_groups);
        if (op->routed_scaling != 0.0f && op->routed_scaling != 1.0f)
            fprintf(out, ", weights x %g", (double)op->routed_scaling);
        if (op->n_weights == 2)
            fprintf(out, ", chosen with a selection bias");
        break;
    case FTPLAN__OP_KIND__OP_MOE:
        fprintf(out, "  %u experts of ffn %u, %u used, %s", op->n_experts, op->expert_ffn, op->n_experts_used,
                ft_sr_act_name(op->act));
        if (op->act == FTPLAN__ACTIVATION__ACT_SWIGLU_OAI)
            fprintf(out, " (alpha %g, limit %g)", (double)op->act_alpha, (double)op->act_limit);
        break;
    case FTPLAN__OP_KIND__OP_GLU:
        fprintf(out, "  %s", ft_sr_act_name(op->act));
        break;
    case FTPLAN__OP_KIND__OP_MLA:
        fprintf(out, "  %u heads of %u (rope %u) over a compressed KV of %u, values of %u, scale %g", op->n_heads,
                op->head_dim, op->rope_dim, op->kv_lora_rank, op->value_head_dim, (double)op->attn_scale);
        break;
    case FTPLAN__OP_KIND__OP_DELTANET:
        fprintf(out, "  %u value heads, %u key heads (%s) of %u, conv of %u taps", op->n_heads,
                op->n_kv_heads, op->heads_tiled ? "tiled" : "grouped", op->head_dim,
                op->conv_kernel);
        break;
    default:
        break;
    }
}

static void ft_sr_op(const Ftplan__Plan *p, const Ftplan__Op *op, FILE *out)
{
    const Ftplan__Schedule *s = p->schedule;
    char kind[32];
    fprintf(out, "  %-10s ", ft_sr_kind(op->kind, kind, sizeof(kind)));
    ft_sr_bufs(s, op->inputs, op->n_inputs, out);
    if (op->n_outputs) {
        fputs(op->n_inputs ? " -> " : "-> ", out);
        ft_sr_bufs(s, op->outputs, op->n_outputs, out);
    }
    for (size_t j = 0; j < op->n_weights; j++) {
        const Ftplan__Tensor *t = op->weights[j] < p->n_tensors ? p->tensors[op->weights[j]] : NULL;
        fprintf(out, "%s%s (%s)", j ? ", " : "  ", t ? t->name : "?",
                t ? ft_dtype_name((ft_dtype_t)t->format) : "?");
        const uint32_t b = j < op->n_biases ? op->biases[j] : FT_PLAN_NO_BIAS;
        if (b != FT_PLAN_NO_BIAS)
            fprintf(out, " + %s", b < p->n_tensors ? p->tensors[b]->name : "?");
    }
    ft_sr_params(op, out);
    fputc('\n', out);
}

void ft_schedule_print(const Ftplan__Plan *p, FILE *out)
{
    const Ftplan__Schedule *s = p->schedule;
    if (!s) {
        fputs("schedule: none (a plan from an older ftc: recompile)\n", out);
        return;
    }
    fprintf(out, "schedule: %zu buffers (", s->n_buffers);
    for (size_t i = 0; i < s->n_buffers; i++)
        fprintf(out, "%s%s %u", i ? ", " : "", s->buffers[i]->name, s->buffers[i]->width);
    fputs(" floats per token)\nprologue:\n", out);
    for (size_t i = 0; i < s->n_prologue; i++)
        ft_sr_op(p, s->prologue[i], out);
    for (size_t l = 0; l < s->n_blocks; l++) {
        fprintf(out, "block %zu:\n", l);
        for (size_t i = 0; i < s->blocks[l]->n_ops; i++)
            ft_sr_op(p, s->blocks[l]->ops[i], out);
    }
    fputs("epilogue:\n", out);
    for (size_t i = 0; i < s->n_epilogue; i++)
        ft_sr_op(p, s->epilogue[i], out);
}

static json_t *ft_sr_names(const Ftplan__Plan *p, const uint32_t *v, size_t n, int tensors)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        const char *name = tensors ? (v[i] < p->n_tensors ? p->tensors[v[i]]->name : "?")
                                   : ft_sr_buf(p->schedule, v[i]);
        json_array_append_new(a, json_string(name));
    }
    return a;
}

static json_t *ft_sr_op_json(const Ftplan__Plan *p, const Ftplan__Op *op)
{
    char kind[32];
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "op", json_string(ft_sr_kind(op->kind, kind, sizeof(kind))));
    json_object_set_new(o, "inputs", ft_sr_names(p, op->inputs, op->n_inputs, 0));
    json_object_set_new(o, "outputs", ft_sr_names(p, op->outputs, op->n_outputs, 0));
    json_object_set_new(o, "weights", ft_sr_names(p, op->weights, op->n_weights, 1));
    if (op->n_biases) { /* null for a weight without one */
        json_t *b = json_array();
        for (size_t j = 0; b && j < op->n_biases; j++)
            json_array_append_new(b, op->biases[j] == FT_PLAN_NO_BIAS ? json_null()
                                     : json_string(op->biases[j] < p->n_tensors ? p->tensors[op->biases[j]]->name
                                                                                : "?"));
        json_object_set_new(o, "biases", b);
    }
    switch (op->kind) {
    case FTPLAN__OP_KIND__OP_RMSNORM:
        json_object_set_new(o, "eps", json_real(op->eps));
        break;
    case FTPLAN__OP_KIND__OP_HEAD_NORM:
        json_object_set_new(o, "eps", json_real(op->eps));
        json_object_set_new(o, "n_heads", json_integer(op->n_heads));
        json_object_set_new(o, "head_dim", json_integer(op->head_dim));
        break;
    case FTPLAN__OP_KIND__OP_ROPE:
        json_object_set_new(o, "rope", json_string(ft_sr_rope(op->rope)));
        json_object_set_new(o, "rope_dim", json_integer(op->rope_dim));
        json_object_set_new(o, "rope_theta", json_real(op->rope_theta));
        __attribute__((fallthrough)); /* and the heads */
    case FTPLAN__OP_KIND__OP_ATTENTION:
    case FTPLAN__OP_KIND__OP_KV_APPEND:
        json_object_set_new(o, "n_heads", json_integer(op->n_heads));
        json_object_set_new(o, "n_kv_heads", json_integer(op->n_kv_heads));
        json_object_set_new(o, "head_dim", json_integer(op->head_dim));
        if (op->kind == FTPLAN__OP_KIND__OP_ATTENTION)
            json_object_set_new(o, "sliding_window", json_integer(op->sliding_window));
        break;
    case FTPLAN__OP_KIND__OP_ROUTER:
        json_object_set_new(o, "scoring", json_string(op->scoring == FTPLAN__ROUTER_SCORING__ROUTER_SIGMOID
                                                          ? "sigmoid" : "softmax"));
        json_object_set_new(o, "norm_topk_prob", json_boolean(op->norm_topk_prob));
        json_object_set_new(o, "n_groups", json_integer(op->n_groups));
        json_object_set_new(o, "n_groups_used", json_integer(op->n_groups_used));
        json_object_set_new(o, "routed_scaling",
                            json_real(op->routed_scaling != 0.0f ? op->routed_scaling : 1.0));
        json_object_set_new(o, "selection_bias", json_boolean(op->n_weights == 2));
        __attribute__((fallthrough)); /* and the counts */
    case FTPLAN__OP_KIND__OP_MOE:
        json_object_set_new(o, "n_experts", json_integer(op->n_experts));
        json_object_set_new(o, "n_experts_used", json_integer(op->n_experts_used));
        if (op->kind == FTPLAN__OP_KIND__OP_MOE)
            json_object_set_new(o, "expert_ffn", json_integer(op->expert_ffn));
        break;
    case FTPLAN__OP_KIND__OP_GLU:
        json_object_set_new(o, "act", json_string(ft_sr_act_name(op->act)));
        break;
    case FTPLAN__OP_KIND__OP_MLA:
        json_object_set_new(o, "n_heads", json_integer(op->n_heads));
        json_object_set_new(o, "head_dim", json_integer(op->head_dim));
        json_object_set_new(o, "rope_dim", json_integer(op->rope_dim));
        json_object_set_new(o, "kv_lora_rank", json_integer(op->kv_lora_rank));
        json_object_set_new(o, "value_head_dim", json_integer(op->value_head_dim));
        break;
    case FTPLAN__OP_KIND__OP_DELTANET:
        json_object_set_new(o, "n_heads", json_integer(op->n_heads));
        json_object_set_new(o, "n_kv_heads", json_integer(op->n_kv_heads));
        json_object_set_new(o, "head_dim", json_integer(op->head_dim));
        json_object_set_new(o, "conv_kernel", json_integer(op->conv_kernel));
        json_object_set_new(o, "heads_tiled", json_boolean(op->heads_tiled));
        break;
    default:
        break;
    }
    return o;
}

static json_t *ft_sr_ops_json(const Ftplan__Plan *p, Ftplan__Op *const *ops, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, ft_sr_op_json(p, ops[i]));
    return a;
}

ft_status_t ft_schedule_json(const Ftplan__Plan *p, json_t *obj)
{
    const Ftplan__Schedule *s = p->schedule;
    if (!s)
        return json_object_set_new(obj, "schedule", json_null()) ? ft_status_make(FT_STATUS_OUT_OF_MEMORY,
                                                                              "out of memory") : FT_OK;
    json_t *o = json_object(), *bufs = json_array(), *blocks = json_array();
    if (!o || !bufs || !blocks) {
        json_decref(o);
        json_decref(bufs);
        json_decref(blocks);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < s->n_buffers; i++)
        json_array_append_new(bufs, json_pack("{s:s, s:s, s:i}", "name", s->buffers[i]->name, "kind",
                                              s->buffers[i]->kind == FTPLAN__BUFFER_KIND__BUF_LOGITS ? "logits"
                                                                                                  : "activation",
                                              "width", (int)s->buffers[i]->width));
    for (size_t l = 0; l < s->n_blocks; l++)
        json_array_append_new(blocks, ft_sr_ops_json(p, s->blocks[l]->ops, s->blocks[l]->n_ops));
    json_object_set_new(o, "buffers", bufs);
    json_object_set_new(o, "prologue", ft_sr_ops_json(p, s->prologue, s->n_prologue));
    json_object_set_new(o, "blocks", blocks);
    json_object_set_new(o, "epilogue", ft_sr_ops_json(p, s->epilogue, s->n_epilogue));
    json_object_set_new(obj, "schedule", o);
    return FT_OK;
}
