/* The non-matmul kernels against the CPU: RMSNorm, RoPE (NeoX and adjacent
 * pairs) and SwiGLU against runtime/exec/ops.c (same float32 formulas;
 * tolerances cover the GPU's different summation order and expf/sqrt
 * ulps: 1e-5), decode
 * attention against a float64 softmax-attention (1e-5), the router against
 * ft_op_softmax + ft_op_topk (same experts, weights to 1e-5), the decode
 * graph's KV append (bit-exact) and position-from-memory attention (as
 * the plain one), the same three over an f16 KV cache (the append rounds
 * to nearest even bit-exactly as ft_fp32_to_fp16), and the data movers
 * (expert copy, gather, scatter-add) bit-exact. */
#include "gpu_harness.h"

#include "exec/ops.h"
#include "format/convert.h"
#include "ft_cuda_kernels.h"

#include <string.h>

static void gk_check_rmsnorm(gk_t *g, uint32_t d)
{
    enum { ROWS = 5 };
    float *x = gk_xmalloc(sizeof(float) * d * ROWS), *w = gk_xmalloc(sizeof(float) * d);
    float *y = gk_xmalloc(sizeof(float) * d * ROWS), *yc = gk_xmalloc(sizeof(float) * d);
    double *ref = gk_xmalloc(sizeof(double) * d * ROWS);
    for (uint32_t i = 0; i < d * ROWS; i++)
        x[i] = gk_randn(g) * 3.0f;
    for (uint32_t i = 0; i < d; i++)
        w[i] = 1.0f + 0.1f * gk_randn(g);
    for (uint32_t r = 0; r < ROWS; r++) {
        ft_op_rmsnorm(yc, x + (size_t)r * d, w, d, 1e-6f);
        for (uint32_t i = 0; i < d; i++)
            ref[(size_t)r * d + i] = yc[i];
    }
    ft_cu_deviceptr dx = gk_upload(g, x, sizeof(float) * d * ROWS),
                    dw = gk_upload(g, w, sizeof(float) * d);
    ft_cu_deviceptr dy = gk_upload(g, y, sizeof(float) * d * ROWS);
    int n = ROWS;
    void *p[] = {&dx, &dw, &dy, &n};
    char name[48];
    snprintf(name, sizeof(name), "ft_rmsnorm_d%u", d);
    gk_launch(g, name, ROWS, 1, 256, p);
    gk_download(g, y, dy, sizeof(float) * d * ROWS);
    gk_report(g, name, gk_nerr(y, ref, (size_t)d * ROWS), 1e-5);
    ft_cuda_free(g->dev, dx), ft_cuda_free(g->dev, dw), ft_cuda_free(g->dev, dy);
    free(x), free(w), free(y), free(yc), free(ref);
}

/* neox: pairs (i, i + HD / 2) against ft_op_rope_neox; else adjacent
 * pairs (2i, 2i + 1) against ft_op_rope_norm (Mixtral's GGUF layout). */
static void gk_check_rope(gk_t *g, int neox)
{
    enum { TOK = 3 };
    const int pos[TOK] = {0, 17, 40000};
    const size_t n = (size_t)TOK * GK_HEADS * GK_HD;
    float *x = gk_xmalloc(sizeof(float) * n), *y = gk_xmalloc(sizeof(float) * n);
    double *ref = gk_xmalloc(sizeof(double) * n);
    float inv_freq[GK_HD / 2];
    for (int i = 0; i < GK_HD / 2; i++) /* as runtime/exec/program.c */
        inv_freq[i] = (float)pow(1000000.0, -2.0 * i / GK_HD);
    for (size_t i = 0; i < n; i++)
        x[i] = y[i] = gk_randn(g);
    for (int t = 0; t < TOK; t++)
        for (int h = 0; h < GK_HEADS; h++)
            (neox ? ft_op_rope_neox : ft_op_rope_norm)(y + ((size_t)t * GK_HEADS + h) * GK_HD,
                                                       GK_HD, inv_freq, (uint32_t)pos[t]);
    for (size_t i = 0; i < n; i++)
        ref[i] = y[i];
    ft_cu_deviceptr dx = gk_upload(g, x, sizeof(float) * n), dpos = gk_upload(g, pos, sizeof(pos));
    int heads = GK_HEADS, tok = TOK;
    void *p[] = {&dx, &heads, &dpos, &tok};
    char name[48];
    if (ft_cuda_kernel_rope_name(neox, GK_HD, GK_HD, name, sizeof(name)) < 0) {
        fprintf(stderr, "RoPE kernel name does not fit %zu bytes\n", sizeof(name));
        exit(1);
    }
    gk_launch(g, name, TOK, GK_HEADS, GK_HD / 2, p);
    gk_download(g, y, dx, sizeof(float) * n);
    gk_report(g, name, gk_nerr(y, ref, n), 1e-5);
    ft_cuda_free(g->dev, dx), ft_cuda_free(g->dev, dpos);
    free(x), free(y), free(ref);
}

static void gk_check_attention(gk_t *g)
{
    enum { POS = 1000, STRIDE = GK_KV * GK_HD };
    const size_t nq = (size_t)GK_HEADS * GK_HD, nkv = (size_t)POS * STRIDE;
    float *q = gk_xmalloc(sizeof(float) * nq), *k = gk_xmalloc(sizeof(float) * nkv);
    float *v = gk_xmalloc(sizeof(float) * nkv), *y = gk_xmalloc(sizeof(float) * nq);
    double *ref = gk_xmalloc(sizeof(double) * nq), *s = gk_xmalloc(sizeof(double) * POS);
    for (size_t i = 0; i < nq; i++)
        q[i] = gk_randn(g);
    for (size_t i = 0; i < nkv; i++)
        k[i] = gk_randn(g), v[i] = gk_randn(g);
    for (int h = 0; h < GK_HEADS; h++) {
        const int kv = h / (GK_HEADS / GK_KV);
        double mx = -INFINITY, sum = 0.0;
        for (int t = 0; t < POS; t++) {
            double d = 0.0;
            for (int i = 0; i < GK_HD; i++)
                d += (double)q[h * GK_HD + i] * k[(size_t)t * STRIDE + kv * GK_HD + i];
            s[t] = d / sqrt((double)GK_HD);
            mx = s[t] > mx ? s[t] : mx;
        }
        for (int t = 0; t < POS; t++)
            sum += (s[t] = exp(s[t] - mx));
        for (int i = 0; i < GK_HD; i++) {
            double acc = 0.0;
            for (int t = 0; t < POS; t++)
                acc += s[t] * v[(size_t)t * STRIDE + kv * GK_HD + i];
            ref[h * GK_HD + i] = acc / sum;
        }
    }
    ft_cu_deviceptr dq = gk_upload(g, q, sizeof(float) * nq),
                    dk = gk_upload(g, k, sizeof(float) * nkv);
    ft_cu_deviceptr dv = gk_upload(g, v, sizeof(float) * nkv),
                    dout = gk_upload(g, y, sizeof(float) * nq), dscr;
    GK_OK(ft_cuda_alloc(g->dev, sizeof(float) * GK_HEADS * POS, &dscr));
    int stride = STRIDE, n_pos = POS, max_pos = POS;
    void *p[] = {&dq, &dk, &dv, &stride, &n_pos, &dscr, &max_pos, &dout};
    char name[64];
    snprintf(name, sizeof(name), "ft_attn_decode_h%d_q%d_kv%d", GK_HD, GK_HEADS, GK_KV);
    gk_launch(g, name, GK_HEADS, 1, 128, p);
    gk_download(g, y, dout, sizeof(float) * nq);
    gk_report(g, name, gk_nerr(y, ref, nq), 1e-5);
    ft_cuda_free(g->dev, dq), ft_cuda_free(g->dev, dk), ft_cuda_free(g->dev, dv);
    ft_cuda_free(g->dev, dout), ft_cuda_free(g->dev, dscr);
    free(q), free(k), free(v), free(y), free(ref), free(s);
}

static void gk_check_router(gk_t *g)
{
    enum { TOK = 5 };
    float logits[TOK * GK_EXPERTS], p[GK_EXPERTS], w[TOK * GK_USED];
    int ids[TOK * GK_USED];
    double ref[TOK * GK_USED];
    int32_t want[TOK * GK_USED];
    for (int i = 0; i < TOK * GK_EXPERTS; i++)
        logits[i] = 2.0f * gk_randn(g);
    for (int t = 0; t < TOK; t++) {
        memcpy(p, logits + t * GK_EXPERTS, sizeof(p));
        ft_op_softmax(p, GK_EXPERTS);
        ft_op_topk(p, GK_EXPERTS, GK_USED, want + t * GK_USED);
        double sum = 0.0;
        for (int k = 0; k < GK_USED; k++)
            sum += p[want[t * GK_USED + k]];
        for (int k = 0; k < GK_USED; k++) /* Qwen3-MoE: norm_topk_prob */
            ref[t * GK_USED + k] = p[want[t * GK_USED + k]] / sum;
    }
    ft_cu_deviceptr dl = gk_upload(g, logits, sizeof(logits)), di = gk_upload(g, ids, sizeof(ids));
    ft_cu_deviceptr dw = gk_upload(g, w, sizeof(w));
    int tok = TOK;
    void *prm[] = {&dl, &tok, &di, &dw};
    char name[48];
    snprintf(name, sizeof(name), "ft_router_topk_e%d_k%d", GK_EXPERTS, GK_USED);
    gk_launch(g, name, (TOK + 3) / 4, 1, 128, prm);
    gk_download(g, ids, di, sizeof(ids));
    gk_download(g, w, dw, sizeof(w));
    int same = 1;
    for (int i = 0; i < TOK * GK_USED; i++)
        same &= ids[i] == want[i];
    gk_report(g, "ft_router_topk experts chosen (1 = differ)", same ? 0.0 : 1.0, 0.0);
    gk_report(g, name, gk_nerr(w, ref, TOK * GK_USED), 1e-5);
    ft_cuda_free(g->dev, dl), ft_cuda_free(g->dev, di), ft_cuda_free(g->dev, dw);
}

/* Expert copy (aligned and odd sizes), gather, scatter-add, SwiGLU. */
static void gk_check_movers(gk_t *g)
{
    const size_t sizes[2] = {(size_t)3 << 20, 1000003};
    for (int c = 0; c < 2; c++) {
        const size_t n = sizes[c];
        uint8_t *h = gk_xmalloc(3 * n), *back = gk_xmalloc(3 * n);
        for (size_t i = 0; i < 3 * n; i++)
            h[i] = (uint8_t)(i * 131 + (i >> 9));
        ft_cu_deviceptr src = gk_upload(g, h, 3 * n), dst, ps[3], pd[3];
        GK_OK(ft_cuda_alloc(g->dev, 3 * n, &dst));
        for (int e = 0; e < 3; e++)
            ps[e] = src + (size_t)e * n, pd[e] = dst + (size_t)(2 - e) * n; /* reversed */
        ft_cu_deviceptr dps = gk_upload(g, ps, sizeof(ps)), dpd = gk_upload(g, pd, sizeof(pd));
        uint64_t nb = n;
        void *p[] = {&dps, &dpd, &nb};
        gk_launch(g, "ft_expert_copy", 64, 3, 256, p);
        gk_download(g, back, dst, 3 * n);
        int ok = 1;
        for (int e = 0; e < 3; e++)
            ok &= memcmp(back + (size_t)(2 - e) * n, h + (size_t)e * n, n) == 0;
        gk_report(
            g, c ? "ft_expert_copy odd size (1 = differ)" : "ft_expert_copy 16-byte (1 = differ)",
            !ok, 0.0);
        ft_cuda_free(g->dev, src), ft_cuda_free(g->dev, dst), ft_cuda_free(g->dev, dps),
            ft_cuda_free(g->dev, dpd);
        free(h), free(back);
    }
    enum { T = 9, N = 4, C = GK_D };
    static float x[T * C], rows[N * C], y[T * C], ref_y[T * C];
    const int idx[N] = {7, 0, 3, 8};
    const float wt[N] = {0.5f, 0.25f, -1.0f, 2.0f};
    for (int i = 0; i < T * C; i++)
        x[i] = gk_randn(g), y[i] = ref_y[i] = gk_randn(g);
    ft_cu_deviceptr dx = gk_upload(g, x, sizeof(x)), dr = gk_upload(g, rows, sizeof(rows));
    ft_cu_deviceptr di = gk_upload(g, idx, sizeof(idx)), dwt = gk_upload(g, wt, sizeof(wt)),
                    dy = gk_upload(g, y, sizeof(y));
    int ldx = C, n = N, cols = C;
    void *pg[] = {&dx, &ldx, &di, &n, &dr, &cols};
    gk_launch(g, "ft_rows_gather", N, 1, 256, pg);
    gk_download(g, rows, dr, sizeof(rows));
    int ok = 1;
    for (int i = 0; i < N; i++)
        ok &= memcmp(rows + i * C, x + idx[i] * C, sizeof(float) * C) == 0;
    gk_report(g, "ft_rows_gather (1 = differ)", !ok, 0.0);
    void *ps[] = {&dr, &di, &dwt, &n, &dy, &ldx, &cols};
    gk_launch(g, "ft_rows_scatter_add", N, 1, 256, ps);
    gk_download(g, y, dy, sizeof(y));
    for (int i = 0; i < N; i++)
        for (int c = 0; c < C; c++)
            ref_y[idx[i] * C + c] += wt[i] * rows[i * C + c];
    /* Not bit-exact: the GPU may fuse the multiply-add (one rounding). */
    static double ref_sc[T * C];
    for (int i = 0; i < T * C; i++)
        ref_sc[i] = ref_y[i];
    gk_report(g, "ft_rows_scatter_add", gk_nerr(y, ref_sc, T * C), 1e-6);
    /* SwiGLU over x (gate) and y (up). */
    static float h[T * C];
    static double ref[T * C];
    memcpy(h, x, sizeof(h));
    ft_op_swiglu(h, ref_y, T * C);
    for (int i = 0; i < T * C; i++)
        ref[i] = h[i];
    int total = T * C;
    void *pw[] = {&dx, &dy, &dx, &total};
    gk_launch(g, "ft_swiglu", 64, 1, 256, pw);
    gk_download(g, h, dx, sizeof(h));
    gk_report(g, "ft_swiglu", gk_nerr(h, ref, T * C), 1e-5);
    ft_cuda_free(g->dev, dx), ft_cuda_free(g->dev, dr), ft_cuda_free(g->dev, di);
    ft_cuda_free(g->dev, dwt), ft_cuda_free(g->dev, dy);
}

/* The decode graph's forms: ft_kv_append writes rows bit-exact where
 * pos[] says, and ft_attn_decode_pos (length pos[0] + 1 from device
 * memory) equals ft_attn_decode given that length as an argument. */
static void gk_check_decode_pos(gk_t *g)
{
    enum { POS = 300, STRIDE = GK_KV * GK_HD, TOK = 3, LEN = 200 };
    const size_t nkv = (size_t)POS * STRIDE, nq = (size_t)GK_HEADS * GK_HD;
    float *k = gk_xmalloc(sizeof(float) * nkv), *v = gk_xmalloc(sizeof(float) * nkv);
    float *rows = gk_xmalloc(sizeof(float) * 2 * TOK * STRIDE),
          *back = gk_xmalloc(sizeof(float) * nkv);
    float *q = gk_xmalloc(sizeof(float) * nq), *y0 = gk_xmalloc(sizeof(float) * nq);
    float *y1 = gk_xmalloc(sizeof(float) * nq);
    double *ref = gk_xmalloc(sizeof(double) * nq);
    for (size_t i = 0; i < nkv; i++)
        k[i] = gk_randn(g), v[i] = gk_randn(g);
    for (size_t i = 0; i < 2 * TOK * STRIDE; i++)
        rows[i] = gk_randn(g);
    for (size_t i = 0; i < nq; i++)
        q[i] = gk_randn(g);
    const int pos[TOK] = {LEN - 1, 7, POS - 1}, len_pos[1] = {LEN - 1};
    ft_cu_deviceptr dk = gk_upload(g, k, sizeof(float) * nkv),
                    dv = gk_upload(g, v, sizeof(float) * nkv);
    ft_cu_deviceptr dr = gk_upload(g, rows, sizeof(float) * 2 * TOK * STRIDE);
    ft_cu_deviceptr dpos = gk_upload(g, pos, sizeof(pos)),
                    dlen = gk_upload(g, len_pos, sizeof(len_pos));
    ft_cu_deviceptr drv = dr + sizeof(float) * TOK * STRIDE,
                    dq = gk_upload(g, q, sizeof(float) * nq);
    ft_cu_deviceptr dout = gk_upload(g, y0, sizeof(float) * nq), dscr;
    GK_OK(ft_cuda_alloc(g->dev, sizeof(float) * GK_HEADS * POS, &dscr));
    int kv_dim = STRIDE, n_tok = TOK;
    void *pa[] = {&dr, &drv, &dk, &dv, &kv_dim, &dpos, &n_tok};
    gk_launch(g, "ft_kv_append", TOK, 1, 256, pa);
    for (int t = 0; t < TOK; t++) {
        memcpy(k + (size_t)pos[t] * STRIDE, rows + (size_t)t * STRIDE, sizeof(float) * STRIDE);
        memcpy(v + (size_t)pos[t] * STRIDE, rows + (size_t)(TOK + t) * STRIDE,
               sizeof(float) * STRIDE);
    }
    gk_download(g, back, dk, sizeof(float) * nkv);
    int same = memcmp(back, k, sizeof(float) * nkv) == 0;
    gk_download(g, back, dv, sizeof(float) * nkv);
    same &= memcmp(back, v, sizeof(float) * nkv) == 0;
    gk_report(g, "ft_kv_append (1 = differ)", !same, 0.0);
    int stride = STRIDE, n_pos = LEN, max_pos = POS;
    char name[80];
    void *p0[] = {&dq, &dk, &dv, &stride, &n_pos, &dscr, &max_pos, &dout};
    snprintf(name, sizeof(name), "ft_attn_decode_h%d_q%d_kv%d", GK_HD, GK_HEADS, GK_KV);
    gk_launch(g, name, GK_HEADS, 1, 128, p0);
    gk_download(g, y0, dout, sizeof(float) * nq);
    void *p1[] = {&dq, &dk, &dv, &stride, &dlen, &dscr, &max_pos, &dout};
    snprintf(name, sizeof(name), "ft_attn_decode_pos_h%d_q%d_kv%d", GK_HD, GK_HEADS, GK_KV);
    gk_launch(g, name, GK_HEADS, 1, 128, p1);
    gk_download(g, y1, dout, sizeof(float) * nq);
    for (size_t i = 0; i < nq; i++)
        ref[i] = y0[i];
    gk_report(g, name, gk_nerr(y1, ref, nq), 1e-6);
    ft_cuda_free(g->dev, dk), ft_cuda_free(g->dev, dv), ft_cuda_free(g->dev, dr);
    ft_cuda_free(g->dev, dpos), ft_cuda_free(g->dev, dlen), ft_cuda_free(g->dev, dq);
    ft_cuda_free(g->dev, dout), ft_cuda_free(g->dev, dscr);
    free(k), free(v), free(rows), free(back), free(q), free(y0), free(y1), free(ref);
}

/* The f16 KV cache (the plan's kv_format F16): ft_kv_append_f16 stores
 * each float as the nearest half, ties to even, bit-exact against
 * ft_fp32_to_fp16 (the CPU's append) on random rows and on a row of ties,
 * subnormals and overflow; ft_attn_decode_f16 over halves against a
 * float64 attention over the same halves widened (1e-5, as the f32
 * kernel: widening is exact and the float arithmetic is the f32
 * kernel's); ft_attn_decode_pos_f16 as ft_attn_decode_f16 given the
 * length (1e-6). */
static void gk_check_kv_f16(gk_t *g)
{
    enum { POS = 300, STRIDE = GK_KV * GK_HD, TOK = 3, LEN = 200 };
    static const float edges[] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65519.0f, 65520.0f, -65520.0f,
                                  0x1p-24f, 0x1p-25f, 3 * 0x1p-25f, -0.0f, 1e-10f, 0.1f};
    const size_t nkv = (size_t)POS * STRIDE, nq = (size_t)GK_HEADS * GK_HD;
    uint16_t *kh = gk_xmalloc(2 * nkv), *vh = gk_xmalloc(2 * nkv), *back = gk_xmalloc(2 * nkv);
    float *rows = gk_xmalloc(sizeof(float) * 2 * TOK * STRIDE), *q = gk_xmalloc(sizeof(float) * nq);
    float *y0 = gk_xmalloc(sizeof(float) * nq), *y1 = gk_xmalloc(sizeof(float) * nq);
    double *ref = gk_xmalloc(sizeof(double) * nq), *s = gk_xmalloc(sizeof(double) * POS);
    for (size_t i = 0; i < nkv; i++)
        kh[i] = ft_fp32_to_fp16(gk_randn(g)), vh[i] = ft_fp32_to_fp16(gk_randn(g));
    for (size_t i = 0; i < 2 * TOK * STRIDE; i++)
        rows[i] = gk_randn(g);
    /* token 2 (K and V) goes to position POS - 1, past the attended LEN */
    for (size_t c = 0; c < STRIDE; c++)
        rows[2 * STRIDE + c] = rows[(TOK + 2) * STRIDE + c] = edges[c % (sizeof(edges) / sizeof(edges[0]))];
    for (size_t i = 0; i < nq; i++)
        q[i] = gk_randn(g);
    const int pos[TOK] = {LEN - 1, 7, POS - 1}, len_pos[1] = {LEN - 1};
    ft_cu_deviceptr dk = gk_upload(g, kh, 2 * nkv), dv = gk_upload(g, vh, 2 * nkv);
    ft_cu_deviceptr dr = gk_upload(g, rows, sizeof(float) * 2 * TOK * STRIDE);
    ft_cu_deviceptr dpos = gk_upload(g, pos, sizeof(pos)), dlen = gk_upload(g, len_pos, sizeof(len_pos));
    ft_cu_deviceptr drv = dr + sizeof(float) * TOK * STRIDE, dq = gk_upload(g, q, sizeof(float) * nq);
    ft_cu_deviceptr dout = gk_upload(g, y0, sizeof(float) * nq), dscr;
    GK_OK(ft_cuda_alloc(g->dev, sizeof(float) * GK_HEADS * POS, &dscr));
    int kv_dim = STRIDE, n_tok = TOK;
    void *pa[] = {&dr, &drv, &dk, &dv, &kv_dim, &dpos, &n_tok};
    gk_launch(g, "ft_kv_append_f16", TOK, 1, 256, pa);
    for (int t = 0; t < TOK; t++)
        for (int c = 0; c < STRIDE; c++) {
            kh[(size_t)pos[t] * STRIDE + c] = ft_fp32_to_fp16(rows[(size_t)t * STRIDE + c]);
            vh[(size_t)pos[t] * STRIDE + c] = ft_fp32_to_fp16(rows[(size_t)(TOK + t) * STRIDE + c]);
        }
    gk_download(g, back, dk, 2 * nkv);
    int same = memcmp(back, kh, 2 * nkv) == 0;
    gk_download(g, back, dv, 2 * nkv);
    same &= memcmp(back, vh, 2 * nkv) == 0;
    gk_report(g, "ft_kv_append_f16 (1 = differ)", !same, 0.0);
    for (int h = 0; h < GK_HEADS; h++) {
        const int kv = h / (GK_HEADS / GK_KV);
        double mx = -INFINITY, sum = 0.0;
        for (int t = 0; t < LEN; t++) {
            double d = 0.0;
            for (int i = 0; i < GK_HD; i++)
                d += (double)q[h * GK_HD + i] * ft_fp16_to_fp32(kh[(size_t)t * STRIDE + kv * GK_HD + i]);
            s[t] = d / sqrt((double)GK_HD);
            mx = s[t] > mx ? s[t] : mx;
        }
        for (int t = 0; t < LEN; t++)
            sum += (s[t] = exp(s[t] - mx));
        for (int i = 0; i < GK_HD; i++) {
            double acc = 0.0;
            for (int t = 0; t < LEN; t++)
                acc += s[t] * ft_fp16_to_fp32(vh[(size_t)t * STRIDE + kv * GK_HD + i]);
            ref[h * GK_HD + i] = acc / sum;
        }
    }
    int stride = STRIDE, n_pos = LEN, max_pos = POS;
    char name[80];
    void *p0[] = {&dq, &dk, &dv, &stride, &n_pos, &dscr, &max_pos, &dout};
    snprintf(name, sizeof(name), "ft_attn_decode_f16_h%d_q%d_kv%d", GK_HD, GK_HEADS, GK_KV);
    gk_launch(g, name, GK_HEADS, 1, 128, p0);
    gk_download(g, y0, dout, sizeof(float) * nq);
    gk_report(g, name, gk_nerr(y0, ref, nq), 1e-5);
    void *p1[] = {&dq, &dk, &dv, &stride, &dlen, &dscr, &max_pos, &dout};
    snprintf(name, sizeof(name), "ft_attn_decode_pos_f16_h%d_q%d_kv%d", GK_HD, GK_HEADS, GK_KV);
    gk_launch(g, name, GK_HEADS, 1, 128, p1);
    gk_download(g, y1, dout, sizeof(float) * nq);
    for (size_t i = 0; i < nq; i++)
        ref[i] = y0[i];
    gk_report(g, name, gk_nerr(y1, ref, nq), 1e-6);
    ft_cuda_free(g->dev, dk), ft_cuda_free(g->dev, dv), ft_cuda_free(g->dev, dr);
    ft_cuda_free(g->dev, dpos), ft_cuda_free(g->dev, dlen), ft_cuda_free(g->dev, dq);
    ft_cuda_free(g->dev, dout), ft_cuda_free(g->dev, dscr);
    free(kh), free(vh), free(back), free(rows), free(q), free(y0), free(y1), free(ref), free(s);
}

void gk_check_layer_ops(gk_t *g)
{
    gk_check_rmsnorm(g, GK_D);
    gk_check_rmsnorm(g, GK_HD);
    gk_check_rope(g, 1);
    gk_check_rope(g, 0);
    gk_check_attention(g);
    gk_check_decode_pos(g);
    gk_check_kv_f16(g);
    gk_check_router(g);
    gk_check_movers(g);
}
