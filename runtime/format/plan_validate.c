/* The semantic check of a plan (plan_validate.h): hyperparameters, blocks,
 * weight files and tokenizer here; tensors and expert blocks in
 * plan_validate_tensors.c; the profile, budget, partition and calibration
 * in plan_validate_partition.c. */
#include "plan_validate.h"

#include "plan_validate_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int ft_plan_enum_ok(const ProtobufCEnumDescriptor *desc, int value)
{
    return protobuf_c_enum_descriptor_get_value(desc, value) != NULL;
}

static int ft_plan_cmp_named(const void *a, const void *b)
{
    const ft_plan_named_t *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

ft_status_t ft_plan_check_unique(ft_plan_named_t *items, size_t n, const char *name,
                                 const char *what)
{
    if (n < 2)
        return FT_OK;
    qsort(items, n, sizeof(*items), ft_plan_cmp_named);
    for (size_t i = 1; i < n; i++)
        if (strcmp(items[i - 1].name, items[i].name) == 0)
            return ft_status_make(FT_STATUS_FORMAT, "%s: %s[%zu] and %s[%zu] are both named '%.*s'",
                                  name, what, items[i - 1].index, what, items[i].index,
                                  FT_PLAN_NAME_MAX, items[i].name);
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_plan_check_hparams(const Ftplan__Hparams *hp, const char *name)
{
    if (!hp)
        return ft_status_make(FT_STATUS_FORMAT, "%s: hparams: missing", name);
    if (!ft_plan_enum_ok(&ftplan__arch__descriptor, hp->arch) || hp->arch == FTPLAN__ARCH__ARCH_UNKNOWN)
        return ft_status_make(FT_STATUS_FORMAT, "%s: hparams.arch: unknown architecture %d", name,
                              (int)hp->arch);
    if (!ft_plan_enum_ok(&ftplan__norm_kind__descriptor, hp->norm))
        return ft_status_make(FT_STATUS_FORMAT, "%s: hparams.norm: unknown value %d", name,
                              (int)hp->norm);
    if (!ft_plan_enum_ok(&ftplan__rope_kind__descriptor, hp->rope))
        return ft_status_make(FT_STATUS_FORMAT, "%s: hparams.rope: unknown value %d", name,
                              (int)hp->rope);
    const struct {
        const char *field;
        uint32_t value, max;
    } counts[] = {
        {"n_layers", hp->n_layers, FT_PLAN_MAX_LAYERS},
        {"d_model", hp->d_model, FT_PLAN_MAX_D_MODEL},
        {"vocab_size", hp->vocab_size, FT_PLAN_MAX_VOCAB},
        {"context_length", hp->context_length, FT_PLAN_MAX_CONTEXT},
    };
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
        if (counts[i].value < 1 || counts[i].value > counts[i].max)
            return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: hparams.%s is %u, expected 1..%u",
                                  name, counts[i].field, counts[i].value, counts[i].max);
    if (!isfinite(hp->norm_eps) || hp->norm_eps <= 0.0f || hp->norm_eps >= 1.0f)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: hparams.norm_eps is %g, expected a value in (0, 1)", name,
                              (double)hp->norm_eps);
    if (hp->rope != FTPLAN__ROPE_KIND__ROPE_NONE) {
        if (!isfinite(hp->rope_theta) || hp->rope_theta <= 0.0f)
            return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                                  "%s: hparams.rope_theta is %g, expected a positive number", name,
                                  (double)hp->rope_theta);
        if (hp->rope_dim < 2 || hp->rope_dim % 2 || hp->rope_dim > FT_PLAN_MAX_HEAD_DIM)
            return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                                  "%s: hparams.rope_dim is %u, expected an even number 2..%u",
                                  name, hp->rope_dim, FT_PLAN_MAX_HEAD_DIM);
    }
    if (hp->active_params > hp->total_params)
        return ft_status_make(FT_STATUS_MISMATCH,
                              "%s: hparams.active_params (%llu) exceeds total_params (%llu)", name,
                              (unsigned long long)hp->active_params,
                              (unsigned long long)hp->total_params);
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_plan_check_attn(const Ftplan__Attention *a, uint32_t rope_dim, size_t i,
                                      const char *name)
{
    if (!a)
        return ft_status_make(FT_STATUS_FORMAT, "%s: blocks[%zu].attn: missing", name, i);
    if (!ft_plan_enum_ok(&ftplan__attn_kind__descriptor, a->kind))
        return ft_status_make(FT_STATUS_FORMAT, "%s: blocks[%zu].attn.kind: unknown value %d",
                              name, i, (int)a->kind);
    if (a->kind == FTPLAN__ATTN_KIND__ATTN_NONE)
        return FT_OK;
    if (a->n_heads < 1 || a->n_heads > FT_PLAN_MAX_HEADS || a->n_kv_heads < 1 ||
        a->n_kv_heads > a->n_heads || a->n_heads % a->n_kv_heads != 0)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: blocks[%zu].attn: n_heads %u and n_kv_heads %u, expected "
                              "1..%u heads in whole groups",
                              name, i, a->n_heads, a->n_kv_heads, FT_PLAN_MAX_HEADS);
    if (a->head_dim < 1 || a->head_dim > FT_PLAN_MAX_HEAD_DIM ||
        a->value_head_dim > FT_PLAN_MAX_HEAD_DIM)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: blocks[%zu].attn: head_dim %u, value_head_dim %u, expected "
                              "1..%u",
                              name, i, a->head_dim, a->value_head_dim, FT_PLAN_MAX_HEAD_DIM);
    if (rope_dim > a->head_dim)
        return ft_status_make(FT_STATUS_MISMATCH,
                              "%s: blocks[%zu].attn.head_dim %u is smaller than hparams.rope_dim "
                              "%u",
                              name, i, a->head_dim, rope_dim);
    if (a->kind == FTPLAN__ATTN_KIND__ATTN_MLA &&
        (a->nope_head_dim >= a->head_dim || a->kv_lora_rank < 1 || a->kv_lora_rank > FT_PLAN_MAX_HEAD_DIM ||
         a->q_lora_rank > FT_PLAN_MAX_HEAD_DIM))
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: blocks[%zu].attn: latent attention of head_dim %u, nope_head_dim %u, ranks %u "
                              "(kv) and %u (q), expected nope < head_dim and ranks up to %u",
                              name, i, a->head_dim, a->nope_head_dim, a->kv_lora_rank, a->q_lora_rank,
                              FT_PLAN_MAX_HEAD_DIM);
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_plan_check_moe(const Ftplan__Moe *m, size_t i, const char *name)
{
    if (!m)
        return ft_status_make(FT_STATUS_FORMAT, "%s: blocks[%zu].moe: missing on an MoE block",
                              name, i);
    if (!ft_plan_enum_ok(&ftplan__router_scoring__descriptor, m->scoring))
        return ft_status_make(FT_STATUS_FORMAT, "%s: blocks[%zu].moe.scoring: unknown value %d",
                              name, i, (int)m->scoring);
    if (m->n_experts < 1 || m->n_experts > FT_PLAN_MAX_EXPERTS || m->n_experts_used < 1 ||
        m->n_experts_used > m->n_experts)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: blocks[%zu].moe: n_experts %u, n_experts_used %u, expected "
                              "1 <= used <= experts <= %u",
                              name, i, m->n_experts, m->n_experts_used, FT_PLAN_MAX_EXPERTS);
    if (m->expert_ffn < 1 || m->expert_ffn > FT_PLAN_MAX_FFN ||
        (m->n_shared_experts > 0 && (m->shared_ffn < 1 || m->shared_ffn > FT_PLAN_MAX_FFN)))
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: blocks[%zu].moe: expert_ffn %u, shared_ffn %u, expected 1..%u",
                              name, i, m->expert_ffn, m->shared_ffn, FT_PLAN_MAX_FFN);
    if (!isfinite(m->routed_scaling) || m->routed_scaling < 0.0f)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: blocks[%zu].moe.routed_scaling is %g", name, i,
                              (double)m->routed_scaling);
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_plan_check_blocks(const Ftplan__Plan *plan, const char *name)
{
    const Ftplan__Hparams *hp = plan->hparams;
    if (plan->n_blocks != hp->n_layers)
        return ft_status_make(FT_STATUS_MISMATCH, "%s: blocks: %zu entries, hparams.n_layers is %u",
                              name, plan->n_blocks, hp->n_layers);
    uint32_t rope_dim = hp->rope == FTPLAN__ROPE_KIND__ROPE_NONE ? 0 : hp->rope_dim;
    for (size_t i = 0; i < plan->n_blocks; i++) {
        const Ftplan__Block *b = plan->blocks[i];
        if (!b)
            return ft_status_make(FT_STATUS_FORMAT, "%s: blocks[%zu]: missing", name, i);
        if (b->index != i)
            return ft_status_make(FT_STATUS_MISMATCH, "%s: blocks[%zu].index is %u", name, i,
                                  b->index);
        if (!ft_plan_enum_ok(&ftplan__activation__descriptor, b->act))
            return ft_status_make(FT_STATUS_FORMAT, "%s: blocks[%zu].act: unknown value %d", name,
                                  i, (int)b->act);
        ft_status_t st = ft_plan_check_attn(b->attn, rope_dim, i, name);
        if (!st && b->is_moe)
            st = ft_plan_check_moe(b->moe, i, name);
        if (!st && !b->is_moe && (b->dense_ffn < 1 || b->dense_ffn > FT_PLAN_MAX_FFN))
            st = ft_status_make(FT_STATUS_OUT_OF_RANGE,
                                "%s: blocks[%zu].dense_ffn is %u, expected 1..%u", name, i,
                                b->dense_ffn, FT_PLAN_MAX_FFN);
        if (st)
            return st;
    }
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_plan_check_file_name(const char *fname, size_t i, const char *name)
{
    if (!fname || !*fname)
        return ft_status_make(FT_STATUS_FORMAT, "%s: weight_files[%zu].name is empty", name, i);
    size_t n = strlen(fname);
    /* Names are joined to the bundle directory: a separator or a parent
     * reference would let a plan reach any file on the machine. */
    if (n > 255 || strchr(fname, '/') || strchr(fname, '\\') || strcmp(fname, ".") == 0 ||
        strstr(fname, ".."))
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: weight_files[%zu].name '%.*s' is not a plain file name (no "
                              "'/', no '..', at most 255 bytes)",
                              name, i, FT_PLAN_NAME_MAX, fname);
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_plan_check_weight_files(const Ftplan__Plan *plan, const char *name)
{
    for (size_t i = 0; i < plan->n_weight_files; i++) {
        const Ftplan__WeightFile *wf = plan->weight_files[i];
        if (!wf)
            return ft_status_make(FT_STATUS_FORMAT, "%s: weight_files[%zu]: missing", name, i);
        ft_status_t st = ft_plan_check_file_name(wf->name, i, name);
        if (st)
            return st;
        if (wf->size < FT_FTW_HEADER_BYTES || wf->size % FT_FTW_ALIGN)
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: weight_files[%zu] '%s': size %llu is not a whole number "
                                  "(>= 1) of %u-byte pages",
                                  name, i, wf->name, (unsigned long long)wf->size, FT_FTW_ALIGN);
        if (wf->content_hash.len != 16)
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: weight_files[%zu] '%s': content_hash is %zu bytes, "
                                  "expected 16",
                                  name, i, wf->name, wf->content_hash.len);
    }
    ft_plan_named_t *items = calloc(plan->n_weight_files ? plan->n_weight_files : 1,
                                    sizeof(*items));
    if (!items)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", name);
    for (size_t i = 0; i < plan->n_weight_files; i++)
        items[i] = (ft_plan_named_t){plan->weight_files[i]->name, i};
    ft_status_t st = ft_plan_check_unique(items, plan->n_weight_files, name, "weight_files");
    free(items);
    return st;
}

FT_WARN_UNUSED static ft_status_t ft_plan_check_tokenizer(const Ftplan__Plan *plan, const char *name)
{
    const Ftplan__Tokenizer *tok = plan->tokenizer;
    if (!tok)
        return ft_status_make(FT_STATUS_FORMAT, "%s: tokenizer: missing", name);
    size_t n = tok->n_tokens;
    if (n < 1 || n > plan->hparams->vocab_size)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: tokenizer.tokens: %zu tokens, expected 1..vocab_size (%u)",
                              name, n, plan->hparams->vocab_size);
    if (tok->token_types.len != n)
        return ft_status_make(FT_STATUS_MISMATCH,
                              "%s: tokenizer.token_types: %zu bytes for %zu tokens", name,
                              tok->token_types.len, n);
    for (size_t i = 0; i < n; i++) {
        uint8_t t = tok->token_types.data[i];
        if (t < 1 || t > 6)
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: tokenizer.token_types[%zu] is %u, expected 1..6", name, i,
                                  t);
    }
    const struct {
        const char *field;
        int32_t id;
    } ids[] = {{"bos_id", tok->bos_id}, {"eos_id", tok->eos_id},
               {"pad_id", tok->pad_id}, {"unk_id", tok->unk_id}};
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
        if (ids[i].id < -1 || (ids[i].id >= 0 && (size_t)ids[i].id >= n))
            return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                                  "%s: tokenizer.%s is %d, expected -1 or a token id below %zu",
                                  name, ids[i].field, (int)ids[i].id, n);
    return FT_OK;
}

/* The KV cache's element type: f32 or f16, or absent (an older plan: f32). */
FT_WARN_UNUSED static ft_status_t ft_plan_check_kv_format(const Ftplan__Plan *plan, const char *name)
{
    const int f = (int)plan->kv_format;
    if (f == FTPLAN__WEIGHT_FORMAT__WF_INVALID || f == FTPLAN__WEIGHT_FORMAT__WF_F32 ||
        f == FTPLAN__WEIGHT_FORMAT__WF_F16)
        return FT_OK;
    return ft_status_make(FT_STATUS_FORMAT, "%s: kv_format is %d, expected WF_F32 or WF_F16", name, f);
}

ft_status_t ft_plan_validate(const Ftplan__Plan *plan, const char *name)
{
    if (!name)
        name = "plan";
    if (!plan)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "%s: no plan", name);
    if (plan->schema_version == 0)
        return ft_status_make(FT_STATUS_FORMAT, "%s: schema_version is missing (0)", name);
    if (plan->schema_version > FT_PLAN_SCHEMA_VERSION)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: plan schema version %u is newer than this freetoken (%u)", name,
                              plan->schema_version, FT_PLAN_SCHEMA_VERSION);
    ft_status_t st = ft_plan_check_hparams(plan->hparams, name);
    if (!st)
        st = ft_plan_check_blocks(plan, name);
    if (!st)
        st = ft_plan_check_weight_files(plan, name);
    if (!st)
        st = ft_plan_check_tensors(plan, name);
    if (!st)
        st = ft_plan_check_expert_blocks(plan, name);
    if (!st)
        st = ft_plan_check_tokenizer(plan, name);
    if (!st)
        st = ft_plan_check_kv_format(plan, name);
    if (!st)
        st = ft_plan_check_partition(plan, name);
    if (!st)
        st = ft_plan_check_calibration(plan, name);
    if (!st)
        st = ft_plan_check_kernels(plan, name);
    if (!st)
        st = ft_plan_check_schedule(plan, name);
    return st;
}
