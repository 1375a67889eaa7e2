/* Emulated layer templates (codegen/cuda/templates/layer.cuh): RMSNorm
 * (one block per row; per-thread partial sums, warp butterflies, then the
 * first warp sums the warps' parts), RoPE (block (token, head), thread i
 * rotates pair (i, i + RD / 2) for NeoX, (2i, 2i + 1) for the adjacent
 * layout) and decode attention (one block
 * per query head; scores by warps through the global scratch row, softmax
 * and the weighted sum of V by threads). Sums follow the templates'
 * order; eps and theta come from the module's ft_spec. The KV cache is
 * float32, or IEEE half for the _f16 kernels (kernel wtype F16): stored
 * rounded to nearest even (cvt.rn.f16.f32), read widened exactly. The
 * _sink forms join each head's sink logit to its softmax's max and (last)
 * to its denominator. */
#include "fake_cuda.h"

#include "format/convert.h"

#include <math.h>
#include <string.h>

/* Sums per-thread partials part[0 .. n_warps * 32) as the templates do:
 * each warp's butterfly gives red[w]. */
static void ft_fake_warp_parts(float *part, uint32_t n_warps, float *red)
{
    for (uint32_t w = 0; w < n_warps; w++)
        red[w] = ft_fake_warp_sum(part + 32 * w);
}

int ft_fake_run_rmsnorm(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    const float *x = FT_FAKE_ARG(l, 0, float *), *w = FT_FAKE_ARG(l, 1, float *);
    float *y = FT_FAKE_ARG(l, 2, float *);
    const int n_rows = FT_FAKE_ARG(l, 3, int);
    const uint32_t d = k->dims[0], n_warps = ft_fake_block_warps(l), bd = l->block[0];
    if (!n_warps) return FT_FAKE_ERROR_INVALID_VALUE;
    for (uint64_t r = 0; r < l->grid[0] && n_rows > 0 && r < (uint64_t)n_rows; r++) {
        const float *xr = x + r * d;
        float part[1024] = {0}, red[32], v[32];
        for (uint32_t t = 0; t < bd; t++)
            for (uint32_t i = t; i < d; i += bd)
                part[t] += xr[i] * xr[i];
        ft_fake_warp_parts(part, n_warps, red);
        for (uint32_t lane = 0; lane < 32; lane++)
            v[lane] = lane < n_warps ? red[lane] : 0.0f;
        const float total = ft_fake_warp_sum(v);
        const float scale = (float)(1.0 / sqrt((double)total / d + (double)k->spec.norm_eps));
        for (uint32_t i = 0; i < d; i++)
            y[r * d + i] = xr[i] * scale * w[i];
    }
    return FT_FAKE_SUCCESS;
}

/* Block (t, h), thread i: ft_rope_cos_sin, then the pair (i, i + RD / 2)
 * (NeoX) or (2i, 2i + 1) (adjacent) of head h of token t. */
static int ft_fake_rope(const ft_fake_kernel_t *k, const ft_fake_launch_t *l, int neox)
{
    float *x = FT_FAKE_ARG(l, 0, float *);
    const int n_heads = FT_FAKE_ARG(l, 1, int), n_tok = FT_FAKE_ARG(l, 3, int);
    const int *pos = FT_FAKE_ARG(l, 2, int *);
    const uint32_t hd = k->dims[0], rd = k->dims[1];
    const double theta = k->spec.rope_theta;
    for (uint64_t t = 0; t < l->grid[0] && n_tok > 0 && t < (uint64_t)n_tok; t++)
        for (uint64_t h = 0; h < l->grid[1] && n_heads > 0 && h < (uint64_t)n_heads; h++)
            for (uint32_t i = 0; i < l->block[0] && i < rd / 2; i++) {
                const float inv_freq = (float)pow(theta, -2.0 * i / rd);
                const double angle = (double)pos[t] * inv_freq;
                const float c = (float)cos(angle), s = (float)sin(angle);
                float *head = x + (t * (uint64_t)n_heads + h) * hd;
                const uint32_t ia = neox ? i : 2 * i, ib = neox ? i + rd / 2 : 2 * i + 1;
                const float a = head[ia], b = head[ib];
                head[ia] = a * c - b * s;
                head[ib] = a * s + b * c;
            }
    return FT_FAKE_SUCCESS;
}

int ft_fake_run_rope(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    return ft_fake_rope(k, l, 1);
}

int ft_fake_run_rope_norm(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    return ft_fake_rope(k, l, 0);
}

/* Element i of a KV cache of the kernel's element type (ft_kv_ld). */
static float ft_fake_kv_ld(const ft_fake_kernel_t *k, const void *cache, uint64_t i)
{
    return k->wtype == FT_DTYPE_F16 ? ft_fp16_to_fp32(((const uint16_t *)cache)[i]) : ((const float *)cache)[i];
}

/* One query head h of ft_attn_decode_body. */
static void ft_fake_attn_head(const ft_fake_kernel_t *k, const ft_fake_launch_t *l, uint32_t h)
{
    const float *q = FT_FAKE_ARG(l, 0, float *);
    const void *kc = FT_FAKE_ARG(l, 1, void *), *vc = FT_FAKE_ARG(l, 2, void *);
    const uint64_t stride = (uint64_t)FT_FAKE_ARG(l, 3, int);
    const int n_pos = FT_FAKE_ARG(l, 4, int), max_pos = FT_FAKE_ARG(l, 6, int);
    float *out = FT_FAKE_ARG(l, 7, float *);
    const uint32_t hd = k->dims[0], g = h / (k->dims[1] / k->dims[2]);
    const uint32_t n_warps = ft_fake_block_warps(l), bd = l->block[0];
    float *sc = FT_FAKE_ARG(l, 5, float *) + (uint64_t)h * (uint64_t)max_pos;
    const float *qs = q + (uint64_t)h * hd;
    const float scale = 1.0f / sqrtf((float)hd);
    float red[32] = {0}, part[1024];
    for (uint32_t w = 0; w < n_warps; w++) {
        float mx = -INFINITY;
        for (int t = (int)w; t < n_pos; t += (int)n_warps) {
            const uint64_t kr = (uint64_t)t * stride + (uint64_t)g * hd;
            float lanes[32] = {0};
            for (uint32_t d = 0; d < hd; d++)
                lanes[d % 32] += qs[d] * ft_fake_kv_ld(k, kc, kr + d);
            const float s = ft_fake_warp_sum(lanes) * scale;
            sc[t] = s;
            mx = fmaxf(mx, s);
        }
        red[w] = mx;
    }
    float mx = red[0];
    for (uint32_t i = 1; i < n_warps; i++)
        mx = fmaxf(mx, red[i]);
    const float *sinks = k->sinks ? FT_FAKE_ARG(l, 8, float *) : NULL;
    if (sinks) mx = fmaxf(mx, sinks[h]);
    memset(part, 0, sizeof(float) * bd);
    for (uint32_t t = 0; t < bd; t++)
        for (int p = (int)t; p < n_pos; p += (int)bd) {
            const float e = expf(sc[p] - mx);
            sc[p] = e;
            part[t] += e;
        }
    ft_fake_warp_parts(part, n_warps, red);
    float sum = 0.0f;
    for (uint32_t i = 0; i < n_warps; i++)
        sum += red[i];
    if (sinks) sum += expf(sinks[h] - mx); /* the sink's share, added last as the template does */
    const float inv = 1.0f / sum;
    for (uint32_t d = 0; d < hd; d++) {
        float acc = 0.0f;
        for (int t = 0; t < n_pos; t++)
            acc += sc[t] * ft_fake_kv_ld(k, vc, (uint64_t)t * stride + (uint64_t)g * hd + d);
        out[(uint64_t)h * hd + d] = acc * inv;
    }
}

int ft_fake_run_attn_decode(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    const int n_pos = FT_FAKE_ARG(l, 4, int), max_pos = FT_FAKE_ARG(l, 6, int);
    if (!ft_fake_block_warps(l) || FT_FAKE_ARG(l, 3, int) < 0 || n_pos < 0)
        return FT_FAKE_ERROR_INVALID_VALUE;
    /* The template bounds neither the head nor the scratch row: a grid
     * past the heads or a context past max_pos writes out of bounds. */
    if (l->grid[0] > k->dims[1] || n_pos > max_pos) return FT_FAKE_ERROR_ILLEGAL_ADDRESS;
    for (uint32_t h = 0; h < l->grid[0]; h++)
        ft_fake_attn_head(k, l, h);
    return FT_FAKE_SUCCESS;
}

/* ft_attn_decode_pos: ft_attn_decode over pos[0] + 1 keys. */
int ft_fake_run_attn_decode_pos(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    const int *pos = FT_FAKE_ARG(l, 4, int *);
    int n_pos = pos[0] + 1;
    void *params[9] = {0}; /* the _sink forms: one more */
    memcpy(params, l->params, sizeof(void *) * (k->sinks ? 9 : 8));
    params[4] = &n_pos;
    ft_fake_launch_t by_value = *l;
    by_value.params = params;
    return ft_fake_run_attn_decode(k, &by_value);
}

/* ft_kv_append (f16: ft_kv_append_f16): token t's K and V rows into the
 * caches at row pos[t]. */
static int ft_fake_kv_append(const ft_fake_launch_t *l, int f16)
{
    const float *kr = FT_FAKE_ARG(l, 0, float *), *vr = FT_FAKE_ARG(l, 1, float *);
    void *kc = FT_FAKE_ARG(l, 2, void *), *vc = FT_FAKE_ARG(l, 3, void *);
    const int kv_dim = FT_FAKE_ARG(l, 4, int), n_tok = FT_FAKE_ARG(l, 6, int);
    const int *pos = FT_FAKE_ARG(l, 5, int *);
    if (kv_dim < 0 || n_tok < 0) return FT_FAKE_ERROR_INVALID_VALUE;
    for (int t = 0; t < n_tok; t++) {
        if (pos[t] < 0) return FT_FAKE_ERROR_ILLEGAL_ADDRESS;
        const uint64_t row = (uint64_t)pos[t] * kv_dim, src = (uint64_t)t * kv_dim;
        if (!f16) {
            memcpy((float *)kc + row, kr + src, sizeof(float) * (size_t)kv_dim);
            memcpy((float *)vc + row, vr + src, sizeof(float) * (size_t)kv_dim);
            continue;
        }
        for (int c = 0; c < kv_dim; c++) {
            ((uint16_t *)kc)[row + c] = ft_fp32_to_fp16(kr[src + c]);
            ((uint16_t *)vc)[row + c] = ft_fp32_to_fp16(vr[src + c]);
        }
    }
    return FT_FAKE_SUCCESS;
}

int ft_fake_run_kv_append(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    (void)k;
    return ft_fake_kv_append(l, 0);
}

int ft_fake_run_kv_append_f16(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    (void)k;
    return ft_fake_kv_append(l, 1);
}
