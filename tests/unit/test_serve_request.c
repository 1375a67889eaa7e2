/* ft serve's request readers (runtime/serve/srv_openai_req.c,
 * srv_anthropic_req.c, srv_conv.c): hostile and wrong bodies give a 400
 * naming the field, as the OpenAI and Anthropic APIs do; good ones fill
 * the conversation (sampling fields, stops, logit bias, tool calls;
 * Anthropic's system blocks, billing header, tool_use and tool_result
 * blocks). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "srv_conv.h"
#include "srv_format.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses body as proto (0 OpenAI, 1 Anthropic); returns 1 on success. */
static int parse(int anthropic, const char *body, ft_srv_conv_t *c, ft_srv_error_t *err)
{
    ft_srv_conv_init(c);
    json_t *root = NULL;
    memset(err, 0, sizeof(*err));
    if (!ft_srv_json_parse(body, strlen(body), &root, err)) return 0;
    const int ok = anthropic ? ft_srv_anthropic_parse(root, 0, c, err)
                             : ft_srv_openai_parse(root, 1000, c, err);
    json_decref(root);
    return ok;
}

static void expect_error(int anthropic, const char *body, const char *param)
{
    ft_srv_conv_t c;
    ft_srv_error_t err;
    if (parse(anthropic, body, &c, &err)) fail_msg("accepted: %s", body);
    if (err.http != 400 || strcmp(err.param, param) != 0 || !err.message[0])
        fail_msg("%s: http %d param '%s' (want '%s'): %s", body, err.http, err.param, param,
                 err.message);
    ft_srv_conv_free(&c);
}

#define MSGS "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"

static void test_openai_errors(void **state)
{
    (void)state;
    expect_error(0, "not json", "");
    expect_error(0, "[1,2]", "");
    expect_error(0, "{\"a\":1,\"a\":2," MSGS "}", "");
    expect_error(0, "{\"n\":1e999," MSGS "}", "");
    expect_error(0, "{}", "messages");
    expect_error(0, "{\"messages\":[]}", "messages");
    expect_error(0, "{\"messages\":[{\"role\":\"robot\",\"content\":\"x\"}]}", "messages[0].role");
    expect_error(0, "{\"messages\":[{\"role\":\"user\",\"content\":5}]}", "messages[0].content");
    expect_error(0,
                 "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\","
                 "\"image_url\":{\"url\":\"x\"}}]}]}",
                 "messages[0].content");
    expect_error(0, "{\"temperature\":\"hot\"," MSGS "}", "temperature");
    expect_error(0, "{\"temperature\":3," MSGS "}", "temperature");
    expect_error(0, "{\"max_tokens\":0," MSGS "}", "max_tokens");
    expect_error(0, "{\"max_tokens\":1.5," MSGS "}", "max_tokens");
    expect_error(0, "{\"max_completion_tokens\":99999999999," MSGS "}", "max_completion_tokens");
    expect_error(0, "{\"n\":2," MSGS "}", "n");
    expect_error(0, "{\"stream\":\"yes\"," MSGS "}", "stream");
    expect_error(0, "{\"seed\":\"1\"," MSGS "}", "seed");
    expect_error(0, "{\"logit_bias\":{\"abc\":1}," MSGS "}", "logit_bias");
    expect_error(0, "{\"logit_bias\":{\"1000\":1}," MSGS "}", "logit_bias");
    expect_error(0, "{\"logit_bias\":{\"5\":101}," MSGS "}", "logit_bias");
    expect_error(0, "{\"top_logprobs\":3," MSGS "}", "top_logprobs");
    expect_error(0, "{\"logprobs\":true,\"top_logprobs\":21," MSGS "}", "top_logprobs");
    expect_error(0, "{\"stop\":5," MSGS "}", "stop");
    expect_error(0, "{\"stop\":[\"\"]," MSGS "}", "stop");
    expect_error(0,
                 "{\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\",\"j\",\"k\","
                 "\"l\",\"m\",\"n\",\"o\",\"p\",\"q\"]," MSGS "}",
                 "stop");
    expect_error(0, "{\"tools\":[{\"type\":\"code\"}]," MSGS "}", "tools[0]");
    expect_error(0, "{\"tools\":{}," MSGS "}", "tools");
    expect_error(0, "{\"tool_choice\":\"sometimes\"," MSGS "}", "tool_choice");
    expect_error(0, "{\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{}}," MSGS "}",
                 "response_format.json_schema.schema");
    expect_error(0,
                 "{\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":"
                 "{\"type\":\"object\",\"properties\":{\"a\":{\"oneOf\":[]}}}}}," MSGS "}",
                 "response_format.json_schema.schema.properties.a.oneOf");
    expect_error(0, "{\"response_format\":{\"type\":\"yaml\"}," MSGS "}", "response_format");
    expect_error(0, "{\"response_format\":\"json_object\"," MSGS "}", "response_format");
    expect_error(0, "{\"stream_options\":3," MSGS "}", "stream_options");
    expect_error(0,
                 "{\"messages\":[{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":"
                 "\"c\"}]}]}",
                 "messages[0].tool_calls");
    /* nesting past the limit */
    char deep[512];
    int at = snprintf(deep, sizeof(deep), "{" MSGS ",\"x\":");
    for (int i = 0; i < 100; i++)
        deep[at++] = '[';
    for (int i = 0; i < 100; i++)
        deep[at++] = ']';
    deep[at++] = '}';
    deep[at] = '\0';
    expect_error(0, deep, "");
}

static void test_openai_fields(void **state)
{
    (void)state;
    ft_srv_conv_t c;
    ft_srv_error_t err;
    const char *body =
        "{\"model\":\"m1\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
        "\"max_completion_tokens\":7,\"temperature\":0.25,\"top_p\":0.5,\"top_k\":9,"
        "\"presence_penalty\":1,\"frequency_penalty\":-1,\"seed\":-1,\"stop\":\"END\","
        "\"logprobs\":true,\"top_logprobs\":4,\"logit_bias\":{\"3\":-100,\"4\":2},"
        "\"parallel_tool_calls\":false,\"chat_template_kwargs\":{\"enable_thinking\":false},"
        "\"unknown_field\":{\"ignored\":true},"
        "\"messages\":[{\"role\":\"developer\",\"content\":\"D\"},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\","
        "\"text\":\"b\"}]},"
        "{\"role\":\"assistant\",\"content\":null,\"reasoning\":\"R\",\"tool_calls\":[{\"id\":"
        "\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":{\"x\":[1,"
        "\"y\"]}}}]},{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"out\"}]}";
    if (!parse(0, body, &c, &err)) fail_msg("%s", err.message);
    assert_string_equal(c.model, "m1");
    assert_true(c.stream && c.include_usage && c.logprobs && !c.parallel_tool_calls);
    assert_int_equal(c.max_tokens, 7);
    assert_true(c.sampling.temperature == 0.25f && c.sampling.top_p == 0.5f);
    assert_int_equal(c.sampling.top_k, 9);
    assert_true(c.sampling.presence_penalty == 1.0f && c.sampling.frequency_penalty == -1.0f);
    assert_true(c.has_seed && c.sampling.seed == UINT64_MAX);
    assert_int_equal(c.n_stops, 1);
    assert_string_equal(c.stops[0], "END");
    assert_int_equal(c.sampling.top_logprobs, 4);
    assert_int_equal(c.sampling.n_logit_bias, 2);
    assert_true(isinf(c.sampling.logit_bias[0].bias) && c.sampling.logit_bias[0].id == 3);
    assert_true(c.sampling.logit_bias[1].bias == 2.0f);
    assert_int_equal(c.enable_thinking, 0);
    assert_int_equal(c.n_msgs, 4);
    assert_int_equal(c.msgs[0].role, FT_SRV_SYSTEM);
    assert_string_equal(c.msgs[1].content, "ab");
    assert_string_equal(c.msgs[2].content, "");
    assert_string_equal(c.msgs[2].reasoning, "R");
    assert_int_equal(c.msgs[2].n_calls, 1);
    /* object arguments are written as tojson does */
    assert_string_equal(c.msgs[2].calls[0].arguments, "{\"x\": [1, \"y\"]}");
    assert_string_equal(c.msgs[3].tool_call_id, "c1");
    assert_false(c.json_object);
    ft_srv_conv_free(&c);
    /* response_format json_object: the reply is JSON, so no thinking first */
    if (!parse(0, "{\"response_format\":{\"type\":\"json_object\"}," MSGS "}", &c, &err))
        fail_msg("%s", err.message);
    assert_true(c.json_object);
    assert_int_equal(c.enable_thinking, 0);
    ft_srv_conv_free(&c);
    if (!parse(0, "{\"response_format\":{\"type\":\"text\"}," MSGS "}", &c, &err))
        fail_msg("%s", err.message);
    assert_false(c.json_object);
    ft_srv_conv_free(&c);
    /* U+0000 in a string (an agent sends back the NUL byte a random model
     * wrote): accepted, U+FFFD in its place */
    if (!parse(0,
               "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":"
               "\"a\\u0000b\\u0000\"}]}]}",
               &c, &err))
        fail_msg("%s", err.message);
    assert_string_equal(c.msgs[0].content, "a\xef\xbf\xbd"
                                           "b\xef\xbf\xbd");
    ft_srv_conv_free(&c);
}

static void test_anthropic(void **state)
{
    (void)state;
    ft_srv_conv_t c;
    ft_srv_error_t err;
    const char *body =
        "{\"model\":\"claude\",\"max_tokens\":50,\"stop_sequences\":[\"X\"],"
        "\"thinking\":{\"type\":\"disabled\"},\"metadata\":{\"user_id\":\"u\"},"
        "\"system\":[{\"type\":\"text\",\"text\":\"x-anthropic-billing-header: cc_version=1;\"},"
        "{\"type\":\"text\",\"text\":\"One\"},{\"type\":\"text\",\"text\":\"Two\","
        "\"cache_control\":{\"type\":\"ephemeral\"}}],"
        "\"tools\":[{\"name\":\"ls\",\"description\":\"d\",\"input_schema\":{\"type\":"
        "\"object\"}}],"
        "\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"T\","
        "\"signature\":\"s\"},{\"type\":\"text\",\"text\":\"ok\"},{\"type\":\"tool_use\",\"id\":"
        "\"u1\",\"name\":\"ls\",\"input\":{\"p\":\".\"}}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"u1\","
        "\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]},"
        "{\"type\":\"text\",\"text\":\"and?\"}]}]}";
    if (!parse(1, body, &c, &err)) fail_msg("%s", err.message);
    assert_int_equal(c.max_tokens, 50);
    assert_int_equal(c.enable_thinking, 0);
    assert_int_equal(c.n_stops, 1);
    assert_int_equal(c.n_msgs, 5);
    assert_int_equal(c.msgs[0].role, FT_SRV_SYSTEM);
    assert_string_equal(c.msgs[0].content, "One\nTwo"); /* billing header dropped */
    assert_int_equal(c.msgs[2].role, FT_SRV_ASSISTANT);
    assert_string_equal(c.msgs[2].content, "ok");
    assert_string_equal(c.msgs[2].reasoning, "T");
    assert_string_equal(c.msgs[2].calls[0].arguments, "{\"p\": \".\"}");
    assert_int_equal(c.msgs[3].role, FT_SRV_TOOL);
    assert_string_equal(c.msgs[3].content, "a\nb");
    assert_string_equal(c.msgs[3].tool_call_id, "u1");
    assert_int_equal(c.msgs[4].role, FT_SRV_USER);
    assert_string_equal(c.msgs[4].content, "and?");
    /* tools in the template's (OpenAI) shape */
    char *tools = ft_srv_tojson(c.tools);
    assert_string_equal(tools, "[{\"type\": \"function\", \"function\": {\"name\": \"ls\", "
                               "\"description\": \"d\", \"parameters\": {\"type\": \"object\"}}}]");
    free(tools);
    ft_srv_conv_free(&c);
    /* the billing header as the first line of a block with more text, or of
     * a string system: that line goes, the rest stays */
    if (!parse(1,
               "{\"max_tokens\":5,\"system\":[{\"type\":\"text\",\"text\":"
               "\"x-anthropic-billing-header: cch=9;\\nYou are X.\"}]," MSGS "}",
               &c, &err))
        fail_msg("%s", err.message);
    assert_string_equal(c.msgs[0].content, "You are X.");
    ft_srv_conv_free(&c);
    if (!parse(
            1,
            "{\"max_tokens\":5,\"system\":\"x-anthropic-billing-header: cch=1;\\nBe brief.\"," MSGS
            "}",
            &c, &err))
        fail_msg("%s", err.message);
    assert_string_equal(c.msgs[0].content, "Be brief.");
    ft_srv_conv_free(&c);

    expect_error(1, "{" MSGS "}", "max_tokens");
    /* a system message among the messages (Claude Code 2.1 sends its
     * environment so, after the first user turn) stays where it is */
    if (!parse(1,
               "{\"max_tokens\":5,\"system\":\"S\",\"messages\":[{\"role\":\"user\",\"content\":"
               "\"u\"},{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":\"E\"}]}]}",
               &c, &err))
        fail_msg("%s", err.message);
    assert_int_equal(c.n_msgs, 3);
    assert_int_equal(c.msgs[2].role, FT_SRV_SYSTEM);
    assert_string_equal(c.msgs[2].content, "E");
    ft_srv_conv_free(&c);
    expect_error(1, "{\"max_tokens\":5,\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]}",
                 "messages[0].role");
    expect_error(1,
                 "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
                 "\"image\",\"source\":{}}]}]}",
                 "messages[0].content");
    expect_error(1, "{\"max_tokens\":5,\"temperature\":1.5," MSGS "}", "temperature");
    expect_error(1, "{\"max_tokens\":5,\"thinking\":{\"type\":\"maybe\"}," MSGS "}", "thinking");
    expect_error(1, "{\"max_tokens\":5,\"tool_choice\":{\"type\":\"tool\"}," MSGS "}",
                 "tool_choice");
    expect_error(1, "{\"max_tokens\":5,\"tools\":[{\"description\":\"no name\"}]," MSGS "}",
                 "tools");
    expect_error(1, "{\"max_tokens\":5,\"system\":7," MSGS "}", "system");
}

static void test_completions(void **state)
{
    (void)state;
    const char *bad[][2] = {
        {"{}", "prompt"},
        {"{\"prompt\":[]}", "prompt"},
        {"{\"prompt\":[\"a\",\"b\"]}", "prompt"},
        {"{\"prompt\":[1,-2]}", "prompt"},
        {"{\"prompt\":[1,1000]}", "prompt"},
        {"{\"prompt\":\"x\",\"suffix\":\"y\"}", "suffix"},
        {"{\"prompt\":\"x\",\"logprobs\":6}", "logprobs"},
        {"{\"prompt\":\"x\",\"best_of\":2}", "best_of"},
        {"{\"prompt\":\"x\",\"echo\":1}", "echo"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ft_srv_conv_t c;
        ft_srv_conv_init(&c);
        ft_srv_error_t err;
        json_t *root = NULL;
        assert_true(ft_srv_json_parse(bad[i][0], strlen(bad[i][0]), &root, &err));
        if (ft_srv_completions_parse(root, 1000, &c, &err)) fail_msg("accepted %s", bad[i][0]);
        if (strcmp(err.param, bad[i][1]) != 0)
            fail_msg("%s: param '%s', want '%s'", bad[i][0], err.param, bad[i][1]);
        json_decref(root);
        ft_srv_conv_free(&c);
    }
    ft_srv_conv_t c;
    ft_srv_conv_init(&c);
    ft_srv_error_t err;
    json_t *root = NULL;
    const char *ok = "{\"prompt\":[\"Once\"],\"echo\":true,\"logprobs\":3,\"stop\":[\".\"]}";
    assert_true(ft_srv_json_parse(ok, strlen(ok), &root, &err));
    if (!ft_srv_completions_parse(root, 1000, &c, &err)) fail_msg("%s", err.message);
    assert_true(c.raw && c.echo && c.logprobs);
    assert_int_equal(c.sampling.top_logprobs, 3);
    assert_int_equal(c.max_tokens, 16);
    assert_string_equal(c.prompt, "Once");
    json_decref(root);
    ft_srv_conv_free(&c);
}

static void test_responses(void **state)
{
    (void)state;
    ft_srv_conv_t c;
    ft_srv_conv_init(&c);
    ft_srv_error_t err;
    json_t *root = NULL;
    const char *body =
        "{\"model\":\"codex\",\"instructions\":\"I\",\"max_output_tokens\":9,\"store\":false,"
        "\"reasoning\":{\"effort\":\"none\"},\"tools\":[{\"type\":\"function\",\"name\":\"sh\","
        "\"parameters\":{\"type\":\"object\"}},{\"type\":\"web_search\"}],\"input\":["
        "{\"type\":\"message\",\"role\":\"developer\",\"content\":\"D\"},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"go\"}]},"
        "{\"type\":\"reasoning\",\"summary\":[],\"content\":[{\"type\":\"reasoning_text\","
        "\"text\":\"R\"}]},"
        "{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"sh\",\"arguments\":\"{}\"},"
        "{\"type\":\"function_call\",\"call_id\":\"c2\",\"name\":\"sh\",\"arguments\":\"{\\\"a\\\":"
        "1}\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"o1\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"c2\",\"output\":\"o2\"}]}";
    assert_true(ft_srv_json_parse(body, strlen(body), &root, &err));
    if (!ft_srv_responses_parse(root, &c, &err)) fail_msg("%s", err.message);
    assert_int_equal(c.max_tokens, 9);
    assert_int_equal(c.enable_thinking, 0);
    assert_int_equal(c.n_msgs, 5); /* system (instructions + developer), user, assistant, 2 tool */
    assert_string_equal(c.msgs[0].content, "I\n\nD");
    assert_int_equal(c.msgs[1].role, FT_SRV_USER);
    assert_int_equal(c.msgs[2].role, FT_SRV_ASSISTANT);
    assert_string_equal(c.msgs[2].reasoning, "R");
    assert_int_equal(c.msgs[2].n_calls, 2);
    assert_string_equal(c.msgs[2].calls[1].arguments, "{\"a\":1}");
    assert_string_equal(c.msgs[4].tool_call_id, "c2");
    assert_int_equal(json_array_size(c.tools), 1); /* web_search is not ours to run */
    assert_null(c.reasoning_effort);
    json_decref(root);
    ft_srv_conv_free(&c);
    /* an effort gpt-oss's template prints */
    ft_srv_conv_init(&c);
    const char *high = "{\"input\":\"x\",\"reasoning\":{\"effort\":\"high\"}}";
    assert_true(ft_srv_json_parse(high, strlen(high), &root, &err));
    assert_true(ft_srv_responses_parse(root, &c, &err));
    assert_string_equal(c.reasoning_effort, "high");
    assert_int_equal(c.enable_thinking, -1);
    json_decref(root);
    ft_srv_conv_free(&c);
    const char *bad[][2] = {
        {"{}", "input"},
        {"{\"input\":[]}", "input"},
        {"{\"input\":\"x\",\"previous_response_id\":\"r\"}", "previous_response_id"},
        {"{\"input\":\"x\",\"background\":true}", "background"},
        {"{\"input\":[{\"type\":\"custom_tool_call\"}]}", "input[0]"},
        {"{\"input\":[{\"role\":\"robot\",\"content\":\"x\"}]}", "input[0]"},
        {"{\"input\":\"x\",\"tool_choice\":\"sometimes\"}", "tool_choice"},
        {"{\"input\":\"x\",\"max_output_tokens\":0}", "max_output_tokens"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ft_srv_conv_init(&c);
        assert_true(ft_srv_json_parse(bad[i][0], strlen(bad[i][0]), &root, &err));
        if (ft_srv_responses_parse(root, &c, &err)) fail_msg("accepted %s", bad[i][0]);
        if (strcmp(err.param, bad[i][1]) != 0)
            fail_msg("%s: param '%s', want '%s'", bad[i][0], err.param, bad[i][1]);
        json_decref(root);
        ft_srv_conv_free(&c);
    }
}

static void test_tool_choice(void **state)
{
    (void)state;
    static const char *const bodies[] = {
        "{\"tool_choice\":\"required\",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":"
        "\"ls\"}}]," MSGS "}",
        "{\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"ls\"}},\"tools\":[{"
        "\"type\":\"function\",\"function\":{\"name\":\"ls\"}}]," MSGS "}",
        "{\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"rm\"}},\"tools\":[{"
        "\"type\":\"function\",\"function\":{\"name\":\"ls\"}}]," MSGS "}",
        "{\"tool_choice\":\"required\"," MSGS "}",
    };
    const int ok[] = {1, 1, 0, 0};
    for (int i = 0; i < 4; i++) {
        ft_srv_conv_t c;
        ft_srv_error_t err;
        if (!parse(0, bodies[i], &c, &err)) fail_msg("%s: %s", bodies[i], err.message);
        assert_true(c.tool_choice_required);
        assert_true(i == 0 || i == 3 ? !c.tool_choice_name : c.tool_choice_name != NULL);
        if (ft_srv_conv_check_tool_choice(&c, "tool_choice", &err) != ok[i])
            fail_msg("%s: check %d", bodies[i], !ok[i]);
        if (!ok[i]) assert_string_equal(err.param, "tool_choice");
        ft_srv_conv_free(&c);
    }
}

/* An error quoting bytes that are not UTF-8 (a JSON parse error near
 * them, a URL) still gets its body, in both shapes. */
static void test_error_bodies(void **state)
{
    (void)state;
    ft_srv_conv_t c;
    ft_srv_error_t err;
    const char bad[] = "{\"x\":\"\\ud80\xd2\xb2}";
    assert_false(parse(0, bad, &c, &err));
    ft_srv_conv_free(&c);
    for (int p = FT_SRV_OPENAI; p <= FT_SRV_RESPONSES; p++) {
        char *body = ft_srv_error_body((ft_srv_proto_t)p, &err);
        assert_non_null(body);
        json_error_t je;
        json_t *v = json_loads(body, 0, &je);
        if (!v) fail_msg("%s: %s", body, je.text);
        json_decref(v);
        free(body);
    }
    ft_srv_error_set(&err, 404, "not_found_error", "\xff", "no route for GET /\xc3");
    char *body = ft_srv_error_body(FT_SRV_OPENAI, &err);
    assert_non_null(body);
    free(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_openai_errors), cmocka_unit_test(test_openai_fields),
        cmocka_unit_test(test_anthropic),     cmocka_unit_test(test_completions),
        cmocka_unit_test(test_responses),     cmocka_unit_test(test_tool_choice),
        cmocka_unit_test(test_error_bodies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
