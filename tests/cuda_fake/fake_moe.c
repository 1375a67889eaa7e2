/* Emulated moe templates (codegen/cuda/templates/moe.cuh): the expert
 * copy (blockIdx.y picks the expert), row gather and weighted scatter-add
 * (grid-stride over rows, block-stride over columns: every launch covers
 * all rows), SwiGLU, and the router (one warp per token: softmax, then k
 * rounds of arg-max with ties to the lower index; norm_topk_prob from the
 * module's ft_spec). */
#include "fake_cuda.h"

#include <math.h>
#include <string.h>

int ft_fake_run_expert_copy(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    const uint8_t *const *src = FT_FAKE_ARG(l, 0, const uint8_t *const *);
    uint8_t *const *dst = FT_FAKE_ARG(l, 1, uint8_t *const *);
    const uint64_t n = FT_FAKE_ARG(l, 2, uint64_t);
    for (uint32_t e = 0; e < l->grid[1]; e++) {
        const uint8_t *s = src[e];
        uint8_t *d = dst[e];
        if (n && (!s || !d)) return FT_FAKE_ERROR_ILLEGAL_ADDRESS;
        /* Overlapping ends race on a GPU: refuse rather than pick a result. */
        if (n && s < d + n && d < s + n) return FT_FAKE_ERROR_INVALID_VALUE;
        if (n) memcpy(d, s, n);
    }
    return FT_FAKE_SUCCESS;
}

int ft_fake_run_rows_gather(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    const float *x = FT_FAKE_ARG(l, 0, float *);
    const int ldx = FT_FAKE_ARG(l, 1, int), n = FT_FAKE_ARG(l, 3, int);
    const int cols = FT_FAKE_ARG(l, 5, int);
    const int *idx = FT_FAKE_ARG(l, 2, int *);
    float *out = FT_FAKE_ARG(l, 4, float *);
    for (int i = 0; i < n; i++) {
        if (idx[i] < 0) return FT_FAKE_ERROR_ILLEGAL_ADDRESS;
        for (int c = 0; c < cols; c++)
            out[(uint64_t)i * cols + c] = x[(uint64_t)idx[i] * ldx + c];
    }
    return FT_FAKE_SUCCESS;
}

int ft_fake_run_rows_scatter_add(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    const float *in = FT_FAKE_ARG(l, 0, float *), *weight = FT_FAKE_ARG(l, 2, float *);
    const int *idx = FT_FAKE_ARG(l, 1, int *);
    const int n = FT_FAKE_ARG(l, 3, int), ldy = FT_FAKE_ARG(l, 5, int);
    const int cols = FT_FAKE_ARG(l, 6, int);
    float *y = FT_FAKE_ARG(l, 4, float *);
    for (int i = 0; i < n; i++) {
        if (idx[i] < 0) return FT_FAKE_ERROR_ILLEGAL_ADDRESS;
        for (int c = 0; c < cols; c++)
            y[(uint64_t)idx[i] * ldy + c] += weight[i] * in[(uint64_t)i * cols + c];
    }
    return FT_FAKE_SUCCESS;
}

int ft_fake_run_swiglu(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    const float *g = FT_FAKE_ARG(l, 0, float *), *u = FT_FAKE_ARG(l, 1, float *);
    float *h = FT_FAKE_ARG(l, 2, float *);
    const int n = FT_FAKE_ARG(l, 3, int);
    for (int i = 0; i < n; i++)
        h[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
    return FT_FAKE_SUCCESS;
}

/* One token of ft_router_topk_body: lane l holds experts l, l + 32, ... */
static void ft_fake_router_token(const ft_fake_kernel_t *k, const float *logits, int *ids,
                                 float *weights)
{
    const uint32_t ne = k->dims[0], kk = k->dims[1];
    float p[1024], lanes[32] = {0};
    float mx = -INFINITY;
    for (uint32_t e = 0; e < ne; e++)
        mx = fmaxf(mx, p[e] = logits[e]);
    for (uint32_t e = 0; e < ne; e++) {
        p[e] = expf(p[e] - mx);
        lanes[e % 32] += p[e];
    }
    const float sum = ft_fake_warp_sum(lanes);
    float picked[32], picked_sum = 0.0f;
    for (uint32_t r = 0; r < kk; r++) {
        float best = -1.0f;
        uint32_t best_e = 0;
        for (uint32_t e = 0; e < ne; e++)
            if (p[e] > best) best = p[e], best_e = e; /* ties keep the lower e */
        p[best_e] = -2.0f;
        picked[r] = best / sum;
        ids[r] = (int)best_e;
        picked_sum += picked[r];
    }
    for (uint32_t r = 0; r < kk; r++)
        weights[r] = k->spec.norm_topk_prob ? picked[r] / picked_sum : picked[r];
}

int ft_fake_run_router_topk(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    const float *logits = FT_FAKE_ARG(l, 0, float *);
    const int n_tok = FT_FAKE_ARG(l, 1, int);
    int *ids = FT_FAKE_ARG(l, 2, int *);
    float *weights = FT_FAKE_ARG(l, 3, float *);
    const uint32_t n_warps = ft_fake_block_warps(l), ne = k->dims[0], kk = k->dims[1];
    if (!n_warps) return FT_FAKE_ERROR_INVALID_VALUE;
    for (uint64_t t = 0; t < (uint64_t)l->grid[0] * n_warps && n_tok > 0 && t < (uint64_t)n_tok;
         t++)
        ft_fake_router_token(k, logits + t * ne, ids + t * kk, weights + t * kk);
    return FT_FAKE_SUCCESS;
}
