/* freetoken's tokenizer against one we did not write: the ids
 * @huggingface/tokenizers (Tokenizers.js) gives for a varied corpus
 * (Unicode, code, whitespace runs, digits, special tokens) from the fixture's
 * tokenizer.json, committed as tests/external/golden/tokenizer-ids.json by
 * tests/external/gen-tokenizer-golden.sh. The fixture is compiled from its
 * HF directory (tokenizer.json) and from its GGUF (tokenizer.ggml.*), and
 * both bundles must give exactly those ids, special tokens recognized and
 * nothing added, and decode back to the text.
 *
 * The fixture's tokenizer.json (as Qwen's) has an NFC normalizer, which
 * both bundles keep (the GGUF's "qwen2" pre-tokenizer implies it), so a
 * text not in NFC (e + U+0301 rather than U+00E9; the golden gives its NFC
 * form as "nfc") must give the golden ids as it is, and its tokens then
 * decode to the NFC form. Needs no npm: the golden file
 * is committed (tests/external/check-npm.sh checks it is still what the
 * package gives). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "model_gen.h"
#include "ref_bundle.h"
#include "test_tmp.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN_DIR FT_SOURCE_DIR "/tests/external/golden"

static char g_hf_bundle[4096], g_gguf_bundle[4096], g_hf_dir[4200];

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    const char *dir = ft_test_tmpdir("tokenizer_external");
    char work[4096];
    snprintf(work, sizeof(work), "%s/hf", dir);
    snprintf(g_hf_dir, sizeof(g_hf_dir), "%s/hf", work);
    ft_status_t st = ft_ref_build_bundle(&o, FT_REF_FROM_HF, FT_DTYPE_INVALID, work, g_hf_bundle,
                                         sizeof(g_hf_bundle));
    snprintf(work, sizeof(work), "%s/gguf", dir);
    if (!st)
        st = ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_INVALID, work, g_gguf_bundle,
                                 sizeof(g_gguf_bundle));
    if (st) {
        fprintf(stderr, "building the fixture bundles: %s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    return 0;
}

/* The golden ids were made from the fixture's tokenizer files as they
 * were then: if ftgen now writes others, the goldens are stale. */
static void test_golden_is_the_fixture_tokenizer(void **state)
{
    (void)state;
    static const char *const files[] = {"tokenizer.json", "tokenizer_config.json"};
    for (size_t i = 0; i < 2; i++) {
        char a[4400], b[4400];
        snprintf(a, sizeof(a), "%s/%s", g_hf_dir, files[i]);
        snprintf(b, sizeof(b), "%s/%s", GOLDEN_DIR, files[i]);
        size_t na, nb;
        char *fa = ft_test_read_file(a, &na), *fb = ft_test_read_file(b, &nb);
        const int same = na == nb && memcmp(fa, fb, na) == 0;
        free(fa);
        free(fb);
        if (!same)
            fail_msg("%s differs from the fixture's %s: the fixture's tokenizer changed; run "
                     "tests/external/gen-tokenizer-golden.sh and commit tests/external/golden/",
                     b, files[i]);
    }
}

static int ids_equal(const int32_t *ids, uint32_t n, const json_t *want)
{
    if (n != json_array_size(want)) return 0;
    for (uint32_t k = 0; k < n; k++)
        if (ids[k] != json_integer_value(json_array_get(want, k))) return 0;
    return 1;
}

/* Every golden case through one bundle's tokenizer: the same ids, and the
 * tokens' bytes put together are the text again. */
static void check_bundle(const char *bundle)
{
    json_error_t jerr;
    json_t *root = json_load_file(GOLDEN_DIR "/tokenizer-ids.json", 0, &jerr);
    if (!root) fail_msg("%s/tokenizer-ids.json:%d: %s", GOLDEN_DIR, jerr.line, jerr.text);
    json_t *cases = json_object_get(root, "cases");
    assert_true(json_is_array(cases));
    assert_true(json_array_size(cases) >= 30);
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.n_threads = 1;
    ft_engine_t *e = NULL;
    ft_status_t st = ft_engine_open(bundle, &eo, &e);
    if (st) fail_msg("%s: %s", bundle, ft_status_message(st));
    size_t i, n_bad = 0, n_nfc = 0;
    json_t *c;
    json_array_foreach(cases, i, c)
    {
        const char *text = json_string_value(json_object_get(c, "text"));
        size_t len = json_string_length(json_object_get(c, "text"));
        json_t *want = json_object_get(c, "ids");
        assert_non_null(text);
        assert_true(json_is_array(want));
        int32_t *ids = NULL;
        uint32_t n = 0;
        st = ft_engine_tokenize(e, text, len, FT_TOKENIZE_SPECIAL, &ids, &n);
        if (st) fail_msg("case %zu '%s': %s", i, text, ft_status_message(st));
        const int same = ids_equal(ids, n, want);
        /* What the tokens decode to: the text in NFC, as normalized. */
        json_t *nfc = json_object_get(c, "nfc");
        const char *decoded = json_is_string(nfc) ? json_string_value(nfc) : text;
        const size_t decoded_len = json_is_string(nfc) ? json_string_length(nfc) : len;
        n_nfc += json_is_string(nfc);
        if (!same) {
            char got[4096], exp[4096];
            size_t g = 0, x = 0;
            for (uint32_t k = 0; k < n && g < sizeof(got) - 16; k++)
                g += (size_t)snprintf(got + g, sizeof(got) - g, "%d,", ids[k]);
            for (size_t k = 0; k < json_array_size(want) && x < sizeof(exp) - 24; k++)
                x += (size_t)snprintf(exp + x, sizeof(exp) - x, "%lld,",
                                      (long long)json_integer_value(json_array_get(want, k)));
            got[g] = exp[x] = 0;
            print_error("%s: case %zu '%s': ids %s, @huggingface/tokenizers gives %s\n", bundle, i,
                        text, got, exp);
            n_bad++;
            ft_engine_free(e, ids);
            continue;
        }
        /* Decoding: the tokens' bytes are the (normalized) text. */
        size_t at = 0;
        for (uint32_t k = 0; k < n; k++) {
            const char *b;
            uint32_t bl;
            assert_null(ft_engine_token_bytes(e, ids[k], &b, &bl));
            if (at + bl > decoded_len || memcmp(decoded + at, b, bl) != 0)
                fail_msg("%s: case %zu '%s': token %u (%d) does not decode to the text at byte %zu",
                         bundle, i, text, k, ids[k], at);
            at += bl;
        }
        assert_int_equal(at, decoded_len);
        ft_engine_free(e, ids);
    }
    ft_engine_close(e);
    json_decref(root);
    if (n_bad) fail_msg("%s: %zu of the golden texts tokenized differently", bundle, n_bad);
    assert_true(n_nfc >= 1); /* the normalizer was exercised */
}

static void test_hf_tokenizer_matches(void **state)
{
    (void)state;
    check_bundle(g_hf_bundle);
}

static void test_gguf_tokenizer_matches(void **state)
{
    (void)state;
    check_bundle(g_gguf_bundle);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_is_the_fixture_tokenizer),
        cmocka_unit_test(test_hf_tokenizer_matches),
        cmocka_unit_test(test_gguf_tokenizer_matches),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
