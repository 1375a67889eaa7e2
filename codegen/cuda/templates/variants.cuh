/* Template: variants. The op variants other architectures add to the
 * plain decoder (gpt-oss, GLM-4.5): device bodies only; the emitter writes
 * a kernel for each only when the model needs it (cuda_emit.c), so a plain
 * model's module is unchanged.
 *
 * ft_bias_add_body: y[r] += b[sel[r]] (rows of cols floats; sel NULL: the
 * one row b) for LINEAR biases, the router's logit bias and the experts'
 * bias stacks (sel: each row's expert).
 * ft_swiglu_oai_body: gpt-oss's clamped SwiGLU, as ft_op_swiglu_oai.
 * ft_sigmoid_mul_body: h = sigmoid(g) * u, the gated attention output, as
 * ft_op_sigmoid_mul.
 * ft_rope_tab_body: RoPE with the frequencies from a table and cos/sin
 * times mscale (YaRN: runtime/exec/program.c computes both), as
 * ft_xop_rope: angle in double, cos and sin rounded to float32, then
 * scaled.
 * ft_router_ext_body: one warp (one block of 32 threads) per token:
 * softmax or sigmoid scores, the choice by the scores plus an optional
 * selection bias, within the n_groups_used best of n_groups groups (a
 * group scores its two best; ties: the lower group), k rounds of a warp
 * arg-max (ties: the lower index, as ft_op_topk), the unbiased scores as
 * weights, renormalized when norm, times scale (forward_moe.c's
 * ft_route_token). */
static __device__ __forceinline__ void ft_bias_add_body(float *y, const float *b, const int *sel, int n_rows,
                                                        int cols)
{
    for (int r = blockIdx.x; r < n_rows; r += gridDim.x) {
        const float *br = b + (size_t)(sel ? sel[r] : 0) * cols;
        for (int c = threadIdx.x; c < cols; c += blockDim.x)
            y[(size_t)r * cols + c] += br[c];
    }
}

static __device__ __forceinline__ void ft_swiglu_oai_body(const float *g, const float *u, float *h, int n,
                                                          float alpha, float limit)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float gc = g[i] < limit ? g[i] : limit;
        const float uc = u[i] < -limit ? -limit : u[i] > limit ? limit : u[i];
        h[i] = gc / (1.0f + expf(-alpha * gc)) * (uc + 1.0f);
    }
}

static __device__ __forceinline__ void ft_sigmoid_mul_body(const float *g, const float *u, float *h, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        h[i] = u[i] / (1.0f + expf(-g[i]));
}

template <int HD, int RD, bool NEOX>
__device__ __forceinline__ void ft_rope_tab_body(float *x, int n_heads, const int *pos, int n_tok,
                                                 const float *inv_freq, float mscale)
{
    const int t = blockIdx.x, h = blockIdx.y, i = threadIdx.x;
    if (t >= n_tok || h >= n_heads || i >= RD / 2)
        return;
    const double angle = (double)pos[t] * inv_freq[i];
    const float c = (float)cos(angle) * mscale, s = (float)sin(angle) * mscale;
    float *head = x + ((size_t)t * n_heads + h) * HD;
    const int ia = NEOX ? i : 2 * i, ib = NEOX ? i + RD / 2 : 2 * i + 1;
    const float a = head[ia], b = head[ib];
    head[ia] = a * c - b * s;
    head[ib] = a * s + b * c;
}

template <int NE, int K>
__device__ __forceinline__ void ft_router_ext_body(const float *logits, int n_tok, int *ids, float *weights,
                                                   const float *sel_bias, int scoring, int n_groups,
                                                   int n_groups_used, float scale, int norm)
{
    __shared__ float p[NE], c[NE], gs[NE];
    __shared__ unsigned char taken[NE];
    const int t = blockIdx.x, lane = threadIdx.x;
    if (t >= n_tok || blockDim.x != 32)
        return;
    const float *lg = logits + (size_t)t * NE;
    if (scoring) {
        for (int e = lane; e < NE; e += 32)
            p[e] = 1.0f / (1.0f + expf(-lg[e]));
    } else {
        float mx = __int_as_float(0xff800000); /* -inf */
        for (int e = lane; e < NE; e += 32)
            mx = fmaxf(mx, lg[e]);
        mx = ft_warp_max(mx);
        float sum = 0.0f;
        for (int e = lane; e < NE; e += 32) {
            p[e] = expf(lg[e] - mx);
            sum += p[e];
        }
        const float inv = 1.0f / ft_warp_sum(sum);
        for (int e = lane; e < NE; e += 32)
            p[e] *= inv;
    }
    for (int e = lane; e < NE; e += 32) {
        c[e] = sel_bias ? p[e] + sel_bias[e] : p[e];
        taken[e] = 0;
    }
    __syncwarp();
    if (n_groups) {
        const int size = NE / n_groups;
        for (int g = lane; g < n_groups; g += 32) {
            float a = __int_as_float(0xff800000), b = a;
            for (int i = g * size; i < (g + 1) * size; i++) {
                if (c[i] > a) {
                    b = a;
                    a = c[i];
                } else if (c[i] > b) {
                    b = c[i];
                }
            }
            gs[g] = size > 1 ? a + b : a;
        }
        __syncwarp();
        for (int g = lane; g < n_groups; g += 32) {
            int better = 0;
            for (int h = 0; h < n_groups; h++)
                better += gs[h] > gs[g] || (gs[h] == gs[g] && h < g);
            if (better >= n_groups_used)
                for (int i = g * size; i < (g + 1) * size; i++)
                    c[i] = __int_as_float(0xff800000);
        }
        __syncwarp();
    }
    float w[K], sum = 0.0f;
    int id[K];
    for (int k = 0; k < K; k++) {
        float best = __int_as_float(0xff800000);
        int best_e = 0x7fffffff;
        for (int e = lane; e < NE; e += 32)
            if (!taken[e] && (c[e] > best || (c[e] == best && e < best_e)))
                best = c[e], best_e = e;
        for (int o = 16; o > 0; o >>= 1) {
            const float ob = __shfl_xor_sync(0xffffffffu, best, o);
            const int oe = __shfl_xor_sync(0xffffffffu, best_e, o);
            if (ob > best || (ob == best && oe < best_e))
                best = ob, best_e = oe;
        }
        __syncwarp();
        if (lane == 0)
            taken[best_e] = 1;
        __syncwarp();
        id[k] = best_e;
        sum += (w[k] = p[best_e]);
    }
    if (lane == 0)
        for (int k = 0; k < K; k++) {
            float v = norm ? w[k] / sum : w[k];
            if (scale != 1.0f)
                v *= scale;
            ids[(size_t)t * K + k] = id[k];
            weights[(size_t)t * K + k] = v;
        }
}
