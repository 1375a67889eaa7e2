/* ref_mla.h: the two forms of latent attention and RoPE, in double, one
 * line of math at a time. */
#include "ref_mla.h"

#include <math.h>
#include <stdlib.h>

/* softmax of s [n] in place */
static void ref_mla_softmax(double *s, uint32_t n)
{
    double mx = -INFINITY, sum = 0.0;
    for (uint32_t j = 0; j < n; j++)
        mx = s[j] > mx ? s[j] : mx;
    for (uint32_t j = 0; j < n; j++)
        sum += s[j] = exp(s[j] - mx);
    for (uint32_t j = 0; j < n; j++)
        s[j] /= sum;
}

int ft_ref_mla_head_expanded(const ft_ref_mla_dims_t *dm, const double *wkb_h, const double *wvb_h,
                             const double *q, const double *rows, uint32_t n_pos, double *out)
{
    const uint32_t r = dm->kv_lora, row = r + dm->rope;
    double *s = malloc(((size_t)n_pos + 1) * sizeof(double));
    if (!s) return 0;
    for (uint32_t j = 0; j < n_pos; j++) {
        const double *c = rows + (size_t)j * row, *kr = c + r;
        double dot = 0.0;
        for (uint32_t i = 0; i < dm->nope; i++) { /* k_nope_i = W_kb row i . c */
            double k = 0.0;
            for (uint32_t a = 0; a < r; a++)
                k += wkb_h[(size_t)i * r + a] * c[a];
            dot += q[i] * k;
        }
        for (uint32_t i = 0; i < dm->rope; i++)
            dot += q[dm->nope + i] * kr[i];
        s[j] = dot * dm->scale;
    }
    ref_mla_softmax(s, n_pos);
    for (uint32_t i = 0; i < dm->v; i++)
        out[i] = 0.0;
    for (uint32_t j = 0; j < n_pos; j++) {
        const double *c = rows + (size_t)j * row;
        for (uint32_t i = 0; i < dm->v; i++) { /* v_i = W_vb row i . c */
            double v = 0.0;
            for (uint32_t a = 0; a < r; a++)
                v += wvb_h[(size_t)i * r + a] * c[a];
            out[i] += s[j] * v;
        }
    }
    free(s);
    return 1;
}

int ft_ref_mla_head_absorbed(const ft_ref_mla_dims_t *dm, const double *wkb_h, const double *wvb_h,
                             const double *q, const double *rows, uint32_t n_pos, double *out)
{
    const uint32_t r = dm->kv_lora, row = r + dm->rope;
    double *s = malloc(((size_t)n_pos + 2 * (size_t)r + 1) * sizeof(double));
    if (!s) return 0;
    double *qc = s + n_pos, *oc = qc + r;
    for (uint32_t a = 0; a < r; a++) { /* qc = W_kb^T q_nope */
        qc[a] = 0.0;
        for (uint32_t i = 0; i < dm->nope; i++)
            qc[a] += wkb_h[(size_t)i * r + a] * q[i];
    }
    for (uint32_t j = 0; j < n_pos; j++) {
        const double *c = rows + (size_t)j * row, *kr = c + r;
        double dot = 0.0;
        for (uint32_t a = 0; a < r; a++)
            dot += qc[a] * c[a];
        for (uint32_t i = 0; i < dm->rope; i++)
            dot += q[dm->nope + i] * kr[i];
        s[j] = dot * dm->scale;
    }
    ref_mla_softmax(s, n_pos);
    for (uint32_t a = 0; a < r; a++) {
        oc[a] = 0.0;
        for (uint32_t j = 0; j < n_pos; j++)
            oc[a] += s[j] * rows[(size_t)j * row + a];
    }
    for (uint32_t i = 0; i < dm->v; i++) { /* o = W_vb oc */
        out[i] = 0.0;
        for (uint32_t a = 0; a < r; a++)
            out[i] += wvb_h[(size_t)i * r + a] * oc[a];
    }
    free(s);
    return 1;
}

void ft_ref_mla_rope(double *x, uint32_t rope_dim, int interleaved, uint32_t pos, double theta, double factor,
                     uint32_t orig_ctx, double beta_fast, double beta_slow, double mscale)
{
    const double d = rope_dim, pi = 3.14159265358979323846;
    double low = 0.0, high = 0.0;
    if (factor != 0.0) {
        low = fmax(0.0, floor(d * log(orig_ctx / (beta_fast * 2.0 * pi)) / (2.0 * log(theta))));
        high = fmin(d - 1.0, ceil(d * log(orig_ctx / (beta_slow * 2.0 * pi)) / (2.0 * log(theta))));
    }
    const uint32_t half = rope_dim / 2;
    for (uint32_t i = 0; i < half; i++) {
        const double extrap = pow(theta, -2.0 * i / d);
        double f = extrap;
        if (factor != 0.0) {
            const double y = fmin(1.0, fmax(0.0, (i - low) / fmax(0.001, high - low)));
            f = extrap / factor * y + extrap * (1.0 - y);
        }
        const double angle = pos * f, c = cos(angle) * mscale, sn = sin(angle) * mscale;
        const uint32_t ia = interleaved ? 2 * i : i, ib = interleaved ? 2 * i + 1 : i + half;
        const double a = x[ia], b = x[ib];
        x[ia] = a * c - b * sn;
        x[ib] = a * sn + b * c;
    }
}
