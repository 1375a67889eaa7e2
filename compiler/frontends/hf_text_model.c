/* Multimodal HF checkpoints whose language model is a text model wrapped
 * (Qwen3_5MoeForConditionalGeneration, as Qwen3.5 and Qwen3.6 MoE are
 * released): config.json keeps the text model's keys under text_config.*
 * and the weights keep its tensors under model.language_model.*, beside
 * the vision tower's (model.visual.*). freetoken runs the text model:
 * text_config's keys are lifted to the top level (replacing a top-level
 * key of the same name, but for architectures and model_type, which
 * name the checkpoint) and model.language_model.X is renamed model.X; the
 * vision tower stays for the family's importer to skip. */
#include "hf_internal.h"

#include <stdio.h>
#include <string.h>

#define FT_HF_TEXT_KEY "text_config."
#define FT_HF_TEXT_TENSOR "model.language_model."

static int ft_hf_is_identity_key(const char *k)
{
    return strncmp(k, "architectures", 13) == 0 || strcmp(k, "model_type") == 0;
}

FT_WARN_UNUSED static ft_status_t ft_hf_lift(ft_meta_t *meta, const ft_meta_entry_t *e, const char *key)
{
    switch (e->type) {
    case FT_META_INT: return ft_meta_add_int(meta, key, e->i);
    case FT_META_FLOAT: return ft_meta_add_float(meta, key, e->f);
    case FT_META_BOOL: return ft_meta_add_bool(meta, key, e->b);
    case FT_META_STRING: return ft_meta_add_string(meta, key, e->s, e->len);
    case FT_META_ARRAY: return ft_meta_add_array(meta, key, e->arr, e->len);
    case FT_META_NULL: return ft_meta_add_null(meta, key);
    }
    return FT_OK;
}

ft_status_t ft_hf_unwrap_text_model(ft_src_model_t *src)
{
    const size_t pt = sizeof(FT_HF_TEXT_TENSOR) - 1, pk = sizeof(FT_HF_TEXT_KEY) - 1;
    int wrapped = 0;
    for (uint32_t i = 0; i < src->n_tensors && !wrapped; i++)
        wrapped = strncmp(src->tensors[i].name, FT_HF_TEXT_TENSOR, pt) == 0;
    if (!wrapped || !ft_meta_find(&src->meta, FT_HF_TEXT_KEY "num_hidden_layers")) return FT_OK;
    const uint32_t n = src->meta.n_entries; /* the entries as read: lifting adds more */
    for (uint32_t i = 0; i < n; i++) {
        const ft_meta_entry_t e = src->meta.entries[i]; /* a copy: adding may move the array */
        if (strncmp(e.key, FT_HF_TEXT_KEY, pk) != 0 || ft_hf_is_identity_key(e.key + pk)) continue;
        ft_status_t st = ft_hf_lift(&src->meta, &e, e.key + pk);
        if (st) return ft_status_annotate(st, "%s: config.json", src->path);
    }
    for (uint32_t i = 0; i < src->n_tensors; i++) {
        ft_src_tensor_t *t = &src->tensors[i];
        if (strncmp(t->name, FT_HF_TEXT_TENSOR, pt) != 0) continue;
        char name[512];
        if (snprintf(name, sizeof(name), "model.%s", t->name + pt) >= (int)sizeof(name))
            return ft_status_make(FT_STATUS_FORMAT, "%s: tensor name '%.200s...' is too long",
                                  src->path, t->name);
        if (!(t->name = ft_arena_strdup(src->arena, name)))
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", src->path);
    }
    return FT_OK;
}
