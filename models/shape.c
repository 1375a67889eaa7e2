/* Model shapes: family dispatch, key lookup, checked accumulation. */
#include "shape_internal.h"

#include "../runtime/base/checked.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const ft_meta_entry_t *ft_shape_find(const ft_shape_ctx_t *c, const char *key)
{
    char full[160];
    int n = snprintf(full, sizeof(full), "%s%s", c->prefix, key);
    if (n < 0 || (size_t)n >= sizeof(full)) return NULL;
    return ft_meta_find(c->meta, full);
}

ft_status_t ft_shape_u32(ft_shape_ctx_t *c, const char *key, uint32_t min, uint32_t max,
                         uint32_t *out)
{
    char full[160];
    snprintf(full, sizeof(full), "%s%s", c->prefix, key);
    return ft_meta_require_u32(c->meta, c->where, full, min, max, out);
}

ft_status_t ft_shape_u32_opt(ft_shape_ctx_t *c, const char *key, uint32_t min, uint32_t max,
                             uint32_t *out)
{
    const ft_meta_entry_t *e = ft_shape_find(c, key);
    if (!e || e->type == FT_META_NULL) return FT_OK;
    return ft_shape_u32(c, key, min, max, out);
}

void ft_shape_bool_opt(const ft_shape_ctx_t *c, const char *key, int *out)
{
    char full[160];
    snprintf(full, sizeof(full), "%s%s", c->prefix, key);
    ft_meta_get_bool(c->meta, full, out);
}

const char *ft_shape_layer_type(const ft_shape_ctx_t *c, uint32_t l)
{
    char key[48];
    snprintf(key, sizeof(key), "layer_types.%u", l);
    const ft_meta_entry_t *e = ft_shape_find(c, key);
    return e && e->type == FT_META_STRING ? e->s : NULL;
}

uint64_t ft_shape_mul(ft_shape_ctx_t *c, uint64_t a, uint64_t b)
{
    uint64_t r;
    if (!ft_mul_u64(a, b, &r)) {
        c->overflow = 1;
        return 0;
    }
    return r;
}

uint64_t ft_shape_mul3(ft_shape_ctx_t *c, uint64_t a, uint64_t b, uint64_t d)
{
    return ft_shape_mul(c, ft_shape_mul(c, a, b), d);
}

uint64_t ft_shape_add(ft_shape_ctx_t *c, uint64_t a, uint64_t b)
{
    uint64_t r;
    if (!ft_add_u64(a, b, &r)) {
        c->overflow = 1;
        return 0;
    }
    return r;
}

uint64_t ft_shape_matrix_bytes(ft_shape_ctx_t *c, ft_dtype_t fmt, uint64_t rows, uint64_t cols)
{
    uint64_t row;
    /* Rows a block format cannot hold fall back as llama.cpp's quantizer
     * does: q8_0 (32-element blocks), else f16. */
    if (!ft_dtype_row_bytes(fmt, cols, &row) && !ft_dtype_row_bytes(FT_DTYPE_Q8_0, cols, &row) &&
        !ft_dtype_row_bytes(FT_DTYPE_F16, cols, &row)) {
        c->overflow = 1;
        return 0;
    }
    return ft_shape_mul(c, rows, row);
}

static void ft_shape_put(ft_shape_ctx_t *c, uint64_t *bytes, uint64_t *params, uint64_t b,
                         uint64_t p)
{
    *bytes = ft_shape_add(c, *bytes, b);
    *params = ft_shape_add(c, *params, p);
}

void ft_shape_dense(ft_shape_ctx_t *c, ft_plan_layer_t *l, uint64_t rows, uint64_t cols)
{
    ft_shape_put(c, &l->dense_bytes, &l->dense_params,
                 ft_shape_matrix_bytes(c, c->dense_fmt, rows, cols), ft_shape_mul(c, rows, cols));
}

void ft_shape_vec(ft_shape_ctx_t *c, ft_plan_layer_t *l, uint64_t n)
{
    ft_shape_put(c, &l->dense_bytes, &l->dense_params, ft_shape_mul(c, n, 4), n);
}

void ft_shape_expert_matrix(ft_shape_ctx_t *c, ft_plan_layer_t *l, uint64_t rows, uint64_t cols)
{
    ft_shape_put(c, &l->expert_bytes, &l->expert_params,
                 ft_shape_matrix_bytes(c, c->expert_fmt, rows, cols), ft_shape_mul(c, rows, cols));
}

void ft_shape_expert_bias(ft_shape_ctx_t *c, ft_plan_layer_t *l, uint64_t n)
{
    ft_shape_put(c, &l->expert_bytes, &l->expert_params, ft_shape_mul(c, n, 2), n);
}

void ft_shape_dense_ffn(ft_shape_ctx_t *c, ft_plan_layer_t *l, uint64_t d, uint64_t ffn)
{
    ft_shape_dense(c, l, ffn, d); /* gate */
    ft_shape_dense(c, l, ffn, d); /* up */
    ft_shape_dense(c, l, d, ffn); /* down */
}

ft_status_t ft_shape_alloc(const char *arch, uint32_t n_layers, uint32_t d_model, uint32_t vocab,
                           ft_plan_model_t **out)
{
    size_t arch_len = strlen(arch) + 1;
    /* n_layers is bounded by FT_SHAPE_MAX_LAYERS, so this cannot overflow. */
    size_t n = sizeof(ft_plan_model_t) + (size_t)n_layers * sizeof(ft_plan_layer_t) + arch_len;
    ft_plan_model_t *m = calloc(1, n);
    if (!m)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "model shape: out of memory (%zu bytes)", n);
    m->layers = (ft_plan_layer_t *)(m + 1);
    char *a = (char *)(m->layers + n_layers);
    memcpy(a, arch, arch_len);
    m->arch = a;
    m->n_layers = n_layers;
    m->d_model = d_model;
    m->vocab_size = vocab;
    *out = m;
    return FT_OK;
}

void ft_shape_embeddings(ft_shape_ctx_t *c, ft_plan_model_t *m, int tied)
{
    uint64_t b = ft_shape_matrix_bytes(c, c->dense_fmt, m->vocab_size, m->d_model);
    m->output_bytes = b;
    m->embed_bytes = tied ? 0 : b;
    m->expert_format = c->expert_fmt;
}

ft_status_t ft_shape_finish(ft_shape_ctx_t *c, ft_plan_model_t *m)
{
    /* The totals (ft_model_shape_totals) must not overflow either. */
    uint64_t all = ft_shape_add(c, m->embed_bytes, m->output_bytes), kv = 0, state = 0;
    uint64_t params = ft_shape_mul3(c, 2, m->vocab_size, m->d_model);
    for (uint32_t i = 0; i < m->n_layers; i++) {
        const ft_plan_layer_t *l = &m->layers[i];
        all = ft_shape_add(
            c, all,
            ft_shape_add(c, l->dense_bytes, ft_shape_mul(c, l->n_experts, l->expert_bytes)));
        params = ft_shape_add(
            c, params,
            ft_shape_add(c, l->dense_params, ft_shape_mul(c, l->n_experts, l->expert_params)));
        kv = ft_shape_add(c, kv, l->kv_bytes_per_token);
        state = ft_shape_add(c, state, l->state_bytes);
    }
    (void)all, (void)params, (void)kv, (void)state; /* computed for the overflow flag only */
    if (!c->overflow) return FT_OK;
    return ft_status_make(
        FT_STATUS_OUT_OF_RANGE,
        "%s: the model's sizes overflow 64-bit byte counts (%u layers, d_model %u)", c->where,
        m->n_layers, m->d_model);
}

void ft_model_shape_free(ft_plan_model_t *shape)
{
    free(shape);
}

void ft_model_shape_totals(const ft_plan_model_t *s, ft_shape_totals_t *out)
{
    memset(out, 0, sizeof(*out));
    uint64_t vd = (uint64_t)s->vocab_size * s->d_model;
    int tied = s->embed_bytes == 0;
    out->params = tied ? vd : 2 * vd;
    out->active_params = vd + s->d_model; /* the head + one embedding row */
    out->weight_bytes = s->embed_bytes + s->output_bytes;
    out->active_bytes = s->output_bytes + (s->vocab_size ? s->output_bytes / s->vocab_size : 0);
    for (uint32_t i = 0; i < s->n_layers; i++) {
        const ft_plan_layer_t *l = &s->layers[i];
        uint64_t n_e = l->is_moe ? l->n_experts : 0, n_u = l->is_moe ? l->n_used : 0;
        out->weight_bytes += l->dense_bytes + n_e * l->expert_bytes;
        out->active_bytes += l->dense_bytes + n_u * l->expert_bytes;
        out->params += l->dense_params + n_e * l->expert_params;
        out->active_params += l->dense_params + n_u * l->expert_params;
        out->kv_bytes_per_token += l->kv_bytes_per_token;
        out->state_bytes += l->state_bytes;
    }
}

/* The HF family name: architectures.0, else model_type, at the top level
 * or under text_config (multimodal wrappers). */
static const char *ft_shape_hf_family(const ft_meta_t *meta)
{
    static const char *const keys[] = {"architectures.0", "model_type", "text_config.model_type"};
    static const struct {
        const char *name, *family;
    } map[] = {
        {"Qwen3MoeForCausalLM", "qwen3moe"},
        {"qwen3_moe", "qwen3moe"},
        {"Qwen3NextForCausalLM", "qwen3next"},
        {"qwen3_next", "qwen3next"},
        {"Qwen3_5MoeForConditionalGeneration", "qwen3next"},
        {"Qwen3_5MoeForCausalLM", "qwen3next"},
        {"qwen3_5_moe", "qwen3next"},
        {"qwen3_5_moe_text", "qwen3next"},
        {"GptOssForCausalLM", "gpt-oss"},
        {"gpt_oss", "gpt-oss"},
        {"DeepseekV3ForCausalLM", "deepseek3"},
        {"deepseek_v3", "deepseek3"},
        {"DeepseekV4ForCausalLM", "deepseek4"},
        {"deepseek_v4", "deepseek4"},
    };
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        const char *v = ft_meta_get_string(meta, keys[k]);
        if (!v) continue;
        for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
            if (strcmp(v, map[i].name) == 0) return map[i].family;
    }
    return NULL;
}

FT_WARN_UNUSED static ft_status_t ft_shape_check_formats(const char *where, ft_dtype_t e, ft_dtype_t d)
{
    if (!ft_dtype_info(e) || !ft_dtype_info(d))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "%s: invalid weight format (experts %d, dense %d)", where, (int)e,
                              (int)d);
    return FT_OK;
}

ft_status_t ft_model_shape(const ft_meta_t *meta, const char *where, int from_gguf,
                           ft_dtype_t expert_format, ft_dtype_t dense_format, ft_plan_model_t **out)
{
    *out = NULL;
    ft_status_t st = ft_shape_check_formats(where, expert_format, dense_format);
    if (st) return st;
    ft_shape_ctx_t c = {meta, where, "", expert_format, dense_format, 0};
    if (from_gguf) {
        const char *arch = ft_meta_get_string(meta, "general.architecture");
        if (!arch)
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: required key 'general.architecture' is missing", where);
        if (strcmp(arch, "qwen3moe") != 0)
            return ft_status_make(
                FT_STATUS_UNSUPPORTED,
                "%s: GGUF architecture '%.64s' has no shape model (supported: qwen3moe; "
                "plan other families from their config.json)",
                where, arch);
        c.prefix = "qwen3moe.";
        return ft_shape_qwen3moe(&c, 1, out);
    }
    const char *family = ft_shape_hf_family(meta);
    if (!family) {
        const char *a = ft_meta_get_string(meta, "architectures.0");
        const char *t = ft_meta_get_string(meta, "model_type");
        return ft_status_make(
            FT_STATUS_UNSUPPORTED,
            "%s: unsupported model (architectures[0] '%.64s', model_type '%.64s'); "
            "supported: Qwen3-MoE, Qwen3-Next/3.5/3.6 MoE, gpt-oss, DeepSeek-V3, DeepSeek-V4",
            where, a ? a : "(none)", t ? t : "(none)");
    }
    /* Multimodal wrappers keep the language model under text_config. */
    if (ft_meta_find(meta, "text_config.num_hidden_layers")) c.prefix = "text_config.";
    if (strcmp(family, "qwen3moe") == 0) return ft_shape_qwen3moe(&c, 0, out);
    if (strcmp(family, "qwen3next") == 0) return ft_shape_qwen3next(&c, out);
    if (strcmp(family, "gpt-oss") == 0) return ft_shape_gptoss(&c, out);
    if (strcmp(family, "deepseek3") == 0) return ft_shape_deepseek3(&c, out);
    return ft_shape_deepseek4(&c, out);
}
