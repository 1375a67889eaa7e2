/* The Gated DeltaNet reference kernel (ops.h): one token of one linear-
 * attention layer, in plain C, the numerics every other implementation is
 * checked against. It follows llama.cpp's graph for Qwen3.5/3.6 and
 * Qwen3-Next (models/qwen35moe.cpp, delta-net-base.cpp's autoregressive
 * form, ggml_ssm_conv, ggml_l2_norm, ggml_softplus):
 *
 *   y      = silu(causal depthwise conv of the last conv_kernel inputs)
 *   q, k   = y's first two blocks of Hk heads, each x / max(|x|, eps)
 *   v      = y's last block of Hv heads
 *   per value head h (key head kh: h % Hk tiled, h / (Hv / Hk) grouped):
 *     g    = A[h] softplus(alpha[h] + dt_bias[h])   (A = -exp(A_log) < 0)
 *     S    = exp(g) S                              (S: hd x hd, S[i][j], i over v)
 *     d    = sigmoid(b[h]) (v - S k)
 *     S   += d k^T
 *     o    = S q / sqrt(hd)
 *
 * The state is the caller's (the session's recurrent region): the conv's
 * last conv_kernel - 1 inputs, oldest first, then S per head. A fresh
 * state is all zeros, as llama.cpp's is at position 0. Sums of products
 * run in double: the kernel defines the numerics, speed is the generated
 * kernels' business. */
#include "ops.h"

#include <math.h>
#include <string.h>

size_t ft_deltanet_channels(const ft_deltanet_shape_t *sh)
{
    return (2 * (size_t)sh->n_k_heads + sh->n_v_heads) * sh->head_dim;
}

size_t ft_deltanet_state_bytes(const ft_deltanet_shape_t *sh)
{
    const size_t conv = (size_t)(sh->conv_kernel - 1) * ft_deltanet_channels(sh);
    const size_t s = (size_t)sh->n_v_heads * sh->head_dim * sh->head_dim;
    return (conv + s) * sizeof(float);
}

static float ft_silu(float x)
{
    return x / (1.0f + expf(-x));
}

/* ggml_softplus: the identity past 20, where log1p(exp(x)) is x in float. */
static float ft_softplus(float x)
{
    return x > 20.0f ? x : log1pf(expf(x));
}

/* x / max(|x|, eps) over n values, in place (ggml_l2_norm). */
static void ft_l2_norm(float *x, uint32_t n, float eps)
{
    double ss = 0.0;
    for (uint32_t i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    const double norm = sqrt(ss);
    const float scale = (float)(1.0 / (norm > eps ? norm : eps));
    for (uint32_t i = 0; i < n; i++)
        x[i] *= scale;
}

/* y = silu(conv) of the new input x, and the window moves on by x. */
static void ft_deltanet_conv(const ft_deltanet_shape_t *sh, const float *w, const float *x,
                             float *window, float *y)
{
    const size_t C = ft_deltanet_channels(sh);
    const uint32_t K = sh->conv_kernel;
    for (size_t c = 0; c < C; c++) {
        const float *wc = w + c * K;
        double acc = (double)wc[K - 1] * x[c]; /* tap K - 1: the current token */
        for (uint32_t j = 0; j + 1 < K; j++)
            acc += (double)wc[j] * window[(size_t)j * C + c];
        y[c] = ft_silu((float)acc);
    }
    if (K > 2) memmove(window, window + C, (size_t)(K - 2) * C * sizeof(float));
    memcpy(window + (size_t)(K - 2) * C, x, C * sizeof(float));
}

void ft_op_deltanet_token(const ft_deltanet_shape_t *sh, const float *conv_w, const float *dt_bias,
                          const float *A, const float *qkv, const float *b, const float *a,
                          float *state, float *y, float *out)
{
    const uint32_t hd = sh->head_dim, Hk = sh->n_k_heads, Hv = sh->n_v_heads;
    const size_t C = ft_deltanet_channels(sh);
    float *window = state, *S_all = state + (size_t)(sh->conv_kernel - 1) * C;
    ft_deltanet_conv(sh, conv_w, qkv, window, y);
    float *q = y, *k = y + (size_t)Hk * hd, *v = y + 2 * (size_t)Hk * hd;
    for (uint32_t h = 0; h < Hk; h++) {
        ft_l2_norm(q + (size_t)h * hd, hd, sh->eps);
        ft_l2_norm(k + (size_t)h * hd, hd, sh->eps);
    }
    const double scale = 1.0 / sqrt((double)hd);
    for (uint32_t h = 0; h < Hv; h++) {
        const uint32_t kh = sh->heads_tiled ? h % Hk : h / (Hv / Hk);
        const float *qh = q + (size_t)kh * hd, *kk = k + (size_t)kh * hd, *vh = v + (size_t)h * hd;
        const float g = A[h] * ft_softplus(a[h] + dt_bias[h]);
        const float decay = expf(g), beta = 1.0f / (1.0f + expf(-b[h]));
        float *S = S_all + (size_t)h * hd * hd;
        float *o = out + (size_t)h * hd;
        for (uint32_t i = 0; i < hd; i++) {
            float *row = S + (size_t)i * hd;
            double sk = 0.0;
            for (uint32_t j = 0; j < hd; j++) {
                row[j] *= decay;
                sk += (double)row[j] * kk[j];
            }
            const float d = beta * (float)((double)vh[i] - sk);
            double oq = 0.0;
            for (uint32_t j = 0; j < hd; j++) {
                row[j] += d * kk[j];
                oq += (double)row[j] * qh[j];
            }
            o[i] = (float)(oq * scale);
        }
    }
}
