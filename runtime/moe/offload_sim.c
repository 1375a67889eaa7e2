/* The simulated device's side of offloading: the shared decisions
 * (ft_offload_dispatch) become host copies into the sim's slot memory and
 * streaming buffers, and operations on its virtual clock. */
#include "offload_internal.h"

#include "../base/alloc.h"

#include <string.h>

/* Streaming buffers: two whole layers of experts, when the plan has room. */
ft_status_t ft_offload_sim_streams(ft_offload_t *o, const ft_plan_result_t *res)
{
    const uint64_t need = o->stream_bytes;
    const int want = res->vram_stream > 0;
    if (want && !o->stream[0]) {
        uint8_t *s0 = ft_mem_alloc(o->a, need), *s1 = ft_mem_alloc(o->a, need);
        if (!s0 || !s1) {
            ft_mem_free(o->a, s0);
            ft_mem_free(o->a, s1);
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY,
                                  "offload: two streaming buffers of %llu bytes",
                                  (unsigned long long)need);
        }
        o->stream[0] = s0;
        o->stream[1] = s1;
    } else if (!want && o->stream[0]) {
        ft_mem_free(o->a, o->stream[0]);
        ft_mem_free(o->a, o->stream[1]);
        o->stream[0] = o->stream[1] = NULL;
    }
    o->streaming = o->stream[0] != NULL;
    return FT_OK;
}

void ft_offload_step_begin(ft_offload_t *o)
{
    if (o->dev) o->ready = ft_sim_step_begin(o->dev);
}

void ft_offload_attention(ft_offload_t *o, uint32_t layer, uint32_t n_tok)
{
    if (!o->dev) return;
    const ft_plan_layer_t *p = &o->pm->layers[layer];
    ft_sim_event_t ev = ft_sim_kernel(o->dev, -1, p->dense_bytes, p->dense_params, n_tok, o->pm->dense_format,
                                      o->ready);
    /* The routing decision goes to the host, which schedules the experts. */
    o->router_ready = ft_sim_sync(o->dev, ev);
}

/* A streamed layer: one copy into the buffer, which may start as soon as
 * the layer two back has finished reading it. */
static void ft_offload_sim_stream(ft_offload_t *o, uint32_t layer, const int32_t *active,
                                  const uint32_t *counts, const ft_offload_decision_t *d,
                                  const uint8_t **blobs)
{
    const ft_offload_layer_t *L = &o->L[layer];
    const ft_plan_layer_t *p = &o->pm->layers[layer];
    const uint32_t b = d->buffer, slot = ft_offload_cache_slots(&o->plan) + b;
    const uint64_t bytes = (uint64_t)L->n_experts * L->blob_stride;
    memcpy(o->stream[b], L->blob0, bytes);
    ft_sim_event_t copied = ft_sim_copy(o->dev, (int32_t)slot, bytes, o->stream_free[b]);
    ft_sim_event_t after = copied > o->router_ready ? copied : o->router_ready, end = after;
    for (uint32_t k = 0; k < d->n_items; k++) {
        const uint32_t i = d->items[k].index;
        blobs[i] = o->stream[b] + (uint64_t)active[i] * L->blob_stride;
        end = ft_sim_kernel(o->dev, (int32_t)slot, p->expert_bytes, p->expert_params, counts[i],
                            o->pm->expert_format, after);
    }
    o->stream_free[b] = end;
    o->ready = end;
}

void ft_offload_moe(ft_offload_t *o, uint32_t layer, uint32_t n_tok, const int32_t *active,
                    const uint32_t *counts, uint32_t n_active, const uint8_t **blobs)
{
    ft_offload_decision_t d;
    ft_offload_dispatch(o, layer, n_tok, active, counts, n_active, &d);
    if (d.streamed) {
        ft_offload_sim_stream(o, layer, active, counts, &d, blobs);
        return;
    }
    const ft_offload_layer_t *L = &o->L[layer];
    const ft_plan_layer_t *p = &o->pm->layers[layer];
    ft_sim_event_t gpu_end = o->router_ready, cpu_end = o->router_ready;
    const ft_sim_event_t host_ready = o->router_ready;
    for (uint32_t k = 0; k < d.n_items; k++) {
        const ft_offload_item_t *it = &d.items[k];
        const uint32_t i = it->index;
        if (it->where == FT_OFFLOAD_CPU) {
            blobs[i] = NULL;
            cpu_end = ft_sim_cpu(o->dev, p->expert_bytes, p->expert_params, counts[i],
                                 o->pm->expert_format, host_ready);
            continue;
        }
        uint8_t *slot = ft_expert_cache_slot_data(o->cache, it->slot);
        ft_sim_event_t after = o->router_ready;
        if (it->where == FT_OFFLOAD_COPY) {
            memcpy(slot, L->blob0 + (uint64_t)active[i] * L->blob_stride, L->blob_stride);
            after = ft_sim_copy(o->dev, it->slot, L->blob_stride, o->router_ready);
        }
        blobs[i] = slot;
        gpu_end = ft_sim_kernel(o->dev, it->slot, p->expert_bytes, p->expert_params, counts[i],
                                o->pm->expert_format, after);
    }
    /* The layer ends when the GPU's experts and the CPU's results (sent back
     * to the device) are both in. */
    const uint32_t n_miss = d.n_copies + d.n_cpu;
    ft_sim_event_t cpu_back = n_miss ? ft_sim_sync(o->dev, cpu_end) : cpu_end;
    o->ready = gpu_end > cpu_back ? gpu_end : cpu_back;
}

void ft_offload_step_end(ft_offload_t *o, uint32_t n_tok)
{
    if (o->dev) {
        const ft_plan_model_t *m = o->pm;
        ft_sim_event_t ev = ft_sim_kernel(o->dev, -1, m->output_bytes, (uint64_t)m->vocab_size * m->d_model, 1,
                                          m->dense_format, o->ready);
        ft_sim_step_end(o->dev, ev);
    }
    o->st.n_steps++;
    o->st.n_tokens += n_tok;
}
