/* GGUF container parser: header, metadata and the checks that tie them
 * together. Tensor infos and the data layout are in gguf_tensors.c.
 *
 * File layout (v2 and v3 are identical in little-endian files; v3 only
 * added big-endian files, which we refuse):
 *   "GGUF" u32 version u64 n_tensors u64 n_kv
 *   n_kv x { string key, u32 type, value }
 *   n_tensors x tensor info, padding, data section. */
#include "gguf_cursor.h"

#include "../../runtime/base/checked.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FT_GGUF_HEADER_BYTES 24u
/* Smallest encodings, used to bound counts by the bytes left before any
 * allocation: a pair is an empty key (8) + type (4) + a 1-byte value; a
 * tensor info is an empty name (8) + n_dims (4) + one ne (8) + type (4) +
 * offset (8); a nested array is its type (4) + count (8). */
#define FT_GGUF_MIN_KV_BYTES 13u
#define FT_GGUF_MIN_TENSOR_BYTES 32u
#define FT_GGUF_MIN_ARRAY_BYTES 12u

/* Bytes of one scalar of each type; 0 for STRING and ARRAY. */
static const uint8_t ft_gguf_type_bytes[FT_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4,
                                                               1, 0, 0, 8, 8, 8};

static const char *const ft_gguf_type_names[FT_GGUF_TYPE_COUNT] = {
    "uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
    "bool",  "string", "array",  "uint64", "int64",  "float64"};

const char *ft_gguf_type_name(ft_gguf_type_t type)
{
    return (unsigned)type < FT_GGUF_TYPE_COUNT ? ft_gguf_type_names[type] : "unknown";
}

ft_status_t ft_gguf_cur_le(ft_gguf_cur_t *c, unsigned n, const char *what, uint64_t *out)
{
    *out = 0;
    if (!ft_range_ok(c->pos, n, c->size))
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: truncated: %s at byte %llu needs %u bytes but the file ends "
                              "at byte %llu",
                              c->name, what, (unsigned long long)c->pos, n,
                              (unsigned long long)c->size);
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)c->data[c->pos + i] << (8 * i);
    c->pos += n;
    *out = v;
    return FT_OK;
}

uint64_t ft_gguf_utf8_check(const char *str, uint64_t len)
{
    const uint8_t *s = (const uint8_t *)str;
    uint64_t i = 0;
    while (i < len) {
        uint8_t b = s[i];
        if (b < 0x80) {
            i++;
            continue;
        }
        unsigned n;
        uint32_t cp, min;
        if ((b & 0xe0) == 0xc0) {
            n = 1, cp = b & 0x1f, min = 0x80;
        } else if ((b & 0xf0) == 0xe0) {
            n = 2, cp = b & 0x0f, min = 0x800;
        } else if ((b & 0xf8) == 0xf0) {
            n = 3, cp = b & 0x07, min = 0x10000;
        } else {
            return i + 1;
        }
        if (len - i <= n) return i + 1;
        for (unsigned k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return i + 1;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i + 1;
        i += n + 1;
    }
    return 0;
}

ft_status_t ft_gguf_cur_str(ft_gguf_cur_t *c, const char *what, int no_nul, ft_gguf_str_t *out)
{
    uint64_t at = c->pos, len;
    ft_status_t st = ft_gguf_cur_le(c, 8, what, &len);
    if (st) return st;
    if (len > c->size - c->pos)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: %s at byte %llu: string length %llu cannot fit in the %llu "
                              "bytes left of the %llu-byte file",
                              c->name, what, (unsigned long long)at, (unsigned long long)len,
                              (unsigned long long)(c->size - c->pos), (unsigned long long)c->size);
    const char *s = (const char *)c->data + c->pos;
    uint64_t bad = ft_gguf_utf8_check(s, len);
    if (bad)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: %s at byte %llu is not valid UTF-8 (byte %llu)", c->name, what,
                              (unsigned long long)at, (unsigned long long)(c->pos + bad - 1));
    if (no_nul && memchr(s, 0, (size_t)len))
        return ft_status_make(FT_STATUS_FORMAT, "%s: %s at byte %llu contains a NUL byte", c->name,
                              what, (unsigned long long)at);
    char *copy = ft_arena_alloc(c->arena, len + 1);
    if (!copy)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY,
                              "%s: %s at byte %llu: out of memory for %llu bytes", c->name, what,
                              (unsigned long long)at, (unsigned long long)len);
    memcpy(copy, s, (size_t)len);
    c->pos += len;
    out->s = copy;
    out->len = len;
    return FT_OK;
}

/* Sign-extends the low `bytes` bytes of v. */
static int64_t ft_gguf_sext(uint64_t v, unsigned bytes)
{
    unsigned shift = 64 - 8 * bytes;
    return (int64_t)(v << shift) >> shift;
}

/* Fills a scalar from its raw little-endian bits. */
static void ft_gguf_scalar_set(ft_gguf_value_t *v, ft_gguf_type_t type, uint64_t raw)
{
    v->type = type;
    switch (type) {
    case FT_GGUF_INT8:
        v->i = ft_gguf_sext(raw, 1);
        break;
    case FT_GGUF_INT16:
        v->i = ft_gguf_sext(raw, 2);
        break;
    case FT_GGUF_INT32:
        v->i = ft_gguf_sext(raw, 4);
        break;
    case FT_GGUF_INT64:
        v->i = (int64_t)raw;
        break;
    case FT_GGUF_FLOAT32: {
        uint32_t bits = (uint32_t)raw;
        float f;
        memcpy(&f, &bits, 4);
        v->f = f;
        break;
    }
    case FT_GGUF_FLOAT64:
        memcpy(&v->f, &raw, 8);
        break;
    default:
        v->u = raw;
        break; /* unsigned and bool */
    }
}

FT_WARN_UNUSED static ft_status_t ft_gguf_read_value(ft_gguf_cur_t *c, const char *ctx, uint32_t type, int depth,
                                      ft_gguf_value_t *v);

/* Reads an array body (element type, count, elements) at c->pos. */
FT_WARN_UNUSED static ft_status_t ft_gguf_read_array(ft_gguf_cur_t *c, const char *ctx, int depth,
                                      ft_gguf_value_t *v)
{
    uint64_t at = c->pos, et, n;
    ft_status_t st = ft_gguf_cur_le(c, 4, ctx, &et);
    if (!st) st = ft_gguf_cur_le(c, 8, ctx, &n);
    if (st) return st;
    if (et >= FT_GGUF_TYPE_COUNT)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: %s: array at byte %llu has unknown element type %llu", c->name,
                              ctx, (unsigned long long)at, (unsigned long long)et);
    if (et == FT_GGUF_ARRAY && depth + 1 > FT_GGUF_MAX_ARRAY_DEPTH)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: %s: array at byte %llu nests arrays deeper than %d levels",
                              c->name, ctx, (unsigned long long)at, FT_GGUF_MAX_ARRAY_DEPTH);
    uint64_t min_elem = et == FT_GGUF_STRING  ? 8
                        : et == FT_GGUF_ARRAY ? FT_GGUF_MIN_ARRAY_BYTES
                                              : ft_gguf_type_bytes[et];
    uint64_t left = c->size - c->pos;
    if (n > left / min_elem)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: %s: array at byte %llu of %llu %s elements cannot fit in the "
                              "%llu bytes left of the %llu-byte file",
                              c->name, ctx, (unsigned long long)at, (unsigned long long)n,
                              ft_gguf_type_name((ft_gguf_type_t)et), (unsigned long long)left,
                              (unsigned long long)c->size);
    v->type = FT_GGUF_ARRAY;
    v->elem_type = (ft_gguf_type_t)et;
    v->n = n;
    uint64_t elem_size = et == FT_GGUF_STRING  ? sizeof(ft_gguf_str_t)
                         : et == FT_GGUF_ARRAY ? sizeof(ft_gguf_value_t)
                                               : min_elem;
    void *elems = ft_arena_array(c->arena, n ? n : 1, elem_size);
    if (!elems)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: %s: out of memory for an array of %llu",
                              c->name, ctx, (unsigned long long)n);
    v->elems = elems;
    if (et == FT_GGUF_STRING) {
        ft_gguf_str_t *strs = elems;
        for (uint64_t k = 0; k < n && !st; k++)
            st = ft_gguf_cur_str(c, ctx, 0, &strs[k]);
        return st;
    }
    if (et == FT_GGUF_ARRAY) {
        ft_gguf_value_t *vals = elems;
        for (uint64_t k = 0; k < n && !st; k++)
            st = ft_gguf_read_array(c, ctx, depth + 1, &vals[k]);
        return st;
    }
    /* Numbers are kept as the file's little-endian bytes (this host's
     * order, see gguf_cursor.h); bools must be 0 or 1. */
    memcpy(elems, c->data + c->pos, (size_t)(n * min_elem));
    if (et == FT_GGUF_BOOL)
        for (uint64_t k = 0; k < n; k++)
            if (c->data[c->pos + k] > 1)
                return ft_status_make(
                    FT_STATUS_FORMAT,
                    "%s: %s: bool array element %llu at byte %llu is %u, not 0 or 1", c->name, ctx,
                    (unsigned long long)k, (unsigned long long)(c->pos + k), c->data[c->pos + k]);
    c->pos += n * min_elem;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_gguf_read_value(ft_gguf_cur_t *c, const char *ctx, uint32_t type, int depth,
                                      ft_gguf_value_t *v)
{
    memset(v, 0, sizeof(*v));
    if (type == FT_GGUF_ARRAY) return ft_gguf_read_array(c, ctx, depth + 1, v);
    if (type == FT_GGUF_STRING) {
        v->type = FT_GGUF_STRING;
        return ft_gguf_cur_str(c, ctx, 0, &v->str);
    }
    uint64_t at = c->pos, raw;
    ft_status_t st = ft_gguf_cur_le(c, ft_gguf_type_bytes[type], ctx, &raw);
    if (st) return st;
    if (type == FT_GGUF_BOOL && raw > 1)
        return ft_status_make(FT_STATUS_FORMAT, "%s: %s: bool at byte %llu is %llu, not 0 or 1",
                              c->name, ctx, (unsigned long long)at, (unsigned long long)raw);
    ft_gguf_scalar_set(v, (ft_gguf_type_t)type, raw);
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_gguf_read_header(ft_gguf_cur_t *c, ft_gguf_t *g)
{
    uint64_t magic, version, n_tensors, n_kv;
    ft_status_t st = ft_gguf_cur_le(c, 4, "magic", &magic);
    if (st) return st;
    if (memcmp(c->data, "GGUF", 4) != 0)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: not a GGUF file: magic at byte 0 is %02x %02x %02x %02x, "
                              "expected 'GGUF'",
                              c->name, c->data[0], c->data[1], c->data[2], c->data[3]);
    if ((st = ft_gguf_cur_le(c, 4, "version", &version)) != FT_OK) return st;
    if (version == 1)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: GGUF version 1 (at byte 4) is not supported (only 2 and 3); "
                              "convert the model again with a current llama.cpp",
                              c->name);
    if (version == 0x02000000u || version == 0x03000000u)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: GGUF version at byte 4 is big-endian; only little-endian "
                              "files are supported",
                              c->name);
    if (version != 2 && version != 3)
        return ft_status_make(
            FT_STATUS_UNSUPPORTED,
            "%s: unknown GGUF version %llu at byte 4 (only 2 and 3 are supported)", c->name,
            (unsigned long long)version);
    if ((st = ft_gguf_cur_le(c, 8, "tensor count", &n_tensors)) != FT_OK ||
        (st = ft_gguf_cur_le(c, 8, "metadata count", &n_kv)) != FT_OK)
        return st;
    uint64_t left = c->size - FT_GGUF_HEADER_BYTES;
    if (n_tensors > left / FT_GGUF_MIN_TENSOR_BYTES)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: tensor count %llu at byte 8 cannot fit in the %llu-byte file",
                              c->name, (unsigned long long)n_tensors, (unsigned long long)c->size);
    left -= n_tensors * FT_GGUF_MIN_TENSOR_BYTES;
    if (n_kv > left / FT_GGUF_MIN_KV_BYTES)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: metadata count %llu at byte 16 cannot fit in the %llu-byte file",
                              c->name, (unsigned long long)n_kv, (unsigned long long)c->size);
    if (n_tensors > FT_GGUF_MAX_TENSORS)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: tensor count %llu at byte 8 is above the limit of %u", c->name,
                              (unsigned long long)n_tensors, FT_GGUF_MAX_TENSORS);
    if (n_kv > FT_GGUF_MAX_KV)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: metadata count %llu at byte 16 is above the limit of %u",
                              c->name, (unsigned long long)n_kv, FT_GGUF_MAX_KV);
    g->version = (uint32_t)version;
    g->n_tensors = n_tensors;
    g->n_kv = n_kv;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_gguf_read_kv(ft_gguf_cur_t *c, uint64_t idx, ft_gguf_kv_t *kv)
{
    char ctx[320];
    ft_gguf_str_t key;
    kv->offset = c->pos;
    snprintf(ctx, sizeof(ctx), "metadata #%llu key", (unsigned long long)idx);
    ft_status_t st = ft_gguf_cur_str(c, ctx, 1, &key);
    if (st) return st;
    kv->key = key.s;
    /* Keys are short; a long one is shown cut (it is valid UTF-8, a cut
     * may end mid-character, which only affects the message). */
    snprintf(ctx, sizeof(ctx), "metadata '%.200s' (at byte %llu)", key.s,
             (unsigned long long)kv->offset);
    uint64_t type_at = c->pos, type;
    if ((st = ft_gguf_cur_le(c, 4, ctx, &type)) != FT_OK) return st;
    if (type >= FT_GGUF_TYPE_COUNT)
        return ft_status_make(FT_STATUS_FORMAT, "%s: %s: unknown value type %llu at byte %llu",
                              c->name, ctx, (unsigned long long)type, (unsigned long long)type_at);
    return ft_gguf_read_value(c, ctx, (uint32_t)type, 0, &kv->value);
}

static int ft_gguf_kv_cmp(const void *a, const void *b)
{
    const ft_gguf_kv_t *x = *(const ft_gguf_kv_t *const *)a, *y = *(const ft_gguf_kv_t *const *)b;
    int r = strcmp(x->key, y->key);
    return r ? r : (x->offset > y->offset) - (x->offset < y->offset);
}

/* Sorting finds duplicates in n log n; a hostile file may hold 65536 keys. */
FT_WARN_UNUSED static ft_status_t ft_gguf_check_dup_keys(const ft_gguf_cur_t *c, const ft_gguf_t *g)
{
    if (g->n_kv < 2) return FT_OK;
    const ft_gguf_kv_t **idx = malloc(g->n_kv * sizeof(*idx));
    if (!idx) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", c->name);
    for (uint64_t i = 0; i < g->n_kv; i++)
        idx[i] = &g->kvs[i];
    qsort(idx, g->n_kv, sizeof(*idx), ft_gguf_kv_cmp);
    ft_status_t st = FT_OK;
    for (uint64_t i = 1; i < g->n_kv && !st; i++)
        if (strcmp(idx[i - 1]->key, idx[i]->key) == 0)
            st = ft_status_make(FT_STATUS_FORMAT,
                                "%s: metadata '%.200s' at byte %llu repeats the key at byte %llu",
                                c->name, idx[i]->key, (unsigned long long)idx[i]->offset,
                                (unsigned long long)idx[i - 1]->offset);
    free(idx);
    return st;
}

FT_WARN_UNUSED static ft_status_t ft_gguf_read_alignment(const ft_gguf_cur_t *c, ft_gguf_t *g)
{
    g->alignment = FT_GGUF_DEFAULT_ALIGNMENT;
    const ft_gguf_kv_t *kv = ft_gguf_find(g, "general.alignment");
    if (!kv) return FT_OK;
    if (kv->value.type != FT_GGUF_UINT32)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: metadata 'general.alignment' (at byte %llu) is a %s, "
                              "expected uint32",
                              c->name, (unsigned long long)kv->offset,
                              ft_gguf_type_name(kv->value.type));
    uint64_t a = kv->value.u;
    if (a == 0 || (a & (a - 1)) != 0)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: metadata 'general.alignment' (at byte %llu) is %llu; it must "
                              "be a nonzero power of two",
                              c->name, (unsigned long long)kv->offset, (unsigned long long)a);
    g->alignment = (uint32_t)a;
    return FT_OK;
}

ft_status_t ft_gguf_parse(const uint8_t *data, uint64_t size, const char *name, ft_gguf_t **out)
{
    *out = NULL;
    ft_gguf_t *g = calloc(1, sizeof(*g));
    if (!g) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", name);
    /* Everything kept is bounded by a small multiple of the file size (see
     * the minimum encodings above); the cap only guards against bugs. */
    ft_status_t st = ft_arena_create(0, &g->arena);
    if (st) {
        free(g);
        return st;
    }
    ft_gguf_cur_t c = {data, size, 0, name, g->arena};
    g->name = ft_arena_strdup(g->arena, name);
    g->size = size;
    if (!g->name) st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", name);
    if (!st) st = ft_gguf_read_header(&c, g);
    if (!st && !(g->kvs = ft_arena_array(g->arena, g->n_kv ? g->n_kv : 1, sizeof(*g->kvs))))
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory for %llu metadata pairs",
                            name, (unsigned long long)g->n_kv);
    for (uint64_t i = 0; i < g->n_kv && !st; i++)
        st = ft_gguf_read_kv(&c, i, &g->kvs[i]);
    if (!st) st = ft_gguf_check_dup_keys(&c, g);
    if (!st) st = ft_gguf_read_alignment(&c, g);
    if (!st) st = ft_gguf_parse_tensor_infos(&c, g);
    if (!st) st = ft_gguf_check_layout(&c, g);
    if (st) {
        ft_gguf_free(g);
        return st;
    }
    *out = g;
    return FT_OK;
}

void ft_gguf_free(ft_gguf_t *g)
{
    if (!g) return;
    ft_arena_destroy(g->arena);
    free(g);
}

const ft_gguf_kv_t *ft_gguf_find(const ft_gguf_t *g, const char *key)
{
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (strcmp(g->kvs[i].key, key) == 0) return &g->kvs[i];
    return NULL;
}

/* Raw element idx of a numeric array as (sign-extended) 64 bits. */
static uint64_t ft_gguf_array_raw(const ft_gguf_value_t *arr, uint64_t idx)
{
    unsigned nb = ft_gguf_type_bytes[arr->elem_type];
    uint64_t raw = 0;
    memcpy(&raw, (const uint8_t *)arr->elems + idx * nb, nb);
    return raw;
}

/* An element or scalar as a value, so one conversion serves both. */
static int ft_gguf_array_elem(const ft_gguf_value_t *arr, uint64_t idx, ft_gguf_value_t *out)
{
    if (arr->type != FT_GGUF_ARRAY || idx >= arr->n || arr->elem_type == FT_GGUF_STRING ||
        arr->elem_type == FT_GGUF_ARRAY || (unsigned)arr->elem_type >= FT_GGUF_TYPE_COUNT)
        return 0;
    memset(out, 0, sizeof(*out));
    ft_gguf_scalar_set(out, arr->elem_type, ft_gguf_array_raw(arr, idx));
    return 1;
}

int ft_gguf_value_i64(const ft_gguf_value_t *v, int64_t *out)
{
    switch (v->type) {
    case FT_GGUF_INT8:
    case FT_GGUF_INT16:
    case FT_GGUF_INT32:
    case FT_GGUF_INT64:
        *out = v->i;
        return 1;
    case FT_GGUF_UINT8:
    case FT_GGUF_UINT16:
    case FT_GGUF_UINT32:
    case FT_GGUF_UINT64:
    case FT_GGUF_BOOL:
        if (v->u > (uint64_t)INT64_MAX) return 0;
        *out = (int64_t)v->u;
        return 1;
    default:
        return 0;
    }
}

int ft_gguf_array_i64(const ft_gguf_value_t *arr, uint64_t idx, int64_t *out)
{
    ft_gguf_value_t v;
    return ft_gguf_array_elem(arr, idx, &v) && ft_gguf_value_i64(&v, out);
}

int ft_gguf_array_f64(const ft_gguf_value_t *arr, uint64_t idx, double *out)
{
    ft_gguf_value_t v;
    if (!ft_gguf_array_elem(arr, idx, &v)) return 0;
    int64_t i;
    if (v.type == FT_GGUF_FLOAT32 || v.type == FT_GGUF_FLOAT64)
        *out = v.f;
    else if (ft_gguf_value_i64(&v, &i))
        *out = (double)i;
    else
        *out = (double)v.u; /* uint64 above INT64_MAX */
    return 1;
}
