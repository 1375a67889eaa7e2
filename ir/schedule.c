#include "schedule.h"

#include <string.h>

ft_status_t ft_sched_init(ft_ir_schedule_t *s, const ft_ir_model_t *m, uint32_t n_blocks)
{
    memset(s, 0, sizeof(*s));
    s->n_blocks = n_blocks;
    s->blocks = ft_arena_array(m->arena, n_blocks ? n_blocks : 1, sizeof(ft_ir_ops_t));
    if (!s->blocks)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory for the schedule", m->source_name);
    memset(s->blocks, 0, (n_blocks ? n_blocks : 1) * sizeof(ft_ir_ops_t));
    return FT_OK;
}

ft_status_t ft_sched_buffer(ft_ir_schedule_t *s, const char *name, ft_buf_kind_t kind, uint32_t width,
                            uint32_t *out_index)
{
    const uint32_t cap = (uint32_t)(sizeof(s->buffers) / sizeof(s->buffers[0]));
    if (s->n_buffers == cap)
        return ft_status_make(FT_STATUS_INTERNAL, "schedule: more than %u buffers", cap);
    s->buffers[s->n_buffers] = (ft_ir_buffer_t){name, kind, width};
    *out_index = s->n_buffers++;
    return FT_OK;
}

ft_status_t ft_sched_push(const ft_ir_model_t *m, ft_ir_ops_t *list, const ft_ir_op_t *op)
{
    if (list->n == list->cap) {
        const uint32_t cap = list->cap ? 2 * list->cap : 16;
        ft_ir_op_t *ops = ft_arena_array(m->arena, cap, sizeof(ft_ir_op_t));
        if (!ops)
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory for the schedule",
                                  m->source_name);
        if (list->n)
            memcpy(ops, list->ops, list->n * sizeof(ft_ir_op_t));
        list->ops = ops; /* the old array stays in the arena until it is freed */
        list->cap = cap;
    }
    list->ops[list->n++] = *op;
    return FT_OK;
}

ft_status_t ft_sched_weight(const ft_ir_model_t *m, ft_tensor_role_t role, int32_t layer, uint32_t *out)
{
    for (uint32_t i = 0; i < m->n_tensors; i++)
        if (m->tensors[i].role == role && m->tensors[i].layer == layer) {
            *out = i;
            return FT_OK;
        }
    return ft_status_make(FT_STATUS_FORMAT, "%s: no %s tensor for %s %d", m->source_name,
                          ft_tensor_role_name(role), layer < 0 ? "the model" : "layer", layer);
}

const char *ft_op_kind_name(ft_op_kind_t kind)
{
    static const char *const names[FT_OP_COUNT] = {
        "invalid",   "embed", "rmsnorm", "linear", "head_norm", "rope",     "kv_append",
        "attention", "add",   "router",  "moe",    "glu",       "deltanet", "mla",
    };
    return (unsigned)kind < FT_OP_COUNT ? names[kind] : "?";
}
