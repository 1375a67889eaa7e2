#include "plan_partition.h"

#include "../runtime/format/plan_validate.h"
#include "../runtime/plan/from_plan.h"
#include "../runtime/plan/hw_profile.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(FT_PLAN_MAX_QSTAR_BUCKETS == FT_PLAN_MAX_BUCKETS,
               "a plan's q* table must fit ft_plan_result_t");
_Static_assert(FTPLAN__BOTTLENECK__BOTTLENECK_DRAM == (int)FT_BOTTLENECK_DRAM &&
                   FTPLAN__BOTTLENECK__BOTTLENECK_PCIE == (int)FT_BOTTLENECK_PCIE &&
                   FTPLAN__BOTTLENECK__BOTTLENECK_GPU == (int)FT_BOTTLENECK_GPU &&
                   FTPLAN__BOTTLENECK__BOTTLENECK_CPU == (int)FT_BOTTLENECK_CPU,
               "plan.proto Bottleneck mirrors ft_bottleneck_t");

/* The KV reserve when --ctx is not given: 4096 tokens or the model's
 * context, whichever is smaller. */
#define FT_COMPILE_DEFAULT_CTX 4096u

ft_status_t ft_compile_plan_solve(const Ftplan__Plan *plan, const ft_compile_options_t *opts,
                                  ft_compile_plan_t *out)
{
    memset(out, 0, sizeof(*out));
    const char *name = plan->source && plan->source->name && plan->source->name[0] ? plan->source->name
                                                                                     : "the model";
    ft_hw_t hw;
    ft_status_t st = ft_hw_from_profile(opts->hw_profile, &hw);
    if (st)
        return ft_status_annotate(st, "--hw");
    /* The runtime's solve takes its model from the plan it opens, with this
     * same function: both see the packed sizes and the plan's KV format. */
    ft_plan_model_t *shape = NULL;
    if ((st = ft_plan_model_from_plan(plan, name, NULL, &shape)))
        return st;
    out->budget = opts->budget;
    if (out->budget.ctx == 0) {
        uint32_t c = plan->hparams->context_length;
        out->budget.ctx = c && c < FT_COMPILE_DEFAULT_CTX ? c : FT_COMPILE_DEFAULT_CTX;
    }
    if (out->budget.batch == 0)
        out->budget.batch = 1;
    st = ft_planner_solve(shape, &hw, &out->budget, &out->result);
    if (!st && !out->result.fits)
        st = ft_status_make(FT_STATUS_OUT_OF_RANGE,
                            "%s does not fit this machine: %s (needs %llu bytes of RAM, budget "
                            "%llu bytes)",
                            name, out->result.why, (unsigned long long)out->result.ram_needed,
                            (unsigned long long)out->result.ram_budget);
    if (!st) {
        out->budget.vram_bytes = out->result.vram_budget;
        out->budget.ram_bytes = out->result.ram_budget;
    }
    ft_plan_model_free(shape, NULL);
    if (st)
        ft_compile_plan_release(out);
    return st;
}

void ft_compile_plan_release(ft_compile_plan_t *cp)
{
    ft_plan_result_release(&cp->result);
}

/* Copies n values into the arena (NULL for n = 0). */
static void *ft_cp_copy(ft_arena_t *a, const void *src, size_t n, size_t elem, int *oom)
{
    if (n == 0)
        return NULL;
    void *p = ft_arena_array(a, n, elem);
    if (!p)
        *oom = 1;
    else
        memcpy(p, src, n * elem);
    return p;
}

static void ft_cp_regions(Ftplan__Partition *p, const ft_plan_result_t *r)
{
    p->vram_dense = r->vram_dense;
    p->vram_pinned = r->vram_pinned;
    p->vram_slots = r->vram_slots;
    p->vram_kv = r->vram_kv;
    p->vram_stream = r->vram_stream;
    p->vram_scratch = r->vram_scratch;
    p->vram_used = r->vram_used;
    p->slot_bytes = r->slot_bytes;
    p->n_slots = r->n_slots;
    p->n_pinned = r->n_pinned;
    p->expert_id_stride = r->expert_id_stride;
    p->stream_buffers = r->stream_buffers != 0;
    p->n_gpu_layers = r->n_gpu_layers;
    p->output_on_gpu = r->output_on_gpu != 0;
    p->cpu_only = r->cpu_only != 0;
    p->unified = r->unified != 0;
    p->ram_needed = r->ram_needed;
    p->ram_weights = r->ram_weights;
    p->prefill_stream_tokens = r->prefill_stream_tokens;
    p->predicted_decode_tok_s = r->predicted_decode_tok_s;
    p->predicted_prefill_tok_s = r->predicted_prefill_tok_s;
    p->bottleneck = (Ftplan__Bottleneck)r->bottleneck;
    p->copy_bytes_per_token = r->copy_bytes_per_token;
}

ft_status_t ft_plan_add_partition(Ftplan__Plan *plan, const Fthw__Profile *hw,
                                  const ft_compile_plan_t *cp, uint32_t n_layers, ft_arena_t *a)
{
    const ft_plan_result_t *r = &cp->result;
    Ftplan__Budget *b = ft_arena_alloc(a, sizeof(*b));
    Ftplan__Partition *p = ft_arena_alloc(a, sizeof(*p));
    char *note = ft_arena_strdup(a, r->note);
    int oom = !b || !p || !note;
    if (oom)
        goto oom;
    *b = (Ftplan__Budget)FTPLAN__BUDGET__INIT;
    *p = (Ftplan__Partition)FTPLAN__PARTITION__INIT;
    b->vram_bytes = cp->budget.vram_bytes;
    b->ram_bytes = cp->budget.ram_bytes;
    b->ctx = cp->budget.ctx;
    b->batch = cp->budget.batch;
    ft_cp_regions(p, r);
    p->note = note;
    /* With unified memory the planner counts every expert as pinned but
     * lists none: nothing is copied. */
    p->n_pinned_ids = r->pinned ? r->n_pinned : 0;
    p->pinned_ids = ft_cp_copy(a, r->pinned, p->n_pinned_ids, sizeof(uint32_t), &oom);
    p->n_bucket_tokens = r->n_buckets;
    p->bucket_tokens = ft_cp_copy(a, r->bucket_tokens, r->n_buckets, sizeof(uint32_t), &oom);
    p->n_qstar = r->qstar ? (size_t)n_layers * r->n_buckets : 0;
    p->qstar = ft_cp_copy(a, r->qstar, p->n_qstar, sizeof(float), &oom);
    p->n_hit_rate = r->hit_rate ? n_layers : 0;
    p->hit_rate = ft_cp_copy(a, r->hit_rate, p->n_hit_rate, sizeof(float), &oom);
    p->n_decode_s = 4;
    p->decode_s = ft_cp_copy(a, r->decode_s, 4, sizeof(double), &oom);
    if (oom)
        goto oom;
    plan->hw_profile = (Fthw__Profile *)hw;
    plan->budget = b;
    plan->partition = p;
    return FT_OK;
oom:
    return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory storing the partition");
}

ft_status_t ft_plan_add_calibration(Ftplan__Plan *plan, const ft_calibration_t *c,
                                    ft_arena_t *a)
{
    Ftplan__Calibration *pc = ft_arena_alloc(a, sizeof(*pc));
    char *src = ft_arena_strdup(a, c->source);
    if (!pc || !src)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory storing the calibration");
    *pc = (Ftplan__Calibration)FTPLAN__CALIBRATION__INIT;
    pc->n_tokens = c->n_tokens;
    pc->n_experts = c->n_experts;
    pc->n_counts = (size_t)c->n_layers * c->n_experts;
    pc->counts = c->counts;
    pc->source = src;
    plan->calibration = pc;
    return FT_OK;
}
