/* ft serve's Qwen3 chat template renderer (runtime/serve/srv_template.c)
 * against Python Jinja2 rendering the template itself (and, for each
 * case, its message boundaries, which anchors are marked at):
 * tests/data/serve/qwen3_render.json holds OpenAI request bodies and the
 * prompts Jinja2 made from them (make_qwen3_golden.py regenerates it);
 * every one must come out byte for byte. Also the family detection and
 * the refusals (tools on a template without tool syntax). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "model_gen.h"
#include "srv_template.h"

#include <stdio.h>
#include <string.h>

static json_t *load_golden(void)
{
    json_error_t je;
    json_t *v = json_load_file(FT_SOURCE_DIR "/tests/data/serve/qwen3_render.json", 0, &je);
    if (!v) fail_msg("qwen3_render.json: %s (line %d)", je.text, je.line);
    return v;
}

/* The first differing byte, for a readable failure. */
static void expect_same(const char *name, const char *want, const char *got)
{
    if (!strcmp(want, got)) return;
    size_t i = 0;
    while (want[i] && want[i] == got[i])
        i++;
    fail_msg("case '%s': differs at byte %zu:\n  want ...%.60s\n  got  ...%.60s", name, i,
             want + (i > 20 ? i - 20 : 0), got + (i > 20 ? i - 20 : 0));
}

static int ends_with_at(const char *text, size_t at, const char *suffix)
{
    const size_t n = strlen(suffix);
    return at >= n && !memcmp(text + at - n, suffix, n);
}

/* The same rendering with its message boundaries: the text unchanged;
 * each boundary after a message's "<|im_end|>\n", a tool result's
 * "</tool_response>" or a tool call's "</tool_call>"; every message end
 * and every tool call of the messages marked. */
static void check_bounds(const char *name, const ft_srv_conv_t *conv, const ft_srv_buf_t *want)
{
    ft_srv_buf_t out = {0};
    ft_srv_bounds_t bd = {0};
    ft_srv_error_t err;
    if (!ft_srv_render_bounds(FT_SRV_FAMILY_QWEN3, conv, 1, &out, &bd, &err))
        fail_msg("case '%s': %s", name, err.message);
    expect_same(name, want->data, out.data);
    size_t calls = 0, marked_calls = 0;
    for (size_t i = 0; i < conv->n_msgs; i++)
        calls += conv->msgs[i].n_calls;
    for (size_t i = 0; i < bd.n; i++) {
        if (i && bd.off[i] <= bd.off[i - 1]) fail_msg("case '%s': boundaries not ascending", name);
        if (bd.off[i] >= out.len) fail_msg("case '%s': boundary %zu past the text", name, i);
        const size_t at = bd.off[i];
        if (ends_with_at(out.data, at, "</tool_call>"))
            marked_calls++;
        else if (!ends_with_at(out.data, at, "<|im_end|>\n") &&
                 !ends_with_at(out.data, at, "</tool_response>"))
            fail_msg("case '%s': a boundary at %zu after ...%.30s", name, at,
                     out.data + (at > 30 ? at - 30 : 0));
    }
    assert_int_equal(marked_calls, calls);
    for (const char *p = out.data; (p = strstr(p, "<|im_end|>\n")); p++) {
        const size_t end = (size_t)(p - out.data) + strlen("<|im_end|>\n");
        size_t k = 0;
        while (k < bd.n && bd.off[k] != end)
            k++;
        if (k == bd.n) fail_msg("case '%s': the message ending at %zu is not marked", name, end);
    }
    ft_srv_bounds_free(&bd);
    ft_srv_buf_free(&out);
}

static void test_golden(void **state)
{
    (void)state;
    json_t *golden = load_golden();
    json_t *cases = json_object_get(golden, "cases");
    assert_true(json_array_size(cases) >= 10);
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        char *body = json_dumps(json_object_get(c, "request"), 0);
        json_t *root = NULL;
        ft_srv_error_t err;
        if (!ft_srv_json_parse(body, strlen(body), &root, &err))
            fail_msg("case '%s': %s", name, err.message);
        ft_srv_conv_t conv;
        ft_srv_conv_init(&conv);
        if (!ft_srv_openai_parse(root, 1000, &conv, &err))
            fail_msg("case '%s': %s", name, err.message);
        ft_srv_buf_t out = {0};
        if (!ft_srv_render(FT_SRV_FAMILY_QWEN3, &conv, 1, &out, &err))
            fail_msg("case '%s': %s", name, err.message);
        expect_same(name, json_string_value(json_object_get(c, "prompt")), out.data);
        check_bounds(name, &conv, &out);
        ft_srv_buf_free(&out);
        ft_srv_conv_free(&conv);
        json_decref(root);
        free(body);
    }
    json_decref(golden);
}

static void test_detect(void **state)
{
    (void)state;
    assert_int_equal(ft_srv_family_detect(ft_fixture_chat_template, 1), FT_SRV_FAMILY_QWEN3);
    assert_int_equal(ft_srv_family_detect("{{ '<|im_start|>' + m.role }}", 1),
                     FT_SRV_FAMILY_CHATML);
    assert_int_equal(ft_srv_family_detect(NULL, 1), FT_SRV_FAMILY_CHATML);
    assert_int_equal(ft_srv_family_detect(NULL, 0), FT_SRV_FAMILY_NONE);
    assert_int_equal(ft_srv_family_detect("{{ bos_token }}[INST]", 0), FT_SRV_FAMILY_NONE);
}

static void test_refusals(void **state)
{
    (void)state;
    const char *body = "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                       "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]}";
    json_t *root = NULL;
    ft_srv_error_t err;
    assert_true(ft_srv_json_parse(body, strlen(body), &root, &err));
    ft_srv_conv_t conv;
    ft_srv_conv_init(&conv);
    assert_true(ft_srv_openai_parse(root, 1000, &conv, &err));
    ft_srv_buf_t out = {0};
    assert_false(ft_srv_render(FT_SRV_FAMILY_CHATML, &conv, 1, &out, &err));
    assert_int_equal(err.http, 400);
    assert_string_equal(err.param, "tools");
    assert_false(ft_srv_render(FT_SRV_FAMILY_NONE, &conv, 1, &out, &err));
    ft_srv_buf_free(&out);
    ft_srv_conv_free(&conv);
    json_decref(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_detect),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
