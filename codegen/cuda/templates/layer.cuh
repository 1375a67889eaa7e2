/* Template: layer. The float32 operations around the matrix products:
 * RMSNorm (as ft_op_rmsnorm), rotary embedding over NeoX pairs (as
 * ft_op_rope_neox) and over adjacent pairs (as ft_op_rope_norm), both with
 * inv_freq in float32 from a double pow and the angle in double, and decode
 * attention of one new token over the KV cache (one block per query head,
 * grouped-query heads share KV head h / (NH / NKV)).
 *
 * KV cache: rows of kv_stride elements per position, KV head g at
 * [g * HD, (g + 1) * HD); an element is a float32 or an IEEE half (the
 * plan's kv_format: the _f16 kernels), rounded to nearest even when
 * appended and widened exactly when read, so attention's float arithmetic
 * is the same for both. Scores go through a global scratch row per head
 * (scratch: NH * max_pos floats) so the context length is not bounded by
 * shared memory. With sinks (gpt-oss), each head's sink logit sinks[h]
 * joins its softmax's max and denominator (ft_op_softmax_sink), added to
 * the sum last. */
template <int D>
__device__ __forceinline__ void ft_rmsnorm_body(const float *x, const float *w, float *y, int n_rows, float eps)
{
    __shared__ float part[32];
    const int r = blockIdx.x;
    if (r >= n_rows)
        return;
    const float *xr = x + (size_t)r * D;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < D; i += blockDim.x)
        ss += xr[i] * xr[i];
    ss = ft_warp_sum(ss);
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = ss;
    __syncthreads();
    if (threadIdx.x < 32) {
        float v = threadIdx.x < (blockDim.x >> 5) ? part[threadIdx.x] : 0.0f;
        v = ft_warp_sum(v);
        if (threadIdx.x == 0)
            part[0] = v;
    }
    __syncthreads();
    const float scale = (float)(1.0 / sqrt((double)part[0] / D + (double)eps));
    for (int i = threadIdx.x; i < D; i += blockDim.x)
        y[(size_t)r * D + i] = xr[i] * scale * w[i];
}

/* Thread i's rotation for the token at pos: inv_freq = theta^(-2i / RD)
 * rounded to float32 (runtime/exec/program.c's table), the angle in
 * double, its cosine and sine rounded to float32 (ft_op_rope_*). */
template <int RD>
__device__ __forceinline__ void ft_rope_cos_sin(int i, int pos, double theta, float *c, float *s)
{
    const float inv_freq = (float)pow(theta, -2.0 * i / RD);
    const double angle = (double)pos * inv_freq;
    *c = (float)cos(angle);
    *s = (float)sin(angle);
}

/* x: [n_tok][n_heads][HD] in place; pos[t] the token's position. Block
 * (t, h), thread i < RD / 2 rotates pair (i, i + RD / 2). */
template <int HD, int RD>
__device__ __forceinline__ void ft_rope_neox_body(float *x, int n_heads, const int *pos, int n_tok, double theta)
{
    const int t = blockIdx.x, h = blockIdx.y, i = threadIdx.x;
    if (t >= n_tok || h >= n_heads || i >= RD / 2)
        return;
    float c, s;
    ft_rope_cos_sin<RD>(i, pos[t], theta, &c, &s);
    float *head = x + ((size_t)t * n_heads + h) * HD;
    const float a = head[i], b = head[i + RD / 2];
    head[i] = a * c - b * s;
    head[i + RD / 2] = a * s + b * c;
}

/* As ft_rope_neox_body, but thread i rotates the adjacent pair (2i, 2i + 1)
 * (the original RoPE layout: GGUF llama, Mixtral). */
template <int HD, int RD>
__device__ __forceinline__ void ft_rope_norm_body(float *x, int n_heads, const int *pos, int n_tok, double theta)
{
    const int t = blockIdx.x, h = blockIdx.y, i = threadIdx.x;
    if (t >= n_tok || h >= n_heads || i >= RD / 2)
        return;
    float c, s;
    ft_rope_cos_sin<RD>(i, pos[t], theta, &c, &s);
    float *head = x + ((size_t)t * n_heads + h) * HD;
    const float a = head[2 * i], b = head[2 * i + 1];
    head[2 * i] = a * c - b * s;
    head[2 * i + 1] = a * s + b * c;
}

/* KV cache elements: float32 as is; IEEE half bits through the PTX cvt
 * (round to nearest even on the store, exact on the load). */
__device__ __forceinline__ float ft_kv_ld(const float *p)
{
    return *p;
}

__device__ __forceinline__ float ft_kv_ld(const ft_u16 *p)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(*p));
    return f;
}

__device__ __forceinline__ void ft_kv_st(float *p, float v)
{
    *p = v;
}

__device__ __forceinline__ void ft_kv_st(ft_u16 *p, float v)
{
    ft_u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    *p = h;
}

template <int HD, int NH, int NKV, typename KV>
__device__ __forceinline__ void ft_attn_decode_body(const float *q, const KV *k, const KV *v, int kv_stride,
                                                    int n_pos, float *scratch, int max_pos, float *out,
                                                    const float *sinks = nullptr)
{
    static_assert(NH % NKV == 0, "query heads must group evenly over KV heads");
    __shared__ float qs[HD];
    __shared__ float red[32];
    const int h = blockIdx.x, g = h / (NH / NKV);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, n_warps = blockDim.x >> 5;
    for (int d = threadIdx.x; d < HD; d += blockDim.x)
        qs[d] = q[(size_t)h * HD + d];
    __syncthreads();
    float *sc = scratch + (size_t)h * max_pos;
    const float scale = 1.0f / sqrtf((float)HD);
    float mx = __int_as_float(0xff800000); /* -inf */
    for (int t = warp; t < n_pos; t += n_warps) {
        const KV *kr = k + (size_t)t * kv_stride + (size_t)g * HD;
        float s = 0.0f;
        for (int d = lane; d < HD; d += 32)
            s += qs[d] * ft_kv_ld(kr + d);
        s = ft_warp_sum(s) * scale;
        if (lane == 0)
            sc[t] = s;
        mx = fmaxf(mx, s);
    }
    if (lane == 0)
        red[warp] = mx;
    __syncthreads();
    mx = red[0];
    for (int i = 1; i < n_warps; i++)
        mx = fmaxf(mx, red[i]);
    if (sinks) /* the head's sink logit takes part in the max and the sum, and weighs no value */
        mx = fmaxf(mx, sinks[h]);
    __syncthreads();
    float sum = 0.0f;
    for (int t = threadIdx.x; t < n_pos; t += blockDim.x) {
        const float e = expf(sc[t] - mx);
        sc[t] = e;
        sum += e;
    }
    sum = ft_warp_sum(sum);
    if (lane == 0)
        red[warp] = sum;
    __syncthreads();
    sum = 0.0f;
    for (int i = 0; i < n_warps; i++)
        sum += red[i];
    if (sinks)
        sum += expf(sinks[h] - mx);
    const float inv = 1.0f / sum;
    for (int d = threadIdx.x; d < HD; d += blockDim.x) {
        float acc = 0.0f;
        for (int t = 0; t < n_pos; t++)
            acc += sc[t] * ft_kv_ld(v + (size_t)t * kv_stride + (size_t)g * HD + d);
        out[(size_t)h * HD + d] = acc * inv;
    }
}

/* The decode step as a replayable CUDA graph: the position comes from
 * device memory (pos[0], written before the step) instead of a launch
 * argument, so the captured launches stay valid from token to token.
 * ft_kv_append: token t's K and V rows (kv_dim floats) into the cache at
 * row pos[t] (ft_kv_append_f16: as halves); ft_attn_decode_pos:
 * ft_attn_decode over pos[0] + 1 keys. */
template <typename KV>
__device__ __forceinline__ void ft_kv_append_body(const float *k, const float *v, KV *kc, KV *vc, int kv_dim,
                                                  const int *pos, int n_tok)
{
    for (int t = blockIdx.x; t < n_tok; t += gridDim.x) {
        const size_t row = (size_t)pos[t] * kv_dim;
        for (int c = threadIdx.x; c < kv_dim; c += blockDim.x) {
            ft_kv_st(kc + row + c, k[(size_t)t * kv_dim + c]);
            ft_kv_st(vc + row + c, v[(size_t)t * kv_dim + c]);
        }
    }
}

extern "C" __global__ void ft_kv_append(const float *k, const float *v, float *kc, float *vc, int kv_dim,
                                        const int *pos, int n_tok)
{
    ft_kv_append_body<float>(k, v, kc, vc, kv_dim, pos, n_tok);
}

extern "C" __global__ void ft_kv_append_f16(const float *k, const float *v, ft_u16 *kc, ft_u16 *vc, int kv_dim,
                                            const int *pos, int n_tok)
{
    ft_kv_append_body<ft_u16>(k, v, kc, vc, kv_dim, pos, n_tok);
}
