/* The scheduler's concurrency contract (freetoken.h, "Threads" and
 * "Requests"): several threads submitting to one engine, synchronously and
 * asynchronously, sessions finishing in any order, each session's results
 * bit-identical to running it alone (cpu and sim backends); cancellation
 * mid-prefill and mid-decode; the queue limit; the session token limit;
 * close refused while sessions are live; session refcounts.
 *
 * Where a test needs the scheduler held still (so that what shares a step
 * is known), a "gate" request's callback blocks the scheduler's thread
 * until the test opens the gate: no timing is assumed anywhere. Label
 * "concurrent": the ThreadSanitizer job (scripts/test.sh) runs these. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ref_bundle.h"
#include "ref_check.h"
#include "test_tmp.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_SESS 4
#define N_CTX 96
#define MAX_PROMPT 40
#define MAX_GEN 12
#define TOP_N 4

static char g_bundle[4096];
static const char *g_laptop = FT_SOURCE_DIR "/hwprofiles/presets/rtx4060_laptop.textproto";

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.seed = 33;
    o.format = FT_DTYPE_Q8_0;
    ft_status_t st = ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_INVALID,
                                         ft_test_tmpdir("sched"), g_bundle, sizeof(g_bundle));
    if (st) {
        fprintf(stderr, "%s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    return 0;
}

static ft_engine_t *open_engine(ft_backend_kind_t backend, uint32_t max_queued,
                                uint32_t max_running)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = backend;
    eo.n_threads = 2;
    eo.plan_ctx = N_CTX;
    if (backend == FT_BACKEND_SIM) {
        eo.hw_profile = g_laptop;
        eo.vram_bytes = 2250ull << 10; /* a few expert slots: misses on both paths */
    }
    if (max_queued) eo.max_queued = max_queued;
    if (max_running) eo.max_running = max_running;
    ft_engine_t *e = NULL;
    FT_REF_OK(ft_engine_open(g_bundle, &eo, &e));
    return e;
}

static ft_session_t *new_session(ft_engine_t *e, uint32_t n_batch, uint64_t max_tokens)
{
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = N_CTX;
    so.n_batch = n_batch;
    so.max_tokens = max_tokens;
    ft_session_t *s = NULL;
    FT_REF_OK(ft_session_create(e, &so, &s));
    return s;
}

static void close_engine(ft_engine_t *e)
{
    FT_REF_OK(ft_engine_close(e));
}

/* Session i's work: its own prompt length, batch and generation length, so
 * that sessions finish in different orders. */
typedef struct job {
    uint32_t n_prompt, n_batch, n_gen;
    int32_t prompt[MAX_PROMPT];
    /* results */
    float *prompt_logits; /* n_prompt x vocab */
    int32_t tokens[MAX_GEN];
    ft_sample_t samples[MAX_GEN];
    uint32_t n_made;
    ft_engine_t *e;
    int async;
} job_t;

static void job_init(job_t *j, int i, uint32_t vocab)
{
    memset(j, 0, sizeof(*j));
    j->n_prompt = 9 + 10 * (uint32_t)i % 31;
    j->n_batch = 3 + (uint32_t)i * 2;
    j->n_gen = MAX_GEN - 2 * (uint32_t)(i % 3);
    for (uint32_t t = 0; t < j->n_prompt; t++)
        j->prompt[t] = (int32_t)((t * 41 + (uint32_t)i * 97 + 5) % (vocab - 16));
    j->prompt_logits = malloc((size_t)j->n_prompt * vocab * sizeof(float));
    assert_non_null(j->prompt_logits);
}

static ft_sampler_t *greedy(uint32_t vocab)
{
    ft_sampler_options_t so;
    ft_sampler_options_init(&so);
    so.temperature = 0;
    so.top_logprobs = TOP_N;
    ft_sampler_t *smp = NULL;
    FT_REF_OK(ft_sampler_create(&so, vocab, &smp));
    return smp;
}

/* The synchronous way: ft_session_eval and ft_sampler_next, as ft run. */
static void run_sync(job_t *j)
{
    const uint32_t vocab = ft_engine_info(j->e)->vocab_size;
    ft_session_t *s = new_session(j->e, j->n_batch, 0);
    ft_sampler_t *smp = greedy(vocab);
    int32_t hist[N_CTX];
    memcpy(hist, j->prompt, j->n_prompt * sizeof(int32_t));
    FT_REF_OK(ft_session_eval(s, j->prompt, j->n_prompt, j->prompt_logits));
    for (uint32_t g = 0; g < j->n_gen; g++) {
        FT_REF_OK(
            ft_sampler_next(smp, ft_session_logits(s), hist, ft_session_n_past(s), &j->samples[g]));
        j->tokens[g] = j->samples[g].token;
        j->n_made++;
        if (ft_engine_is_eog(j->e, j->tokens[g]) || g + 1 == j->n_gen) break;
        hist[ft_session_n_past(s)] = j->tokens[g];
        FT_REF_OK(ft_session_eval(s, &j->tokens[g], 1, NULL));
    }
    ft_sampler_destroy(smp);
    ft_session_destroy(s);
}

/* The asynchronous way: one request, tokens taken as they stream. */
static void run_async(job_t *j)
{
    const uint32_t vocab = ft_engine_info(j->e)->vocab_size;
    ft_session_t *s = new_session(j->e, j->n_batch, 0);
    ft_sampler_t *smp = greedy(vocab);
    ft_request_options_t ro;
    ft_request_options_init(&ro);
    ro.tokens = j->prompt;
    ro.n_tokens = j->n_prompt;
    ro.out_all_logits = j->prompt_logits;
    ro.max_new_tokens = j->n_gen;
    ro.sampler = smp;
    ft_request_t *r = NULL;
    FT_REF_OK(ft_request_submit(s, &ro, &r));
    ft_session_destroy(s); /* the request keeps it alive */
    int got = 1;
    while (got) {
        ft_sample_t smpl;
        FT_REF_OK(ft_request_next(r, 1, &smpl, &got));
        if (got) {
            assert_true(j->n_made < MAX_GEN);
            j->samples[j->n_made] = smpl;
            j->tokens[j->n_made++] = smpl.token;
        }
    }
    FT_REF_OK(ft_request_wait(r));
    const ft_finish_reason_t why = ft_request_finish_reason(r);
    assert_true(why == FT_FINISH_LENGTH || why == FT_FINISH_EOG);
    assert_int_equal(ft_request_n_generated(r), j->n_made);
    ft_request_release(r);
    ft_sampler_destroy(smp);
}

static void *job_thread(void *arg)
{
    job_t *j = arg;
    if (j->async)
        run_async(j);
    else
        run_sync(j);
    return NULL;
}

static void expect_same_job(const job_t *a, const job_t *b, uint32_t vocab)
{
    assert_int_equal(a->n_made, b->n_made);
    assert_memory_equal(a->tokens, b->tokens, a->n_made * sizeof(int32_t));
    for (uint32_t i = 0; i < a->n_made; i++) { /* top[] past n_top is not written */
        const ft_sample_t *x = &a->samples[i], *y = &b->samples[i];
        assert_int_equal(x->n_top, y->n_top);
        assert_memory_equal(&x->logprob, &y->logprob, sizeof(float));
        assert_memory_equal(x->top, y->top, x->n_top * sizeof(ft_token_logprob_t));
    }
    assert_memory_equal(a->prompt_logits, b->prompt_logits,
                        (size_t)a->n_prompt * vocab * sizeof(float));
}

/* N_SESS threads on one engine, sync or async, against each alone. */
static void many_threads(ft_backend_kind_t backend, int async)
{
    job_t alone[N_SESS], together[N_SESS];
    ft_engine_t *e = open_engine(backend, 0, 0);
    const uint32_t vocab = ft_engine_info(e)->vocab_size;
    for (int i = 0; i < N_SESS; i++) {
        job_init(&alone[i], i, vocab);
        job_init(&together[i], i, vocab);
        alone[i].e = e; /* one at a time: nothing shares its steps */
        run_sync(&alone[i]);
    }
    close_engine(e);
    e = open_engine(backend, 0, 0);
    pthread_t th[N_SESS];
    for (int i = 0; i < N_SESS; i++) {
        together[i].e = e;
        together[i].async = async;
        assert_int_equal(pthread_create(&th[i], NULL, job_thread, &together[i]), 0);
    }
    for (int i = 0; i < N_SESS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    close_engine(e);
    for (int i = 0; i < N_SESS; i++) {
        expect_same_job(&alone[i], &together[i], vocab);
        free(alone[i].prompt_logits);
        free(together[i].prompt_logits);
    }
}

static void test_threads_sync_cpu(void **state)
{
    (void)state;
    many_threads(FT_BACKEND_CPU, 0);
}
static void test_threads_async_cpu(void **state)
{
    (void)state;
    many_threads(FT_BACKEND_CPU, 1);
}
static void test_threads_async_sim(void **state)
{
    (void)state;
    many_threads(FT_BACKEND_SIM, 1);
}

/* ---- the gate: a request whose first token's callback holds the scheduler ---- */

typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int entered, open;
    ft_session_t *s;
    ft_sampler_t *smp;
    ft_request_t *r;
} gate_t;

static void gate_cb(void *user, ft_request_t *r, const ft_sample_t *sample, uint32_t index)
{
    (void)r;
    (void)index;
    gate_t *g = user;
    if (!sample) return;
    pthread_mutex_lock(&g->mu);
    g->entered = 1;
    pthread_cond_broadcast(&g->cv);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

/* Submits the gate's request and returns once the scheduler is held in it. */
static void gate_close(gate_t *g, ft_engine_t *e)
{
    memset(g, 0, sizeof(*g));
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->s = new_session(e, 8, 0);
    g->smp = greedy(ft_engine_info(e)->vocab_size);
    const int32_t t[2] = {7, 8};
    ft_request_options_t ro;
    ft_request_options_init(&ro);
    ro.tokens = t;
    ro.n_tokens = 2;
    ro.max_new_tokens = 1;
    ro.sampler = g->smp;
    ro.on_token = gate_cb;
    ro.user = g;
    FT_REF_OK(ft_request_submit(g->s, &ro, &g->r));
    pthread_mutex_lock(&g->mu);
    while (!g->entered)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

static void gate_open(gate_t *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    FT_REF_OK(ft_request_wait(g->r));
    ft_request_release(g->r);
    ft_session_destroy(g->s);
    ft_sampler_destroy(g->smp);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
}

/* ---- cancellation ---------------------------------------------------------- */

typedef struct canceller {
    ft_request_t *victim; /* cancelled at this request's token `at` */
    uint32_t at;
} canceller_t;

static void cancel_cb(void *user, ft_request_t *r, const ft_sample_t *sample, uint32_t index)
{
    canceller_t *c = user;
    if (sample && index == c->at) ft_request_cancel(c->victim ? c->victim : r);
}

static void expect_code(ft_status_t st, ft_status_code_t code, const char *needle)
{
    if (!st) fail_msg("expected %s, got ok", ft_status_code_name(code));
    if (ft_status_code(st) != code || !strstr(ft_status_message(st), needle))
        fail_msg("expected %s with '%s', got %s: %s", ft_status_code_name(code), needle,
                 ft_status_code_name(ft_status_code(st)), ft_status_message(st));
    print_message("refused (%s): %s\n", ft_status_code_name(code), ft_status_message(st));
    ft_status_free(st);
}

/* Request A prefills 40 tokens in chunks of 4; request B's first token
 * (after its one-chunk prompt, in the same step as A's first chunk) cancels
 * A, and B cancels itself at its third token. Then: A evaluated exactly one
 * chunk, and continuing A by hand gives the logits of running it alone; B
 * made exactly three tokens, those of running it alone. */
static void cancel_mid_prefill_and_decode(ft_backend_kind_t backend)
{
    ft_engine_t *e = open_engine(backend, 0, 0);
    const uint32_t vocab = ft_engine_info(e)->vocab_size;
    job_t a, b;
    job_init(&a, 0, vocab);
    job_init(&b, 1, vocab);
    a.n_prompt = 40;
    for (uint32_t t = 0; t < a.n_prompt; t++)
        a.prompt[t] = (int32_t)((t * 13 + 3) % (vocab - 16));
    free(a.prompt_logits);
    a.prompt_logits = malloc((size_t)a.n_prompt * vocab * sizeof(float));
    a.n_batch = 4;
    a.n_gen = 0;
    b.n_prompt = 6;
    b.n_batch = 8;
    b.n_gen = MAX_GEN;
    job_t b_alone = b;
    b_alone.e = e;
    b_alone.prompt_logits = malloc((size_t)b.n_prompt * vocab * sizeof(float));
    run_sync(&b_alone);
    float *a_alone = malloc((size_t)a.n_prompt * vocab * sizeof(float));
    {
        ft_session_t *s = new_session(e, a.n_batch, 0);
        FT_REF_OK(ft_session_eval(s, a.prompt, a.n_prompt, a_alone));
        ft_session_destroy(s);
    }

    gate_t g;
    gate_close(&g, e);
    ft_session_t *sa = new_session(e, a.n_batch, 0), *sb = new_session(e, b.n_batch, 0);
    ft_sampler_t *smp = greedy(vocab);
    ft_request_options_t ro;
    ft_request_options_init(&ro);
    ro.tokens = a.prompt;
    ro.n_tokens = a.n_prompt;
    ft_request_t *ra = NULL, *rb = NULL;
    FT_REF_OK(ft_request_submit(sa, &ro, &ra));
    canceller_t ca = {ra, 0}, cb = {NULL, 2};
    ft_request_options_init(&ro);
    ro.tokens = b.prompt;
    ro.n_tokens = b.n_prompt;
    ro.max_new_tokens = b.n_gen;
    ro.sampler = smp;
    ro.on_token = cancel_cb;
    ro.user = &ca;
    FT_REF_OK(ft_request_submit(sb, &ro, &rb));
    (void)cb;
    /* While the gate holds the scheduler, the session is busy. */
    expect_code(ft_session_rewind(sa, 0), FT_STATUS_BUSY, "unfinished request");
    gate_open(&g);

    expect_code(ft_request_wait(ra), FT_STATUS_CANCELLED, "cancelled");
    assert_int_equal(ft_request_finish_reason(ra), FT_FINISH_CANCELLED);
    assert_int_equal(ft_session_n_past(sa), 4); /* one chunk, then the cancel */
    FT_REF_OK(
        ft_session_eval(sa, a.prompt + 4, a.n_prompt - 4, a.prompt_logits + 4 * (size_t)vocab));
    assert_memory_equal(a.prompt_logits + 4 * (size_t)vocab, a_alone + 4 * (size_t)vocab,
                        (size_t)(a.n_prompt - 4) * vocab * sizeof(float));
    ft_request_release(ra);

    /* B ran to the end (nothing cancelled it): its tokens are those alone. */
    FT_REF_OK(ft_request_wait(rb));
    int32_t toks[MAX_GEN];
    const uint32_t nb = ft_request_tokens(rb, toks, MAX_GEN);
    assert_int_equal(nb, b_alone.n_made);
    assert_memory_equal(toks, b_alone.tokens, nb * sizeof(int32_t));
    ft_request_release(rb);

    /* Mid-decode: B again from scratch, cancelling itself at its third token. */
    FT_REF_OK(ft_session_rewind(sb, 0));
    ft_sampler_reset(smp);
    ro.user = &cb;
    FT_REF_OK(ft_request_submit(sb, &ro, &rb));
    expect_code(ft_request_wait(rb), FT_STATUS_CANCELLED, "cancelled");
    assert_int_equal(ft_request_finish_reason(rb), FT_FINISH_CANCELLED);
    assert_int_equal(ft_request_tokens(rb, toks, MAX_GEN), 3);
    assert_memory_equal(toks, b_alone.tokens, 3 * sizeof(int32_t));
    /* the third token was sampled, not evaluated */
    assert_int_equal(ft_session_n_past(sb), b.n_prompt + 2);
    ft_request_release(rb);

    ft_sampler_destroy(smp);
    ft_session_destroy(sa);
    ft_session_destroy(sb);
    close_engine(e);
    free(a_alone);
    free(a.prompt_logits);
    free(b.prompt_logits);
    free(b_alone.prompt_logits);
}

static void test_cancel_cpu(void **state)
{
    (void)state;
    cancel_mid_prefill_and_decode(FT_BACKEND_CPU);
}
static void test_cancel_sim(void **state)
{
    (void)state;
    cancel_mid_prefill_and_decode(FT_BACKEND_SIM);
}

/* ---- limits ----------------------------------------------------------------- */

/* max_queued 2, max_running 1: with the scheduler held by the gate, two
 * requests wait and the third is refused; they all run once it opens. A
 * released unfinished request is cancelled and freed by the scheduler. */
static void test_queue_full(void **state)
{
    (void)state;
    ft_engine_t *e = open_engine(FT_BACKEND_CPU, 2, 1);
    gate_t g;
    gate_close(&g, e);
    ft_session_t *s[3] = {new_session(e, 8, 0), new_session(e, 8, 0), new_session(e, 8, 0)};
    const int32_t t[3] = {5, 6, 7};
    ft_request_options_t ro;
    ft_request_options_init(&ro);
    ro.tokens = t;
    ro.n_tokens = 3;
    ft_request_t *r[3] = {NULL, NULL, NULL};
    FT_REF_OK(ft_request_submit(s[0], &ro, &r[0]));
    FT_REF_OK(ft_request_submit(s[1], &ro, &r[1]));
    expect_code(ft_request_submit(s[2], &ro, &r[2]), FT_STATUS_BUSY, "queue is full");
    assert_null(r[2]);
    ft_request_release(r[1]); /* never waited for: cancelled, freed by the scheduler */
    gate_open(&g);
    FT_REF_OK(ft_request_wait(r[0]));
    assert_int_equal(ft_request_finish_reason(r[0]), FT_FINISH_EVALUATED);
    assert_int_equal(ft_session_n_past(s[0]), 3);
    ft_request_release(r[0]);
    FT_REF_OK(ft_request_submit(s[2], &ro, &r[2])); /* room again */
    FT_REF_OK(ft_request_wait(r[2]));
    ft_request_release(r[2]);
    for (int i = 0; i < 3; i++)
        ft_session_destroy(s[i]);
    close_engine(e);
}

/* max_tokens 10: a prompt past it is refused; generation stops there. */
static void test_session_token_limit(void **state)
{
    (void)state;
    ft_engine_t *e = open_engine(FT_BACKEND_CPU, 0, 0);
    const uint32_t vocab = ft_engine_info(e)->vocab_size;
    ft_session_t *s = new_session(e, 8, 10);
    const int32_t t[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    expect_code(ft_session_eval(s, t, 11, NULL), FT_STATUS_OUT_OF_RANGE, "token limit of 10");
    assert_int_equal(ft_session_n_past(s), 0);
    FT_REF_OK(ft_session_eval(s, t, 6, NULL));
    ft_sampler_t *smp = greedy(vocab);
    ft_request_options_t ro;
    ft_request_options_init(&ro);
    ro.max_new_tokens = 20; /* from the logits the session has */
    ro.stop_at_eog = 0;
    ro.sampler = smp;
    ft_request_t *r = NULL;
    FT_REF_OK(ft_request_submit(s, &ro, &r));
    FT_REF_OK(ft_request_wait(r));
    assert_int_equal(ft_request_finish_reason(r), FT_FINISH_LIMIT);
    assert_int_equal(ft_session_n_past(s), 10);     /* 6 + 4 evaluated: the limit */
    assert_int_equal(ft_request_n_generated(r), 5); /* the 5th sampled, not evaluated */
    ft_request_release(r);
    /* a rewind gives nothing back */
    FT_REF_OK(ft_session_rewind(s, 0));
    expect_code(ft_session_eval(s, t, 1, NULL), FT_STATUS_OUT_OF_RANGE, "token limit");
    ft_sampler_destroy(smp);
    ft_session_destroy(s);
    close_engine(e);
}

/* ---- lifetimes ----------------------------------------------------------------- */

static void test_close_with_live_sessions(void **state)
{
    (void)state;
    ft_engine_t *e = open_engine(FT_BACKEND_CPU, 0, 0);
    ft_session_t *s = new_session(e, 8, 0);
    ft_session_retain(s); /* two owners */
    expect_code(ft_engine_close(e), FT_STATUS_BUSY, "1 session is still live");
    const int32_t t[3] = {5, 6, 7};
    FT_REF_OK(ft_session_eval(s, t, 3, NULL)); /* still open and usable */
    ft_session_destroy(s);
    expect_code(ft_engine_close(e), FT_STATUS_BUSY, "still live");
    FT_REF_OK(ft_session_eval(s, t, 3, NULL)); /* the second owner's */
    assert_int_equal(ft_session_n_past(s), 6);

    /* a request keeps its session alive after the last destroy */
    ft_request_options_t ro;
    ft_request_options_init(&ro);
    ro.tokens = t;
    ro.n_tokens = 3;
    ft_request_t *r = NULL;
    FT_REF_OK(ft_request_submit(s, &ro, &r));
    ft_session_destroy(s);
    FT_REF_OK(ft_request_wait(r));
    expect_code(ft_engine_close(e), FT_STATUS_BUSY, "1 session is still live");
    ft_request_release(r); /* the last reference: the session goes */
    FT_REF_OK(ft_engine_close(e));
    assert_null(ft_engine_close(NULL));
}

/* Misuse is refused with a status, and a wait from a callback is refused
 * instead of deadlocking. */
typedef struct waiter {
    ft_status_t st_wait, st_eval;
    ft_session_t *s;
} waiter_t;

static void wait_cb(void *user, ft_request_t *r, const ft_sample_t *sample, uint32_t index)
{
    waiter_t *w = user;
    if (!sample || index) return;
    w->st_wait = ft_request_wait(r);
    const int32_t t = 3;
    w->st_eval = ft_session_eval(w->s, &t, 1, NULL);
}

static void test_misuse(void **state)
{
    (void)state;
    ft_engine_t *e = open_engine(FT_BACKEND_CPU, 0, 0);
    const uint32_t vocab = ft_engine_info(e)->vocab_size;
    ft_session_t *s = new_session(e, 8, 0);
    ft_request_options_t ro;
    ft_request_options_init(&ro);
    ft_request_t *r = NULL;
    expect_code(ft_request_submit(s, &ro, &r), FT_STATUS_INVALID_ARGUMENT, "nothing to do");
    ro.max_new_tokens = 2;
    expect_code(ft_request_submit(s, &ro, &r), FT_STATUS_INVALID_ARGUMENT, "needs a sampler");
    const int32_t bad[2] = {1, (int32_t)vocab};
    ro.max_new_tokens = 0;
    ro.tokens = bad;
    ro.n_tokens = 2;
    expect_code(ft_request_submit(s, &ro, &r), FT_STATUS_INVALID_ARGUMENT,
                "outside the vocabulary");
    /* no prompt and no logits yet: refused when it starts */
    ft_sampler_t *smp = greedy(vocab);
    ft_request_options_init(&ro);
    ro.max_new_tokens = 2;
    ro.sampler = smp;
    FT_REF_OK(ft_request_submit(s, &ro, &r));
    expect_code(ft_request_wait(r), FT_STATUS_INVALID_ARGUMENT, "no logits");
    assert_int_equal(ft_request_finish_reason(r), FT_FINISH_ERROR);
    ft_request_release(r);

    waiter_t w = {NULL, NULL, s};
    const int32_t t[2] = {4, 9};
    ro.tokens = t;
    ro.n_tokens = 2;
    ro.on_token = wait_cb;
    ro.user = &w;
    FT_REF_OK(ft_request_submit(s, &ro, &r));
    FT_REF_OK(ft_request_wait(r));
    ft_request_release(r);
    expect_code(w.st_wait, FT_STATUS_INVALID_ARGUMENT, "scheduler's thread");
    expect_code(w.st_eval, FT_STATUS_INVALID_ARGUMENT, "scheduler's thread");
    ft_sampler_destroy(smp);
    ft_session_destroy(s);
    close_engine(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_sync_cpu),
        cmocka_unit_test(test_threads_async_cpu),
        cmocka_unit_test(test_threads_async_sim),
        cmocka_unit_test(test_cancel_cpu),
        cmocka_unit_test(test_cancel_sim),
        cmocka_unit_test(test_queue_full),
        cmocka_unit_test(test_session_token_limit),
        cmocka_unit_test(test_close_with_live_sessions),
        cmocka_unit_test(test_misuse),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
