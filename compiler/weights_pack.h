/* Repacking weights into an FTW file: every tensor on a 4 KiB boundary,
 * dense tensors first (the region a GPU keeps resident), then each MoE
 * layer's experts as one block in which expert e (gate, up, down together)
 * is the contiguous blob [offset + e*stride, +stride). */
#ifndef FT_COMPILER_WEIGHTS_PACK_H
#define FT_COMPILER_WEIGHTS_PACK_H

#include "compile.h"

#include <stdint.h>

/* Where one IR tensor landed in the FTW file. */
typedef struct ft_placement {
    ft_dtype_t dtype;       /* format written */
    uint32_t layout;        /* ft_wlayout_t: how its rows are arranged */
    uint64_t offset;        /* absolute, 4 KiB aligned */
    uint64_t size;          /* bytes; for expert stacks of one expert's slice */
    uint64_t expert_stride; /* 0 for ordinary tensors */
} ft_placement_t;

typedef struct ft_expert_layout {
    uint32_t layer;
    uint32_t n_experts;
    uint64_t offset; /* block start */
    uint64_t stride; /* bytes per expert, a multiple of 4096 */
} ft_expert_layout_t;

typedef struct ft_packed_weights {
    ft_placement_t *placements; /* [model->n_tensors], parallel to model->tensors */
    ft_expert_layout_t *experts;
    uint32_t n_expert_layouts;
    uint64_t file_size;
    uint8_t hash[16];
} ft_packed_weights_t;

/* The format tensor t of model m is written in: 1-D tensors (norms) and
 * float routers are always F32, other matrices take opts->format when set,
 * else opts->mix's choice for them when set, else keep the source format. */
ft_dtype_t ft_pack_target_dtype(const ft_ir_model_t *m, const ft_ir_tensor_t *t,
                                const ft_compile_options_t *opts);

/* The layout tensor t is written in, as `dtype`: FT_WLAYOUT_Q8_0_R16 for
 * the Q8_0 matrices the AVX-512 generated kernels multiply (rows a
 * multiple of 16) when the bundle has no CUDA kernels, else rows (the
 * CUDA kernels and the other CPU modules read rows). */
uint32_t ft_pack_target_layout(const ft_ir_tensor_t *t, ft_dtype_t dtype, const ft_compile_options_t *opts);

/* Where every tensor will land (formats, sizes, offsets, the expert
 * blocks) without reading or writing weights, after checking each tensor
 * can be written in its target format: the plan and its partition are
 * built from this before anything is written. Fills *out but file_size and
 * hash (free with ft_packed_weights_release). */
FT_WARN_UNUSED ft_status_t ft_weights_layout(const ft_ir_model_t *model, const ft_compile_options_t *opts,
                                             ft_packed_weights_t *out);

/* Writes path as pw lays it out (a writer that lands elsewhere is an
 * internal error) and sets pw->file_size and pw->hash. */
FT_WARN_UNUSED ft_status_t ft_weights_pack(const ft_ir_model_t *model, const ft_compile_options_t *opts,
                                           const char *path, ft_packed_weights_t *pw);
void ft_packed_weights_release(ft_packed_weights_t *pw);

#endif
