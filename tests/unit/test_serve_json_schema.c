/* ft serve's json_schema constraint automaton (runtime/serve/
 * srv_json_schema.c): random schemas of the supported subset and random
 * values (most conforming, some with a wrong type, a missing required or
 * an unknown property, an enum value outside the set), serialized by
 * jansson; the automaton accepts the whole text as complete exactly when a
 * straightforward validator over jansson's parse says the value matches,
 * and every prefix of a match is accepted. Plus hand-written cases and
 * the refusals (400 naming the JSON path). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "srv_json_schema.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 1;
static uint32_t rnd(uint32_t n)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33) % n;
}

static ft_srv_js_schema_t *compile_text(const char *text, ft_srv_error_t *err)
{
    json_t *v = json_loads(text, 0, NULL);
    assert_non_null(v);
    ft_srv_js_schema_t *s = NULL;
    ft_srv_error_t e;
    if (!err) err = &e;
    memset(err, 0, sizeof(*err));
    ft_srv_js_compile(v, "response_format.json_schema.schema", &s, err);
    json_decref(v);
    return s;
}

/* 1: text is a complete match; every prefix of it is accepted */
static int matches(const ft_srv_js_schema_t *s, const char *text)
{
    ft_srv_js_state_t st;
    ft_srv_js_init(&st, s);
    const size_t n = strlen(text);
    for (size_t i = 0; i < n; i++) {
        if (ft_srv_js_done(&st)) return 0;
        if (!ft_srv_js_feed(&st, text + i, 1)) return 0;
    }
    return ft_srv_js_done(&st);
}

/* 1: the automaton rejects text at byte `at` exactly (accepting before it) */
static int rejects_at(const ft_srv_js_schema_t *s, const char *text, size_t at)
{
    ft_srv_js_state_t st;
    ft_srv_js_init(&st, s);
    for (size_t i = 0; i < at; i++)
        if (!ft_srv_js_feed(&st, text + i, 1)) return 0;
    return !ft_srv_js_feed(&st, text + at, 1);
}

static const char *person =
    "{\"type\": \"object\", \"additionalProperties\": false, \"description\": \"who\","
    " \"properties\": {"
    "  \"name\": {\"type\": \"string\"},"
    "  \"age\": {\"type\": \"integer\"},"
    "  \"height\": {\"type\": \"number\"},"
    "  \"kind\": {\"enum\": [\"cat\", \"catfish\", 1, 12, true, null]},"
    "  \"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}},"
    "  \"nick\": {\"type\": [\"string\", \"null\"]},"
    "  \"extra\": {},"
    "  \"addr\": {\"type\": \"object\", \"properties\": {\"city\": {\"const\": \"Oslo\"}},"
    "            \"required\": [\"city\"]}},"
    " \"required\": [\"name\", \"age\"]}";

static void test_hand_written(void **state)
{
    (void)state;
    ft_srv_js_schema_t *s = compile_text(person, NULL);
    assert_non_null(s);
    assert_true(matches(s, "{\"name\":\"Ann\",\"age\":31}"));
    assert_true(matches(s, "{ \"age\": -4, \"name\": \"B\\\"o\\u00e9\" }")); /* any order */
    assert_true(matches(s, "{\"name\":\"A\",\"age\":1,\"height\":1.5e3,\"kind\":\"catfish\","
                           "\"tags\":[],\"nick\":null,\"extra\":{\"x\":[1,{\"y\":\"z\"}]},"
                           "\"addr\":{\"city\":\"Oslo\"}}"));
    assert_true(matches(s, "{\"name\":\"A\",\"age\":1,\"kind\":12}"));
    assert_true(matches(s, "{\"name\":\"A\",\"age\":1,\"kind\":1}"));
    assert_true(matches(s, "{\"name\":\"A\",\"age\":1,\"kind\":null,\"tags\":[\"a\",\"b\"]}"));
    /* '}' before the required ones */
    assert_true(rejects_at(s, "{\"name\":\"Ann\"}", 13));
    /* a property not in the schema: rejected at its first differing byte */
    assert_true(rejects_at(s, "{\"nam\":", 5));
    assert_true(rejects_at(s, "{\"namex\"", 6));
    /* twice the same property */
    assert_true(rejects_at(s, "{\"age\":1,\"age\"", 11)); /* "a": "addr" is left */
    /* an integer with a fraction or an exponent; a string for a number */
    assert_true(rejects_at(s, "{\"age\":1.", 8));
    assert_true(rejects_at(s, "{\"age\":1e", 8));
    assert_true(rejects_at(s, "{\"age\":\"", 7));
    /* enum: outside the set, or cut short */
    assert_true(rejects_at(s, "{\"kind\":\"dog", 9));
    assert_true(rejects_at(s, "{\"kind\":\"ca\"", 11));
    assert_true(rejects_at(s, "{\"kind\":2", 8));
    assert_true(rejects_at(s, "{\"kind\":123", 10));
    assert_true(rejects_at(s, "{\"kind\":false", 8));
    /* const, nested required, array items, type unions */
    assert_true(rejects_at(s, "{\"addr\":{\"city\":\"Bergen", 17));
    assert_true(rejects_at(s, "{\"addr\":{}", 9));
    assert_true(rejects_at(s, "{\"tags\":[1", 9));
    assert_true(rejects_at(s, "{\"nick\":1", 8));
    /* the top level is the object */
    assert_true(rejects_at(s, "[", 0));
    ft_srv_js_free(s);

    /* every property given: no ',' after the last */
    s = compile_text("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"boolean\"}}}", NULL);
    assert_non_null(s);
    assert_true(matches(s, "{\"a\":true}"));
    assert_true(matches(s, "{}"));
    assert_true(rejects_at(s, "{\"a\":true,", 9));
    ft_srv_js_free(s);
    /* an object without properties: any members */
    s = compile_text("{\"type\":\"object\"}", NULL);
    assert_non_null(s);
    assert_true(matches(s, "{\"x\":[1,2,{\"y\":null}],\"z\":\"w\"}"));
    ft_srv_js_free(s);
}

static void expect_refusal(const char *schema, const char *param)
{
    ft_srv_error_t err;
    ft_srv_js_schema_t *s = compile_text(schema, &err);
    assert_null(s);
    assert_int_equal(err.http, 400);
    if (strcmp(err.param, param) != 0) fail_msg("param '%s', expected '%s'", err.param, param);
    assert_non_null(strstr(err.message, param));
}

static void test_refusals(void **state)
{
    (void)state;
    expect_refusal("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"array\",\"items\":"
                   "{\"type\":\"string\",\"pattern\":\"x\"}}}}",
                   "response_format.json_schema.schema.properties.a.items.pattern");
    expect_refusal("{\"type\":\"object\",\"properties\":{\"a\":{\"anyOf\":[]}}}",
                   "response_format.json_schema.schema.properties.a.anyOf");
    expect_refusal("{\"type\":\"object\",\"$defs\":{}}",
                   "response_format.json_schema.schema.$defs");
    expect_refusal("{\"type\":\"array\"}", "response_format.json_schema.schema");
    expect_refusal("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"date\"}}}",
                   "response_format.json_schema.schema.properties.a.type");
    expect_refusal("{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":[\"b\"]}",
                   "response_format.json_schema.schema.required[0]");
    expect_refusal("{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}",
                   "response_format.json_schema.schema.additionalProperties");
    expect_refusal("{\"type\":\"object\",\"properties\":{\"e\":{\"enum\":[{\"a\":1}]}}}",
                   "response_format.json_schema.schema.properties.e.enum");
    expect_refusal("{\"type\":\"object\",\"properties\":{\"a\\\"b\":{}}}",
                   "response_format.json_schema.schema.properties.a\"b");
    expect_refusal("{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\","
                   "\"minimum\":0}}}",
                   "response_format.json_schema.schema.properties.n.minimum");
}

/* ---- random schemas against a reference validator ---------------------- */

static json_t *rand_scalar_schema(void)
{
    static const char *const t[] = {"string", "number", "integer", "boolean", "null"};
    switch (rnd(7)) {
    case 5:
        return json_pack("{s:[s,s,i,b]}", "enum", "ab", "a", 7, 1);
    case 6:
        return json_pack("{s:[ss]}", "type", t[rnd(5)], t[rnd(5)]);
    default:
        return json_pack("{s:s}", "type", t[rnd(5)]);
    }
}

static json_t *rand_schema(int depth)
{
    const uint32_t k = depth >= 3 ? 9 : rnd(10);
    if (k < 3) { /* an object */
        json_t *props = json_object(), *req = json_array();
        const uint32_t n = rnd(4);
        for (uint32_t i = 0; i < n; i++) {
            char name[16];
            snprintf(name, sizeof(name), "p%u", i);
            json_object_set_new(props, name, rand_schema(depth + 1));
            if (rnd(2)) json_array_append_new(req, json_string(name));
        }
        return json_pack("{s:s,s:o,s:o}", "type", "object", "properties", props, "required", req);
    }
    if (k < 5) return json_pack("{s:s,s:o}", "type", "array", "items", rand_schema(depth + 1));
    return rand_scalar_schema();
}

/* A value for schema s; with `bad` set, now and then one that is not. */
static json_t *rand_value(const json_t *s, int bad)
{
    if (bad && rnd(8) == 0) { /* any value at all */
        switch (rnd(5)) {
        case 0:
            return json_string("zz");
        case 1:
            return json_integer(3);
        case 2:
            return json_real(2.5);
        case 3:
            return json_null();
        default:
            return json_true();
        }
    }
    const json_t *en = json_object_get(s, "enum");
    if (en) return json_deep_copy(json_array_get(en, rnd((uint32_t)json_array_size(en))));
    const json_t *type = json_object_get(s, "type");
    const char *t = json_is_array(type) ? json_string_value(json_array_get(type, rnd(2)))
                                        : json_string_value(type);
    if (!strcmp(t, "object")) {
        json_t *o = json_object();
        const json_t *props = json_object_get(s, "properties"),
                     *req = json_object_get(s, "required");
        const char *key;
        json_t *p;
        json_object_foreach((json_t *)props, key, p)
        {
            int required = 0;
            size_t i;
            json_t *r;
            json_array_foreach((json_t *)req, i, r) required |= !strcmp(json_string_value(r), key);
            if (required ? !(bad && rnd(10) == 0) : rnd(2))
                json_object_set_new(o, key, rand_value(p, bad));
        }
        if (bad && rnd(10) == 0) json_object_set_new(o, "q", json_null());
        return o;
    }
    if (!strcmp(t, "array")) {
        json_t *a = json_array();
        for (uint32_t i = rnd(3); i > 0; i--)
            json_array_append_new(a, rand_value(json_object_get(s, "items"), bad));
        return a;
    }
    if (!strcmp(t, "string")) return json_string(rnd(2) ? "x\"y\n\xc3\xa9" : "");
    if (!strcmp(t, "number")) return rnd(2) ? json_real(-0.25) : json_integer(-12);
    if (!strcmp(t, "integer")) return json_integer((json_int_t)rnd(1000));
    if (!strcmp(t, "boolean")) return json_boolean(rnd(2));
    return json_null();
}

static int type_ok(const char *t, const json_t *v)
{
    if (!strcmp(t, "object")) return json_is_object(v);
    if (!strcmp(t, "array")) return json_is_array(v);
    if (!strcmp(t, "string")) return json_is_string(v);
    if (!strcmp(t, "number")) return json_is_number(v);
    if (!strcmp(t, "integer")) return json_is_integer(v);
    if (!strcmp(t, "boolean")) return json_is_boolean(v);
    return json_is_null(v);
}

/* The reference: does v match s (an object's members only the listed ones)? */
static int valid(const json_t *s, const json_t *v)
{
    const json_t *en = json_object_get(s, "enum");
    if (en) {
        size_t i;
        json_t *e;
        json_array_foreach((json_t *)en, i, e) if (json_equal(e, (json_t *)v)) return 1;
        return 0;
    }
    const json_t *type = json_object_get(s, "type");
    int ok = 0;
    if (json_is_array(type)) {
        for (size_t i = 0; i < json_array_size(type); i++)
            ok |= type_ok(json_string_value(json_array_get(type, i)), v);
    } else {
        ok = type_ok(json_string_value(type), v);
    }
    if (!ok) return 0;
    if (json_is_object(v)) {
        const json_t *props = json_object_get(s, "properties");
        const char *key;
        json_t *x;
        json_object_foreach((json_t *)v, key, x)
        {
            const json_t *p = json_object_get(props, key);
            if (!p || !valid(p, x)) return 0;
        }
        size_t i;
        json_t *r;
        json_array_foreach(json_object_get(s, "required"), i,
                           r) if (!json_object_get(v, json_string_value(r))) return 0;
    }
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach((json_t *)v, i, x) if (!valid(json_object_get(s, "items"), x)) return 0;
    }
    return 1;
}

static void test_random_against_reference(void **state)
{
    (void)state;
    int n_valid = 0, n_invalid = 0;
    for (int round = 0; round < 400; round++) {
        json_t *schema = rand_schema(0);
        while (!json_is_string(json_object_get(schema, "type")) ||
               strcmp(json_string_value(json_object_get(schema, "type")), "object") != 0) {
            json_decref(schema);
            schema = rand_schema(0);
        }
        ft_srv_js_schema_t *s = NULL;
        ft_srv_error_t err;
        if (!ft_srv_js_compile(schema, "s", &s, &err)) fail_msg("compile: %s", err.message);
        for (int k = 0; k < 20; k++) {
            json_t *v = rand_value(schema, k % 2);
            char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
            const int want = valid(schema, v), got = matches(s, text);
            if (want != got) {
                char *st = json_dumps(schema, JSON_COMPACT | JSON_PRESERVE_ORDER);
                fail_msg("schema %s, value %s: reference %d, automaton %d", st, text, want, got);
            }
            n_valid += want;
            n_invalid += !want;
            free(text);
            json_decref(v);
        }
        ft_srv_js_free(s);
        json_decref(schema);
    }
    /* both kinds were exercised */
    assert_true(n_valid > 1000);
    assert_true(n_invalid > 300);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_written),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_random_against_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
