/* The cmocka side of ref_greedy.h: runs an engine against the reference
 * and fails the test unless every prompt position's logits are within tol
 * (normalized error) with the reference's argmax, every greedy step's too,
 * and every greedy token equals the reference's. Include after cmocka.h. */
#ifndef FT_REF_GREEDY_CHECK_H
#define FT_REF_GREEDY_CHECK_H

#include "ref_bundle.h"
#include "ref_check.h"
#include "ref_greedy.h"

#include <stdlib.h>
#include <string.h>

/* Returns the engine's prompt logits (free()) when keep_prompt, else NULL. */
static inline float *ft_ref_expect_greedy(const char *bundle, const ft_engine_options_t *eo, uint32_t n_ctx,
                                          const int32_t *prompt, const ft_ref_greedy_t *ref, double tol,
                                          const char *name, int keep_prompt)
{
    ft_ref_greedy_run_t r;
    FT_REF_OK(ft_ref_greedy_engine(bundle, eo, n_ctx, prompt, ref, &r));
    print_message("%s: prompt error %.3g (top-1 %u/%u), decode-step error %.3g\n", name, r.prompt_err,
                  r.top1_agree, ref->n_prompt, r.step_err);
    if (r.first_diff >= 0)
        fail_msg("%s: greedy token %d: runtime %d, reference %d", name, r.first_diff, r.got, r.want);
    assert_true(r.prompt_err <= tol);
    assert_int_equal(r.top1_agree, ref->n_prompt);
    assert_true(r.step_err <= tol);
    if (keep_prompt) return r.prompt;
    free(r.prompt);
    return NULL;
}

/* src compiled for the fake driver's sm_90 into bundle (ft_ref_build_cuda_bundle)
 * must be refused at open on the cuda backend (64 MiB, n_ctx tokens of
 * plan context) with a message holding both needles (what has no CUDA
 * kernel, and where). The caller skips where the fake driver or NVRTC is
 * missing. */
static inline void ft_ref_expect_cuda_refusal(const char *src, const char *bundle, uint32_t n_ctx,
                                              const char *where, const char *what)
{
    FT_REF_OK(ft_ref_build_cuda_bundle(src, bundle));
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = FT_BACKEND_CUDA;
    eo.vram_bytes = 64ull << 20;
    eo.plan_ctx = n_ctx;
    ft_engine_t *e = NULL;
    ft_status_t st = ft_engine_open(bundle, &eo, &e);
    assert_non_null(st);
    assert_null(e);
    print_message("refused: %s\n", ft_status_message(st));
    assert_non_null(strstr(ft_status_message(st), where));
    assert_non_null(strstr(ft_status_message(st), what));
    ft_status_free(st);
}

#endif
