/* The fake driver's emulation of templates/deltanet.cuh: the same f32
 * arithmetic in the same order as the kernels' threads do it (the
 * recurrence's norms: per-thread partial sums over a stride of the block
 * size, then summed in thread order by thread 0), so the backend's results
 * through the fake driver are what a GPU's would be. The launch geometry
 * is checked as the runtime must give it. */
#include "fake_cuda.h"

#include <math.h>
#include <string.h>

/* (x, w, window, y, C, K) */
int ft_fake_run_deltanet_conv(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    (void)k;
    const float *x = FT_FAKE_ARG(l, 0, float *), *w = FT_FAKE_ARG(l, 1, float *);
    float *window = FT_FAKE_ARG(l, 2, float *), *y = FT_FAKE_ARG(l, 3, float *);
    const int C = FT_FAKE_ARG(l, 4, int), K = FT_FAKE_ARG(l, 5, int);
    if (C <= 0 || K < 1 || (uint64_t)l->grid[0] * l->block[0] < (uint64_t)C)
        return FT_FAKE_ERROR_INVALID_VALUE;
    for (int c = 0; c < C; c++) {
        const float *wc = w + (size_t)c * K;
        float acc = wc[K - 1] * x[c];
        for (int j = 0; j + 1 < K; j++)
            acc += wc[j] * window[(size_t)j * C + c];
        y[c] = acc / (1.0f + expf(-acc));
        for (int j = 0; j + 2 < K; j++)
            window[(size_t)j * C + c] = window[(size_t)(j + 1) * C + c];
        if (K > 1) window[(size_t)(K - 2) * C + c] = x[c];
    }
    return FT_FAKE_SUCCESS;
}

/* ft_dn_l2 with T threads. */
static void ft_fake_dn_l2(const float *x, float *out, int n, int T, float eps)
{
    float red[1024];
    for (int t = 0; t < T; t++) {
        float ss = 0.0f;
        for (int i = t; i < n; i += T)
            ss += x[i] * x[i];
        red[t] = ss;
    }
    float tot = 0.0f;
    for (int t = 0; t < T; t++)
        tot += red[t];
    const float norm = sqrtf(tot), scale = 1.0f / (norm > eps ? norm : eps);
    for (int i = 0; i < n; i++)
        out[i] = x[i] * scale;
}

/* (y, b, a, dt_bias, A, S, out, hd, n_k, n_v, tiled, eps) */
int ft_fake_run_deltanet_recur(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    (void)k;
    const float *y = FT_FAKE_ARG(l, 0, float *), *b = FT_FAKE_ARG(l, 1, float *),
                *a = FT_FAKE_ARG(l, 2, float *), *dt = FT_FAKE_ARG(l, 3, float *),
                *A = FT_FAKE_ARG(l, 4, float *);
    float *S_all = FT_FAKE_ARG(l, 5, float *), *out = FT_FAKE_ARG(l, 6, float *);
    const int hd = FT_FAKE_ARG(l, 7, int), n_k = FT_FAKE_ARG(l, 8, int), n_v = FT_FAKE_ARG(l, 9, int),
              tiled = FT_FAKE_ARG(l, 10, int);
    const float eps = FT_FAKE_ARG(l, 11, float);
    const int T = (int)l->block[0];
    /* one block per value head, the template's thread count, its limits */
    if (hd <= 0 || hd > 1024 || n_k <= 0 || n_v <= 0 || n_v % n_k || l->grid[0] != (uint32_t)n_v ||
        T != 128)
        return FT_FAKE_ERROR_INVALID_VALUE;
    float q[1024], kk[1024];
    for (int h = 0; h < n_v; h++) {
        const int kh = tiled ? h % n_k : h / (n_v / n_k);
        ft_fake_dn_l2(y + (size_t)kh * hd, q, hd, T, eps);
        ft_fake_dn_l2(y + (size_t)(n_k + kh) * hd, kk, hd, T, eps);
        const float *v = y + (size_t)2 * n_k * hd + (size_t)h * hd;
        const float x = a[h] + dt[h];
        const float sp = x > 20.0f ? x : log1pf(expf(x));
        const float decay = expf(A[h] * sp), beta = 1.0f / (1.0f + expf(-b[h]));
        const float scale = 1.0f / sqrtf((float)hd);
        float *S = S_all + (size_t)h * hd * hd;
        for (int i = 0; i < hd; i++) {
            float *row = S + (size_t)i * hd;
            float sk = 0.0f;
            for (int j = 0; j < hd; j++) {
                row[j] *= decay;
                sk += row[j] * kk[j];
            }
            const float d = beta * (v[i] - sk);
            float oq = 0.0f;
            for (int j = 0; j < hd; j++) {
                row[j] += d * kk[j];
                oq += row[j] * q[j];
            }
            out[(size_t)h * hd + i] = oq * scale;
        }
    }
    return FT_FAKE_SUCCESS;
}

/* (g, h, n_rows, cols) */
int ft_fake_run_sigmoid_bcast_mul(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    (void)k;
    const float *g = FT_FAKE_ARG(l, 0, float *);
    float *h = FT_FAKE_ARG(l, 1, float *);
    const int n_rows = FT_FAKE_ARG(l, 2, int), cols = FT_FAKE_ARG(l, 3, int);
    for (int r = 0; r < n_rows; r++) {
        const float s = 1.0f / (1.0f + expf(-g[r]));
        for (int c = 0; c < cols; c++)
            h[(size_t)r * cols + c] *= s;
    }
    return FT_FAKE_SUCCESS;
}
