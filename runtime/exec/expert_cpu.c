/* One routed expert on the CPU (expert_cpu.h). */
#include "expert_cpu.h"

#include "../backends/cpu/kernels.h"
#include "ops.h"

/* y = W x over all rows of mat (weights at w). */
static void ft_mat_apply(const ft_mat_t *mat, int gen, const uint8_t *w, const void *xp, uint32_t n, float *y,
                         size_t ldy)
{
    ft_mat_mul(mat, gen, w, xp, n, 0, mat->rows, y, ldy);
}

/* y[t] += b for n rows of `rows` floats (b NULL: none). */
static void ft_rows_bias(float *y, const float *b, uint32_t n, uint32_t rows)
{
    for (uint32_t t = 0; b && t < n; t++)
        for (uint32_t r = 0; r < rows; r++)
            y[(size_t)t * rows + r] += b[r];
}

ft_expert_params_t ft_expert_params(const ft_xop_t *x, uint32_t e)
{
    const ft_layer_t *L = x->L;
    const uint32_t ffn = L->expert_ffn, dm = L->down.rows;
    const ft_expert_params_t ep = {x->bias[0] ? x->bias[0] + (size_t)e * ffn : NULL,
                                   x->bias[1] ? x->bias[1] + (size_t)e * ffn : NULL,
                                   x->bias[2] ? x->bias[2] + (size_t)e * dm : NULL,
                                   x->act,
                                   x->act_alpha,
                                   x->act_limit};
    return ep;
}

void ft_cpu_expert(const ft_layer_t *L, int gen, const ft_expert_params_t *ep, const uint8_t *wg,
                   const uint8_t *wu, const uint8_t *wd, const float *xrows, void *xp, uint32_t n, float *g,
                   float *u, void *ap, float *out)
{
    const int plain = !ep || (!ep->b_gate && !ep->b_up && !ep->b_down && ep->act == 0);
    if (gen && L->expert_kernel && plain) { /* the plan's fused gate + up + SwiGLU + down */
        L->expert_kernel(wg, wu, wd, xp, n, g, u, ap, out);
        return;
    }
    const uint32_t ffn = L->expert_ffn, d = L->gate.cols;
    ft_mat_apply(&L->gate, gen, wg, xp, n, g, ffn);
    if (L->up.dtype != L->gate.dtype)
        ft_cpu_act_prepare(L->up.dtype, xrows, d, n, d, xp);
    ft_mat_apply(&L->up, gen, wu, xp, n, u, ffn);
    if (plain) {
        ft_op_swiglu(g, u, n * ffn);
    } else {
        ft_rows_bias(g, ep->b_gate, n, ffn);
        ft_rows_bias(u, ep->b_up, n, ffn);
        if (ep->act == 2) /* ACT_SWIGLU_OAI */
            ft_op_swiglu_oai(g, u, n * ffn, ep->alpha, ep->limit);
        else
            ft_op_swiglu(g, u, n * ffn);
    }
    ft_cpu_act_prepare(L->down.dtype, g, ffn, n, ffn, ap);
    ft_mat_apply(&L->down, gen, wd, ap, n, out, L->down.rows);
    if (!plain)
        ft_rows_bias(out, ep->b_down, n, L->down.rows);
}
