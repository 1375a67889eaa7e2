/* config.json -> flat metadata with dotted keys. */
#include "hf_internal.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Real configs nest 3 or 4 levels (text_config.rope_scaling.factor). */
#define FT_HF_CONFIG_MAX_DEPTH 16
/* Real configs have a few hundred keys; the bound keeps the metadata list
 * (linear lookups) from turning a hostile file into a quadratic hang. */
#define FT_HF_CONFIG_MAX_ENTRIES 16384

typedef struct ft_hf_flat {
    ft_meta_t *meta;
    const char *where;
} ft_hf_flat_t;

FT_WARN_UNUSED static ft_status_t ft_hf_flatten(ft_hf_flat_t *c, const char *key, const json_t *v, int depth);

/* "prefix.part" in a heap buffer; plain `part` at the top level. */
static char *ft_hf_join_key(const char *prefix, const char *part)
{
    size_t a = prefix ? strlen(prefix) : 0, b = strlen(part);
    char *k = malloc(a + 1 + b + 1);
    if (!k) return NULL;
    if (prefix) {
        memcpy(k, prefix, a);
        k[a++] = '.';
    }
    memcpy(k + a, part, b + 1);
    return k;
}

static int ft_hf_all_numbers(const json_t *arr)
{
    for (size_t i = 0; i < json_array_size(arr); i++)
        if (!json_is_number(json_array_get(arr, i))) return 0;
    return 1;
}

FT_WARN_UNUSED static ft_status_t ft_hf_flatten_array(ft_hf_flat_t *c, const char *key, const json_t *v, int depth)
{
    size_t n = json_array_size(v);
    if (ft_hf_all_numbers(v)) {
        double *vals = malloc((n ? n : 1) * sizeof(double));
        if (!vals)
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: key '%.200s': out of memory",
                                  c->where, key);
        for (size_t i = 0; i < n; i++)
            vals[i] = json_number_value(json_array_get(v, i));
        ft_status_t st = ft_meta_add_array(c->meta, key, vals, n);
        free(vals);
        return st;
    }
    for (size_t i = 0; i < n; i++) {
        char idx[24];
        snprintf(idx, sizeof(idx), "%zu", i);
        char *k = ft_hf_join_key(key, idx);
        if (!k) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", c->where);
        ft_status_t st = ft_hf_flatten(c, k, json_array_get(v, i), depth + 1);
        free(k);
        if (st) return st;
    }
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_hf_flatten_object(ft_hf_flat_t *c, const char *prefix, const json_t *v,
                                        int depth)
{
    const char *part;
    json_t *child;
    json_object_foreach((json_t *)v, part, child)
    {
        char *k = ft_hf_join_key(prefix, part);
        if (!k) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", c->where);
        ft_status_t st = ft_hf_flatten(c, k, child, depth + 1);
        free(k);
        if (st) return st;
    }
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_hf_flatten(ft_hf_flat_t *c, const char *key, const json_t *v, int depth)
{
    if (depth > FT_HF_CONFIG_MAX_DEPTH)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: key '%.200s' is nested deeper than %d levels", c->where, key,
                              FT_HF_CONFIG_MAX_DEPTH);
    if (json_is_object(v)) return ft_hf_flatten_object(c, key, v, depth);
    if (c->meta->n_entries >= FT_HF_CONFIG_MAX_ENTRIES)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: more than %d keys (at '%.200s')",
                              c->where, FT_HF_CONFIG_MAX_ENTRIES, key);
    switch (json_typeof(v)) {
    case JSON_ARRAY:
        return ft_hf_flatten_array(c, key, v, depth);
    case JSON_STRING:
        return ft_meta_add_string(c->meta, key, json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
        return ft_meta_add_int(c->meta, key, json_integer_value(v));
    case JSON_REAL:
        return ft_meta_add_float(c->meta, key, json_real_value(v));
    case JSON_TRUE:
        return ft_meta_add_bool(c->meta, key, 1);
    case JSON_FALSE:
        return ft_meta_add_bool(c->meta, key, 0);
    case JSON_NULL:
        return ft_meta_add_null(c->meta, key);
    default:
        break;
    }
    return ft_status_make(FT_STATUS_INTERNAL, "%s: key '%.200s': unexpected JSON type", c->where,
                          key);
}

ft_status_t ft_hf_config_parse(ft_meta_t *meta, const char *where, const char *json, uint64_t len)
{
    if (len > FT_HF_MAX_CONFIG_BYTES)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: %" PRIu64 " bytes exceeds the limit of %llu", where, len,
                              FT_HF_MAX_CONFIG_BYTES);
    json_error_t err;
    /* Strings may not hold NUL (no JSON_ALLOW_NUL), so every string is
     * valid, NUL-free UTF-8 as jansson checks. */
    json_t *root = json_loadb(json, (size_t)len, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return ft_status_make(FT_STATUS_FORMAT, "%s: JSON error at byte %d (line %d): %s", where,
                              err.position, err.line, err.text);
    ft_status_t st;
    if (!json_is_object(root)) {
        st = ft_status_make(FT_STATUS_FORMAT, "%s: top level is not a JSON object", where);
    } else {
        ft_hf_flat_t c = {meta, where};
        st = ft_hf_flatten_object(&c, NULL, root, 0);
    }
    json_decref(root);
    return st;
}
