/* The chunked (parallel) form of the Gated DeltaNet recurrence (ops.h):
 * the same layer as ft_op_deltanet_token computes token by token, for a
 * prefill of many tokens, in chunks of up to FT_DELTANET_CHUNK tokens whose
 * inner products are matrix work independent across tokens (the form GPU
 * kernels and llama.cpp's build_delta_net_chunking use).
 *
 * Per value head, within a chunk of tokens 1..C with the state S0 before
 * it, a_t = exp(g_t) and G_t = g_1 + ... + g_t (so prod a = exp(G)):
 *
 *   the delta rule's updates u_t = beta_t (v_t - a_t S_{t-1} k_t) solve
 *     u_i + sum_{j<i} beta_i (k_i . k_j) exp(G_i - G_j) u_j
 *         = beta_i v_i - beta_i exp(G_i) S0 k_i
 *   a unit lower-triangular system (forward substitution, one pass for
 *   both right-hand sides: beta v and beta exp(G) k), then
 *     o_i = exp(G_i) S0 q_i + sum_{j<=i} exp(G_i - G_j) (q_i . k_j) u_j
 *     S_C = exp(G_C) S0 + sum_j exp(G_C - G_j) u_j k_j^T
 *
 * which is the sequential recurrence unrolled (S_i = exp(G_i) S0 +
 * sum_{j<=i} exp(G_i - G_j) u_j k_j^T), only summed in another order: the
 * two agree to float rounding, which test_deltanet_kernel bounds. No
 * exp(-G) appears, so a strong decay cannot overflow. */
#include "ops.h"

#include <math.h>
#include <string.h>

size_t ft_deltanet_chunk_scratch_floats(const ft_deltanet_shape_t *sh)
{
    const size_t C = FT_DELTANET_CHUNK, hd = sh->head_dim;
    return C * C + C * 2 * hd + C + C * hd; /* A, [beta v | beta exp(G) k] solved, G, u */
}

static float ft_silu_c(float x)
{
    return x / (1.0f + expf(-x));
}

void ft_op_deltanet_prepare(const ft_deltanet_shape_t *sh, const float *conv_w,
                            const float *dt_bias, const float *A, const float *qkv, const float *b,
                            const float *a, uint32_t n, float *state, float *y, float *g,
                            float *beta)
{
    const size_t C = ft_deltanet_channels(sh), Hv = sh->n_v_heads, hd = sh->head_dim;
    const uint32_t K = sh->conv_kernel;
    float *window = state;
    for (uint32_t t = 0; t < n; t++) {
        const float *x = qkv + t * C;
        float *yt = y + t * C;
        for (size_t c = 0; c < C; c++) {
            const float *wc = conv_w + c * K;
            double acc = (double)wc[K - 1] * x[c];
            for (uint32_t j = 0; j + 1 < K; j++)
                acc += (double)wc[j] * window[(size_t)j * C + c];
            yt[c] = ft_silu_c((float)acc);
        }
        if (K > 2) memmove(window, window + C, (size_t)(K - 2) * C * sizeof(float));
        memcpy(window + (size_t)(K - 2) * C, x, C * sizeof(float));
        for (size_t h = 0; h < 2 * (size_t)sh->n_k_heads; h++) { /* q's heads, then k's */
            float *p = yt + h * hd;
            double ss = 0.0;
            for (size_t i = 0; i < hd; i++)
                ss += (double)p[i] * p[i];
            const double norm = sqrt(ss);
            const float scale = (float)(1.0 / (norm > sh->eps ? norm : sh->eps));
            for (size_t i = 0; i < hd; i++)
                p[i] *= scale;
        }
        for (size_t h = 0; h < Hv; h++) {
            const float z = a[t * Hv + h] + dt_bias[h];
            g[t * Hv + h] = A[h] * (z > 20.0f ? z : log1pf(expf(z)));
            beta[t * Hv + h] = 1.0f / (1.0f + expf(-b[t * Hv + h]));
        }
    }
}

/* One chunk of c tokens from token t0 of head h. */
static void ft_deltanet_chunk(const ft_deltanet_shape_t *sh, uint32_t h, const float *y,
                              const float *g, const float *beta, uint32_t t0, uint32_t c, float *S,
                              float *scratch, float *out)
{
    const size_t Cn = ft_deltanet_channels(sh), Hv = sh->n_v_heads, hd = sh->head_dim,
                 Hk = sh->n_k_heads;
    const size_t kh = sh->heads_tiled ? h % Hk : h / (Hv / Hk);
    const size_t qoff = kh * hd, koff = (Hk + kh) * hd, voff = 2 * Hk * hd + h * hd;
    float *Am = scratch, *R = Am + FT_DELTANET_CHUNK * FT_DELTANET_CHUNK,
          *G = R + FT_DELTANET_CHUNK * 2 * hd;
    float *u = G + FT_DELTANET_CHUNK;
    const double scale = 1.0 / sqrt((double)hd);
#define FT_Y(t) (y + (size_t)(t0 + (t)) * Cn)
    double acc = 0.0;
    for (uint32_t i = 0; i < c; i++) {
        acc += g[(size_t)(t0 + i) * Hv + h];
        G[i] = (float)acc;
    }
    /* A[i][j] = beta_i (k_i . k_j) exp(G_i - G_j), j < i; R = [beta v | beta exp(G) k] */
    for (uint32_t i = 0; i < c; i++) {
        const float *ki = FT_Y(i) + koff, *vi = FT_Y(i) + voff,
                    bi = beta[(size_t)(t0 + i) * Hv + h];
        for (uint32_t j = 0; j < i; j++) {
            const float *kj = FT_Y(j) + koff;
            double dot = 0.0;
            for (size_t e = 0; e < hd; e++)
                dot += (double)ki[e] * kj[e];
            Am[(size_t)i * FT_DELTANET_CHUNK + j] = (float)(bi * dot * exp((double)G[i] - G[j]));
        }
        const float gi = bi * expf(G[i]);
        for (size_t e = 0; e < hd; e++) {
            R[(size_t)i * 2 * hd + e] = bi * vi[e];
            R[(size_t)i * 2 * hd + hd + e] = gi * ki[e];
        }
    }
    /* (I + A) X = R by forward substitution, in place */
    for (uint32_t i = 1; i < c; i++)
        for (uint32_t j = 0; j < i; j++) {
            const float aij = Am[(size_t)i * FT_DELTANET_CHUNK + j];
            for (size_t e = 0; e < 2 * hd; e++)
                R[(size_t)i * 2 * hd + e] -= aij * R[(size_t)j * 2 * hd + e];
        }
    /* u_i = X_v,i - S0 X_k,i; o_i = exp(G_i) S0 q_i / sqrt(hd) (the rest below) */
    for (uint32_t i = 0; i < c; i++) {
        const float *xv = R + (size_t)i * 2 * hd, *xk = xv + hd, *qi = FT_Y(i) + qoff;
        float *o = out + (size_t)(t0 + i) * Hv * hd + h * hd;
        const double gi = exp((double)G[i]);
        for (size_t r = 0; r < hd; r++) {
            const float *row = S + r * hd;
            double sk = 0.0, sq = 0.0;
            for (size_t e = 0; e < hd; e++) {
                sk += (double)row[e] * xk[e];
                sq += (double)row[e] * qi[e];
            }
            u[(size_t)i * hd + r] = (float)(xv[r] - sk);
            o[r] = (float)(gi * sq * scale);
        }
    }
    /* o_i += sum_{j<=i} exp(G_i - G_j) (q_i . k_j) u_j / sqrt(hd) */
    for (uint32_t i = 0; i < c; i++) {
        const float *qi = FT_Y(i) + qoff;
        float *o = out + (size_t)(t0 + i) * Hv * hd + h * hd;
        for (uint32_t j = 0; j <= i; j++) {
            const float *kj = FT_Y(j) + koff;
            double dot = 0.0;
            for (size_t e = 0; e < hd; e++)
                dot += (double)qi[e] * kj[e];
            const float w = (float)(dot * exp((double)G[i] - G[j]) * scale);
            for (size_t r = 0; r < hd; r++)
                o[r] += w * u[(size_t)j * hd + r];
        }
    }
    /* S = exp(G_c) S0 + sum_j exp(G_c - G_j) u_j k_j^T */
    const float gc = expf(G[c - 1]);
    for (size_t e = 0; e < hd * hd; e++)
        S[e] *= gc;
    for (uint32_t j = 0; j < c; j++) {
        const float *kj = FT_Y(j) + koff;
        const float w = (float)exp((double)G[c - 1] - G[j]);
        for (size_t r = 0; r < hd; r++) {
            const float ur = w * u[(size_t)j * hd + r];
            float *row = S + r * hd;
            for (size_t e = 0; e < hd; e++)
                row[e] += ur * kj[e];
        }
    }
#undef FT_Y
}

void ft_op_deltanet_chunked_head(const ft_deltanet_shape_t *sh, uint32_t h, const float *y,
                                 const float *g, const float *beta, uint32_t n, float *state,
                                 float *scratch, float *out)
{
    const size_t C = ft_deltanet_channels(sh), hd = sh->head_dim;
    float *S = state + (size_t)(sh->conv_kernel - 1) * C + (size_t)h * hd * hd;
    for (uint32_t t0 = 0; t0 < n; t0 += FT_DELTANET_CHUNK)
        ft_deltanet_chunk(sh, h, y, g, beta, t0,
                          n - t0 < FT_DELTANET_CHUNK ? n - t0 : FT_DELTANET_CHUNK, S, scratch, out);
}
