#include "weights_pack.h"

#include "../runtime/base/checked.h"
#include "../runtime/base/mapped_file.h"
#include "../runtime/format/convert.h"
#include "../runtime/format/ftw.h"
#include "../runtime/format/wlayout.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define FT_PACK_ALIGN 4096u
#define FT_PACK_CHUNK_BYTES (1u << 20) /* conversion batch */

typedef struct ft_pack_ctx {
    const ft_ir_model_t *m;
    const ft_compile_options_t *opts;
    ft_mapped_file_t **maps; /* [m->n_files] */
    ft_ftw_writer_t *w;
    uint8_t *buf; /* FT_PACK_CHUNK_BYTES + one row of slack */
    uint64_t buf_bytes;
    uint64_t done, total; /* progress, in bytes written */
    /* The layout of the part being written (ft_pack_begin): bytes gather
     * in grp until a group of rows is whole, which is then rearranged
     * into grp_out and written. */
    uint32_t layout;
    size_t grp_bytes, grp_cap, grp_fill, row_bytes;
    uint8_t *grp, *grp_out;
} ft_pack_ctx_t;

/* The weight formats (dtype.h's FT_DTYPE_FLAG_WEIGHT): those the packer
 * converts to and between. */
static int ft_is_convertible(ft_dtype_t d)
{
    return ft_dtype_has(d, FT_DTYPE_FLAG_WEIGHT);
}

/* Plain FP8 checkpoint tensors are converted from, never to: the kernels
 * compute FP8 blocks, not plain E4M3/E5M2 rows. */
static int ft_is_convertible_src(ft_dtype_t d)
{
    return ft_is_convertible(d) || d == FT_DTYPE_F8_E4M3 || d == FT_DTYPE_F8_E5M2;
}

ft_dtype_t ft_pack_target_dtype(const ft_ir_model_t *m, const ft_ir_tensor_t *t,
                                const ft_compile_options_t *opts)
{
    if (t->n_dims == 1)
        return FT_DTYPE_F32; /* norms: tiny, read every token, keep them exact */
    if (t->role == FT_ROLE_FFN_GATE_EXPS_BIAS || t->role == FT_ROLE_FFN_UP_EXPS_BIAS ||
        t->role == FT_ROLE_FFN_DOWN_EXPS_BIAS)
        return FT_DTYPE_F32; /* expert biases: added in f32 (the schedule's MOE takes f32 only) */
    /* Routers are small and decide which experts run: like llama.cpp's
     * quantizer, never make a float router lossier. */
    if (t->role == FT_ROLE_FFN_ROUTER && (t->dtype == FT_DTYPE_F32 || t->dtype == FT_DTYPE_F16 ||
                                          t->dtype == FT_DTYPE_BF16))
        return FT_DTYPE_F32;
    if (opts->format != FT_DTYPE_INVALID)
        return opts->format;
    if (opts->mix != FT_QUANT_MIX_NONE)
        return ft_quant_mix_dtype(m, t, opts->mix);
    /* The kernels have no plain FP8 rows: an F8_E4M3 matrix becomes FP8
     * blocks with scale 1 (same bytes), or bf16 when its rows are not whole
     * blocks; F8_E5M2 is the high byte of an fp16. Both exact. A scaled
     * FP8 matrix (DeepSeek's or compressed-tensors') becomes FP8 blocks with
     * its scales (ft_pack_fp8_row), never widened: ft_pack_check refuses
     * rows that are not whole blocks. */
    if (t->dtype == FT_DTYPE_F8_E4M3 && t->scale_kind != FT_IR_SCALE_NONE)
        return FT_DTYPE_FP8;
    if (t->dtype == FT_DTYPE_F8_E4M3)
        return t->shape[t->n_dims - 1] % FT_FP8_BLOCK_ELEMS == 0 ? FT_DTYPE_FP8 : FT_DTYPE_BF16;
    if (t->dtype == FT_DTYPE_F8_E5M2) return FT_DTYPE_F16;
    return t->dtype;
}

static uint64_t ft_row_elems(const ft_ir_tensor_t *t)
{
    return t->shape[t->n_dims - 1];
}

/* Bytes of `rows` rows of t in dtype d (validated IR: cannot overflow). */
static uint64_t ft_rows_bytes(const ft_ir_tensor_t *t, ft_dtype_t d, uint64_t rows)
{
    uint64_t rb = 0;
    ft_dtype_row_bytes(d, ft_row_elems(t), &rb);
    return rb * rows;
}

/* Checks up front that t can be written as `dst`, so that a bad request
 * fails before any output is produced. */
FT_WARN_UNUSED static ft_status_t ft_pack_check(const ft_ir_model_t *m, const ft_ir_tensor_t *t, ft_dtype_t dst)
{
    uint64_t rb;
    if (dst != t->dtype && (!ft_is_convertible(dst) || !ft_is_convertible_src(t->dtype))) {
        char list[256];
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: tensor '%s': cannot convert %s to %s (conversions exist between "
                              "%s, and from f8_e4m3 and f8_e5m2; other formats are copied as they are)",
                              m->source_name, t->name, ft_dtype_name(t->dtype), ft_dtype_name(dst),
                              ft_dtype_list(FT_DTYPE_FLAG_WEIGHT, "and", list, sizeof(list)));
    }
    if (!ft_dtype_row_bytes(dst, ft_row_elems(t), &rb))
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: tensor '%s': rows of %" PRIu64 " elements cannot be stored as %s "
                              "(block of %u)",
                              m->source_name, t->name, ft_row_elems(t), ft_dtype_name(dst),
                              ft_dtype_info(dst)->block_elems);
    if (t->scale_kind != FT_IR_SCALE_NONE && ft_row_elems(t) % FT_FP8_BLOCK_ELEMS != 0)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: tensor '%s' (scales '%s'): scaled F8_E4M3 rows of %" PRIu64
                              " elements are not whole FP8 blocks of %u, and freetoken does not "
                              "widen FP8 checkpoints",
                              m->source_name, t->name, t->scale_name, ft_row_elems(t),
                              (unsigned)FT_FP8_BLOCK_ELEMS);
    if (t->xform == FT_IR_XFORM_MXFP4_HF || t->xform == FT_IR_XFORM_DEINTERLEAVE)
        return FT_OK; /* its pieces are its interleaved source (validated IR) */
    uint64_t src_rb = ft_rows_bytes(t, t->dtype, 1);
    for (uint32_t p = 0; p < t->n_pieces; p++)
        if (t->pieces[p].n_bytes % src_rb != 0)
            return ft_status_make(FT_STATUS_UNSUPPORTED,
                                  "%s: tensor '%s': source piece %u is not a whole number of rows",
                                  m->source_name, t->name, p);
    return FT_OK;
}

/* Every byte of a tensor goes out through here: straight to the file in
 * the rows layout, else a group of rows at a time, rearranged. */
FT_WARN_UNUSED static ft_status_t ft_pack_out(ft_pack_ctx_t *c, const uint8_t *p, uint64_t n)
{
    if (c->layout == FT_WLAYOUT_ROWS)
        return ft_ftw_writer_write(c->w, p, n);
    ft_status_t st = FT_OK;
    while (n > 0 && !st) {
        const size_t take = c->grp_bytes - c->grp_fill < n ? c->grp_bytes - c->grp_fill : (size_t)n;
        memcpy(c->grp + c->grp_fill, p, take);
        c->grp_fill += take;
        p += take;
        n -= take;
        if (c->grp_fill == c->grp_bytes) {
            ft_wlayout_pack_group(c->layout, c->grp, c->row_bytes, c->grp_out);
            st = ft_ftw_writer_write(c->w, c->grp_out, c->grp_bytes);
            c->grp_fill = 0;
        }
    }
    return st;
}

/* Starts a tensor part (a matrix, or one expert's slice) whose rows are
 * row_bytes each, in `layout`. */
FT_WARN_UNUSED static ft_status_t ft_pack_begin(ft_pack_ctx_t *c, uint32_t layout, uint64_t row_bytes)
{
    c->layout = layout;
    c->grp_fill = 0;
    if (layout == FT_WLAYOUT_ROWS)
        return FT_OK;
    const size_t need = (size_t)row_bytes * ft_wlayout_group_rows(layout);
    if (need > c->grp_cap) {
        free(c->grp);
        free(c->grp_out);
        c->grp = malloc(need);
        c->grp_out = malloc(need);
        c->grp_cap = c->grp && c->grp_out ? need : 0;
        if (!c->grp_cap)
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory (%zu bytes of rows)", need);
    }
    c->grp_bytes = need;
    c->row_bytes = (size_t)row_bytes;
    return FT_OK;
}

/* Ends a part: its rows filled whole groups (ft_wlayout_fits). */
FT_WARN_UNUSED static ft_status_t ft_pack_end(ft_pack_ctx_t *c, const char *what)
{
    const int torn = c->layout != FT_WLAYOUT_ROWS && c->grp_fill != 0;
    c->layout = FT_WLAYOUT_ROWS;
    c->grp_fill = 0;
    return torn ? ft_status_make(FT_STATUS_INTERNAL, "%s: tensor '%s' ends inside a group of rows",
                                 c->m->source_name, what)
                : FT_OK;
}

uint32_t ft_pack_target_layout(const ft_ir_tensor_t *t, ft_dtype_t dtype, const ft_compile_options_t *opts)
{
    if (!opts->cpu_isa || strcmp(opts->cpu_isa, "avx512") != 0 || opts->n_cuda_archs != 0 || t->n_dims < 2)
        return FT_WLAYOUT_ROWS;
    /* the roles the CPU runtime reads only as products (ft_mat_mul):
     * never the embedding (rows looked up) nor MLA's or DeltaNet's */
    switch (t->role) {
    case FT_ROLE_OUTPUT: case FT_ROLE_ATTN_Q: case FT_ROLE_ATTN_K: case FT_ROLE_ATTN_V:
    case FT_ROLE_ATTN_O: case FT_ROLE_FFN_GATE: case FT_ROLE_FFN_UP: case FT_ROLE_FFN_DOWN:
    case FT_ROLE_FFN_GATE_EXPS: case FT_ROLE_FFN_UP_EXPS: case FT_ROLE_FFN_DOWN_EXPS:
        break;
    default:
        return FT_WLAYOUT_ROWS;
    }
    return ft_wlayout_fits(FT_WLAYOUT_Q8_0_R16, dtype, t->shape[t->n_dims - 2], t->shape[t->n_dims - 1])
               ? FT_WLAYOUT_Q8_0_R16
               : FT_WLAYOUT_ROWS;
}

static void ft_pack_progress(ft_pack_ctx_t *c, uint64_t n)
{
    c->done += n;
    if (c->opts->progress)
        c->opts->progress(c->opts->progress_user, "weights", c->done, c->total);
}

FT_WARN_UNUSED static ft_status_t ft_pack_flush(ft_pack_ctx_t *c)
{
    if (!c->buf_bytes)
        return FT_OK;
    ft_status_t st = ft_pack_out(c, c->buf, c->buf_bytes);
    ft_pack_progress(c, c->buf_bytes);
    c->buf_bytes = 0;
    return st;
}

/* Scale i of a scaled FP8 tensor's scale piece s (F32, BF16 or F16,
 * little-endian). */
static float ft_pack_scale_at(const uint8_t *s, ft_dtype_t dt, uint64_t i)
{
    if (dt == FT_DTYPE_F32) {
        const uint8_t *p = s + 4 * i;
        const uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                           (uint32_t)p[3] << 24;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    const uint16_t h = (uint16_t)(s[2 * i] | s[2 * i + 1] << 8);
    if (dt == FT_DTYPE_F16) return ft_fp16_to_fp32(h);
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Row lr of piece p of a scaled FP8 tensor (ir.h ft_ir_scale_kind_t) as FP8
 * blocks (dtype.h: float32 d, then 128 E4M3 bytes): each block keeps its
 * 128 source bytes and takes the source's scale for them, so every value
 * is the checkpoint's value * scale, exactly. */
static void ft_pack_fp8_row(const ft_pack_ctx_t *c, const ft_ir_tensor_t *t, uint32_t p,
                            uint64_t lr, const uint8_t *src, uint8_t *out)
{
    const uint64_t cols = ft_row_elems(t), nb = cols / FT_FP8_BLOCK_ELEMS;
    const uint64_t tiles = (cols + 127) / 128;
    const ft_ir_piece_t *sp = &t->scale_pieces[p];
    const uint8_t *s = c->maps[sp->file]->data + sp->offset;
    const uint64_t sr = lr + (t->scale_row0 ? t->scale_row0[p] : 0); /* the row in the scaled matrix */
    for (uint64_t b = 0; b < nb; b++) {
        const uint64_t i = t->scale_kind == FT_IR_SCALE_TILE128 ? sr / 128 * tiles + b
                           : t->scale_kind == FT_IR_SCALE_ROW   ? sr
                                                                : 0;
        const float d = ft_pack_scale_at(s, t->scale_dtype, i);
        uint32_t u;
        memcpy(&u, &d, 4);
        uint8_t *blk = out + (uint64_t)FT_FP8_BLOCK_BYTES * b;
        for (int k = 0; k < 4; k++)
            blk[k] = (uint8_t)(u >> 8 * k);
        memcpy(blk + 4, src + (uint64_t)FT_FP8_BLOCK_ELEMS * b, FT_FP8_BLOCK_ELEMS);
    }
}

/* One row of t (row lr of piece p, bytes src) converted to dst at out;
 * tmp: an FP8 row's room, used when a scaled FP8 row goes to another
 * format. */
FT_WARN_UNUSED static ft_status_t ft_pack_convert_row(const ft_pack_ctx_t *c, const ft_ir_tensor_t *t,
                                                      ft_dtype_t dst, uint32_t p, uint64_t lr,
                                                      const uint8_t *src, uint8_t *out, uint8_t *tmp)
{
    if (t->scale_kind == FT_IR_SCALE_NONE)
        return ft_convert_row(dst, out, t->dtype, src, ft_row_elems(t));
    if (dst == FT_DTYPE_FP8) {
        ft_pack_fp8_row(c, t, p, lr, src, out);
        return FT_OK;
    }
    ft_pack_fp8_row(c, t, p, lr, src, tmp);
    return ft_convert_row(dst, out, FT_DTYPE_FP8, tmp, ft_row_elems(t));
}

/* n_rows rows of t from src, each read as f32, rewritten (ir.h:
 * ft_ir_rewrite_row: HF's zero-centred norms, A_log, grouped value heads)
 * and converted to dst. */
FT_WARN_UNUSED static ft_status_t ft_pack_rewritten(ft_pack_ctx_t *c, const ft_ir_tensor_t *t,
                                                    ft_dtype_t dst, const uint8_t *src,
                                                    uint64_t n_rows)
{
    const uint64_t n = ft_row_elems(t), src_rb = ft_rows_bytes(t, t->dtype, 1),
                   dst_rb = ft_rows_bytes(t, dst, 1);
    float *row = malloc(2 * n * sizeof(float));
    uint8_t *out = malloc(dst_rb);
    ft_status_t st = FT_OK;
    if (!row || !out) st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!st) st = ft_pack_flush(c);
    for (uint64_t r = 0; r < n_rows && !st; r++) {
        st = ft_convert_row(FT_DTYPE_F32, row, t->dtype, src + r * src_rb, n);
        if (st) break;
        ft_ir_rewrite_row(t, row, row + n, n);
        if (!(st = ft_convert_row(dst, out, FT_DTYPE_F32, row, n)) &&
            !(st = ft_pack_out(c, out, dst_rb)))
            ft_pack_progress(c, dst_rb);
    }
    free(row);
    free(out);
    return st;
}

/* Rows [row0, row0 + n_rows) of an FT_IR_XFORM_MXFP4_HF tensor (its
 * blocks and scales moved into MXFP4 rows) or an FT_IR_XFORM_DEINTERLEAVE
 * one (every step-th column), converted to dst. */
FT_WARN_UNUSED static ft_status_t ft_pack_interleaved(ft_pack_ctx_t *c, const ft_ir_tensor_t *t,
                                                      ft_dtype_t dst, uint64_t row0, uint64_t n_rows)
{
    const uint64_t n = ft_row_elems(t), dst_rb = ft_rows_bytes(t, dst, 1);
    const int mx = t->xform == FT_IR_XFORM_MXFP4_HF;
    uint64_t src_rb = 0, row_rb = ft_rows_bytes(t, t->dtype, 1);
    if (!mx) ft_dtype_row_bytes(t->dtype, n * t->il.step, &src_rb);
    uint8_t *row = malloc(mx ? row_rb : 0), *out = malloc(dst_rb);
    float *f = malloc((mx ? 1 : n * t->il.step + n) * sizeof(float));
    ft_status_t st = FT_OK;
    if (!row && mx) st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!out || !f) st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!st) st = ft_pack_flush(c);
    const ft_ir_piece_t *p0 = &t->pieces[0], *p1 = &t->pieces[mx ? 1 : 0];
    const uint8_t *a = c->maps[p0->file]->data + p0->offset, *b = c->maps[p1->file]->data + p1->offset;
    for (uint64_t r = row0; r < row0 + n_rows && !st; r++) {
        if (mx) {
            ft_ir_mxfp4_hf_row(t, a, b, r, row);
            st = dst == t->dtype ? (memcpy(out, row, dst_rb), FT_OK)
                                 : ft_convert_row(dst, out, t->dtype, row, n);
        } else {
            st = ft_convert_row(FT_DTYPE_F32, f, t->dtype, a + r * src_rb, n * t->il.step);
            if (!st) {
                ft_ir_deinterleave_row(t, f, f + n * t->il.step, n);
                st = ft_convert_row(dst, out, FT_DTYPE_F32, f + n * t->il.step, n);
            }
        }
        if (!st && !(st = ft_pack_out(c, out, dst_rb))) ft_pack_progress(c, dst_rb);
    }
    free(row);
    free(out);
    free(f);
    return ft_status_annotate(st, "%s: tensor '%s'", c->m->source_name, t->name);
}

/* Writes rows [row0, row0 + n_rows) of t, converted to dst. */
FT_WARN_UNUSED static ft_status_t ft_pack_rows(ft_pack_ctx_t *c, const ft_ir_tensor_t *t, ft_dtype_t dst,
                                uint64_t row0, uint64_t n_rows)
{
    if (t->xform == FT_IR_XFORM_MXFP4_HF || t->xform == FT_IR_XFORM_DEINTERLEAVE)
        return ft_pack_interleaved(c, t, dst, row0, n_rows);
    const uint64_t src_rb = ft_rows_bytes(t, t->dtype, 1);
    const uint64_t dst_rb = ft_rows_bytes(t, dst, 1);
    uint64_t row = 0; /* first row of the current piece */
    ft_status_t st = FT_OK;
    for (uint32_t p = 0; p < t->n_pieces && n_rows > 0 && !st; p++) {
        const ft_ir_piece_t *pc = &t->pieces[p];
        uint64_t piece_rows = pc->n_bytes / src_rb;
        if (row0 >= row + piece_rows) {
            row += piece_rows;
            continue;
        }
        uint64_t first = row0 - row;
        uint64_t take = piece_rows - first < n_rows ? piece_rows - first : n_rows;
        const uint8_t *src = c->maps[pc->file]->data + pc->offset + first * src_rb;
        uint8_t *tmp = NULL;
        if (t->scale_kind != FT_IR_SCALE_NONE && dst != FT_DTYPE_FP8 &&
            !(tmp = malloc(ft_rows_bytes(t, FT_DTYPE_FP8, 1))))
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
        if (ft_ir_tensor_rewritten(t)) {
            st = ft_pack_rewritten(c, t, dst, src, take);
        } else if (dst == t->dtype) {
            if (!(st = ft_pack_flush(c)) && !(st = ft_pack_out(c, src, take * src_rb)))
                ft_pack_progress(c, take * src_rb);
        } else {
            for (uint64_t r = 0; r < take && !st; r++) {
                if (c->buf_bytes + dst_rb > FT_PACK_CHUNK_BYTES && (st = ft_pack_flush(c)))
                    break;
                if (dst_rb > FT_PACK_CHUNK_BYTES) { /* a huge row: convert it in place of the batch */
                    uint8_t *big = malloc(dst_rb);
                    if (!big) {
                        free(tmp);
                        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
                    }
                    st = ft_pack_convert_row(c, t, dst, p, first + r, src + r * src_rb, big, tmp);
                    if (!st && !(st = ft_pack_out(c, big, dst_rb)))
                        ft_pack_progress(c, dst_rb);
                    free(big);
                    continue;
                }
                st = ft_pack_convert_row(c, t, dst, p, first + r, src + r * src_rb,
                                         c->buf + c->buf_bytes, tmp);
                c->buf_bytes += dst_rb;
            }
            if (!st)
                st = ft_pack_flush(c);
        }
        free(tmp);
        row0 += take;
        n_rows -= take;
        row += piece_rows;
    }
    return ft_status_annotate(st, "%s: tensor '%s'", c->m->source_name, t->name);
}

static int ft_is_expert_stack(const ft_ir_tensor_t *t)
{
    return t->role == FT_ROLE_FFN_GATE_EXPS || t->role == FT_ROLE_FFN_UP_EXPS ||
           t->role == FT_ROLE_FFN_DOWN_EXPS;
}

/* Pads to the next 4 KiB boundary and checks the writer is where the
 * layout put the next tensor. */
FT_WARN_UNUSED static ft_status_t ft_pack_at(ft_pack_ctx_t *c, uint64_t offset, const char *what)
{
    uint64_t at;
    ft_status_t st = ft_ftw_writer_align(c->w, &at);
    if (!st && at != offset)
        st = ft_status_make(FT_STATUS_INTERNAL, "%s: %s written at %" PRIu64 ", laid out at %" PRIu64,
                            c->m->source_name, what, at, offset);
    return st;
}

FT_WARN_UNUSED static ft_status_t ft_pack_dense(ft_pack_ctx_t *c, const ft_packed_weights_t *pw)
{
    const ft_ir_model_t *m = c->m;
    for (uint32_t i = 0; i < m->n_tensors; i++) {
        const ft_ir_tensor_t *t = &m->tensors[i];
        if (ft_is_expert_stack(t))
            continue;
        const ft_placement_t *pl = &pw->placements[i];
        ft_status_t st = ft_pack_at(c, pl->offset, t->name);
        if (!st)
            st = ft_pack_begin(c, pl->layout, ft_rows_bytes(t, pl->dtype, 1));
        if (!st)
            st = ft_pack_rows(c, t, pl->dtype, 0, ft_ir_tensor_elems(t) / ft_row_elems(t));
        if (!st)
            st = ft_pack_end(c, t->name);
        if (st)
            return st;
    }
    return FT_OK;
}

static const ft_tensor_role_t ft_pack_expert_roles[3] = {FT_ROLE_FFN_GATE_EXPS, FT_ROLE_FFN_UP_EXPS,
                                                         FT_ROLE_FFN_DOWN_EXPS};

/* One MoE layer: expert e = [gate_e | up_e | down_e], each part aligned. */
FT_WARN_UNUSED static ft_status_t ft_pack_expert_layer(ft_pack_ctx_t *c, const ft_packed_weights_t *pw,
                                                       const ft_expert_layout_t *el)
{
    const ft_ir_model_t *m = c->m;
    const ft_ir_tensor_t *parts[3];
    const ft_placement_t *pls[3];
    for (int k = 0; k < 3; k++) {
        parts[k] = ft_ir_find(m, ft_pack_expert_roles[k], (int32_t)el->layer);
        pls[k] = &pw->placements[parts[k] - m->tensors];
    }
    ft_status_t st = FT_OK;
    for (uint32_t e = 0; e < el->n_experts && !st; e++)
        for (int k = 0; k < 3 && !st; k++) {
            uint64_t rows = parts[k]->shape[1];
            st = ft_pack_at(c, pls[k]->offset + (uint64_t)e * el->stride, parts[k]->name);
            if (!st)
                st = ft_pack_begin(c, pls[k]->layout, ft_rows_bytes(parts[k], pls[k]->dtype, 1));
            if (!st)
                st = ft_pack_rows(c, parts[k], pls[k]->dtype, (uint64_t)e * rows, rows);
            if (!st)
                st = ft_pack_end(c, parts[k]->name);
        }
    return st;
}

/* Lays one MoE layer's expert block out at *cur. */
FT_WARN_UNUSED static ft_status_t ft_layout_expert_layer(const ft_ir_model_t *m, const ft_compile_options_t *opts,
                                                         ft_packed_weights_t *pw, uint32_t layer, uint64_t *cur)
{
    ft_placement_t *pls[3];
    uint64_t part_off[3], stride = 0, start, bytes;
    const ft_ir_tensor_t *parts[3];
    for (int k = 0; k < 3; k++) {
        parts[k] = ft_ir_find(m, ft_pack_expert_roles[k], (int32_t)layer);
        pls[k] = &pw->placements[parts[k] - m->tensors];
        pls[k]->dtype = ft_pack_target_dtype(m, parts[k], opts);
        pls[k]->layout = ft_pack_target_layout(parts[k], pls[k]->dtype, opts);
        pls[k]->size = ft_rows_bytes(parts[k], pls[k]->dtype, parts[k]->shape[1]);
        part_off[k] = stride;
        uint64_t aligned;
        if (!ft_align_up_u64(pls[k]->size, FT_PACK_ALIGN, &aligned) || !ft_add_u64(stride, aligned, &stride))
            return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: layer %u: expert size overflows", m->source_name,
                                  layer);
    }
    ft_expert_layout_t *el = &pw->experts[pw->n_expert_layouts++];
    el->layer = layer;
    el->n_experts = (uint32_t)parts[0]->shape[0];
    el->stride = stride;
    if (!ft_align_up_u64(*cur, FT_PACK_ALIGN, &start) || !ft_mul_u64(el->n_experts, stride, &bytes) ||
        !ft_add_u64(start, bytes, cur))
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: layer %u: expert block overflows", m->source_name, layer);
    el->offset = start;
    for (int k = 0; k < 3; k++) {
        pls[k]->offset = start + part_off[k];
        pls[k]->expert_stride = stride;
    }
    return FT_OK;
}

ft_status_t ft_weights_layout(const ft_ir_model_t *m, const ft_compile_options_t *opts, ft_packed_weights_t *out)
{
    memset(out, 0, sizeof(*out));
    out->placements = calloc(m->n_tensors ? m->n_tensors : 1, sizeof(*out->placements));
    out->experts = calloc(m->hp.n_layers ? m->hp.n_layers : 1, sizeof(*out->experts));
    if (!out->placements || !out->experts) {
        ft_packed_weights_release(out);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    ft_status_t st = FT_OK;
    uint64_t cur = FT_FTW_HEADER_BYTES;
    /* Dense tensors first (the region a GPU keeps resident), then the
     * expert blocks, each on a 4 KiB boundary. */
    for (uint32_t i = 0; i < m->n_tensors && !st; i++) {
        const ft_ir_tensor_t *t = &m->tensors[i];
        if ((st = ft_pack_check(m, t, ft_pack_target_dtype(m, t, opts))) || ft_is_expert_stack(t))
            continue;
        ft_placement_t *pl = &out->placements[i];
        pl->dtype = ft_pack_target_dtype(m, t, opts);
        pl->layout = ft_pack_target_layout(t, pl->dtype, opts);
        pl->size = ft_rows_bytes(t, pl->dtype, ft_ir_tensor_elems(t) / ft_row_elems(t));
        if (!ft_align_up_u64(cur, FT_PACK_ALIGN, &pl->offset) || !ft_add_u64(pl->offset, pl->size, &cur))
            st = ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: tensor '%s': offset overflows", m->source_name,
                                t->name);
    }
    for (uint32_t l = 0; l < m->hp.n_layers && !st; l++)
        if (m->blocks[l].is_moe)
            st = ft_layout_expert_layer(m, opts, out, l, &cur);
    if (st)
        ft_packed_weights_release(out);
    return st;
}

FT_WARN_UNUSED static ft_status_t ft_pack_open_sources(ft_pack_ctx_t *c)
{
    c->maps = calloc(c->m->n_files ? c->m->n_files : 1, sizeof(*c->maps));
    if (!c->maps)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    for (uint32_t f = 0; f < c->m->n_files; f++) {
        ft_status_t st = ft_mapped_file_open(c->m->files[f].path, &c->maps[f]);
        if (st)
            return st;
        if (c->maps[f]->size != c->m->files[f].size)
            return ft_status_make(FT_STATUS_MISMATCH, "%s: file changed size while compiling",
                                  c->m->files[f].path);
    }
    return FT_OK;
}

ft_status_t ft_weights_pack(const ft_ir_model_t *m, const ft_compile_options_t *opts, const char *path,
                            ft_packed_weights_t *pw)
{
    ft_pack_ctx_t c = {.m = m, .opts = opts};
    ft_status_t st = FT_OK;
    c.buf = malloc(FT_PACK_CHUNK_BYTES);
    if (!c.buf) {
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < m->n_tensors; i++) {
        const ft_ir_tensor_t *t = &m->tensors[i];
        c.total += ft_rows_bytes(t, pw->placements[i].dtype, ft_ir_tensor_elems(t) / ft_row_elems(t));
    }
    if ((st = ft_pack_open_sources(&c)) || (st = ft_ftw_writer_create(path, &c.w)))
        goto out;
    st = ft_pack_dense(&c, pw);
    for (uint32_t i = 0; i < pw->n_expert_layouts && !st; i++)
        st = ft_pack_expert_layer(&c, pw, &pw->experts[i]);
    if (!st) {
        st = ft_ftw_writer_finish(c.w, &pw->file_size, pw->hash);
        c.w = NULL;
    }
out:
    if (c.w)
        ft_ftw_writer_abort(c.w);
    if (c.maps)
        for (uint32_t f = 0; f < m->n_files; f++)
            ft_mapped_file_close(c.maps[f]);
    free(c.maps);
    free(c.buf);
    free(c.grp);
    free(c.grp_out);
    return st;
}

void ft_packed_weights_release(ft_packed_weights_t *pw)
{
    free(pw->placements);
    free(pw->experts);
    memset(pw, 0, sizeof(*pw));
}
