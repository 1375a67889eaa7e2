/* The Gated DeltaNet kernels (runtime/exec/op_deltanet*.c) on their own,
 * on seeded random inputs of two shapes (4 value heads over 2 key heads of
 * 32, tiled, a conv of 4 taps; 6 over 3 of 16, grouped, 3 taps):
 *
 *  - the sequential kernel (ft_op_deltanet_token) against a float64
 *    recurrence written here from the definition: outputs and final state
 *    within 1e-5 of the largest value (float rounding);
 *  - the chunked form (ft_op_deltanet_prepare + ft_op_deltanet_chunked_head,
 *    chunks of 64) against the sequential kernel over 150 tokens (two full
 *    chunks and a partial one), in one call and split 100 + 50 with the
 *    state carried: THE STATED TOLERANCE of the chunked form is a largest
 *    difference of 1e-5 times the largest value, outputs and state;
 *  - a chunked form that forgets the state between chunks (S0 dropped) is
 *    far outside it, so the comparison can fail. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/exec/ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FT_DN_TOL 1e-5
enum { N_TOK = 150 };

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static float rnd(void) /* roughly N(0, 1) */
{
    float s = 0.0f;
    for (int i = 0; i < 4; i++) {
        g_rng ^= g_rng << 13;
        g_rng ^= g_rng >> 7;
        g_rng ^= g_rng << 17;
        s += (float)(g_rng >> 40) / (float)(1ull << 24);
    }
    return (s - 2.0f) * 1.732f;
}

typedef struct dn_case {
    ft_deltanet_shape_t sh;
    size_t C, Hv, o, state_floats;
    float *conv, *dt, *A, *qkv, *b, *a;
} dn_case_t;

static void case_init(dn_case_t *c, uint32_t hv, uint32_t hk, uint32_t hd, uint32_t k, int tiled)
{
    c->sh = (ft_deltanet_shape_t){hv, hk, hd, k, tiled, 1e-6f};
    c->C = ft_deltanet_channels(&c->sh);
    c->Hv = hv;
    c->o = (size_t)hv * hd;
    c->state_floats = ft_deltanet_state_bytes(&c->sh) / sizeof(float);
    c->conv = malloc(c->C * k * sizeof(float));
    c->dt = malloc(hv * sizeof(float));
    c->A = malloc(hv * sizeof(float));
    c->qkv = malloc(N_TOK * c->C * sizeof(float));
    c->b = malloc(N_TOK * hv * sizeof(float));
    c->a = malloc(N_TOK * hv * sizeof(float));
    assert_true(c->conv && c->dt && c->A && c->qkv && c->b && c->a);
    for (size_t i = 0; i < c->C * k; i++)
        c->conv[i] = rnd() * 0.5f;
    for (size_t h = 0; h < hv; h++) {
        c->dt[h] = rnd() * 0.5f;
        c->A[h] = -expf(rnd() * 0.5f);
    }
    for (size_t i = 0; i < N_TOK * c->C; i++)
        c->qkv[i] = rnd();
    for (size_t i = 0; i < N_TOK * hv; i++) {
        c->b[i] = rnd();
        c->a[i] = rnd() - 2.0f; /* slow decay too: g from about -0.05 to -3 */
    }
}

static void case_free(dn_case_t *c)
{
    free(c->conv);
    free(c->dt);
    free(c->A);
    free(c->qkv);
    free(c->b);
    free(c->a);
}

static void run_sequential(const dn_case_t *c, float *state, float *out)
{
    float *y = malloc(c->C * sizeof(float));
    assert_non_null(y);
    for (size_t t = 0; t < N_TOK; t++)
        ft_op_deltanet_token(&c->sh, c->conv, c->dt, c->A, c->qkv + t * c->C, c->b + t * c->Hv,
                             c->a + t * c->Hv, state, y, out + t * c->o);
    free(y);
}

/* Tokens [t0, t0 + n) in the chunked form; drop_state: S0 forgotten at
 * every chunk (the mutant). */
static void run_chunked(const dn_case_t *c, size_t t0, uint32_t n, float *state, float *out,
                        int drop_state)
{
    float *y = malloc(n * c->C * sizeof(float)), *g = malloc(n * c->Hv * sizeof(float));
    float *beta = malloc(n * c->Hv * sizeof(float));
    float *scratch = malloc(ft_deltanet_chunk_scratch_floats(&c->sh) * sizeof(float));
    assert_true(y && g && beta && scratch);
    ft_op_deltanet_prepare(&c->sh, c->conv, c->dt, c->A, c->qkv + t0 * c->C, c->b + t0 * c->Hv,
                           c->a + t0 * c->Hv, n, state, y, g, beta);
    const size_t S0 = (size_t)(c->sh.conv_kernel - 1) * c->C;
    for (uint32_t at = 0; at < n; at += FT_DELTANET_CHUNK) {
        const uint32_t m = n - at < FT_DELTANET_CHUNK ? n - at : FT_DELTANET_CHUNK;
        if (drop_state) memset(state + S0, 0, (c->state_floats - S0) * sizeof(float));
        for (uint32_t h = 0; h < c->sh.n_v_heads; h++)
            ft_op_deltanet_chunked_head(&c->sh, h, y + (size_t)at * c->C, g + (size_t)at * c->Hv,
                                        beta + (size_t)at * c->Hv, m, state, scratch,
                                        out + (t0 + at) * c->o);
    }
    free(y);
    free(g);
    free(beta);
    free(scratch);
}

/* The largest |a - b| over the largest |b|. */
static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0.0, m = 0.0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        m = fmax(m, fabs((double)b[i]));
    }
    return m > 0.0 ? d / m : d;
}

/* The recurrence from its definition, in double (the sequential kernel's
 * oracle): conv + SiLU, L2 norms, g, beta, S, o. */
static void run_double(const dn_case_t *c, double *out, double *S_out)
{
    const ft_deltanet_shape_t *sh = &c->sh;
    const size_t C = c->C, hd = sh->head_dim, Hk = sh->n_k_heads, Hv = c->Hv, K = sh->conv_kernel;
    double *y = calloc(C, sizeof(double)), *S = calloc(Hv * hd * hd, sizeof(double));
    assert_true(y && S);
    for (size_t t = 0; t < N_TOK; t++) {
        for (size_t ch = 0; ch < C; ch++) {
            double acc = 0.0;
            for (size_t j = 0; j < K; j++) /* tap j reads token t - (K - 1) + j; none before 0 */
                if (t + j >= K - 1)
                    acc += (double)c->conv[ch * K + j] * c->qkv[(t + j - (K - 1)) * C + ch];
            y[ch] = acc / (1.0 + exp(-acc));
        }
        for (size_t h = 0; h < 2 * Hk; h++) {
            double ss = 0.0;
            for (size_t e = 0; e < hd; e++)
                ss += y[h * hd + e] * y[h * hd + e];
            const double nrm = fmax(sqrt(ss), sh->eps);
            for (size_t e = 0; e < hd; e++)
                y[h * hd + e] /= nrm;
        }
        for (size_t h = 0; h < Hv; h++) {
            const size_t kh = sh->heads_tiled ? h % Hk : h / (Hv / Hk);
            const double *q = y + kh * hd, *k = y + (Hk + kh) * hd, *v = y + 2 * Hk * hd + h * hd;
            const double g = c->A[h] * log1p(exp((double)c->a[t * Hv + h] + c->dt[h]));
            const double beta = 1.0 / (1.0 + exp(-(double)c->b[t * Hv + h]));
            double *Sh = S + h * hd * hd;
            for (size_t e = 0; e < hd * hd; e++)
                Sh[e] *= exp(g);
            for (size_t i = 0; i < hd; i++) {
                double sk = 0.0;
                for (size_t j = 0; j < hd; j++)
                    sk += Sh[i * hd + j] * k[j];
                for (size_t j = 0; j < hd; j++)
                    Sh[i * hd + j] += beta * (v[i] - sk) * k[j];
            }
            for (size_t i = 0; i < hd; i++) {
                double o = 0.0;
                for (size_t j = 0; j < hd; j++)
                    o += Sh[i * hd + j] * q[j];
                out[t * c->o + h * hd + i] = o / sqrt((double)hd);
            }
        }
    }
    memcpy(S_out, S, Hv * hd * hd * sizeof(double));
    free(y);
    free(S);
}

static void check_case(uint32_t hv, uint32_t hk, uint32_t hd, uint32_t k, int tiled)
{
    dn_case_t c;
    case_init(&c, hv, hk, hd, k, tiled);
    const size_t n_out = N_TOK * c.o, S0 = (size_t)(k - 1) * c.C, n_s = c.state_floats - S0;
    float *st_seq = calloc(c.state_floats, sizeof(float)),
          *st_ch = calloc(c.state_floats, sizeof(float));
    float *o_seq = malloc(n_out * sizeof(float)), *o_ch = malloc(n_out * sizeof(float));
    float *od = malloc(n_out * sizeof(float)), *sd = malloc(n_s * sizeof(float));
    double *o64 = malloc(n_out * sizeof(double)), *s64 = malloc(n_s * sizeof(double));
    assert_true(st_seq && st_ch && o_seq && o_ch && od && sd && o64 && s64);
    run_sequential(&c, st_seq, o_seq);
    run_double(&c, o64, s64);
    for (size_t i = 0; i < n_out; i++)
        od[i] = (float)o64[i];
    for (size_t i = 0; i < n_s; i++)
        sd[i] = (float)s64[i];
    const double e_seq = rel_diff(o_seq, od, n_out), e_seq_s = rel_diff(st_seq + S0, sd, n_s);
    run_chunked(&c, 0, N_TOK, st_ch, o_ch, 0);
    const double e_ch = rel_diff(o_ch, o_seq, n_out),
                 e_ch_s = rel_diff(st_ch, st_seq, c.state_floats);
    memset(st_ch, 0, c.state_floats * sizeof(float));
    run_chunked(&c, 0, 100, st_ch, o_ch, 0);
    run_chunked(&c, 100, N_TOK - 100, st_ch, o_ch, 0);
    const double e_split =
        fmax(rel_diff(o_ch, o_seq, n_out), rel_diff(st_ch, st_seq, c.state_floats));
    memset(st_ch, 0, c.state_floats * sizeof(float));
    run_chunked(&c, 0, N_TOK, st_ch, o_ch, 1);
    const double e_mutant = rel_diff(o_ch, o_seq, n_out);
    print_message(
        "%u/%u heads of %u, %u taps, %s: sequential vs float64 %.2g (state %.2g); chunked vs "
        "sequential %.2g (state %.2g), split 100 + 50 %.2g; without S0 %.2g\n",
        hv, hk, hd, k, tiled ? "tiled" : "grouped", e_seq, e_seq_s, e_ch, e_ch_s, e_split,
        e_mutant);
    assert_true(e_seq <= FT_DN_TOL && e_seq_s <= FT_DN_TOL);
    assert_true(e_ch <= FT_DN_TOL && e_ch_s <= FT_DN_TOL);
    assert_true(e_split <= FT_DN_TOL);
    assert_true(e_mutant > 100 * FT_DN_TOL);
    free(st_seq);
    free(st_ch);
    free(o_seq);
    free(o_ch);
    free(od);
    free(sd);
    free(o64);
    free(s64);
    case_free(&c);
}

static void test_tiled(void **state)
{
    (void)state;
    check_case(4, 2, 32, 4, 1);
}

static void test_grouped(void **state)
{
    (void)state;
    check_case(6, 3, 16, 3, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_tiled),
                                       cmocka_unit_test(test_grouped)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
