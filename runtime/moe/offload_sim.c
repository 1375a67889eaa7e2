/* The simulated device's clock for a step the executor computes on the
 * CPU: the dense work and the router as kernels on the compute stream, the
 * router's choices back to the host, the shared dispatch and the shared
 * copies (ft_offload_copies, the same calls cuda makes), the experts'
 * kernels after the events of their copies, the CPU's experts on the
 * host and their results back. The numerics read the bytes the copies put
 * into the sim's memory. */
#include "offload_internal.h"

#include "../backends/sim/sim_device.h"

#include <stdint.h>

void ft_offload_step_begin(ft_offload_t *o)
{
    if (!o->sim) return;
    ft_sim_step_begin(o->dv.dev);
    ft_offload_chunk_begin(o);
}

void ft_offload_attention(ft_offload_t *o, uint32_t layer, uint32_t n_tok)
{
    if (!o->sim) return;
    const ft_plan_layer_t *p = &o->pm->layers[layer];
    ft_device_t *dev = o->dv.dev;
    ft_sim_kernel(dev, o->dv.compute, 0, p->dense_bytes, p->dense_params, n_tok, o->pm->dense_format);
    /* The routing decision goes to the host, which schedules the experts:
     * each token's choices and weights back, and the host waits for them. */
    const uint64_t route_bytes = (uint64_t)n_tok * (p->n_used ? p->n_used : 1) * 8;
    ft_sim_transfer(dev, o->dv.compute, route_bytes, 0);
    ft_status_free(ft_dev_stream_sync(dev, o->dv.compute));
}

ft_status_t ft_offload_moe(ft_offload_t *o, uint32_t layer, uint32_t n_tok, const int32_t *active,
                           const uint32_t *counts, uint32_t n_active, const uint8_t **blobs)
{
    ft_offload_decision_t d;
    ft_offload_dispatch(o, layer, n_tok, active, counts, n_active, &d);
    ft_status_t st = ft_offload_copies(o, layer, &d, active);
    if (st) return st;
    ft_device_t *dev = o->dv.dev;
    ft_dstream_t cs = o->dv.compute;
    const ft_plan_layer_t *p = &o->pm->layers[layer];
    const ft_offload_layer_t *L = &o->L[layer];
    if (d.streamed && (st = ft_dev_stream_wait(dev, cs, ft_offload_streamed(o, d.buffer)))) return st;
    /* The device's experts in the dispatch's order (hits first, then the
     * copied misses after their copies), then the CPU's. */
    int waited = 0;
    uint32_t n_cpu_rows = 0;
    for (uint32_t k = 0; k < d.n_items; k++) {
        const ft_offload_item_t *it = &d.items[k];
        const uint32_t i = it->index;
        if (it->where == FT_OFFLOAD_CPU) {
            blobs[i] = NULL;
            n_cpu_rows += counts[i];
            continue;
        }
        if (it->where == FT_OFFLOAD_COPY && !waited) {
            waited = 1;
            if ((st = ft_dev_stream_wait(dev, cs, ft_offload_copied(o)))) return st;
        }
        const ft_dptr_t blob = ft_offload_blob(o, layer, it, active[i]);
        blobs[i] = (const uint8_t *)(uintptr_t)blob;
        if (o->sim)
            ft_sim_kernel(dev, cs, blob, L->blob_stride, p->expert_params, counts[i], o->pm->expert_format);
    }
    if (!o->sim || !n_cpu_rows) return FT_OK;
    for (uint32_t k = 0; k < d.n_items; k++)
        if (d.items[k].where == FT_OFFLOAD_CPU)
            ft_sim_cpu(dev, p->expert_bytes, p->expert_params, counts[d.items[k].index], o->pm->expert_format);
    /* The CPU's rows go to the device, which adds them (the numerics add
     * them on the host: only the transfer's time is modelled). */
    ft_sim_transfer(dev, cs, (uint64_t)n_cpu_rows * o->pm->d_model * sizeof(float), 1);
    return FT_OK;
}

void ft_offload_step_end(ft_offload_t *o, uint32_t n_tok)
{
    if (o->sim) {
        const ft_plan_model_t *m = o->pm;
        ft_sim_kernel(o->dv.dev, o->dv.compute, 0, m->output_bytes, (uint64_t)m->vocab_size * m->d_model, 1,
                      m->dense_format);
        (void)ft_sim_step_end(o->dv.dev);
    }
    o->st.n_steps++;
    o->st.n_tokens += n_tok;
}
