/* Multi-head latent attention (DeepSeek V2/V3), the MLA op on the CPU,
 * and its two forms as plain functions (ops.h), the numerics the float64
 * reference (tests/reference) checks:
 *
 *   per position j the cache holds the compressed row G_j = [c_j | kr_j]
 *   (c: kv_lora_rank, normed; kr: the RoPE key the heads share, roped);
 *   per head h, q_h = [qn (nope) | qr (rope, roped)]:
 *
 *   expanded (prefill): k_j = [W_kb_h c_j | kr_j], v_j = W_vb_h c_j,
 *     o_h = sum_j softmax_j(scale q_h . k_j) v_j
 *   absorbed (decode):  qc = W_kb_h^T qn (kv_lora_rank),
 *     s_j = scale (qc . c_j + qr . kr_j), oc = sum_j softmax_j(s) c_j,
 *     o_h = W_vb_h oc
 *
 * which are the same sums in another order: qn . (W_kb c) = (W_kb^T qn) . c.
 * The absorbed form reads each position's kv_lora_rank + rope floats once
 * per head instead of decompressing every position, the cheap form for a
 * decode token; the expanded form decompresses each position once for all
 * the queries of a prefill run. Sums of products run in double, as the
 * other reference kernels' attention does not: the op defines MLA's
 * numerics; speed is the generated kernel's (kernel ABI 5, codegen/cpu/
 * templates/ftt_mla.c: float SIMD sums with the shape as constants), which
 * this op calls per head when the plan's CPU module has one.
 *
 * The cache: a layer's K and V rows of a position are one compressed row
 * split in two (the K row its first max_kv_width elements, the V row the
 * rest), so MLA's cache is kv_lora_rank + rope elements per position and
 * layer, in the plan's KV element type. */
#include "forward_internal.h"

#include "../base/threadpool.h"
#include "../format/convert.h"
#include "ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ft_op_mla_absorbed(const ft_mla_shape_t *sh, const float *wk, const float *wv, const float *q,
                        const float *g, uint32_t n_pos, double *scratch, float *out)
{
    const uint32_t nope = sh->nope, rope = sh->rope, r = sh->kv_lora, row = r + rope;
    double *qc = scratch, *oc = scratch + r, *s = scratch + 2 * (size_t)r;
    for (uint32_t c = 0; c < r; c++)
        qc[c] = 0.0;
    for (uint32_t i = 0; i < nope; i++) /* qc = W_kb^T qn */
        for (uint32_t c = 0; c < r; c++)
            qc[c] += (double)q[i] * wk[(size_t)i * r + c];
    double mx = -INFINITY;
    for (uint32_t j = 0; j < n_pos; j++) {
        const float *gj = g + (size_t)j * row;
        double dot = 0.0;
        for (uint32_t c = 0; c < r; c++)
            dot += qc[c] * gj[c];
        for (uint32_t i = 0; i < rope; i++)
            dot += (double)q[nope + i] * gj[r + i];
        s[j] = dot * sh->scale;
        mx = s[j] > mx ? s[j] : mx;
    }
    double sum = 0.0;
    for (uint32_t j = 0; j < n_pos; j++)
        sum += s[j] = exp(s[j] - mx);
    for (uint32_t c = 0; c < r; c++)
        oc[c] = 0.0;
    for (uint32_t j = 0; j < n_pos; j++) {
        const float *gj = g + (size_t)j * row;
        const double p = s[j] / sum;
        for (uint32_t c = 0; c < r; c++)
            oc[c] += p * gj[c];
    }
    for (uint32_t k = 0; k < sh->v; k++) { /* o = W_vb oc */
        double acc = 0.0;
        for (uint32_t c = 0; c < r; c++)
            acc += (double)wv[(size_t)k * r + c] * oc[c];
        out[k] = (float)acc;
    }
}

void ft_op_mla_decompress(const ft_mla_shape_t *sh, const float *wk, const float *wv, const float *g,
                          uint32_t n_pos, float *kn, float *v)
{
    const uint32_t nope = sh->nope, r = sh->kv_lora, row = r + sh->rope;
    for (uint32_t j = 0; j < n_pos; j++) {
        const float *c = g + (size_t)j * row;
        for (uint32_t i = 0; i < nope; i++) {
            double acc = 0.0;
            for (uint32_t k = 0; k < r; k++)
                acc += (double)wk[(size_t)i * r + k] * c[k];
            kn[(size_t)j * nope + i] = (float)acc;
        }
        for (uint32_t i = 0; i < sh->v; i++) {
            double acc = 0.0;
            for (uint32_t k = 0; k < r; k++)
                acc += (double)wv[(size_t)i * r + k] * c[k];
            v[(size_t)j * sh->v + i] = (float)acc;
        }
    }
}

void ft_op_mla_expanded(const ft_mla_shape_t *sh, const float *q, const float *kn, const float *v,
                        const float *g, uint32_t n_pos, double *scratch, float *out)
{
    const uint32_t nope = sh->nope, rope = sh->rope, r = sh->kv_lora, row = r + rope;
    double *s = scratch, *o = scratch + n_pos;
    double mx = -INFINITY;
    for (uint32_t j = 0; j < n_pos; j++) {
        const float *kj = kn + (size_t)j * nope, *kr = g + (size_t)j * row + r;
        double dot = 0.0;
        for (uint32_t i = 0; i < nope; i++)
            dot += (double)q[i] * kj[i];
        for (uint32_t i = 0; i < rope; i++)
            dot += (double)q[nope + i] * kr[i];
        s[j] = dot * sh->scale;
        mx = s[j] > mx ? s[j] : mx;
    }
    double sum = 0.0;
    for (uint32_t j = 0; j < n_pos; j++)
        sum += s[j] = exp(s[j] - mx);
    for (uint32_t i = 0; i < sh->v; i++)
        o[i] = 0.0;
    for (uint32_t j = 0; j < n_pos; j++) {
        const double p = s[j] / sum;
        for (uint32_t i = 0; i < sh->v; i++)
            o[i] += p * v[(size_t)j * sh->v + i];
    }
    for (uint32_t i = 0; i < sh->v; i++)
        out[i] = (float)o[i];
}

/* ---- the op ------------------------------------------------------------ */

/* RoPE over n floats (rope dims) at x: adjacent pairs or NeoX halves. */
static void ft_mla_rope(float *x, uint32_t rope, int neox, const float *cs, const float *sn)
{
    const uint32_t half = rope / 2;
    for (uint32_t i = 0; i < half; i++) {
        const uint32_t a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
        const float xa = x[a], xb = x[b];
        x[a] = xa * cs[i] - xb * sn[i];
        x[b] = xa * sn[i] + xb * cs[i];
    }
}

/* One run of a pass's rows: the same session, rows [t0, t1). */
typedef struct ft_mla_run {
    ft_step_t *st;
    const ft_xop_t *x;
    ft_mla_shape_t sh;
    uint32_t t0, t1, n_pos; /* positions 0 .. n_pos - 1 in g */
    const float *g;         /* [n_pos][kv_lora + rope] */
    int failed;             /* a worker's scratch allocation failed */
} ft_mla_run_t;

/* Head h's W_kb [nope][kv_lora] and W_vb [v][kv_lora] widened to f32. */
static void ft_mla_head_weights(const ft_xop_t *x, const ft_mla_shape_t *sh, uint32_t h, float *wk, float *wv,
                                float *row)
{
    const ft_mat_t *kb = x->w[0], *vb = x->w[1];
    const uint32_t r = sh->kv_lora, nope = sh->nope;
    if (x->mla_kb_t) { /* [H * kv_lora][nope]: transposed per head */
        for (uint32_t c = 0; c < r; c++) {
            ft_dequantize_row(kb->dtype, kb->data + (size_t)(h * r + c) * kb->row_bytes, row, nope);
            for (uint32_t i = 0; i < nope; i++)
                wk[(size_t)i * r + c] = row[i];
        }
    } else {
        for (uint32_t i = 0; i < nope; i++)
            ft_dequantize_row(kb->dtype, kb->data + (size_t)(h * nope + i) * kb->row_bytes, wk + (size_t)i * r, r);
    }
    for (uint32_t i = 0; i < sh->v; i++)
        ft_dequantize_row(vb->dtype, vb->data + (size_t)(h * sh->v + i) * vb->row_bytes, wv + (size_t)i * r, r);
}

/* Whether the expanded form is the cheaper one for a run of n_tok rows
 * reading n_keys[t] keys each (multiply-adds per head): it decompresses
 * every key the run reads once, where the absorbed form maps each query
 * into the compressed space and back. A fresh prefill expands; a short
 * chunk after a long cached prefix (64 rows over 4096 keys at V3's shape)
 * is cheaper absorbed, as a decode row always is. The choice depends on
 * this session's run only, so batching still does not change a result. */
static int ft_mla_expand(const ft_mla_shape_t *sh, const uint32_t *n_keys, uint32_t n_tok)
{
    if (n_tok < 2) return 0;
    const double r = sh->kv_lora;
    uint32_t n_max = 0;
    double expanded = 0.0, absorbed = 0.0;
    for (uint32_t t = 0; t < n_tok; t++) {
        n_max = n_keys[t] > n_max ? n_keys[t] : n_max;
        expanded += (double)n_keys[t] * (sh->nope + sh->rope + sh->v);
        absorbed += (double)n_keys[t] * (2.0 * r + sh->rope) + (double)(sh->nope + sh->v) * r;
    }
    expanded += (double)n_max * (sh->nope + sh->v) * r;
    return expanded < absorbed;
}

/* Heads [h0, h1) of a run through the module's kernel (ABI 5): each head's
 * W_kb / W_vb widened into wk / wv (row: a row's room), then one call for
 * the run's tokens in the cheaper form (ft_mla_expand). */
static void ft_mla_heads_generated(ft_mla_run_t *run, uint64_t h0, uint64_t h1, float *wk, float *wv,
                                   float *row)
{
    const ft_mla_shape_t *sh = &run->sh;
    const ft_xop_t *x = run->x;
    ft_step_t *st = run->st;
    const uint32_t n_tok = run->t1 - run->t0, hd = sh->nope + sh->rope;
    float *scratch = malloc(((size_t)run->n_pos * (sh->nope + sh->v + 1) + 2 * (size_t)sh->kv_lora) * sizeof(float));
    uint32_t *n_keys = malloc(n_tok * sizeof(uint32_t));
    if (!scratch || !n_keys) {
        free(scratch);
        free(n_keys);
        run->failed = 1;
        return;
    }
    for (uint32_t t = 0; t < n_tok; t++)
        n_keys[t] = st->w->row_pos[st->row0 + run->t0 + t] + 1;
    const int expanded = ft_mla_expand(sh, n_keys, n_tok);
    const float *q = st->buf[x->in[0]] + (size_t)run->t0 * sh->n_heads * hd;
    float *out = st->buf[x->out[0]] + (size_t)run->t0 * sh->n_heads * sh->v;
    for (uint64_t h = h0; h < h1; h++) {
        ft_mla_head_weights(x, sh, (uint32_t)h, wk, wv, row);
        x->mla_kernel(wk, wv, q + h * hd, (size_t)sh->n_heads * hd, run->g, n_keys, n_tok, expanded, sh->scale,
                      scratch, out + h * sh->v, (size_t)sh->n_heads * sh->v);
    }
    free(scratch);
    free(n_keys);
}

static void ft_mla_heads_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    ft_mla_run_t *run = ctx;
    const ft_mla_shape_t *sh = &run->sh;
    const ft_xop_t *x = run->x;
    ft_step_t *st = run->st;
    uint64_t h0, h1;
    ft_split_range(sh->n_heads, 1, ti, nt, &h0, &h1);
    if (h0 >= h1) return;
    const uint32_t r = sh->kv_lora, hd = sh->nope + sh->rope, n = run->n_pos;
    const int expanded = run->t1 - run->t0 > 1;
    const size_t n_wk = (size_t)sh->nope * r, n_wv = (size_t)sh->v * r;
    const size_t n_kv = expanded && !x->mla_kernel ? (size_t)n * (sh->nope + sh->v) : 0; /* the kernel has its own */
    float *f = malloc((n_wk + n_wv + n_kv + (r > sh->nope ? r : sh->nope)) * sizeof(float));
    double *d = malloc((2 * (size_t)r + n + sh->v) * sizeof(double));
    if (!f || !d) {
        free(f);
        free(d);
        run->failed = 1; /* ft_xop_mla reports it */
        return;
    }
    float *wk = f, *wv = f + n_wk, *kn = wv + n_wv, *v = kn + (size_t)n * sh->nope, *row = kn + n_kv;
    if (x->mla_kernel) {
        ft_mla_heads_generated(run, h0, h1, wk, wv, row);
        free(f);
        free(d);
        return;
    }
    for (uint64_t h = h0; h < h1; h++) {
        ft_mla_head_weights(x, sh, (uint32_t)h, wk, wv, row);
        if (expanded) ft_op_mla_decompress(sh, wk, wv, run->g, n, kn, v);
        for (uint32_t t = run->t0; t < run->t1; t++) {
            const uint32_t pos = st->w->row_pos[st->row0 + t];
            const float *q = st->buf[x->in[0]] + (size_t)t * sh->n_heads * hd + h * hd;
            float *out = st->buf[x->out[0]] + (size_t)t * sh->n_heads * sh->v + h * sh->v;
            if (expanded)
                ft_op_mla_expanded(sh, q, kn, v, run->g, pos + 1, d, out);
            else
                ft_op_mla_absorbed(sh, wk, wv, q, run->g, pos + 1, d, out);
        }
    }
    free(f);
    free(d);
}

/* Position pos's K (kv 0) or V (kv 1) row of a layer in session s's cache. */
static uint8_t *ft_mla_kv_at(const ft_session_t *s, uint32_t layer, uint32_t kv, uint32_t pos)
{
    const ft_kv_table_t *kt = &s->kv;
    const size_t row = (size_t)s->m->prog->max_kv_width * s->m->kv_elem_bytes;
    return ft_kv_table_rows(kt, pos >> kt->page_shift, layer, kv) + (pos & ((1u << kt->page_shift) - 1)) * row;
}

/* The compressed row [c | kr] of n floats to or from the K and V rows. */
static void ft_mla_row_io(const ft_session_t *s, uint32_t layer, uint32_t pos, float *row, uint32_t n, int store)
{
    const uint32_t w = s->m->prog->max_kv_width;
    for (uint32_t kv = 0; kv < 2; kv++) {
        uint8_t *at = ft_mla_kv_at(s, layer, kv, pos);
        float *part = row + kv * w;
        const uint32_t m = kv ? n - w : w;
        if (s->m->kv_dtype == FT_DTYPE_F16) {
            uint16_t *h = (uint16_t *)at;
            for (uint32_t i = 0; i < m; i++) {
                if (store) h[i] = ft_fp32_to_fp16(part[i]);
                part[i] = ft_fp16_to_fp32(h[i]); /* what later reads see */
            }
        } else if (store) {
            memcpy(at, part, m * sizeof(float));
        } else {
            memcpy(part, at, m * sizeof(float));
        }
    }
}

ft_status_t ft_xop_mla(ft_step_t *st, const ft_xop_t *x)
{
    const ft_mla_shape_t sh = {x->n_heads, x->head_dim - x->rope_dim, x->rope_dim, x->mla_kv_lora,
                               x->mla_v_dim, x->mla_scale};
    const uint32_t H = sh.n_heads, hd = x->head_dim, row = sh.kv_lora + sh.rope, half = sh.rope / 2;
    /* RoPE on each row's q_rope parts and k_rope, then the row into the cache */
    for (uint32_t t = 0; t < st->n; t++) {
        const ft_session_t *s = st->w->row_s[st->row0 + t];
        const uint32_t pos = st->w->row_pos[st->row0 + t];
        float cs[FT_ROPE_MSCALE_MAX_HALF], sn[FT_ROPE_MSCALE_MAX_HALF];
        for (uint32_t i = 0; i < half; i++) {
            const double angle = (double)pos * x->inv_freq[i];
            cs[i] = (float)cos(angle) * x->rope_mscale;
            sn[i] = (float)sin(angle) * x->rope_mscale;
        }
        float *q = st->buf[x->in[0]] + (size_t)t * H * hd, *kr = st->buf[x->in[2]] + (size_t)t * sh.rope;
        for (uint32_t h = 0; h < H; h++)
            ft_mla_rope(q + (size_t)h * hd + sh.nope, sh.rope, x->rope_neox, cs, sn);
        ft_mla_rope(kr, sh.rope, x->rope_neox, cs, sn);
        float g[FT_MLA_MAX_ROW];
        memcpy(g, st->buf[x->in[1]] + (size_t)t * sh.kv_lora, sh.kv_lora * sizeof(float));
        memcpy(g + sh.kv_lora, kr, sh.rope * sizeof(float));
        ft_mla_row_io(s, (uint32_t)x->layer, pos, g, row, 1);
    }
    /* attention, a run of rows of one session at a time */
    for (uint32_t t0 = 0; t0 < st->n;) {
        const ft_session_t *s = st->w->row_s[st->row0 + t0];
        uint32_t t1 = t0 + 1, n_pos = st->w->row_pos[st->row0 + t0] + 1;
        for (; t1 < st->n && st->w->row_s[st->row0 + t1] == s; t1++)
            if (st->w->row_pos[st->row0 + t1] + 1 > n_pos) n_pos = st->w->row_pos[st->row0 + t1] + 1;
        float *g = malloc((size_t)n_pos * row * sizeof(float));
        if (!g)
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "MLA (layer %d): out of memory for %u positions",
                                  (int)x->layer, n_pos);
        for (uint32_t j = 0; j < n_pos; j++)
            ft_mla_row_io(s, (uint32_t)x->layer, j, g + (size_t)j * row, row, 0);
        ft_mla_run_t run = {st, x, sh, t0, t1, n_pos, g, 0};
        if (H > 1 && st->e->pool)
            ft_threadpool_run(st->e->pool, ft_mla_heads_worker, &run);
        else
            ft_mla_heads_worker(&run, 0, 1);
        free(g);
        if (run.failed)
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "MLA (layer %d): out of memory for a head's scratch",
                                  (int)x->layer);
        t0 = t1;
    }
    return FT_OK;
}
