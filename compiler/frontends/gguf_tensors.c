/* GGUF tensor infos and data layout. A tensor info is
 *   string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type,
 *   u64 offset (relative to the data section, which starts at the first
 *   multiple of the alignment after the last info).
 * Each tensor's shape, type and byte range are checked here, so that
 * later stages can trust n_bytes and the absolute offset. */
#include "gguf_cursor.h"

#include "../../runtime/base/checked.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ctx is "tensor 'name' (info at byte X)". */
FT_WARN_UNUSED static ft_status_t ft_gguf_tensor_type(ft_gguf_cur_t *c, const char *ctx, ft_gguf_tensor_t *t)
{
    uint64_t at = c->pos, id;
    ft_status_t st = ft_gguf_cur_le(c, 4, ctx, &id);
    if (st) return st;
    t->ggml_type = (uint32_t)id;
    t->dtype = ft_dtype_from_ggml(t->ggml_type);
    if (t->dtype != FT_DTYPE_INVALID) return FT_OK;
    const char *known = ft_ggml_type_name(t->ggml_type);
    if (known)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: %s: ggml type %s (id %u at byte %llu) is not supported", c->name,
                              ctx, known, t->ggml_type, (unsigned long long)at);
    return ft_status_make(FT_STATUS_FORMAT, "%s: %s: unknown ggml type %u at byte %llu", c->name,
                          ctx, t->ggml_type, (unsigned long long)at);
}

/* n_bytes from ne and dtype: rows must be whole blocks and nothing may
 * overflow (ggml counts elements in int64). */
FT_WARN_UNUSED static ft_status_t ft_gguf_tensor_size(const ft_gguf_cur_t *c, const char *ctx, ft_gguf_tensor_t *t)
{
    uint64_t n_elems = 1, rows = 1, row_bytes;
    for (uint32_t d = 0; d < t->n_dims; d++)
        if (!ft_mul_u64(n_elems, t->ne[d], &n_elems) || n_elems > (uint64_t)INT64_MAX)
            return ft_status_make(
                FT_STATUS_OUT_OF_RANGE,
                "%s: %s: shape [%llu, %llu, %llu, %llu] has more than 2^63 elements", c->name, ctx,
                (unsigned long long)t->ne[0], (unsigned long long)t->ne[1],
                (unsigned long long)t->ne[2], (unsigned long long)t->ne[3]);
    for (uint32_t d = 1; d < t->n_dims; d++)
        rows *= t->ne[d]; /* cannot overflow: bounded by n_elems */
    const ft_dtype_info_t *info = ft_dtype_info(t->dtype);
    if (t->ne[0] % info->block_elems != 0)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: %s: row length ne[0] = %llu is not a whole number of %s blocks "
                              "(%u elements each)",
                              c->name, ctx, (unsigned long long)t->ne[0], info->name,
                              info->block_elems);
    if (!ft_dtype_row_bytes(t->dtype, t->ne[0], &row_bytes) ||
        !ft_mul_u64(row_bytes, rows, &t->n_bytes))
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: %s: byte size overflows 64 bits",
                              c->name, ctx);
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_gguf_tensor_info(ft_gguf_cur_t *c, uint64_t idx, ft_gguf_tensor_t *t)
{
    char ctx[320];
    ft_gguf_str_t name;
    t->info_offset = c->pos;
    snprintf(ctx, sizeof(ctx), "tensor #%llu name", (unsigned long long)idx);
    ft_status_t st = ft_gguf_cur_str(c, ctx, 1, &name);
    if (st) return st;
    t->name = name.s;
    snprintf(ctx, sizeof(ctx), "tensor '%.200s' (info at byte %llu)", name.s,
             (unsigned long long)t->info_offset);
    uint64_t at = c->pos, n_dims;
    if ((st = ft_gguf_cur_le(c, 4, ctx, &n_dims)) != FT_OK) return st;
    if (n_dims < 1 || n_dims > 4)
        return ft_status_make(FT_STATUS_FORMAT, "%s: %s: n_dims %llu at byte %llu is not in 1..4",
                              c->name, ctx, (unsigned long long)n_dims, (unsigned long long)at);
    t->n_dims = (uint32_t)n_dims;
    for (uint32_t d = 0; d < 4; d++)
        t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        at = c->pos;
        if ((st = ft_gguf_cur_le(c, 8, ctx, &t->ne[d])) != FT_OK) return st;
        if (t->ne[d] == 0)
            return ft_status_make(FT_STATUS_FORMAT, "%s: %s: ne[%u] at byte %llu is 0", c->name,
                                  ctx, d, (unsigned long long)at);
    }
    if ((st = ft_gguf_tensor_type(c, ctx, t)) != FT_OK ||
        (st = ft_gguf_cur_le(c, 8, ctx, &t->offset)) != FT_OK)
        return st;
    return ft_gguf_tensor_size(c, ctx, t);
}

static int ft_gguf_name_cmp(const void *a, const void *b)
{
    const ft_gguf_tensor_t *x = *(const ft_gguf_tensor_t *const *)a;
    const ft_gguf_tensor_t *y = *(const ft_gguf_tensor_t *const *)b;
    int r = strcmp(x->name, y->name);
    return r ? r : (x->info_offset > y->info_offset) - (x->info_offset < y->info_offset);
}

static int ft_gguf_offset_cmp(const void *a, const void *b)
{
    const ft_gguf_tensor_t *x = *(const ft_gguf_tensor_t *const *)a;
    const ft_gguf_tensor_t *y = *(const ft_gguf_tensor_t *const *)b;
    if (x->offset != y->offset) return x->offset > y->offset ? 1 : -1;
    return (x->info_offset > y->info_offset) - (x->info_offset < y->info_offset);
}

/* The tensors sorted by `cmp`, as pointers; NULL when out of memory. */
static const ft_gguf_tensor_t **ft_gguf_sorted(const ft_gguf_t *g,
                                               int (*cmp)(const void *, const void *))
{
    const ft_gguf_tensor_t **idx = malloc(g->n_tensors * sizeof(*idx));
    if (!idx) return NULL;
    for (uint64_t i = 0; i < g->n_tensors; i++)
        idx[i] = &g->tensors[i];
    qsort(idx, g->n_tensors, sizeof(*idx), cmp);
    return idx;
}

ft_status_t ft_gguf_parse_tensor_infos(ft_gguf_cur_t *c, ft_gguf_t *g)
{
    g->tensors = ft_arena_array(c->arena, g->n_tensors ? g->n_tensors : 1, sizeof(*g->tensors));
    if (!g->tensors)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory for %llu tensor infos",
                              c->name, (unsigned long long)g->n_tensors);
    ft_status_t st = FT_OK;
    for (uint64_t i = 0; i < g->n_tensors && !st; i++)
        st = ft_gguf_tensor_info(c, i, &g->tensors[i]);
    if (st || g->n_tensors < 2) return st;
    const ft_gguf_tensor_t **idx = ft_gguf_sorted(g, ft_gguf_name_cmp);
    if (!idx) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", c->name);
    for (uint64_t i = 1; i < g->n_tensors && !st; i++)
        if (strcmp(idx[i - 1]->name, idx[i]->name) == 0)
            st = ft_status_make(FT_STATUS_FORMAT,
                                "%s: tensor '%.200s' (info at byte %llu) repeats the name of the "
                                "tensor at byte %llu",
                                c->name, idx[i]->name, (unsigned long long)idx[i]->info_offset,
                                (unsigned long long)idx[i - 1]->info_offset);
    free(idx);
    return st;
}

/* Byte offset of a tensor info's offset field, for messages. */
static uint64_t ft_gguf_offset_field_at(const ft_gguf_tensor_t *t)
{
    return t->info_offset + 8 + strlen(t->name) + 4 + 8ull * t->n_dims + 4;
}

FT_WARN_UNUSED static ft_status_t ft_gguf_check_range(const ft_gguf_cur_t *c, const ft_gguf_t *g,
                                       const ft_gguf_tensor_t *t)
{
    if (t->offset % g->alignment != 0)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: tensor '%.200s' (info at byte %llu): offset %llu (at byte %llu) "
                              "is not a multiple of the alignment %u",
                              c->name, t->name, (unsigned long long)t->info_offset,
                              (unsigned long long)t->offset,
                              (unsigned long long)ft_gguf_offset_field_at(t), g->alignment);
    uint64_t abs;
    if (!ft_add_u64(g->data_start, t->offset, &abs) || !ft_range_ok(abs, t->n_bytes, c->size))
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: tensor '%.200s' (info at byte %llu): offset %llu + %llu bytes "
                              "(data section at byte %llu) lies past the end of the file (%llu "
                              "bytes)",
                              c->name, t->name, (unsigned long long)t->info_offset,
                              (unsigned long long)t->offset, (unsigned long long)t->n_bytes,
                              (unsigned long long)g->data_start, (unsigned long long)c->size);
    return FT_OK;
}

ft_status_t ft_gguf_check_layout(const ft_gguf_cur_t *c, ft_gguf_t *g)
{
    if (!ft_align_up_u64(c->pos, g->alignment, &g->data_start))
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: data section start overflows", c->name);
    ft_status_t st = FT_OK;
    for (uint64_t i = 0; i < g->n_tensors && !st; i++)
        st = ft_gguf_check_range(c, g, &g->tensors[i]);
    if (st || g->n_tensors < 2) return st;
    const ft_gguf_tensor_t **idx = ft_gguf_sorted(g, ft_gguf_offset_cmp);
    if (!idx) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", c->name);
    for (uint64_t i = 1; i < g->n_tensors && !st; i++) {
        const ft_gguf_tensor_t *a = idx[i - 1], *b = idx[i];
        /* a->offset + a->n_bytes cannot overflow: both lie inside the file. */
        if (a->offset + a->n_bytes > b->offset)
            st = ft_status_make(FT_STATUS_FORMAT,
                                "%s: tensor '%.200s' (info at byte %llu): bytes [%llu, %llu) of "
                                "the data section overlap tensor '%.200s' (info at byte %llu) at "
                                "[%llu, %llu)",
                                c->name, b->name, (unsigned long long)b->info_offset,
                                (unsigned long long)b->offset,
                                (unsigned long long)(b->offset + b->n_bytes), a->name,
                                (unsigned long long)a->info_offset, (unsigned long long)a->offset,
                                (unsigned long long)(a->offset + a->n_bytes));
    }
    free(idx);
    return st;
}
