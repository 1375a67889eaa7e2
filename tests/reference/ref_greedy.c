/* A prompt and its greedy continuation on the reference and an engine
 * (ref_greedy.h). */
#include "ref_greedy.h"

#include "ref_ops.h"

#include <stdlib.h>
#include <string.h>

void ft_ref_greedy_free(ft_ref_greedy_t *g)
{
    free(g->prompt);
    free(g->steps);
    free(g->tokens);
    memset(g, 0, sizeof(*g));
}

double ft_ref_greedy_apart(const ft_ref_greedy_t *a, const ft_ref_greedy_t *b)
{
    const uint32_t V = a->vocab, n = a->n_prompt < b->n_prompt ? a->n_prompt : b->n_prompt;
    float *row = malloc(sizeof(float) * V);
    if (!row) return -1.0;
    double worst = 0;
    for (uint32_t p = 0; p < n; p++) {
        for (uint32_t v = 0; v < V; v++)
            row[v] = (float)a->prompt[(size_t)p * V + v];
        const double err = ft_ref_rel_err(row, b->prompt + (size_t)p * V, V);
        worst = err > worst ? err : worst;
    }
    free(row);
    return worst;
}

ft_status_t ft_ref_greedy_reference(const ft_ref_model_t *m, const int32_t *prompt, uint32_t n_prompt,
                                    uint32_t n_gen, uint32_t n_ctx, ft_ref_greedy_t *out)
{
    memset(out, 0, sizeof(*out));
    const uint32_t V = m->vocab_size;
    out->vocab = V;
    out->n_prompt = n_prompt;
    out->n_gen = n_gen;
    out->prompt = malloc(sizeof(double) * n_prompt * V);
    out->steps = malloc(sizeof(double) * (n_gen ? n_gen : 1) * V);
    out->tokens = malloc(sizeof(int32_t) * (n_gen ? n_gen : 1));
    double *last = malloc(sizeof(double) * V);
    ft_ref_session_t *rs = NULL;
    ft_status_t st = out->prompt && out->steps && out->tokens && last
                         ? ft_ref_session_create(m, n_ctx, &rs)
                         : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "reference: out of memory");
    if (!st) st = ft_ref_session_eval(rs, prompt, n_prompt, out->prompt);
    if (!st) memcpy(last, out->prompt + (size_t)(n_prompt - 1) * V, sizeof(double) * V);
    for (uint32_t i = 0; i < n_gen && !st; i++) {
        memcpy(out->steps + (size_t)i * V, last, sizeof(double) * V);
        out->tokens[i] = (int32_t)ft_ref_argmax_d(last, V);
        st = ft_ref_session_eval(rs, &out->tokens[i], 1, last);
    }
    free(last);
    ft_ref_session_free(rs);
    if (st) ft_ref_greedy_free(out);
    return st;
}

ft_status_t ft_ref_greedy_engine(const char *bundle, const ft_engine_options_t *eo, uint32_t n_ctx,
                                 const int32_t *prompt, const ft_ref_greedy_t *ref, ft_ref_greedy_run_t *out)
{
    memset(out, 0, sizeof(*out));
    out->first_diff = -1;
    const uint32_t V = ref->vocab;
    ft_engine_t *e = NULL;
    ft_session_t *s = NULL;
    ft_status_t st = ft_engine_open(bundle, eo, &e);
    if (!st && ft_engine_info(e)->vocab_size != V)
        st = ft_status_make(FT_STATUS_INTERNAL, "%s: vocabulary of %u, the reference's %u", bundle,
                            ft_engine_info(e)->vocab_size, V);
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = n_ctx;
    if (!st) st = ft_session_create(e, &so, &s);
    out->prompt = malloc(sizeof(float) * ref->n_prompt * V);
    if (!st && !out->prompt) st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!st) st = ft_session_eval(s, prompt, ref->n_prompt, out->prompt);
    for (uint32_t p = 0; p < ref->n_prompt && !st; p++) {
        const double err = ft_ref_rel_err(out->prompt + (size_t)p * V, ref->prompt + (size_t)p * V, V);
        out->prompt_err = err > out->prompt_err ? err : out->prompt_err;
        out->top1_agree +=
            ft_ref_argmax_f(out->prompt + (size_t)p * V, V) == ft_ref_argmax_d(ref->prompt + (size_t)p * V, V);
    }
    for (uint32_t i = 0; i < ref->n_gen && !st; i++) {
        const float *lg = ft_session_logits(s);
        const double err = ft_ref_rel_err(lg, ref->steps + (size_t)i * V, V);
        out->step_err = err > out->step_err ? err : out->step_err;
        const int32_t tok = (int32_t)ft_ref_argmax_f(lg, V);
        if (tok != ref->tokens[i] && out->first_diff < 0) {
            out->first_diff = (int32_t)i;
            out->got = tok;
            out->want = ref->tokens[i];
        }
        st = ft_session_eval(s, &ref->tokens[i], 1, NULL);
    }
    ft_session_destroy(s);
    ft_engine_close(e);
    if (st) {
        free(out->prompt);
        out->prompt = NULL;
    }
    return st;
}
