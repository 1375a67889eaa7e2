/* The op schedule into the plan: the family's lowering (models/) run on
 * the IR, then each op copied into its protobuf message. */
#include "plan_build.h"

#include "model_registry.h"

#include <string.h>

static void *ft_ps_new(ft_arena_t *a, const void *init, size_t n_bytes)
{
    void *p = ft_arena_alloc(a, n_bytes);
    if (p)
        memcpy(p, init, n_bytes);
    return p;
}

static uint32_t *ft_ps_u32s(ft_arena_t *a, const uint32_t *v, uint32_t n)
{
    uint32_t *p = ft_arena_array(a, n ? n : 1, sizeof(uint32_t));
    if (p && n)
        memcpy(p, v, n * sizeof(uint32_t));
    return p;
}

static Ftplan__Op *ft_ps_op(const ft_ir_op_t *o, ft_arena_t *a)
{
    Ftplan__Op *p = ft_ps_new(a, &(Ftplan__Op)FTPLAN__OP__INIT, sizeof(Ftplan__Op));
    if (!p)
        return NULL;
    p->kind = (Ftplan__OpKind)o->kind;
    p->n_inputs = o->n_inputs;
    p->n_outputs = o->n_outputs;
    p->n_weights = o->n_weights;
    p->inputs = ft_ps_u32s(a, o->inputs, o->n_inputs);
    p->outputs = ft_ps_u32s(a, o->outputs, o->n_outputs);
    p->weights = ft_ps_u32s(a, o->weights, o->n_weights);
    p->n_biases = o->n_biases;
    p->biases = ft_ps_u32s(a, o->biases, o->n_biases);
    if (!p->inputs || !p->outputs || !p->weights || !p->biases)
        return NULL;
    p->eps = o->eps;
    p->rope = (Ftplan__RopeKind)o->rope;
    p->rope_dim = o->rope_dim;
    p->rope_theta = o->rope_theta;
    p->n_heads = o->n_heads;
    p->n_kv_heads = o->n_kv_heads;
    p->head_dim = o->head_dim;
    p->sliding_window = o->sliding_window;
    p->n_experts = o->n_experts;
    p->n_experts_used = o->n_experts_used;
    p->scoring = (Ftplan__RouterScoring)o->scoring;
    p->norm_topk_prob = o->norm_topk_prob;
    p->n_groups = o->n_groups;
    p->n_groups_used = o->n_groups_used;
    p->routed_scaling = o->routed_scaling;
    p->act = (Ftplan__Activation)o->act;
    p->act_alpha = o->act_alpha;
    p->act_limit = o->act_limit;
    p->rope_yarn_factor = o->rope_yarn_factor;
    p->rope_yarn_orig_ctx = o->rope_yarn_orig_ctx;
    p->rope_yarn_beta_fast = o->rope_yarn_beta_fast;
    p->rope_yarn_beta_slow = o->rope_yarn_beta_slow;
    p->expert_ffn = o->expert_ffn;
    p->conv_kernel = o->conv_kernel;
    p->heads_tiled = o->heads_tiled;
    p->kv_lora_rank = o->kv_lora_rank;
    p->value_head_dim = o->value_head_dim;
    p->attn_scale = o->attn_scale;
    p->rope_mscale = o->rope_mscale;
    return p;
}

static Ftplan__Op **ft_ps_ops(const ft_ir_ops_t *list, ft_arena_t *a)
{
    Ftplan__Op **ops = ft_arena_array(a, list->n ? list->n : 1, sizeof(*ops));
    for (uint32_t i = 0; ops && i < list->n; i++)
        if (!(ops[i] = ft_ps_op(&list->ops[i], a)))
            return NULL;
    return ops;
}

ft_status_t ft_plan_add_schedule(const ft_ir_model_t *m, Ftplan__Plan *plan, ft_arena_t *a)
{
    ft_ir_schedule_t s;
    ft_status_t st = ft_model_lower(m, &s);
    if (st)
        return st;
    Ftplan__Schedule *ps = ft_ps_new(a, &(Ftplan__Schedule)FTPLAN__SCHEDULE__INIT, sizeof(*ps));
    Ftplan__Buffer **bufs = ft_arena_array(a, s.n_buffers ? s.n_buffers : 1, sizeof(*bufs));
    Ftplan__BlockOps **blocks = ft_arena_array(a, s.n_blocks ? s.n_blocks : 1, sizeof(*blocks));
    if (!ps || !bufs || !blocks)
        goto oom;
    for (uint32_t i = 0; i < s.n_buffers; i++) {
        if (!(bufs[i] = ft_ps_new(a, &(Ftplan__Buffer)FTPLAN__BUFFER__INIT, sizeof(Ftplan__Buffer))))
            goto oom;
        bufs[i]->name = (char *)s.buffers[i].name;
        bufs[i]->kind = (Ftplan__BufferKind)s.buffers[i].kind;
        bufs[i]->width = s.buffers[i].width;
    }
    ps->n_buffers = s.n_buffers;
    ps->buffers = bufs;
    for (uint32_t l = 0; l < s.n_blocks; l++) {
        if (!(blocks[l] = ft_ps_new(a, &(Ftplan__BlockOps)FTPLAN__BLOCK_OPS__INIT, sizeof(Ftplan__BlockOps))) ||
            !(blocks[l]->ops = ft_ps_ops(&s.blocks[l], a)))
            goto oom;
        blocks[l]->n_ops = s.blocks[l].n;
    }
    ps->n_blocks = s.n_blocks;
    ps->blocks = blocks;
    if (!(ps->prologue = ft_ps_ops(&s.prologue, a)) || !(ps->epilogue = ft_ps_ops(&s.epilogue, a)))
        goto oom;
    ps->n_prologue = s.prologue.n;
    ps->n_epilogue = s.epilogue.n;
    plan->schedule = ps;
    return FT_OK;
oom:
    return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory building the schedule", m->source_name);
}
