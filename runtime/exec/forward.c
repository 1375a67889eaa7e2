#include "forward.h"

#include "../backends/cpu/kernels.h"
#include "ops.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

/* ---- matrix products on the pool ------------------------------------ */

#define FT_MM_MAX_JOBS 3
#define FT_MM_GRAIN 4 /* rows per split unit */

typedef struct ft_mm_job {
    const ft_mat_t *mat;
    float *y;
    size_t ldy;
} ft_mm_job_t;

typedef struct ft_mm_run {
    ft_mm_job_t jobs[FT_MM_MAX_JOBS];
    uint32_t n_jobs;
    const void *xp;
    uint32_t n_tok;
    int use_generated;
} ft_mm_run_t;

static void ft_mm_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    const ft_mm_run_t *r = ctx;
    for (uint32_t j = 0; j < r->n_jobs; j++) {
        const ft_mat_t *m = r->jobs[j].mat;
        uint64_t b, e;
        ft_split_range(m->rows, FT_MM_GRAIN, ti, nt, &b, &e);
        if (b < e && m->kernel && r->use_generated)
            m->kernel(m->data, m->row_bytes, r->xp, r->n_tok, (uint32_t)b, (uint32_t)e,
                      r->jobs[j].y, r->jobs[j].ldy);
        else if (b < e)
            ft_cpu_matmul(m->dtype, m->data, m->row_bytes, r->xp, r->n_tok, m->cols, (uint32_t)b,
                          (uint32_t)e, r->jobs[j].y, r->jobs[j].ldy);
    }
}

/* y_j = x W_j^T for up to three matrices that read the same input rows
 * x [n, cols]. Matrices of one format share one activation preparation. */
static void ft_linear(ft_session_t *s, const ft_mat_t *const *mats, float *const *ys, uint32_t n_mats,
                      const float *x, uint32_t n)
{
    uint32_t i = 0;
    while (i < n_mats) {
        ft_mm_run_t r = {.xp = s->xp, .n_tok = n, .use_generated = s->use_generated};
        const ft_dtype_t dt = mats[i]->dtype;
        ft_cpu_act_prepare(dt, x, mats[i]->cols, n, mats[i]->cols, s->xp);
        while (i < n_mats && mats[i]->dtype == dt) {
            r.jobs[r.n_jobs++] = (ft_mm_job_t){mats[i], ys[i], mats[i]->rows};
            i++;
        }
        ft_threadpool_run(s->engine->pool, ft_mm_worker, &r);
    }
}

/* ---- attention -------------------------------------------------------- */

typedef struct ft_attn_run {
    ft_session_t *s;
    const ft_layer_t *L;
    uint32_t layer, n;
} ft_attn_run_t;

/* Dot product with eight partial sums: the compiler keeps them in one
 * vector register (a single running sum is a dependency chain it may not
 * reorder). head_dim is even; a tail of fewer than 8 is summed last. */
static inline float ft_dot8(const float *restrict a, const float *restrict b, uint32_t n)
{
    float acc[8] = {0};
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            acc[j] += a[i + j] * b[i + j];
    float sum = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (; i < n; i++)
        sum += a[i] * b[i];
    return sum;
}

/* One work item is (token, KV head): the query heads that share a KV head
 * (GQA) read each cached key and value row once, together. Per head the
 * arithmetic and its order are those of a plain per-head loop. */
/* o += w * v; restrict lets the compiler vectorize (o and v never overlap:
 * one is the attention output, the other the V cache). */
static inline void ft_axpy(float *restrict o, float w, const float *restrict v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        o[i] += w * v[i];
}

static void ft_attn_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    const ft_attn_run_t *r = ctx;
    ft_session_t *s = r->s;
    const ft_layer_t *L = r->L;
    const uint32_t hd = L->head_dim, H = L->n_heads, KVH = L->n_kv_heads, group = H / KVH;
    const uint32_t qd = H * hd, kvd = s->m->max_kv_dim;
    const float scale = 1.0f / sqrtf((float)hd);
    const float *kc = s->k_cache + (size_t)r->layer * s->n_ctx * kvd;
    const float *vc = s->v_cache + (size_t)r->layer * s->n_ctx * kvd;
    float *scores = s->scores + (size_t)ti * s->m->max_group * s->n_ctx; /* [group][n_ctx] */
    uint64_t b, e;
    ft_split_range((uint64_t)r->n * KVH, 1, ti, nt, &b, &e);
    for (uint64_t item = b; item < e; item++) {
        const uint32_t t = (uint32_t)(item / KVH), kvh = (uint32_t)(item % KVH);
        const uint32_t n_keys = s->n_past + t + 1; /* causal: up to and including t */
        const float *q = s->q + (size_t)t * qd + (size_t)kvh * group * hd;
        float *out = s->att + (size_t)t * qd + (size_t)kvh * group * hd;
        for (uint32_t p = 0; p < n_keys; p++) {
            const float *k = kc + (size_t)p * kvd + (size_t)kvh * hd;
            for (uint32_t g = 0; g < group; g++)
                scores[(size_t)g * s->n_ctx + p] = ft_dot8(q + (size_t)g * hd, k, hd) * scale;
        }
        for (uint32_t g = 0; g < group; g++)
            ft_op_softmax(scores + (size_t)g * s->n_ctx, n_keys);
        memset(out, 0, (size_t)group * hd * sizeof(float));
        for (uint32_t p = 0; p < n_keys; p++) {
            const float *v = vc + (size_t)p * kvd + (size_t)kvh * hd;
            for (uint32_t g = 0; g < group; g++)
                ft_axpy(out + (size_t)g * hd, scores[(size_t)g * s->n_ctx + p], v, hd);
        }
    }
}

static void ft_attention(ft_session_t *s, const ft_layer_t *L, uint32_t layer, uint32_t n)
{
    const ft_model_t *m = s->m;
    const uint32_t d = m->d_model, hd = L->head_dim;
    const uint32_t qd = L->n_heads * hd, kvd = L->n_kv_heads * hd, kv_stride = m->max_kv_dim;
    for (uint32_t t = 0; t < n; t++)
        ft_op_rmsnorm(s->h + (size_t)t * d, s->x + (size_t)t * d, L->attn_norm, d, m->norm_eps);
    const ft_mat_t *mats[3] = {&L->wq, &L->wk, &L->wv};
    float *ys[3] = {s->q, s->k, s->v};
    ft_linear(s, mats, ys, 3, s->h, n);
    /* Per-head q/k norm and RoPE, then K and V into the cache. */
    for (uint32_t t = 0; t < n; t++) {
        const uint32_t pos = s->n_past + t;
        for (uint32_t h = 0; h < L->n_heads; h++) {
            float *q = s->q + (size_t)t * qd + (size_t)h * hd;
            ft_op_rmsnorm(q, q, L->q_norm, hd, m->norm_eps);
            ft_op_rope_neox(q, m->rope_dim, s->engine->rope_inv_freq, pos);
        }
        float *kc = s->k_cache + ((size_t)layer * s->n_ctx + pos) * kv_stride;
        float *vc = s->v_cache + ((size_t)layer * s->n_ctx + pos) * kv_stride;
        for (uint32_t h = 0; h < L->n_kv_heads; h++) {
            float *k = s->k + (size_t)t * kvd + (size_t)h * hd;
            ft_op_rmsnorm(k, k, L->k_norm, hd, m->norm_eps);
            ft_op_rope_neox(k, m->rope_dim, s->engine->rope_inv_freq, pos);
        }
        memcpy(kc, s->k + (size_t)t * kvd, kvd * sizeof(float));
        memcpy(vc, s->v + (size_t)t * kvd, kvd * sizeof(float));
    }
    ft_attn_run_t r = {s, L, layer, n};
    ft_threadpool_run(s->engine->pool, ft_attn_worker, &r);
    const ft_mat_t *wo = &L->wo;
    float *o = s->h; /* h is free again: reuse it for the projection */
    ft_linear(s, &wo, &o, 1, s->att, n);
    for (size_t i = 0; i < (size_t)n * d; i++)
        s->x[i] += o[i];
}

/* ---- mixture of experts ---------------------------------------------- */

typedef struct ft_moe_run {
    ft_session_t *s;
    const ft_layer_t *L;
    uint32_t n_active;
    atomic_uint next; /* next entry of e_active to take */
} ft_moe_run_t;

/* y = W x over all rows of mat (weights at w): the generated kernel for
 * its shape when the plan has one, else the reference kernel. */
static void ft_mat_apply(const ft_mat_t *mat, int use_generated, const uint8_t *w, const void *xp,
                         uint32_t n, float *y, size_t ldy)
{
    if (mat->kernel && use_generated)
        mat->kernel(w, mat->row_bytes, xp, n, 0, mat->rows, y, ldy);
    else
        ft_cpu_matmul(mat->dtype, w, mat->row_bytes, xp, n, mat->cols, 0, mat->rows, y, ldy);
}

/* The expert as three products and a SwiGLU, into es->dn; xp holds the
 * inputs prepared for the gate's format, es->xrows the float rows. */
static void ft_expert_unfused(const ft_layer_t *L, int gen, ft_expert_scratch_t *es, const uint8_t *wg,
                              const uint8_t *wu, const uint8_t *wd, uint32_t n_e, uint32_t d)
{
    const uint32_t ffn = L->expert_ffn;
    ft_mat_apply(&L->gate, gen, wg, es->xp, n_e, es->g, ffn);
    if (L->up.dtype != L->gate.dtype)
        ft_cpu_act_prepare(L->up.dtype, es->xrows, d, n_e, d, es->xp);
    ft_mat_apply(&L->up, gen, wu, es->xp, n_e, es->u, ffn);
    ft_op_swiglu(es->g, es->u, n_e * ffn);
    ft_cpu_act_prepare(L->down.dtype, es->g, ffn, n_e, ffn, es->ap);
    ft_mat_apply(&L->down, gen, wd, es->ap, n_e, es->dn, d);
}

/* One expert over the tokens routed to it: down(silu(gate x) * up x). */
static void ft_expert(ft_session_t *s, const ft_layer_t *L, ft_expert_scratch_t *es, uint32_t e,
                      const uint8_t *blob)
{
    /* Weights from an offload slot or stream buffer when the dispatcher put
     * the expert there, else from the mapped FTW stacks. */
    const uint8_t *wg = blob ? blob + L->off_gate : ft_mat_expert(&L->gate, e);
    const uint8_t *wu = blob ? blob + L->off_up : ft_mat_expert(&L->up, e);
    const uint8_t *wd = blob ? blob + L->off_down : ft_mat_expert(&L->down, e);
    const uint32_t d = s->m->d_model, U = s->m->max_used;
    const uint32_t n_e = s->e_count[e];
    const uint32_t *list = s->e_list + (size_t)e * s->n_batch;
    for (uint32_t i = 0; i < n_e; i++)
        memcpy(es->xrows + (size_t)i * d, s->h + (size_t)(list[i] / U) * d, d * sizeof(float));
    ft_cpu_act_prepare(L->gate.dtype, es->xrows, d, n_e, d, es->xp);
    if (L->expert_kernel && s->use_generated) /* the plan's fused gate + up + SwiGLU + down */
        L->expert_kernel(wg, wu, wd, es->xp, n_e, es->g, es->u, es->ap, es->dn);
    else
        ft_expert_unfused(L, s->use_generated, es, wg, wu, wd, n_e, d);
    for (uint32_t i = 0; i < n_e; i++)
        memcpy(s->eo + (size_t)list[i] * d, es->dn + (size_t)i * d, d * sizeof(float));
}

static void ft_moe_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    ft_moe_run_t *r = ctx;
    (void)nt;
    for (;;) {
        uint32_t i = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed);
        if (i >= r->n_active)
            break;
        ft_expert(r->s, r->L, &r->s->es[ti], (uint32_t)r->s->e_active[i], r->s->e_blob[i]);
    }
}

static void ft_moe(ft_session_t *s, const ft_layer_t *L, uint32_t layer, uint32_t n)
{
    const ft_model_t *m = s->m;
    const uint32_t d = m->d_model, E = L->n_experts, K = L->n_used, U = m->max_used;
    for (uint32_t t = 0; t < n; t++)
        ft_op_rmsnorm(s->h + (size_t)t * d, s->x + (size_t)t * d, L->ffn_norm, d, m->norm_eps);
    const ft_mat_t *router = &L->router;
    ft_linear(s, &router, &s->router, 1, s->h, n);
    memset(s->e_count, 0, E * sizeof(uint32_t));
    for (uint32_t t = 0; t < n; t++) {
        float *p = s->router + (size_t)t * E;
        ft_op_softmax(p, E);
        int32_t *sel = s->sel + (size_t)t * U;
        float *w = s->sel_w + (size_t)t * U;
        ft_op_topk(p, E, K, sel);
        float sum = 0.0f;
        for (uint32_t k = 0; k < K; k++)
            sum += (w[k] = p[sel[k]]);
        for (uint32_t k = 0; k < K && L->norm_topk_prob; k++)
            w[k] /= sum;
        for (uint32_t k = 0; k < K; k++) {
            const uint32_t e = (uint32_t)sel[k];
            s->e_list[(size_t)e * s->n_batch + s->e_count[e]++] = t * U + k;
        }
    }
    ft_moe_run_t r = {.s = s, .L = L};
    for (uint32_t e = 0; e < E; e++)
        if (s->e_count[e]) {
            s->e_active_count[r.n_active] = s->e_count[e];
            s->e_blob[r.n_active] = NULL;
            s->e_active[r.n_active++] = (int32_t)e;
        }
    if (s->engine->routing) /* calibration: how often each expert is chosen */
        for (uint32_t e = 0; e < E; e++)
            s->engine->routing[(size_t)layer * m->max_experts + e] += s->e_count[e];
    if (s->engine->offload)
        ft_offload_moe(s->engine->offload, layer, n, s->e_active, s->e_active_count, r.n_active, s->e_blob);
    atomic_init(&r.next, 0);
    ft_threadpool_run(s->engine->pool, ft_moe_worker, &r);
    /* Combine in slot order, so the sum does not depend on scheduling. */
    for (uint32_t t = 0; t < n; t++) {
        float *x = s->x + (size_t)t * d;
        for (uint32_t k = 0; k < K; k++) {
            const float w = s->sel_w[(size_t)t * U + k];
            const float *eo = s->eo + ((size_t)t * U + k) * d;
            for (uint32_t i = 0; i < d; i++)
                x[i] += w * eo[i];
        }
    }
}

/* ---- the whole pass -------------------------------------------------- */

void ft_forward_chunk(ft_session_t *s, const int32_t *tokens, uint32_t n, float *all_logits)
{
    const ft_model_t *m = s->m;
    const uint32_t d = m->d_model;
    s->use_generated = s->engine->kmod && n >= s->engine->gen_min_tokens;
    for (uint32_t t = 0; t < n; t++)
        ft_cpu_dequantize_row(m->tok_embd.dtype, m->tok_embd.data + (size_t)tokens[t] * m->tok_embd.row_bytes,
                              s->x + (size_t)t * d, d);
    ft_offload_t *off = s->engine->offload;
    if (off)
        ft_offload_step_begin(off);
    for (uint32_t l = 0; l < m->n_layers; l++) {
        ft_attention(s, &m->layers[l], l, n);
        if (off)
            ft_offload_attention(off, l, n);
        ft_moe(s, &m->layers[l], l, n);
    }
    if (off)
        ft_offload_step_end(off, n);
    if (s->engine->routing)
        s->engine->routing_tokens += n;
    /* Logits: every row when asked for, else only the last. */
    const uint32_t first = all_logits ? 0 : n - 1;
    for (uint32_t t = first; t < n; t++)
        ft_op_rmsnorm(s->h + (size_t)(t - first) * d, s->x + (size_t)t * d, m->output_norm, d, m->norm_eps);
    const ft_mat_t *out = &m->output;
    float *y = all_logits ? all_logits : s->logits;
    ft_linear(s, &out, &y, 1, s->h, n - first);
    if (all_logits)
        memcpy(s->logits, all_logits + (size_t)(n - 1) * m->vocab_size, m->vocab_size * sizeof(float));
    s->n_past += n;
    s->has_logits = 1;
}
