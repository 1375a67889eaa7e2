/* GGUF frontend: a parsed GGUF file -> ft_src_model_t. Metadata scalars
 * and numeric arrays go to src->meta under their GGUF keys, tensors to
 * src->tensors with row-major shapes and absolute offsets, tokenizer.*
 * to src->tok (gguf_tokenizer.c). */
#include "gguf.h"

#include "gguf_cursor.h"
#include "../../runtime/base/mapped_file.h"

#include <stdlib.h>
#include <string.h>

/* tokenizer.ggml.* arrays (tokens, scores, token_type, merges) are large
 * and belong to the tokenizer only. */
static int ft_gguf_is_tokenizer_array(const char *key)
{
    return strncmp(key, "tokenizer.ggml.", 15) == 0;
}

FT_WARN_UNUSED static ft_status_t ft_gguf_meta_array(const ft_gguf_t *g, const ft_gguf_kv_t *kv, ft_meta_t *meta)
{
    const ft_gguf_value_t *v = &kv->value;
    if (v->elem_type == FT_GGUF_STRING || v->elem_type == FT_GGUF_ARRAY ||
        ft_gguf_is_tokenizer_array(kv->key))
        return FT_OK;
    /* n is bounded by the file size (at least one byte per element). */
    double *tmp = malloc((v->n ? v->n : 1) * sizeof(double));
    if (!tmp)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY,
                              "%s: metadata '%s' (at byte %llu): out of memory for %llu elements",
                              g->name, kv->key, (unsigned long long)kv->offset,
                              (unsigned long long)v->n);
    for (uint64_t k = 0; k < v->n; k++)
        ft_gguf_array_f64(v, k, &tmp[k]);
    ft_status_t st = ft_meta_add_array(meta, kv->key, tmp, v->n);
    free(tmp);
    return st;
}

FT_WARN_UNUSED static ft_status_t ft_gguf_meta_one(const ft_gguf_t *g, const ft_gguf_kv_t *kv, ft_meta_t *meta)
{
    const ft_gguf_value_t *v = &kv->value;
    switch (v->type) {
    case FT_GGUF_UINT8:
    case FT_GGUF_UINT16:
    case FT_GGUF_UINT32:
    case FT_GGUF_UINT64:
        /* ft_meta keeps signed 64-bit ints: larger unsigned values become
         * doubles, as ir/meta.h documents. */
        if (v->u > (uint64_t)INT64_MAX) return ft_meta_add_float(meta, kv->key, (double)v->u);
        return ft_meta_add_int(meta, kv->key, (int64_t)v->u);
    case FT_GGUF_INT8:
    case FT_GGUF_INT16:
    case FT_GGUF_INT32:
    case FT_GGUF_INT64:
        return ft_meta_add_int(meta, kv->key, v->i);
    case FT_GGUF_FLOAT32:
    case FT_GGUF_FLOAT64:
        return ft_meta_add_float(meta, kv->key, v->f);
    case FT_GGUF_BOOL:
        return ft_meta_add_bool(meta, kv->key, (int)v->u);
    case FT_GGUF_STRING:
        return ft_meta_add_string(meta, kv->key, v->str.s, v->str.len);
    case FT_GGUF_ARRAY:
        return ft_gguf_meta_array(g, kv, meta);
    default:
        return ft_status_make(FT_STATUS_INTERNAL, "%s: metadata '%s': value type %d", g->name,
                              kv->key, (int)v->type);
    }
}

FT_WARN_UNUSED static ft_status_t ft_gguf_tensors_fill(const ft_gguf_t *g, ft_src_model_t *src)
{
    /* n_tensors <= FT_GGUF_MAX_TENSORS, so it fits the uint32 count. */
    src->tensors =
        ft_arena_array(src->arena, g->n_tensors ? g->n_tensors : 1, sizeof(*src->tensors));
    if (!src->tensors)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory for %llu tensors",
                              g->name, (unsigned long long)g->n_tensors);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const ft_gguf_tensor_t *t = &g->tensors[i];
        ft_src_tensor_t *s = &src->tensors[i];
        s->name = ft_arena_strdup(src->arena, t->name);
        if (!s->name) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", g->name);
        s->dtype = t->dtype;
        s->n_dims = t->n_dims;
        for (uint32_t d = 0; d < t->n_dims; d++)
            s->shape[d] = t->ne[t->n_dims - 1 - d];
        s->file = 0;
        s->offset = g->data_start + t->offset; /* checked by the parser */
        s->n_bytes = t->n_bytes;
        src->n_tensors = (uint32_t)(i + 1);
    }
    return FT_OK;
}

ft_status_t ft_gguf_to_source(const ft_gguf_t *g, ft_src_model_t *src)
{
    src->files = ft_arena_array(src->arena, 1, sizeof(*src->files));
    if (!src->files || !(src->files[0].path = ft_arena_strdup(src->arena, g->name)))
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", g->name);
    src->files[0].size = g->size;
    src->n_files = 1;
    ft_status_t st = FT_OK;
    for (uint64_t i = 0; i < g->n_kv && !st; i++)
        st = ft_gguf_meta_one(g, &g->kvs[i], &src->meta);
    if (!st) st = ft_gguf_tensors_fill(g, src);
    if (!st) st = ft_gguf_tokenizer_fill(g, src);
    return st;
}

ft_status_t ft_gguf_import(const char *path, ft_src_model_t **out_src)
{
    *out_src = NULL;
    ft_mapped_file_t *file = NULL;
    ft_gguf_t *g = NULL;
    ft_src_model_t *src = NULL;
    ft_status_t st = ft_mapped_file_open(path, &file);
    if (st) return st;
    st = ft_gguf_parse(file->data, file->size, path, &g);
    if (!st) st = ft_src_model_create(FT_SRC_GGUF, path, &src);
    if (!st) st = ft_gguf_to_source(g, src);
    ft_gguf_free(g);
    ft_mapped_file_close(file);
    if (st) {
        ft_src_model_destroy(src);
        return st;
    }
    *out_src = src;
    return FT_OK;
}
