/* ft serve's incremental output parser (runtime/serve/srv_outparse.c):
 * model text -> reasoning, content and tool calls. Every case is fed
 * whole, byte by byte, and split in two at every offset; the events,
 * merged per kind, must be the same every time (markers split anywhere,
 * newlines held back around markers), and equal the expected ones.
 * Malformed calls come out as content. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "srv_outparse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Events rendered as one string: R[..] reasoning, C[..] content, and
 * T<i>:name(args) per call; consecutive text of one kind merged. */
typedef struct rec {
    ft_srv_buf_t log;
    int last; /* kind of the last text event, -1 none */
} rec_t;

static void on_event(void *user, const ft_srv_ev_t *ev)
{
    rec_t *r = user;
    assert_true(ev->kind == FT_SRV_EV_TOOL_START || ev->kind == FT_SRV_EV_TOOL_END || ev->len > 0);
    switch (ev->kind) {
    case FT_SRV_EV_REASONING:
    case FT_SRV_EV_CONTENT:
        if (r->last != (int)ev->kind) {
            if (r->last >= 0) ft_srv_buf_puts(&r->log, "]");
            ft_srv_buf_puts(&r->log, ev->kind == FT_SRV_EV_REASONING ? "R[" : "C[");
        }
        ft_srv_buf_put(&r->log, ev->text, ev->len);
        r->last = (int)ev->kind;
        return;
    case FT_SRV_EV_TOOL_START:
        if (r->last >= 0) ft_srv_buf_puts(&r->log, "]");
        r->last = -1;
        ft_srv_buf_printf(&r->log, "T%u:%s(", ev->tool_index, ev->name);
        return;
    case FT_SRV_EV_TOOL_ARGS:
        ft_srv_buf_put(&r->log, ev->text, ev->len);
        return;
    case FT_SRV_EV_TOOL_END:
        ft_srv_buf_puts(&r->log, ")");
        return;
    }
}

/* The dialect and tool definitions check() parses with (Qwen3 unless a
 * test sets them). */
static ft_srv_dialect_t g_dialect = FT_SRV_DIALECT_QWEN3;
static json_t *g_tool_defs;

/* Feeds text in pieces cut at the offsets in cuts (ascending, n_cuts). */
static char *run(const char *text, int reasoning_open, int tools, const size_t *cuts, size_t n_cuts)
{
    rec_t r = {.last = -1};
    ft_srv_outparse_t p;
    ft_srv_outparse_init(&p, reasoning_open, tools, on_event, &r);
    if (g_dialect != FT_SRV_DIALECT_QWEN3) ft_srv_outparse_set_dialect(&p, g_dialect, g_tool_defs);
    size_t at = 0;
    for (size_t i = 0; i <= n_cuts; i++) {
        const size_t end = i < n_cuts ? cuts[i] : strlen(text);
        ft_srv_outparse_feed(&p, text + at, end - at);
        at = end;
    }
    ft_srv_outparse_finish(&p);
    ft_srv_outparse_free(&p);
    if (r.last >= 0) ft_srv_buf_puts(&r.log, "]");
    return ft_srv_buf_take(&r.log);
}

static void check(const char *text, int reasoning_open, int tools, const char *want)
{
    char *whole = run(text, reasoning_open, tools, NULL, 0);
    if (strcmp(whole, want)) fail_msg("'%s':\n  got  %s\n  want %s", text, whole, want);
    const size_t n = strlen(text);
    static size_t cuts[4096];
    assert_true(n < 4096);
    for (size_t i = 0; i + 1 < n; i++)
        cuts[i] = i + 1;
    char *bytes = run(text, reasoning_open, tools, cuts, n ? n - 1 : 0);
    if (strcmp(bytes, want))
        fail_msg("'%s' byte by byte:\n  got  %s\n  want %s", text, bytes, want);
    for (size_t c = 1; c < n; c++) {
        char *two = run(text, reasoning_open, tools, &c, 1);
        if (strcmp(two, want))
            fail_msg("'%s' cut at %zu:\n  got  %s\n  want %s", text, c, two, want);
        free(two);
    }
    free(whole);
    free(bytes);
}

static void test_content_only(void **state)
{
    (void)state;
    check("Hello world", 0, 1, "C[Hello world]");
    check("line 1\nline 2\n", 0, 1, "C[line 1\nline 2\n]");
    check("a < b <tool and <think", 0, 1, "C[a < b <tool and <think]");
    check("", 0, 1, "");
}

static void test_reasoning(void **state)
{
    (void)state;
    check("<think>\nLet me see.\n</think>\n\nThe answer.", 0, 1, "R[Let me see.]C[The answer.]");
    check("\n<think>\nA\n\nB\n</think>\n\nC", 0, 0, "R[A\n\nB]C[C]");
    /* the prompt opened the block */
    check("pondering\n</think>\n\nDone", 1, 1, "R[pondering]C[Done]");
    /* never closed: all reasoning */
    check("<think>\nstill thinking", 0, 1, "R[still thinking]");
    /* <think> after content is text */
    check("Hi <think>x</think>", 0, 1, "C[Hi <think>x</think>]");
}

static void test_tool_calls(void **state)
{
    (void)state;
    check("<tool_call>\n{\"name\": \"ls\", \"arguments\": {\"path\": \".\"}}\n</tool_call>", 0, 1,
          "T0:ls({\"path\": \".\"})");
    check("<think>\nNeed it.\n</think>\n\nLet me look.\n<tool_call>\n{\"name\": \"a\", "
          "\"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": "
          "{\"x\": [1, 2]}}\n</tool_call>",
          0, 1, "R[Need it.]C[Let me look.]T0:a({})T1:b({\"x\": [1, 2]})");
    /* streamed arguments are the model's own bytes (the template writes them back as
     * they are), nested objects, strings with braces and escapes included */
    check("<tool_call>{\"name\":\"f\",\"arguments\":{\"k\":\"v\",\"n\":1}}</tool_call>", 0, 1,
          "T0:f({\"k\":\"v\",\"n\":1})");
    check("<tool_call>\n{\"name\": \"e\\u0078\", \"arguments\": {\"s\": \"a}\\\"{[\", \"o\": "
          "{\"x\": [1, {}]}}}\n</tool_call>",
          0, 1, "T0:ex({\"s\": \"a}\\\"{[\", \"o\": {\"x\": [1, {}]}})");
    /* arguments first: read whole, re-serialized */
    check("<tool_call>{\"arguments\": {\"a\":1}, \"name\": \"g\"}</tool_call>", 0, 1,
          "T0:g({\"a\": 1})");
    /* a streamed call cut off ends where the output ends */
    check("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"p\": \"/tm", 0, 1,
          "T0:f({\"p\": \"/tm)");
    /* no arguments given: an empty object */
    check("<tool_call>{\"name\": \"f\"}</tool_call>", 0, 1, "T0:f({})");
    /* tools off: the markup is text */
    check("<tool_call>{\"name\": \"f\"}</tool_call>", 0, 0,
          "C[<tool_call>{\"name\": \"f\"}</tool_call>]");
}

static void test_malformed_calls(void **state)
{
    (void)state;
    check("<tool_call>\nnot json\n</tool_call>", 0, 1, "C[<tool_call>\nnot json\n</tool_call>]");
    check("<tool_call>{\"name\": 3}</tool_call>", 0, 1, "C[<tool_call>{\"name\": 3}</tool_call>]");
    check("<tool_call>{\"name\": \"f\", \"arguments\": \"s\"}</tool_call>", 0, 1,
          "C[<tool_call>{\"name\": \"f\", \"arguments\": \"s\"}</tool_call>]");
    /* cut off inside a call */
    check("ok\n<tool_call>\n{\"name\": \"f\", \"argu", 0, 1,
          "C[ok<tool_call>\n{\"name\": \"f\", \"argu]");
}

/* A forced call: the prompt opened <tool_call> (and named the tool). */
static char *run_forced(const char *prefix, const char *text)
{
    rec_t r = {.last = -1};
    ft_srv_outparse_t p;
    ft_srv_outparse_init(&p, 0, 1, on_event, &r);
    if (g_dialect != FT_SRV_DIALECT_QWEN3) ft_srv_outparse_set_dialect(&p, g_dialect, g_tool_defs);
    ft_srv_outparse_open_call(&p, prefix, strlen(prefix));
    for (const char *c = text; *c; c++)
        ft_srv_outparse_feed(&p, c, 1);
    ft_srv_outparse_finish(&p);
    ft_srv_outparse_free(&p);
    if (r.last >= 0) ft_srv_buf_puts(&r.log, "]");
    return ft_srv_buf_take(&r.log);
}

static void test_forced_calls(void **state)
{
    (void)state;
    char *s =
        run_forced("\n{\"name\": \"ls\", \"arguments\": ", "{\"path\": \".\"}}\n</tool_call>");
    assert_string_equal(s, "T0:ls({\"path\": \".\"})");
    free(s);
    s = run_forced("\n", "{\"name\": \"cat\", \"arguments\": {}}\n</tool_call>\nDone.");
    assert_string_equal(s, "T0:cat({})C[Done.]");
    free(s);
    /* the model did not write an object: its text, as content */
    s = run_forced("\n{\"name\": \"ls\", \"arguments\": ", "oops</tool_call>");
    assert_string_equal(s, "C[<tool_call>\n{\"name\": \"ls\", \"arguments\": oops</tool_call>]");
    free(s);
}

/* Qwen3.5 / Qwen3-Coder XML calls: parameters stream as a JSON object,
 * strings escaped as they come, typed values (by the tool's schema) held
 * whole; the newline after <parameter=P> and before </parameter> is
 * markup. */
static void test_xml_calls(void **state)
{
    (void)state;
    g_dialect = FT_SRV_DIALECT_XML;
    g_tool_defs =
        json_loads("[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
                   "{\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\"}, \"o\": "
                   "{\"type\": \"object\"}, \"s\": {\"type\": \"string\"}, \"u\": {\"type\": "
                   "[\"string\", \"null\"]}}}}}]",
                   0, NULL);
    assert_non_null(g_tool_defs);
    /* the reply opens inside <think> (Qwen3.5's generation prompt) */
    check("I should list.\n</think>\n\nLet me look.\n\n<tool_call>\n<function=ls>\n"
          "<parameter=path>\n/tmp\n</parameter>\n</function>\n</tool_call>",
          1, 1, "R[I should list.]C[Let me look.]T0:ls({\"path\": \"/tmp\"})");
    check("<tool_call>\n<function=f>\n<parameter=s>\nline \"1\"\nline\t2\\\n\n</parameter>\n"
          "<parameter=n>\n42\n</parameter>\n<parameter=o>\n{\"a\": [1, 2]}\n</parameter>\n"
          "<parameter=u>\n7\n</parameter>\n</function>\n</tool_call>",
          0, 1,
          "T0:f({\"s\": \"line \\\"1\\\"\\nline\\t2\\\\\\n\", \"n\": 42, \"o\": {\"a\": [1, 2]}, "
          "\"u\": \"7\"})");
    /* a typed value that is not JSON: a string; no parameters: {} */
    check("<tool_call>\n<function=f>\n<parameter=n>\nmany\n</parameter>\n</function>\n"
          "</tool_call>\n<tool_call>\n<function=g>\n</function>\n</tool_call>",
          0, 1, "T0:f({\"n\": \"many\"})T1:g({})");
    /* parallel calls and text after them */
    check("<tool_call>\n<function=a>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>\n"
          "<tool_call>\n<function=b>\n</function>\n</tool_call>\nDone.",
          0, 1, "T0:a({\"x\": \"1\"})T1:b({})C[Done.]");
    /* cut off inside a value: the call ends with what it had */
    check("<tool_call>\n<function=f>\n<parameter=s>\npart", 0, 1, "T0:f({\"s\": \"part\"})");
    check("<tool_call>\n<function=f>\n<parameter=n>\n12", 0, 1, "T0:f({\"n\": 12})");
    /* malformed: no <function=...>: the text */
    check("<tool_call>\n{\"name\": \"f\"}\n</tool_call>", 0, 1,
          "C[<tool_call>\n{\"name\": \"f\"}\n</tool_call>]");
    check("<tool_call>\n<function=>\n</tool_call>", 0, 1,
          "C[<tool_call>\n<function=>\n</tool_call>]");
    check("x <tool_call>\n<funct", 0, 1, "C[x <tool_call>\n<funct]");
    /* junk between parameters is dropped, the call survives */
    check("<tool_call>\n<function=f>\noops\n<parameter=s>\nv\n</parameter>\n</function>\n"
          "</tool_call>",
          0, 1, "T0:f({\"s\": \"v\"})");
    /* tools off: all text */
    check("<tool_call>\n<function=f>\n</function>\n</tool_call>", 0, 0,
          "C[<tool_call>\n<function=f>\n</function>\n</tool_call>]");
    /* a forced call, named by the prompt */
    char *s = run_forced("\n<function=f>\n", "<parameter=s>\nx\n</parameter>\n</function>\n"
                                             "</tool_call>");
    assert_string_equal(s, "T0:f({\"s\": \"x\"})");
    free(s);
    json_decref(g_tool_defs);
    g_tool_defs = NULL;
    g_dialect = FT_SRV_DIALECT_QWEN3;
}

#define DS_CALLS                                                                                   \
    "<\xef\xbd\x9ctool\xe2\x96\x81"                                                                \
    "calls\xe2\x96\x81"                                                                            \
    "begin\xef\xbd\x9c>"
#define DS_CALLS_END                                                                               \
    "<\xef\xbd\x9ctool\xe2\x96\x81"                                                                \
    "calls\xe2\x96\x81"                                                                            \
    "end\xef\xbd\x9c>"
#define DS_CALL                                                                                    \
    "<\xef\xbd\x9ctool\xe2\x96\x81"                                                                \
    "call\xe2\x96\x81"                                                                             \
    "begin\xef\xbd\x9c>"
#define DS_CALL_END                                                                                \
    "<\xef\xbd\x9ctool\xe2\x96\x81"                                                                \
    "call\xe2\x96\x81"                                                                             \
    "end\xef\xbd\x9c>"
#define DS_SEP "<\xef\xbd\x9ctool\xe2\x96\x81sep\xef\xbd\x9c>"

static void test_deepseek_calls(void **state)
{
    (void)state;
    g_dialect = FT_SRV_DIALECT_DEEPSEEK;
    check("Checking." DS_CALLS DS_CALL "get_weather" DS_SEP
          "{\"city\": \"Oslo\"}" DS_CALL_END DS_CALL "ls" DS_SEP "{}" DS_CALL_END DS_CALLS_END,
          0, 1, "C[Checking.]T0:get_weather({\"city\": \"Oslo\"})T1:ls({})");
    /* thinking on: the prompt opened <think> */
    check("hmm</think>Answer", 1, 1, "R[hmm]C[Answer]");
    /* no separator: the text; cut off in the arguments: the call ends */
    check(DS_CALLS DS_CALL "bad name <x>" DS_CALL_END, 0, 1,
          "C[" DS_CALL "bad name <x>" DS_CALL_END "]");
    check(DS_CALLS DS_CALL "f" DS_SEP "{\"a\": 1", 0, 1, "T0:f({\"a\": 1)");
    check(DS_CALL "f" DS_SEP "{}" DS_CALL_END, 0, 0, "C[" DS_CALL "f" DS_SEP "{}" DS_CALL_END "]");
    char *s = run_forced("f" DS_SEP, "{\"x\": 2}" DS_CALL_END DS_CALLS_END);
    assert_string_equal(s, "T0:f({\"x\": 2})");
    free(s);
    g_dialect = FT_SRV_DIALECT_QWEN3;
}

static void test_harmony(void **state)
{
    (void)state;
    g_dialect = FT_SRV_DIALECT_HARMONY;
    check("<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>"
          "commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Oslo\"}"
          "<|call|>",
          0, 1, "R[Need weather.]T0:get_weather({\"city\":\"Oslo\"})");
    check("<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final"
          "<|message|>The answer.<|return|>",
          0, 1, "R[Think.]C[The answer.]");
    /* the recipient before the channel, as the template writes history */
    check(" to=functions.ls<|channel|>commentary json<|message|>{}<|call|>", 0, 1, "T0:ls({})");
    /* a commentary preamble is content; without tools a call's body is too */
    check("<|channel|>commentary<|message|>Looking.<|end|>", 0, 1, "C[Looking.]");
    check("<|channel|>commentary to=functions.f<|message|>{}<|call|>", 0, 0, "C[{}]");
    /* not harmony at all: content; cut off in a body or arguments */
    check("plain words", 0, 1, "C[plain words]");
    check("<|channel|>final<|message|>half", 0, 1, "C[half]");
    check("<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\"", 0, 1,
          "T0:f({\"a\")");
    check("<|channel|>fin", 0, 1, "");
    char *s = run_forced("<|channel|>commentary to=functions.f <|constrain|>json<|message|>",
                         "{\"q\": 1}<|call|>");
    assert_string_equal(s, "T0:f({\"q\": 1})");
    free(s);
    g_dialect = FT_SRV_DIALECT_QWEN3;
}

/* GLM-4.5/4.6: <tool_call>NAME, then <arg_key>/<arg_value> pairs. */
static void test_glm_calls(void **state)
{
    (void)state;
    g_dialect = FT_SRV_DIALECT_GLM;
    g_tool_defs = json_loads("[{\"type\": \"function\", \"function\": {\"name\": \"f\", "
                             "\"parameters\": {\"type\": \"object\", \"properties\": {\"n\": "
                             "{\"type\": \"integer\"}, \"s\": {\"type\": \"string\"}}}}}]",
                             0, NULL);
    assert_non_null(g_tool_defs);
    check(
        "<think>Need f.</think>\nCalling.\n<tool_call>f\n<arg_key>s</arg_key>\n<arg_value>a \"b\"\n"
        "c</arg_value>\n<arg_key>n</arg_key>\n<arg_value>3</arg_value>\n</tool_call>",
        0, 1, "R[Need f.]C[Calling.]T0:f({\"s\": \"a \\\"b\\\"\\nc\", \"n\": 3})");
    /* no arguments; a second call; an untyped argument is a string */
    check("<tool_call>now</tool_call>\n<tool_call>g\n<arg_key>x</arg_key>\n<arg_value>[1]"
          "</arg_value>\n</tool_call>",
          0, 1, "T0:now({})T1:g({\"x\": \"[1]\"})");
    /* a typed value that is not JSON; a key with no value; cut off in a value */
    check("<tool_call>f\n<arg_key>n</arg_key>\n<arg_value>lots</arg_value>\n<arg_key>s</arg_key>"
          "\n</tool_call>",
          0, 1, "T0:f({\"n\": \"lots\", \"s\": null})");
    check("<tool_call>f\n<arg_key>s</arg_key>\n<arg_value>par", 0, 1, "T0:f({\"s\": \"par\"})");
    /* no name: the text */
    check("<tool_call><arg_key>s</arg_key></tool_call>", 0, 1,
          "C[<tool_call><arg_key>s</arg_key></tool_call>]");
    check("<tool_call>f(x)</tool_call>", 0, 0, "C[<tool_call>f(x)</tool_call>]");
    char *s = run_forced("f\n", "<arg_key>n</arg_key>\n<arg_value>5</arg_value>\n</tool_call>");
    assert_string_equal(s, "T0:f({\"n\": 5})");
    free(s);
    json_decref(g_tool_defs);
    g_tool_defs = NULL;
    g_dialect = FT_SRV_DIALECT_QWEN3;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_content_only),   cmocka_unit_test(test_reasoning),
        cmocka_unit_test(test_tool_calls),     cmocka_unit_test(test_malformed_calls),
        cmocka_unit_test(test_forced_calls),   cmocka_unit_test(test_xml_calls),
        cmocka_unit_test(test_deepseek_calls), cmocka_unit_test(test_harmony),
        cmocka_unit_test(test_glm_calls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
