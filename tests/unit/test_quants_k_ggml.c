/* The Q2_K, Q3_K and Q5_K quantizers are bit-identical to ggml's reference
 * quantizers (quantize_row_q{2,3,5}_K_ref, ggml/src/ggml-quants.c), which
 * are deterministic: the expected bytes come from a transcription of
 * those functions written here in ggml's own form (its block structs,
 * MIN/MAX macros, helper signatures and statement order), read from
 * ggml-quants.c and ggml-common.h, not from runtime/format. fp16 rounding
 * is GGML_FP32_TO_FP16's round-to-nearest-even, which ft_fp32_to_fp16 is
 * checked to be elsewhere (test_convert). The rows: random weights with
 * outliers, whole groups of zeros, constant groups, tiny and huge scales,
 * so every branch of the fits (all-zero groups, min > 0, scale clamps) is
 * taken. A mutant check: changing Q5_K's rmin from -0.5 to -1 in
 * quant_k_low.c, or Q3_K's 5 refinement passes to 4, fails here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/format/convert.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

/* ---- transcription of ggml (ggml-common.h, ggml-quants.c) ---- */
#define QK_K 256
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define GROUP_MAX_EPS 1e-15f
#define GGML_FP32_TO_FP16(x) ft_fp32_to_fp16(x)
#define GGML_FP16_TO_FP32(x) ft_fp16_to_fp32(x)
typedef uint16_t ggml_half;

typedef struct {
    uint8_t scales[QK_K / 16];
    uint8_t qs[QK_K / 4];
    ggml_half d;
    ggml_half dmin;
} block_q2_K;
typedef struct {
    uint8_t hmask[QK_K / 8];
    uint8_t qs[QK_K / 4];
    uint8_t scales[12];
    ggml_half d;
} block_q3_K;
typedef struct {
    ggml_half d;
    ggml_half dmin;
    uint8_t scales[12];
    uint8_t qh[QK_K / 8];
    uint8_t qs[QK_K / 2];
} block_q5_K;
_Static_assert(sizeof(block_q2_K) == 84 && sizeof(block_q3_K) == 110 && sizeof(block_q5_K) == 176,
               "ggml block sizes");

static inline int nearest_int(float fval)
{
    float val = fval + 12582912.f;
    int i;
    memcpy(&i, &val, sizeof(int));
    return (i & 0x007fffff) - 0x00400000;
}

static float make_q3_quants(int n, int nmax, const float *x, int8_t *L, bool do_rmse)
{
    float max = 0;
    float amax = 0;
    for (int i = 0; i < n; ++i) {
        float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < GROUP_MAX_EPS) {
        for (int i = 0; i < n; ++i) {
            L[i] = 0;
        }
        return 0.f;
    }
    float iscale = -nmax / max;
    if (do_rmse) {
        float sumlx = 0;
        float suml2 = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * x[i]);
            l = MAX(-nmax, MIN(nmax - 1, l));
            L[i] = (int8_t)l;
            float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        for (int itry = 0; itry < 5; ++itry) {
            int n_changed = 0;
            for (int i = 0; i < n; ++i) {
                float w = x[i] * x[i];
                float slx = sumlx - w * x[i] * L[i];
                if (slx > 0) {
                    float sl2 = suml2 - w * L[i] * L[i];
                    int new_l = nearest_int(x[i] * sl2 / slx);
                    new_l = MAX(-nmax, MIN(nmax - 1, new_l));
                    if (new_l != L[i]) {
                        slx += w * x[i] * new_l;
                        sl2 += w * new_l * new_l;
                        if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                            L[i] = (int8_t)new_l;
                            sumlx = slx;
                            suml2 = sl2;
                            ++n_changed;
                        }
                    }
                }
            }
            if (!n_changed) {
                break;
            }
        }
        for (int i = 0; i < n; ++i) {
            L[i] = (int8_t)(L[i] + nmax);
        }
        return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
    }
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * x[i]);
        l = MAX(-nmax, MIN(nmax - 1, l));
        L[i] = (int8_t)(l + nmax);
    }
    return 1 / iscale;
}

static float make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                              float *the_min, uint8_t *Laux, float rmin, float rdelta, int nstep,
                              bool use_mad)
{
    float min = x[0];
    float max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        for (int i = 0; i < n; ++i)
            L[i] = 0;
        *the_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)MAX(0, MIN(nmax, l));
        float diff = scale * L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        float w = weights[i];
        best_error += w * diff;
    }
    if (nstep < 1) {
        *the_min = -min;
        return scale;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * (x[i] - min));
            l = MAX(0, MIN(nmax, l));
            Laux[i] = (uint8_t)l;
            float w = weights[i];
            sum_l += w * l;
            sum_l2 += w * l * l;
            sum_xl += w * l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                float w = weights[i];
                cur_error += w * diff;
            }
            if (cur_error < best_error) {
                for (int i = 0; i < n; ++i) {
                    L[i] = Laux[i];
                }
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

static inline void get_scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m)
{
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
    }
}

static void quantize_row_q2_K_ref(const float *x, block_q2_K *y, int64_t k)
{
    const int nb = (int)(k / QK_K);
    uint8_t L[QK_K];
    uint8_t Laux[16];
    float weights[16];
    float mins[QK_K / 16];
    float scales[QK_K / 16];
    const float q4scale = 15.f;
    for (int i = 0; i < nb; i++) {
        float max_scale = 0;
        float max_min = 0;
        for (int j = 0; j < QK_K / 16; ++j) {
            for (int l = 0; l < 16; ++l)
                weights[l] = fabsf(x[16 * j + l]);
            scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux,
                                         -0.5f, 0.1f, 15, true);
            float scale = scales[j];
            if (scale > max_scale) {
                max_scale = scale;
            }
            float min = mins[j];
            if (min > max_min) {
                max_min = min;
            }
        }
        if (max_scale > 0) {
            float iscale = q4scale / max_scale;
            for (int j = 0; j < QK_K / 16; ++j) {
                int l = nearest_int(iscale * scales[j]);
                y[i].scales[j] = (uint8_t)l;
            }
            y[i].d = GGML_FP32_TO_FP16(max_scale / q4scale);
        } else {
            for (int j = 0; j < QK_K / 16; ++j)
                y[i].scales[j] = 0;
            y[i].d = GGML_FP32_TO_FP16(0.f);
        }
        if (max_min > 0) {
            float iscale = q4scale / max_min;
            for (int j = 0; j < QK_K / 16; ++j) {
                int l = nearest_int(iscale * mins[j]);
                y[i].scales[j] |= (uint8_t)((unsigned)l << 4);
            }
            y[i].dmin = GGML_FP32_TO_FP16(max_min / q4scale);
        } else {
            y[i].dmin = GGML_FP32_TO_FP16(0.f);
        }
        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = GGML_FP16_TO_FP32(y[i].d) * (y[i].scales[j] & 0xF);
            if (!d) continue;
            const float dm = GGML_FP16_TO_FP32(y[i].dmin) * (y[i].scales[j] >> 4);
            for (int ii = 0; ii < 16; ++ii) {
                int l = nearest_int((x[16 * j + ii] + dm) / d);
                l = MAX(0, MIN(3, l));
                L[16 * j + ii] = (uint8_t)l;
            }
        }
        for (int j = 0; j < QK_K; j += 128) {
            for (int l = 0; l < 32; ++l) {
                y[i].qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) |
                                               (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
            }
        }
        x += QK_K;
    }
}

static void quantize_row_q3_K_ref(const float *x, block_q3_K *y, int64_t k)
{
    const int nb = (int)(k / QK_K);
    int8_t L[QK_K];
    float scales[QK_K / 16];
    for (int i = 0; i < nb; i++) {
        float max_scale = 0;
        float amax = 0;
        for (int j = 0; j < QK_K / 16; ++j) {
            scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j, true);
            float scale = fabsf(scales[j]);
            if (scale > amax) {
                amax = scale;
                max_scale = scales[j];
            }
        }
        memset(y[i].scales, 0, 12);
        if (max_scale) {
            float iscale = -32.f / max_scale;
            for (int j = 0; j < QK_K / 16; ++j) {
                int8_t l = (int8_t)nearest_int(iscale * scales[j]);
                l = (int8_t)(MAX(-32, MIN(31, l)) + 32);
                if (j < 8) {
                    y[i].scales[j] = l & 0xF;
                } else {
                    y[i].scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
                }
                l >>= 4;
                y[i].scales[j % 4 + 8] |= (uint8_t)(l << (2 * (j / 4)));
            }
            y[i].d = GGML_FP32_TO_FP16(1 / iscale);
        } else {
            y[i].d = GGML_FP32_TO_FP16(0.f);
        }
        int8_t sc;
        for (int j = 0; j < QK_K / 16; ++j) {
            sc = (int8_t)(j < 8 ? y[i].scales[j] & 0xF : y[i].scales[j - 8] >> 4);
            sc = (int8_t)((sc | (((y[i].scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32);
            float d = GGML_FP16_TO_FP32(y[i].d) * sc;
            if (!d) {
                continue;
            }
            for (int ii = 0; ii < 16; ++ii) {
                int l = nearest_int(x[16 * j + ii] / d);
                l = MAX(-4, MIN(3, l));
                L[16 * j + ii] = (int8_t)(l + 4);
            }
        }
        memset(y[i].hmask, 0, QK_K / 8);
        int m = 0;
        uint8_t hm = 1;
        for (int j = 0; j < QK_K; ++j) {
            if (L[j] > 3) {
                y[i].hmask[m] |= hm;
                L[j] -= 4;
            }
            if (++m == QK_K / 8) {
                m = 0;
                hm = (uint8_t)(hm << 1);
            }
        }
        for (int j = 0; j < QK_K; j += 128) {
            for (int l = 0; l < 32; ++l) {
                y[i].qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) |
                                               (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
            }
        }
        x += QK_K;
    }
}

static void quantize_row_q5_K_ref(const float *x, block_q5_K *y, int64_t k)
{
    const int64_t nb = k / QK_K;
    uint8_t L[QK_K];
    float mins[QK_K / 32];
    float scales[QK_K / 32];
    float weights[32];
    uint8_t Laux[32];
    for (int i = 0; i < nb; i++) {
        float max_scale = 0;
        float max_min = 0;
        for (int j = 0; j < QK_K / 32; ++j) {
            float sum_x2 = 0;
            for (int l = 0; l < 32; ++l)
                sum_x2 += x[32 * j + l] * x[32 * j + l];
            float av_x = sqrtf(sum_x2 / 32);
            for (int l = 0; l < 32; ++l)
                weights[l] = av_x + fabsf(x[32 * j + l]);
            scales[j] = make_qkx2_quants(32, 31, x + 32 * j, weights, L + 32 * j, &mins[j], Laux,
                                         -0.5f, 0.1f, 15, false);
            float scale = scales[j];
            if (scale > max_scale) {
                max_scale = scale;
            }
            float min = mins[j];
            if (min > max_min) {
                max_min = min;
            }
        }
        float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
        float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
        for (int j = 0; j < QK_K / 32; ++j) {
            uint8_t ls = (uint8_t)nearest_int(inv_scale * scales[j]);
            uint8_t lm = (uint8_t)nearest_int(inv_min * mins[j]);
            ls = MIN(63, ls);
            lm = MIN(63, lm);
            if (j < 4) {
                y[i].scales[j] = ls;
                y[i].scales[j + 4] = lm;
            } else {
                y[i].scales[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
                y[i].scales[j - 4] |= (uint8_t)((ls >> 4) << 6);
                y[i].scales[j - 0] |= (uint8_t)((lm >> 4) << 6);
            }
        }
        y[i].d = GGML_FP32_TO_FP16(max_scale / 63.f);
        y[i].dmin = GGML_FP32_TO_FP16(max_min / 63.f);
        uint8_t sc, m;
        for (int j = 0; j < QK_K / 32; ++j) {
            get_scale_min_k4(j, y[i].scales, &sc, &m);
            const float d = GGML_FP16_TO_FP32(y[i].d) * sc;
            if (!d) continue;
            const float dm = GGML_FP16_TO_FP32(y[i].dmin) * m;
            for (int ii = 0; ii < 32; ++ii) {
                int l = nearest_int((x[32 * j + ii] + dm) / d);
                l = MAX(0, MIN(31, l));
                L[32 * j + ii] = (uint8_t)l;
            }
        }
        uint8_t *qh = y[i].qh;
        uint8_t *ql = y[i].qs;
        memset(qh, 0, QK_K / 8);
        uint8_t m1 = 1, m2 = 2;
        for (int n = 0; n < QK_K; n += 64) {
            for (int j = 0; j < 32; ++j) {
                int l1 = L[n + j];
                if (l1 > 15) {
                    l1 -= 16;
                    qh[j] |= m1;
                }
                int l2 = L[n + j + 32];
                if (l2 > 15) {
                    l2 -= 16;
                    qh[j] |= m2;
                }
                ql[j] = (uint8_t)(l1 | (l2 << 4));
            }
            m1 = (uint8_t)(m1 << 2);
            m2 = (uint8_t)(m2 << 2);
            ql += 32;
        }
        x += QK_K;
    }
}

/* ---- the comparison ---- */

enum { NB = 8, N = NB * QK_K };

static uint64_t g_rng = 0x13198a2e03707344ull;

static double rnd_sym(void) /* [-1, 1) */
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) * 0x1.0p-52 - 1.0;
}

/* Row `rep` of the test: mostly random weights of varying scale, with
 * zero groups, constant groups, all-positive groups and outliers mixed in
 * so that each fit's special cases occur. */
static void make_row(int rep, float *x)
{
    const double scale = pow(10.0, (double)(rep % 9) - 4.0); /* 1e-4 .. 1e4 */
    for (int i = 0; i < N; i++) {
        double v = rnd_sym() + rnd_sym() + rnd_sym();
        if ((i * 7 + rep) % 89 == 0) v *= 10;
        x[i] = (float)(scale * v);
    }
    for (int g = 0; g < N / 16; g++) {
        const int kind = (g * 13 + rep) % 23;
        for (int i = 16 * g; i < 16 * g + 16; i++) {
            if (kind == 0) x[i] = 0;
            if (kind == 1) x[i] = (float)scale;
            if (kind == 2) x[i] = fabsf(x[i]) + (float)scale;
            if (kind == 3) x[i] = -fabsf(x[i]);
        }
    }
}

static void check(ft_dtype_t t, size_t block_bytes,
                  void (*ggml)(const float *x, void *y, int64_t k))
{
    static float x[N];
    static uint8_t want[NB * 176], got[NB * 176];
    for (int rep = 0; rep < 400; rep++) {
        make_row(rep, x);
        memset(want, 0xA5, sizeof(want));
        memset(got, 0x5A, sizeof(got));
        ggml(x, want, N);
        ft_quantize_row(t, x, got, N);
        for (size_t i = 0; i < NB * block_bytes; i++)
            if (want[i] != got[i])
                fail_msg("%s row %d: byte %zu (block %zu, offset %zu) is 0x%02x, ggml 0x%02x",
                         ft_dtype_name(t), rep, i, i / block_bytes, i % block_bytes, got[i],
                         want[i]);
    }
}

static void ggml_q2_k(const float *x, void *y, int64_t k)
{
    quantize_row_q2_K_ref(x, y, k);
}
static void ggml_q3_k(const float *x, void *y, int64_t k)
{
    quantize_row_q3_K_ref(x, y, k);
}
static void ggml_q5_k(const float *x, void *y, int64_t k)
{
    quantize_row_q5_K_ref(x, y, k);
}

static void test_q2_k(void **state)
{
    (void)state;
    check(FT_DTYPE_Q2_K, sizeof(block_q2_K), ggml_q2_k);
}

static void test_q3_k(void **state)
{
    (void)state;
    check(FT_DTYPE_Q3_K, sizeof(block_q3_K), ggml_q3_k);
}

static void test_q5_k(void **state)
{
    (void)state;
    check(FT_DTYPE_Q5_K, sizeof(block_q5_K), ggml_q5_k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q2_k),
        cmocka_unit_test(test_q3_k),
        cmocka_unit_test(test_q5_k),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
