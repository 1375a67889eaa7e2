/* Template: matmul. Dequantizing matrix-vector and matrix-matrix products
 * over row-major weights [rows, COLS] in format F, float32 activations and
 * float32 accumulation.
 *
 * GEMV (decode): one warp per weight row, FT_GEMV_WARPS rows per block;
 * lane i dequantizes 32-element chunks i, i + 32, ... so a warp streams a
 * contiguous stretch of the row and each weight byte is read once.
 * Grouped expert GEMV: blockIdx.y selects an expert whose matrix starts
 * w_offset bytes into its cache slot (FTW packs gate, up, down of one
 * expert in one blob), so all selected experts of a layer run in one
 * launch. x_stride 0 shares one input row (gate/up); COLS otherwise (down).
 * GEMM (prefill): 32 rows x 32 tokens per block of 256 threads; each
 * 32-column step dequantizes a 32 x 32 weight tile into shared memory once
 * and reuses it for 32 tokens. */
#define FT_GEMV_WARPS 4

template <class F, int COLS>
__device__ __forceinline__ void ft_gemv_body(const ft_u8 *w, const float *x, float *y, int rows)
{
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int r = blockIdx.x * FT_GEMV_WARPS + warp;
    if (r >= rows)
        return;
    const ft_u8 *row = w + (size_t)r * ft_row<F, COLS>::BYTES;
    float acc = 0.0f;
    for (int c = lane; c < COLS / 32; c += 32) {
        float v[32];
        F::dq32(row, c, v);
        const float4 *xv = (const float4 *)(x + 32 * c);
        for (int i = 0; i < 8; i++) {
            const float4 t = xv[i];
            acc += v[4 * i] * t.x + v[4 * i + 1] * t.y + v[4 * i + 2] * t.z + v[4 * i + 3] * t.w;
        }
    }
    acc = ft_warp_sum(acc);
    if (lane == 0)
        y[r] = acc;
}

template <class F, int COLS>
__device__ __forceinline__ void ft_gemv_experts_body(const ft_u8 *const *slots, ft_u64 w_offset, const float *x,
                                                     ft_u64 x_stride, float *y, int rows)
{
    const int e = blockIdx.y;
    ft_gemv_body<F, COLS>(slots[e] + w_offset, x + (size_t)e * x_stride, y + (size_t)e * rows, rows);
}

template <class F, int COLS>
__device__ __forceinline__ void ft_gemm_body(const ft_u8 *w, const float *x, int ldx, float *y, int ldy, int rows,
                                             int n_tok)
{
    __shared__ float ws[32][33]; /* [row][col], padded against bank conflicts */
    __shared__ float xs[32][33]; /* [token][col] */
    const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5; /* 32 x 8 */
    const int r0 = blockIdx.x * 32, t0 = blockIdx.y * 32;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int c = 0; c < COLS / 32; c++) {
        if (ty == 0) {
            float v[32];
            if (r0 + tx < rows)
                F::dq32(w + (size_t)(r0 + tx) * ft_row<F, COLS>::BYTES, c, v);
            else
                for (int i = 0; i < 32; i++)
                    v[i] = 0.0f;
            for (int i = 0; i < 32; i++)
                ws[tx][i] = v[i];
        }
        for (int j = ty; j < 32; j += 8)
            xs[j][tx] = t0 + j < n_tok ? x[(size_t)(t0 + j) * ldx + 32 * c + tx] : 0.0f;
        __syncthreads();
        for (int i = 0; i < 32; i++) {
            const float wv = ws[tx][i];
            for (int j = 0; j < 4; j++)
                acc[j] += wv * xs[ty + 8 * j][i];
        }
        __syncthreads();
    }
    for (int j = 0; j < 4; j++) {
        const int t = t0 + ty + 8 * j;
        if (r0 + tx < rows && t < n_tok)
            y[(size_t)t * ldy + r0 + tx] = acc[j];
    }
}
