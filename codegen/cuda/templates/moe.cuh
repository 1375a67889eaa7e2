/* Template: moe. Expert data movement and the router.
 *
 * ft_expert_copy: blockIdx.y picks one expert; its n_bytes are copied from
 * src[e] to dst[e] (host-mapped pinned FTW memory or a staging buffer into
 * a cache slot, or slot to slot), 16 bytes per thread when both ends and
 * the size allow, bytes otherwise.
 * ft_rows_gather / ft_rows_scatter_add: the tokens routed to one expert
 * are gathered into a dense batch for the prefill GEMM, and its output rows
 * are added back weighted by the router. Launches on one stream run in
 * order and one launch never repeats a token, so the adds need no atomics.
 * ft_swiglu: h = silu(g) * u, as ft_op_swiglu.
 * Router: one warp per token; softmax over the experts, then k rounds of a
 * warp arg-max (ties: the lower index, as ft_op_topk). */
extern "C" __global__ void ft_expert_copy(const ft_u8 *const *src, ft_u8 *const *dst, ft_u64 n_bytes)
{
    const ft_u8 *s = src[blockIdx.y];
    ft_u8 *d = dst[blockIdx.y];
    const ft_u64 tid = (ft_u64)blockIdx.x * blockDim.x + threadIdx.x;
    const ft_u64 stride = (ft_u64)gridDim.x * blockDim.x;
    if ((((size_t)s | (size_t)d | n_bytes) & 15) == 0) {
        const uint4 *s4 = (const uint4 *)s;
        uint4 *d4 = (uint4 *)d;
        for (ft_u64 i = tid; i < n_bytes / 16; i += stride)
            d4[i] = s4[i];
    } else {
        for (ft_u64 i = tid; i < n_bytes; i += stride)
            d[i] = s[i];
    }
}

extern "C" __global__ void ft_rows_gather(const float *x, int ldx, const int *idx, int n, float *out, int cols)
{
    for (int i = blockIdx.x; i < n; i += gridDim.x)
        for (int c = threadIdx.x; c < cols; c += blockDim.x)
            out[(size_t)i * cols + c] = x[(size_t)idx[i] * ldx + c];
}

extern "C" __global__ void ft_rows_scatter_add(const float *in, const int *idx, const float *weight, int n, float *y,
                                               int ldy, int cols)
{
    for (int i = blockIdx.x; i < n; i += gridDim.x)
        for (int c = threadIdx.x; c < cols; c += blockDim.x)
            y[(size_t)idx[i] * ldy + c] += weight[i] * in[(size_t)i * cols + c];
}

extern "C" __global__ void ft_swiglu(const float *g, const float *u, float *h, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        h[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

template <int NE, int K, bool NORM>
__device__ __forceinline__ void ft_router_topk_body(const float *logits, int n_tok, int *ids, float *weights)
{
    constexpr int PER = (NE + 31) / 32;
    const int lane = threadIdx.x & 31;
    const int t = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (t >= n_tok)
        return;
    float p[PER];
    float mx = __int_as_float(0xff800000); /* -inf */
    for (int i = 0; i < PER; i++) {
        const int e = lane + 32 * i;
        p[i] = e < NE ? logits[(size_t)t * NE + e] : __int_as_float(0xff800000);
        mx = fmaxf(mx, p[i]);
    }
    mx = ft_warp_max(mx);
    float sum = 0.0f;
    for (int i = 0; i < PER; i++) {
        p[i] = lane + 32 * i < NE ? expf(p[i] - mx) : 0.0f;
        sum += p[i];
    }
    sum = ft_warp_sum(sum);
    float picked_sum = 0.0f, picked[K];
    int picked_id[K];
    for (int k = 0; k < K; k++) {
        float best = -1.0f;
        int best_e = 0x7fffffff;
        for (int i = 0; i < PER; i++) {
            const int e = lane + 32 * i;
            if (e < NE && (p[i] > best || (p[i] == best && e < best_e)))
                best = p[i], best_e = e;
        }
        for (int o = 16; o > 0; o >>= 1) {
            const float ob = __shfl_xor_sync(0xffffffffu, best, o);
            const int oe = __shfl_xor_sync(0xffffffffu, best_e, o);
            if (ob > best || (ob == best && oe < best_e))
                best = ob, best_e = oe;
        }
        for (int i = 0; i < PER; i++)
            if (lane + 32 * i == best_e)
                p[i] = -2.0f; /* below every probability: taken */
        picked[k] = best / sum;
        picked_id[k] = best_e;
        picked_sum += picked[k];
    }
    if (lane == 0)
        for (int k = 0; k < K; k++) {
            ids[(size_t)t * K + k] = picked_id[k];
            weights[(size_t)t * K + k] = NORM ? picked[k] / picked_sum : picked[k];
        }
}
