#include "forward.h"
#include "forward_internal.h"

#include "../backends/cpu/kernels.h"
#include "ops.h"

#include <math.h>
#include <string.h>

/* ---- matrix products on the pool ------------------------------------ */

#define FT_MM_MAX_JOBS 3

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

void ft_fwd_linear_prepared(ft_session_t *s, const ft_mat_t *const *mats, float *const *ys,
                               uint32_t n_mats, uint32_t n)
{
    ft_mm_run_t r = {.xp = s->xp, .n_tok = n, .use_generated = s->use_generated};
    for (uint32_t i = 0; i < n_mats; i++)
        r.jobs[r.n_jobs++] = (ft_mm_job_t){mats[i], ys[i], mats[i]->rows};
    ft_threadpool_run(s->engine->pool, ft_mm_worker, &r);
}

void ft_fwd_linear(ft_session_t *s, const ft_mat_t *const *mats, float *const *ys, uint32_t n_mats,
                      const float *x, uint32_t n)
{
    uint32_t i = 0;
    while (i < n_mats) {
        const ft_dtype_t dt = mats[i]->dtype;
        ft_cpu_act_prepare(dt, x, mats[i]->cols, n, mats[i]->cols, s->xp);
        uint32_t j = i;
        while (j < n_mats && mats[j]->dtype == dt)
            j++;
        ft_fwd_linear_prepared(s, mats + i, ys + i, j - i, n);
        i = j;
    }
}

/* ---- fused RMSNorm + preparation (the plan's kernels) ---------------- */

typedef struct ft_norm_run {
    ft_kabi_norm_prepare_fn fn;
    const float *x, *w;
    float eps;
    uint32_t n, d;
    uint8_t *out;
    size_t out_row_bytes;
} ft_norm_run_t;

static void ft_norm_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    const ft_norm_run_t *r = ctx;
    uint64_t b, e;
    ft_split_range(r->n, 1, ti, nt, &b, &e);
    if (b < e)
        r->fn(r->x + b * r->d, r->d, r->w, r->eps, (uint32_t)(e - b), r->out + b * r->out_row_bytes);
}

void ft_fwd_norm_prepare(ft_session_t *s, ft_kabi_norm_prepare_fn fn, const float *x, const float *w,
                            ft_dtype_t wtype, uint32_t n, void *out)
{
    const uint32_t d = s->m->d_model;
    ft_norm_run_t r = {fn, x, w, s->m->norm_eps, n, d, out, ft_cpu_act_row_bytes(wtype, d)};
    if (n < 4)
        fn(x, d, w, r.eps, n, out);
    else
        ft_threadpool_run(s->engine->pool, ft_norm_worker, &r);
}

/* ---- attention -------------------------------------------------------- */

typedef struct ft_attn_run {
    ft_session_t *s;
    const ft_layer_t *L;
    uint32_t layer, n;
    ft_kabi_attn_fn kernel; /* the plan's attention kernel, or NULL */
    int prepare_wo; /* each item also prepares its output slice for wo into s->xp */
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

/* Whether each attention item can prepare its own slice of wo's input:
 * the slice (group x head_dim floats at kvh * group * head_dim) must be
 * whole blocks of wo's activation format. Blocks are quantized
 * independently, so the prepared row is the same bytes as preparing it
 * whole afterwards, and the work is spread over the threads instead of
 * done by the caller between two runs. */
static int ft_attn_can_prepare_wo(const ft_layer_t *L)
{
    const uint32_t slice = L->n_heads / L->n_kv_heads * L->head_dim;
    const ft_dtype_t at = ft_cpu_act_type(L->wo.dtype);
    const uint32_t blk = at == FT_DTYPE_Q8_K ? 256 : at == FT_DTYPE_Q8_0 ? 32 : 1;
    return slice % blk == 0;
}

static void ft_attn_prepare_wo(const ft_attn_run_t *r, uint32_t t, uint32_t kvh, const float *out)
{
    if (!r->prepare_wo)
        return;
    const ft_layer_t *L = r->L;
    const uint32_t slice = L->n_heads / L->n_kv_heads * L->head_dim, qd = L->n_heads * L->head_dim;
    uint8_t *row = (uint8_t *)r->s->xp + (size_t)t * ft_cpu_act_row_bytes(L->wo.dtype, qd);
    ft_cpu_act_prepare(L->wo.dtype, out, slice, 1, slice, row + ft_cpu_act_row_bytes(L->wo.dtype, kvh * slice));
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
        if (r->kernel) { /* the plan's kernel: the same operations, sizes as constants */
            r->kernel(q, kc + (size_t)kvh * hd, vc + (size_t)kvh * hd, kvd, n_keys, scale, scores, s->n_ctx,
                      out);
            ft_attn_prepare_wo(r, t, kvh, out);
            continue;
        }
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
        ft_attn_prepare_wo(r, t, kvh, out);
    }
}

/* RoPE of every query and key head of one token: the cosines and sines
 * of the position are formed once per token (ft_op_rope_neox forms them
 * per head) with the same double-precision angle, then applied with its
 * float operations, so the result is bit-identical to it. */
enum { FT_ROPE_MAX_HALF = 256 };

static void ft_rope_apply(float *heads, uint32_t n_heads, uint32_t hd, uint32_t half, const float *cs,
                          const float *sn)
{
    for (uint32_t h = 0; h < n_heads; h++) {
        float *head = heads + (size_t)h * hd;
        for (uint32_t i = 0; i < half; i++) {
            const float a = head[i], b = head[i + half];
            head[i] = a * cs[i] - b * sn[i];
            head[i + half] = a * sn[i] + b * cs[i];
        }
    }
}

static void ft_rope_token(float *q, uint32_t n_q, float *k, uint32_t n_k, uint32_t hd, uint32_t rope_dim,
                          const float *inv_freq, uint32_t pos)
{
    const uint32_t half = rope_dim / 2;
    if (half > FT_ROPE_MAX_HALF) {
        for (uint32_t h = 0; h < n_q; h++)
            ft_op_rope_neox(q + (size_t)h * hd, rope_dim, inv_freq, pos);
        for (uint32_t h = 0; h < n_k; h++)
            ft_op_rope_neox(k + (size_t)h * hd, rope_dim, inv_freq, pos);
        return;
    }
    float cs[FT_ROPE_MAX_HALF], sn[FT_ROPE_MAX_HALF];
    for (uint32_t i = 0; i < half; i++) {
        const double angle = (double)pos * inv_freq[i];
        cs[i] = (float)cos(angle);
        sn[i] = (float)sin(angle);
    }
    ft_rope_apply(q, n_q, hd, half, cs, sn);
    ft_rope_apply(k, n_k, hd, half, cs, sn);
}

static void ft_qk_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    const ft_attn_run_t *r = ctx;
    ft_session_t *s = r->s;
    const ft_layer_t *L = r->L;
    const ft_model_t *m = s->m;
    const uint32_t hd = L->head_dim, qd = L->n_heads * hd, kvd = L->n_kv_heads * hd, kv_stride = m->max_kv_dim;
    uint64_t b, e;
    ft_split_range(r->n, 1, ti, nt, &b, &e);
    for (uint32_t t = (uint32_t)b; t < e; t++) {
        const uint32_t pos = s->n_past + t;
        float *q = s->q + (size_t)t * qd, *k = s->k + (size_t)t * kvd;
        for (uint32_t h = 0; h < L->n_heads; h++)
            ft_op_rmsnorm(q + (size_t)h * hd, q + (size_t)h * hd, L->q_norm, hd, m->norm_eps);
        for (uint32_t h = 0; h < L->n_kv_heads; h++)
            ft_op_rmsnorm(k + (size_t)h * hd, k + (size_t)h * hd, L->k_norm, hd, m->norm_eps);
        ft_rope_token(q, L->n_heads, k, L->n_kv_heads, hd, m->rope_dim, s->engine->rope_inv_freq, pos);
        float *kc = s->k_cache + ((size_t)r->layer * s->n_ctx + pos) * kv_stride;
        float *vc = s->v_cache + ((size_t)r->layer * s->n_ctx + pos) * kv_stride;
        memcpy(kc, k, kvd * sizeof(float));
        memcpy(vc, s->v + (size_t)t * kvd, kvd * sizeof(float));
    }
}

static void ft_attention(ft_session_t *s, const ft_layer_t *L, uint32_t layer, uint32_t n)
{
    const ft_model_t *m = s->m;
    const uint32_t d = m->d_model;
    const ft_mat_t *mats[3] = {&L->wq, &L->wk, &L->wv};
    float *ys[3] = {s->q, s->k, s->v};
    if (s->use_generated && L->attn_norm_prepare) { /* q, k, v share a format (model.c) */
        ft_fwd_norm_prepare(s, L->attn_norm_prepare, s->x, L->attn_norm, L->wq.dtype, n, s->xp);
        ft_fwd_linear_prepared(s, mats, ys, 3, n);
    } else {
        for (uint32_t t = 0; t < n; t++)
            ft_op_rmsnorm(s->h + (size_t)t * d, s->x + (size_t)t * d, L->attn_norm, d, m->norm_eps);
        ft_fwd_linear(s, mats, ys, 3, s->h, n);
    }
    /* Per-head q/k norm and RoPE, then K and V into the cache: on the pool
     * for a batch (tokens are independent), inline for a decode token. */
    ft_attn_run_t r = {s, L, layer, n, s->use_generated ? L->attn_kernel : NULL, ft_attn_can_prepare_wo(L)};
    if (n < 4)
        ft_qk_worker(&r, 0, 1);
    else
        ft_threadpool_run(s->engine->pool, ft_qk_worker, &r);
    ft_threadpool_run(s->engine->pool, ft_attn_worker, &r);
    const ft_mat_t *wo = &L->wo;
    float *o = s->h; /* h is free again: reuse it for the projection */
    if (r.prepare_wo)
        ft_fwd_linear_prepared(s, &wo, &o, 1, n);
    else
        ft_fwd_linear(s, &wo, &o, 1, s->att, n);
    for (size_t i = 0; i < (size_t)n * d; i++)
        s->x[i] += o[i];
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
        ft_fwd_moe(s, &m->layers[l], l, n);
    }
    if (off)
        ft_offload_step_end(off, n);
    if (s->engine->routing)
        s->engine->routing_tokens += n;
    /* Logits: every row when asked for, else only the last. */
    const uint32_t first = all_logits ? 0 : n - 1;
    const ft_mat_t *out = &m->output;
    float *y = all_logits ? all_logits : s->logits;
    if (s->use_generated && m->output_norm_prepare) {
        ft_fwd_norm_prepare(s, m->output_norm_prepare, s->x + (size_t)first * d, m->output_norm, out->dtype,
                        n - first, s->xp);
        ft_fwd_linear_prepared(s, &out, &y, 1, n - first);
    } else {
        for (uint32_t t = first; t < n; t++)
            ft_op_rmsnorm(s->h + (size_t)(t - first) * d, s->x + (size_t)t * d, m->output_norm, d,
                          m->norm_eps);
        ft_fwd_linear(s, &out, &y, 1, s->h, n - first);
    }
    if (all_logits)
        memcpy(s->logits, all_logits + (size_t)(n - 1) * m->vocab_size, m->vocab_size * sizeof(float));
    s->n_past += n;
    s->has_logits = 1;
}
