/* ft serve's chat template renderers for Qwen3.5, Qwen3-Coder, gpt-oss harmony, GLM-4.5 and
 * DeepSeek V3.1 (runtime/serve/srv_template_*.c) against Python Jinja2
 * rendering each model's own template (tests/data/serve/templates/):
 * tests/data/serve/<family>_render.json holds OpenAI request bodies and
 * the prompt Jinja2 made from each, or the error its template raised
 * (make_family_goldens.py regenerates them). Every prompt must come out
 * byte for byte and every refusal must be a 400. Also the family
 * detection from each template's text, and the message end offsets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "srv_template.h"
#include "srv_template_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *load_json(const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/tests/data/serve/%s", FT_SOURCE_DIR, name);
    json_error_t je;
    json_t *v = json_load_file(path, 0, &je);
    if (!v) fail_msg("%s: %s (line %d)", path, je.text, je.line);
    return v;
}

static char *load_text(const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/tests/data/serve/templates/%s", FT_SOURCE_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    char *s = calloc(1, 1 << 20);
    assert_non_null(s);
    fread(s, 1, (1 << 20) - 1, f);
    fclose(f);
    return s;
}

static void expect_same(const char *fam, const char *name, const char *want, const char *got)
{
    if (!strcmp(want, got)) return;
    size_t i = 0;
    while (want[i] && want[i] == got[i])
        i++;
    fail_msg("%s case '%s': differs at byte %zu:\n  want ...%.80s\n  got  ...%.80s", fam, name, i,
             want + (i > 30 ? i - 30 : 0), got + (i > 30 ? i - 30 : 0));
}

static void check_family(const char *file, ft_srv_family_t fam)
{
    json_t *golden = load_json(file);
    json_t *cases = json_object_get(golden, "cases");
    const char *today = json_string_value(json_object_get(golden, "today"));
    assert_true(json_array_size(cases) >= 20);
    size_t i, n_prompts = 0;
    json_t *c;
    json_array_foreach(cases, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        char *body = json_dumps(json_object_get(c, "request"), 0);
        json_t *root = NULL;
        ft_srv_error_t err;
        if (!ft_srv_json_parse(body, strlen(body), &root, &err))
            fail_msg("%s case '%s': %s", file, name, err.message);
        ft_srv_conv_t conv;
        ft_srv_conv_init(&conv);
        if (!ft_srv_openai_parse(root, 1000, &conv, &err))
            fail_msg("%s case '%s': %s", file, name, err.message);
        conv.today = today;
        ft_srv_buf_t out = {0};
        const int ok = ft_srv_render(fam, &conv, 1, &out, &err);
        const char *want = json_string_value(json_object_get(c, "prompt"));
        if (want) {
            if (!ok) fail_msg("%s case '%s': refused: %s", file, name, err.message);
            expect_same(file, name, want, out.data ? out.data : "");
            n_prompts++;
            /* the message ends: increasing, inside the prompt, the last at or
             * before the generation prompt */
            size_t *ends = calloc(conv.n_msgs + 1, sizeof(*ends));
            ft_srv_buf_t again = {0};
            int ok2 =
                fam == FT_SRV_FAMILY_QWEN35    ? ft_srv_render_qwen35(&conv, 1, &again, ends, &err)
                : fam == FT_SRV_FAMILY_HARMONY ? ft_srv_render_harmony(&conv, 1, &again, ends, &err)
                : fam == FT_SRV_FAMILY_GLM     ? ft_srv_render_glm(&conv, 1, &again, ends, &err)
                : fam == FT_SRV_FAMILY_QWEN3_CODER
                    ? ft_srv_render_qwen3_coder(&conv, 1, &again, ends, &err)
                    : ft_srv_render_deepseek(&conv, 1, &again, ends, &err);
            assert_true(ok2);
            assert_int_equal(again.len, out.len);
            for (size_t k = 0; k < conv.n_msgs; k++) {
                assert_true(ends[k] <= again.len);
                if (k) assert_true(ends[k] >= ends[k - 1]);
            }
            free(ends);
            ft_srv_buf_free(&again);
        } else {
            if (ok) fail_msg("%s case '%s': rendered, but the template refuses it", file, name);
            assert_int_equal(err.http, 400);
        }
        ft_srv_buf_free(&out);
        ft_srv_conv_free(&conv);
        json_decref(root);
        free(body);
    }
    assert_true(n_prompts >= 20);
    json_decref(golden);
}

static void test_qwen35(void **state)
{
    (void)state;
    check_family("qwen3_5_render.json", FT_SRV_FAMILY_QWEN35);
}

static void test_harmony(void **state)
{
    (void)state;
    check_family("gpt_oss_render.json", FT_SRV_FAMILY_HARMONY);
}

static void test_deepseek(void **state)
{
    (void)state;
    check_family("deepseek_v3_1_render.json", FT_SRV_FAMILY_DEEPSEEK);
}

static void test_glm(void **state)
{
    (void)state;
    check_family("glm4_6_render.json", FT_SRV_FAMILY_GLM);
}

static void test_qwen3_coder(void **state)
{
    (void)state;
    check_family("qwen3_coder_render.json", FT_SRV_FAMILY_QWEN3_CODER);
}

static void test_detect(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        ft_srv_family_t fam;
    } t[] = {{"qwen3_5.jinja", FT_SRV_FAMILY_QWEN35},
             {"gpt_oss.jinja", FT_SRV_FAMILY_HARMONY},
             {"deepseek_v3_1.jinja", FT_SRV_FAMILY_DEEPSEEK},
             {"glm4_6.jinja", FT_SRV_FAMILY_GLM},
             {"qwen3_coder.jinja", FT_SRV_FAMILY_QWEN3_CODER}};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        char *s = load_text(t[i].file);
        assert_int_equal(ft_srv_family_detect(s, 0), t[i].fam);
        free(s);
    }
    /* another template with render_extra_keys (not Qwen3-Coder's): not
     * Qwen3.5's renderer either; plain ChatML */
    assert_int_equal(ft_srv_family_detect("{% macro render_extra_keys(a, b) %}{% endmacro %}"
                                          "<|im_start|><function=example_function_name>",
                                          1),
                     FT_SRV_FAMILY_CHATML);
    assert_string_equal(ft_srv_family_name(FT_SRV_FAMILY_HARMONY), "harmony");
    assert_true(ft_srv_family_writes_bos(FT_SRV_FAMILY_DEEPSEEK));
    assert_false(ft_srv_family_writes_bos(FT_SRV_FAMILY_QWEN35));
}

/* Python's str.strip on Unicode whitespace, and the think split. */
static void test_text_helpers(void **state)
{
    (void)state;
    const char *s = " \xc2\xa0\t x y\xe2\x80\xa8\n\x1f";
    const char *o;
    size_t n;
    ft_srv_py_strip(s, strlen(s), &o, &n);
    assert_int_equal(n, 3);
    assert_memory_equal(o, "x y", 3);
    ft_srv_py_strip("\xe2\x80", 2, &o, &n); /* a cut sequence is not whitespace */
    assert_int_equal(n, 2);
    ft_srv_py_strip("   ", 3, &o, &n);
    assert_int_equal(n, 0);
    const char *r, *ct;
    size_t rn, cn;
    const char *t = "a<think>\nb<think>c\n</think>x</think>\n\nd";
    assert_true(ft_srv_split_think_text(t, strlen(t), &r, &rn, &ct, &cn));
    assert_int_equal(rn, 1);
    assert_memory_equal(r, "c", 1);
    assert_int_equal(cn, 1);
    assert_memory_equal(ct, "d", 1);
    assert_false(ft_srv_split_think_text("plain", 5, &r, &rn, &ct, &cn));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen35),       cmocka_unit_test(test_harmony),
        cmocka_unit_test(test_deepseek),     cmocka_unit_test(test_glm),
        cmocka_unit_test(test_qwen3_coder),  cmocka_unit_test(test_detect),
        cmocka_unit_test(test_text_helpers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
