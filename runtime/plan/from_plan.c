/* The planner's model description and its stored partition, from a plan
 * (from_plan.h). */
#include "from_plan.h"

#include "../base/alloc.h"
#include "../base/checked.h"
#include "../format/plan_validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(FT_PLAN_MAX_QSTAR_BUCKETS == FT_PLAN_MAX_BUCKETS, "a plan's q* table must fit ft_plan_result_t");

ft_dtype_t ft_plan_kv_dtype(const Ftplan__Plan *plan)
{
    return plan->kv_format == FTPLAN__WEIGHT_FORMAT__WF_F16 ? FT_DTYPE_F16 : FT_DTYPE_F32;
}

static int ft_fp_is_expert(Ftplan__TensorRole r)
{
    return r == FTPLAN__TENSOR_ROLE__ROLE_FFN_GATE_EXPS || r == FTPLAN__TENSOR_ROLE__ROLE_FFN_UP_EXPS ||
           r == FTPLAN__TENSOR_ROLE__ROLE_FFN_DOWN_EXPS;
}

/* Elements of one matrix of t: an expert stack's [n, rows, cols] counts one
 * expert's rows * cols. 0 on overflow (then *ok = 0). */
static uint64_t ft_fp_elems(const Ftplan__Tensor *t, int *ok)
{
    uint64_t n = 1;
    for (size_t d = ft_fp_is_expert(t->role) ? 1 : 0; d < t->n_shape; d++)
        if (!ft_mul_u64(n, t->shape[d], &n))
            *ok = 0;
    return n;
}

/* One block's shape from the block message: experts, KV per token. */
FT_WARN_UNUSED static ft_status_t ft_fp_block(const Ftplan__Plan *plan, uint32_t l, const char *name,
                                              uint64_t kv_elem, ft_plan_layer_t *L)
{
    const Ftplan__Block *b = plan->blocks[l];
    L->is_moe = b->is_moe;
    if (b->is_moe) {
        L->n_experts = b->moe->n_experts;
        L->n_used = b->moe->n_experts_used;
        for (size_t i = 0; i < plan->n_expert_blocks; i++)
            if (plan->expert_blocks[i]->layer == l)
                L->expert_bytes = plan->expert_blocks[i]->stride;
        if (!L->expert_bytes)
            return ft_status_make(FT_STATUS_UNSUPPORTED,
                                  "%s: block %u has no FTW expert block to size its experts by "
                                  "(recompile the bundle)",
                                  name, l);
    }
    const Ftplan__Attention *a = b->attn;
    if (!a || a->kind == FTPLAN__ATTN_KIND__ATTN_NONE)
        return FT_OK;
    if (a->kind == FTPLAN__ATTN_KIND__ATTN_GATED_DELTANET) {
        /* No KV: a fixed state per sequence, the conv's last conv_kernel - 1
         * inputs of its (2 n_kv_heads + n_heads) heads and S per value head,
         * f32 (runtime/exec/op_deltanet.c); bounded by the validator. */
        const uint64_t hd = a->head_dim, ch = (2ull * a->n_kv_heads + a->n_heads) * hd;
        const uint64_t k = a->conv_kernel ? a->conv_kernel - 1 : 0;
        L->state_bytes = (k * ch + (uint64_t)a->n_heads * hd * hd) * 4;
        return FT_OK;
    }
    if (a->kind == FTPLAN__ATTN_KIND__ATTN_MLA) {
        /* the compressed row [c | k_rope] per position (runtime/exec/op_mla.c),
         * k_rope the head's part beside nope_head_dim; bounded by the validator */
        if (a->nope_head_dim >= a->head_dim || !a->kv_lora_rank)
            return ft_status_make(FT_STATUS_FORMAT, "%s: block %u: latent attention of head_dim %u, nope %u, "
                                  "kv_lora_rank %u", name, l, a->head_dim, a->nope_head_dim, a->kv_lora_rank);
        L->kv_bytes_per_token = ((uint64_t)a->kv_lora_rank + a->head_dim - a->nope_head_dim) * kv_elem;
        return FT_OK;
    }
    if (a->kind != FTPLAN__ATTN_KIND__ATTN_GQA)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: block %u: no KV size rule for attention kind %d",
                              name, l, (int)a->kind);
    const uint64_t dims = (uint64_t)a->head_dim + (a->value_head_dim ? a->value_head_dim : a->head_dim);
    uint64_t per_tok; /* bounded by the validator: cannot overflow */
    if (!ft_mul_u64((uint64_t)a->n_kv_heads * dims, kv_elem, &per_tok) ||
        (a->sliding_window && !ft_mul_u64(per_tok, a->sliding_window, &L->state_bytes)))
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: block %u: KV bytes overflow", name, l);
    if (!a->sliding_window)
        L->kv_bytes_per_token = per_tok;
    return FT_OK;
}

/* Adds tensor t to its layer, or to the embedding / output head. */
static void ft_fp_tensor(const Ftplan__Tensor *t, ft_plan_model_t *m, uint64_t *embed, uint64_t *output,
                         int *ok)
{
    const uint32_t n = m->n_layers;
    if (t->role == FTPLAN__TENSOR_ROLE__ROLE_TOKEN_EMBD) {
        *embed = t->size;
        return;
    }
    if (t->role == FTPLAN__TENSOR_ROLE__ROLE_OUTPUT) {
        *output = t->size;
        return;
    }
    /* Global tensors other than those: the output norm, counted with the
     * last layer as models/shape.c does. */
    ft_plan_layer_t *L = t->layer >= 0 && (uint32_t)t->layer < n ? &m->layers[t->layer] : &m->layers[n - 1];
    const uint64_t elems = ft_fp_elems(t, ok);
    if (ft_fp_is_expert(t->role)) {
        *ok = *ok && ft_add_u64(L->expert_params, elems, &L->expert_params);
        const int part = t->role == FTPLAN__TENSOR_ROLE__ROLE_FFN_GATE_EXPS ? 0
                         : t->role == FTPLAN__TENSOR_ROLE__ROLE_FFN_UP_EXPS ? 1 : 2;
        L->expert_part_format[part] = (ft_dtype_t)t->format;
        L->expert_part_bytes[part] = t->size; /* one expert's slice */
        if (m->expert_format == FT_DTYPE_INVALID)
            m->expert_format = (ft_dtype_t)t->format;
        return;
    }
    if (t->role == FTPLAN__TENSOR_ROLE__ROLE_ATTN_Q && m->dense_format == FT_DTYPE_INVALID)
        m->dense_format = (ft_dtype_t)t->format;
    *ok = *ok && ft_add_u64(L->dense_bytes, t->size, &L->dense_bytes) &&
          ft_add_u64(L->dense_params, elems, &L->dense_params);
}

ft_status_t ft_plan_model_from_plan(const Ftplan__Plan *plan, const char *name, const ft_allocator_t *alloc,
                                    ft_plan_model_t **out)
{
    *out = NULL;
    const uint32_t n = plan->hparams->n_layers; /* validated: 1..FT_PLAN_MAX_LAYERS, = n_blocks */
    const Ftplan__Calibration *cal = plan->calibration;
    const size_t n_pop = cal && cal->n_tokens ? cal->n_counts : 0;
    const char *arch = plan->hparams->arch_name ? plan->hparams->arch_name : "";
    const size_t arch_len = strlen(arch) + 1;
    /* One block: the model, its layers, the popularity, the arch name. */
    const size_t bytes = sizeof(ft_plan_model_t) + (size_t)n * sizeof(ft_plan_layer_t) + n_pop * sizeof(float) + arch_len;
    ft_plan_model_t *m = ft_mem_calloc(alloc, 1, bytes);
    if (!m)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: planner model: out of memory (%zu bytes)", name, bytes);
    m->layers = (ft_plan_layer_t *)(m + 1);
    float *pop = (float *)(m->layers + n);
    char *a = (char *)(pop + n_pop);
    memcpy(a, arch, arch_len);
    m->arch = a;
    m->n_layers = n;
    m->d_model = plan->hparams->d_model;
    m->vocab_size = plan->hparams->vocab_size;
    ft_status_t st = FT_OK;
    if (n_pop && n_pop != (size_t)n * cal->n_experts)
        st = ft_status_make(FT_STATUS_MISMATCH, "%s: calibration.counts: %zu values for %u layers x %u experts",
                            name, n_pop, n, cal->n_experts);
    const uint64_t kv_elem = ft_plan_kv_dtype(plan) == FT_DTYPE_F16 ? 2 : 4;
    for (uint32_t l = 0; l < n && !st; l++) {
        st = ft_fp_block(plan, l, name, kv_elem, &m->layers[l]);
        if (!st && n_pop && m->layers[l].n_experts > cal->n_experts)
            st = ft_status_make(FT_STATUS_MISMATCH, "%s: calibration.n_experts is %u, block %u has %u experts",
                                name, cal->n_experts, l, m->layers[l].n_experts);
    }
    uint64_t embed = 0, output = 0;
    int ok = 1;
    for (size_t i = 0; i < plan->n_tensors && !st; i++)
        ft_fp_tensor(plan->tensors[i], m, &embed, &output, &ok);
    if (!st && !ok)
        st = ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: planner model: tensor sizes overflow 64 bits", name);
    if (st) {
        ft_mem_free(alloc, m);
        return st;
    }
    /* A tied head reads the embedding: count it once, as the output. */
    m->output_bytes = output ? output : embed;
    m->embed_bytes = output ? embed : 0;
    if (n_pop) {
        for (size_t i = 0; i < n_pop; i++)
            pop[i] = (float)((double)cal->counts[i] / (double)cal->n_tokens);
        m->popularity = pop;
        m->popularity_stride = cal->n_experts;
    }
    *out = m;
    return FT_OK;
}

void ft_plan_model_free(ft_plan_model_t *m, const ft_allocator_t *alloc)
{
    ft_mem_free(alloc, m);
}

void ft_plan_budget_from_plan(const Ftplan__Plan *plan, ft_plan_budget_t *out)
{
    memset(out, 0, sizeof(*out));
    const Ftplan__Budget *b = plan->budget;
    if (!b)
        return;
    out->vram_bytes = b->vram_bytes;
    out->ram_bytes = b->ram_bytes;
    out->ctx = b->ctx;
    out->batch = b->batch;
}

/* n values copied into a new malloc'ed array (NULL for n = 0). */
static void *ft_fp_dup(const void *src, size_t n, size_t elem, int *oom)
{
    if (!n)
        return NULL;
    void *p = malloc(n * elem); /* n <= 4096 x 8 or the validated pinned count */
    if (!p)
        *oom = 1;
    else
        memcpy(p, src, n * elem);
    return p;
}

static void ft_fp_regions(const Ftplan__Partition *p, ft_plan_result_t *r)
{
    r->vram_dense = p->vram_dense;
    r->vram_pinned = p->vram_pinned;
    r->vram_slots = p->vram_slots;
    r->vram_kv = p->vram_kv;
    r->vram_stream = p->vram_stream;
    r->vram_scratch = p->vram_scratch;
    r->vram_used = p->vram_used;
    r->slot_bytes = p->slot_bytes;
    r->n_slots = p->n_slots;
    r->n_pinned = p->n_pinned;
    r->expert_id_stride = p->expert_id_stride;
    r->stream_buffers = p->stream_buffers;
    r->n_gpu_layers = p->n_gpu_layers;
    r->output_on_gpu = p->output_on_gpu;
    r->cpu_only = p->cpu_only;
    r->unified = p->unified;
    r->ram_needed = p->ram_needed;
    r->ram_weights = p->ram_weights;
    r->prefill_stream_tokens = p->prefill_stream_tokens;
    r->predicted_decode_tok_s = p->predicted_decode_tok_s;
    r->predicted_prefill_tok_s = p->predicted_prefill_tok_s;
    r->bottleneck = (ft_bottleneck_t)p->bottleneck;
    r->copy_bytes_per_token = p->copy_bytes_per_token;
    for (size_t i = 0; i < p->n_decode_s && i < 4; i++)
        r->decode_s[i] = p->decode_s[i];
}

ft_status_t ft_plan_result_from_plan(const Ftplan__Plan *plan, const char *name, ft_plan_result_t *out)
{
    memset(out, 0, sizeof(*out));
    const Ftplan__Partition *p = plan->partition;
    if (!p || !plan->budget)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "%s: no stored partition (compiled without --hw)", name);
    out->fits = 1;
    ft_fp_regions(p, out);
    out->vram_budget = plan->budget->vram_bytes;
    out->ram_budget = plan->budget->ram_bytes;
    snprintf(out->note, sizeof(out->note), "%s", p->note ? p->note : "");
    /* The validator bounds the buckets by FT_PLAN_MAX_QSTAR_BUCKETS (= FT_PLAN_MAX_BUCKETS)
     * and sizes qstar and hit_rate by the layers. */
    out->n_buckets = (uint32_t)p->n_bucket_tokens;
    memcpy(out->bucket_tokens, p->bucket_tokens, p->n_bucket_tokens * sizeof(uint32_t));
    int oom = 0;
    out->qstar = ft_fp_dup(p->qstar, p->n_qstar, sizeof(float), &oom);
    out->hit_rate = ft_fp_dup(p->hit_rate, p->n_hit_rate, sizeof(float), &oom);
    out->pinned = ft_fp_dup(p->pinned_ids, p->n_pinned_ids, sizeof(uint32_t), &oom);
    if (oom) {
        ft_plan_result_release(out);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: partition: out of memory", name);
    }
    return FT_OK;
}
