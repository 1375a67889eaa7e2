/* Template: Gated DeltaNet (Qwen3.5/3.6, Qwen3-Next), one token at a time,
 * as runtime/exec/op_deltanet.c's reference kernel computes it, in f32
 * (the reference sums in double: the tests bound the difference). Device
 * bodies only; the emitter writes the kernels when the model has DeltaNet
 * layers. The state is the session's region for the layer: the conv's last
 * K - 1 inputs of its C channels (oldest first), then S per value head
 * (hd x hd, row i over v).
 *
 * ft_deltanet_conv_body: one thread per channel c: y = silu(w[c][K-1] x[c]
 * + sum_j w[c][j] window[j][c]), then the window moves on by x.
 * ft_deltanet_recur_body: one block per value head h (key head h % Hk
 * tiled, h / (Hv / Hk) grouped): q and k of the key head L2-normalised
 * in shared memory (sums of squares by a fixed order: per thread, then
 * thread 0 over the threads), g = A softplus(a + dt_bias), decay exp(g),
 * beta sigmoid(b); thread i owns row i of S: S_i *= decay, d = beta (v_i -
 * S_i . k), S_i += d k, out_i = (S_i . q) / sqrt(hd).
 * ft_sigmoid_bcast_mul_body: h[r][c] *= sigmoid(g[r]): the shared
 * expert's one-float gate, as the executor's broadcast GLU. */
#define FT_DN_MAX_HD 1024
#define FT_DN_THREADS 128

static __device__ __forceinline__ void ft_deltanet_conv_body(const float *x, const float *w, float *window,
                                                             float *y, int C, int K)
{
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < C; c += gridDim.x * blockDim.x) {
        const float *wc = w + (size_t)c * K;
        float acc = wc[K - 1] * x[c];
        for (int j = 0; j + 1 < K; j++)
            acc += wc[j] * window[(size_t)j * C + c];
        y[c] = acc / (1.0f + expf(-acc));
        for (int j = 0; j + 2 < K; j++)
            window[(size_t)j * C + c] = window[(size_t)(j + 1) * C + c];
        if (K > 1) window[(size_t)(K - 2) * C + c] = x[c];
    }
}

/* x / max(|x|, eps) of n values into out (shared), every thread of the block. */
static __device__ __forceinline__ void ft_dn_l2(const float *x, float *out, float *red, int n, float eps)
{
    float ss = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        ss += x[i] * x[i];
    red[threadIdx.x] = ss;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.0f;
        for (int i = 0; i < (int)blockDim.x; i++)
            t += red[i];
        const float norm = sqrtf(t);
        red[0] = 1.0f / (norm > eps ? norm : eps);
    }
    __syncthreads();
    const float scale = red[0];
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        out[i] = x[i] * scale;
    __syncthreads();
}

static __device__ __forceinline__ void ft_deltanet_recur_body(const float *y, const float *b, const float *a,
                                                              const float *dt_bias, const float *A,
                                                              float *S_all, float *out, int hd, int n_k,
                                                              int n_v, int tiled, float eps)
{
    __shared__ float q[FT_DN_MAX_HD], k[FT_DN_MAX_HD], red[FT_DN_THREADS];
    const int h = blockIdx.x;
    if (h >= n_v) return;
    const int kh = tiled ? h % n_k : h / (n_v / n_k);
    ft_dn_l2(y + (size_t)kh * hd, q, red, hd, eps);
    ft_dn_l2(y + (size_t)(n_k + kh) * hd, k, red, hd, eps);
    const float *v = y + (size_t)2 * n_k * hd + (size_t)h * hd;
    const float x = a[h] + dt_bias[h];
    const float sp = x > 20.0f ? x : log1pf(expf(x));
    const float decay = expf(A[h] * sp), beta = 1.0f / (1.0f + expf(-b[h]));
    const float scale = 1.0f / sqrtf((float)hd);
    float *S = S_all + (size_t)h * hd * hd;
    for (int i = threadIdx.x; i < hd; i += blockDim.x) {
        float *row = S + (size_t)i * hd;
        float sk = 0.0f;
        for (int j = 0; j < hd; j++) {
            row[j] *= decay;
            sk += row[j] * k[j];
        }
        const float d = beta * (v[i] - sk);
        float oq = 0.0f;
        for (int j = 0; j < hd; j++) {
            row[j] += d * k[j];
            oq += row[j] * q[j];
        }
        out[(size_t)h * hd + i] = oq * scale;
    }
}

static __device__ __forceinline__ void ft_sigmoid_bcast_mul_body(const float *g, float *h, int n_rows, int cols)
{
    for (int r = blockIdx.x; r < n_rows; r += gridDim.x) {
        const float s = 1.0f / (1.0f + expf(-g[r]));
        for (int c = threadIdx.x; c < cols; c += blockDim.x)
            h[(size_t)r * cols + c] *= s;
    }
}
