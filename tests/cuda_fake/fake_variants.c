/* Emulated variants template (codegen/cuda/templates/variants.cuh): bias
 * rows, gpt-oss's clamped SwiGLU, RoPE from a frequency table with a
 * cos/sin scale (YaRN), and the extended router (one warp per token:
 * softmax or sigmoid scores, selection bias, group-limited choice, k
 * rounds of arg-max with ties to the lower index, renormalization and
 * scale, all from the launch's arguments). Same operations in the same
 * order as the templates. */
#include "fake_cuda.h"

#include <math.h>
#include <string.h>

int ft_fake_run_bias_add(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    (void)k;
    float *y = FT_FAKE_ARG(l, 0, float *);
    const float *b = FT_FAKE_ARG(l, 1, float *);
    const int *sel = FT_FAKE_ARG(l, 2, int *);
    const int n_rows = FT_FAKE_ARG(l, 3, int), cols = FT_FAKE_ARG(l, 4, int);
    if (n_rows < 0 || cols < 0) return FT_FAKE_ERROR_INVALID_VALUE;
    for (int r = 0; r < n_rows; r++) {
        if (sel && sel[r] < 0) return FT_FAKE_ERROR_ILLEGAL_ADDRESS;
        const float *br = b + (uint64_t)(sel ? sel[r] : 0) * (uint64_t)cols;
        for (int c = 0; c < cols; c++)
            y[(uint64_t)r * cols + c] += br[c];
    }
    return FT_FAKE_SUCCESS;
}

int ft_fake_run_swiglu_oai(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    (void)k;
    const float *g = FT_FAKE_ARG(l, 0, float *), *u = FT_FAKE_ARG(l, 1, float *);
    float *h = FT_FAKE_ARG(l, 2, float *);
    const int n = FT_FAKE_ARG(l, 3, int);
    const float alpha = FT_FAKE_ARG(l, 4, float), limit = FT_FAKE_ARG(l, 5, float);
    for (int i = 0; i < n; i++) {
        const float gc = g[i] < limit ? g[i] : limit;
        const float uc = u[i] < -limit ? -limit : u[i] > limit ? limit : u[i];
        h[i] = gc / (1.0f + expf(-alpha * gc)) * (uc + 1.0f);
    }
    return FT_FAKE_SUCCESS;
}

int ft_fake_run_sigmoid_mul(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    (void)k;
    const float *g = FT_FAKE_ARG(l, 0, float *), *u = FT_FAKE_ARG(l, 1, float *);
    float *h = FT_FAKE_ARG(l, 2, float *);
    const int n = FT_FAKE_ARG(l, 3, int);
    for (int i = 0; i < n; i++)
        h[i] = u[i] / (1.0f + expf(-g[i]));
    return FT_FAKE_SUCCESS;
}

/* Block (t, h), thread i: the angle from inv_freq[i] in double, cos and
 * sin rounded to float32 and times mscale, then the pair. */
static int ft_fake_rope_tab(const ft_fake_kernel_t *k, const ft_fake_launch_t *l, int neox)
{
    float *x = FT_FAKE_ARG(l, 0, float *);
    const int n_heads = FT_FAKE_ARG(l, 1, int), n_tok = FT_FAKE_ARG(l, 3, int);
    const int *pos = FT_FAKE_ARG(l, 2, int *);
    const float *inv_freq = FT_FAKE_ARG(l, 4, float *);
    const float mscale = FT_FAKE_ARG(l, 5, float);
    const uint32_t hd = k->dims[0], rd = k->dims[1];
    for (uint64_t t = 0; t < l->grid[0] && n_tok > 0 && t < (uint64_t)n_tok; t++)
        for (uint64_t h = 0; h < l->grid[1] && n_heads > 0 && h < (uint64_t)n_heads; h++)
            for (uint32_t i = 0; i < l->block[0] && i < rd / 2; i++) {
                const double angle = (double)pos[t] * inv_freq[i];
                const float c = (float)cos(angle) * mscale, s = (float)sin(angle) * mscale;
                float *head = x + (t * (uint64_t)n_heads + h) * hd;
                const uint32_t ia = neox ? i : 2 * i, ib = neox ? i + rd / 2 : 2 * i + 1;
                const float a = head[ia], b = head[ib];
                head[ia] = a * c - b * s;
                head[ib] = a * s + b * c;
            }
    return FT_FAKE_SUCCESS;
}

int ft_fake_run_rope_tab_neox(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    return ft_fake_rope_tab(k, l, 1);
}

int ft_fake_run_rope_tab_norm(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    return ft_fake_rope_tab(k, l, 0);
}

/* The launch's routing parameters. */
typedef struct ft_fake_route {
    const float *sel_bias;
    int scoring, n_groups, n_groups_used, norm;
    float scale;
} ft_fake_route_t;

/* Group-limited choice over c [ne]: groups past the n_groups_used best
 * (each scores its two best; ties: the lower group) become -inf. */
static void ft_fake_route_groups(const ft_fake_route_t *r, uint32_t ne, float *c)
{
    const uint32_t size = ne / (uint32_t)r->n_groups;
    float gs[1024];
    for (int g = 0; g < r->n_groups; g++) {
        float a = -INFINITY, b = -INFINITY;
        for (uint32_t i = g * size; i < (g + 1) * size; i++) {
            if (c[i] > a) {
                b = a;
                a = c[i];
            } else if (c[i] > b) {
                b = c[i];
            }
        }
        gs[g] = size > 1 ? a + b : a;
    }
    for (int g = 0; g < r->n_groups; g++) {
        int better = 0;
        for (int h = 0; h < r->n_groups; h++)
            better += gs[h] > gs[g] || (gs[h] == gs[g] && h < g);
        if (better >= r->n_groups_used)
            for (uint32_t i = g * size; i < (g + 1) * size; i++)
                c[i] = -INFINITY;
    }
}

static void ft_fake_router_ext_token(const ft_fake_kernel_t *k, const ft_fake_route_t *r,
                                     const float *lg, int *ids, float *weights)
{
    const uint32_t ne = k->dims[0], kk = k->dims[1];
    float p[1024], c[1024], lanes[32] = {0};
    unsigned char taken[1024] = {0};
    if (r->scoring) {
        for (uint32_t e = 0; e < ne; e++)
            p[e] = 1.0f / (1.0f + expf(-lg[e]));
    } else {
        float mx = -INFINITY;
        for (uint32_t e = 0; e < ne; e++)
            mx = fmaxf(mx, lg[e]);
        for (uint32_t e = 0; e < ne; e++) {
            p[e] = expf(lg[e] - mx);
            lanes[e % 32] += p[e];
        }
        const float inv = 1.0f / ft_fake_warp_sum(lanes);
        for (uint32_t e = 0; e < ne; e++)
            p[e] *= inv;
    }
    for (uint32_t e = 0; e < ne; e++)
        c[e] = r->sel_bias ? p[e] + r->sel_bias[e] : p[e];
    if (r->n_groups) ft_fake_route_groups(r, ne, c);
    float w[32], sum = 0.0f;
    for (uint32_t j = 0; j < kk; j++) {
        float best = -INFINITY;
        uint32_t best_e = UINT32_MAX;
        for (uint32_t e = 0; e < ne; e++)
            if (!taken[e] && (c[e] > best || (c[e] == best && e < best_e))) best = c[e], best_e = e;
        if (best_e == UINT32_MAX) best_e = 0; /* only NaN scores left: the template's lane 0 */
        taken[best_e] = 1;
        ids[j] = (int)best_e;
        sum += (w[j] = p[best_e]);
    }
    for (uint32_t j = 0; j < kk; j++) {
        float v = r->norm ? w[j] / sum : w[j];
        if (r->scale != 1.0f) v *= r->scale;
        weights[j] = v;
    }
}

int ft_fake_run_router_ext(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    const float *logits = FT_FAKE_ARG(l, 0, float *);
    const int n_tok = FT_FAKE_ARG(l, 1, int);
    int *ids = FT_FAKE_ARG(l, 2, int *);
    float *weights = FT_FAKE_ARG(l, 3, float *);
    const ft_fake_route_t r = {FT_FAKE_ARG(l, 4, float *), FT_FAKE_ARG(l, 5, int),
                               FT_FAKE_ARG(l, 6, int),     FT_FAKE_ARG(l, 7, int),
                               FT_FAKE_ARG(l, 9, int),     FT_FAKE_ARG(l, 8, float)};
    const uint32_t ne = k->dims[0], kk = k->dims[1];
    /* One warp per block: the template returns from any other block shape. */
    if (l->block[0] != 32 || l->block[1] != 1 || l->block[2] != 1)
        return FT_FAKE_ERROR_INVALID_VALUE;
    if (r.n_groups < 0 || r.n_groups_used < 0 ||
        (r.n_groups && (ne % (uint32_t)r.n_groups || r.n_groups_used > r.n_groups)))
        return FT_FAKE_ERROR_INVALID_VALUE;
    for (uint64_t t = 0; t < l->grid[0] && n_tok > 0 && t < (uint64_t)n_tok; t++)
        ft_fake_router_ext_token(k, &r, logits + t * ne, ids + t * kk, weights + t * kk);
    return FT_FAKE_SUCCESS;
}
