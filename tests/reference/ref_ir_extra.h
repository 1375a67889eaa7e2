/* Test helper: tensors appended to an imported IR, as if the checkpoint
 * had them (a feature's weights on a fixture whose format does not carry
 * them yet). Their f32 bytes go to one new source file. */
#ifndef FT_REF_IR_EXTRA_H
#define FT_REF_IR_EXTRA_H

#include "freetoken.h"
#include "ir.h"

typedef struct ft_ref_extra {
    const char *name;       /* canonical, "blk.3.ffn_up_shexp.weight" */
    ft_tensor_role_t role;
    int32_t layer;
    uint32_t n_dims;
    uint64_t shape[3];      /* row-major */
    const float *data;      /* prod(shape) values */
} ft_ref_extra_t;

/* Writes the n tensors' data to path (back to back) and appends them to
 * ir (its arena owns the new tables), then validates the IR. */
ft_status_t ft_ref_ir_add_f32(ft_ir_model_t *ir, const char *path, const ft_ref_extra_t *t, uint32_t n);

/* Deterministic values in [-amp, amp): a fixture's random weights. */
void ft_ref_fill_uniform(float *v, uint64_t n, uint32_t seed, float amp);

#endif
