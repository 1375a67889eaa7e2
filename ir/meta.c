#include "meta.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ft_meta_init(ft_meta_t *meta, ft_arena_t *arena)
{
    memset(meta, 0, sizeof(*meta));
    meta->arena = arena;
}

void ft_meta_release(ft_meta_t *meta)
{
    free(meta->entries);
    free(meta->index);
    meta->entries = NULL;
    meta->index = NULL;
    meta->n_entries = meta->cap_entries = meta->index_cap = 0;
}

static uint32_t ft_meta_hash(const char *key)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *key; key++)
        h = (h ^ (unsigned char)*key) * 16777619u;
    return h;
}

/* The index slot holding `key`, or the empty slot where it would go. */
static uint32_t ft_meta_probe(const ft_meta_t *meta, const char *key)
{
    uint32_t mask = meta->index_cap - 1, h = ft_meta_hash(key) & mask;
    while (meta->index[h] && strcmp(meta->entries[meta->index[h] - 1].key, key) != 0)
        h = (h + 1) & mask;
    return h;
}

FT_WARN_UNUSED static ft_status_t ft_meta_grow(ft_meta_t *meta)
{
    if (meta->cap_entries >= (1u << 28))
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "too many metadata keys");
    uint32_t cap = meta->cap_entries ? meta->cap_entries * 2 : 32;
    ft_meta_entry_t *e = realloc(meta->entries, (size_t)cap * sizeof(*e));
    if (!e)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "metadata: out of memory");
    meta->entries = e;
    meta->cap_entries = cap;
    uint32_t *index = calloc((size_t)cap * 2, sizeof(*index));
    if (!index)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "metadata: out of memory");
    free(meta->index);
    meta->index = index;
    meta->index_cap = cap * 2;
    for (uint32_t i = 0; i < meta->n_entries; i++)
        meta->index[ft_meta_probe(meta, meta->entries[i].key)] = i + 1;
    return FT_OK;
}

static ft_meta_entry_t *ft_meta_slot(ft_meta_t *meta, const char *key, ft_status_t *out_status)
{
    *out_status = FT_OK;
    if (meta->index_cap) {
        uint32_t h = ft_meta_probe(meta, key);
        if (meta->index[h]) { /* replace the earlier value */
            ft_meta_entry_t *e = &meta->entries[meta->index[h] - 1];
            const char *k = e->key;
            memset(e, 0, sizeof(*e));
            e->key = k;
            return e;
        }
    }
    if (meta->n_entries == meta->cap_entries && (*out_status = ft_meta_grow(meta)))
        return NULL;
    ft_meta_entry_t *e = &meta->entries[meta->n_entries];
    memset(e, 0, sizeof(*e));
    e->key = ft_arena_strdup(meta->arena, key);
    if (!e->key) {
        *out_status = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "metadata key '%s': out of memory", key);
        return NULL;
    }
    meta->n_entries++;
    meta->index[ft_meta_probe(meta, key)] = meta->n_entries;
    return e;
}

#define FT_META_ADD(meta, key, e, st)         \
    ft_status_t st;                           \
    ft_meta_entry_t *e = ft_meta_slot(meta, key, &st); \
    if (!e)                                   \
        return st;

ft_status_t ft_meta_add_int(ft_meta_t *meta, const char *key, int64_t v)
{
    FT_META_ADD(meta, key, e, st);
    e->type = FT_META_INT;
    e->i = v;
    return FT_OK;
}

ft_status_t ft_meta_add_float(ft_meta_t *meta, const char *key, double v)
{
    FT_META_ADD(meta, key, e, st);
    e->type = FT_META_FLOAT;
    e->f = v;
    return FT_OK;
}

ft_status_t ft_meta_add_bool(ft_meta_t *meta, const char *key, int v)
{
    FT_META_ADD(meta, key, e, st);
    e->type = FT_META_BOOL;
    e->b = v ? 1 : 0;
    return FT_OK;
}

ft_status_t ft_meta_add_null(ft_meta_t *meta, const char *key)
{
    FT_META_ADD(meta, key, e, st);
    e->type = FT_META_NULL;
    return FT_OK;
}

ft_status_t ft_meta_add_string(ft_meta_t *meta, const char *key, const char *s, uint64_t len)
{
    FT_META_ADD(meta, key, e, st);
    e->type = FT_META_STRING;
    e->s = ft_arena_strndup(meta->arena, s, (size_t)len);
    e->len = len;
    if (!e->s)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "metadata '%s': out of memory", key);
    return FT_OK;
}

ft_status_t ft_meta_add_array(ft_meta_t *meta, const char *key, const double *v, uint64_t n)
{
    FT_META_ADD(meta, key, e, st);
    e->type = FT_META_ARRAY;
    double *copy = ft_arena_array(meta->arena, n, sizeof(double));
    if (!copy)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "metadata '%s': %llu elements: out of memory",
                              key, (unsigned long long)n);
    if (n)
        memcpy(copy, v, (size_t)n * sizeof(double));
    e->arr = copy;
    e->len = n;
    return FT_OK;
}

const ft_meta_entry_t *ft_meta_find(const ft_meta_t *meta, const char *key)
{
    if (!meta->index_cap)
        return NULL;
    uint32_t h = ft_meta_probe(meta, key);
    return meta->index[h] ? &meta->entries[meta->index[h] - 1] : NULL;
}

int ft_meta_get_i64(const ft_meta_t *meta, const char *key, int64_t *out)
{
    const ft_meta_entry_t *e = ft_meta_find(meta, key);
    if (!e)
        return 0;
    if (e->type == FT_META_INT) {
        *out = e->i;
        return 1;
    }
    if (e->type == FT_META_FLOAT && isfinite(e->f) && floor(e->f) == e->f &&
        fabs(e->f) < 9.0e18) {
        *out = (int64_t)e->f;
        return 1;
    }
    return 0;
}

int ft_meta_get_f64(const ft_meta_t *meta, const char *key, double *out)
{
    const ft_meta_entry_t *e = ft_meta_find(meta, key);
    if (!e)
        return 0;
    if (e->type == FT_META_FLOAT) {
        *out = e->f;
        return 1;
    }
    if (e->type == FT_META_INT) {
        *out = (double)e->i;
        return 1;
    }
    return 0;
}

int ft_meta_get_bool(const ft_meta_t *meta, const char *key, int *out)
{
    const ft_meta_entry_t *e = ft_meta_find(meta, key);
    if (!e)
        return 0;
    if (e->type == FT_META_BOOL) {
        *out = e->b;
        return 1;
    }
    if (e->type == FT_META_INT && (e->i == 0 || e->i == 1)) {
        *out = (int)e->i;
        return 1;
    }
    return 0;
}

const char *ft_meta_get_string(const ft_meta_t *meta, const char *key)
{
    const ft_meta_entry_t *e = ft_meta_find(meta, key);
    return e && e->type == FT_META_STRING ? e->s : NULL;
}

ft_status_t ft_meta_require_u32(const ft_meta_t *meta, const char *where, const char *key,
                                uint32_t min, uint32_t max, uint32_t *out)
{
    const ft_meta_entry_t *e = ft_meta_find(meta, key);
    if (!e)
        return ft_status_make(FT_STATUS_FORMAT, "%s: required key '%s' is missing", where, key);
    int64_t v;
    if (!ft_meta_get_i64(meta, key, &v))
        return ft_status_make(FT_STATUS_FORMAT, "%s: key '%s' must be an integer", where, key);
    if (v < (int64_t)min || v > (int64_t)max)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: key '%s' = %lld is outside the supported range [%u, %u]", where,
                              key, (long long)v, min, max);
    *out = (uint32_t)v;
    return FT_OK;
}
