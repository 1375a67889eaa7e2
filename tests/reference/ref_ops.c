#include "ref_ops.h"

#include <math.h>

void ft_ref_matvec(const double *w, uint32_t rows, uint32_t cols, const double *x, double *y)
{
    for (uint32_t r = 0; r < rows; r++) {
        double s = 0.0;
        for (uint32_t c = 0; c < cols; c++)
            s += w[(uint64_t)r * cols + c] * x[c];
        y[r] = s;
    }
}

void ft_ref_rmsnorm(const double *x, const double *w, uint32_t n, double eps, double *y)
{
    double ss = 0.0;
    for (uint32_t i = 0; i < n; i++)
        ss += x[i] * x[i];
    const double scale = 1.0 / sqrt(ss / n + eps);
    for (uint32_t i = 0; i < n; i++)
        y[i] = x[i] * scale * w[i];
}

void ft_ref_rope_neox(double *x, uint32_t rope_dim, uint32_t pos, double theta_base)
{
    const uint32_t half = rope_dim / 2;
    for (uint32_t i = 0; i < half; i++) {
        const double angle = pos * pow(theta_base, -2.0 * i / rope_dim);
        const double c = cos(angle), s = sin(angle);
        const double a = x[i], b = x[i + half];
        x[i] = a * c - b * s;
        x[i + half] = a * s + b * c;
    }
}

void ft_ref_rope_norm(double *x, uint32_t rope_dim, uint32_t pos, double theta_base)
{
    const uint32_t half = rope_dim / 2;
    for (uint32_t i = 0; i < half; i++) {
        const double angle = pos * pow(theta_base, -2.0 * i / rope_dim);
        const double c = cos(angle), s = sin(angle);
        const double a = x[2 * i], b = x[2 * i + 1];
        x[2 * i] = a * c - b * s;
        x[2 * i + 1] = a * s + b * c;
    }
}

void ft_ref_softmax(double *x, uint32_t n)
{
    double mx = x[0];
    for (uint32_t i = 1; i < n; i++)
        if (x[i] > mx) mx = x[i];
    double sum = 0.0;
    for (uint32_t i = 0; i < n; i++) {
        x[i] = exp(x[i] - mx);
        sum += x[i];
    }
    for (uint32_t i = 0; i < n; i++)
        x[i] /= sum;
}

double ft_ref_silu(double x)
{
    return x / (1.0 + exp(-x));
}

void ft_ref_topk(const double *p, uint32_t n, uint32_t k, uint32_t *out_idx)
{
    /* Selection: pick the best remaining index k times. O(n k), fine for
     * the experts of a test model. */
    for (uint32_t j = 0; j < k; j++) {
        int64_t best = -1;
        for (uint32_t i = 0; i < n; i++) {
            int taken = 0;
            for (uint32_t t = 0; t < j; t++)
                taken |= out_idx[t] == i;
            if (!taken && (best < 0 || p[i] > p[best])) /* strict: ties keep the lower index */
                best = i;
        }
        out_idx[j] = (uint32_t)best;
    }
}

uint32_t ft_ref_argmax_d(const double *x, uint32_t n)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

uint32_t ft_ref_argmax_f(const float *x, uint32_t n)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

double ft_ref_rel_err(const float *a, const double *r, uint32_t n)
{
    double max_diff = 0.0, max_ref = 0.0;
    for (uint32_t i = 0; i < n; i++) {
        const double d = fabs((double)a[i] - r[i]);
        if (isnan(d)) return INFINITY; /* a NaN logit is never within tolerance */
        if (d > max_diff) max_diff = d;
        if (fabs(r[i]) > max_ref) max_ref = fabs(r[i]);
    }
    if (max_ref == 0.0) return max_diff == 0.0 ? 0.0 : INFINITY;
    return max_diff / max_ref;
}
