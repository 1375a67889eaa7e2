/* The CUDA engine: device, module, pinned weights, the VRAM plan, resident
 * dense weights, expert slot memory, re-plan and free-VRAM polling. */
#include "cuda_engine_internal.h"

#include "../../base/alloc.h"
#include "../../base/checked.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FT_CUDA_ALIGN 256u              /* bytes: every device sub-buffer starts aligned */
#define FT_CUDA_HEADROOM (256ull << 20) /* bytes left free when planning from free VRAM */

static uint64_t ft_cuda_round(uint64_t n)
{
    return (n + FT_CUDA_ALIGN - 1) / FT_CUDA_ALIGN * FT_CUDA_ALIGN;
}

/* Figures for the q* split when no profile describes this machine:
 * typical PCIe 4 x16 and dual-channel DDR5 numbers, the device's memory
 * as measured now. The split is then a guess, but a safe one: the cache
 * and the dispatch stay correct whatever the figures. */
static void ft_cuda_generic_hw(const ft_cuda_device_info_t *di, uint64_t free_bytes, ft_hw_t *hw)
{
    memset(hw, 0, sizeof(*hw));
    snprintf(hw->cpu_name, sizeof(hw->cpu_name), "host");
    const long cores = sysconf(_SC_NPROCESSORS_ONLN), pages = sysconf(_SC_PHYS_PAGES);
    hw->n_cores = cores > 0 ? (uint32_t)cores : 1;
    hw->ram_bytes = pages > 0 ? (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE) : 16ull << 30;
    hw->dram_gbs = 40.0;
    hw->dram_1t_gbs = 15.0;
    hw->n_gpus = 1;
    ft_hw_gpu_t *g = &hw->gpu;
    snprintf(g->name, sizeof(g->name), "%.63s", di->name);
    g->cc_major = (uint32_t)di->cc_major;
    g->cc_minor = (uint32_t)di->cc_minor;
    g->vram_bytes = di->total_bytes;
    g->vram_free_bytes = free_bytes;
    g->hbm_gbs = 500.0;
    g->h2d_gbs = g->d2h_gbs = 20.0;
    g->h2d_overlap_gbs = g->gather_gbs = 16.0;
    g->launch_us = 5.0;
    g->gemm_tflops = 50.0;
}

/* The plan's images as the device API takes them ("sm_90" cubins, PTX for
 * "compute_80"). UNAVAILABLE when the bundle has none. */
FT_WARN_UNUSED static ft_status_t ft_cuda_images(const ft_bundle_t *b, const ft_allocator_t *a,
                                  ft_cuda_image_t **out, uint32_t *out_n)
{
    const Ftplan__Plan *p = b->plan;
    const size_t n = p->n_cuda_images + p->n_cuda_ptx;
    *out = NULL;
    *out_n = 0;
    if (!n)
        return ft_status_make(
            FT_STATUS_UNAVAILABLE,
            "%s: the bundle has no CUDA kernels (compiled with --cuda-arch none, or by an ftc "
            "without NVRTC)",
            b->plan_file->path);
    ft_cuda_image_t *im = ft_mem_calloc(a, n, sizeof(*im));
    if (!im) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    for (size_t i = 0; i < p->n_cuda_images; i++) {
        const char *u = strchr(p->cuda_images[i]->arch, '_');
        im[i] = (ft_cuda_image_t){u ? (uint32_t)strtoul(u + 1, NULL, 10) : 0, 0,
                                  p->cuda_images[i]->cubin.data, p->cuda_images[i]->cubin.len};
    }
    for (size_t i = 0; i < p->n_cuda_ptx; i++) {
        const char *u = strchr(p->cuda_ptx[i]->arch, '_');
        const char *t = p->cuda_ptx[i]->text;
        im[p->n_cuda_images + i] = (ft_cuda_image_t){u ? (uint32_t)strtoul(u + 1, NULL, 10) : 0, 1,
                                                     t, t ? strlen(t) + 1 : 0};
    }
    *out = im;
    *out_n = (uint32_t)n;
    return FT_OK;
}

/* Pins every FTW file in place so expert copies run at full PCIe speed.
 * A driver that cannot register read-only memory leaves them pageable
 * (copies are staged by the driver: slower, still correct). */
FT_WARN_UNUSED static ft_status_t ft_cuda_pin(ft_cuda_engine_t *ce)
{
    const ft_bundle_t *b = ce->bundle;
    ce->pinned_ok = ft_mem_calloc(ce->a, b->n_weight_files ? b->n_weight_files : 1, 1);
    if (!ce->pinned_ok) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    for (uint32_t i = 0; i < b->n_weight_files; i++) {
        const ft_ftw_t *f = b->weight_files[i];
        ft_mapped_file_t view = {(char *)ft_ftw_path(f), ft_ftw_base(f), ft_ftw_size(f)};
        ft_status_t st = ft_cuda_pin_mapped_file(ce->dev, &view, NULL);
        if (st && ft_status_code(st) == FT_STATUS_UNSUPPORTED) {
            ft_status_free(st);
            continue;
        }
        if (st) return st;
        ce->pinned_ok[i] = 1;
    }
    return FT_OK;
}

/* Lays out (base 0: measures) the resident weights; returns the bytes. */
static uint64_t ft_cuda_dense_layout(ft_cuda_engine_t *ce, ft_cu_deviceptr base, const void **src,
                                     uint64_t *len, ft_cu_deviceptr **dst, uint32_t *n)
{
    const ft_model_t *m = ce->m;
    uint64_t at = 0;
#define FT_PUT(ptr, host, bytes)                                                                   \
    do {                                                                                           \
        if (src) {                                                                                 \
            src[*n] = (host);                                                                      \
            len[*n] = (bytes);                                                                     \
            dst[*n] = &(ptr);                                                                      \
            (*n)++;                                                                                \
        }                                                                                          \
        (ptr) = base + at;                                                                         \
        at += ft_cuda_round(bytes);                                                                \
    } while (0)
    for (uint32_t l = 0; l < m->n_layers; l++) {
        const ft_layer_t *L = &m->layers[l];
        ft_cuda_layer_t *C = &ce->layers[l];
        FT_PUT(C->wq.w, L->wq.data, ft_mat_bytes(&L->wq));
        FT_PUT(C->wk.w, L->wk.data, ft_mat_bytes(&L->wk));
        FT_PUT(C->wv.w, L->wv.data, ft_mat_bytes(&L->wv));
        FT_PUT(C->wo.w, L->wo.data, ft_mat_bytes(&L->wo));
        FT_PUT(C->router.w, L->router.data, ft_mat_bytes(&L->router));
        FT_PUT(C->attn_norm, L->attn_norm, (uint64_t)m->d_model * 4);
        FT_PUT(C->ffn_norm, L->ffn_norm, (uint64_t)m->d_model * 4);
        FT_PUT(C->q_norm, L->q_norm, (uint64_t)L->head_dim * 4);
        FT_PUT(C->k_norm, L->k_norm, (uint64_t)L->head_dim * 4);
    }
    FT_PUT(ce->output.w, m->output.data, ft_mat_bytes(&m->output));
    FT_PUT(ce->output_norm, m->output_norm, (uint64_t)m->d_model * 4);
#undef FT_PUT
    return at;
}

/* Uploads the dense weights into one allocation (load time: waits). */
FT_WARN_UNUSED static ft_status_t ft_cuda_upload_dense(ft_cuda_engine_t *ce)
{
    const uint32_t max = 9 * ce->m->n_layers + 2;
    const void **src = ft_mem_calloc(ce->a, max, sizeof(*src));
    uint64_t *len = ft_mem_calloc(ce->a, max, sizeof(*len));
    ft_cu_deviceptr **dst = ft_mem_calloc(ce->a, max, sizeof(*dst));
    ft_status_t st = FT_OK;
    uint32_t n = 0;
    if (!src || !len || !dst) st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    if (!st) {
        ce->dense_bytes = ft_cuda_dense_layout(ce, 0, NULL, NULL, NULL, &n);
        st = ft_cuda_alloc(ce->dev, ce->dense_bytes, &ce->dense);
    }
    if (!st) ft_cuda_dense_layout(ce, ce->dense, src, len, dst, &n);
    for (uint32_t i = 0; i < n && !st; i++)
        st = ft_cuda_copy_h2d(ce->dev, *dst[i], src[i], len[i], ce->xs);
    if (!st) st = ft_cuda_stream_sync(ce->dev, ce->xs);
    ft_mem_free(ce->a, src);
    ft_mem_free(ce->a, len);
    ft_mem_free(ce->a, dst);
    return ft_status_annotate(st, "cuda: uploading %.1f MiB of dense weights",
                              ce->dense_bytes / 1048576.0);
}

/* Offload device hooks: slot memory and two streaming buffers in one
 * allocation; a new one is made before the old is freed, so a failure
 * leaves the old in place. Slot contents are refilled by the offload
 * code (the cache renumbers slots on resize). */
FT_WARN_UNUSED static ft_status_t ft_cuda_reserve(void *user, uint32_t n_slots, uint64_t slot_bytes,
                                   uint64_t stream_bytes)
{
    ft_cuda_engine_t *ce = user;
    uint64_t slots, total;
    if (!ft_mul_u64(n_slots, ft_cuda_round(slot_bytes), &slots) ||
        !ft_add_u64(slots, 2 * ft_cuda_round(stream_bytes), &total) || total > SIZE_MAX)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "cuda: %u expert slots overflow", n_slots);
    ft_cu_deviceptr p = 0;
    ft_status_t st = total ? ft_cuda_alloc(ce->dev, (size_t)total, &p) : FT_OK;
    if (st)
        return ft_status_annotate(st, "cuda: %u expert slots and %s streaming buffers", n_slots,
                                  stream_bytes ? "two" : "no");
    /* Kernels or copies in flight may still read the old slots. */
    if ((st = ft_cuda_stream_sync(ce->dev, ce->cs)) ||
        (st = ft_cuda_stream_sync(ce->dev, ce->xs))) {
        ft_cuda_free(ce->dev, p);
        return st;
    }
    ft_cuda_free(ce->dev, ce->slots);
    ce->slots = p;
    ce->slots_alloc_bytes = total;
    ce->slot_bytes = ft_cuda_round(slot_bytes);
    ce->n_slots = n_slots;
    ce->stream[0] = stream_bytes ? p + slots : 0;
    ce->stream[1] = stream_bytes ? p + slots + ft_cuda_round(stream_bytes) : 0;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_cuda_fill(void *user, int32_t slot, const uint8_t *blob, uint64_t n_bytes)
{
    ft_cuda_engine_t *ce = user;
    if (slot < 0 || (uint32_t)slot >= ce->n_slots || n_bytes > ce->slot_bytes)
        return ft_status_make(FT_STATUS_INTERNAL, "cuda: fill of slot %d of %u", slot, ce->n_slots);
    ft_status_t st = ft_cuda_copy_h2d(ce->dev, ce->slots + (uint64_t)slot * ce->slot_bytes, blob,
                                      n_bytes, ce->xs);
    return st ? st : ft_cuda_stream_sync(ce->dev, ce->xs);
}

/* The cuda backend runs every layer on the GPU: a plan that keeps layers
 * or the output head on the CPU is refused with what the budget lacks. */
FT_WARN_UNUSED static ft_status_t ft_cuda_check_plan(const ft_cuda_engine_t *ce, uint64_t vram)
{
    const ft_plan_result_t *p = ft_offload_plan(ce->off);
    if (!p->cpu_only && p->n_gpu_layers >= ce->m->n_layers && p->output_on_gpu) return FT_OK;
    return ft_status_make(
        FT_STATUS_OUT_OF_RANGE,
        "cuda: a VRAM budget of %.1f MiB keeps %u of %u layers%s on the GPU; the cuda backend "
        "runs every layer there and needs more than the %.1f MiB of dense weights plus KV and "
        "scratch (give a larger --vram, or use --backend cpu)%s%s",
        vram / 1048576.0, p->cpu_only ? 0 : p->n_gpu_layers, ce->m->n_layers,
        p->output_on_gpu ? "" : " and not the output head", ce->dense_bytes / 1048576.0,
        p->note[0] ? ": " : "", p->note);
}

static uint64_t ft_cuda_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* The polling policy's bounds from the plan: never below the dense
 * weights, KV and scratch; never above room for every expert. */
static void ft_cuda_policy(ft_cuda_engine_t *ce)
{
    const ft_plan_result_t *p = ft_offload_plan(ce->off);
    const uint64_t floor = p->vram_dense + p->vram_kv + p->vram_scratch + p->vram_pinned;
    uint64_t experts = 0;
    for (uint32_t l = 0; l < ce->m->n_layers; l++)
        experts += (uint64_t)ce->m->layers[l].n_experts * ce->m->layers[l].blob_stride;
    ft_vram_policy_init(&ce->policy, floor, floor + experts + 2 * ft_offload_stream_bytes(ce->off));
    ce->last_poll_ns = ft_cuda_now_ns();
}

FT_WARN_UNUSED static ft_status_t ft_cuda_engine_setup(ft_cuda_engine_t *ce, const ft_cuda_engine_options_t *o)
{
    ft_cuda_device_options_t dopt;
    ft_cuda_device_options_init(&dopt);
    dopt.lib_name = o->lib_name;
    dopt.ordinal = o->ordinal;
    ft_cuda_image_t *im = NULL;
    uint32_t n_im = 0;
    ft_status_t st = ft_cuda_device_create(&dopt, &ce->dev);
    if (!st) st = ft_cuda_images(ce->bundle, ce->a, &im, &n_im);
    if (!st) st = ft_cuda_module_load(ce->dev, im, n_im, &ce->mod);
    ft_mem_free(ce->a, im);
    if (!st) st = ft_cuda_engine_kernels(ce);
    if (!st && !(st = ft_cuda_stream_create(ce->dev, &ce->cs)) &&
        !(st = ft_cuda_stream_create(ce->dev, &ce->xs)) &&
        !(st = ft_cuda_event_create(ce->dev, 0, &ce->copied)) &&
        !(st = ft_cuda_event_create(ce->dev, 0, &ce->streamed[0])))
        st = ft_cuda_event_create(ce->dev, 0, &ce->streamed[1]);
    if (!st) st = ft_cuda_pin(ce);
    if (!st) st = ft_cuda_upload_dense(ce);
    size_t free_b = 0, total_b = 0;
    if (!st) st = ft_cuda_mem_info(ce->dev, &free_b, &total_b);
    if (st) return st;
    /* The budget: the one given, else what is free now (our dense weights
     * count as ours) less a headroom for the driver and other programs. */
    uint64_t vram = o->vram_bytes;
    if (!vram)
        vram = free_b + ce->dense_bytes > FT_CUDA_HEADROOM
                   ? free_b + ce->dense_bytes - FT_CUDA_HEADROOM
                   : 0;
    ft_hw_t hw;
    if (o->hw && o->hw->n_gpus)
        hw = *o->hw;
    else
        ft_cuda_generic_hw(ft_cuda_device_info(ce->dev), free_b, &hw);
    const ft_offload_device_t hooks = {ce, ft_cuda_reserve, ft_cuda_fill};
    st = ft_offload_create_device(ce->bundle, &hw, vram, o->plan_ctx ? o->plan_ctx : 4096, &hooks, ce->a,
                                  &ce->off);
    if (!st) st = ft_cuda_check_plan(ce, vram);
    if (!st) ft_cuda_policy(ce);
    ce->poll_vram = o->poll_vram;
    ce->gen_min_tokens = o->gen_min_tokens;
    return st;
}

ft_status_t ft_cuda_engine_create(const ft_bundle_t *bundle, const ft_model_t *m,
                                  ft_threadpool_t *pool, const ft_cuda_engine_options_t *opts,
                                  const ft_allocator_t *alloc, ft_cuda_engine_t **out)
{
    *out = NULL;
    /* This backend runs its own forward pass over the blocks' views, not
     * the schedule: blocks of the Qwen3-MoE shape only (NeoX RoPE, q/k
     * head norms). */
    for (uint32_t l = 0; l < m->n_layers; l++)
        if (!m->layers[l].q_norm || !m->layers[l].k_norm || !m->rope_neox)
            return ft_status_make(FT_STATUS_UNSUPPORTED,
                                  "cuda: block %u has %s; the cuda backend runs only blocks with q/k head "
                                  "norms and NeoX RoPE yet (use --backend cpu or sim)",
                                  l, m->rope_neox ? "no q/k head norm" : "interleaved RoPE");
    ft_cuda_engine_t *ce = ft_mem_calloc(alloc, 1, sizeof(*ce));
    if (!ce) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    ce->a = alloc;
    ce->m = m;
    ce->bundle = bundle;
    ce->pool = pool;
    ce->layers = ft_mem_calloc(alloc, m->n_layers ? m->n_layers : 1, sizeof(ft_cuda_layer_t));
    ft_status_t st = ce->layers ? ft_cuda_engine_setup(ce, opts)
                                : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    if (st) {
        ft_cuda_engine_destroy(ce);
        return st;
    }
    *out = ce;
    return FT_OK;
}

void ft_cuda_engine_destroy(ft_cuda_engine_t *ce)
{
    if (!ce) return;
    ft_offload_destroy(ce->off);
    if (ce->dev) {
        ft_cuda_free(ce->dev, ce->slots);
        ft_cuda_free(ce->dev, ce->dense);
        for (uint32_t i = 0; ce->pinned_ok && i < ce->bundle->n_weight_files; i++)
            if (ce->pinned_ok[i])
                ft_cuda_host_unregister(ce->dev, (void *)ft_ftw_base(ce->bundle->weight_files[i]));
        ft_cuda_event_destroy(ce->dev, ce->copied);
        ft_cuda_event_destroy(ce->dev, ce->streamed[0]);
        ft_cuda_event_destroy(ce->dev, ce->streamed[1]);
        ft_cuda_stream_destroy(ce->dev, ce->cs);
        ft_cuda_stream_destroy(ce->dev, ce->xs);
        ft_cuda_module_unload(ce->mod);
        ft_cuda_device_destroy(ce->dev);
    }
    ft_mem_free(ce->a, ce->pinned_ok);
    ft_mem_free(ce->a, ce->layers);
    ft_mem_free(ce->a, ce);
}

ft_offload_t *ft_cuda_engine_offload(ft_cuda_engine_t *ce)
{
    return ce->off;
}

ft_status_t ft_cuda_engine_replan(ft_cuda_engine_t *ce, uint64_t vram_bytes)
{
    return ft_offload_replan(ce->off, vram_bytes);
}

/* Between steps: at the policy's rate, compares free VRAM with the plan
 * and re-plans when another program took or returned memory. A refused
 * re-plan leaves the engine as it was; the step itself never fails here. */
void ft_cuda_engine_poll(ft_cuda_engine_t *ce)
{
    if (!ce->poll_vram) return;
    ce->steps_since_poll++;
    const uint64_t now = ft_cuda_now_ns();
    if (!ft_vram_policy_due(&ce->policy, ce->steps_since_poll, ce->last_poll_ns, now)) return;
    ce->steps_since_poll = 0;
    ce->last_poll_ns = now;
    size_t free_b, total_b;
    ft_status_t st = ft_cuda_mem_info(ce->dev, &free_b, &total_b);
    if (st) {
        ft_status_free(st);
        return;
    }
    ft_offload_stats_t s;
    ft_offload_stats(ce->off, &s);
    const uint64_t ours = ce->dense_bytes + ce->slots_alloc_bytes + ce->session_bytes;
    const uint64_t target = ft_vram_policy_decide(&ce->policy, s.vram_bytes, ours, free_b);
    if (target) ft_status_free(ft_offload_replan(ce->off, target));
}
