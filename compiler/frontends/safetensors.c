/* safetensors header validation. Every number in the header is hostile:
 * counts and sizes are checked against the bytes actually present before
 * anything is derived from them. */
#include "safetensors.h"

#include "../../runtime/base/checked.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tensor names are printed truncated so one hostile name cannot make an
 * error message megabytes long. */
#define FT_ST_NAME_FMT "'%.200s'"

typedef struct ft_st_ctx {
    const char *name; /* file name for messages */
    ft_st_file_t *file;
} ft_st_ctx_t;

/* "[a, b, c]" into buf (at most FT_MAX_DIMS dims, so 128 bytes suffice). */
static const char *ft_st_shape_str(const uint64_t *shape, uint32_t n_dims, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (uint32_t d = 0; d < n_dims && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%" PRIu64, d ? ", " : "", shape[d]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}

/* A JSON integer in [0, INT64_MAX]; 0 when the value is anything else. */
static int ft_st_get_u64(const json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0) return 0;
    *out = (uint64_t)json_integer_value(v);
    return 1;
}

FT_WARN_UNUSED static ft_status_t ft_st_parse_shape(const ft_st_ctx_t *c, const char *tname, const json_t *shape,
                                     ft_st_tensor_t *t, uint64_t *out_elems)
{
    if (!json_is_array(shape))
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: tensor " FT_ST_NAME_FMT
                              ": field 'shape' is missing or not an array",
                              c->name, tname);
    size_t n_dims = json_array_size(shape);
    if (n_dims > FT_MAX_DIMS)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: tensor " FT_ST_NAME_FMT
                              ": field 'shape' has %zu dims; at most %d "
                              "are supported",
                              c->name, tname, n_dims, FT_MAX_DIMS);
    uint64_t elems = 1; /* a scalar (shape []) holds one element */
    for (size_t d = 0; d < n_dims; d++) {
        if (!ft_st_get_u64(json_array_get(shape, d), &t->shape[d]))
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: tensor " FT_ST_NAME_FMT ": field 'shape' entry %zu is not a "
                                  "non-negative integer",
                                  c->name, tname, d);
        if (!ft_mul_u64(elems, t->shape[d], &elems)) {
            char buf[128];
            return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                                  "%s: tensor " FT_ST_NAME_FMT ": field 'shape' %s: the element "
                                  "count overflows 64 bits",
                                  c->name, tname,
                                  ft_st_shape_str(t->shape, (uint32_t)n_dims, buf, sizeof(buf)));
        }
    }
    t->n_dims = (uint32_t)n_dims;
    *out_elems = elems;
    return FT_OK;
}

/* Fills t with offsets relative to the data section (t->offset = begin);
 * ft_st_check_layout makes them absolute once all tensors are known. */
FT_WARN_UNUSED static ft_status_t ft_st_parse_tensor(const ft_st_ctx_t *c, const char *tname, const json_t *v,
                                      ft_st_tensor_t *t)
{
    if (!json_is_object(v))
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: tensor " FT_ST_NAME_FMT ": entry is not an object", c->name,
                              tname);
    const char *dt = json_string_value(json_object_get(v, "dtype"));
    if (!dt)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: tensor " FT_ST_NAME_FMT
                              ": field 'dtype' is missing or not a string",
                              c->name, tname);
    t->dtype = ft_dtype_from_safetensors(dt);
    if (t->dtype == FT_DTYPE_INVALID)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: tensor " FT_ST_NAME_FMT ": field 'dtype' = '%.40s' is not a "
                              "supported safetensors dtype (F64 F32 F16 BF16 I64 I32 I16 I8 U64 "
                              "U32 U16 U8 BOOL F8_E4M3 F8_E5M2)",
                              c->name, tname, dt);
    uint64_t elems = 0, need = 0;
    ft_status_t st = ft_st_parse_shape(c, tname, json_object_get(v, "shape"), t, &elems);
    if (st) return st;
    char buf[128];
    if (!ft_dtype_row_bytes(t->dtype, elems, &need))
        return ft_status_make(
            FT_STATUS_OUT_OF_RANGE,
            "%s: tensor " FT_ST_NAME_FMT ": shape %s of %s: the byte size overflows "
            "64 bits",
            c->name, tname, ft_st_shape_str(t->shape, t->n_dims, buf, sizeof(buf)), dt);
    const json_t *offs = json_object_get(v, "data_offsets");
    uint64_t begin, end;
    if (!json_is_array(offs) || json_array_size(offs) != 2 ||
        !ft_st_get_u64(json_array_get(offs, 0), &begin) ||
        !ft_st_get_u64(json_array_get(offs, 1), &end))
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: tensor " FT_ST_NAME_FMT ": field 'data_offsets' must be two "
                              "non-negative integers [begin, end]",
                              c->name, tname);
    const ft_st_file_t *f = c->file;
    if (begin > end)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: tensor " FT_ST_NAME_FMT ": field 'data_offsets' [%" PRIu64
                              ", %" PRIu64 "] is reversed (begin > end)",
                              c->name, tname, begin, end);
    if (end > f->data_bytes)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: tensor " FT_ST_NAME_FMT ": field 'data_offsets' [%" PRIu64
                              ", %" PRIu64 "] lies past the end of the data section (%" PRIu64
                              " bytes from file byte %" PRIu64 ")",
                              c->name, tname, begin, end, f->data_bytes, f->data_offset);
    if (end - begin != need)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: tensor " FT_ST_NAME_FMT ": field 'data_offsets' [%" PRIu64
                              ", %" PRIu64 "] spans %" PRIu64 " bytes (file byte %" PRIu64
                              ") but %s %s needs %" PRIu64,
                              c->name, tname, begin, end, end - begin, f->data_offset + begin, dt,
                              ft_st_shape_str(t->shape, t->n_dims, buf, sizeof(buf)), need);
    t->offset = begin;
    t->n_bytes = need;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_st_parse_metadata(const ft_st_ctx_t *c, const json_t *v)
{
    ft_st_file_t *f = c->file;
    if (!json_is_object(v))
        return ft_status_make(FT_STATUS_FORMAT, "%s: field '__metadata__' is not an object",
                              c->name);
    f->meta = ft_arena_array(f->arena, json_object_size(v), sizeof(*f->meta));
    if (!f->meta && json_object_size(v))
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: '__metadata__': out of memory",
                              c->name);
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)v, key, val)
    {
        if (!json_is_string(val))
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: field '__metadata__' key '%.200s' is not a string", c->name,
                                  key);
        ft_st_meta_kv_t *kv = &f->meta[f->n_meta];
        kv->key = ft_arena_strdup(f->arena, key);
        kv->value = ft_arena_strdup(f->arena, json_string_value(val));
        if (!kv->key || !kv->value)
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: '__metadata__': out of memory",
                                  c->name);
        f->n_meta++;
    }
    return FT_OK;
}

static int ft_st_cmp_tensor(const void *a, const void *b)
{
    const ft_st_tensor_t *x = a, *y = b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    if (x->n_bytes != y->n_bytes) return x->n_bytes < y->n_bytes ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int ft_st_cmp_meta(const void *a, const void *b)
{
    return strcmp(((const ft_st_meta_kv_t *)a)->key, ((const ft_st_meta_kv_t *)b)->key);
}

/* Sorts by offset, rejects overlapping byte ranges (empty tensors overlap
 * nothing) and makes the offsets absolute. */
FT_WARN_UNUSED static ft_status_t ft_st_check_layout(const ft_st_ctx_t *c)
{
    ft_st_file_t *f = c->file;
    if (f->n_tensors > 1) qsort(f->tensors, f->n_tensors, sizeof(*f->tensors), ft_st_cmp_tensor);
    if (f->n_meta > 1) qsort(f->meta, f->n_meta, sizeof(*f->meta), ft_st_cmp_meta);
    const ft_st_tensor_t *prev = NULL; /* the non-empty tensor that ends last so far */
    for (uint32_t i = 0; i < f->n_tensors; i++) {
        const ft_st_tensor_t *t = &f->tensors[i];
        if (t->n_bytes == 0) continue;
        if (prev && t->offset < prev->offset + prev->n_bytes)
            return ft_status_make(
                FT_STATUS_FORMAT,
                "%s: tensor " FT_ST_NAME_FMT " (file bytes %" PRIu64 "..%" PRIu64
                ") overlaps tensor " FT_ST_NAME_FMT " (file bytes %" PRIu64 "..%" PRIu64 ")",
                c->name, t->name, f->data_offset + t->offset,
                f->data_offset + t->offset + t->n_bytes, prev->name, f->data_offset + prev->offset,
                f->data_offset + prev->offset + prev->n_bytes);
        if (!prev || t->offset + t->n_bytes > prev->offset + prev->n_bytes) prev = t;
    }
    /* end <= data_bytes and data_offset + data_bytes = size, so no overflow. */
    for (uint32_t i = 0; i < f->n_tensors; i++)
        f->tensors[i].offset += f->data_offset;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_st_parse_entries(const ft_st_ctx_t *c, json_t *root)
{
    ft_st_file_t *f = c->file;
    size_t n = json_object_size(root);
    f->tensors = ft_arena_array(f->arena, n, sizeof(*f->tensors));
    if (!f->tensors && n)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: %zu header entries: out of memory",
                              c->name, n);
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val)
    {
        ft_status_t st;
        if (strcmp(key, "__metadata__") == 0) {
            st = ft_st_parse_metadata(c, val);
        } else if (key[0] == '\0') {
            st = ft_status_make(FT_STATUS_FORMAT, "%s: a tensor has an empty name", c->name);
        } else {
            ft_st_tensor_t *t = &f->tensors[f->n_tensors];
            st = ft_st_parse_tensor(c, key, val, t);
            if (!st && !(t->name = ft_arena_strdup(f->arena, key)))
                st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", c->name);
            if (!st) f->n_tensors++;
        }
        if (st) return st;
    }
    return ft_st_check_layout(c);
}

FT_WARN_UNUSED static ft_status_t ft_st_read_header_len(const uint8_t *data, uint64_t size, const char *name,
                                         uint64_t *out_len)
{
    if (size < 8)
        return ft_status_make(
            FT_STATUS_FORMAT,
            "%s: file is %" PRIu64 " bytes, shorter than the 8-byte header length", name, size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = (n << 8) | data[i];
    if (n > FT_ST_MAX_HEADER_BYTES)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: header length %" PRIu64
                              " (file bytes 0..8) exceeds the limit of "
                              "%llu bytes",
                              name, n, FT_ST_MAX_HEADER_BYTES);
    if (n > size - 8)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: header length %" PRIu64
                              " (file bytes 0..8) runs past the end of "
                              "the file (%" PRIu64 " bytes)",
                              name, n, size);
    *out_len = n;
    return FT_OK;
}

ft_status_t ft_st_parse(const uint8_t *data, uint64_t size, const char *name, ft_st_file_t **out)
{
    *out = NULL;
    uint64_t hlen = 0;
    ft_status_t st = ft_st_read_header_len(data, size, name, &hlen);
    if (st) return st;
    json_error_t err;
    json_t *root = json_loadb((const char *)data + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: header JSON at byte %d (file byte %" PRIu64 "): %s", name,
                              err.position, (uint64_t)err.position + 8, err.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return ft_status_make(FT_STATUS_FORMAT, "%s: header JSON (file byte 8) is not an object",
                              name);
    }
    ft_st_file_t *f = calloc(1, sizeof(*f));
    if (!f) {
        json_decref(root);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", name);
    }
    /* Everything kept is smaller than the JSON that described it: names are
     * copied once and each entry takes more header bytes than its struct. */
    st = ft_arena_create(4 * hlen + (1u << 20), &f->arena);
    if (!st) {
        f->header_bytes = hlen;
        f->data_offset = 8 + hlen;
        f->data_bytes = size - f->data_offset;
        ft_st_ctx_t c = {name, f};
        st = ft_st_parse_entries(&c, root);
    }
    json_decref(root);
    if (st) {
        ft_st_file_free(f);
        return st;
    }
    *out = f;
    return FT_OK;
}

void ft_st_file_free(ft_st_file_t *file)
{
    if (!file) return;
    ft_arena_destroy(file->arena);
    free(file);
}
