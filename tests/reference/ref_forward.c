/* The reference forward pass: one token position at a time, in double, as
 * ref_forward.h spells it out. Speed does not matter here, only that a
 * reader can check every line. */
#include "ref_forward.h"

#include "ref_dequant.h"
#include "ref_mla.h"
#include "ref_ops.h"

#include "../../runtime/format/convert.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ft_ref_session {
    const ft_ref_model_t *m;
    uint32_t n_ctx, n_past;
    double **k_cache;     /* [n_layers][n_ctx * n_kv_heads * head_dim] */
    double **v_cache;     /* [n_layers][n_ctx * n_kv_heads * value_head_dim] */
    /* Gated DeltaNet layers: the conv's last conv_kernel - 1 inputs
     * [K - 1][C] (oldest first) and S [n_heads][head_dim][head_dim]; NULL
     * in attention layers. */
    double **dn_window, **dn_state;
    double *dn_y, *dn_z, *dn_b, *dn_a; /* per-token scratch */
    double *route_margin; /* [n_ctx]: the closest routing decision per position */
    uint32_t max_used;    /* the most experts a layer uses */
    uint32_t *routes;     /* [n_ctx][n_layers][max_used]: chosen experts, ascending */
    /* Scratch for one token, sized for the widest layer. */
    double *x, *h, *q, *att, *scores, *o, *probs, *g, *u, *y;
    double *masked, *group_score; /* [max experts]: group-limited routing */
    double *choice;               /* [max experts]: the scores the experts are chosen by */
    uint32_t *chosen;
    /* emulate_act_quant: an input vector rounded as the runtime rounds it */
    size_t n_round;   /* elements the buffers below hold */
    float *round_f;   /* [n_round] */
    uint8_t *round_q; /* Q8_0 or Q8_K blocks of n_round elements */
    double *round_d;  /* [n_round] */
};

/* Allocates the per-token scratch; 0 when out of memory. */
static int ref_scratch_alloc(ft_ref_session_t *s)
{
    const ft_ref_model_t *m = s->m;
    size_t q = 1, att = 1, e = 1, f = 1;
    for (uint32_t l = 0; l < m->n_layers; l++) {
        const ft_ref_layer_t *L = &m->layers[l];
        if ((size_t)L->n_heads * L->head_dim > q) q = (size_t)L->n_heads * L->head_dim;
        if ((size_t)L->n_heads * L->value_head_dim > att)
            att = (size_t)L->n_heads * L->value_head_dim;
        if (L->deltanet && (2 * (size_t)L->n_kv_heads + L->n_heads) * L->head_dim > q)
            q = (2 * (size_t)L->n_kv_heads + L->n_heads) * L->head_dim; /* the conv's input */
        if (L->n_experts > e) e = L->n_experts;
        if (L->expert_ffn > f) f = L->expert_ffn;
        if (L->shared_ffn > f) f = L->shared_ffn;
        if (L->mla && L->q_lora > f) f = L->q_lora; /* Wq_b's input, rounded with emulate_act_quant */
    }
    const size_t d = m->d_model;
    s->n_round = d > att ? d : att;
    s->n_round = s->n_round > f ? s->n_round : f;
    s->round_f = malloc(s->n_round * sizeof(float));
    s->round_q = malloc(s->n_round * 2 + FT_Q8_K_BLOCK_BYTES); /* > 292/256 bytes each */
    s->round_d = malloc(s->n_round * sizeof(double));
    if (!s->round_f || !s->round_q || !s->round_d) return 0;
    s->x = malloc(d * sizeof(double));
    s->h = malloc(d * sizeof(double));
    s->o = malloc(d * sizeof(double));
    s->y = malloc(d * sizeof(double));
    s->q = malloc((q > att ? q : att) * sizeof(double)); /* q, then the output gate's rows */
    s->att = malloc(att * sizeof(double));
    s->scores = malloc(((size_t)s->n_ctx + 1) * sizeof(double));
    s->probs = malloc(e * sizeof(double));
    s->masked = malloc(e * sizeof(double));
    s->group_score = malloc(e * sizeof(double));
    s->choice = malloc(e * sizeof(double));
    s->chosen = malloc(e * sizeof(uint32_t));
    s->g = malloc(f * sizeof(double));
    s->u = malloc(f * sizeof(double));
    s->route_margin = malloc(((size_t)s->n_ctx + 1) * sizeof(double));
    s->max_used = 1;
    for (uint32_t l = 0; l < m->n_layers; l++)
        if (m->layers[l].n_experts_used > s->max_used) s->max_used = m->layers[l].n_experts_used;
    s->routes = calloc(((size_t)s->n_ctx + 1) * m->n_layers * s->max_used, sizeof(uint32_t));
    return s->routes && s->route_margin && s->x && s->h && s->o && s->y && s->q && s->att &&
           s->scores && s->probs && s->chosen && s->g && s->u && s->masked && s->group_score && s->choice;
}

ft_status_t ft_ref_session_create(const ft_ref_model_t *m, uint32_t n_ctx,
                                  ft_ref_session_t **out_session)
{
    *out_session = NULL;
    ft_ref_session_t *s = calloc(1, sizeof(*s));
    if (!s) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    s->m = m;
    s->n_ctx = n_ctx;
    s->k_cache = calloc(m->n_layers ? m->n_layers : 1, sizeof(double *));
    s->v_cache = calloc(m->n_layers ? m->n_layers : 1, sizeof(double *));
    s->dn_window = calloc(m->n_layers ? m->n_layers : 1, sizeof(double *));
    s->dn_state = calloc(m->n_layers ? m->n_layers : 1, sizeof(double *));
    int ok = s->k_cache && s->v_cache && s->dn_window && s->dn_state && ref_scratch_alloc(s);
    size_t dn_c = 1, dn_o = 1;
    for (uint32_t l = 0; ok && l < m->n_layers; l++) {
        const ft_ref_layer_t *L = &m->layers[l];
        if (L->deltanet) {
            const size_t C = (2 * (size_t)L->n_kv_heads + L->n_heads) * L->head_dim;
            dn_c = C > dn_c ? C : dn_c;
            dn_o =
                (size_t)L->n_heads * L->head_dim > dn_o ? (size_t)L->n_heads * L->head_dim : dn_o;
            s->dn_window[l] = calloc((size_t)(L->conv_kernel - 1) * C + 1, sizeof(double));
            s->dn_state[l] =
                calloc((size_t)L->n_heads * L->head_dim * L->head_dim + 1, sizeof(double));
            ok = s->dn_window[l] && s->dn_state[l];
        }
        /* a latent attention layer's rows: [c | kr] */
        const size_t k_row = L->mla ? (size_t)L->kv_lora + m->rope_dim : (size_t)L->n_kv_heads * L->head_dim;
        s->k_cache[l] = malloc((size_t)n_ctx * k_row * sizeof(double) + 1);
        s->v_cache[l] =
            malloc((size_t)n_ctx * L->n_kv_heads * L->value_head_dim * sizeof(double) + 1);
        ok = s->k_cache[l] && s->v_cache[l];
    }
    if (ok) {
        s->dn_y = malloc(dn_c * sizeof(double));
        s->dn_z = malloc(dn_o * sizeof(double));
        s->dn_b = malloc(dn_o * sizeof(double));
        s->dn_a = malloc(dn_o * sizeof(double));
        ok = s->dn_y && s->dn_z && s->dn_b && s->dn_a;
    }
    if (!ok) {
        ft_ref_session_free(s);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    *out_session = s;
    return FT_OK;
}

void ft_ref_session_free(ft_ref_session_t *s)
{
    if (!s) return;
    for (uint32_t l = 0; l < s->m->n_layers; l++) {
        if (s->k_cache) free(s->k_cache[l]);
        if (s->v_cache) free(s->v_cache[l]);
        if (s->dn_window) free(s->dn_window[l]);
        if (s->dn_state) free(s->dn_state[l]);
    }
    free(s->k_cache);
    free(s->v_cache);
    free(s->dn_window);
    free(s->dn_state);
    free(s->dn_y);
    free(s->dn_z);
    free(s->dn_b);
    free(s->dn_a);
    double *scratch[] = {s->x, s->h, s->q, s->att, s->scores, s->o, s->probs, s->g, s->u, s->y, s->masked, s->group_score, s->choice};
    for (size_t i = 0; i < sizeof(scratch) / sizeof(scratch[0]); i++)
        free(scratch[i]);
    free(s->chosen);
    free(s->route_margin);
    free(s->routes);
    free(s->round_f);
    free(s->round_q);
    free(s->round_d);
    free(s);
}

uint32_t ft_ref_session_n_past(const ft_ref_session_t *s)
{
    return s->n_past;
}

int ft_ref_session_same_routes(const ft_ref_session_t *a, const ft_ref_session_t *b, uint32_t pos)
{
    if (a->m->n_layers != b->m->n_layers || a->max_used != b->max_used || pos >= a->n_past ||
        pos >= b->n_past)
        return 0;
    const size_t n = (size_t)a->m->n_layers * a->max_used;
    return memcmp(a->routes + pos * n, b->routes + pos * n, n * sizeof(uint32_t)) == 0;
}

double ft_ref_session_route_margin(const ft_ref_session_t *s, uint32_t pos)
{
    return pos < s->n_past ? s->route_margin[pos] : INFINITY;
}

/* y = W x for a matrix stored in format fmt; with emulate_act_quant, x is
 * first rounded the way the runtime's kernels round activations. */
static void ref_mv(ft_ref_session_t *s, const double *w, ft_dtype_t fmt, uint32_t rows,
                   uint32_t cols, const double *x, double *y)
{
    /* the activation format of fmt's CPU dot product (dtype.h's table):
     * Q8_0 or Q8_K blocks round x, float32 does not */
    const ft_dtype_info_t *info = ft_dtype_info(fmt);
    const ft_dtype_t at = info ? info->cpu_act : FT_DTYPE_INVALID;
    if (!s->m->emulate_act_quant || (at != FT_DTYPE_Q8_0 && at != FT_DTYPE_Q8_K)) {
        ft_ref_matvec(w, rows, cols, x, y);
        return;
    }
    for (uint32_t i = 0; i < cols; i++)
        s->round_f[i] = (float)x[i];
    ft_quantize_row(at, s->round_f, s->round_q, cols);
    /* the runtime's rounding, read back by the reference's own decoder */
    ft_status_t st = ft_ref_dequant_row(at, s->round_q, cols, s->round_d);
    if (st) { /* a weight's columns are a multiple of its activation block */
        fprintf(stderr, "reference: %s\n", ft_status_message(st));
        abort();
    }
    ft_ref_matvec(w, rows, cols, s->round_d, y);
}

/* y += b (n values) when the projection has a bias. */
static void ref_add_bias(double *y, const double *b, uint32_t n)
{
    for (uint32_t i = 0; b && i < n; i++)
        y[i] += b[i];
}

/* NeoX RoPE of one head with YaRN (llama.cpp's ggml_rope_yarn_corr_dims
 * and rope_yarn, ext_factor 1): pair i turns by pos * f_i with
 * f_i = theta^(-2i/d) mixed toward f_i / factor outside the correction
 * range [floor(corr(beta_fast)), ceil(corr(beta_slow))], corr(b) =
 * d ln(orig / (2 pi b)) / (2 ln theta), and cos/sin scaled by
 * 1 + 0.1 ln factor. */
static void ref_rope_yarn(const ft_ref_model_t *m, double *x, uint32_t pos)
{
    const double d = m->rope_dim, theta = m->rope_theta, factor = m->rope_yarn_factor;
    const double pi = 3.14159265358979323846;
    double low = floor(d * log(m->rope_yarn_orig_ctx / (m->rope_yarn_beta_fast * 2.0 * pi)) / (2.0 * log(theta)));
    double high = ceil(d * log(m->rope_yarn_orig_ctx / (m->rope_yarn_beta_slow * 2.0 * pi)) / (2.0 * log(theta)));
    low = fmax(0.0, low);
    high = fmin(d - 1.0, high);
    const double mscale = 1.0 + 0.1 * log(factor);
    const uint32_t half = m->rope_dim / 2;
    for (uint32_t i = 0; i < half; i++) {
        const double extrap = pow(theta, -2.0 * i / d), interp = extrap / factor;
        const double y = fmin(1.0, fmax(0.0, (i - low) / fmax(0.001, high - low)));
        const double mix = 1.0 - y; /* 1: extrapolate (high frequencies), 0: interpolate */
        const double angle = pos * (interp * (1.0 - mix) + extrap * mix);
        const double c = cos(angle) * mscale, sn = sin(angle) * mscale;
        const double a = x[i], b = x[i + half];
        x[i] = a * c - b * sn;
        x[i + half] = a * sn + b * c;
    }
}

/* p_j = exp(s_j) / (sum_i exp(s_i) + exp(sink)): the sink takes its share
 * of the probability and weighs no value (gpt-oss). */
static void ref_softmax_sink(double *s, uint32_t n, double sink)
{
    double mx = sink, sum;
    for (uint32_t i = 0; i < n; i++)
        mx = s[i] > mx ? s[i] : mx;
    sum = exp(sink - mx);
    for (uint32_t i = 0; i < n; i++) {
        s[i] = exp(s[i] - mx);
        sum += s[i];
    }
    for (uint32_t i = 0; i < n; i++)
        s[i] /= sum;
}

/* x += attention(RMSNorm(x)) for the token at position pos of layer l. */
static void ref_attention(ft_ref_session_t *s, uint32_t l, uint32_t pos, double *x)
{
    const ft_ref_model_t *m = s->m;
    const ft_ref_layer_t *L = &m->layers[l];
    const uint32_t d = m->d_model, hd = L->head_dim, vd = L->value_head_dim;
    const uint32_t group = L->n_heads / L->n_kv_heads;
    double *h = s->h, *q = s->q, *att = s->att, *scores = s->scores, *o = s->o;
    double *k = s->k_cache[l] + (size_t)pos * L->n_kv_heads * hd; /* this position's rows */
    double *v = s->v_cache[l] + (size_t)pos * L->n_kv_heads * vd;

    ft_ref_rmsnorm(x, L->attn_norm, d, m->norm_eps, h);
    ref_mv(s, L->wq, L->fmt_wq, L->n_heads * hd, d, h, q);
    ref_mv(s, L->wk, L->fmt_wk, L->n_kv_heads * hd, d, h, k);
    ref_mv(s, L->wv, L->fmt_wv, L->n_kv_heads * vd, d, h, v);
    ref_add_bias(q, L->bq, L->n_heads * hd);
    ref_add_bias(k, L->bk, L->n_kv_heads * hd);
    ref_add_bias(v, L->bv, L->n_kv_heads * vd);
    const int head_norm = L->qk_norm && !L->qk_norm_full;
    if (L->qk_norm_full) { /* before RoPE, like the per-head form */
        ft_ref_rmsnorm(q, L->q_norm, L->n_heads * hd, m->norm_eps, q);
        ft_ref_rmsnorm(k, L->k_norm, L->n_kv_heads * hd, m->norm_eps, k);
    }
    void (*rope)(double *, uint32_t, uint32_t, double) =
        m->rope_interleaved ? ft_ref_rope_norm : ft_ref_rope_neox;
    if (m->rope_yarn_factor != 0.0) { /* NeoX with YaRN's frequencies and scale */
        for (uint32_t hq = 0; hq < L->n_heads; hq++)
            ref_rope_yarn(m, q + hq * hd, pos);
        for (uint32_t hk = 0; hk < L->n_kv_heads; hk++)
            ref_rope_yarn(m, k + hk * hd, pos);
        rope = NULL;
    }
    for (uint32_t hq = 0; hq < L->n_heads; hq++) {
        if (head_norm)
            ft_ref_rmsnorm(q + hq * hd, L->q_norm, hd, m->norm_eps, q + hq * hd);
        if (rope) rope(q + hq * hd, m->rope_dim, pos, m->rope_theta);
    }
    for (uint32_t hk = 0; hk < L->n_kv_heads; hk++) {
        if (head_norm)
            ft_ref_rmsnorm(k + hk * hd, L->k_norm, hd, m->norm_eps, k + hk * hd);
        if (rope) rope(k + hk * hd, m->rope_dim, pos, m->rope_theta);
    }
    /* A sliding window: the last sliding_window positions, pos included. */
    const uint32_t first = L->sliding_window && pos >= L->sliding_window ? pos + 1 - L->sliding_window : 0;
    for (uint32_t hq = 0; hq < L->n_heads; hq++) {
        const uint32_t hk = hq / group;
        const double *qh = q + (size_t)hq * hd;
        for (uint32_t t = first; t <= pos; t++) {
            const double *kt = s->k_cache[l] + ((size_t)t * L->n_kv_heads + hk) * hd;
            double dot = 0.0;
            for (uint32_t i = 0; i < hd; i++)
                dot += qh[i] * kt[i];
            scores[t - first] = dot / sqrt((double)hd);
        }
        if (L->sinks)
            ref_softmax_sink(scores, pos + 1 - first, L->sinks[hq]);
        else
            ft_ref_softmax(scores, pos + 1 - first);
        double *out = att + (size_t)hq * vd;
        for (uint32_t i = 0; i < vd; i++)
            out[i] = 0.0;
        for (uint32_t t = first; t <= pos; t++) {
            const double *vt = s->v_cache[l] + ((size_t)t * L->n_kv_heads + hk) * vd;
            for (uint32_t i = 0; i < vd; i++)
                out[i] += scores[t - first] * vt[i];
        }
    }
    if (L->w_gate) { /* att *= sigmoid(Wgate h): h is still the normed input, q is spent */
        ref_mv(s, L->w_gate, L->fmt_w_gate, L->n_heads * vd, d, h, q);
        for (uint32_t i = 0; i < L->n_heads * vd; i++)
            att[i] *= 1.0 / (1.0 + exp(-q[i]));
    }
    ref_mv(s, L->wo, L->fmt_wo, d, L->n_heads * vd, att, o);
    ref_add_bias(o, L->bo, d);
    for (uint32_t i = 0; i < d; i++)
        x[i] += o[i];
}

/* x += MLA(RMSNorm(x)) for the token at position pos of layer l: its row
 * [c | kr] into the cache, each head in the expanded form (ref_mla.h). */
static void ref_mla_attention(ft_ref_session_t *s, uint32_t l, uint32_t pos, double *x)
{
    const ft_ref_model_t *m = s->m;
    const ft_ref_layer_t *L = &m->layers[l];
    const uint32_t d = m->d_model, H = L->n_heads, hd = L->head_dim, rope = m->rope_dim, r = L->kv_lora,
                   v = L->value_head_dim, row = r + rope;
    double *h = s->h, *q = s->q, *att = s->att, *c = s->k_cache[l] + (size_t)pos * row;
    ft_ref_rmsnorm(x, L->attn_norm, d, m->norm_eps, h);
    if (L->q_lora) {
        double *qa = malloc(L->q_lora * sizeof(double));
        if (!qa) abort();
        ref_mv(s, L->wq_a, L->fmt_wq_a, L->q_lora, d, h, qa);
        ft_ref_rmsnorm(qa, L->q_a_norm, L->q_lora, m->norm_eps, qa);
        ref_mv(s, L->wq_b, L->fmt_wq_b, H * hd, L->q_lora, qa, q);
        free(qa);
    } else {
        ref_mv(s, L->wq, L->fmt_wq, H * hd, d, h, q);
    }
    ref_mv(s, L->wkv_a, L->fmt_wkv_a, r, d, h, c);
    ft_ref_rmsnorm(c, L->kv_a_norm, r, m->norm_eps, c);
    ref_mv(s, L->wk_rope, L->fmt_wk_rope, rope, d, h, c + r);
    const double mscale = m->rope_yarn_factor == 0.0    ? 1.0
                          : m->rope_yarn_mscale != 0.0 ? m->rope_yarn_mscale
                                                       : 1.0 + 0.1 * log(m->rope_yarn_factor);
    for (uint32_t hq = 0; hq <= H; hq++) /* the heads' q_rope, then the shared kr */
        ft_ref_mla_rope(hq < H ? q + (size_t)hq * hd + L->nope : c + r, rope, m->rope_interleaved, pos,
                        m->rope_theta, m->rope_yarn_factor, m->rope_yarn_orig_ctx, m->rope_yarn_beta_fast,
                        m->rope_yarn_beta_slow, mscale);
    const ft_ref_mla_dims_t dm = {L->nope, rope, r, v, L->attn_scale};
    for (uint32_t hq = 0; hq < H; hq++)
        if (!ft_ref_mla_head_expanded(&dm, L->wkb + (size_t)hq * L->nope * r, L->wvb + (size_t)hq * v * r,
                                      q + (size_t)hq * hd, s->k_cache[l], pos + 1, att + (size_t)hq * v))
            abort(); /* out of memory in test code */
    ref_mv(s, L->wo, L->fmt_wo, d, H * v, att, s->o);
    for (uint32_t i = 0; i < d; i++)
        x[i] += s->o[i];
}

/* x += GatedDeltaNet(RMSNorm(x)) for the next token of layer l. */
static void ref_deltanet(ft_ref_session_t *s, uint32_t l, double *x)
{
    const ft_ref_model_t *m = s->m;
    const ft_ref_layer_t *L = &m->layers[l];
    const uint32_t d = m->d_model, hd = L->head_dim, Hv = L->n_heads, Hk = L->n_kv_heads,
                   K = L->conv_kernel;
    const size_t C = (2 * (size_t)Hk + Hv) * hd;
    double *h = s->h, *y = s->dn_y, *z = s->dn_z, *b = s->dn_b, *a = s->dn_a, *o = s->att,
           *win = s->dn_window[l];
    ft_ref_rmsnorm(x, L->attn_norm, d, m->norm_eps, h);
    ref_mv(s, L->dn_qkv, L->fmt_dn_qkv, (uint32_t)C, d, h, s->q); /* the new conv input */
    ref_mv(s, L->dn_z, L->fmt_dn_z, Hv * hd, d, h, z);
    ref_mv(s, L->dn_beta, L->fmt_dn_beta, Hv, d, h, b);
    ref_mv(s, L->dn_alpha, L->fmt_dn_alpha, Hv, d, h, a);
    /* y_t[c] = silu(sum_j w[c][j] in_{t-K+1+j}[c]): the window holds the K-1 before this one */
    for (size_t c = 0; c < C; c++) {
        double acc = L->dn_conv[c * K + K - 1] * s->q[c];
        for (uint32_t j = 0; j + 1 < K; j++)
            acc += L->dn_conv[c * K + j] * win[j * C + c];
        y[c] = ft_ref_silu(acc);
    }
    for (uint32_t j = 0; j + 2 < K; j++)
        memcpy(win + j * C, win + (j + 1) * C, C * sizeof(double));
    memcpy(win + (size_t)(K - 2) * C, s->q, C * sizeof(double));
    double *q = y, *k = y + (size_t)Hk * hd, *v = y + 2 * (size_t)Hk * hd;
    for (uint32_t hh = 0; hh < 2 * Hk; hh++) { /* q's heads, then k's: x / max(|x|, eps) */
        double *p = y + (size_t)hh * hd, ss = 0.0;
        for (uint32_t i = 0; i < hd; i++)
            ss += p[i] * p[i];
        const double nrm = fmax(sqrt(ss), m->norm_eps);
        for (uint32_t i = 0; i < hd; i++)
            p[i] /= nrm;
    }
    for (uint32_t hv = 0; hv < Hv; hv++) {
        const uint32_t kh = L->heads_tiled ? hv % Hk : hv / (Hv / Hk);
        const double *qh = q + (size_t)kh * hd, *kk = k + (size_t)kh * hd,
                     *vh = v + (size_t)hv * hd;
        const double g = L->dn_a[hv] * log1p(exp(a[hv] + L->dn_dt_bias[hv]));
        const double beta = 1.0 / (1.0 + exp(-b[hv])), decay = exp(g);
        double *S = s->dn_state[l] + (size_t)hv * hd * hd; /* S[i][j]: i over v, j over k */
        for (size_t e = 0; e < (size_t)hd * hd; e++)
            S[e] *= decay;
        for (uint32_t i = 0; i < hd; i++) {
            double sk = 0.0;
            for (uint32_t j = 0; j < hd; j++)
                sk += S[(size_t)i * hd + j] * kk[j];
            const double delta = beta * (vh[i] - sk);
            for (uint32_t j = 0; j < hd; j++)
                S[(size_t)i * hd + j] += delta * kk[j];
        }
        double *oh = o + (size_t)hv * hd;
        for (uint32_t i = 0; i < hd; i++) {
            double acc = 0.0;
            for (uint32_t j = 0; j < hd; j++)
                acc += S[(size_t)i * hd + j] * qh[j];
            oh[i] = acc / sqrt((double)hd);
        }
        /* the gated RMSNorm of this head */
        ft_ref_rmsnorm(oh, L->dn_norm, hd, m->norm_eps, oh);
        for (uint32_t i = 0; i < hd; i++)
            oh[i] *= ft_ref_silu(z[(size_t)hv * hd + i]);
    }
    ref_mv(s, L->dn_out, L->fmt_dn_out, d, Hv * hd, o, s->o);
    for (uint32_t i = 0; i < d; i++)
        x[i] += s->o[i];
}

/* x += MoE(RMSNorm(x)) for one token in layer l. */
static void ref_moe(ft_ref_session_t *s, uint32_t l, double *x)
{
    const ft_ref_model_t *m = s->m;
    const ft_ref_layer_t *L = &m->layers[l];
    const uint32_t d = m->d_model, F = L->expert_ffn, E = L->n_experts, K = L->n_experts_used;
    double *h = s->h, *probs = s->probs, *g = s->g, *u = s->u, *y = s->y;
    uint32_t *chosen = s->chosen;

    ft_ref_rmsnorm(x, L->ffn_norm, d, m->norm_eps, h);
    ref_mv(s, L->router, L->fmt_router, E, d, h, probs);
    for (uint32_t e = 0; L->router_bias && e < E; e++) /* gpt-oss: the logits' bias; raw logits kept */
        s->masked[e] = (probs[e] += L->router_bias[e]);
    if (L->sigmoid)
        for (uint32_t e = 0; e < E; e++)
            probs[e] = 1.0 / (1.0 + exp(-probs[e]));
    else
        ft_ref_softmax(probs, E);
    /* The experts are chosen by the biased scores, weighted by the plain. */
    double *choice = s->choice;
    for (uint32_t e = 0; e < E; e++)
        choice[e] = probs[e] + (L->sel_bias ? L->sel_bias[e] : 0.0);
    if (L->n_groups) { /* the choice among the experts of the best groups */
        const uint32_t size = E / L->n_groups;
        double *masked = s->masked;
        for (uint32_t e = 0; e < E; e++)
            masked[e] = choice[e];
        for (uint32_t gi = 0; gi < L->n_groups; gi++) {
            double score_g = 0;
            uint32_t better = 0;
            for (uint32_t pass = 0; pass <= L->n_groups; pass++) { /* pass n_groups: gi itself */
                const uint32_t grp = pass < L->n_groups ? pass : gi;
                double a = -INFINITY, b = -INFINITY;
                for (uint32_t i = grp * size; i < (grp + 1) * size; i++) {
                    if (choice[i] > a) {
                        b = a;
                        a = choice[i];
                    } else if (choice[i] > b) {
                        b = choice[i];
                    }
                }
                const double sc = size > 1 ? a + b : a;
                if (pass == L->n_groups)
                    score_g = sc;
                else
                    s->group_score[pass] = sc;
            }
            for (uint32_t h2 = 0; h2 < L->n_groups; h2++)
                better += s->group_score[h2] > score_g || (s->group_score[h2] == score_g && h2 < gi);
            if (better >= L->n_groups_used)
                for (uint32_t i = gi * size; i < (gi + 1) * size; i++)
                    masked[i] = -INFINITY;
        }
        ft_ref_topk(masked, E, K, chosen);
    } else {
        ft_ref_topk(choice, E, K, chosen);
    }
    /* How near this choice was to a different one: the last chosen
     * score minus the best one left out. */
    if (K < E) {
        double best_out = -INFINITY;
        for (uint32_t e = 0; e < E; e++) {
            int taken = 0;
            for (uint32_t j = 0; j < K; j++)
                taken |= chosen[j] == e;
            if (!taken && choice[e] > best_out) best_out = choice[e];
        }
        const double margin = choice[chosen[K - 1]] - best_out;
        if (margin < s->route_margin[s->n_past]) s->route_margin[s->n_past] = margin;
    }
    /* The chosen set, ascending, for ft_ref_session_same_routes. */
    uint32_t *set = s->routes + ((size_t)s->n_past * m->n_layers + l) * s->max_used;
    for (uint32_t e = 0, j = 0; e < E; e++)
        for (uint32_t t = 0; t < K; t++)
            if (chosen[t] == e) set[j++] = e;
    if (L->shared_ffn) { /* the shared experts first, as the runtime's schedule */
        const uint32_t S = L->shared_ffn;
        ref_mv(s, L->sh_gate, L->fmt_sh_gate, S, d, h, g);
        ref_mv(s, L->sh_up, L->fmt_sh_up, S, d, h, u);
        for (uint32_t i = 0; i < S; i++)
            g[i] = ft_ref_silu(g[i]) * u[i];
        ref_mv(s, L->sh_down, L->fmt_sh_down, d, S, g, y);
        double gate = 1.0;
        if (L->sh_gate_inp) { /* sigmoid(w . h) */
            double dot;
            ref_mv(s, L->sh_gate_inp, L->fmt_sh_gate_inp, 1, d, h, &dot);
            gate = 1.0 / (1.0 + exp(-dot));
        }
        for (uint32_t i = 0; i < d; i++)
            x[i] += gate * y[i];
    }
    double sum = 0.0;
    for (uint32_t j = 0; j < K; j++)
        sum += probs[chosen[j]];
    for (uint32_t j = 0; j < K; j++) {
        const uint32_t e = chosen[j];
        double weight = (L->norm_topk_prob ? probs[e] / sum : probs[e]) * L->routed_scaling;
        if (L->router_bias) { /* gpt-oss: softmax over the chosen logits, as written */
            double mx = -INFINITY, z = 0.0;
            for (uint32_t t = 0; t < K; t++)
                mx = fmax(mx, s->masked[chosen[t]]);
            for (uint32_t t = 0; t < K; t++)
                z += exp(s->masked[chosen[t]] - mx);
            weight = exp(s->masked[e] - mx) / z;
        }
        ref_mv(s, L->gate + (size_t)e * F * d, L->fmt_gate, F, d, h, g);
        ref_mv(s, L->up + (size_t)e * F * d, L->fmt_up, F, d, h, u);
        ref_add_bias(g, L->b_gate ? L->b_gate + (size_t)e * F : NULL, F);
        ref_add_bias(u, L->b_up ? L->b_up + (size_t)e * F : NULL, F);
        for (uint32_t i = 0; i < F; i++) {
            if (L->act_oai) {
                const double gc = fmin(g[i], L->act_limit), uc = fmin(fmax(u[i], -L->act_limit), L->act_limit);
                g[i] = gc / (1.0 + exp(-L->act_alpha * gc)) * (uc + 1.0);
            } else {
                g[i] = ft_ref_silu(g[i]) * u[i];
            }
        }
        ref_mv(s, L->down + (size_t)e * d * F, L->fmt_down, d, F, g, y);
        ref_add_bias(y, L->b_down ? L->b_down + (size_t)e * d : NULL, d);
        for (uint32_t i = 0; i < d; i++)
            x[i] += weight * y[i];
    }
}

/* The logits of one token at position n_past; appends its K and V. */
static void ref_token(ft_ref_session_t *s, int32_t token, double *logits)
{
    const ft_ref_model_t *m = s->m;
    const uint32_t d = m->d_model;
    double *x = s->x;
    s->route_margin[s->n_past] = INFINITY;
    memcpy(x, m->tok_embd + (size_t)token * d, d * sizeof(double));
    for (uint32_t l = 0; l < m->n_layers; l++) {
        if (m->layers[l].deltanet)
            ref_deltanet(s, l, x);
        else if (m->layers[l].mla)
            ref_mla_attention(s, l, s->n_past, x);
        else
            ref_attention(s, l, s->n_past, x);
        ref_moe(s, l, x);
    }
    ft_ref_rmsnorm(x, m->output_norm, d, m->norm_eps, x);
    ref_mv(s, m->output, m->fmt_output, m->vocab_size, d, x, logits);
    s->n_past++;
}

ft_status_t ft_ref_session_eval(ft_ref_session_t *s, const int32_t *tokens, uint32_t n,
                                double *logits_out)
{
    const ft_ref_model_t *m = s->m;
    if (n == 0) return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "reference: empty batch");
    if (n > s->n_ctx - s->n_past)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "reference: %u tokens after %u do not fit a context of %u", n,
                              s->n_past, s->n_ctx);
    for (uint32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || (uint32_t)tokens[i] >= m->vocab_size)
            return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                                  "reference: token %d at batch index %u is not below %u",
                                  tokens[i], i, m->vocab_size);
    double *scratch = logits_out ? NULL : malloc(m->vocab_size * sizeof(double));
    if (!logits_out && !scratch) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    for (uint32_t i = 0; i < n; i++)
        ref_token(s, tokens[i], logits_out ? logits_out + (size_t)i * m->vocab_size : scratch);
    free(scratch);
    return FT_OK;
}

ft_status_t ft_ref_eval(const ft_ref_model_t *m, const int32_t *tokens, uint32_t n,
                        double *logits_out)
{
    ft_ref_session_t *s;
    ft_status_t st = ft_ref_session_create(m, n, &s);
    if (st) return st;
    st = ft_ref_session_eval(s, tokens, n, logits_out);
    ft_ref_session_free(s);
    return st;
}
