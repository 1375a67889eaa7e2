#include "plan_build.h"

#include "compile.h"

#include "../runtime/format/plan_validate.h"

#include <string.h>

/* A protobuf-c message in the arena, initialized from its _INIT value. */
#define FT_NEW(arena, type, init) ((type *)ft_pb_clone((arena), &(type)init, sizeof(type)))

static void *ft_pb_clone(ft_arena_t *a, const void *init, size_t n_bytes)
{
    void *p = ft_arena_alloc(a, n_bytes);
    if (p)
        memcpy(p, init, n_bytes);
    return p;
}

static Ftplan__Hparams *ft_pb_hparams(const ft_ir_model_t *m, ft_arena_t *a)
{
    Ftplan__Hparams *h = FT_NEW(a, Ftplan__Hparams, FTPLAN__HPARAMS__INIT);
    if (!h)
        return NULL;
    const ft_ir_hparams_t *hp = &m->hp;
    h->arch = (Ftplan__Arch)hp->arch;
    h->arch_name = (char *)(hp->arch_name ? hp->arch_name : "");
    h->n_layers = hp->n_layers;
    h->d_model = hp->d_model;
    h->vocab_size = hp->vocab_size;
    h->context_length = hp->context_length;
    h->norm_eps = hp->norm_eps;
    h->norm = (Ftplan__NormKind)hp->norm;
    h->rope = (Ftplan__RopeKind)hp->rope;
    h->rope_theta = hp->rope_theta;
    h->rope_dim = hp->rope_dim;
    h->tie_embeddings = hp->tie_embeddings;
    ft_ir_param_counts(m, &h->total_params, &h->active_params);
    return h;
}

static Ftplan__Block *ft_pb_block(const ft_ir_block_t *b, uint32_t index, ft_arena_t *a)
{
    Ftplan__Block *pb = FT_NEW(a, Ftplan__Block, FTPLAN__BLOCK__INIT);
    Ftplan__Attention *at = FT_NEW(a, Ftplan__Attention, FTPLAN__ATTENTION__INIT);
    Ftplan__Moe *mo = FT_NEW(a, Ftplan__Moe, FTPLAN__MOE__INIT);
    if (!pb || !at || !mo)
        return NULL;
    at->kind = (Ftplan__AttnKind)b->attn.kind;
    at->n_heads = b->attn.n_heads;
    at->n_kv_heads = b->attn.n_kv_heads;
    at->head_dim = b->attn.head_dim;
    at->value_head_dim = b->attn.value_head_dim;
    at->qk_norm = b->attn.qk_norm;
    at->qk_norm_full = b->attn.qk_norm_full;
    at->q_lora_rank = b->attn.q_lora_rank;
    at->kv_lora_rank = b->attn.kv_lora_rank;
    at->nope_head_dim = b->attn.nope_head_dim;
    at->sliding_window = b->attn.sliding_window;
    at->has_sinks = b->attn.has_sinks;
    at->has_bias = b->attn.has_bias;
    at->has_out_gate = b->attn.has_out_gate;
    at->conv_kernel = b->attn.conv_kernel;
    at->heads_tiled = b->attn.heads_tiled;
    mo->n_experts = b->moe.n_experts;
    mo->n_experts_used = b->moe.n_experts_used;
    mo->expert_ffn = b->moe.expert_ffn;
    mo->n_shared_experts = b->moe.n_shared_experts;
    mo->shared_ffn = b->moe.shared_ffn;
    mo->scoring = (Ftplan__RouterScoring)b->moe.scoring;
    mo->norm_topk_prob = b->moe.norm_topk_prob;
    mo->has_router_bias = b->moe.has_router_bias;
    mo->routed_scaling = b->moe.routed_scaling;
    mo->shared_gate = b->moe.shared_gate;
    pb->index = index;
    pb->attn = at;
    pb->is_moe = b->is_moe;
    pb->moe = b->is_moe ? mo : NULL;
    pb->dense_ffn = b->dense_ffn;
    pb->act = (Ftplan__Activation)b->act;
    return pb;
}

static Ftplan__Tensor *ft_pb_tensor(const ft_ir_tensor_t *t, const ft_placement_t *pl, ft_arena_t *a)
{
    Ftplan__Tensor *pt = FT_NEW(a, Ftplan__Tensor, FTPLAN__TENSOR__INIT);
    uint64_t *shape = ft_arena_array(a, t->n_dims, sizeof(uint64_t));
    if (!pt || !shape)
        return NULL;
    memcpy(shape, t->shape, t->n_dims * sizeof(uint64_t));
    pt->name = (char *)t->name;
    pt->role = (Ftplan__TensorRole)t->role;
    pt->layer = t->layer;
    pt->format = (Ftplan__WeightFormat)pl->dtype;
    pt->n_shape = t->n_dims;
    pt->shape = shape;
    pt->file = 0;
    pt->offset = pl->offset;
    pt->size = pl->size;
    pt->expert_stride = pl->expert_stride;
    pt->layout = pl->layout;
    return pt;
}

static Ftplan__Tokenizer *ft_pb_tokenizer(const ft_ir_tokenizer_t *tok, ft_arena_t *a)
{
    Ftplan__Tokenizer *pt = FT_NEW(a, Ftplan__Tokenizer, FTPLAN__TOKENIZER__INIT);
    ProtobufCBinaryData *tokens = ft_arena_array(a, tok->n_tokens, sizeof(ProtobufCBinaryData));
    if (!pt || !tokens)
        return NULL;
    for (uint32_t i = 0; i < tok->n_tokens; i++) {
        tokens[i].len = tok->token_lens[i];
        tokens[i].data = (uint8_t *)tok->tokens[i];
    }
    pt->model = (char *)(tok->model ? tok->model : "");
    pt->pre = (char *)(tok->pre ? tok->pre : "");
    pt->normalizer = (char *)(tok->normalizer ? tok->normalizer : "");
    pt->n_tokens = tok->n_tokens;
    pt->tokens = tokens;
    pt->token_types.len = tok->n_tokens;
    pt->token_types.data = (uint8_t *)tok->token_types;
    pt->n_merges = tok->n_merges;
    pt->merges = (char **)tok->merges;
    pt->bos_id = tok->bos_id;
    pt->eos_id = tok->eos_id;
    pt->pad_id = tok->pad_id;
    pt->unk_id = tok->unk_id;
    pt->add_bos = tok->add_bos;
    pt->chat_template = (char *)(tok->chat_template ? tok->chat_template : "");
    return pt;
}

ft_status_t ft_plan_build(const ft_ir_model_t *m, const ft_packed_weights_t *pw, ft_dtype_t kv_format,
                          ft_arena_t *a, Ftplan__Plan **out_plan)
{
    *out_plan = NULL;
    if (kv_format != FT_DTYPE_F16 && kv_format != FT_DTYPE_F32)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "plan: kv_format %s: the KV cache is f16 or f32",
                              ft_dtype_name(kv_format));
    Ftplan__Plan *plan = FT_NEW(a, Ftplan__Plan, FTPLAN__PLAN__INIT);
    Ftplan__Source *src = FT_NEW(a, Ftplan__Source, FTPLAN__SOURCE__INIT);
    Ftplan__WeightFile *wf = FT_NEW(a, Ftplan__WeightFile, FTPLAN__WEIGHT_FILE__INIT);
    Ftplan__WeightFile **wfs = ft_arena_array(a, 1, sizeof(*wfs));
    uint8_t *hash = ft_arena_alloc(a, 16);
    Ftplan__Block **blocks = ft_arena_array(a, m->hp.n_layers, sizeof(*blocks));
    Ftplan__Tensor **tensors = ft_arena_array(a, m->n_tensors, sizeof(*tensors));
    Ftplan__ExpertBlock **ebs = ft_arena_array(a, pw->n_expert_layouts, sizeof(*ebs));
    if (!plan || !src || !wf || !wfs || !hash || !blocks || !tensors || !ebs)
        goto oom;
    plan->schema_version = FT_PLAN_SCHEMA_VERSION;
    plan->producer = "ftc " FT_PRODUCER_VERSION;
    /* every backend stores either (cpu, sim, cuda) */
    plan->kv_format = kv_format == FT_DTYPE_F16 ? FTPLAN__WEIGHT_FORMAT__WF_F16 : FTPLAN__WEIGHT_FORMAT__WF_F32;
    src->format = (char *)m->source_format;
    src->name = (char *)m->source_name;
    plan->source = src;
    if (!(plan->hparams = ft_pb_hparams(m, a)))
        goto oom;
    for (uint32_t l = 0; l < m->hp.n_layers; l++)
        if (!(blocks[l] = ft_pb_block(&m->blocks[l], l, a)))
            goto oom;
    plan->n_blocks = m->hp.n_layers;
    plan->blocks = blocks;
    for (uint32_t i = 0; i < m->n_tensors; i++)
        if (!(tensors[i] = ft_pb_tensor(&m->tensors[i], &pw->placements[i], a)))
            goto oom;
    plan->n_tensors = m->n_tensors;
    plan->tensors = tensors;
    for (uint32_t i = 0; i < pw->n_expert_layouts; i++) {
        Ftplan__ExpertBlock *eb = FT_NEW(a, Ftplan__ExpertBlock, FTPLAN__EXPERT_BLOCK__INIT);
        if (!eb)
            goto oom;
        eb->layer = pw->experts[i].layer;
        eb->file = 0;
        eb->offset = pw->experts[i].offset;
        eb->stride = pw->experts[i].stride;
        eb->n_experts = pw->experts[i].n_experts;
        ebs[i] = eb;
    }
    plan->n_expert_blocks = pw->n_expert_layouts;
    plan->expert_blocks = ebs;
    memcpy(hash, pw->hash, 16);
    wf->name = FT_BUNDLE_WEIGHTS_NAME;
    wf->size = pw->file_size;
    wf->content_hash.len = 16;
    wf->content_hash.data = hash;
    wfs[0] = wf;
    plan->n_weight_files = 1;
    plan->weight_files = wfs;
    if (!(plan->tokenizer = ft_pb_tokenizer(&m->tok, a)))
        goto oom;
    ft_status_t st = ft_plan_add_schedule(m, plan, a);
    if (st)
        return st;
    *out_plan = plan;
    return FT_OK;
oom:
    return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory building the plan", m->source_name);
}

void ft_plan_set_weights(Ftplan__Plan *plan, const ft_packed_weights_t *pw)
{
    Ftplan__WeightFile *wf = plan->weight_files[0];
    wf->size = pw->file_size;
    memcpy(wf->content_hash.data, pw->hash, 16);
}
