/* Engines: a bundle opened for running (plan, mapped weights, model view,
 * tokenizer, thread pool). */
#include "engine_internal.h"
#include "work.h"

#include "../backends/cpu/cpu_device.h"
#include "../backends/cuda/cuda_backend.h"
#include "../backends/sim/sim_device.h"
#include "dev_engine.h"
#include "exec_api.h"
#include "program.h"
#include "../base/alloc.h"
#include "../plan/hw_profile.h"
#include "../text/chat.h"
#include "../text/detokenizer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FT_KV_PAGE_TOKENS 16u              /* positions per KV page */
#define FT_KV_DEFAULT_BUDGET (8ull << 30) /* at most; and at most a quarter of RAM */

static void ft_engine_fill_info(ft_engine_t *e)
{
    const ft_model_t *m = e->model;
    const Ftplan__Hparams *hp = e->bundle->plan->hparams;
    ft_model_info_t *i = &e->info;
    i->arch = hp->arch_name;
    i->n_layers = m->n_layers;
    i->d_model = m->d_model;
    i->vocab_size = m->vocab_size;
    i->context_length = m->context_length;
    i->n_experts = m->n_layers ? m->layers[0].n_experts : 0;
    i->n_experts_used = m->n_layers ? m->layers[0].n_used : 0;
    i->total_params = hp->total_params;
    i->active_params = hp->active_params;
    i->weight_bytes = m->weight_bytes;
    i->weight_bytes_per_token = m->weight_bytes_per_token;
    i->n_threads = ft_threadpool_size(e->pool);
    i->kernels = e->kernels_desc;
    i->batched_steps = 1; /* cpu, sim and cuda: one pass over several sessions (executor.c) */
    i->recurrent_state_bytes = m->prog ? m->prog->rstate_bytes : 0;
}

/* Points every matrix, expert and fusion the module has a kernel for at it. */
static void ft_engine_install_kernels(ft_engine_t *e)
{
    ft_model_bind_kernels(e->model, e->kmod);
}

/* Generated kernels: the plan's CPU module when asked for and this CPU has
 * its ISA; a module for an ISA this CPU lacks (UNSUPPORTED) leaves the
 * reference kernels in place, any other load failure fails the open. */
FT_WARN_UNUSED static ft_status_t ft_engine_kernels(ft_engine_t *e, const ft_engine_options_t *opts)
{
    snprintf(e->kernels_desc, sizeof(e->kernels_desc), "reference");
    const Ftplan__CpuModule *cm = e->bundle->plan->cpu_module;
    if (opts->kernels != FT_KERNELS_AUTO && opts->kernels != FT_KERNELS_GENERATED &&
        opts->kernels != FT_KERNELS_REFERENCE)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "unknown kernels choice %d", opts->kernels);
    if (opts->kernels == FT_KERNELS_REFERENCE || !cm)
        return FT_OK;
    ft_status_t st = ft_cpu_module_load(cm->so.data, cm->so.len, &e->kmod);
    if (st && ft_status_code(st) == FT_STATUS_UNSUPPORTED) {
        ft_status_free(st);
        return FT_OK;
    }
    if (st)
        return ft_status_annotate(st, "%s: cpu_module", e->bundle->plan_file->path);
    /* Auto: the module's kernels wherever they are measured faster. The
     * avx512 module's decode path streams weights at least as fast as the
     * reference dot (codegen_bench, ft bench), so it runs every batch; the
     * avx2 and portable modules only beat the reference on prefill. */
    const int every = opts->kernels != FT_KERNELS_AUTO || !strcmp(ft_cpu_module_isa(e->kmod), "avx512");
    e->gen_min_tokens = every ? 1 : 2;
    e->dn_every = strcmp(ft_cpu_module_isa(e->kmod), "portable") != 0;
    snprintf(e->kernels_desc, sizeof(e->kernels_desc), "%s %s",
             every ? "generated" : "generated (prefill)", ft_cpu_module_isa(e->kmod));
    ft_engine_install_kernels(e);
    return FT_OK;
}

/* The cuda backend: the real GPU (or a driver the caller named), planned
 * with the device's free VRAM unless --vram says otherwise, and then
 * polling free VRAM to re-plan. The q* split uses the profile given, else
 * the bundle's, else generic figures. */
/* The ops the cuda backend has no kernel for, refused by name before the
 * device or the plan's CUDA module is touched (dev_kernels.c refuses them
 * too, should a list get there). */
FT_WARN_UNUSED static ft_status_t ft_engine_cuda_ops(const ft_engine_t *e)
{
    const ft_program_t *p = e->model->prog;
    for (uint32_t l = 0; l < p->n_blocks; l++)
        for (uint32_t i = 0; i < p->blocks[l].n; i++)
            if (p->blocks[l].ops[i].kind == FTPLAN__OP_KIND__OP_MLA)
                return ft_status_make(FT_STATUS_UNSUPPORTED,
                                      "%s: cuda: block %u OP_MLA: multi-head latent attention (DeepSeek) has no "
                                      "CUDA kernel yet; run this model on the cpu or sim backend",
                                      e->bundle->plan_file->path, l);
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_engine_cuda(ft_engine_t *e, const ft_engine_options_t *opts)
{
    const Ftplan__Plan *plan = e->bundle->plan;
    ft_status_t ops = ft_engine_cuda_ops(e);
    if (ops)
        return ops;
    ft_hw_t hw;
    int have_hw = 0;
    ft_status_t st = FT_OK;
    if (opts->hw_profile) {
        if ((st = ft_hw_load(opts->hw_profile, &hw)))
            return ft_status_annotate(st, "%s", opts->hw_profile);
        have_hw = 1;
    } else if (plan->hw_profile) {
        st = ft_hw_from_profile(plan->hw_profile, &hw);
        have_hw = !st;
        ft_status_free(st); /* a profile the planner cannot use: generic figures */
    }
    ft_dev_engine_options_t co = {0};
    co.hw = have_hw ? &hw : NULL;
    co.vram_bytes = opts->vram_bytes;
    co.plan_ctx = opts->plan_ctx ? opts->plan_ctx : plan->budget && plan->budget->ctx ? plan->budget->ctx : 4096;
    co.poll_vram = opts->vram_bytes == 0; /* a budget given is kept */
    co.gen_min_tokens = e->kmod ? e->gen_min_tokens : 0;
    co.verify = e->verify;
    ft_device_t *dev = NULL;
    st = ft_cuda_backend_create(e->bundle, NULL, 0, e->a, &dev);
    if (!st)
        st = ft_dev_engine_create(dev, e->bundle, e->model, e->pool, &co, e->a, &e->dev);
    if (!st)
        e->offload = ft_dev_engine_offload(e->dev);
    return st;
}

/* The backend: cpu needs only its device (host memory, for the sessions);
 * sim models the profile's GPU with the offload machinery; cuda drives a
 * real GPU with the same machinery, its sessions' host side on the cpu
 * device. */
FT_WARN_UNUSED static ft_status_t ft_engine_backend(ft_engine_t *e, const ft_engine_options_t *opts)
{
    ft_status_t st;
    switch (opts->backend) {
    case FT_BACKEND_CPU:
    case FT_BACKEND_CUDA:
        if ((st = ft_cpu_device_create(0, e->a, &e->cpu)))
            return st;
        e->mem = e->cpu;
        return opts->backend == FT_BACKEND_CUDA ? ft_engine_cuda(e, opts) : FT_OK;
    case FT_BACKEND_SIM: break;
    default: return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "unknown backend %d", (int)opts->backend);
    }
    /* The machine: the profile named, else the one the bundle was compiled
     * for (ftc compile --hw), with that compile's budgets as defaults. */
    const Ftplan__Plan *plan = e->bundle->plan;
    const char *where = opts->hw_profile ? opts->hw_profile : e->bundle->plan_file->path;
    ft_hw_t hw;
    if (opts->hw_profile)
        st = ft_hw_load(opts->hw_profile, &hw);
    else if (plan->hw_profile)
        st = ft_hw_from_profile(plan->hw_profile, &hw);
    else
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "the sim backend models a machine: give a hardware profile (--hw), or "
                              "compile the bundle with ftc compile --hw");
    if (st)
        return ft_status_annotate(st, "%s", where);
    if (hw.n_gpus == 0)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "%s: the profile has no GPU to simulate", where);
    const int from_plan = !opts->hw_profile && plan->budget;
    uint64_t vram = opts->vram_bytes       ? opts->vram_bytes
                    : from_plan && plan->budget->vram_bytes ? plan->budget->vram_bytes
                                                            : hw.gpu.vram_free_bytes;
    uint32_t ctx = opts->plan_ctx ? opts->plan_ctx : from_plan && plan->budget->ctx ? plan->budget->ctx : 4096;
    /* The modelled GPU, its compute and copy streams, and the offload
     * machinery on them: the same as cuda's, with a virtual clock. */
    if ((st = ft_sim_device_create(&hw, vram, e->a, &e->sim.dev)) ||
        (st = ft_dev_stream_create(e->sim.dev, &e->sim.compute)) ||
        (st = ft_dev_stream_create(e->sim.dev, &e->sim.copy)))
        return st;
    e->mem = e->sim.dev;
    return ft_offload_create(e->bundle, &hw, vram, ctx, &e->sim, e->a, &e->offload);
}

/* The KV pool's memory: slabs from the engine's memory device (host
 * memory on cpu, the modelled card on sim). */
static ft_status_t ft_engine_kv_alloc(void *user, size_t n, void **out)
{
    ft_dptr_t p = 0;
    ft_status_t st = ft_dev_alloc(user, n, &p);
    *out = st ? NULL : (void *)(uintptr_t)p;
    return st;
}

static void ft_engine_kv_free(void *user, void *p)
{
    ft_dev_free(user, (ft_dptr_t)(uintptr_t)p);
}

/* The KV page pool and the prefix tree (cpu and sim; cuda keeps each
 * session's KV on the device). The default budget: min(8 GiB, a quarter
 * of RAM). Anchors' state copies may take a quarter of it. */
FT_WARN_UNUSED static ft_status_t ft_engine_kv(ft_engine_t *e, const ft_engine_options_t *opts)
{
    if (e->dev)
        return FT_OK;
    uint64_t budget = opts->kv_budget_bytes;
    if (!budget) {
        const long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
        const uint64_t ram = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 0;
        budget = ram && ram / 4 < FT_KV_DEFAULT_BUDGET ? ram / 4 : FT_KV_DEFAULT_BUDGET;
    }
    const ft_model_t *m = e->model;
    const ft_kv_pool_desc_t d = {m->n_layers, FT_KV_PAGE_TOKENS, m->prog->max_kv_width, m->kv_elem_bytes, budget};
    const ft_kv_mem_t mem = {ft_engine_kv_alloc, ft_engine_kv_free, e->mem};
    ft_status_t st = ft_kv_pool_create(&d, &mem, e->a, &e->kv_pool);
    if (!st)
        st = ft_kv_tree_create(e->kv_pool, budget / 4, e->a, &e->kv_tree);
    return ft_status_annotate(st, "engine: the KV page pool (kv_budget_bytes %llu)",
                              (unsigned long long)budget);
}

ft_status_t ft_exec_engine_open(const char *bundle_path, const ft_engine_options_t *opts,
                                ft_engine_t **out_engine)
{
    *out_engine = NULL;
    ft_engine_options_t defaults;
    if (!opts) {
        ft_engine_options_init(&defaults);
        opts = &defaults;
    }
    ft_engine_t *e = ft_mem_calloc(opts->allocator, 1, sizeof(*e));
    if (!e)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "engine: out of memory");
    if (opts->allocator) {
        e->alloc = *opts->allocator;
        e->a = &e->alloc;
    }
    if (pthread_mutex_init(&e->step_lock, NULL)) {
        ft_mem_free(opts->allocator, e);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "engine: cannot make its step lock");
    }
    ft_status_t st;
    if ((st = ft_bundle_open(bundle_path, &e->bundle)) ||
        (st = ft_blob_verify_create(e->bundle, opts->verify, e->a, &e->verify)) ||
        (st = ft_model_create(e->bundle, e->a, &e->model)) || (st = ft_engine_kernels(e, opts)) ||
        (st = ft_tokenizer_create(e->bundle->plan->tokenizer, e->bundle->plan_file->path, &e->tok)) ||
        (st = ft_threadpool_create(opts->n_threads, &e->pool)) ||
        (st = ft_engine_backend(e, opts)) || (st = ft_engine_kv(e, opts)))
        goto fail;
    if (ft_tokenizer_n_vocab(e->tok) > e->model->vocab_size) {
        st = ft_status_make(FT_STATUS_MISMATCH, "%s: the tokenizer has %u tokens, the model %u",
                            e->bundle->plan_file->path, ft_tokenizer_n_vocab(e->tok), e->model->vocab_size);
        goto fail;
    }
    ft_engine_fill_info(e);
    *out_engine = e;
    return FT_OK;
fail:
    ft_exec_engine_close(e);
    return st;
}

void ft_exec_engine_close(ft_engine_t *e)
{
    if (!e)
        return;
    const ft_allocator_t *a = e->a ? &e->alloc : NULL;
    if (e->dev) { /* it owns the offload state and unpins the weights */
        ft_dev_engine_destroy(e->dev);
        e->offload = NULL;
    }
    ft_work_free(e); /* from e->mem: the sim's device or the cpu one */
    ft_kv_tree_destroy(e->kv_tree); /* its pages first, then the pool's memory */
    ft_kv_pool_destroy(e->kv_pool);
    ft_offload_destroy(e->offload);
    if (e->sim.dev) {
        ft_dev_stream_destroy(e->sim.dev, e->sim.compute);
        ft_dev_stream_destroy(e->sim.dev, e->sim.copy);
        ft_dev_destroy(e->sim.dev);
    }
    ft_dev_destroy(e->cpu);
    ft_blob_verify_destroy(e->verify);
    ft_mem_free(a, e->routing);
    ft_threadpool_destroy(e->pool);
    ft_tokenizer_destroy(e->tok);
    ft_model_destroy(e->model, a);
    ft_cpu_module_free(e->kmod);
    ft_bundle_close(e->bundle);
    pthread_mutex_destroy(&e->step_lock);
    ft_allocator_t keep = e->alloc;
    ft_mem_free(e->a ? &keep : NULL, e);
}

ft_status_t ft_engine_verify_some(ft_engine_t *e, uint64_t max_bytes, uint64_t *out_left)
{
    uint64_t left = 0;
    ft_status_t st = e ? ft_blob_verify_pass(e->verify, max_bytes ? max_bytes : 1, &left) : FT_OK;
    if (out_left) *out_left = left;
    return st;
}

const ft_model_info_t *ft_engine_info(const ft_engine_t *e)
{
    return &e->info;
}

ft_status_t ft_engine_tokenize(const ft_engine_t *e, const char *text, size_t len, unsigned flags,
                               int32_t **out_ids, uint32_t *out_n)
{
    return ft_tokenizer_encode(e->tok, text, len, flags, out_ids, out_n);
}

ft_status_t ft_engine_token_bytes(const ft_engine_t *e, int32_t id, const char **out_bytes,
                                  uint32_t *out_len)
{
    return ft_tokenizer_token_bytes(e->tok, id, out_bytes, out_len);
}

ft_status_t ft_detokenizer_create(const ft_engine_t *e, ft_detokenizer_t **out_detok)
{
    if (!e) {
        if (out_detok) *out_detok = NULL;
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "detokenizer: no engine");
    }
    return ft_detokenizer_create_for(e->tok, out_detok);
}

int ft_engine_is_eog(const ft_engine_t *e, int32_t id)
{
    return ft_tokenizer_is_eog(e->tok, id);
}

ft_status_t ft_engine_chat_format(const ft_engine_t *e, const ft_chat_message_t *msgs, size_t n_msgs,
                                  int add_generation_prompt, char **out_text)
{
    ft_chat_format_t fmt = ft_chat_detect(e->tok);
    if (fmt == FT_CHAT_NONE)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: the model's chat template is not a format freetoken knows (ChatML)",
                              e->bundle->plan_file->path);
    return ft_chat_render(fmt, msgs, n_msgs, add_generation_prompt, out_text);
}

const char *ft_engine_chat_template(const ft_engine_t *e)
{
    return e ? ft_tokenizer_chat_template(e->tok) : NULL;
}

void ft_engine_free(const ft_engine_t *e, void *p)
{
    (void)e;
    free(p); /* tokenizer and chat results come from malloc */
}

/* The counters below change inside scheduler steps: read and reset them
 * under the step lock (mutable state of a const engine). */
static void ft_engine_lock(const ft_engine_t *e)
{
    pthread_mutex_lock((pthread_mutex_t *)&e->step_lock);
}

static void ft_engine_unlock(const ft_engine_t *e)
{
    pthread_mutex_unlock((pthread_mutex_t *)&e->step_lock);
}

static void ft_engine_stats_locked(const ft_engine_t *e, ft_engine_stats_t *out)
{
    memset(out, 0, sizeof(*out));
    ft_blob_verify_counts(e->verify, &out->blobs_checked, &out->blobs_damaged);
    out->verify_note = ft_blob_verify_note(e->verify);
    out->verify_damage = ft_blob_verify_damage(e->verify);
    out->expert_bytes_read = e->expert_bytes_read;
    out->sched_steps = e->sched_steps;
    if (e->kv_pool) {
        ft_kv_pool_stats_t ps;
        ft_kv_tree_stats_t ts;
        ft_kv_pool_stats(e->kv_pool, &ps);
        ft_kv_tree_stats(e->kv_tree, &ts);
        out->kv_page_tokens = ft_kv_pool_page_tokens(e->kv_pool);
        out->kv_page_bytes = ps.page_bytes;
        out->kv_budget_bytes = ps.budget_bytes;
        out->kv_bytes_allocated = ps.bytes_allocated;
        out->kv_pages_used = ps.pages_used;
        out->kv_pages_cached = ts.n_nodes;
        out->kv_anchors = ts.n_anchors;
        out->kv_evictions = ts.evicted_nodes + ts.evicted_anchors;
        out->kv_tokens_restored = e->kv_restored;
    }
    if (!e->offload)
        return;
    ft_offload_stats_t st;
    ft_offload_stats(e->offload, &st);
    const ft_plan_result_t *plan = ft_offload_plan(e->offload);
    out->predicted = e->dev == NULL; /* sim: modelled; cuda: measured */
    out->expert_hits = st.hits;
    out->expert_misses = st.misses;
    out->misses_to_gpu = st.misses_to_gpu;
    out->misses_to_cpu = st.misses_to_cpu;
    out->experts_streamed = st.streamed;
    out->bytes_copied = st.bytes_copied;
    out->n_tokens = st.n_tokens;
    out->n_steps = st.n_steps;
    out->device_seconds = st.modelled_seconds;
    out->order_violations = st.order_violations;
    out->n_slots = st.n_slots;
    out->vram_bytes = st.vram_bytes;
    out->predicted_decode_tok_s = plan->predicted_decode_tok_s;
    out->predicted_prefill_tok_s = plan->predicted_prefill_tok_s;
    out->prefill_stream_tokens = plan->stream_buffers ? plan->prefill_stream_tokens : UINT32_MAX;
    out->plan_stored = ft_offload_plan_stored(e->offload);
    out->plan_note = ft_offload_plan_note(e->offload);
}

static void ft_engine_reset_stats_locked(ft_engine_t *e)
{
    e->expert_bytes_read = 0;
    e->sched_steps = 0;
    e->kv_restored = 0;
    if (e->offload)
        ft_offload_reset_stats(e->offload);
}

FT_WARN_UNUSED static ft_status_t ft_engine_replan_locked(ft_engine_t *e, uint64_t vram_bytes)
{
    if (!e->offload)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "re-plan: the cpu backend keeps everything in host memory; nothing to move");
    return ft_offload_replan(e->offload, vram_bytes);
}

FT_WARN_UNUSED static ft_status_t ft_engine_count_routing_locked(ft_engine_t *e, int on)
{
    if (!on) {
        ft_mem_free(e->a, e->routing);
        e->routing = NULL;
        e->routing_tokens = 0;
        return FT_OK;
    }
    if (e->routing)
        return FT_OK;
    size_t n = (size_t)e->model->n_layers * e->model->max_experts;
    e->routing = ft_mem_calloc(e->a, n ? n : 1, sizeof(uint64_t));
    e->routing_tokens = 0;
    return e->routing ? FT_OK : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "routing counts: out of memory");
}

static uint64_t ft_engine_routing_counts_locked(const ft_engine_t *e, uint64_t *out, size_t n_counts)
{
    const ft_model_t *m = e->model;
    for (uint32_t l = 0; l < m->n_layers; l++)
        for (uint32_t x = 0; x < m->layers[l].n_experts; x++) {
            size_t i = (size_t)l * m->layers[l].n_experts + x;
            if (i < n_counts)
                out[i] = e->routing ? e->routing[(size_t)l * m->max_experts + x] : 0;
        }
    return e->routing_tokens;
}

void ft_engine_stats(const ft_engine_t *e, ft_engine_stats_t *out)
{
    ft_engine_lock(e);
    ft_engine_stats_locked(e, out);
    ft_engine_unlock(e);
}

void ft_engine_reset_stats(ft_engine_t *e)
{
    ft_engine_lock(e);
    ft_engine_reset_stats_locked(e);
    ft_engine_unlock(e);
}

ft_status_t ft_engine_replan(ft_engine_t *e, uint64_t vram_bytes)
{
    ft_engine_lock(e);
    ft_status_t st = ft_engine_replan_locked(e, vram_bytes);
    ft_engine_unlock(e);
    return st;
}

ft_status_t ft_engine_count_routing(ft_engine_t *e, int on)
{
    ft_engine_lock(e);
    ft_status_t st = ft_engine_count_routing_locked(e, on);
    ft_engine_unlock(e);
    return st;
}

uint64_t ft_engine_routing_counts(const ft_engine_t *e, uint64_t *out, size_t n_counts)
{
    ft_engine_lock(e);
    uint64_t n = ft_engine_routing_counts_locked(e, out, n_counts);
    ft_engine_unlock(e);
    return n;
}
