#include "ref_runtime.h"

#include "ref_ops.h"

#include <stddef.h>

ft_status_t ft_ref_runtime_logits(const char *bundle, uint32_t n_ctx, uint32_t n_batch,
                                  uint32_t step, const int32_t *tokens, uint32_t n, float *out)
{
    return ft_ref_runtime_logits_k(bundle, FT_KERNELS_AUTO, n_ctx, n_batch, step, tokens, n, out);
}

ft_status_t ft_ref_runtime_logits_k(const char *bundle, int kernels, uint32_t n_ctx, uint32_t n_batch,
                                    uint32_t step, const int32_t *tokens, uint32_t n, float *out)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.kernels = kernels;
    ft_engine_t *e = NULL;
    ft_session_t *s = NULL;
    ft_status_t st = ft_engine_open(bundle, &eo, &e);
    if (st) return st;
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = n_ctx;
    so.n_batch = n_batch;
    if ((st = ft_session_create(e, &so, &s))) goto out;
    const uint32_t V = ft_engine_info(e)->vocab_size;
    if (step == 0) step = n;
    for (uint32_t i = 0; i < n && !st; i += step) {
        const uint32_t k = n - i < step ? n - i : step;
        st = ft_session_eval(s, tokens + i, k, out + (size_t)i * V);
    }
out:
    if (s) ft_session_destroy(s);
    ft_engine_close(e);
    return st;
}

ft_ref_cmp_t ft_ref_compare(const float *a, const double *r, uint32_t n_pos, uint32_t n_vocab)
{
    ft_ref_cmp_t c = {0, 0, 0};
    for (uint32_t p = 0; p < n_pos; p++) {
        const float *ap = a + (size_t)p * n_vocab;
        const double *rp = r + (size_t)p * n_vocab;
        const double err = ft_ref_rel_err(ap, rp, n_vocab);
        if (err > c.max_err || p == 0) {
            c.max_err = err;
            c.worst_pos = p;
        }
        c.n_top1_agree += ft_ref_argmax_f(ap, n_vocab) == ft_ref_argmax_d(rp, n_vocab);
    }
    return c;
}
