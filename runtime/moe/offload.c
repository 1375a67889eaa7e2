/* Offloading: the plan, the expert cache and the decisions that do not
 * depend on the device (shape, solve, warm start, re-plan, statistics). */
#include "offload_internal.h"

#include "../base/alloc.h"
#include "../backends/sim/sim_device.h"
#include "../base/checked.h"
#include "../plan/from_plan.h"
#include "../plan/hw_profile.h"

#include <stdio.h>
#include <string.h>

/* Each layer's expert blob in the mapped FTW file (the plan's expert
 * blocks), the slot size (the largest blob: every slot holds any expert)
 * and the streaming buffer size (the largest layer's experts). */
FT_WARN_UNUSED static ft_status_t ft_offload_experts(ft_offload_t *o)
{
    const Ftplan__Plan *plan = o->b->plan;
    o->n_layers = o->pm->n_layers;
    o->L = ft_mem_calloc(o->a, o->n_layers, sizeof(ft_offload_layer_t));
    if (!o->L)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "offload: out of memory");
    for (uint32_t l = 0; l < o->n_layers; l++)
        if (o->pm->layers[l].is_moe && o->pm->layers[l].n_experts > o->max_experts)
            o->max_experts = o->pm->layers[l].n_experts;
    for (size_t i = 0; i < plan->n_expert_blocks; i++) {
        const Ftplan__ExpertBlock *eb = plan->expert_blocks[i];
        uint64_t bytes;
        if (eb->layer >= o->n_layers || !ft_mul_u64(eb->n_experts, eb->stride, &bytes))
            return ft_status_make(FT_STATUS_FORMAT, "%s: expert_blocks[%zu]: layer %u or size out of range",
                                  o->where, i, eb->layer);
        ft_offload_layer_t *L = &o->L[eb->layer];
        ft_status_t st = ft_ftw_range(o->b->weight_files[eb->file], eb->offset, bytes, &L->blob0);
        if (st)
            return ft_status_annotate(st, "%s: expert_blocks[%zu]", o->where, i);
        L->blob_stride = eb->stride;
        L->n_experts = eb->n_experts;
        o->slot_bytes = eb->stride > o->slot_bytes ? eb->stride : o->slot_bytes;
        o->stream_bytes = bytes > o->stream_bytes ? bytes : o->stream_bytes;
    }
    for (uint32_t l = 0; l < o->n_layers; l++)
        if (o->pm->layers[l].is_moe && o->L[l].n_experts != o->pm->layers[l].n_experts)
            return ft_status_make(FT_STATUS_FORMAT, "%s: block %u has %u experts, its expert block %u", o->where,
                                  l, o->pm->layers[l].n_experts, o->L[l].n_experts);
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_offload_solve(const ft_offload_t *o, uint64_t vram_bytes, ft_plan_result_t *res)
{
    ft_plan_budget_t budget = {.vram_bytes = vram_bytes, .ram_bytes = 0, .ctx = o->ctx, .batch = 1};
    ft_status_t st = ft_planner_solve(o->pm, &o->hw, &budget, res);
    if (st)
        return st;
    if (!res->fits) {
        st = ft_status_make(FT_STATUS_OUT_OF_RANGE, "offload: no plan fits %.1f MiB of VRAM: %s",
                            vram_bytes / 1048576.0, res->why);
        ft_plan_result_release(res);
    }
    return st;
}

/* Fills the cache at load (or after it grew), when the copy engine is idle:
 * first the plan's pinned experts, then free slots with experts taken
 * round-robin over the layers (no calibration: any expert is as likely as
 * another). Costs load time, not step time, so it is neither counted as
 * misses nor put on the virtual clock. */
FT_WARN_UNUSED static ft_status_t ft_offload_warm(ft_offload_t *o, ft_expert_cache_t *c,
                                                  const ft_plan_result_t *plan)
{
    const uint32_t stride = o->max_experts;
    ft_status_t st = FT_OK;
    for (uint32_t i = 0; plan->pinned && i < plan->n_pinned && !st; i++) {
        const uint32_t id = plan->pinned[i], l = id / stride, e = id % stride;
        if (l >= o->n_layers || e >= o->L[l].n_experts)
            continue;
        int32_t s = ft_expert_cache_pin(c, id);
        if (s >= 0)
            st = ft_offload_fill(o, s, l, e);
    }
    for (uint32_t e = 0; e < stride && !st; e++)
        for (uint32_t l = 0; l < o->n_layers && !st; l++) {
            if (e >= o->L[l].n_experts || ft_expert_cache_find(c, l * stride + e) >= 0)
                continue;
            int32_t s = ft_expert_cache_fill_free(c, l * stride + e);
            if (s < 0)
                return FT_OK; /* full */
            st = ft_offload_fill(o, s, l, e);
        }
    return st;
}

/* After a re-plan renumbered the slots (into cache c): every occupied
 * slot of c is filled again from the mapped weights. */
FT_WARN_UNUSED static ft_status_t ft_offload_refill(ft_offload_t *o, ft_expert_cache_t *c)
{
    const uint32_t stride = o->max_experts;
    ft_status_t st = FT_OK;
    for (uint32_t l = 0; l < o->n_layers && !st; l++)
        for (uint32_t e = 0; e < o->L[l].n_experts && !st; e++) {
            const int32_t s = ft_expert_cache_find(c, l * stride + e);
            if (s >= 0)
                st = ft_offload_fill(o, s, l, e);
        }
    return st;
}

/* The cache (it maps ids to slot numbers; the slots are device memory)
 * and the device's events, slots and streaming buffers. */
FT_WARN_UNUSED static ft_status_t ft_offload_device_setup(ft_offload_t *o)
{
    const uint32_t n = ft_offload_cache_slots(&o->plan);
    ft_status_t st = ft_expert_cache_create(o->n_layers * o->max_experts, n, o->a, &o->cache);
    if (!st) st = ft_offload_device_init(o);
    if (!st) st = ft_offload_reserve(o, n, o->plan.vram_stream > 0);
    return st;
}

/* Appends ", "-separated text to the note. */
static void ft_offload_note(char *note, size_t n, const char *fmt, const char *a, const char *b)
{
    const size_t len = strlen(note);
    if (len + 1 < n)
        snprintf(note + len, n - len, fmt, a, b);
}

static void ft_offload_size(uint64_t bytes, char *out, size_t n)
{
    if (bytes >= (1ull << 30))
        snprintf(out, n, "%.1f GiB", bytes / 1073741824.0);
    else if (bytes >= (1ull << 20))
        snprintf(out, n, "%.1f MiB", bytes / 1048576.0);
    else
        snprintf(out, n, "%.1f KiB", bytes / 1024.0);
}

/* The plan's stored partition when it was solved for this machine, this
 * budget and at least this context (sets o->stored); otherwise solved
 * here, with o->note saying why (a plan without a partition, compiled
 * without --hw, is solved without a note: there is no compiled budget to
 * differ from). */
FT_WARN_UNUSED static ft_status_t ft_offload_take_plan(ft_offload_t *o, uint64_t vram_bytes)
{
    const Ftplan__Plan *plan = o->b->plan;
    char want[32], was[32];
    ft_offload_size(vram_bytes, want, sizeof(want));
    if (!plan->partition || !plan->budget) /* compiled without --hw: nothing stored to differ from */
        return ft_offload_solve(o, vram_bytes, &o->plan);
    ft_hw_t compiled;
    ft_status_t st = ft_hw_from_profile(plan->hw_profile, &compiled);
    if (st)
        return ft_status_annotate(st, "%s: hw_profile", o->where);
    const Ftplan__Budget *b = plan->budget;
    char *note = o->note;
    const size_t n = sizeof(o->note);
    snprintf(note, n, "plan: solved again for ");
    const size_t head = strlen(note);
    if (vram_bytes != b->vram_bytes) {
        ft_offload_size(b->vram_bytes, was, sizeof(was));
        if (strcmp(want, was) == 0) { /* too close to tell apart rounded */
            snprintf(want, sizeof(want), "%llu bytes", (unsigned long long)vram_bytes);
            snprintf(was, sizeof(was), "%llu", (unsigned long long)b->vram_bytes);
        }
        ft_offload_note(note, n, "%s of VRAM (compiled for %s)", want, was);
    }
    if (o->ctx > b->ctx) {
        snprintf(want, sizeof(want), "%u", o->ctx);
        snprintf(was, sizeof(was), "%u", b->ctx);
        ft_offload_note(note, n, strlen(note) > head ? ", %s tokens of context (compiled for %s)"
                                                     : "%s tokens of context (compiled for %s)",
                        want, was);
    }
    if (!ft_hw_same(&compiled, &o->hw))
        ft_offload_note(note, n, strlen(note) > head ? ", another machine (compiled for %s%s)"
                                                     : "another machine (compiled for %s%s)",
                        compiled.n_gpus ? compiled.gpu.name : compiled.cpu_name,
                        compiled.n_gpus ? "" : ", no GPU");
    if (strlen(note) > head)
        return ft_offload_solve(o, vram_bytes, &o->plan);
    note[0] = '\0';
    if ((st = ft_plan_result_from_plan(plan, o->where, &o->plan)))
        return st;
    if (o->plan.n_slots + o->plan.n_pinned && o->plan.slot_bytes > o->slot_bytes)
        return ft_status_make(FT_STATUS_MISMATCH,
                              "%s: partition.slot_bytes is %llu, the largest expert blob %llu bytes", o->where,
                              (unsigned long long)o->plan.slot_bytes, (unsigned long long)o->slot_bytes);
    o->stored = 1;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_offload_init(const ft_bundle_t *b, const ft_hw_t *hw, uint64_t vram_bytes,
                                                  uint32_t ctx, const ft_offload_device_t *dev,
                                                  const ft_allocator_t *alloc, ft_offload_t **out)
{
    *out = NULL;
    if (!dev || !dev->dev || !dev->compute || !dev->copy)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "offload: a device and its two streams are needed");
    ft_offload_t *o = ft_mem_calloc(alloc, 1, sizeof(*o));
    if (!o)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "offload: out of memory");
    o->b = b;
    o->where = b->plan_file->path;
    o->a = alloc;
    o->hw = *hw;
    o->ctx = ctx;
    o->dv = *dev;
    o->sim = ft_sim_device_is(dev->dev);
    ft_status_t st = ft_plan_model_from_plan(b->plan, o->where, alloc, &o->pm);
    if (!st)
        st = ft_offload_experts(o);
    const size_t n_e = o->max_experts ? o->max_experts : 1;
    if (!st) {
        o->order = ft_mem_calloc(alloc, n_e, sizeof(uint32_t));
        o->items = ft_mem_calloc(alloc, n_e, sizeof(ft_offload_item_t));
        if (!o->order || !o->items)
            st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "offload: out of memory");
    }
    if (!st && !(st = ft_offload_take_plan(o, vram_bytes)))
        st = ft_offload_device_setup(o);
    if (!st)
        st = ft_offload_warm(o, o->cache, &o->plan);
    if (st) {
        ft_offload_destroy(o);
        return st;
    }
    ft_expert_cache_reset_stats(o->cache);
    o->vram_bytes = vram_bytes;
    *out = o;
    return FT_OK;
}

ft_status_t ft_offload_create(const ft_bundle_t *b, const ft_hw_t *hw, uint64_t vram_bytes, uint32_t ctx,
                              const ft_offload_device_t *dev, const ft_allocator_t *alloc, ft_offload_t **out)
{
    return ft_offload_init(b, hw, vram_bytes, ctx, dev, alloc, out);
}

void ft_offload_destroy(ft_offload_t *o)
{
    if (!o)
        return;
    ft_offload_device_release(o);
    ft_expert_cache_destroy(o->cache);
    ft_plan_result_release(&o->plan);
    ft_mem_free(o->a, o->L);
    ft_plan_model_free(o->pm, o->a);
    ft_mem_free(o->a, o->order);
    ft_mem_free(o->a, o->items);
    ft_mem_free(o->a, o);
}

const ft_plan_result_t *ft_offload_plan(const ft_offload_t *o)
{
    return &o->plan;
}

int ft_offload_plan_stored(const ft_offload_t *o)
{
    return o->stored;
}

const char *ft_offload_plan_note(const ft_offload_t *o)
{
    return o->note;
}

uint64_t ft_offload_stream_bytes(const ft_offload_t *o)
{
    return o->streaming ? o->stream_bytes : 0;
}

void ft_offload_record_step(ft_offload_t *o, uint32_t n_tok, double seconds)
{
    o->st.n_steps++;
    o->st.n_tokens += n_tok;
    o->st.modelled_seconds += seconds;
}

void ft_offload_stats(const ft_offload_t *o, ft_offload_stats_t *out)
{
    *out = o->st;
    if (o->sim) {
        ft_sim_counters_t c;
        ft_sim_counters(o->dv.dev, &c);
        out->bytes_copied = c.bytes_copied;
        out->modelled_seconds = c.elapsed;
        out->order_violations = c.order_violations;
    }
    out->n_slots = ft_offload_cache_slots(&o->plan);
    out->vram_bytes = o->vram_bytes;
}

void ft_offload_reset_stats(ft_offload_t *o)
{
    memset(&o->st, 0, sizeof(o->st));
    if (o->sim)
        ft_sim_reset_counters(o->dv.dev);
    ft_expert_cache_reset_stats(o->cache);
}

/* The device's side of a re-plan to res with the new cache nc: reserve
 * the new layout (on failure the device keeps its memory, so nothing has
 * changed), then fill nc's slots. A fill that fails after that puts the old
 * layout and the old cache's experts back; only if that fails as well is
 * the device left changed, and the error says so. */
FT_WARN_UNUSED static ft_status_t ft_offload_replan_device(ft_offload_t *o, const ft_plan_result_t *res,
                                                           ft_expert_cache_t *nc)
{
    const int old_stream = o->streaming;
    ft_status_t st = ft_offload_reserve(o, ft_offload_cache_slots(res), res->vram_stream > 0);
    if (st)
        return st;
    if (!(st = ft_offload_refill(o, nc)) && !(st = ft_offload_warm(o, nc, res)))
        return FT_OK;
    ft_status_t back = ft_offload_reserve(o, ft_offload_cache_slots(&o->plan), old_stream);
    if (!back)
        back = ft_offload_refill(o, o->cache);
    if (!back)
        return st;
    back = ft_status_annotate(back, "re-plan failed (%s), and restoring the device's expert slots failed too; "
                              "the device no longer matches the cache",
                              ft_status_message(st));
    ft_status_free(st);
    return back;
}

ft_status_t ft_offload_replan(ft_offload_t *o, uint64_t vram_bytes)
{
    ft_plan_result_t res;
    ft_status_t st = ft_offload_solve(o, vram_bytes, &res);
    if (st)
        return st;
    /* Re-planning moves the boundary between KV and expert slots only: a
     * budget that cannot keep the resident dense layers and the KV reserved
     * for live sessions on the device would drop state or reload weights. */
    if ((res.cpu_only && !o->plan.cpu_only) || res.n_gpu_layers < o->plan.n_gpu_layers ||
        res.output_on_gpu < o->plan.output_on_gpu || res.vram_kv < o->plan.vram_kv) {
        ft_status_t refuse = ft_status_make(
            FT_STATUS_OUT_OF_RANGE,
            "re-plan to %.2f MiB refused: it cannot keep the %u resident layers (%.2f MiB of dense "
            "weights) and %.2f MiB of KV for live sessions on the device; nothing was changed",
            vram_bytes / 1048576.0, o->plan.n_gpu_layers, o->plan.vram_dense / 1048576.0,
            o->plan.vram_kv / 1048576.0);
        ft_plan_result_release(&res);
        return refuse;
    }
    if (res.n_slots + res.n_pinned && res.slot_bytes > o->slot_bytes) {
        ft_plan_result_release(&res);
        return ft_status_make(FT_STATUS_INTERNAL, "offload: the plan's slots are larger than the cache's");
    }
    /* Everything that can fail happens on a new cache and before the first
     * change that cannot be undone, so a failed re-plan leaves the slots,
     * their contents, the counters and the device as they were. */
    ft_expert_cache_t *old = o->cache, *nc;
    if ((st = ft_expert_cache_resized(old, ft_offload_cache_slots(&res), &nc))) {
        ft_plan_result_release(&res);
        return st;
    }
    st = ft_offload_replan_device(o, &res, nc);
    if (st) {
        ft_expert_cache_destroy(nc);
        ft_plan_result_release(&res);
        return st;
    }
    o->cache = nc;
    ft_expert_cache_destroy(old);
    ft_plan_result_release(&o->plan);
    o->plan = res;
    o->vram_bytes = vram_bytes;
    o->stored = 0;
    return FT_OK;
}
