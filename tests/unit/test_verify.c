/* Damaged weights are caught before they are used (runtime/format/
 * blob_verify.h): ftc compile records an XXH3-64 per tensor and per expert
 * blob; a flipped byte in a dense tensor is refused at open, naming the
 * tensor; a flipped byte in an expert blob fails the first step that routes
 * a token to that expert, naming the layer and expert, on the cpu, sim and
 * cuda (fake driver) backends, before any token that depends on it; the
 * same flips with --verify off change the logits (so the flips matter); a
 * truncated file and weights from another compile are refused at open. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cuda_codegen.h"
#include "cuda_test_skip.h"
#include "format/bundle.h"
#include "ref_bundle.h"
#include "ref_check.h"
#include "test_tmp.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { N_PROMPT = 24, N_GEN = 8, N_CTX = 64, N_FLIPS = 10 };

static char g_dir[4096], g_bundle[4096], g_cuda_bundle[4200], g_hw[4096];

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.seed = 5;
    o.format = FT_DTYPE_Q8_0;
    snprintf(g_dir, sizeof(g_dir), "%s", ft_test_tmpdir("verify"));
    ft_status_t st = ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_INVALID, g_dir, g_bundle, sizeof(g_bundle));
    if (st) {
        fprintf(stderr, "building the bundle: %s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    snprintf(g_hw, sizeof(g_hw), "%s/tests/data/slow_cpu_fast_pcie.textproto", FT_SOURCE_DIR);
    setenv("FT_CUDA_LIB", FT_CUDA_FAKE_LIB, 1);
    setenv("FT_CUDA_FAKE_VRAM", "536870912", 1);
    return 0;
}

/* Copies file src to dst. */
static void copy_file(const char *src, const char *dst)
{
    FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

/* A copy of bundle src in dir name, with byte `at` of its weights file
 * flipped (no flip when at is UINT64_MAX); returns its path. */
static const char *damaged(const char *src, const char *name, uint64_t at)
{
    static char dir[4400];
    char a[4500], b[4500];
    char sub[128];
    snprintf(sub, sizeof(sub), "verify/%s", name);
    snprintf(dir, sizeof(dir), "%s", ft_test_tmpdir(sub));
    snprintf(a, sizeof(a), "%s/plan.ftp", src);
    snprintf(b, sizeof(b), "%s/plan.ftp", dir);
    copy_file(a, b);
    snprintf(a, sizeof(a), "%s/weights.ftw", src);
    snprintf(b, sizeof(b), "%s/weights.ftw", dir);
    copy_file(a, b);
    if (at != UINT64_MAX) {
        FILE *f = fopen(b, "r+b");
        assert_non_null(f);
        assert_int_equal(fseek(f, (long)at, SEEK_SET), 0);
        const int c = fgetc(f);
        assert_true(c != EOF);
        assert_int_equal(fseek(f, (long)at, SEEK_SET), 0);
        assert_int_equal(fputc(c ^ 0x10, f), c ^ 0x10);
        assert_int_equal(fclose(f), 0);
    }
    return dir;
}

typedef struct run {
    ft_status_t open_st, eval_st; /* the first failure, or FT_OK */
    uint32_t n_tokens;            /* tokens emitted before it */
    int32_t tokens[N_GEN];
    float *logits;                /* [N_PROMPT][vocab] when the prompt ran */
    uint32_t vocab;
} run_t;

static const int32_t k_prompt[N_PROMPT] = {17, 300, 5,  5,  120, 77,  562, 0,   42, 9,  256, 31,
                                           400, 401, 2, 88, 199, 17,  17,  500, 3,  64, 65,  66};

static void engine_opts(ft_engine_options_t *eo, ft_backend_kind_t backend, int verify)
{
    ft_engine_options_init(eo);
    eo->backend = backend;
    eo->verify = verify;
    eo->kernels = FT_KERNELS_REFERENCE;
    eo->plan_ctx = N_CTX;
    if (backend == FT_BACKEND_SIM) {
        eo->hw_profile = g_hw;
        eo->vram_bytes = 2250ull << 10;
    } else if (backend == FT_BACKEND_CUDA) {
        eo->vram_bytes = 64ull << 20;
    }
}

/* The prompt, then greedy tokens, until the first failure. */
static run_t run(const char *bundle, ft_backend_kind_t backend, int verify)
{
    run_t r = {0};
    ft_engine_options_t eo;
    engine_opts(&eo, backend, verify);
    ft_engine_t *e = NULL;
    if ((r.open_st = ft_engine_open(bundle, &eo, &e))) return r;
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = N_CTX;
    ft_session_t *s = NULL;
    FT_REF_OK(ft_session_create(e, &so, &s));
    r.vocab = ft_engine_info(e)->vocab_size;
    r.logits = calloc((size_t)N_PROMPT * r.vocab, sizeof(float));
    assert_non_null(r.logits);
    r.eval_st = ft_session_eval(s, k_prompt, N_PROMPT, r.logits);
    while (!r.eval_st && r.n_tokens < N_GEN) {
        const float *lg = ft_session_logits(s);
        int32_t best = 0;
        for (uint32_t v = 1; v < r.vocab; v++)
            if (lg[v] > lg[best]) best = (int32_t)v;
        r.tokens[r.n_tokens++] = best;
        r.eval_st = ft_session_eval(s, &best, 1, NULL);
    }
    ft_session_destroy(s);
    ft_engine_close(e);
    return r;
}

static void run_free(run_t *r)
{
    ft_status_free(r->open_st);
    ft_status_free(r->eval_st);
    free(r->logits);
}

static uint32_t rng_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

/* Flips in ordinary tensors: refused at open, naming the tensor; with
 * --verify off the same bundle opens. */
static void test_dense_flip_refused_at_open(void **state)
{
    (void)state;
    ft_bundle_t *b;
    FT_REF_OK(ft_bundle_open(g_bundle, &b));
    uint64_t rng = 11;
    uint32_t n_checked = 0;
    for (size_t i = 0; i < b->plan->n_tensors && n_checked < 6; i++) {
        const Ftplan__Tensor *t = b->plan->tensors[i];
        if (t->expert_stride || i % 3) continue; /* a spread of dense tensors */
        assert_true(t->has_hash);
        const uint64_t at = t->offset + rng_next(&rng) % t->size;
        char name[64];
        snprintf(name, sizeof(name), "dense%zu", i);
        const char *dir = damaged(g_bundle, name, at);
        run_t r = run(dir, FT_BACKEND_CPU, FT_VERIFY_LAZY);
        assert_non_null(r.open_st);
        assert_int_equal(ft_status_code(r.open_st), FT_STATUS_MISMATCH);
        assert_non_null(strstr(ft_status_message(r.open_st), t->name));
        assert_non_null(strstr(ft_status_message(r.open_st), "damaged"));
        run_free(&r);
        run_t off = run(dir, FT_BACKEND_CPU, FT_VERIFY_OFF);
        assert_null(off.open_st);
        run_free(&off);
        n_checked++;
    }
    assert_true(n_checked >= 3);
    ft_bundle_close(b);
}

/* Flips at random offsets of the expert blobs: with lazy checks, each run
 * either fails with the damaged layer and expert named, every token before
 * the failure equal to the clean run's, or (an expert no token chose) runs
 * exactly as the clean bundle; with checks off, some flips change the
 * logits. */
static void expert_flips(const char *bundle, ft_backend_kind_t backend, const char *label)
{
    run_t clean = run(bundle, backend, FT_VERIFY_LAZY);
    FT_REF_OK(clean.open_st);
    FT_REF_OK(clean.eval_st);
    ft_bundle_t *b;
    FT_REF_OK(ft_bundle_open(bundle, &b));
    uint64_t rng = 7 + (uint64_t)backend;
    uint32_t n_caught = 0, n_changed_off = 0;
    for (uint32_t k = 0; k < N_FLIPS; k++) {
        const Ftplan__ExpertBlock *eb = b->plan->expert_blocks[rng_next(&rng) % b->plan->n_expert_blocks];
        assert_int_equal(eb->n_hashes, eb->n_experts);
        const uint32_t e = rng_next(&rng) % eb->n_experts;
        /* Inside the expert's data (not its alignment padding, which no
         * kernel reads, though the hash covers it too). */
        const uint64_t at = eb->offset + (uint64_t)e * eb->stride + rng_next(&rng) % (eb->stride / 2);
        char name[64];
        snprintf(name, sizeof(name), "%s-expert%u", label, k);
        const char *dir = damaged(bundle, name, at);
        run_t r = run(dir, backend, FT_VERIFY_LAZY);
        assert_null(r.open_st);
        char want[64];
        snprintf(want, sizeof(want), "layer %u expert %u ", eb->layer, e);
        if (r.eval_st) {
            assert_int_equal(ft_status_code(r.eval_st), FT_STATUS_MISMATCH);
            if (!strstr(ft_status_message(r.eval_st), want))
                fail_msg("%s: flip %u: '%s' does not name %s", label, k, ft_status_message(r.eval_st), want);
            n_caught++;
        } else {
            assert_memory_equal(r.logits, clean.logits, sizeof(float) * N_PROMPT * clean.vocab);
        }
        assert_memory_equal(r.tokens, clean.tokens, r.n_tokens * sizeof(int32_t));
        run_free(&r);
        run_t off = run(dir, backend, FT_VERIFY_OFF);
        FT_REF_OK(off.open_st);
        FT_REF_OK(off.eval_st);
        n_changed_off += memcmp(off.logits, clean.logits, sizeof(float) * N_PROMPT * clean.vocab) != 0;
        run_free(&off);
    }
    print_message("%s: %u of %u flips caught, %u changed the logits unchecked\n", label, n_caught, N_FLIPS,
                  n_changed_off);
    assert_true(n_caught > 0);
    assert_true(n_changed_off > 0);
    ft_bundle_close(b);
    run_free(&clean);
}

static void test_expert_flips_cpu(void **state)
{
    (void)state;
    expert_flips(g_bundle, FT_BACKEND_CPU, "cpu");
}

static void test_expert_flips_sim(void **state)
{
    (void)state;
    expert_flips(g_bundle, FT_BACKEND_SIM, "sim");
}

static void test_expert_flips_cuda(void **state)
{
    (void)state;
    void *fake = dlopen(FT_CUDA_FAKE_LIB, RTLD_NOW | RTLD_LOCAL);
    if (fake) dlclose(fake);
    if (!fake || !ft_cg_cuda_nvrtc_available())
        FT_CUDA_TEST_SKIP(fake ? "no NVRTC" : "the fake CUDA driver does not load");
    char src[4200];
    snprintf(src, sizeof(src), "%s/model.gguf", g_dir);
    snprintf(g_cuda_bundle, sizeof(g_cuda_bundle), "%s/bundle-cuda", g_dir);
    FT_REF_OK(ft_ref_build_cuda_bundle(src, g_cuda_bundle));
    expert_flips(g_cuda_bundle, FT_BACKEND_CUDA, "cuda");
}

/* --verify full re-hashes the whole file at open: a flip in an expert no
 * token may ever choose, or in padding, is refused there. */
static void test_full_catches_at_open(void **state)
{
    (void)state;
    ft_bundle_t *b;
    FT_REF_OK(ft_bundle_open(g_bundle, &b));
    const Ftplan__ExpertBlock *eb = b->plan->expert_blocks[0];
    const uint64_t at = eb->offset + eb->stride - 1; /* the last byte of expert 0's padding */
    ft_bundle_close(b);
    const char *dir = damaged(g_bundle, "full", at);
    run_t r = run(dir, FT_BACKEND_CPU, FT_VERIFY_FULL);
    assert_non_null(r.open_st);
    assert_int_equal(ft_status_code(r.open_st), FT_STATUS_MISMATCH);
    run_free(&r);
    run_t lazy = run(dir, FT_BACKEND_CPU, FT_VERIFY_LAZY);
    assert_null(lazy.open_st); /* lazily, only when expert 0 of that layer is used */
    run_free(&lazy);
}

/* A truncated weights file, and weights from another compile, are refused
 * at open in every mode. */
static void test_truncated_and_mismatched_refused(void **state)
{
    (void)state;
    const char *dir = damaged(g_bundle, "truncated", UINT64_MAX);
    char w[4500];
    snprintf(w, sizeof(w), "%s/weights.ftw", dir);
    FILE *f = fopen(w, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    const long size = ftell(f);
    fclose(f);
    assert_int_equal(truncate(w, size - 4096), 0);
    for (int mode = FT_VERIFY_LAZY; mode <= FT_VERIFY_OFF; mode++) {
        run_t r = run(dir, FT_BACKEND_CPU, mode);
        assert_non_null(r.open_st);
        run_free(&r);
    }
    /* Another compile of another seed: same layout, different weights. */
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.seed = 6;
    o.format = FT_DTYPE_Q8_0;
    char other_dir[4200], other[4300];
    snprintf(other_dir, sizeof(other_dir), "%s", ft_test_tmpdir("verify/other"));
    FT_REF_OK(ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_INVALID, other_dir, other, sizeof(other)));
    const char *mixed = damaged(g_bundle, "mixed", UINT64_MAX);
    char a[4500], bpath[4500];
    snprintf(a, sizeof(a), "%s/weights.ftw", other);
    snprintf(bpath, sizeof(bpath), "%s/weights.ftw", mixed);
    copy_file(a, bpath);
    for (int mode = FT_VERIFY_LAZY; mode <= FT_VERIFY_OFF; mode++) {
        run_t r = run(mixed, FT_BACKEND_CPU, mode);
        assert_non_null(r.open_st);
        assert_int_equal(ft_status_code(r.open_st), FT_STATUS_MISMATCH);
        assert_non_null(strstr(ft_status_message(r.open_st), "content_hash"));
        run_free(&r);
    }
}

/* The idle pass (ft_engine_verify_some): on a clean bundle it checks every
 * expert blob, a budget at a time (each call reads at least one blob and
 * leaves fewer unchecked), and ends at 0 with nothing damaged; on a bundle
 * with one flipped expert byte it finds that blob before any token routes
 * to it, names it, and ft_engine_stats reports it (verify_damage). */
static void test_verify_some(void **state)
{
    (void)state;
    ft_bundle_t *b;
    FT_REF_OK(ft_bundle_open(g_bundle, &b));
    const Ftplan__ExpertBlock *eb = b->plan->expert_blocks[b->plan->n_expert_blocks - 1];
    uint64_t n_blobs = 0;
    for (size_t i = 0; i < b->plan->n_expert_blocks; i++)
        n_blobs += b->plan->expert_blocks[i]->n_experts;
    const uint32_t e = eb->n_experts / 2, layer = eb->layer;
    const uint64_t at = eb->offset + (uint64_t)e * eb->stride + eb->stride / 4;
    ft_bundle_close(b);
    for (int flip = 0; flip < 2; flip++) {
        const char *dir = damaged(g_bundle, flip ? "some-flipped" : "some-clean", flip ? at : UINT64_MAX);
        ft_engine_options_t eo;
        engine_opts(&eo, FT_BACKEND_CPU, FT_VERIFY_LAZY);
        ft_engine_t *en = NULL;
        FT_REF_OK(ft_engine_open(dir, &eo, &en));
        uint64_t left = UINT64_MAX, before = n_blobs + 1;
        uint32_t calls = 0, n_bad = 0;
        char msg[1024] = "";
        do {
            ft_status_t st = ft_engine_verify_some(en, 1, &left); /* one blob a call */
            if (st) {
                assert_int_equal(ft_status_code(st), FT_STATUS_MISMATCH);
                snprintf(msg, sizeof(msg), "%s", ft_status_message(st));
                n_bad++;
            }
            ft_status_free(st);
            assert_true(left < before);
            before = left;
            calls++;
        } while (left && calls <= n_blobs);
        assert_int_equal(left, 0);
        assert_int_equal(calls, n_blobs);
        ft_engine_stats_t es;
        ft_engine_stats(en, &es);
        assert_int_equal(es.blobs_checked + es.blobs_damaged, n_blobs);
        assert_int_equal(es.blobs_damaged, (uint64_t)flip);
        assert_int_equal(n_bad, (uint32_t)flip);
        if (flip) {
            char want[64];
            snprintf(want, sizeof(want), "layer %u expert %u ", layer, e);
            assert_non_null(strstr(msg, want));
            assert_string_equal(es.verify_damage, msg);
        } else {
            assert_string_equal(es.verify_damage, "");
        }
        FT_REF_OK(ft_engine_close(en));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense_flip_refused_at_open), cmocka_unit_test(test_expert_flips_cpu),
        cmocka_unit_test(test_expert_flips_sim),           cmocka_unit_test(test_expert_flips_cuda),
        cmocka_unit_test(test_full_catches_at_open),       cmocka_unit_test(test_verify_some),       cmocka_unit_test(test_truncated_and_mismatched_refused),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
