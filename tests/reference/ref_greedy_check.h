/* The cmocka side of ref_greedy.h: runs an engine against the reference
 * and fails the test unless every prompt position's logits are within tol
 * (normalized error) with the reference's argmax, every greedy step's too,
 * and every greedy token equals the reference's. Include after cmocka.h. */
#ifndef FT_REF_GREEDY_CHECK_H
#define FT_REF_GREEDY_CHECK_H

#include "ref_bundle.h"
#include "ref_check.h"
#include "ref_greedy.h"

#include <stdio.h>
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

/* bundle, compiled for the fake driver's sm_90 (ft_ref_build_cuda_bundle
 * or ft_ref_build_cuda_bundle_ir), runs on the cuda backend against the
 * reference (ft_ref_expect_greedy, tolerance tol): with everything
 * resident (64 MiB), and, when small_vram is not 0, with that budget and
 * the preset hw, which must leave experts out of VRAM (the prompt then
 * misses the expert cache: copies into slots, or the CPU). The caller
 * skips where the fake driver or NVRTC is missing and points FT_CUDA_LIB
 * at the fake driver. */
static inline void ft_ref_expect_cuda_runs(const char *bundle, uint32_t n_ctx,
                                           const int32_t *prompt, const ft_ref_greedy_t *ref,
                                           double tol, const char *hw, uint64_t small_vram,
                                           const char *name)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = FT_BACKEND_CUDA;
    eo.vram_bytes = 64ull << 20;
    eo.plan_ctx = n_ctx;
    char what[160];
    snprintf(what, sizeof(what), "%s cuda, all resident", name);
    free(ft_ref_expect_greedy(bundle, &eo, n_ctx, prompt, ref, tol, what, 0));
    if (!small_vram) return;
    eo.hw_profile = hw;
    eo.vram_bytes = small_vram;
    snprintf(what, sizeof(what), "%s cuda, %.0f KiB: experts through slots and the CPU", name,
             small_vram / 1024.0);
    free(ft_ref_expect_greedy(bundle, &eo, n_ctx, prompt, ref, tol, what, 0));
    ft_engine_t *e = NULL;
    FT_REF_OK(ft_engine_open(bundle, &eo, &e));
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = n_ctx;
    ft_session_t *s = NULL;
    FT_REF_OK(ft_session_create(e, &so, &s));
    FT_REF_OK(ft_session_eval(s, prompt, ref->n_prompt, NULL));
    ft_engine_stats_t es;
    ft_engine_stats(e, &es);
    print_message("%s: %u slots, %llu hits, %llu misses (%llu to the CPU)\n", what, es.n_slots,
                  (unsigned long long)es.expert_hits, (unsigned long long)es.expert_misses,
                  (unsigned long long)es.misses_to_cpu);
    assert_true(es.expert_misses > 0);
    ft_session_destroy(s);
    ft_engine_close(e);
}

#endif
