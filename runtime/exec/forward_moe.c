/* The ROUTER and MOE ops on the CPU (see forward_internal.h): routing,
 * the experts over the tokens routed to them (through the offload's
 * decisions when there is one), and the weighted combination into the
 * output buffer. */
#include "forward_internal.h"

#include "../backends/cpu/kernels.h"
#include "expert_cpu.h"
#include "ops.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

/* ---- mixture of experts ---------------------------------------------- */

typedef struct ft_moe_run {
    ft_step_t *st;
    ft_work_t *w;
    const ft_layer_t *L;
    const ft_xop_t *x; /* the MOE op: its expert biases and activation */
    const float *hin; /* the input rows as floats */
    uint32_t n_active;
    atomic_uint next; /* next entry of e_active to take */
    /* The input rows already prepared for the experts' format by a fused
     * norm + preparation (w->xp when the router shares the format, else
     * the input buffer's own memory), or NULL: gather the float rows of
     * hin and prepare them per expert. */
    const uint8_t *xp_rows;
} ft_moe_run_t;

/* One expert over the tokens routed to it: down(silu(gate x) * up x). */
static void ft_expert(ft_step_t *st, const ft_xop_t *x, ft_expert_scratch_t *es, uint32_t e,
                      const uint8_t *blob, const uint8_t *xp_rows, const float *hin)
{
    ft_work_t *w = st->w;
    const ft_layer_t *L = x->L;
    const ft_expert_params_t ep = ft_expert_params(x, e);
    /* Weights from an offload slot or stream buffer when the dispatcher put
     * the expert there, else from the mapped FTW stacks. */
    const uint8_t *wg = blob ? blob + L->off_gate : ft_mat_expert(&L->gate, e);
    const uint8_t *wu = blob ? blob + L->off_up : ft_mat_expert(&L->up, e);
    const uint8_t *wd = blob ? blob + L->off_down : ft_mat_expert(&L->down, e);
    const uint32_t d = st->e->model->d_model, U = st->e->model->max_used;
    const uint32_t n_e = w->e_count[e];
    const uint32_t *list = w->e_list + (size_t)e * w->rows;
    if (xp_rows) { /* prepared once per token: gather the prepared rows */
        const size_t xrb = ft_cpu_act_row_bytes(L->gate.dtype, d);
        for (uint32_t i = 0; i < n_e; i++)
            memcpy((uint8_t *)es->xp + (size_t)i * xrb, xp_rows + (size_t)(list[i] / U) * xrb, xrb);
    } else {
        for (uint32_t i = 0; i < n_e; i++)
            memcpy(es->xrows + (size_t)i * d, hin + (size_t)(list[i] / U) * d, d * sizeof(float));
        ft_cpu_act_prepare(L->gate.dtype, es->xrows, d, n_e, d, es->xp);
    }
    ft_cpu_expert(L, w->use_generated, &ep, wg, wu, wd, es->xrows, es->xp, n_e, es->g, es->u, es->ap, es->dn);
    for (uint32_t i = 0; i < n_e; i++)
        memcpy(w->eo + (size_t)list[i] * d, es->dn + (size_t)i * d, d * sizeof(float));
}

static void ft_moe_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    ft_moe_run_t *r = ctx;
    (void)nt;
    for (;;) {
        uint32_t i = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed);
        if (i >= r->n_active)
            break;
        ft_expert(r->st, r->x, &r->w->es[ti], (uint32_t)r->w->e_active[i], r->w->e_blob[i], r->xp_rows, r->hin);
    }
}

/* ---- decode: every expert split across the threads ------------------- */

/* One decode token routes to K experts. Handing whole experts to threads
 * leaves one thread idle for up to an expert's time at the end (8 experts
 * on 2 threads, each a DRAM stream); instead both threads take part of
 * every expert: run 1 computes gate and up rows, SwiGLU and the down
 * input's blocks for a share of each expert's ffn rows, run 2 a share of
 * each expert's down rows. The same operations on the same rows as the
 * whole-expert path (the fused kernel's template quantizer equals the
 * runtime's), so the results are bit-identical to it. Scratch: thread 0's
 * expert buffers, which hold max_used rows (session.c). */
typedef struct ft_moe_dec_run {
    ft_step_t *st;
    ft_work_t *w;
    const ft_layer_t *L;
    uint32_t n_active;
    const uint8_t *xp; /* the token's row prepared for gate/up */
} ft_moe_dec_run_t;

static void ft_moe_dec_weights(const ft_moe_dec_run_t *r, uint32_t j, const uint8_t **wg, const uint8_t **wu,
                               const uint8_t **wd)
{
    const ft_layer_t *L = r->L;
    const uint8_t *blob = r->w->e_blob[j];
    const uint32_t e = (uint32_t)r->w->e_active[j];
    *wg = blob ? blob + L->off_gate : ft_mat_expert(&L->gate, e);
    *wu = blob ? blob + L->off_up : ft_mat_expert(&L->up, e);
    *wd = blob ? blob + L->off_down : ft_mat_expert(&L->down, e);
}

static void ft_mat_rows(const ft_mat_t *mat, int gen, const uint8_t *w, const void *xp, uint32_t r0,
                        uint32_t r1, float *y)
{
    ft_mat_mul(mat, gen, w, xp, 1, r0, r1, y, mat->rows);
}

static void ft_moe_dec_gate_up(void *ctx, uint32_t ti, uint32_t nt)
{
    const ft_moe_dec_run_t *r = ctx;
    const ft_layer_t *L = r->L;
    ft_expert_scratch_t *es = &r->w->es[0];
    const uint32_t ffn = L->expert_ffn;
    const uint32_t blk = ft_cpu_act_type(L->down.dtype) == FT_DTYPE_Q8_K ? 256 : 32;
    const size_t arb = ft_cpu_act_row_bytes(L->down.dtype, ffn);
    uint64_t b, e;
    ft_split_range(ffn, ffn % blk ? ffn : ft_mat_grain(&L->gate, blk), ti, nt, &b, &e);
    if (b >= e)
        return;
    for (uint32_t j = 0; j < r->n_active; j++) {
        const uint8_t *wg, *wu, *wd;
        ft_moe_dec_weights(r, j, &wg, &wu, &wd);
        float *g = es->g + (size_t)j * ffn, *u = es->u + (size_t)j * ffn;
        ft_mat_rows(&L->gate, r->w->use_generated, wg, r->xp, (uint32_t)b, (uint32_t)e, g);
        ft_mat_rows(&L->up, r->w->use_generated, wu, r->xp, (uint32_t)b, (uint32_t)e, u);
        ft_op_swiglu(g + b, u + b, (uint32_t)(e - b));
        ft_cpu_act_prepare(L->down.dtype, g + b, ffn, 1, (uint32_t)(e - b),
                           (uint8_t *)es->ap + j * arb + ft_cpu_act_row_bytes(L->down.dtype, (uint32_t)b));
    }
}

static void ft_moe_dec_down(void *ctx, uint32_t ti, uint32_t nt)
{
    const ft_moe_dec_run_t *r = ctx;
    const ft_layer_t *L = r->L;
    ft_step_t *st = r->st;
    ft_work_t *w = r->w;
    const uint32_t d = st->e->model->d_model;
    const size_t arb = ft_cpu_act_row_bytes(L->down.dtype, L->expert_ffn);
    uint64_t b, e;
    ft_split_range(d, ft_mat_grain(&L->down, FT_MM_GRAIN), ti, nt, &b, &e);
    for (uint32_t j = 0; j < r->n_active && b < e; j++) {
        const uint8_t *wg, *wu, *wd;
        ft_moe_dec_weights(r, j, &wg, &wu, &wd);
        const uint32_t ex = (uint32_t)w->e_active[j];
        float *y = w->eo + (size_t)w->e_list[(size_t)ex * w->rows] * d; /* its one slot */
        ft_mat_rows(&L->down, w->use_generated, wd, (const uint8_t *)w->es[0].ap + j * arb, (uint32_t)b,
                    (uint32_t)e, y);
    }
}

/* The experts of one decode token, split by rows (see above). */
static void ft_moe_decode(ft_step_t *st, const ft_layer_t *L, uint32_t n_active, const uint8_t *xp_rows,
                          const float *hin)
{
    ft_work_t *w = st->w;
    const uint32_t d = st->e->model->d_model;
    const uint8_t *xp = xp_rows;
    if (!xp) {
        ft_cpu_act_prepare(L->gate.dtype, hin, d, 1, d, w->es[0].xp);
        xp = w->es[0].xp;
    }
    ft_moe_dec_run_t r = {st, w, L, n_active, xp};
    ft_threadpool_run(st->e->pool, ft_moe_dec_gate_up, &r);
    ft_threadpool_run(st->e->pool, ft_moe_dec_down, &r);
}

typedef struct ft_router_run {
    ft_step_t *st;
    ft_work_t *w;
    const ft_layer_t *L;
    uint32_t n;
} ft_router_run_t;

/* The plan's router kernel over a share of the tokens. */
static void ft_router_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    const ft_router_run_t *r = ctx;
    const ft_layer_t *L = r->L;
    ft_step_t *st = r->st;
    ft_work_t *w = r->w;
    const uint32_t U = st->e->model->max_used;
    const size_t xrb = ft_cpu_act_row_bytes(L->router.dtype, L->router.cols);
    uint64_t b, e;
    ft_split_range(r->n, 1, ti, nt, &b, &e);
    if (b < e)
        L->router_kernel(L->router.data, L->router.row_bytes, (const uint8_t *)w->xp + b * xrb, (uint32_t)(e - b),
                         L->n_used, L->norm_topk_prob, w->router + b * L->n_experts, w->sel + b * U,
                         w->sel_w + b * U, U);
}

/* Group-limited choice (DeepSeek-V3's): each of n_groups equal groups of
 * experts scores the sum of its two best scores (its one score when it
 * has one expert); only the experts of the n_groups_used best groups (ties:
 * the lower group) may be chosen: the others' scores in sel become -inf.
 * gs: [n_groups] scratch. sel may be p (the group scores are taken first). */
static void ft_route_groups(const float *p, uint32_t E, uint32_t n_groups, uint32_t n_used, float *sel, float *gs)
{
    const uint32_t size = E / n_groups;
    for (uint32_t g = 0; g < n_groups; g++) {
        float a = -INFINITY, b = -INFINITY;
        for (uint32_t i = g * size; i < (g + 1) * size; i++) {
            if (p[i] > a) {
                b = a;
                a = p[i];
            } else if (p[i] > b) {
                b = p[i];
            }
        }
        gs[g] = size > 1 ? a + b : a;
    }
    for (uint32_t e = 0; e < E; e++)
        sel[e] = p[e];
    for (uint32_t g = 0; g < n_groups; g++) {
        uint32_t better = 0; /* groups ranked before g */
        for (uint32_t h = 0; h < n_groups; h++)
            better += gs[h] > gs[g] || (gs[h] == gs[g] && h < g);
        if (better >= n_used)
            for (uint32_t i = g * size; i < (g + 1) * size; i++)
                sel[i] = -INFINITY;
    }
}

/* One token's choice from its router logits p (scored in place): softmax
 * or sigmoid scores, the top K of them (plus the selection bias when the
 * op has one, within the allowed groups, whose scores are the biased
 * ones too), their unbiased scores as weights, renormalized to sum 1 when
 * asked, times the scale. scratch: [2 * E]. */
static void ft_route_token(const ft_xop_t *x, float *p, uint32_t E, uint32_t K, float *scratch, int32_t *sel,
                           float *w)
{
    if (x->scoring)
        for (uint32_t e = 0; e < E; e++)
            p[e] = 1.0f / (1.0f + expf(-p[e]));
    else
        ft_op_softmax(p, E);
    const float *choice = p; /* the scores the experts are chosen by */
    if (x->sel_bias) {
        for (uint32_t e = 0; e < E; e++)
            scratch[e] = p[e] + x->sel_bias[e];
        choice = scratch;
    }
    if (x->n_groups) {
        ft_route_groups(choice, E, x->n_groups, x->n_groups_used, scratch, scratch + E);
        choice = scratch;
    }
    ft_op_topk(choice, E, K, sel);
    float sum = 0.0f;
    for (uint32_t k = 0; k < K; k++)
        sum += (w[k] = p[sel[k]]);
    for (uint32_t k = 0; k < K && x->L->norm_topk_prob; k++)
        w[k] /= sum;
    for (uint32_t k = 0; k < K && x->routed_scaling != 1.0f; k++)
        w[k] *= x->routed_scaling;
}

/* Routing of n tokens into w->sel / w->sel_w: the plan's fused router (a
 * softmax router without groups, scale or selection bias), or the router product, then
 * the scores, top-k and weights. */
static void ft_route(ft_step_t *st, const ft_xop_t *x, uint32_t n, int prepared, const float *hin)
{
    ft_work_t *w = st->w;
    const ft_layer_t *L = x->L;
    const uint32_t E = L->n_experts, K = L->n_used, U = st->e->model->max_used;
    const int plain = !x->scoring && !x->n_groups && x->routed_scaling == 1.0f && !x->bias[0] && !x->sel_bias;
    /* A decode token's router runs split by rows on every thread; the
     * fused kernel (per token, one thread each) pays off from a few tokens. */
    if (plain && prepared && L->router_kernel && n >= 4) {
        ft_router_run_t rr = {st, w, L, n};
        ft_threadpool_run(st->e->pool, ft_router_worker, &rr);
        return;
    }
    const ft_mat_t *router = &L->router;
    if (prepared)
        ft_fwd_linear_prepared(st, &router, &w->router, 1, n);
    else
        ft_fwd_linear(st, &router, &w->router, 1, hin, n);
    for (uint32_t t = 0; t < n; t++) {
        float *logits = w->router + (size_t)t * E;
        for (uint32_t e = 0; x->bias[0] && e < E; e++) /* the logits' bias (gpt-oss) */
            logits[e] += x->bias[0][e];
        ft_route_token(x, logits, E, K, w->route_scratch, w->sel + (size_t)t * U, w->sel_w + (size_t)t * U);
    }
}

void ft_xop_router(ft_step_t *st, const ft_xop_t *x, int prepared)
{
    ft_route(st, x, st->n, prepared, st->buf[x->in[0]]);
}

ft_status_t ft_xop_moe(ft_step_t *st, const ft_xop_t *x, const uint8_t *xp_rows, ft_offload_t *off)
{
    ft_work_t *w = st->w;
    const ft_model_t *m = st->e->model;
    const ft_layer_t *L = x->L;
    const uint32_t layer = (uint32_t)x->layer, n = st->n;
    const uint32_t d = m->d_model, E = L->n_experts, K = L->n_used, U = m->max_used;
    memset(w->e_count, 0, E * sizeof(uint32_t));
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t k = 0; k < K; k++) {
            const uint32_t e = (uint32_t)w->sel[(size_t)t * U + k];
            w->e_list[(size_t)e * w->rows + w->e_count[e]++] = t * U + k;
        }
    ft_moe_run_t r = {.st = st, .w = w, .L = L, .x = x, .hin = st->buf[x->in[0]], .xp_rows = xp_rows};
    for (uint32_t e = 0; e < E; e++)
        if (w->e_count[e]) {
            w->e_active_count[r.n_active] = w->e_count[e];
            w->e_blob[r.n_active] = NULL;
            w->e_active[r.n_active++] = (int32_t)e;
        }
    /* Expert weights this pass reads: each active expert once, for all its tokens. */
    st->e->expert_bytes_read +=
        r.n_active * (ft_mat_bytes(&L->gate) + ft_mat_bytes(&L->up) + ft_mat_bytes(&L->down));
    if (st->e->routing) /* calibration: how often each expert is chosen */
        for (uint32_t e = 0; e < E; e++)
            st->e->routing[(size_t)layer * m->max_experts + e] += w->e_count[e];
    /* Each expert's weights are checked before anything reads them (the
     * CPU, or a copy to the sim's device). */
    for (uint32_t i = 0; i < r.n_active; i++) {
        ft_status_t bad = ft_blob_verify_expert(st->e->verify, layer, (uint32_t)w->e_active[i]);
        if (bad) return bad;
    }
    if (off) {
        ft_status_t st_off = ft_offload_moe(off, layer, n, w->e_active, w->e_active_count, r.n_active, w->e_blob);
        if (st_off) return st_off;
    }
    /* The row-split decode path computes plain SwiGLU experts only. */
    const int plain = !x->bias[0] && !x->bias[1] && !x->bias[2] && x->act == 0;
    if (n == 1 && plain && w->use_generated && L->gate.dtype == L->up.dtype && r.n_active <= m->max_used) {
        ft_moe_decode(st, L, r.n_active, r.xp_rows, r.hin);
    } else {
        atomic_init(&r.next, 0);
        ft_threadpool_run(st->e->pool, ft_moe_worker, &r);
    }
    /* Combine in slot order, so the sum does not depend on scheduling. */
    float *out = st->buf[x->out[0]];
    for (uint32_t t = 0; t < n; t++) {
        float *y = out + (size_t)t * d;
        for (uint32_t k = 0; k < K; k++) {
            const float wt = w->sel_w[(size_t)t * U + k];
            const float *eo = w->eo + ((size_t)t * U + k) * d;
            for (uint32_t i = 0; i < d; i++)
                y[i] += wt * eo[i];
        }
    }
    return FT_OK;
}
