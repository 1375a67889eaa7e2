/* Carrying out the dispatch's decisions on a device, through the device
 * interface (backends/backend.h), for every device alike (the sim and
 * cuda): the expert slots and the two streaming buffers in device memory,
 * filling slots outside a step, and the copies of one layer's decision on
 * the copy stream with the events the compute stream waits for. */
#include "offload_internal.h"

#include "../base/checked.h"

#define FT_OFFLOAD_ALIGN 256u /* bytes: each slot and buffer starts aligned */

static uint64_t ft_offload_round(uint64_t n)
{
    return (n + FT_OFFLOAD_ALIGN - 1) / FT_OFFLOAD_ALIGN * FT_OFFLOAD_ALIGN;
}

ft_status_t ft_offload_device_init(ft_offload_t *o)
{
    ft_device_t *dev = o->dv.dev;
    ft_status_t st = ft_dev_event_create(dev, &o->copied);
    if (!st && !(st = ft_dev_event_create(dev, &o->streamed[0])))
        st = ft_dev_event_create(dev, &o->streamed[1]);
    o->stream_layer[0] = o->stream_layer[1] = -1;
    return st;
}

void ft_offload_device_release(ft_offload_t *o)
{
    ft_device_t *dev = o->dv.dev;
    if (!dev) return;
    /* Nothing may still be copying into or reading the memory. */
    ft_status_free(ft_dev_stream_sync(dev, o->dv.copy));
    ft_status_free(ft_dev_stream_sync(dev, o->dv.compute));
    ft_dev_free(dev, o->slots);
    ft_dev_event_destroy(dev, o->copied);
    ft_dev_event_destroy(dev, o->streamed[0]);
    ft_dev_event_destroy(dev, o->streamed[1]);
    o->slots = 0;
}

/* Slot memory and the streaming buffers in one allocation. The new one is
 * made before the old is freed, so a failure leaves the old in place; the
 * offload code refills the slots (the cache renumbers them on resize). */
ft_status_t ft_offload_reserve(ft_offload_t *o, uint32_t n_slots, int streaming)
{
    ft_device_t *dev = o->dv.dev;
    const uint64_t slot = ft_offload_round(o->slot_bytes);
    const uint64_t stream = streaming ? ft_offload_round(o->stream_bytes) : 0;
    uint64_t slots, total;
    if (!ft_mul_u64(n_slots, slot, &slots) || !ft_add_u64(slots, 2 * stream, &total) || total > SIZE_MAX)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "offload: %u expert slots overflow", n_slots);
    ft_dptr_t p = 0;
    ft_status_t st = total ? ft_dev_alloc(dev, total, &p) : FT_OK;
    if (st)
        return ft_status_annotate(st, "%s: %u expert slots and %s streaming buffers", ft_dev_info(dev)->name,
                                  n_slots, stream ? "two" : "no");
    /* Kernels or copies in flight may still read the old slots. */
    if ((st = ft_dev_stream_sync(dev, o->dv.compute)) || (st = ft_dev_stream_sync(dev, o->dv.copy))) {
        ft_dev_free(dev, p);
        return st;
    }
    ft_dev_free(dev, o->slots);
    o->slots = p;
    o->slots_alloc_bytes = total;
    o->slot_stride = slot;
    o->n_dev_slots = n_slots;
    o->stream[0] = stream ? p + slots : 0;
    o->stream[1] = stream ? p + slots + stream : 0;
    o->streaming = stream != 0;
    o->stream_layer[0] = o->stream_layer[1] = -1;
    return FT_OK;
}

ft_status_t ft_offload_fill(ft_offload_t *o, int32_t slot, uint32_t layer, uint32_t e)
{
    const ft_offload_layer_t *L = &o->L[layer];
    if (slot < 0 || (uint32_t)slot >= o->n_dev_slots || L->blob_stride > o->slot_stride)
        return ft_status_make(FT_STATUS_INTERNAL, "offload: fill of slot %d of %u", slot, o->n_dev_slots);
    ft_status_t st = ft_dev_copy_h2d(o->dv.dev, ft_offload_slot(o, slot), L->blob0 + (uint64_t)e * L->blob_stride,
                                     L->blob_stride, o->dv.copy);
    return st ? st : ft_dev_stream_sync(o->dv.dev, o->dv.copy);
}

ft_dptr_t ft_offload_slot(const ft_offload_t *o, int32_t slot)
{
    return o->slots + (uint64_t)slot * o->slot_stride;
}

ft_dptr_t ft_offload_blob(const ft_offload_t *o, uint32_t layer, const ft_offload_item_t *it, int32_t e)
{
    if (it->where == FT_OFFLOAD_STREAM) return o->stream[it->slot] + (uint64_t)e * o->L[layer].blob_stride;
    return ft_offload_slot(o, it->slot);
}

ft_devent_t ft_offload_copied(const ft_offload_t *o)
{
    return o->copied;
}

ft_devent_t ft_offload_streamed(const ft_offload_t *o, uint32_t buffer)
{
    return o->streamed[buffer & 1];
}

void ft_offload_chunk_begin(ft_offload_t *o)
{
    o->stream_layer[0] = o->stream_layer[1] = -1;
}

uint64_t ft_offload_device_bytes(const ft_offload_t *o)
{
    return o->slots_alloc_bytes;
}

/* Queues layer's experts into streaming buffer b on the copy stream. */
FT_WARN_UNUSED static ft_status_t ft_offload_stream_layer(ft_offload_t *o, uint32_t layer, uint32_t b)
{
    const ft_offload_layer_t *L = &o->L[layer];
    ft_status_t st = ft_dev_copy_h2d(o->dv.dev, o->stream[b], L->blob0, (size_t)L->n_experts * L->blob_stride,
                                     o->dv.copy);
    if (!st) st = ft_dev_event_record(o->dv.dev, o->streamed[b], o->dv.copy);
    o->stream_layer[b] = st ? -1 : (int32_t)layer;
    return st;
}

/* A streamed layer: into its buffer (unless the previous layer already
 * queued it), and the next layer with experts into the other buffer,
 * double-buffered: that buffer's last reader, the layer before this one,
 * has finished (the host read back this layer's routing, which the compute
 * stream produced after it). Otherwise each copied miss into its slot. */
ft_status_t ft_offload_copies(ft_offload_t *o, uint32_t layer, const ft_offload_decision_t *d,
                              const int32_t *active)
{
    const ft_offload_layer_t *L = &o->L[layer];
    ft_status_t st = FT_OK;
    if (d->streamed) {
        if (o->stream_layer[d->buffer] != (int32_t)layer) st = ft_offload_stream_layer(o, layer, d->buffer);
        if (!st && layer + 1 < o->n_layers && o->L[layer + 1].n_experts)
            st = ft_offload_stream_layer(o, layer + 1, (layer + 1) % 2);
        return st;
    }
    if (!d->n_copies) return FT_OK;
    for (uint32_t k = 0; k < d->n_items && !st; k++) {
        const ft_offload_item_t *it = &d->items[k];
        if (it->where == FT_OFFLOAD_COPY)
            st = ft_dev_copy_h2d(o->dv.dev, ft_offload_slot(o, it->slot),
                                 L->blob0 + (uint64_t)active[it->index] * L->blob_stride, L->blob_stride,
                                 o->dv.copy);
    }
    return st ? st : ft_dev_event_record(o->dv.dev, o->copied, o->dv.copy);
}
