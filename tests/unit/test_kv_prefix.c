/* Paged KV, prefix sharing and semantic anchors through freetoken.h
 * (runtime/kv under the executor and the scheduler), on the tiny fixture
 * (Q8_0 weights, f16 KV), cpu and sim backends. Every comparison is
 * memcmp of logits against a session without prefix_cache that computed
 * the same tokens from scratch:
 *   - a session that attached another's cached prefix;
 *   - restoring an anchor inside a page (tail copied), then evaluating an
 *     edited suffix, and greedy decoding after it;
 *   - the same on a model with Gated DeltaNet layers (qwen35moe), whose
 *     recurrent state only an anchor restores;
 *   - copy on write: two sessions sharing pages, one rewinding into a
 *     shared page and diverging, the other appending;
 *   - eviction under a tiny budget (low priority side sessions evict each
 *     other, not the conversation), and the pool-full error;
 *   - several threads, each with its own sessions sharing one system
 *     prompt, evaluating at once (label "concurrent": the ThreadSanitizer
 *     job runs this). */
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

#define N_CTX 160
#define N_THREADS 3

static char g_bundle[4096];
static char
    g_q35[4096]; /* qwen35moe: Gated DeltaNet layers, whose recurrent state an anchor copies */
static const char *g_laptop = FT_SOURCE_DIR "/hwprofiles/presets/rtx4060_laptop.textproto";
static uint32_t g_vocab;

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.seed = 71;
    o.format = FT_DTYPE_Q8_0;
    ft_status_t st = ft_ref_build_bundle_kv(&o, FT_REF_FROM_GGUF, FT_DTYPE_INVALID, FT_DTYPE_F16,
                                            ft_test_tmpdir("kvprefix"), g_bundle, sizeof(g_bundle));
    if (!st) {
        o.arch = FT_FIXTURE_QWEN35MOE;
        o.name = "freetoken-fixture-qwen35moe";
        o.n_layers = 4;
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s/q35", ft_test_tmpdir("kvprefix"));
        st = ft_ref_build_bundle_kv(&o, FT_REF_FROM_GGUF, FT_DTYPE_INVALID, FT_DTYPE_F16, dir,
                                    g_q35, sizeof(g_q35));
    }
    if (st) {
        fprintf(stderr, "%s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    return 0;
}

static ft_engine_t *open_bundle(const char *bundle, ft_backend_kind_t backend, uint64_t kv_budget);

static ft_engine_t *open_engine(ft_backend_kind_t backend, uint64_t kv_budget)
{
    return open_bundle(g_bundle, backend, kv_budget);
}

static ft_engine_t *open_bundle(const char *bundle, ft_backend_kind_t backend, uint64_t kv_budget)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = backend;
    eo.n_threads = 2;
    eo.plan_ctx = N_CTX;
    eo.kv_budget_bytes = kv_budget;
    if (backend == FT_BACKEND_SIM) {
        eo.hw_profile = g_laptop;
        eo.vram_bytes = 8ull << 20;
    }
    ft_engine_t *e = NULL;
    FT_REF_OK(ft_engine_open(bundle, &eo, &e));
    g_vocab = ft_engine_info(e)->vocab_size;
    return e;
}

static ft_session_t *new_session(ft_engine_t *e, int prefix_cache, int prio, uint32_t n_batch)
{
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = N_CTX;
    so.n_batch = n_batch;
    so.prefix_cache = prefix_cache;
    so.cache_priority = prio;
    ft_session_t *s = NULL;
    FT_REF_OK(ft_session_create(e, &so, &s));
    return s;
}

static void tokens(int32_t *t, uint32_t n, uint32_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (uint32_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        t[i] = (int32_t)(x % (g_vocab - 8)) + 3;
    }
}

/* The last logits of tokens computed from scratch (no cache). */
static float *scratch(ft_engine_t *e, const int32_t *t, uint32_t n)
{
    ft_session_t *s = new_session(e, 0, 0, 0);
    FT_REF_OK(ft_session_eval(s, t, n, NULL));
    float *l = malloc(g_vocab * sizeof(float));
    assert_non_null(l);
    memcpy(l, ft_session_logits(s), g_vocab * sizeof(float));
    ft_session_destroy(s);
    return l;
}

static void same_logits(const ft_session_t *s, const float *want, const char *what)
{
    const float *got = ft_session_logits(s);
    assert_non_null(got);
    if (memcmp(got, want, g_vocab * sizeof(float)))
        fail_msg("%s: logits differ from computing from scratch", what);
}

static int32_t argmax(const float *l)
{
    int32_t best = 0;
    for (uint32_t i = 1; i < g_vocab; i++)
        if (l[i] > l[best]) best = (int32_t)i;
    return best;
}

static void shared_prefix(ft_backend_kind_t backend)
{
    ft_engine_t *e = open_engine(backend, 0);
    int32_t a[70], b[90];
    tokens(a, 70, 1);
    memcpy(b, a, 40 * sizeof(int32_t));
    tokens(b + 40, 50, 2);
    ft_session_t *sa = new_session(e, 1, 0, 0);
    FT_REF_OK(ft_session_eval(sa, a, 70, NULL));
    assert_int_equal(ft_session_n_restored(sa), 0);
    ft_session_t *sb = new_session(e, 1, 0, 16); /* other chunk boundaries too */
    FT_REF_OK(ft_session_eval(sb, b, 90, NULL));
    assert_int_equal(ft_session_n_restored(sb), 32); /* two full pages of 16 */
    float *want = scratch(e, b, 90);
    same_logits(sb, want, "attached prefix");
    free(want);
    ft_engine_stats_t es;
    ft_engine_stats(e, &es);
    assert_int_equal(es.kv_page_tokens, 16);
    assert_int_equal(es.kv_tokens_restored, 32);
    assert_true(es.kv_pages_cached >= 4 + 3);
    /* A's pages stay cached after it is gone: the whole prompt but its
     * last token comes back. */
    ft_session_destroy(sa);
    ft_session_t *sc = new_session(e, 1, 0, 0);
    FT_REF_OK(ft_session_eval(sc, a, 70, NULL));
    assert_int_equal(ft_session_n_restored(sc), 64);
    want = scratch(e, a, 70);
    same_logits(sc, want, "cached prefix of a destroyed session");
    free(want);
    ft_session_destroy(sb);
    ft_session_destroy(sc);
    FT_REF_OK(ft_engine_close(e));
}

static void test_shared_prefix_cpu(void **state)
{
    (void)state;
    shared_prefix(FT_BACKEND_CPU);
}

static void test_shared_prefix_sim(void **state)
{
    (void)state;
    shared_prefix(FT_BACKEND_SIM);
}

/* A conversation with anchors at its boundaries; the last "tool result"
 * is edited and the request re-sent. */
static void test_anchor_edit(void **state)
{
    (void)state;
    ft_engine_t *e = open_engine(FT_BACKEND_CPU, 0);
    int32_t conv[120];
    tokens(conv, 120, 3);
    ft_session_t *s = new_session(e, 1, 0, 0);
    FT_REF_OK(ft_session_eval(s, conv, 37, NULL)); /* "system prompt" */
    FT_REF_OK(ft_session_anchor(s, 37));
    FT_REF_OK(ft_session_eval(s, conv + 37, 38, NULL)); /* a message */
    FT_REF_OK(ft_session_anchor(s, 75));
    FT_REF_OK(ft_session_eval(s, conv + 75, 45, NULL)); /* a tool result */
    FT_REF_OK(ft_session_anchor(s, 120));
    ft_status_t st = ft_session_anchor(s, 121);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    ft_engine_stats_t es;
    ft_engine_stats(e, &es);
    assert_int_equal(es.kv_anchors, 3);
    ft_session_destroy(s);
    /* The edit: the tool result from 75 on differs. */
    int32_t edit[130];
    memcpy(edit, conv, 75 * sizeof(int32_t));
    tokens(edit + 75, 55, 4);
    ft_session_t *r = new_session(e, 1, 0, 0);
    FT_REF_OK(ft_session_eval(r, edit, 130, NULL));
    assert_int_equal(ft_session_n_restored(r), 75); /* the anchor inside page 4 */
    float *want = scratch(e, edit, 130);
    same_logits(r, want, "anchor restored, edited suffix");
    /* Greedy decoding goes on the same. */
    ft_session_t *ref = new_session(e, 0, 0, 0);
    FT_REF_OK(ft_session_eval(ref, edit, 130, NULL));
    for (int i = 0; i < 8; i++) {
        int32_t t = argmax(ft_session_logits(ref));
        assert_int_equal(argmax(ft_session_logits(r)), t);
        FT_REF_OK(ft_session_eval(ref, &t, 1, NULL));
        FT_REF_OK(ft_session_eval(r, &t, 1, NULL));
        if (memcmp(ft_session_logits(r), ft_session_logits(ref), g_vocab * sizeof(float)))
            fail_msg("decode step %d after the restore differs", i);
    }
    free(want);
    /* Anchors need the cache. */
    st = ft_session_anchor(ref, 10);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    ft_session_destroy(ref);
    ft_session_destroy(r);
    FT_REF_OK(ft_engine_close(e));
}

/* A model with recurrent layers (Gated DeltaNet): only anchors restore,
 * their state copy with them; the logits after a restore are those of
 * computing from scratch. */
static void test_anchor_recurrent(void **state)
{
    (void)state;
    ft_engine_t *e = open_bundle(g_q35, FT_BACKEND_CPU, 0);
    int32_t conv[110];
    tokens(conv, 110, 11);
    ft_session_t *s = new_session(e, 1, 0, 0);
    FT_REF_OK(ft_session_eval(s, conv, 37, NULL));
    FT_REF_OK(ft_session_anchor(s, 37));
    FT_REF_OK(ft_session_eval(s, conv + 37, 38, NULL));
    ft_status_t st = ft_session_anchor(s, 50); /* the state is the one at 75 */
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    FT_REF_OK(ft_session_anchor(s, 75));
    FT_REF_OK(ft_session_eval(s, conv + 75, 35, NULL));
    ft_session_destroy(s);
    /* An edit after 75: the anchor there, state included. */
    int32_t edit[120];
    memcpy(edit, conv, 75 * sizeof(int32_t));
    tokens(edit + 75, 45, 12);
    ft_session_t *r = new_session(e, 1, 0, 0);
    FT_REF_OK(ft_session_eval(r, edit, 120, NULL));
    assert_int_equal(ft_session_n_restored(r), 75);
    float *want = scratch(e, edit, 120);
    same_logits(r, want, "recurrent anchor restored, edited suffix");
    free(want);
    /* Cut back inside: refused (the state cannot be truncated). */
    st = ft_session_rewind(r, 60);
    assert_int_equal(ft_status_code(st), FT_STATUS_UNSUPPORTED);
    ft_status_free(st);
    ft_session_destroy(r);
    /* An edit at 50: the full pages up to 48 are cached, but without the
     * state there only the anchor at 37 restores. */
    memcpy(edit, conv, 50 * sizeof(int32_t));
    tokens(edit + 50, 70, 13);
    r = new_session(e, 1, 0, 0);
    FT_REF_OK(ft_session_eval(r, edit, 120, NULL));
    assert_int_equal(ft_session_n_restored(r), 37);
    want = scratch(e, edit, 120);
    same_logits(r, want, "recurrent anchor inside a cached page");
    free(want);
    ft_session_destroy(r);
    FT_REF_OK(ft_engine_close(e));
}

/* Two sessions share pages; one rewinds into a shared page and diverges,
 * the other appends: neither disturbs the other. */
static void test_copy_on_write(void **state)
{
    (void)state;
    ft_engine_t *e = open_engine(FT_BACKEND_CPU, 0);
    int32_t p[100], q[100];
    tokens(p, 100, 5);
    memcpy(q, p, 20 * sizeof(int32_t));
    tokens(q + 20, 80, 6);
    ft_session_t *a = new_session(e, 1, 0, 0), *b = new_session(e, 1, 0, 0);
    FT_REF_OK(ft_session_eval(a, p, 40, NULL));
    FT_REF_OK(ft_session_eval(b, p, 40, NULL)); /* attaches pages 0 and 1 */
    assert_int_equal(ft_session_n_restored(b), 32);
    FT_REF_OK(ft_session_rewind(b, 20)); /* into shared page 1 */
    FT_REF_OK(ft_session_eval(b, q + 20, 30, NULL));
    FT_REF_OK(ft_session_eval(a, p + 40, 30, NULL));
    float *wa = scratch(e, p, 70), *wb = scratch(e, q, 50);
    same_logits(a, wa, "the session that appended");
    same_logits(b, wb, "the session that rewound into a shared page");
    /* And the tree still holds p's pages as they were. */
    ft_session_t *c = new_session(e, 1, 0, 0);
    FT_REF_OK(ft_session_eval(c, p, 70, NULL));
    assert_int_equal(ft_session_n_restored(c), 64);
    same_logits(c, wa, "the cached pages after copy on write");
    free(wa), free(wb);
    ft_session_destroy(a), ft_session_destroy(b), ft_session_destroy(c);
    FT_REF_OK(ft_engine_close(e));
}

static uint64_t page_bytes(void)
{
    ft_engine_t *e = open_engine(FT_BACKEND_CPU, 0);
    ft_engine_stats_t es;
    ft_engine_stats(e, &es);
    FT_REF_OK(ft_engine_close(e));
    return es.kv_page_bytes;
}

/* A budget of 12 pages: a conversation caches 5, side requests of 4 pages
 * each come and go at low priority and evict each other; the
 * conversation's prefix survives. Then a session needing more pages than
 * the budget holds, with nothing evictable, gets the pool-full error. */
static void test_eviction_and_full(void **state)
{
    (void)state;
    const uint64_t pb = page_bytes();
    ft_engine_t *e = open_engine(FT_BACKEND_CPU, 12 * pb);
    int32_t conv[82], side[64];
    tokens(conv, 82, 7);
    ft_session_t *s = new_session(e, 1, FT_CACHE_NORMAL, 0);
    FT_REF_OK(ft_session_eval(s, conv, 80, NULL));
    ft_session_destroy(s);
    for (uint32_t i = 0; i < 6; i++) {
        tokens(side, 64, 100 + i);
        s = new_session(e, 1, FT_CACHE_LOW, 0);
        FT_REF_OK(ft_session_eval(s, side, 60, NULL));
        ft_session_destroy(s);
    }
    ft_engine_stats_t es;
    ft_engine_stats(e, &es);
    assert_true(es.kv_evictions > 0);
    assert_true(es.kv_bytes_allocated <= 12 * pb);
    s = new_session(e, 1, FT_CACHE_NORMAL, 0);
    FT_REF_OK(ft_session_eval(s, conv, 82, NULL));
    assert_int_equal(ft_session_n_restored(s), 80);
    float *want = scratch(e, conv, 82);
    same_logits(s, want, "the conversation's prefix after side requests");
    free(want);
    /* s holds 6 pages; another session can have the other 6, not 7. */
    ft_session_t *t = new_session(e, 0, 0, 0);
    int32_t big[N_CTX];
    tokens(big, N_CTX, 8);
    FT_REF_OK(ft_session_eval(t, big, 96, NULL));
    ft_status_t st = ft_session_eval(t, big + 96, 1, NULL);
    assert_int_equal(ft_status_code(st), FT_STATUS_RESOURCE_EXHAUSTED);
    assert_non_null(strstr(ft_status_message(st), "kv pool: full"));
    ft_status_free(st);
    assert_int_equal(ft_session_n_past(t), 96); /* nothing evaluated */
    /* Once s lets go, its pages can be evicted and t goes on. */
    ft_session_destroy(s);
    FT_REF_OK(ft_session_eval(t, big + 96, 1, NULL));
    ft_session_destroy(t);
    FT_REF_OK(ft_engine_close(e));
}

typedef struct worker {
    ft_engine_t *e;
    const int32_t *sys;
    uint32_t id;
    int ok;
} worker_t;

/* Each thread: sessions whose prompts share the system prompt, each
 * checked against its own scratch logits, computed alongside. */
static void *work(void *arg)
{
    worker_t *w = arg;
    w->ok = 1;
    for (uint32_t k = 0; k < 3 && w->ok; k++) {
        int32_t t[100];
        memcpy(t, w->sys, 48 * sizeof(int32_t));
        tokens(t + 48, 52, 1000 + w->id * 10 + k);
        ft_session_options_t so;
        ft_session_options_init(&so);
        so.n_ctx = N_CTX;
        so.prefix_cache = 1;
        ft_session_t *s = NULL, *ref = NULL;
        ft_status_t st = ft_session_create(w->e, &so, &s);
        so.prefix_cache = 0;
        if (!st) st = ft_session_create(w->e, &so, &ref);
        if (!st) st = ft_session_eval(s, t, 100, NULL);
        if (!st) st = ft_session_eval(ref, t, 100, NULL);
        if (!st)
            w->ok = !memcmp(ft_session_logits(s), ft_session_logits(ref), g_vocab * sizeof(float));
        if (st) {
            fprintf(stderr, "worker %u: %s\n", w->id, ft_status_message(st));
            ft_status_free(st);
            w->ok = 0;
        }
        ft_session_destroy(s);
        ft_session_destroy(ref);
    }
    return NULL;
}

static void test_concurrent_sessions(void **state)
{
    (void)state;
    ft_engine_t *e = open_engine(FT_BACKEND_CPU, 0);
    int32_t sys[48];
    tokens(sys, 48, 9);
    pthread_t th[N_THREADS];
    worker_t w[N_THREADS];
    for (uint32_t i = 0; i < N_THREADS; i++) {
        w[i] = (worker_t){e, sys, i, 0};
        assert_int_equal(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    for (uint32_t i = 0; i < N_THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_true(w[i].ok);
    }
    ft_engine_stats_t es;
    ft_engine_stats(e, &es);
    assert_true(es.kv_tokens_restored >= 32 * (3 * N_THREADS - 1));
    FT_REF_OK(ft_engine_close(e));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_prefix_cpu),   cmocka_unit_test(test_shared_prefix_sim),
        cmocka_unit_test(test_anchor_edit),         cmocka_unit_test(test_anchor_recurrent),
        cmocka_unit_test(test_copy_on_write),       cmocka_unit_test(test_eviction_and_full),
        cmocka_unit_test(test_concurrent_sessions),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
