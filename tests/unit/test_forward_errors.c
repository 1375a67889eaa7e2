/* Bad input through the public API: damaged bundles are refused at
 * ft_engine_open with a message naming the file; bad evaluations (empty
 * batch, unknown token ids, too many tokens for the context) fail and leave
 * the session usable and unchanged; invalid UTF-8 fails to tokenize with
 * the byte offset named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ref_bundle.h"
#include "ref_check.h"
#include "test_tmp.h"

#include "../../runtime/format/ftw.h"
#include "../../runtime/format/plan_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_bundle[4096];

static int setup(void **state)
{
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    ft_status_t st = ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_F32,
                                         ft_test_tmpdir("errors"), g_bundle, sizeof(g_bundle));
    if (st) {
        fprintf(stderr, "building the fixture bundle: %s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    return 0;
}

/* Copies the good bundle to <tmp>/<name> with `file` (plan.ftp or
 * weights.ftw) replaced by its first `keep` bytes (all when keep is 0)
 * with byte `at` XORed with `flip` (when flip is not 0). */
static const char *damaged_copy(const char *name, const char *file, size_t keep, size_t at,
                                uint8_t flip)
{
    static char dir[4096];
    snprintf(dir, sizeof(dir), "%s", ft_test_tmpdir(name));
    const char *files[2] = {"plan.ftp", "weights.ftw"};
    for (int i = 0; i < 2; i++) {
        char src[4200], dst[4200];
        snprintf(src, sizeof(src), "%s/%s", g_bundle, files[i]);
        snprintf(dst, sizeof(dst), "%s/%s", dir, files[i]);
        size_t n;
        uint8_t *buf = ft_test_read_file(src, &n);
        if (strcmp(files[i], file) == 0) {
            if (keep) n = keep < n ? keep : n;
            assert_true(at < n);
            buf[at] ^= flip;
        }
        assert_int_equal(ft_test_write_file(dst, buf, n), 0);
        free(buf);
    }
    return dir;
}

/* ft_engine_open(dir) fails with a message containing each of the words. */
static void expect_refused(const char *dir, const char *word1, const char *word2)
{
    ft_engine_t *e = NULL;
    ft_status_t st = ft_engine_open(dir, NULL, &e);
    assert_non_null(st);
    assert_null(e);
    const char *msg = ft_status_message(st);
    print_message("refused (%s): %s\n", ft_status_code_name(ft_status_code(st)), msg);
    assert_non_null(strstr(msg, word1));
    assert_non_null(strstr(msg, word2));
    ft_status_free(st);
}

static void test_bad_bundles_refused(void **state)
{
    /* The good copy opens: the damage below is what is refused. */
    ft_engine_t *e;
    FT_REF_OK(ft_engine_open(damaged_copy("bundle_good", "none", 0, 0, 0), NULL, &e));
    ft_engine_close(e);
    /* A flipped bit in the content hash of the FTW header (byte 24..39). */
    expect_refused(damaged_copy("bundle_hash", "weights.ftw", 0, 30, 0x01), "weights.ftw", "hash");
    /* weights.ftw cut short by one 4 KiB page. */
    size_t n;
    char path[4200];
    snprintf(path, sizeof(path), "%s/weights.ftw", g_bundle);
    free(ft_test_read_file(path, &n));
    expect_refused(damaged_copy("bundle_truncated", "weights.ftw", n - FT_FTW_ALIGN, 0, 0),
                   "weights.ftw", "");
    /* A plan whose container version (byte 8, u32 LE) is newer than ours. */
    expect_refused(damaged_copy("bundle_newer", "plan.ftp", 0, 8,
                                (uint8_t)(FT_PLAN_FORMAT_VERSION ^ (FT_PLAN_FORMAT_VERSION + 1))),
                   "plan.ftp", "version");
}

static void expect_eval_error(ft_session_t *s, const int32_t *tokens, uint32_t n, const char *what)
{
    const uint32_t before = ft_session_n_past(s);
    ft_status_t st = ft_session_eval(s, tokens, n, NULL);
    if (!st) fail_msg("evaluating %s succeeded", what);
    print_message("%s: %s\n", what, ft_status_message(st));
    ft_status_free(st);
    assert_int_equal(ft_session_n_past(s), before); /* nothing appended */
}

static void test_bad_evals(void **state)
{
    ft_engine_t *e;
    ft_session_t *s, *fresh;
    FT_REF_OK(ft_engine_open(g_bundle, NULL, &e));
    const int32_t V = (int32_t)ft_engine_info(e)->vocab_size;
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = 16;
    so.n_batch = 4;
    FT_REF_OK(ft_session_create(e, &so, &s));
    FT_REF_OK(ft_session_create(e, &so, &fresh));
    assert_int_equal(ft_session_n_ctx(s), 16);
    assert_null(ft_session_logits(s));

    int32_t toks[17];
    for (int i = 0; i < 17; i++)
        toks[i] = (i * 37 + 11) % V;
    expect_eval_error(s, toks, 0, "an empty batch");
    expect_eval_error(s, toks, 17, "17 tokens in a context of 16");
    const int32_t too_big[3] = {toks[0], V, toks[1]}, negative[2] = {toks[0], -1};
    expect_eval_error(s, too_big, 3, "token id vocab_size");
    expect_eval_error(s, negative, 2, "token id -1");
    FT_REF_OK(ft_session_eval(s, toks, 10, NULL));
    expect_eval_error(s, toks + 10, 7, "7 tokens after 10 in a context of 16");
    expect_eval_error(s, too_big + 1, 1, "token id vocab_size after 10");

    /* Still usable, and exactly as if the errors had not happened. */
    FT_REF_OK(ft_session_eval(s, toks + 10, 6, NULL));
    assert_int_equal(ft_session_n_past(s), 16);
    FT_REF_OK(ft_session_eval(fresh, toks, 16, NULL));
    assert_memory_equal(ft_session_logits(s), ft_session_logits(fresh), sizeof(float) * (size_t)V);
    expect_eval_error(s, toks, 1, "a token past a full context");
    ft_session_destroy(s);
    ft_session_destroy(fresh);
    ft_engine_close(e);
}

static void test_invalid_utf8(void **state)
{
    ft_engine_t *e;
    FT_REF_OK(ft_engine_open(g_bundle, NULL, &e));
    int32_t *ids = NULL;
    uint32_t n = 0;
    const char good[] = "hello world";
    FT_REF_OK(ft_engine_tokenize(e, good, sizeof(good) - 1, 0, &ids, &n));
    assert_true(n > 0);
    ft_engine_free(e, ids);
    ids = NULL;
    /* 0xc3 0x28: a lead byte followed by a non-continuation, at byte 12. */
    const char bad[] = "hello world \xc3\x28 more";
    ft_status_t st = ft_engine_tokenize(e, bad, sizeof(bad) - 1, 0, &ids, &n);
    assert_non_null(st);
    print_message("invalid UTF-8: %s\n", ft_status_message(st));
    assert_non_null(strstr(ft_status_message(st), "12"));
    ft_status_free(st);
    ft_engine_close(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_bundles_refused),
        cmocka_unit_test(test_bad_evals),
        cmocka_unit_test(test_invalid_utf8),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
