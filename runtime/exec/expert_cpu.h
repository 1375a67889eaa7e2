/* One routed expert on the CPU's kernels, for the cpu/sim MOE op
 * (forward_moe.c) and the experts a device's dispatch keeps on the CPU
 * (dev_moe.c): the same products in the same order either way. */
#ifndef FT_EXEC_EXPERT_CPU_H
#define FT_EXEC_EXPERT_CPU_H

#include "model.h"
#include "program.h"

#include <stdint.h>

/* out [n, d] = down(act(gate x [+ b]) * (up x [+ b])) [+ b] for the n rows
 * x of one expert
 * with weights wg, wu, wd (L's formats and shapes). xp holds the rows
 * prepared for gate's format (re-prepared from xrows, the float rows,
 * when up's format differs); g, u [n, ffn] and ap (the SwiGLU rows
 * prepared for down) are scratch. gen: the plan's generated kernels (the
 * fused expert, else per product) where the model has them; the fused
 * expert only for a plain SwiGLU expert. */
/* What makes an expert other than a plain SwiGLU one (gpt-oss): the
 * expert's bias rows for gate, up ([ffn]) and down ([d]), each NULL for
 * none, and the activation (plan Activation: ACT_SILU or ACT_SWIGLU_OAI
 * with alpha and limit). NULL params: no biases, SwiGLU. */
typedef struct ft_expert_params {
    const float *b_gate, *b_up, *b_down;
    int act;
    float alpha, limit;
} ft_expert_params_t;

/* Expert e's parameters in the MOE op x: its rows of x's bias stacks,
 * x's activation. */
ft_expert_params_t ft_expert_params(const ft_xop_t *x, uint32_t e);

void ft_cpu_expert(const ft_layer_t *L, int gen, const ft_expert_params_t *ep, const uint8_t *wg,
                   const uint8_t *wu, const uint8_t *wd, const float *xrows, void *xp, uint32_t n, float *g,
                   float *u, void *ap, float *out);

#endif
