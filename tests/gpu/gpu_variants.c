/* The op variants' kernels (codegen/cuda/templates/variants.cuh and the
 * attention's sink forms) against the CPU's operations: bias rows (one
 * float add each: bit-exact), gpt-oss's clamped SwiGLU against
 * ft_op_swiglu_oai, the attention output gate against ft_op_sigmoid_mul, and RoPE from a YaRN frequency table with a cos/sin
 * scale against the executor's formula (1e-5: expf/cos ulps), decode
 * attention with sink logits against a float64 softmax whose denominator
 * holds the sink (1e-5), and the extended router (sigmoid scores, a
 * selection bias for the choice only, 8 groups of which 4 are used, a
 * scale) against forward_moe.c's choice written out here (same experts,
 * weights to 1e-5). */
#include "gpu_harness.h"

#include "exec/ops.h"
#include "ft_cuda_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void gk_check_bias_add(gk_t *g)
{
    enum { T = 6, E = 4, C = GK_D };
    static float y[T * C], b[E * C], back[T * C];
    static double ref[T * C];
    const int sel[T] = {3, 0, 0, 2, 1, 3};
    for (int i = 0; i < E * C; i++)
        b[i] = gk_randn(g);
    for (int t = 0; t < T; t++)
        for (int c = 0; c < C; c++) {
            y[t * C + c] = gk_randn(g);
            ref[t * C + c] = (float)(y[t * C + c] + b[sel[t] * C + c]);
        }
    ft_cu_deviceptr dy = gk_upload(g, y, sizeof(y)), db = gk_upload(g, b, sizeof(b)),
                    ds = gk_upload(g, sel, sizeof(sel));
    int n = T, cols = C;
    void *p[] = {&dy, &db, &ds, &n, &cols};
    gk_launch(g, FT_CUDA_KERNEL_BIAS_ADD, T, 1, 256, p);
    gk_download(g, back, dy, sizeof(back));
    gk_report(g, "ft_bias_add by rows' experts", gk_nerr(back, ref, T * C), 0.0);
    ft_cu_deviceptr none = 0; /* sel NULL: row 0 of b for every row */
    void *p0[] = {&dy, &db, &none, &n, &cols};
    gk_launch(g, FT_CUDA_KERNEL_BIAS_ADD, T, 1, 256, p0);
    gk_download(g, back, dy, sizeof(back));
    for (int t = 0; t < T; t++)
        for (int c = 0; c < C; c++)
            ref[t * C + c] = (float)((float)ref[t * C + c] + b[c]);
    gk_report(g, "ft_bias_add one row", gk_nerr(back, ref, T * C), 0.0);
    ft_cuda_free(g->dev, dy), ft_cuda_free(g->dev, db), ft_cuda_free(g->dev, ds);
}

static void gk_check_swiglu_oai(gk_t *g)
{
    enum { N = 3 * GK_FFN + 5 };
    static float gt[N], u[N], h[N], c[N];
    static double ref[N];
    for (int i = 0; i < N; i++) /* wide: some past the limit of 7 either side */
        gt[i] = 6.0f * gk_randn(g), u[i] = 6.0f * gk_randn(g), c[i] = gt[i];
    ft_op_swiglu_oai(c, u, N, 1.702f, 7.0f);
    for (int i = 0; i < N; i++)
        ref[i] = c[i];
    ft_cu_deviceptr dg = gk_upload(g, gt, sizeof(gt)), du = gk_upload(g, u, sizeof(u)),
                    dh = gk_upload(g, h, sizeof(h));
    int n = N;
    float alpha = 1.702f, limit = 7.0f;
    void *p[] = {&dg, &du, &dh, &n, &alpha, &limit};
    gk_launch(g, FT_CUDA_KERNEL_SWIGLU_OAI, (N + 255) / 256, 1, 256, p);
    gk_download(g, h, dh, sizeof(h));
    gk_report(g, FT_CUDA_KERNEL_SWIGLU_OAI, gk_nerr(h, ref, N), 1e-5);
    ft_cuda_free(g->dev, dg), ft_cuda_free(g->dev, du), ft_cuda_free(g->dev, dh);
}

static void gk_check_sigmoid_mul(gk_t *g)
{
    enum { N = 3 * GK_FFN + 5 };
    static float gt[N], u[N], h[N], c[N];
    static double ref[N];
    for (int i = 0; i < N; i++)
        gt[i] = 4.0f * gk_randn(g), u[i] = gk_randn(g), c[i] = gt[i];
    ft_op_sigmoid_mul(c, u, N);
    for (int i = 0; i < N; i++)
        ref[i] = c[i];
    ft_cu_deviceptr dg = gk_upload(g, gt, sizeof(gt)), du = gk_upload(g, u, sizeof(u)),
                    dh = gk_upload(g, h, sizeof(h));
    int n = N;
    void *p[] = {&dg, &du, &dh, &n};
    gk_launch(g, FT_CUDA_KERNEL_SIGMOID_MUL, (N + 255) / 256, 1, 256, p);
    gk_download(g, h, dh, sizeof(h));
    gk_report(g, FT_CUDA_KERNEL_SIGMOID_MUL, gk_nerr(h, ref, N), 1e-5);
    ft_cuda_free(g->dev, dg), ft_cuda_free(g->dev, du), ft_cuda_free(g->dev, dh);
}

/* YaRN-like frequencies (every other one divided by 32) and scale. */
static void gk_check_rope_table(gk_t *g, int neox)
{
    enum { TOK = 3, HALF = GK_HD / 2 };
    const int pos[TOK] = {0, 17, 40000};
    const float mscale = 1.3466f;
    const size_t n = (size_t)TOK * GK_HEADS * GK_HD;
    float *x = gk_xmalloc(sizeof(float) * n), *y = gk_xmalloc(sizeof(float) * n);
    double *ref = gk_xmalloc(sizeof(double) * n);
    float inv_freq[HALF];
    for (int i = 0; i < HALF; i++)
        inv_freq[i] = (float)(pow(150000.0, -2.0 * i / GK_HD) / (i % 2 ? 32.0 : 1.0));
    for (size_t i = 0; i < n; i++)
        x[i] = y[i] = gk_randn(g);
    for (int t = 0; t < TOK; t++)
        for (int i = 0; i < HALF; i++) { /* as op_attention.c's ft_rope_row */
            const double angle = (double)pos[t] * inv_freq[i];
            const float cs = (float)cos(angle) * mscale, sn = (float)sin(angle) * mscale;
            for (int h = 0; h < GK_HEADS; h++) {
                float *head = y + ((size_t)t * GK_HEADS + h) * GK_HD;
                const int ia = neox ? i : 2 * i, ib = neox ? i + HALF : 2 * i + 1;
                const float a = head[ia], b = head[ib];
                head[ia] = a * cs - b * sn;
                head[ib] = a * sn + b * cs;
            }
        }
    for (size_t i = 0; i < n; i++)
        ref[i] = y[i];
    ft_cu_deviceptr dx = gk_upload(g, x, sizeof(float) * n), dpos = gk_upload(g, pos, sizeof(pos)),
                    df = gk_upload(g, inv_freq, sizeof(inv_freq));
    int heads = GK_HEADS, tok = TOK;
    float ms = mscale;
    void *p[] = {&dx, &heads, &dpos, &tok, &df, &ms};
    char name[64];
    GK_OK(ft_cuda_kernel_rope_table_name(neox, GK_HD, GK_HD, name, sizeof(name)) < 0
              ? ft_status_make(FT_STATUS_INTERNAL, "RoPE table kernel name does not fit")
              : FT_OK);
    gk_launch(g, name, TOK, GK_HEADS, HALF, p);
    gk_download(g, y, dx, sizeof(float) * n);
    gk_report(g, name, gk_nerr(y, ref, n), 1e-5);
    ft_cuda_free(g->dev, dx), ft_cuda_free(g->dev, dpos), ft_cuda_free(g->dev, df);
    free(x), free(y), free(ref);
}

static void gk_check_attention_sinks(gk_t *g)
{
    enum { POS = 300, STRIDE = GK_KV * GK_HD };
    const size_t nq = (size_t)GK_HEADS * GK_HD, nkv = (size_t)POS * STRIDE;
    float *q = gk_xmalloc(sizeof(float) * nq), *k = gk_xmalloc(sizeof(float) * nkv);
    float *v = gk_xmalloc(sizeof(float) * nkv), *y = gk_xmalloc(sizeof(float) * nq);
    double *ref = gk_xmalloc(sizeof(double) * nq), *s = gk_xmalloc(sizeof(double) * POS);
    float sinks[GK_HEADS];
    for (size_t i = 0; i < nq; i++)
        q[i] = gk_randn(g);
    for (size_t i = 0; i < nkv; i++)
        k[i] = gk_randn(g), v[i] = gk_randn(g);
    for (int h = 0; h < GK_HEADS; h++) /* some heads' sinks dominate, some do not */
        sinks[h] = 4.0f * gk_randn(g);
    for (int h = 0; h < GK_HEADS; h++) {
        const int kv = h / (GK_HEADS / GK_KV);
        double mx = sinks[h], sum;
        for (int t = 0; t < POS; t++) {
            double d = 0.0;
            for (int i = 0; i < GK_HD; i++)
                d += (double)q[h * GK_HD + i] * k[(size_t)t * STRIDE + kv * GK_HD + i];
            s[t] = d / sqrt((double)GK_HD);
            mx = s[t] > mx ? s[t] : mx;
        }
        sum = exp(sinks[h] - mx);
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
                    dout = gk_upload(g, y, sizeof(float) * nq),
                    dsk = gk_upload(g, sinks, sizeof(sinks)), dscr;
    GK_OK(ft_cuda_alloc(g->dev, sizeof(float) * GK_HEADS * POS, &dscr));
    int stride = STRIDE, n_pos = POS, max_pos = POS;
    void *p[] = {&dq, &dk, &dv, &stride, &n_pos, &dscr, &max_pos, &dout, &dsk};
    char name[64];
    GK_OK(ft_cuda_kernel_attn_name(FT_CUDA_ATTN_SINKS, GK_HD, GK_HEADS, GK_KV, name, sizeof(name)) <
                  0
              ? ft_status_make(FT_STATUS_INTERNAL, "attention kernel name does not fit")
              : FT_OK);
    gk_launch(g, name, GK_HEADS, 1, 128, p);
    gk_download(g, y, dout, sizeof(float) * nq);
    gk_report(g, name, gk_nerr(y, ref, nq), 1e-5);
    ft_cuda_free(g->dev, dq), ft_cuda_free(g->dev, dk), ft_cuda_free(g->dev, dv);
    ft_cuda_free(g->dev, dout), ft_cuda_free(g->dev, dscr), ft_cuda_free(g->dev, dsk);
    free(q), free(k), free(v), free(y), free(ref), free(s);
}

/* forward_moe.c's choice for a sigmoid router with a selection bias,
 * groups and a scale (renormalized). */
static void gk_route(const float *lg, const float *bias, int n_groups, int used, float scale,
                     int32_t *ids, double *w)
{
    float p[GK_EXPERTS], c[GK_EXPERTS], gs[GK_EXPERTS];
    const int size = GK_EXPERTS / n_groups;
    for (int e = 0; e < GK_EXPERTS; e++)
        p[e] = 1.0f / (1.0f + expf(-lg[e])), c[e] = p[e] + bias[e];
    for (int gi = 0; gi < n_groups; gi++) {
        float a = -INFINITY, b = -INFINITY;
        for (int i = gi * size; i < (gi + 1) * size; i++)
            if (c[i] > a)
                b = a, a = c[i];
            else if (c[i] > b)
                b = c[i];
        gs[gi] = a + b;
    }
    for (int gi = 0; gi < n_groups; gi++) {
        int better = 0;
        for (int h = 0; h < n_groups; h++)
            better += gs[h] > gs[gi] || (gs[h] == gs[gi] && h < gi);
        for (int i = gi * size; better >= used && i < (gi + 1) * size; i++)
            c[i] = -INFINITY;
    }
    ft_op_topk(c, GK_EXPERTS, GK_USED, ids);
    float sum = 0.0f, wf[GK_USED];
    for (int k = 0; k < GK_USED; k++)
        sum += (wf[k] = p[ids[k]]);
    for (int k = 0; k < GK_USED; k++)
        w[k] = wf[k] / sum * scale;
}

static void gk_check_router_ext(gk_t *g)
{
    enum { TOK = 5, GROUPS = 8, USED = 4 };
    float logits[TOK * GK_EXPERTS], bias[GK_EXPERTS], w[TOK * GK_USED];
    int ids[TOK * GK_USED];
    int32_t want[TOK * GK_USED];
    double ref[TOK * GK_USED];
    for (int i = 0; i < TOK * GK_EXPERTS; i++)
        logits[i] = 2.0f * gk_randn(g);
    for (int e = 0; e < GK_EXPERTS; e++)
        bias[e] = 0.3f * gk_randn(g);
    for (int t = 0; t < TOK; t++)
        gk_route(logits + t * GK_EXPERTS, bias, GROUPS, USED, 2.5f, want + t * GK_USED,
                 ref + t * GK_USED);
    ft_cu_deviceptr dl = gk_upload(g, logits, sizeof(logits)), di = gk_upload(g, ids, sizeof(ids));
    ft_cu_deviceptr dw = gk_upload(g, w, sizeof(w)), db = gk_upload(g, bias, sizeof(bias));
    int tok = TOK, scoring = 1, groups = GROUPS, used = USED, norm = 1;
    float scale = 2.5f;
    void *prm[] = {&dl, &tok, &di, &dw, &db, &scoring, &groups, &used, &scale, &norm};
    char name[64];
    GK_OK(ft_cuda_kernel_router_name(1, GK_EXPERTS, GK_USED, name, sizeof(name)) < 0
              ? ft_status_make(FT_STATUS_INTERNAL, "router kernel name does not fit")
              : FT_OK);
    gk_launch(g, name, TOK, 1, 32, prm);
    gk_download(g, ids, di, sizeof(ids));
    gk_download(g, w, dw, sizeof(w));
    int same = 1;
    for (int i = 0; i < TOK * GK_USED; i++)
        same &= ids[i] == want[i];
    gk_report(g, "ft_router_ext experts chosen (1 = differ)", same ? 0.0 : 1.0, 0.0);
    gk_report(g, name, gk_nerr(w, ref, TOK * GK_USED), 1e-5);
    ft_cuda_free(g->dev, dl), ft_cuda_free(g->dev, di), ft_cuda_free(g->dev, dw),
        ft_cuda_free(g->dev, db);
}

/* Gated DeltaNet (templates/deltanet.cuh) against the reference kernel
 * ft_op_deltanet_token (double sums) over 4 tokens from a random state:
 * Qwen3.6's heads (16 key, 32 value heads of 128, tiled, a conv of 4
 * taps); each token's output and the final conv window and S within 1e-5
 * (f32 sums of 128 products). And the shared expert's one-float gate
 * against the executor's broadcast GLU (1e-5: expf ulps). */
static void gk_check_deltanet(gk_t *g)
{
    enum { HK = 16, HV = 32, HD = GK_HD, K = 4, TOK = 4, C = (2 * HK + HV) * HD };
    const ft_deltanet_shape_t sh = {HV, HK, HD, K, 1, 1e-6f};
    const size_t state_n = ft_deltanet_state_bytes(&sh) / 4;
    float *w = gk_xmalloc(sizeof(float) * C * K), *x = gk_xmalloc(sizeof(float) * TOK * C);
    float *st_cpu = gk_xmalloc(sizeof(float) * state_n), *st_gpu = gk_xmalloc(sizeof(float) * state_n);
    float *y = gk_xmalloc(sizeof(float) * C), *out = gk_xmalloc(sizeof(float) * TOK * HV * HD);
    float *back = gk_xmalloc(sizeof(float) * TOK * HV * HD);
    double *ref = gk_xmalloc(sizeof(double) * (state_n > (size_t)TOK * HV * HD ? state_n : (size_t)TOK * HV * HD));
    float b[TOK * HV], a[TOK * HV], dt[HV], A[HV];
    for (int i = 0; i < C * K; i++)
        w[i] = 0.5f * gk_randn(g);
    for (int i = 0; i < TOK * C; i++)
        x[i] = gk_randn(g);
    for (int i = 0; i < TOK * HV; i++)
        b[i] = gk_randn(g), a[i] = gk_randn(g);
    for (int h = 0; h < HV; h++)
        dt[h] = 0.5f * gk_randn(g), A[h] = -expf(0.3f * gk_randn(g));
    for (size_t i = 0; i < state_n; i++)
        st_cpu[i] = st_gpu[i] = 0.1f * gk_randn(g);
    for (int t = 0; t < TOK; t++)
        ft_op_deltanet_token(&sh, w, dt, A, x + (size_t)t * C, b + t * HV, a + t * HV, st_cpu, y,
                             out + (size_t)t * HV * HD);
    ft_cu_deviceptr dw = gk_upload(g, w, sizeof(float) * C * K),
                    dx = gk_upload(g, x, sizeof(float) * TOK * C), db = gk_upload(g, b, sizeof(b)),
                    da = gk_upload(g, a, sizeof(a)), ddt = gk_upload(g, dt, sizeof(dt)),
                    dA = gk_upload(g, A, sizeof(A)),
                    ds = gk_upload(g, st_gpu, sizeof(float) * state_n),
                    dy = gk_upload(g, y, sizeof(float) * C),
                    dout = gk_upload(g, back, sizeof(float) * TOK * HV * HD);
    int Ci = C, Ki = K, hd = HD, nk = HK, nv = HV, tiled = 1;
    float eps = 1e-6f;
    ft_cu_deviceptr S = ds + sizeof(float) * (size_t)(K - 1) * C;
    for (int t = 0; t < TOK; t++) {
        ft_cu_deviceptr xt = dx + sizeof(float) * (size_t)t * C, bt = db + sizeof(float) * t * HV,
                        at = da + sizeof(float) * t * HV,
                        ot = dout + sizeof(float) * (size_t)t * HV * HD;
        void *pc[] = {&xt, &dw, &ds, &dy, &Ci, &Ki};
        gk_launch(g, FT_CUDA_KERNEL_DELTANET_CONV, (C + 255) / 256, 1, 256, pc);
        void *pr[] = {&dy, &bt, &at, &ddt, &dA, &S, &ot, &hd, &nk, &nv, &tiled, &eps};
        gk_launch(g, FT_CUDA_KERNEL_DELTANET_RECUR, HV, 1, FT_CUDA_DELTANET_THREADS, pr);
    }
    gk_download(g, back, dout, sizeof(float) * TOK * HV * HD);
    for (size_t i = 0; i < (size_t)TOK * HV * HD; i++)
        ref[i] = out[i];
    gk_report(g, "ft_deltanet_conv + ft_deltanet_recur outputs", gk_nerr(back, ref, (size_t)TOK * HV * HD),
              1e-5);
    gk_download(g, st_gpu, ds, sizeof(float) * state_n);
    for (size_t i = 0; i < state_n; i++)
        ref[i] = st_cpu[i];
    gk_report(g, "ft_deltanet state (window, S)", gk_nerr(st_gpu, ref, state_n), 1e-5);
    ft_cuda_free(g->dev, dw), ft_cuda_free(g->dev, dx), ft_cuda_free(g->dev, db),
        ft_cuda_free(g->dev, da), ft_cuda_free(g->dev, ddt), ft_cuda_free(g->dev, dA),
        ft_cuda_free(g->dev, ds), ft_cuda_free(g->dev, dy), ft_cuda_free(g->dev, dout);
    /* the shared expert's gate: h[r] *= sigmoid(g[r]) */
    enum { R = 5 };
    static float gg[R], h[R * GK_D], hb[R * GK_D];
    static double href[R * GK_D];
    for (int r = 0; r < R; r++) {
        gg[r] = 3.0f * gk_randn(g);
        const float sg = 1.0f / (1.0f + expf(-gg[r]));
        for (int c = 0; c < GK_D; c++)
            h[r * GK_D + c] = gk_randn(g), href[r * GK_D + c] = h[r * GK_D + c] * sg;
    }
    ft_cu_deviceptr dg = gk_upload(g, gg, sizeof(gg)), dh = gk_upload(g, h, sizeof(h));
    int rows = R, cols = GK_D;
    void *pb[] = {&dg, &dh, &rows, &cols};
    gk_launch(g, FT_CUDA_KERNEL_SIGMOID_BCAST, R, 1, 256, pb);
    gk_download(g, hb, dh, sizeof(hb));
    gk_report(g, FT_CUDA_KERNEL_SIGMOID_BCAST, gk_nerr(hb, href, R * GK_D), 1e-5);
    ft_cuda_free(g->dev, dg), ft_cuda_free(g->dev, dh);
    free(w), free(x), free(st_cpu), free(st_gpu), free(y), free(out), free(back), free(ref);
}

void gk_check_variants(gk_t *g)
{
    gk_check_deltanet(g);
    gk_check_bias_add(g);
    gk_check_swiglu_oai(g);
    gk_check_sigmoid_mul(g);
    gk_check_rope_table(g, 1);
    gk_check_rope_table(g, 0);
    gk_check_attention_sinks(g);
    gk_check_router_ext(g);
}
