/* The device engine: the device and its streams, pinned weights, the
 * memory plan, the dense weights every op reads resident, expert slot
 * memory, re-plan and free-memory polling. */
#include "dev_internal.h"

#include "../base/alloc.h"
#include "../base/checked.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FT_CUDA_ALIGN 256u              /* bytes: every device sub-buffer starts aligned */
#define FT_CUDA_HEADROOM (256ull << 20) /* bytes left free when planning from free VRAM */

static uint64_t ft_dev_round(uint64_t n)
{
    return (n + FT_CUDA_ALIGN - 1) / FT_CUDA_ALIGN * FT_CUDA_ALIGN;
}

/* Figures for the q* split when no profile describes this machine:
 * typical PCIe 4 x16 and dual-channel DDR5 numbers, the device's memory
 * as measured now. The split is then a guess, but a safe one: the cache
 * and the dispatch stay correct whatever the figures. */
static void ft_dev_generic_hw(const ft_device_info_t *di, uint64_t free_bytes, ft_hw_t *hw)
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

/* Pins every FTW file in place so expert copies run at full PCIe speed.
 * A driver that cannot register read-only memory leaves them pageable
 * (copies are staged by the driver: slower, still correct). */
FT_WARN_UNUSED static ft_status_t ft_dev_pin_weights(ft_dev_engine_t *ce)
{
    const ft_bundle_t *b = ce->bundle;
    ce->pinned_ok = ft_mem_calloc(ce->a, b->n_weight_files ? b->n_weight_files : 1, 1);
    if (!ce->pinned_ok) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    for (uint32_t i = 0; i < b->n_weight_files; i++) {
        const ft_ftw_t *f = b->weight_files[i];
        ft_status_t st = ft_dev_pin(ce->dev, ft_ftw_base(f), ft_ftw_size(f), ft_ftw_path(f));
        if (st && ft_status_code(st) == FT_STATUS_UNSUPPORTED) {
            ft_status_free(st);
            continue;
        }
        if (st) return st;
        ce->pinned_ok[i] = 1;
    }
    return FT_OK;
}

/* The resident weights: every op's matrices, vectors and biases, each once
 * (a tied output head is the embedding's bytes; the embedding itself
 * stays on the host, which gathers its rows). */
typedef struct ft_dev_upload {
    uint32_t n, cap;
    const void **src; /* [cap] host bytes */
    uint64_t *len;
    ft_dptr_t *at;    /* offset into the allocation, then the address */
    uint64_t bytes;
} ft_dev_upload_t;

/* The address of host bytes src (appended when new). */
static uint32_t ft_dev_upload_put(ft_dev_upload_t *u, const void *src, uint64_t len)
{
    for (uint32_t i = 0; i < u->n; i++)
        if (u->src[i] == src && u->len[i] >= len) return i;
    u->src[u->n] = src;
    u->len[u->n] = len;
    u->at[u->n] = u->bytes;
    u->bytes += ft_dev_round(len);
    return u->n++;
}

/* The entries of one op: its matrices, its vector, its biases. */
enum {
    FT_DEV_UP_VEC = FT_XOP_MAX_ARGS,
    FT_DEV_UP_BIAS = FT_XOP_MAX_ARGS + 1,
    FT_DEV_UP_SLOTS = 2 * FT_XOP_MAX_ARGS + 1
};

/* The f32 vector an op reads besides its matrices, with its length in
 * floats (program.c widened it): the norms' weights, ATTENTION's sinks,
 * a scaled ROPE's frequencies (YaRN), the ROUTER's selection bias. */
static const float *ft_dev_op_vec(const ft_xop_t *x, uint64_t *n)
{
    switch (x->kind) {
    case FTPLAN__OP_KIND__OP_RMSNORM:
        *n = x->width;
        return x->vec;
    case FTPLAN__OP_KIND__OP_HEAD_NORM:
        *n = x->head_dim;
        return x->vec;
    case FTPLAN__OP_KIND__OP_ATTENTION:
        *n = x->n_heads;
        return x->sinks;
    case FTPLAN__OP_KIND__OP_ROPE:
        *n = x->rope_dim / 2;
        return x->rope_mscale != 1.0f ? x->inv_freq : NULL;
    case FTPLAN__OP_KIND__OP_ROUTER:
        *n = x->L->n_experts;
        return x->sel_bias;
    default:
        *n = 0;
        return NULL;
    }
}

/* Floats of bias j of op x: a LINEAR's weight rows, the ROUTER's experts,
 * a MOE stack's experts times rows. */
static uint64_t ft_dev_bias_floats(const ft_xop_t *x, uint32_t j)
{
    if (x->kind == FTPLAN__OP_KIND__OP_LINEAR) return x->w[j]->rows;
    if (x->kind == FTPLAN__OP_KIND__OP_ROUTER) return x->L->n_experts;
    const ft_mat_t *stack[3] = {&x->L->gate, &x->L->up, &x->L->down};
    return (uint64_t)x->L->n_experts * stack[j]->rows;
}

/* Every weight of the ops in list, with the entry each op reads (written
 * to the ops' addresses once the allocation exists: ft_dev_upload_bind). */
static void ft_dev_upload_list(ft_dev_upload_t *u, const ft_xops_t *l, uint32_t *idx)
{
    for (uint32_t i = 0; i < l->n; i++) {
        const ft_xop_t *x = &l->ops[i];
        uint32_t *k = idx + (size_t)x->id * FT_DEV_UP_SLOTS;
        for (uint32_t j = 0; j < FT_DEV_UP_SLOTS; j++)
            k[j] = UINT32_MAX;
        if (x->kind == FTPLAN__OP_KIND__OP_LINEAR)
            for (uint32_t j = 0; j < x->n_w; j++)
                k[j] = ft_dev_upload_put(u, x->w[j]->data, ft_mat_bytes(x->w[j]));
        else if (x->kind == FTPLAN__OP_KIND__OP_ROUTER)
            k[0] = ft_dev_upload_put(u, x->L->router.data, ft_mat_bytes(&x->L->router));
        uint64_t n;
        const float *v = ft_dev_op_vec(x, &n);
        if (v) k[FT_DEV_UP_VEC] = ft_dev_upload_put(u, v, n * 4);
        const int biased = x->kind == FTPLAN__OP_KIND__OP_LINEAR ||
                           x->kind == FTPLAN__OP_KIND__OP_ROUTER ||
                           x->kind == FTPLAN__OP_KIND__OP_MOE;
        for (uint32_t j = 0; biased && j < FT_XOP_MAX_ARGS; j++)
            if (x->bias[j])
                k[FT_DEV_UP_BIAS + j] =
                    ft_dev_upload_put(u, x->bias[j], ft_dev_bias_floats(x, j) * 4);
        if (x->kind == FTPLAN__OP_KIND__OP_DELTANET) { /* its f32 vectors in the bias slots */
            const uint64_t C = ft_deltanet_channels(&x->dn), H = x->dn.n_v_heads;
            k[FT_DEV_UP_BIAS + 0] = ft_dev_upload_put(u, x->dn_conv, C * x->dn.conv_kernel * 4);
            k[FT_DEV_UP_BIAS + 1] = ft_dev_upload_put(u, x->dn_dt_bias, H * 4);
            k[FT_DEV_UP_BIAS + 2] = ft_dev_upload_put(u, x->dn_a, H * 4);
        }
    }
}

static void ft_dev_upload_bind(ft_dev_engine_t *ce, const ft_dev_upload_t *u, const uint32_t *idx)
{
    for (uint32_t id = 0; id < ce->prog->n_ops; id++) {
        const uint32_t *k = idx + (size_t)id * FT_DEV_UP_SLOTS;
        ft_dev_op_t *o = &ce->ops[id];
        for (uint32_t j = 0; j < FT_XOP_MAX_ARGS; j++) {
            if (k[j] != UINT32_MAX) o->w[j].w = ce->dense + u->at[k[j]];
            if (k[FT_DEV_UP_BIAS + j] != UINT32_MAX)
                o->bias[j] = ce->dense + u->at[k[FT_DEV_UP_BIAS + j]];
        }
        if (k[FT_DEV_UP_VEC] != UINT32_MAX) o->vec = ce->dense + u->at[k[FT_DEV_UP_VEC]];
    }
}

/* Uploads the dense weights into one allocation (load time: waits). */
FT_WARN_UNUSED static ft_status_t ft_dev_upload_dense(ft_dev_engine_t *ce)
{
    const ft_program_t *p = ce->prog;
    ft_dev_upload_t u = {0};
    u.cap = p->n_ops * FT_DEV_UP_SLOTS + 1;
    u.src = ft_mem_calloc(ce->a, u.cap, sizeof(*u.src));
    u.len = ft_mem_calloc(ce->a, u.cap, sizeof(*u.len));
    u.at = ft_mem_calloc(ce->a, u.cap, sizeof(*u.at));
    uint32_t *idx = ft_mem_calloc(ce->a, u.cap, sizeof(*idx));
    ft_status_t st = FT_OK;
    if (!u.src || !u.len || !u.at || !idx) st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    if (!st) {
        ft_dev_upload_list(&u, &p->prologue, idx);
        for (uint32_t l = 0; l < p->n_blocks; l++)
            ft_dev_upload_list(&u, &p->blocks[l], idx);
        ft_dev_upload_list(&u, &p->epilogue, idx);
        ce->dense_bytes = u.bytes;
        st = ft_dev_alloc(ce->dev, u.bytes ? u.bytes : FT_CUDA_ALIGN, &ce->dense);
    }
    for (uint32_t i = 0; i < u.n && !st; i++)
        st = ft_dev_copy_h2d(ce->dev, ce->dense + u.at[i], u.src[i], u.len[i], ce->xs);
    if (!st) st = ft_dev_stream_sync(ce->dev, ce->xs);
    if (!st) ft_dev_upload_bind(ce, &u, idx);
    ft_mem_free(ce->a, u.src);
    ft_mem_free(ce->a, u.len);
    ft_mem_free(ce->a, u.at);
    ft_mem_free(ce->a, idx);
    return ft_status_annotate(st, "cuda: uploading %.1f MiB of dense weights", ce->dense_bytes / 1048576.0);
}

/* The cuda backend runs every layer on the GPU: a plan that keeps layers
 * or the output head on the CPU is refused with what the budget lacks. */
FT_WARN_UNUSED static ft_status_t ft_dev_check_plan(const ft_dev_engine_t *ce, uint64_t vram)
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

static uint64_t ft_dev_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* The polling policy's bounds from the plan: never below the dense
 * weights, KV and scratch; never above room for every expert. */
static void ft_dev_policy(ft_dev_engine_t *ce)
{
    const ft_plan_result_t *p = ft_offload_plan(ce->off);
    const uint64_t floor = p->vram_dense + p->vram_kv + p->vram_scratch + p->vram_pinned;
    uint64_t experts = 0;
    for (uint32_t l = 0; l < ce->m->n_layers; l++)
        experts += (uint64_t)ce->m->layers[l].n_experts * ce->m->layers[l].blob_stride;
    ft_vram_policy_init(&ce->policy, floor, floor + experts + 2 * ft_offload_stream_bytes(ce->off));
    ce->last_poll_ns = ft_dev_now_ns();
}

FT_WARN_UNUSED static ft_status_t ft_dev_engine_setup(ft_dev_engine_t *ce, const ft_dev_engine_options_t *o)
{
    ft_status_t st = ft_dev_engine_kernels(ce);
    if (!st && !(st = ft_dev_stream_create(ce->dev, &ce->cs)))
        st = ft_dev_stream_create(ce->dev, &ce->xs);
    if (!st) st = ft_dev_pin_weights(ce);
    if (!st) st = ft_dev_upload_dense(ce);
    uint64_t free_b = 0, total_b = 0;
    if (!st) st = ft_dev_memory_info(ce->dev, &free_b, &total_b);
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
        ft_dev_generic_hw(ft_dev_info(ce->dev), free_b, &hw);
    const ft_offload_device_t dv = {ce->dev, ce->cs, ce->xs};
    st = ft_offload_create(ce->bundle, &hw, vram, o->plan_ctx ? o->plan_ctx : 4096, &dv, ce->a, &ce->off);
    if (!st) st = ft_dev_check_plan(ce, vram);
    if (!st) ft_dev_policy(ce);
    ce->poll_vram = o->poll_vram;
    ce->gen_min_tokens = o->gen_min_tokens;
    ce->verify = o->verify;
    return st;
}

ft_status_t ft_dev_engine_create(ft_device_t *dev, const ft_bundle_t *bundle, const ft_model_t *m,
                                 ft_threadpool_t *pool, const ft_dev_engine_options_t *opts,
                                 const ft_allocator_t *alloc, ft_dev_engine_t **out)
{
    *out = NULL;
    ft_dev_engine_t *ce = ft_mem_calloc(alloc, 1, sizeof(*ce));
    if (!ce) {
        ft_dev_destroy(dev);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    }
    ce->a = alloc;
    ce->m = m;
    ce->prog = m->prog;
    ce->bundle = bundle;
    ce->pool = pool;
    ce->dev = dev;
    ce->ops = ft_mem_calloc(alloc, m->prog->n_ops ? m->prog->n_ops : 1, sizeof(ft_dev_op_t));
    ft_status_t st = ce->ops ? ft_dev_engine_setup(ce, opts)
                             : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cuda: out of memory");
    if (st) {
        ft_dev_engine_destroy(ce);
        return st;
    }
    *out = ce;
    return FT_OK;
}

void ft_dev_engine_destroy(ft_dev_engine_t *ce)
{
    if (!ce) return;
    ft_offload_destroy(ce->off);
    if (ce->dev) {
        ft_dev_work_free(ce);
        ft_dev_free(ce->dev, ce->dense);
        for (uint32_t i = 0; ce->pinned_ok && i < ce->bundle->n_weight_files; i++)
            if (ce->pinned_ok[i]) ft_dev_unpin(ce->dev, ft_ftw_base(ce->bundle->weight_files[i]));
        ft_dev_stream_destroy(ce->dev, ce->cs);
        ft_dev_stream_destroy(ce->dev, ce->xs);
        ft_dev_destroy(ce->dev);
    }
    ft_mem_free(ce->a, ce->pinned_ok);
    ft_mem_free(ce->a, ce->ops);
    ft_mem_free(ce->a, ce);
}

ft_offload_t *ft_dev_engine_offload(ft_dev_engine_t *ce)
{
    return ce->off;
}

ft_status_t ft_dev_engine_replan(ft_dev_engine_t *ce, uint64_t vram_bytes)
{
    return ft_offload_replan(ce->off, vram_bytes);
}

/* Between steps: at the policy's rate, compares free VRAM with the plan
 * and re-plans when another program took or returned memory. A refused
 * re-plan leaves the engine as it was; the step itself never fails here. */
void ft_dev_engine_poll(ft_dev_engine_t *ce)
{
    if (!ce->poll_vram) return;
    ce->steps_since_poll++;
    const uint64_t now = ft_dev_now_ns();
    if (!ft_vram_policy_due(&ce->policy, ce->steps_since_poll, ce->last_poll_ns, now)) return;
    ce->steps_since_poll = 0;
    ce->last_poll_ns = now;
    uint64_t free_b, total_b;
    ft_status_t st = ft_dev_memory_info(ce->dev, &free_b, &total_b);
    if (st) {
        ft_status_free(st);
        return;
    }
    ft_offload_stats_t s;
    ft_offload_stats(ce->off, &s);
    const uint64_t ours = ce->dense_bytes + ft_offload_device_bytes(ce->off) + ce->session_bytes;
    const uint64_t target = ft_vram_policy_decide(&ce->policy, s.vram_bytes, ours, free_b);
    if (target) ft_status_free(ft_offload_replan(ce->off, target));
}
