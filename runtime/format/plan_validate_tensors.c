/* The semantic check of a plan's tensor table and expert blocks: formats,
 * shapes against byte sizes, and every byte inside its weight file. */
#include "../base/checked.h"
#include "dtype.h"
#include "plan_validate.h"
#include "plan_validate_internal.h"
#include "wlayout.h"

#include <stdio.h>
#include <stdlib.h>

/* Every tensor message starts "<file>: tensors[i] '<name>': ". */
#define FT_TENSOR_ERR(code, fmt, ...)                                                       \
    ft_status_make(code, "%s: tensors[%zu] '%.*s': " fmt, name, i, FT_PLAN_NAME_MAX, t->name, \
                   __VA_ARGS__)

static void ft_plan_shape_str(const Ftplan__Tensor *t, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = 0;
    for (size_t d = 0; d < t->n_shape && used < n; d++)
        used += (size_t)snprintf(buf + used, n - used, "%s%llu", d ? ", " : "[",
                                 (unsigned long long)t->shape[d]);
    if (used < n)
        snprintf(buf + used, n - used, "]");
}

/* The bytes of a tensor (or one expert's slice of a stack) from its shape
 * and format; 0 after setting *out_status on failure. */
static uint64_t ft_plan_tensor_bytes(const Ftplan__Tensor *t, size_t i, const char *name,
                                     ft_status_t *out_status)
{
    ft_dtype_t dt = (ft_dtype_t)t->format;
    uint64_t row, rows = 1, bytes;
    if (!ft_dtype_row_bytes(dt, t->shape[t->n_shape - 1], &row)) {
        *out_status = FT_TENSOR_ERR(FT_STATUS_MISMATCH,
                                    "a row of %llu elements is not a whole number of %s blocks "
                                    "(%u elements each)",
                                    (unsigned long long)t->shape[t->n_shape - 1],
                                    ft_dtype_name(dt), ft_dtype_info(dt)->block_elems);
        return 0;
    }
    /* An expert stack's size field covers one expert: skip dim 0. */
    int ok = 1;
    for (size_t d = t->expert_stride ? 1 : 0; d + 1 < t->n_shape && ok; d++)
        ok = ft_mul_u64(rows, t->shape[d], &rows);
    if (!ok || !ft_mul_u64(rows, row, &bytes)) {
        char shape[128];
        ft_plan_shape_str(t, shape, sizeof(shape));
        *out_status = FT_TENSOR_ERR(FT_STATUS_OUT_OF_RANGE, "the byte size of shape %s overflows",
                                    shape);
        return 0;
    }
    return bytes;
}

/* Checks format and shape; sets *out_extent to the bytes the tensor spans
 * from its offset (for a stack: up to the end of the last expert). */
FT_WARN_UNUSED static ft_status_t ft_plan_check_tensor_shape(const Ftplan__Tensor *t, size_t i,
                                              const char *name, uint64_t *out_extent)
{
    if (!ft_plan_enum_ok(&ftplan__weight_format__descriptor, t->format) ||
        !ft_dtype_info((ft_dtype_t)t->format))
        return FT_TENSOR_ERR(FT_STATUS_FORMAT, "format %d is not a known weight format",
                             (int)t->format);
    size_t min_dims = t->expert_stride ? 2 : 1;
    if (t->n_shape < min_dims || t->n_shape > FT_PLAN_MAX_DIMS)
        return FT_TENSOR_ERR(FT_STATUS_FORMAT, "%zu dims, expected %zu..%u%s", t->n_shape,
                             min_dims, FT_PLAN_MAX_DIMS,
                             t->expert_stride ? " for an expert stack" : "");
    for (size_t d = 0; d < t->n_shape; d++)
        if (t->shape[d] == 0)
            return FT_TENSOR_ERR(FT_STATUS_FORMAT, "dim %zu is 0", d);
    ft_status_t st = FT_OK;
    uint64_t bytes = ft_plan_tensor_bytes(t, i, name, &st);
    if (st)
        return st;
    if (t->size != bytes) {
        char shape[128];
        ft_plan_shape_str(t, shape, sizeof(shape));
        return FT_TENSOR_ERR(FT_STATUS_MISMATCH, "size is %llu bytes but shape %s of %s gives %llu%s",
                             (unsigned long long)t->size, shape,
                             ft_dtype_name((ft_dtype_t)t->format), (unsigned long long)bytes,
                             t->expert_stride ? " per expert" : "");
    }
    /* A layout other than rows: a known one that holds this matrix (of a
     * stack: each expert's rows). */
    if (t->layout != FT_WLAYOUT_ROWS &&
        (!ft_wlayout_name(t->layout) || t->n_shape < 2 ||
         !ft_wlayout_fits(t->layout, (ft_dtype_t)t->format, t->shape[t->n_shape - 2],
                          t->shape[t->n_shape - 1])))
        return FT_TENSOR_ERR(FT_STATUS_FORMAT, "layout %u (%s) cannot hold a %s matrix of %zu dims",
                             t->layout, ft_wlayout_name(t->layout) ? ft_wlayout_name(t->layout) : "unknown",
                             ft_dtype_name((ft_dtype_t)t->format), t->n_shape);
    *out_extent = bytes;
    if (!t->expert_stride)
        return FT_OK;
    if (t->expert_stride % FT_FTW_ALIGN || t->expert_stride < t->size)
        return FT_TENSOR_ERR(FT_STATUS_FORMAT,
                             "expert_stride %llu must be a multiple of %u and at least the "
                             "slice size %llu",
                             (unsigned long long)t->expert_stride, FT_FTW_ALIGN,
                             (unsigned long long)t->size);
    uint64_t span;
    if (!ft_mul_u64(t->shape[0] - 1, t->expert_stride, &span) ||
        !ft_add_u64(span, t->size, out_extent))
        return FT_TENSOR_ERR(FT_STATUS_OUT_OF_RANGE, "%llu experts of stride %llu overflow",
                             (unsigned long long)t->shape[0],
                             (unsigned long long)t->expert_stride);
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_plan_check_tensor(const Ftplan__Plan *plan, size_t i, const char *name)
{
    const Ftplan__Tensor *t = plan->tensors[i];
    if (!t || !t->name || !*t->name)
        return ft_status_make(FT_STATUS_FORMAT, "%s: tensors[%zu]: missing or empty name", name, i);
    if (!ft_plan_enum_ok(&ftplan__tensor_role__descriptor, t->role))
        return FT_TENSOR_ERR(FT_STATUS_FORMAT, "role %d is not a known tensor role", (int)t->role);
    if (t->layer < -1 || (t->layer >= 0 && (uint32_t)t->layer >= plan->hparams->n_layers))
        return FT_TENSOR_ERR(FT_STATUS_OUT_OF_RANGE, "layer %d, expected -1 or below %u",
                             (int)t->layer, plan->hparams->n_layers);
    if (t->expert_stride) {
        /* A stack holds one slice per expert of its MoE layer. */
        const Ftplan__Block *b = t->layer >= 0 ? plan->blocks[t->layer] : NULL;
        uint32_t n_experts = b && b->is_moe ? b->moe->n_experts : 0;
        if (t->n_shape < 2 || t->shape[0] != n_experts)
            return FT_TENSOR_ERR(FT_STATUS_MISMATCH,
                                 "an expert stack (expert_stride %llu) of %llu slices, but layer "
                                 "%d has %u experts",
                                 (unsigned long long)t->expert_stride,
                                 (unsigned long long)(t->n_shape ? t->shape[0] : 0),
                                 (int)t->layer, n_experts);
    }
    uint64_t extent = 0;
    ft_status_t st = ft_plan_check_tensor_shape(t, i, name, &extent);
    if (st)
        return st;
    if (t->file >= plan->n_weight_files)
        return FT_TENSOR_ERR(FT_STATUS_OUT_OF_RANGE, "file %u, but the plan has %zu weight files",
                             t->file, plan->n_weight_files);
    const Ftplan__WeightFile *wf = plan->weight_files[t->file];
    if (t->offset % FT_FTW_ALIGN || t->offset < FT_FTW_HEADER_BYTES)
        return FT_TENSOR_ERR(FT_STATUS_FORMAT,
                             "offset %llu in '%s' is not a %u-aligned offset past the header",
                             (unsigned long long)t->offset, wf->name, FT_FTW_ALIGN);
    if (!ft_range_ok(t->offset, extent, wf->size))
        return FT_TENSOR_ERR(FT_STATUS_OUT_OF_RANGE,
                             "offset %llu + %llu bytes lies past the end of '%s' (%llu bytes)",
                             (unsigned long long)t->offset, (unsigned long long)extent, wf->name,
                             (unsigned long long)wf->size);
    return FT_OK;
}

ft_status_t ft_plan_check_tensors(const Ftplan__Plan *plan, const char *name)
{
    for (size_t i = 0; i < plan->n_tensors; i++) {
        ft_status_t st = ft_plan_check_tensor(plan, i, name);
        if (st)
            return st;
    }
    ft_plan_named_t *items = calloc(plan->n_tensors ? plan->n_tensors : 1, sizeof(*items));
    if (!items)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", name);
    for (size_t i = 0; i < plan->n_tensors; i++)
        items[i] = (ft_plan_named_t){plan->tensors[i]->name, i};
    ft_status_t st = ft_plan_check_unique(items, plan->n_tensors, name, "tensors");
    free(items);
    return st;
}

/* Every expert block message starts "<file>: expert_blocks[i]: ". */
#define FT_EXPERT_ERR(code, fmt, ...) \
    ft_status_make(code, "%s: expert_blocks[%zu]: " fmt, name, i, __VA_ARGS__)

FT_WARN_UNUSED static ft_status_t ft_plan_check_expert_block(const Ftplan__Plan *plan, size_t i,
                                              uint8_t *seen, const char *name)
{
    const Ftplan__ExpertBlock *eb = plan->expert_blocks[i];
    if (!eb)
        return FT_EXPERT_ERR(FT_STATUS_FORMAT, "%s", "missing");
    if (eb->layer >= plan->hparams->n_layers)
        return FT_EXPERT_ERR(FT_STATUS_OUT_OF_RANGE, "layer %u, expected below %u", eb->layer,
                             plan->hparams->n_layers);
    const Ftplan__Block *b = plan->blocks[eb->layer];
    if (!b->is_moe || b->moe->n_experts != eb->n_experts)
        return FT_EXPERT_ERR(FT_STATUS_MISMATCH, "%u experts, but layer %u has %u", eb->n_experts,
                             eb->layer, b->is_moe ? b->moe->n_experts : 0);
    if (eb->n_hashes && eb->n_hashes != eb->n_experts)
        return FT_EXPERT_ERR(FT_STATUS_FORMAT, "%zu hashes for %u experts", eb->n_hashes, eb->n_experts);
    if (seen[eb->layer]++)
        return FT_EXPERT_ERR(FT_STATUS_FORMAT, "a second expert block for layer %u", eb->layer);
    if (eb->file >= plan->n_weight_files)
        return FT_EXPERT_ERR(FT_STATUS_OUT_OF_RANGE, "file %u, but the plan has %zu weight files",
                             eb->file, plan->n_weight_files);
    const Ftplan__WeightFile *wf = plan->weight_files[eb->file];
    if (eb->stride == 0 || eb->stride % FT_FTW_ALIGN || eb->offset % FT_FTW_ALIGN ||
        eb->offset < FT_FTW_HEADER_BYTES)
        return FT_EXPERT_ERR(FT_STATUS_FORMAT,
                             "offset %llu and stride %llu must be non-zero multiples of %u "
                             "past the header",
                             (unsigned long long)eb->offset, (unsigned long long)eb->stride,
                             FT_FTW_ALIGN);
    uint64_t extent;
    if (!ft_mul_u64(eb->n_experts, eb->stride, &extent) ||
        !ft_range_ok(eb->offset, extent, wf->size))
        return FT_EXPERT_ERR(FT_STATUS_OUT_OF_RANGE,
                             "offset %llu + %u experts * %llu bytes lies past the end of '%s' "
                             "(%llu bytes)",
                             (unsigned long long)eb->offset, eb->n_experts,
                             (unsigned long long)eb->stride, wf->name,
                             (unsigned long long)wf->size);
    return FT_OK;
}

ft_status_t ft_plan_check_expert_blocks(const Ftplan__Plan *plan, const char *name)
{
    /* n_layers is already bounded by FT_PLAN_MAX_LAYERS. */
    uint8_t *seen = calloc(plan->hparams->n_layers, 1);
    if (!seen)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", name);
    ft_status_t st = FT_OK;
    for (size_t i = 0; i < plan->n_expert_blocks && !st; i++)
        st = ft_plan_check_expert_block(plan, i, seen, name);
    free(seen);
    return st;
}
