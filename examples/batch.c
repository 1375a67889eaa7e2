/* batch: several prompts at once, each in its own session, through the
 * engine's scheduler. Every request is submitted before any is read, so
 * the scheduler interleaves them in its steps; this thread then streams
 * each request's tokens as they come (ft_request_next), whole UTF-8
 * characters at a time.
 *
 *   batch BUNDLE N_TOKENS PROMPT...
 *
 * Greedy (temperature 0): each prompt's continuation is what
 * `ft run BUNDLE -p PROMPT -n N_TOKENS --temp 0` prints for it alone. One
 * line a prompt, in the order given ("[i] text"); the speed of all the
 * sessions together goes to stderr. */
#include "freetoken.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_PROMPTS = 16 };

typedef struct job {
    ft_session_t *session;
    ft_sampler_t *sampler;
    ft_detokenizer_t *detok;
    ft_request_t *request;
    int32_t *prompt;
    uint32_t n_prompt, n_gen;
    char *text; /* the continuation so far, NUL-terminated */
    size_t n_text, cap_text;
} job_t;

static double now_seconds(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int fail(ft_status_t st)
{
    fprintf(stderr, "batch: %s: %s\n", ft_status_code_name(ft_status_code(st)),
            ft_status_message(st));
    ft_status_free(st);
    return 1;
}

static ft_status_t append(job_t *j, const char *s, size_t n)
{
    if (j->n_text + n + 1 > j->cap_text) {
        size_t cap = (j->n_text + n + 1) * 2;
        char *p = realloc(j->text, cap);
        if (!p) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
        j->text = p, j->cap_text = cap;
    }
    memcpy(j->text + j->n_text, s, n);
    j->n_text += n;
    j->text[j->n_text] = '\0';
    return FT_OK;
}

/* Session, sampler, detokenizer and prompt of one job, then its request. */
static ft_status_t submit(ft_engine_t *engine, const char *prompt, uint32_t n_predict, job_t *j)
{
    ft_sampler_options_t so;
    ft_sampler_options_init(&so);
    so.temperature = 0.0f;
    so.seed = 42;
    ft_status_t st;
    if ((st = ft_session_create(engine, NULL, &j->session)) ||
        (st = ft_sampler_create(&so, ft_engine_info(engine)->vocab_size, &j->sampler)) ||
        (st = ft_detokenizer_create(engine, &j->detok)) ||
        (st = ft_engine_tokenize(engine, prompt, strlen(prompt), FT_TOKENIZE_ADD_BOS, &j->prompt,
                                 &j->n_prompt)))
        return st;
    ft_request_options_t ro;
    ft_request_options_init(&ro); /* stops at an end-of-generation token */
    ro.tokens = j->prompt;
    ro.n_tokens = j->n_prompt;
    ro.max_new_tokens = n_predict;
    ro.sampler = j->sampler;
    return ft_request_submit(j->session, &ro, &j->request);
}

/* Reads one request's tokens until it has finished. */
static ft_status_t stream(ft_engine_t *engine, job_t *j)
{
    ft_status_t st = append(j, "", 0);
    const char *text;
    size_t n_text;
    for (;;) {
        ft_sample_t sample;
        int got = 0;
        if (st || (st = ft_request_next(j->request, 1, &sample, &got)) || !got) break;
        if (ft_engine_is_eog(engine, sample.token)) continue; /* the last token; not shown */
        j->n_gen++;
        if (!(st = ft_detokenizer_feed(j->detok, sample.token, &text, &n_text)))
            st = append(j, text, n_text);
    }
    if (!st) st = ft_request_wait(j->request);
    if (!st && !(st = ft_detokenizer_flush(j->detok, &text, &n_text))) st = append(j, text, n_text);
    return st;
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc - 3 > MAX_PROMPTS) {
        fprintf(stderr, "usage: %s BUNDLE N_TOKENS PROMPT... (at most %d prompts)\n", argv[0],
                MAX_PROMPTS);
        return 2;
    }
    const uint32_t n_predict = (uint32_t)strtoul(argv[2], NULL, 10);
    const int n_jobs = argc - 3;
    job_t jobs[MAX_PROMPTS];
    memset(jobs, 0, sizeof(jobs));

    ft_engine_options_t eo;
    ft_engine_options_init(&eo); /* the cpu backend, one thread per CPU */
    ft_engine_t *engine = NULL;
    ft_status_t st = ft_engine_open(argv[1], &eo, &engine);
    if (st) return fail(st);

    const double t0 = now_seconds();
    for (int i = 0; i < n_jobs && !st; i++)
        st = submit(engine, argv[3 + i], n_predict, &jobs[i]);
    uint32_t n_tokens = 0;
    for (int i = 0; i < n_jobs && !st; i++) {
        st = stream(engine, &jobs[i]);
        n_tokens += jobs[i].n_prompt + jobs[i].n_gen;
    }
    const double dt = now_seconds() - t0;
    for (int i = 0; i < n_jobs && !st; i++)
        printf("[%d] %s\n", i, jobs[i].text);
    if (!st)
        fprintf(stderr, "[%d sessions: %u tokens evaluated or generated in %.2f s, %.1f tok/s]\n",
                n_jobs, n_tokens, dt, dt > 0 ? n_tokens / dt : 0.0);

    for (int i = 0; i < n_jobs; i++) {
        if (jobs[i].request) { /* after an error some may still run: stop them first */
            ft_request_cancel(jobs[i].request);
            ft_status_t ws = ft_request_wait(jobs[i].request);
            if (ws) ft_status_free(ws);
            ft_request_release(jobs[i].request);
        }
        ft_sampler_destroy(jobs[i].sampler); /* the scheduler is done with it */
        ft_engine_free(engine, jobs[i].prompt);
        ft_detokenizer_destroy(jobs[i].detok);
        ft_session_destroy(jobs[i].session);
        free(jobs[i].text);
    }
    ft_status_t cs = ft_engine_close(engine); /* every session is gone: FT_OK */
    if (cs && !st)
        st = cs;
    else if (cs)
        ft_status_free(cs);
    return st ? fail(st) : 0;
}
