#include "gemv_bench.h"
#include "figure.h"

#include "backends/cpu/kernels.h"
#include "base/checked.h"
#include "format/convert.h"

#include <stdlib.h>
#include <string.h>

struct ft_hwp_gemv {
    ft_threadpool_t *pool;
    ft_dtype_t wtype;
    uint32_t rows, cols;
    uint64_t row_bytes, mat_bytes, n_mats;
    uint8_t *w;        /* n_mats * mat_bytes */
    float *x;          /* 4 activation vectors of cols */
    void *xp;          /* one prepared activation row */
    float *y;          /* rows */
    const uint8_t *cur; /* the matrix of the current pool run */
    float sink;
};

static void ft_hwp_gemv_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    ft_hwp_gemv_t *g = ctx;
    uint64_t b, e;
    ft_split_range(g->rows, 16, ti, nt, &b, &e);
    if (b < e)
        ft_cpu_matmul(g->wtype, g->cur, g->row_bytes, g->xp, 1, g->cols, (uint32_t)b, (uint32_t)e,
                      g->y, g->rows);
}

/* A xorshift generator: the same matrices every run. */
static float ft_hwp_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (float)(*s >> 40) / (float)(1u << 24) * 2.0f - 1.0f;
}

/* Quantizes one random matrix into g->w and copies it to every slot. */
FT_WARN_UNUSED static ft_status_t ft_hwp_gemv_fill(ft_hwp_gemv_t *g)
{
    float *row = malloc(g->cols * sizeof(float));
    if (!row)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "GEMV bench: out of memory");
    uint64_t seed = 0x243f6a8885a308d3ull;
    for (uint32_t r = 0; r < g->rows; r++) {
        for (uint32_t c = 0; c < g->cols; c++)
            row[c] = ft_hwp_rand(&seed) * 0.05f;
        ft_quantize_row(g->wtype, row, g->w + r * g->row_bytes, g->cols);
    }
    for (uint64_t m = 1; m < g->n_mats; m++)
        memcpy(g->w + m * g->mat_bytes, g->w, g->mat_bytes);
    for (uint32_t i = 0; i < 4 * g->cols; i++)
        g->x[i] = ft_hwp_rand(&seed);
    free(row);
    return FT_OK;
}

ft_status_t ft_hwp_gemv_create(ft_threadpool_t *pool, ft_dtype_t wtype, uint32_t rows, uint32_t cols,
                               uint64_t total_bytes, ft_hwp_gemv_t **out)
{
    *out = NULL;
    if (!ft_cpu_supports(wtype) || !ft_quant_supported(wtype) || rows == 0)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "GEMV bench: format %s", ft_dtype_name(wtype));
    ft_hwp_gemv_t *g = calloc(1, sizeof(*g));
    if (!g)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "GEMV bench: out of memory");
    g->pool = pool;
    g->wtype = wtype;
    g->rows = rows;
    g->cols = cols;
    uint64_t w_bytes;
    if (!ft_dtype_row_bytes(wtype, cols, &g->row_bytes) || !ft_mul_u64(g->row_bytes, rows, &g->mat_bytes)) {
        free(g);
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "GEMV bench: %u columns do not fit %s blocks",
                              cols, ft_dtype_name(wtype));
    }
    g->n_mats = total_bytes / g->mat_bytes + (total_bytes % g->mat_bytes != 0);
    if (g->n_mats == 0)
        g->n_mats = 1;
    if (!ft_mul_u64(g->n_mats, g->mat_bytes, &w_bytes) || !ft_align_up_u64(w_bytes, 4096, &w_bytes)) {
        free(g);
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "GEMV bench: size overflows");
    }
    g->w = aligned_alloc(4096, (size_t)w_bytes);
    g->x = malloc(4 * (size_t)cols * sizeof(float));
    g->xp = aligned_alloc(64, (ft_cpu_act_row_bytes(wtype, cols) + 63) & ~(size_t)63);
    g->y = malloc(rows * sizeof(float));
    if (!g->w || !g->x || !g->xp || !g->y) {
        ft_hwp_gemv_destroy(g);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "GEMV bench: cannot allocate %llu bytes",
                              (unsigned long long)w_bytes);
    }
    ft_status_t st = ft_hwp_gemv_fill(g);
    if (st) {
        ft_hwp_gemv_destroy(g);
        return st;
    }
    *out = g;
    return FT_OK;
}

void ft_hwp_gemv_destroy(ft_hwp_gemv_t *g)
{
    if (!g)
        return;
    free(g->w);
    free(g->x);
    free(g->xp);
    free(g->y);
    free(g);
}

double ft_hwp_gemv_pass(ft_hwp_gemv_t *g)
{
    double t0 = ft_hwp_now();
    for (uint64_t m = 0; m < g->n_mats; m++) {
        ft_cpu_act_prepare(g->wtype, g->x + (m % 4) * g->cols, g->cols, 1, g->cols, g->xp);
        g->cur = g->w + m * g->mat_bytes;
        ft_threadpool_run(g->pool, ft_hwp_gemv_worker, g);
        g->sink += g->y[m % g->rows];
    }
    return ft_hwp_now() - t0;
}

uint64_t ft_hwp_gemv_bytes(const ft_hwp_gemv_t *g) { return g->n_mats * g->mat_bytes; }

float ft_hwp_gemv_sink(const ft_hwp_gemv_t *g) { return g->sink; }

uint64_t ft_hwp_gemv_n_mats(const ft_hwp_gemv_t *g) { return g->n_mats; }
