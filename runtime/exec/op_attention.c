/* The attention ops on the CPU: per-head RMSNorm, rotary embedding, the
 * KV cache append, and causal softmax attention over the cache.
 *
 * The cache is each session's pages (runtime/kv: a page holds 16
 * positions, one layer's rows of a page contiguous), every access through
 * ft_kv_at. It holds elements of the plan's kv_format: float, or IEEE half
 * (rounded to nearest even on append; read back by widening, which is
 * exact, so attention's float operations are those over an f32 cache of
 * the rounded values). */
#include "forward_internal.h"

#include "../backends/cpu/cpu_dot.h"
#include "../backends/cpu/kernels.h"
#include "../format/convert.h"
#include "ops.h"

#include <math.h>
#include <string.h>

#define FT_MIN(a, b) ((a) < (b) ? (a) : (b))

/* ---- per-head norm, RoPE, KV append ----------------------------------- */

typedef struct ft_rows_run {
    ft_step_t *st;
    const ft_xop_t *x;
    void (*row)(ft_step_t *st, const ft_xop_t *x, uint32_t t);
} ft_rows_run_t;

static void ft_rows_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    const ft_rows_run_t *r = ctx;
    uint64_t b, e;
    ft_split_range(r->st->n, 1, ti, nt, &b, &e);
    for (uint32_t t = (uint32_t)b; t < e; t++)
        r->row(r->st, r->x, t);
}

/* Runs row(t) for every token: on the pool for a batch (tokens are
 * independent), inline for a decode token (no barrier). */
static void ft_each_row(ft_step_t *st, const ft_xop_t *x, void (*row)(ft_step_t *, const ft_xop_t *, uint32_t))
{
    ft_rows_run_t r = {st, x, row};
    if (st->n < 4)
        ft_rows_worker(&r, 0, 1);
    else
        ft_threadpool_run(st->e->pool, ft_rows_worker, &r);
}

static void ft_head_norm_row(ft_step_t *st, const ft_xop_t *x, uint32_t t)
{
    const uint32_t hd = x->head_dim;
    float *row = st->buf[x->in[0]] + (size_t)t * x->n_heads * hd;
    for (uint32_t h = 0; h < x->n_heads; h++)
        ft_op_rmsnorm(row + (size_t)h * hd, row + (size_t)h * hd, x->vec, hd, x->eps);
}

void ft_xop_head_norm(ft_step_t *st, const ft_xop_t *x)
{
    ft_each_row(st, x, ft_head_norm_row);
}

/* RoPE of every query and key head of one token: the cosines and sines
 * of the position are formed once per token (ft_op_rope_* form them per
 * head) with the same double-precision angle, then applied with their
 * float operations, so the result is bit-identical to them. */
enum { FT_ROPE_MAX_HALF = FT_ROPE_MSCALE_MAX_HALF }; /* program.c refuses a YaRN scale past it */

static void ft_rope_apply(float *heads, uint32_t n_heads, uint32_t hd, uint32_t half, int neox, const float *cs,
                          const float *sn)
{
    for (uint32_t h = 0; h < n_heads; h++) {
        float *head = heads + (size_t)h * hd;
        if (neox) /* the pairs (i, i + half) */
            for (uint32_t i = 0; i < half; i++) {
                const float a = head[i], b = head[i + half];
                head[i] = a * cs[i] - b * sn[i];
                head[i + half] = a * sn[i] + b * cs[i];
            }
        else /* the original form's adjacent pairs (2i, 2i + 1) */
            for (uint32_t i = 0; i < half; i++) {
                const float a = head[2 * i], b = head[2 * i + 1];
                head[2 * i] = a * cs[i] - b * sn[i];
                head[2 * i + 1] = a * sn[i] + b * cs[i];
            }
    }
}

static void ft_rope_row(ft_step_t *st, const ft_xop_t *x, uint32_t t)
{
    const uint32_t hd = x->head_dim, half = x->rope_dim / 2, pos = st->w->row_pos[st->row0 + t];
    float *q = st->buf[x->in[0]] + (size_t)t * x->n_heads * hd;
    float *k = st->buf[x->in[1]] + (size_t)t * x->n_kv_heads * hd;
    if (half > FT_ROPE_MAX_HALF) {
        void (*one)(float *, uint32_t, const float *, uint32_t) = x->rope_neox ? ft_op_rope_neox : ft_op_rope_norm;
        for (uint32_t h = 0; h < x->n_heads; h++)
            one(q + (size_t)h * hd, x->rope_dim, x->inv_freq, pos);
        for (uint32_t h = 0; h < x->n_kv_heads; h++)
            one(k + (size_t)h * hd, x->rope_dim, x->inv_freq, pos);
        return;
    }
    float cs[FT_ROPE_MAX_HALF], sn[FT_ROPE_MAX_HALF];
    for (uint32_t i = 0; i < half; i++) {
        const double angle = (double)pos * x->inv_freq[i];
        cs[i] = (float)cos(angle) * x->rope_mscale; /* YaRN's scale; exactly 1 otherwise */
        sn[i] = (float)sin(angle) * x->rope_mscale;
    }
    ft_rope_apply(q, x->n_heads, hd, half, x->rope_neox, cs, sn);
    ft_rope_apply(k, x->n_kv_heads, hd, half, x->rope_neox, cs, sn);
}

void ft_xop_rope(ft_step_t *st, const ft_xop_t *x)
{
    ft_each_row(st, x, ft_rope_row);
}

/* Where position pos's K (kv 0) or V (kv 1) row of a layer is in session
 * s's cache: the one address computation every KV access goes through
 * (the session's page table, runtime/kv). */
static inline uint8_t *ft_kv_at(const ft_session_t *s, uint32_t layer, uint32_t kv, uint32_t pos)
{
    const ft_kv_table_t *kt = &s->kv;
    const size_t row = (size_t)s->m->prog->max_kv_width * s->m->kv_elem_bytes;
    return ft_kv_table_rows(kt, pos >> kt->page_shift, layer, kv) + (pos & ((1u << kt->page_shift) - 1)) * row;
}

static void ft_kv_row(ft_step_t *st, const ft_xop_t *x, uint32_t t)
{
    const ft_session_t *s = st->w->row_s[st->row0 + t];
    const uint32_t kvd = x->n_kv_heads * x->head_dim, pos = st->w->row_pos[st->row0 + t];
    const float *k = st->buf[x->in[0]] + (size_t)t * kvd, *v = st->buf[x->in[1]] + (size_t)t * kvd;
    uint8_t *kr = ft_kv_at(s, (uint32_t)x->layer, 0, pos), *vr = ft_kv_at(s, (uint32_t)x->layer, 1, pos);
    if (s->m->kv_dtype == FT_DTYPE_F16) {
        uint16_t *kc = (uint16_t *)kr, *vc = (uint16_t *)vr;
        for (uint32_t i = 0; i < kvd; i++) {
            kc[i] = ft_fp32_to_fp16(k[i]);
            vc[i] = ft_fp32_to_fp16(v[i]);
        }
        return;
    }
    memcpy(kr, k, kvd * sizeof(float));
    memcpy(vr, v, kvd * sizeof(float));
}

void ft_xop_kv_append(ft_step_t *st, const ft_xop_t *x)
{
    ft_each_row(st, x, ft_kv_row);
}

/* ---- attention -------------------------------------------------------- */

typedef struct ft_attn_run {
    ft_step_t *st;
    const ft_xop_t *x;
    ft_kabi_attn_fn kernel;         /* the plan's attention kernel (f32 KV), or NULL */
    ft_kabi_attn_f16_fn kernel_f16; /* the plan's attention kernel (f16 KV), or NULL */
    /* For a kernel: rows [t0, t0 + n) of the pass, one session's, whose
     * layer's K and V rows [lo, ...) are contiguous at k_rows, v_rows (one
     * page's, or gathered into the workspace's kv_stage), row stride
     * max_kv_width. Without a kernel: every row of the pass (t0 0). */
    uint32_t t0, n, lo;
    const uint8_t *k_rows, *v_rows;
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

/* o += w * v; restrict lets the compiler vectorize (o and v never overlap:
 * one is the attention output, the other the V cache). */
static inline void ft_axpy(float *restrict o, float w, const float *restrict v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        o[i] += w * v[i];
}

/* ft_dot8 and ft_axpy over a row of the f16 cache: each half widened
 * (exact), then the same float operations in the same order. */
static inline float ft_dot8_h(const float *restrict a, const uint16_t *restrict b, uint32_t n)
{
    const uint8_t *bb = (const uint8_t *)b;
    float acc[8] = {0};
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            acc[j] += a[i + j] * ft_cpu_f16(bb + 2 * (size_t)(i + j));
    float sum = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (; i < n; i++)
        sum += a[i] * ft_cpu_f16(bb + 2 * (size_t)i);
    return sum;
}

static inline void ft_axpy_h(float *restrict o, float w, const uint16_t *restrict v, uint32_t n)
{
    const uint8_t *vb = (const uint8_t *)v;
    for (uint32_t i = 0; i < n; i++)
        o[i] += w * ft_cpu_f16(vb + 2 * (size_t)i);
}

/* The item's slice of the output prepared for the next op's format
 * (program.c decided the slices are whole activation blocks). */
static void ft_attn_prepare_next(const ft_attn_run_t *r, uint32_t t, uint32_t kvh, const float *out)
{
    const ft_xop_t *x = r->x;
    if (!x->prepare_next)
        return;
    const uint32_t slice = x->n_heads / x->n_kv_heads * x->head_dim, qd = x->n_heads * x->head_dim;
    uint8_t *row = (uint8_t *)r->st->w->xp + (size_t)t * ft_cpu_act_row_bytes(x->next_type, qd);
    ft_cpu_act_prepare(x->next_type, out, slice, 1, slice,
                       row + ft_cpu_act_row_bytes(x->next_type, kvh * slice));
}

/* The reference loop of one item over session s's cache of layer
 * x->layer, keys [first, first + n_keys), page by page (a page's rows of a
 * layer are contiguous, kvd elements of the cache's type apart); the KV
 * head's elements start head_off bytes into a row, its query heads are
 * kvh * group + g. The operations and their order are those of one loop
 * over the keys, whatever the pages. */
static void ft_attn_item(const ft_attn_run_t *r, const ft_session_t *s, uint32_t kvh, const float *q,
                         uint32_t first, uint32_t n_keys, float *scores, float *out)
{
    const ft_model_t *m = r->st->e->model;
    const ft_xop_t *x = r->x;
    const uint32_t hd = x->head_dim, group = x->n_heads / x->n_kv_heads, kvd = m->prog->max_kv_width;
    const uint32_t layer = (uint32_t)x->layer, mask = (1u << s->kv.page_shift) - 1;
    const size_t ld = r->st->w->n_ctx; /* the scores' row stride */
    const float scale = 1.0f / sqrtf((float)hd);
    const int f16 = m->kv_dtype == FT_DTYPE_F16;
    const size_t head_off = (size_t)kvh * hd * m->kv_elem_bytes;
    for (uint32_t p0 = 0; p0 < n_keys;) {
        const uint32_t pos = first + p0, run = FT_MIN(mask + 1 - (pos & mask), n_keys - p0);
        const uint8_t *kc = ft_kv_at(s, layer, 0, pos) + head_off;
        for (uint32_t p = p0; p < p0 + run; p++) {
            const size_t at = (size_t)(p - p0) * kvd;
            for (uint32_t g = 0; g < group; g++)
                scores[(size_t)g * ld + p] =
                    (f16 ? ft_dot8_h(q + (size_t)g * hd, (const uint16_t *)kc + at, hd)
                         : ft_dot8(q + (size_t)g * hd, (const float *)kc + at, hd)) *
                    scale;
        }
        p0 += run;
    }
    for (uint32_t g = 0; g < group; g++)
        if (x->sinks)
            ft_op_softmax_sink(scores + (size_t)g * ld, n_keys,
                               x->sinks[kvh * group + g]);
        else
            ft_op_softmax(scores + (size_t)g * ld, n_keys);
    memset(out, 0, (size_t)group * hd * sizeof(float));
    for (uint32_t p0 = 0; p0 < n_keys;) {
        const uint32_t pos = first + p0, run = FT_MIN(mask + 1 - (pos & mask), n_keys - p0);
        const uint8_t *vc = ft_kv_at(s, layer, 1, pos) + head_off;
        for (uint32_t p = p0; p < p0 + run; p++) {
            const size_t at = (size_t)(p - p0) * kvd;
            for (uint32_t g = 0; g < group; g++) {
                const float w = scores[(size_t)g * ld + p];
                if (f16)
                    ft_axpy_h(out + (size_t)g * hd, w, (const uint16_t *)vc + at, hd);
                else
                    ft_axpy(out + (size_t)g * hd, w, (const float *)vc + at, hd);
            }
        }
        p0 += run;
    }
}

/* One work item is (token, KV head): the query heads that share a KV head
 * (GQA) read each cached key and value row once, together. Per head the
 * arithmetic and its order are those of a plain per-head loop. */
static void ft_attn_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    const ft_attn_run_t *r = ctx;
    const ft_work_t *w = r->st->w;
    const ft_model_t *m = r->st->e->model;
    const ft_xop_t *x = r->x;
    const uint32_t hd = x->head_dim, H = x->n_heads, KVH = x->n_kv_heads, group = H / KVH;
    const uint32_t qd = H * hd, kvd = m->prog->max_kv_width;
    const float scale = 1.0f / sqrtf((float)hd);
    const size_t eb = m->kv_elem_bytes; /* bytes of a cache element */
    float *scores = w->scores + (size_t)ti * m->prog->max_group * w->n_ctx; /* [group][n_ctx] */
    uint64_t b, e;
    ft_split_range((uint64_t)r->n * KVH, 1, ti, nt, &b, &e);
    for (uint64_t item = b; item < e; item++) {
        const uint32_t t = r->t0 + (uint32_t)(item / KVH), kvh = (uint32_t)(item % KVH);
        /* The row's own session and position. */
        const ft_session_t *s = w->row_s[r->st->row0 + t];
        /* Causal: up to and including t; a sliding window keeps the last
         * sliding_window of those, from row `first` of the cache. */
        const uint32_t pos = w->row_pos[r->st->row0 + t];
        const uint32_t first = x->sliding_window && pos >= x->sliding_window ? pos + 1 - x->sliding_window : 0;
        const uint32_t n_keys = pos + 1 - first;
        const float *q = r->st->buf[x->in[0]] + (size_t)t * qd + (size_t)kvh * group * hd;
        float *out = r->st->buf[x->out[0]] + (size_t)t * qd + (size_t)kvh * group * hd;
        /* the plan's kernel: the same operations, sizes as constants */
        const size_t at = ((size_t)(first - r->lo) * kvd + (size_t)kvh * hd) * eb;
        if (r->kernel)
            r->kernel(q, (const float *)(r->k_rows + at), (const float *)(r->v_rows + at), kvd, n_keys, scale,
                      scores, w->n_ctx, out);
        else if (r->kernel_f16)
            r->kernel_f16(q, (const uint16_t *)(r->k_rows + at), (const uint16_t *)(r->v_rows + at), kvd, n_keys,
                          scale, scores, w->n_ctx, out);
        else
            ft_attn_item(r, s, kvh, q, first, n_keys, scores, out);
        ft_attn_prepare_next(r, t, kvh, out);
    }
}

/* The kernels take each key row at a fixed stride: rows [lo, hi) of the
 * layer of session s (its pass rows [r->t0, r->t0 + r->n)) in one page
 * are that already; else they are copied, page by page, into the
 * workspace's staging rows (once per op and session, for every token and
 * head of its rows). */
static void ft_attn_rows(ft_attn_run_t *r, const ft_session_t *s)
{
    const ft_work_t *w = r->st->w;
    const ft_xop_t *x = r->x;
    const uint32_t p0 = w->row_pos[r->st->row0 + r->t0], hi = w->row_pos[r->st->row0 + r->t0 + r->n - 1] + 1;
    const uint32_t layer = (uint32_t)x->layer, shift = s->kv.page_shift, mask = (1u << shift) - 1;
    r->lo = x->sliding_window && p0 >= x->sliding_window ? p0 + 1 - x->sliding_window : 0;
    if (r->lo >> shift == (hi - 1) >> shift) {
        r->k_rows = ft_kv_at(s, layer, 0, r->lo);
        r->v_rows = ft_kv_at(s, layer, 1, r->lo);
        return;
    }
    const size_t row = (size_t)s->m->prog->max_kv_width * s->m->kv_elem_bytes;
    uint8_t *k = w->kv_stage, *v = w->kv_stage + (size_t)w->n_ctx * row;
    for (uint32_t pos = r->lo; pos < hi;) {
        const uint32_t run = FT_MIN(mask + 1 - (pos & mask), hi - pos);
        const size_t off = (size_t)(pos - r->lo) * row;
        memcpy(k + off, ft_kv_at(s, layer, 0, pos), run * row);
        memcpy(v + off, ft_kv_at(s, layer, 1, pos), run * row);
        pos += run;
    }
    r->k_rows = k;
    r->v_rows = v;
}

void ft_xop_attention(ft_step_t *st, const ft_xop_t *x)
{
    const int gen = st->w->use_generated;
    ft_attn_run_t r = {st, x, gen ? x->attn_kernel : NULL, gen ? x->attn_kernel_f16 : NULL, 0, st->n, 0,
                       NULL, NULL};
    if (!r.kernel && !r.kernel_f16) { /* the reference loop reads the pages: every row at once */
        ft_threadpool_run(st->e->pool, ft_attn_worker, &r);
        return;
    }
    /* A kernel: each session's rows (consecutive in the pass) on their own. */
    const ft_work_t *w = st->w;
    for (uint32_t t0 = 0; t0 < st->n;) {
        const ft_session_t *s = w->row_s[st->row0 + t0];
        uint32_t t1 = t0 + 1;
        while (t1 < st->n && w->row_s[st->row0 + t1] == s)
            t1++;
        r.t0 = t0;
        r.n = t1 - t0;
        ft_attn_rows(&r, s);
        ft_threadpool_run(st->e->pool, ft_attn_worker, &r);
        t0 = t1;
    }
}
