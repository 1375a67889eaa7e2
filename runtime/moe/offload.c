#include "offload.h"

#include "../backends/sim/sim_device.h"
#include "../base/alloc.h"
#include "expert_cache.h"

#include <math.h>
#include <string.h>

struct ft_offload {
    const ft_model_t *m;
    const ft_allocator_t *a;
    ft_hw_t hw;
    uint64_t vram_bytes;
    uint32_t ctx;
    ft_plan_layer_t *layers; /* the planner's view of the model */
    ft_plan_model_t pm;
    ft_plan_result_t plan;
    ft_expert_cache_t *cache;
    ft_sim_device_t *dev;
    uint8_t *stream[2];      /* whole-layer prefill buffers, or NULL */
    uint64_t stream_bytes;
    ft_sim_event_t stream_free[2];
    ft_sim_event_t ready, router_ready;
    uint32_t *order;         /* [max_experts] scratch */
    uint64_t slot_bytes;     /* the largest expert blob: every slot holds any expert */
    float *popularity;       /* calibration, or NULL */
    ft_offload_stats_t st;
};

/* The planner's model: sizes as this runtime holds them. An expert is its
 * FTW blob (gate, up, down, each page-aligned): what a slot holds and a
 * copy moves. The device's KV cache is taken as f16. */
static ft_status_t ft_offload_shape(ft_offload_t *o)
{
    const ft_model_t *m = o->m;
    o->layers = ft_mem_calloc(o->a, m->n_layers ? m->n_layers : 1, sizeof(ft_plan_layer_t));
    if (!o->layers)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "offload: out of memory");
    for (uint32_t l = 0; l < m->n_layers; l++) {
        const ft_layer_t *L = &m->layers[l];
        if (!L->blob0)
            return ft_status_make(FT_STATUS_UNSUPPORTED,
                                  "offload: layer %u has no FTW expert block (recompile the bundle)", l);
        ft_plan_layer_t *p = &o->layers[l];
        p->is_moe = 1;
        p->n_experts = L->n_experts;
        p->n_used = L->n_used;
        p->expert_bytes = L->blob_stride;
        p->expert_params = 3ull * L->expert_ffn * m->d_model;
        p->dense_bytes = ft_mat_bytes(&L->wq) + ft_mat_bytes(&L->wk) + ft_mat_bytes(&L->wv) +
                         ft_mat_bytes(&L->wo) + ft_mat_bytes(&L->router) + (2ull * m->d_model + 2ull * L->head_dim) * 4;
        p->dense_params = (uint64_t)L->wq.rows * L->wq.cols + (uint64_t)L->wk.rows * L->wk.cols +
                          (uint64_t)L->wv.rows * L->wv.cols + (uint64_t)L->wo.rows * L->wo.cols +
                          (uint64_t)L->router.rows * L->router.cols;
        p->kv_bytes_per_token = 2ull * L->n_kv_heads * L->head_dim * 2;
    }
    o->pm = (ft_plan_model_t){.arch = "qwen3moe", .n_layers = m->n_layers, .layers = o->layers,
                              .embed_bytes = ft_mat_bytes(&m->tok_embd), .output_bytes = ft_mat_bytes(&m->output),
                              .d_model = m->d_model, .vocab_size = m->vocab_size,
                              .expert_format = m->n_layers ? m->layers[0].gate.dtype : FT_DTYPE_F32};
    return FT_OK;
}

static ft_status_t ft_offload_popularity(ft_offload_t *o, const float *pop, uint32_t stride)
{
    if (!pop)
        return FT_OK;
    size_t n = (size_t)o->m->n_layers * stride;
    o->popularity = ft_mem_calloc(o->a, n ? n : 1, sizeof(float));
    if (!o->popularity)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "offload: out of memory");
    memcpy(o->popularity, pop, n * sizeof(float));
    o->pm.popularity = o->popularity;
    o->pm.popularity_stride = stride;
    return FT_OK;
}

static ft_status_t ft_offload_solve(const ft_offload_t *o, uint64_t vram_bytes, ft_plan_result_t *res)
{
    ft_plan_budget_t budget = {.vram_bytes = vram_bytes, .ram_bytes = 0, .ctx = o->ctx, .batch = 1};
    ft_status_t st = ft_planner_solve(&o->pm, &o->hw, &budget, res);
    if (st)
        return st;
    if (!res->fits) {
        st = ft_status_make(FT_STATUS_OUT_OF_RANGE, "offload: no plan fits %.1f MiB of VRAM: %s",
                            vram_bytes / 1048576.0, res->why);
        ft_plan_result_release(res);
    }
    return st;
}

/* Streaming buffers: two whole layers of experts, when the plan has room. */
static ft_status_t ft_offload_streams(ft_offload_t *o, const ft_plan_result_t *res)
{
    uint64_t need = 0;
    for (uint32_t l = 0; l < o->m->n_layers; l++) {
        uint64_t b = (uint64_t)o->m->layers[l].n_experts * o->m->layers[l].blob_stride;
        need = b > need ? b : need;
    }
    const int want = res->vram_stream > 0;
    if (want && !o->stream[0]) {
        uint8_t *s0 = ft_mem_alloc(o->a, need), *s1 = ft_mem_alloc(o->a, need);
        if (!s0 || !s1) {
            ft_mem_free(o->a, s0);
            ft_mem_free(o->a, s1);
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "offload: two streaming buffers of %llu bytes",
                                  (unsigned long long)need);
        }
        o->stream[0] = s0;
        o->stream[1] = s1;
    } else if (!want && o->stream[0]) {
        ft_mem_free(o->a, o->stream[0]);
        ft_mem_free(o->a, o->stream[1]);
        o->stream[0] = o->stream[1] = NULL;
    }
    o->stream_bytes = need;
    return FT_OK;
}

/* Slots the cache needs for a plan: LRU slots plus the pinned experts
 * (pinned experts take a slot each: the blobs are all the same size here). */
static uint32_t ft_offload_cache_slots(const ft_plan_result_t *plan)
{
    return plan->n_slots + plan->n_pinned;
}

/* Fills the cache at load (or after it grew), when the copy engine is idle:
 * first the plan's pinned experts, then free slots with experts taken
 * round-robin over the layers (no calibration: any expert is as likely as
 * another). Costs load time, not step time, so it is neither counted as
 * misses nor put on the virtual clock. */
static void ft_offload_warm(ft_offload_t *o)
{
    const ft_model_t *m = o->m;
    const uint32_t stride = m->max_experts;
    for (uint32_t i = 0; i < o->plan.n_pinned; i++) {
        const uint32_t id = o->plan.pinned[i], l = id / stride, e = id % stride;
        if (l >= m->n_layers || e >= m->layers[l].n_experts)
            continue;
        int32_t s = ft_expert_cache_pin(o->cache, id);
        if (s >= 0)
            memcpy(ft_expert_cache_slot_data(o->cache, s), m->layers[l].blob0 + (uint64_t)e * m->layers[l].blob_stride,
                   m->layers[l].blob_stride);
    }
    for (uint32_t e = 0; e < stride; e++)
        for (uint32_t l = 0; l < m->n_layers; l++) {
            if (e >= m->layers[l].n_experts || ft_expert_cache_find(o->cache, l * stride + e) >= 0)
                continue;
            int32_t s = ft_expert_cache_fill_free(o->cache, l * stride + e);
            if (s < 0)
                return; /* full */
            memcpy(ft_expert_cache_slot_data(o->cache, s), m->layers[l].blob0 + (uint64_t)e * m->layers[l].blob_stride,
                   m->layers[l].blob_stride);
        }
}

ft_status_t ft_offload_create(const ft_model_t *m, const ft_hw_t *hw, uint64_t vram_bytes, uint32_t ctx,
                              const float *popularity, uint32_t popularity_stride, const ft_allocator_t *alloc,
                              ft_offload_t **out)
{
    *out = NULL;
    ft_offload_t *o = ft_mem_calloc(alloc, 1, sizeof(*o));
    if (!o)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "offload: out of memory");
    o->m = m;
    o->a = alloc;
    o->hw = *hw;
    o->ctx = ctx;
    ft_status_t st;
    o->order = ft_mem_calloc(alloc, m->max_experts ? m->max_experts : 1, sizeof(uint32_t));
    if (!o->order)
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "offload: out of memory");
    else if (!(st = ft_offload_shape(o)) && !(st = ft_offload_popularity(o, popularity, popularity_stride)) &&
             !(st = ft_offload_solve(o, vram_bytes, &o->plan)) &&
             !(st = ft_offload_streams(o, &o->plan))) {
        for (uint32_t l = 0; l < m->n_layers; l++)
            o->slot_bytes = m->layers[l].blob_stride > o->slot_bytes ? m->layers[l].blob_stride : o->slot_bytes;
        if (!(st = ft_expert_cache_create(m->n_layers * m->max_experts, ft_offload_cache_slots(&o->plan),
                                          o->slot_bytes, alloc, &o->cache)))
            st = ft_sim_device_create(hw, ft_offload_cache_slots(&o->plan) + 2, &o->dev);
    }
    if (st) {
        ft_offload_destroy(o);
        return st;
    }
    ft_offload_warm(o);
    ft_expert_cache_reset_stats(o->cache);
    o->vram_bytes = vram_bytes;
    *out = o;
    return FT_OK;
}

void ft_offload_destroy(ft_offload_t *o)
{
    if (!o)
        return;
    ft_sim_device_destroy(o->dev);
    ft_expert_cache_destroy(o->cache);
    ft_plan_result_release(&o->plan);
    ft_mem_free(o->a, o->stream[0]);
    ft_mem_free(o->a, o->stream[1]);
    ft_mem_free(o->a, o->layers);
    ft_mem_free(o->a, o->order);
    ft_mem_free(o->a, o->popularity);
    ft_mem_free(o->a, o);
}

const ft_plan_result_t *ft_offload_plan(const ft_offload_t *o)
{
    return &o->plan;
}

void ft_offload_step_begin(ft_offload_t *o)
{
    o->ready = ft_sim_step_begin(o->dev);
}

void ft_offload_attention(ft_offload_t *o, uint32_t layer, uint32_t n_tok)
{
    const ft_plan_layer_t *p = &o->layers[layer];
    ft_sim_event_t ev = ft_sim_kernel(o->dev, -1, p->dense_bytes, p->dense_params, n_tok,
                                      o->m->layers[layer].wq.dtype, o->ready);
    /* The routing decision goes to the host, which schedules the experts. */
    o->router_ready = ft_sim_sync(o->dev, ev);
}

static uint32_t ft_bucket(const ft_plan_result_t *plan, uint32_t n_tok)
{
    for (uint32_t b = 0; b < plan->n_buckets; b++)
        if (n_tok <= plan->bucket_tokens[b])
            return b;
    return plan->n_buckets ? plan->n_buckets - 1 : 0;
}

/* Whole-layer streaming for prefill: the layer's experts arrive in one copy
 * into the buffer this layer owns (layers alternate), which may start as
 * soon as the layer two back has finished reading that buffer. */
static void ft_offload_stream_layer(ft_offload_t *o, uint32_t layer, uint32_t n_tok, const int32_t *active,
                                    const uint32_t *counts, uint32_t n_active, const uint8_t **blobs)
{
    const ft_layer_t *L = &o->m->layers[layer];
    const ft_plan_layer_t *p = &o->layers[layer];
    const uint32_t b = layer % 2, slot = ft_offload_cache_slots(&o->plan) + b;
    const uint64_t bytes = (uint64_t)L->n_experts * L->blob_stride;
    memcpy(o->stream[b], L->blob0, bytes);
    ft_sim_event_t copied = ft_sim_copy(o->dev, (int32_t)slot, bytes, o->stream_free[b]);
    ft_sim_event_t after = copied > o->router_ready ? copied : o->router_ready, end = after;
    for (uint32_t i = 0; i < n_active; i++) {
        blobs[i] = o->stream[b] + (uint64_t)active[i] * L->blob_stride;
        end = ft_sim_kernel(o->dev, (int32_t)slot, p->expert_bytes, p->expert_params, counts[i],
                            L->gate.dtype, after);
    }
    o->stream_free[b] = end;
    o->ready = end;
    o->st.streamed += n_active;
    (void)n_tok;
}

void ft_offload_moe(ft_offload_t *o, uint32_t layer, uint32_t n_tok, const int32_t *active,
                    const uint32_t *counts, uint32_t n_active, const uint8_t **blobs)
{
    const ft_layer_t *L = &o->m->layers[layer];
    const ft_plan_layer_t *p = &o->layers[layer];
    const ft_plan_result_t *plan = &o->plan;
    ft_expert_cache_unlock_all(o->cache); /* the previous layer's kernels are done */
    /* Prefill batches at or above the planner's threshold stream whole
     * layers; a single token (decode) always goes through the cache and q*. */
    if (o->stream[0] && n_tok > 1 && n_tok >= plan->prefill_stream_tokens) {
        ft_offload_stream_layer(o, layer, n_tok, active, counts, n_active, blobs);
        return;
    }
    ft_sim_event_t gpu_end = o->router_ready, cpu_end = o->router_ready;
    uint32_t n_miss = 0, miss_in_bucket[FT_PLAN_MAX_BUCKETS] = {0}, sent[FT_PLAN_MAX_BUCKETS] = {0};
    for (uint32_t i = 0; i < n_active; i++) {
        const uint32_t id = layer * o->m->max_experts + (uint32_t)active[i];
        int32_t s = ft_expert_cache_lookup(o->cache, id);
        if (s >= 0) {
            ft_expert_cache_lock(o->cache, s);
            blobs[i] = ft_expert_cache_slot_data(o->cache, s);
            gpu_end = ft_sim_kernel(o->dev, s, p->expert_bytes, p->expert_params, counts[i], L->gate.dtype,
                                    o->router_ready);
            o->st.hits++;
        } else {
            o->order[n_miss++] = i;
            miss_in_bucket[ft_bucket(plan, counts[i])]++;
        }
    }
    /* Misses with the most tokens first: they gain most from the GPU. */
    for (uint32_t a = 1; a < n_miss; a++)
        for (uint32_t b = a; b > 0 && counts[o->order[b]] > counts[o->order[b - 1]]; b--) {
            uint32_t t = o->order[b];
            o->order[b] = o->order[b - 1];
            o->order[b - 1] = t;
        }
    const ft_sim_event_t host_ready = o->router_ready;
    for (uint32_t k = 0; k < n_miss; k++) {
        const uint32_t i = o->order[k], e = (uint32_t)active[i], bk = ft_bucket(plan, counts[i]);
        const float q = plan->qstar ? plan->qstar[(size_t)layer * plan->n_buckets + bk] : 0.0f;
        int32_t s = -1;
        if (sent[bk] < (uint32_t)lroundf(q * (float)miss_in_bucket[bk]))
            s = ft_expert_cache_insert(o->cache, layer * o->m->max_experts + e);
        if (s >= 0) {
            sent[bk]++;
            ft_expert_cache_lock(o->cache, s);
            uint8_t *dst = ft_expert_cache_slot_data(o->cache, s);
            memcpy(dst, L->blob0 + (uint64_t)e * L->blob_stride, L->blob_stride);
            ft_sim_event_t copied = ft_sim_copy(o->dev, s, L->blob_stride, o->router_ready);
            blobs[i] = dst;
            gpu_end = ft_sim_kernel(o->dev, s, p->expert_bytes, p->expert_params, counts[i], L->gate.dtype,
                                    copied);
            o->st.misses_to_gpu++;
        } else {
            blobs[i] = NULL;
            cpu_end = ft_sim_cpu(o->dev, p->expert_bytes, p->expert_params, counts[i], L->gate.dtype,
                                 host_ready);
            o->st.misses_to_cpu++;
        }
        o->st.misses++;
    }
    /* The layer ends when the GPU's experts and the CPU's results (sent back
     * to the device) are both in. */
    ft_sim_event_t cpu_back = n_miss ? ft_sim_sync(o->dev, cpu_end) : cpu_end;
    o->ready = gpu_end > cpu_back ? gpu_end : cpu_back;
}

void ft_offload_step_end(ft_offload_t *o, uint32_t n_tok)
{
    const ft_model_t *m = o->m;
    ft_sim_event_t ev = ft_sim_kernel(o->dev, -1, ft_mat_bytes(&m->output),
                                      (uint64_t)m->output.rows * m->output.cols, 1, m->output.dtype, o->ready);
    ft_sim_step_end(o->dev, ev);
    o->st.n_steps++;
    o->st.n_tokens += n_tok;
}

void ft_offload_stats(const ft_offload_t *o, ft_offload_stats_t *out)
{
    *out = o->st;
    ft_sim_counters_t c;
    ft_sim_counters(o->dev, &c);
    out->bytes_copied = c.bytes_copied;
    out->modelled_seconds = c.elapsed;
    out->order_violations = c.order_violations;
    out->n_slots = ft_offload_cache_slots(&o->plan);
    out->vram_bytes = o->vram_bytes;
}

void ft_offload_reset_stats(ft_offload_t *o)
{
    memset(&o->st, 0, sizeof(o->st));
    ft_sim_reset_counters(o->dev);
    ft_expert_cache_reset_stats(o->cache);
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
    /* Everything that can fail first; each step is undone if a later one
     * fails, so a failed re-plan leaves the engine as it was. */
    const uint32_t old_slots = ft_offload_cache_slots(&o->plan), new_slots = ft_offload_cache_slots(&res);
    if ((st = ft_expert_cache_resize(o->cache, new_slots))) {
        ft_plan_result_release(&res);
        return st;
    }
    if ((st = ft_sim_device_resize_slots(o->dev, new_slots + 2)) || (st = ft_offload_streams(o, &res))) {
        ft_expert_cache_resize(o->cache, old_slots); /* had room before */
        ft_sim_device_resize_slots(o->dev, old_slots + 2);
        ft_plan_result_release(&res);
        return st;
    }
    ft_plan_result_release(&o->plan);
    o->plan = res;
    o->vram_bytes = vram_bytes;
    ft_offload_warm(o); /* a grown cache has free slots: warm them, as at load */
    return FT_OK;
}
