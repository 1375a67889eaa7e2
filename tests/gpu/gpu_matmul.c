/* GEMV, grouped expert GEMV and prefill GEMM on the GPU against the CPU:
 * (1) a float64 product of the dequantized weights (the GPU kernels
 *     dequantize exactly and accumulate in float32, so only rounding of
 *     the sums differs: tolerance 1e-5 normalized error);
 * (2) the CPU reference kernels (runtime/backends/cpu), which quantize
 *     the activations to 8 bits for quantized weights (ggml's scheme):
 *     F32/F16/BF16 keep float32 activations on both sides (1e-5); Q8_0 and
 *     Q4_0 activations become Q8_0 blocks of 32, whose rounding error is
 *     uniform with step amax/127, about 0.5% of the activations' RMS for
 *     normal data (amax ~ 2.1 sigma), and Q4_K/Q6_K activations become Q8_K
 *     blocks of 256 (amax ~ 2.9 sigma, about 0.7%): tolerance 2e-2, three
 *     to four times the expected error. MXFP4 and NVFP4 take Q8_0
 *     activations (2e-2), FP8 float32 ones (1e-5).
 * Then GB/s of each GEMV over a matrix far larger than L2. */
#include "gpu_harness.h"

#include "backends/cpu/kernels.h"
#include "format/convert.h"

#include <string.h>

enum { GK_ROWS = 1003, GK_TOK = 37, GK_SEL = 8 };

static double gk_tol_cpu(ft_dtype_t t)
{
    /* Formats whose CPU kernels keep float32 activations. */
    const int f32_act =
        t == FT_DTYPE_F32 || t == FT_DTYPE_F16 || t == FT_DTYPE_BF16 || t == FT_DTYPE_FP8;
    return f32_act ? 1e-5 : 2e-2;
}

/* Random weights quantized to wtype; wf gets the dequantized values. */
static uint8_t *gk_weights(gk_t *g, ft_dtype_t t, uint32_t rows, uint32_t cols, size_t *row_bytes,
                           float *wf)
{
    uint64_t rb;
    if (!ft_dtype_row_bytes(t, cols, &rb)) {
        fprintf(stderr, "bad row size for %s x %u\n", ft_dtype_name(t), cols);
        exit(1);
    }
    uint8_t *w = gk_xmalloc((size_t)rb * rows);
    float *tmp = gk_xmalloc(sizeof(float) * cols);
    for (uint32_t r = 0; r < rows; r++) {
        for (uint32_t c = 0; c < cols; c++)
            tmp[c] = 0.05f * gk_randn(g);
        ft_quantize_row(t, tmp, w + (size_t)r * rb, cols);
        ft_dequantize_row(t, w + (size_t)r * rb, wf + (size_t)r * cols, cols);
    }
    free(tmp);
    *row_bytes = (size_t)rb;
    return w;
}

static void gk_ref64(const float *wf, const float *x, uint32_t rows, uint32_t cols, double *y)
{
    for (uint32_t r = 0; r < rows; r++) {
        double acc = 0.0;
        for (uint32_t c = 0; c < cols; c++)
            acc += (double)wf[(size_t)r * cols + c] * x[c];
        y[r] = acc;
    }
}

/* The CPU reference kernels' y for n_tok activation rows. */
static void gk_cpu_ref(ft_dtype_t t, const uint8_t *w, size_t rb, const float *x, uint32_t n_tok,
                       uint32_t rows, uint32_t cols, double *out)
{
    void *xp = gk_xmalloc(ft_cpu_act_row_bytes(t, cols) * n_tok);
    float *y = gk_xmalloc(sizeof(float) * rows * n_tok);
    ft_cpu_act_prepare(t, x, cols, n_tok, cols, xp);
    ft_cpu_matmul(t, w, rb, xp, n_tok, cols, 0, rows, y, rows);
    for (size_t i = 0; i < (size_t)rows * n_tok; i++)
        out[i] = y[i];
    free(xp);
    free(y);
}

static void gk_check_one(gk_t *g, ft_dtype_t t, uint32_t cols)
{
    const char *f = ft_dtype_name(t);
    const uint32_t rows = GK_ROWS;
    size_t rb;
    float *wf = gk_xmalloc(sizeof(float) * rows * cols);
    uint8_t *w = gk_weights(g, t, rows, cols, &rb, wf);
    float *x = gk_xmalloc(sizeof(float) * cols * GK_TOK);
    for (size_t i = 0; i < (size_t)cols * GK_TOK; i++)
        x[i] = gk_randn(g);
    double *ref = gk_xmalloc(sizeof(double) * rows * GK_TOK);
    float *y = gk_xmalloc(sizeof(float) * rows * GK_TOK);
    char name[64], what[96];

    /* GEMV. */
    ft_cu_deviceptr dw = gk_upload(g, w, rb * rows),
                    dx = gk_upload(g, x, sizeof(float) * cols * GK_TOK);
    ft_cu_deviceptr dy;
    GK_OK(ft_cuda_alloc(g->dev, sizeof(float) * rows * GK_TOK, &dy));
    int irows = (int)rows, itok = GK_TOK, icols = (int)cols;
    snprintf(name, sizeof(name), "ft_gemv_%s_k%u", f, cols);
    void *p_gemv[] = {&dw, &dx, &dy, &irows};
    gk_launch(g, name, (rows + 3) / 4, 1, 128, p_gemv);
    gk_download(g, y, dy, sizeof(float) * rows);
    gk_ref64(wf, x, rows, cols, ref);
    snprintf(what, sizeof(what), "%s vs float64", name);
    gk_report(g, what, gk_nerr(y, ref, rows), 1e-5);
    gk_cpu_ref(t, w, rb, x, 1, rows, cols, ref);
    snprintf(what, sizeof(what), "%s vs CPU reference", name);
    gk_report(g, what, gk_nerr(y, ref, rows), gk_tol_cpu(t));

    /* Grouped expert GEMV: GK_SEL slots, the matrix 4096 bytes into each
     * (behind another projection, as in an FTW expert blob), own inputs. */
    const uint64_t off = 4096;
    ft_cu_deviceptr slots[GK_SEL], dslots;
    for (int e = 0; e < GK_SEL; e++) {
        GK_OK(ft_cuda_alloc(g->dev, off + rb * rows, &slots[e]));
        GK_OK(ft_cuda_copy_d2d(g->dev, slots[e] + off, dw, rb * rows, g->s));
    }
    dslots = gk_upload(g, slots, sizeof(slots));
    uint64_t xs = cols;
    snprintf(name, sizeof(name), "ft_gemv_experts_%s_k%u", f, cols);
    void *p_exp[] = {&dslots, (void *)&off, &dx, &xs, &dy, &irows};
    gk_launch(g, name, (rows + 3) / 4, GK_SEL, 128, p_exp);
    gk_download(g, y, dy, sizeof(float) * rows * GK_SEL);
    double worst = 0.0;
    for (int e = 0; e < GK_SEL; e++) {
        gk_ref64(wf, x + (size_t)e * cols, rows, cols, ref);
        const double err = gk_nerr(y + (size_t)e * rows, ref, rows);
        worst = err > worst ? err : worst;
    }
    snprintf(what, sizeof(what), "%s x%d vs float64", name, GK_SEL);
    gk_report(g, what, worst, 1e-5);
    for (int e = 0; e < GK_SEL; e++)
        ft_cuda_free(g->dev, slots[e]);
    ft_cuda_free(g->dev, dslots);

    /* GEMM over GK_TOK tokens (neither rows nor tokens fill whole tiles). */
    snprintf(name, sizeof(name), "ft_gemm_%s_k%u", f, cols);
    void *p_gemm[] = {&dw, &dx, &icols, &dy, &irows, &irows, &itok};
    gk_launch(g, name, (rows + 31) / 32, (GK_TOK + 31) / 32, 256, p_gemm);
    gk_download(g, y, dy, sizeof(float) * rows * GK_TOK);
    gk_cpu_ref(t, w, rb, x, GK_TOK, rows, cols, ref);
    snprintf(what, sizeof(what), "%s x%d tok vs CPU reference", name, GK_TOK);
    gk_report(g, what, gk_nerr(y, ref, (size_t)rows * GK_TOK), gk_tol_cpu(t));

    ft_cuda_free(g->dev, dw);
    ft_cuda_free(g->dev, dx);
    ft_cuda_free(g->dev, dy);
    free(wf), free(w), free(x), free(ref), free(y);
}

void gk_check_matmuls(gk_t *g)
{
    for (int i = 0; i < GK_N_MATMULS; i++)
        gk_check_one(g, gk_matmuls[i].wtype, gk_matmuls[i].cols);
}

/* GB/s of one GEMV over ~512 MiB of weights (well past any L2), median
 * of 20 timed launches after warm-up. */
static void gk_bench_one(gk_t *g, ft_dtype_t t, uint32_t cols)
{
    uint64_t rb;
    ft_dtype_row_bytes(t, cols, &rb);
    const size_t target = (size_t)512 << 20;
    const uint32_t rows = (uint32_t)(target / rb);
    ft_cu_deviceptr dw, dx, dy;
    GK_OK(ft_cuda_alloc(g->dev, (size_t)rb * rows, &dw));
    GK_OK(ft_cuda_alloc(g->dev, sizeof(float) * cols, &dx));
    GK_OK(ft_cuda_alloc(g->dev, sizeof(float) * rows, &dy));
    /* Bytes 0x11 decode to small finite values in every format. */
    GK_OK(ft_cuda_memset(g->dev, dw, 0x11, (size_t)rb * rows, g->s));
    GK_OK(ft_cuda_memset(g->dev, dx, 0, sizeof(float) * cols, g->s));
    char name[64];
    snprintf(name, sizeof(name), "ft_gemv_%s_k%u", ft_dtype_name(t), cols);
    int irows = (int)rows;
    void *p[] = {&dw, &dx, &dy, &irows};
    ft_cu_event e0, e1;
    GK_OK(ft_cuda_event_create(g->dev, 1, &e0));
    GK_OK(ft_cuda_event_create(g->dev, 1, &e1));
    float ms[20];
    for (int i = -3; i < 20; i++) {
        GK_OK(ft_cuda_event_record(g->dev, e0, g->s));
        gk_launch(g, name, (rows + 3) / 4, 1, 128, p);
        GK_OK(ft_cuda_event_record(g->dev, e1, g->s));
        GK_OK(ft_cuda_event_sync(g->dev, e1));
        if (i >= 0) GK_OK(ft_cuda_event_elapsed_ms(g->dev, e0, e1, &ms[i]));
    }
    for (int i = 1; i < 20; i++)
        for (int j = i; j > 0 && ms[j] < ms[j - 1]; j--) {
            const float tmp = ms[j];
            ms[j] = ms[j - 1], ms[j - 1] = tmp;
        }
    const double gbs = (double)rb * rows / (ms[10] * 1e-3) / 1e9;
    printf("bench %-24s %8u rows x %5u  %7.1f MiB  %8.3f ms  %7.1f GB/s\n", name, rows, cols,
           (double)rb * rows / 1048576.0, ms[10], gbs);
    ft_cuda_event_destroy(g->dev, e0);
    ft_cuda_event_destroy(g->dev, e1);
    ft_cuda_free(g->dev, dw), ft_cuda_free(g->dev, dx), ft_cuda_free(g->dev, dy);
}

void gk_bench_matmuls(gk_t *g)
{
    for (int i = 0; i < GK_N_MATMULS; i++)
        gk_bench_one(g, gk_matmuls[i].wtype, gk_matmuls[i].cols);
}
