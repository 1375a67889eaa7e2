#include "ops.h"

#include <math.h>

void ft_op_rmsnorm(float *out, const float *x, const float *w, uint32_t n, float eps)
{
    /* Sum of squares in double: cheap at these sizes and keeps the norm
     * independent of summation order. */
    double ss = 0.0;
    for (uint32_t i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    const float scale = (float)(1.0 / sqrt(ss / n + eps));
    for (uint32_t i = 0; i < n; i++)
        out[i] = x[i] * scale * w[i];
}

void ft_op_rope_neox(float *head, uint32_t rope_dim, const float *inv_freq, uint32_t pos)
{
    const uint32_t half = rope_dim / 2;
    for (uint32_t i = 0; i < half; i++) {
        const double angle = (double)pos * inv_freq[i];
        const float c = (float)cos(angle), s = (float)sin(angle);
        const float a = head[i], b = head[i + half];
        head[i] = a * c - b * s;
        head[i + half] = a * s + b * c;
    }
}

void ft_op_rope_norm(float *head, uint32_t rope_dim, const float *inv_freq, uint32_t pos)
{
    for (uint32_t i = 0; i < rope_dim / 2; i++) {
        const double angle = (double)pos * inv_freq[i];
        const float c = (float)cos(angle), s = (float)sin(angle);
        const float a = head[2 * i], b = head[2 * i + 1];
        head[2 * i] = a * c - b * s;
        head[2 * i + 1] = a * s + b * c;
    }
}

void ft_op_softmax(float *x, uint32_t n)
{
    if (n == 0)
        return;
    float mx = x[0];
    for (uint32_t i = 1; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    float sum = 0.0f;
    for (uint32_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
    const float inv = 1.0f / sum; /* sum >= 1: the max contributes exp(0) */
    for (uint32_t i = 0; i < n; i++)
        x[i] *= inv;
}

void ft_op_softmax_sink(float *x, uint32_t n, float sink)
{
    float mx = sink;
    for (uint32_t i = 0; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    float sum = expf(sink - mx); /* the sink's share, which weighs no value */
    for (uint32_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
    const float inv = 1.0f / sum; /* sum >= 1: the max contributes exp(0) */
    for (uint32_t i = 0; i < n; i++)
        x[i] *= inv;
}

void ft_op_swiglu(float *g, const float *u, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

void ft_op_sigmoid_mul(float *g, const float *x, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        g[i] = x[i] / (1.0f + expf(-g[i]));
}

void ft_op_swiglu_oai(float *g, const float *u, uint32_t n, float alpha, float limit)
{
    for (uint32_t i = 0; i < n; i++) {
        const float gc = g[i] < limit ? g[i] : limit;
        const float uc = u[i] < -limit ? -limit : u[i] > limit ? limit : u[i];
        g[i] = gc / (1.0f + expf(-alpha * gc)) * (uc + 1.0f);
    }
}

void ft_op_topk(const float *x, uint32_t n, uint32_t k, int32_t *out_idx)
{
    /* k is small (experts per token): insertion into a sorted list. */
    uint32_t have = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t pos = have;
        while (pos > 0 && x[out_idx[pos - 1]] < x[i])
            pos--;
        if (pos >= k)
            continue;
        uint32_t last = have < k ? have : k - 1;
        for (uint32_t j = last; j > pos; j--)
            out_idx[j] = out_idx[j - 1];
        out_idx[pos] = (int32_t)i;
        if (have < k)
            have++;
    }
}
