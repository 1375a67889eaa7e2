/* generate: open a compiled bundle, tokenize a prompt, run it through the
 * model and stream the continuation to stdout, one sampled token at a time.
 *
 *   generate BUNDLE PROMPT [N_TOKENS [TEMPERATURE]]
 *
 * N_TOKENS: at most this many tokens (default 32); TEMPERATURE: 0 is greedy
 * (default: the sampler's, 0.8). The speed goes to stderr. */
#include "freetoken.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_seconds(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Prints the error, frees it, returns 1 (the exit status). */
static int fail(ft_status_t st)
{
    fprintf(stderr, "generate: %s: %s\n", ft_status_code_name(ft_status_code(st)),
            ft_status_message(st));
    ft_status_free(st);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: %s BUNDLE PROMPT [N_TOKENS [TEMPERATURE]]\n", argv[0]);
        return 2;
    }
    const uint32_t n_predict = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 32;

    ft_engine_options_t eo;
    ft_engine_options_init(&eo); /* the cpu backend, one thread per CPU */
    ft_engine_t *engine = NULL;
    ft_status_t st = ft_engine_open(argv[1], &eo, &engine);
    if (st) return fail(st);

    ft_sampler_options_t so;
    ft_sampler_options_init(&so);
    if (argc > 4) so.temperature = strtof(argv[4], NULL);
    so.seed = 42;

    ft_session_t *session = NULL;
    ft_sampler_t *sampler = NULL;
    ft_detokenizer_t *detok = NULL;
    int32_t *prompt = NULL, *ids = NULL;
    uint32_t n_prompt = 0, n_ids = 0, n_gen = 0;
    double t_prefill = 0, t_decode = 0;
    if ((st = ft_session_create(engine, NULL, &session)) ||
        (st = ft_sampler_create(&so, ft_engine_info(engine)->vocab_size, &sampler)) ||
        (st = ft_detokenizer_create(engine, &detok)) ||
        (st = ft_engine_tokenize(engine, argv[2], strlen(argv[2]), FT_TOKENIZE_ADD_BOS, &prompt,
                                 &n_prompt)))
        goto out;
    if (n_prompt == 0 || n_prompt + n_predict > ft_session_n_ctx(session)) {
        st = ft_status_make(FT_STATUS_OUT_OF_RANGE,
                            "%u prompt tokens and %u more do not fit %u of context", n_prompt,
                            n_predict, ft_session_n_ctx(session));
        goto out;
    }
    /* The history the sampler's repeat penalty looks at: prompt, then output. */
    if (!(ids = malloc((size_t)(n_prompt + n_predict) * sizeof(int32_t)))) {
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    memcpy(ids, prompt, n_prompt * sizeof(int32_t));
    n_ids = n_prompt;

    double t0 = now_seconds();
    if ((st = ft_session_eval(session, prompt, n_prompt, NULL))) /* prefill */
        goto out;
    t_prefill = now_seconds() - t0;
    t0 = now_seconds();
    const char *text;
    size_t n_text;
    while (n_gen < n_predict) {
        ft_sample_t sample;
        if ((st = ft_sampler_next(sampler, ft_session_logits(session), ids, n_ids, &sample)))
            goto out;
        if (ft_engine_is_eog(engine, sample.token)) break;
        ids[n_ids++] = sample.token;
        n_gen++;
        /* Only whole UTF-8 characters come out; a split one waits. */
        if ((st = ft_detokenizer_feed(detok, sample.token, &text, &n_text))) goto out;
        fwrite(text, 1, n_text, stdout);
        fflush(stdout);
        if (n_gen < n_predict &&
            (st = ft_session_eval(session, &sample.token, 1, NULL))) /* decode */
            goto out;
    }
    t_decode = now_seconds() - t0;
    if ((st = ft_detokenizer_flush(detok, &text, &n_text))) goto out;
    fwrite(text, 1, n_text, stdout);
    fprintf(stderr, "\n[%u prompt tokens at %.1f tok/s, %u generated at %.1f tok/s]\n", n_prompt,
            t_prefill > 0 ? n_prompt / t_prefill : 0.0, n_gen,
            t_decode > 0 ? n_gen / t_decode : 0.0);

out:
    free(ids);
    ft_engine_free(engine, prompt);
    ft_detokenizer_destroy(detok);
    ft_sampler_destroy(sampler);
    ft_session_destroy(session);
    ft_engine_close(engine);
    return st ? fail(st) : 0;
}
