/* safetensors: the fixture writer against the parser, and hostile headers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/base/mapped_file.h"
#include "safetensors.h"
#include "st_writer.h"
#include "test_tmp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAD "bad.safetensors"

static void ok(ft_status_t st)
{
    if (st) fail_msg("unexpected error: %s", ft_status_message(st));
}

/* Parses `size` bytes and expects failure with `code` and a message that
 * contains the file name and each of the `needles` (NULL-terminated). */
static void expect_fail_v(const uint8_t *data, uint64_t size, ft_status_code_t code, va_list ap)
{
    ft_st_file_t *f = NULL;
    ft_status_t st = ft_st_parse(data, size, BAD, &f);
    if (!st) {
        ft_st_file_free(f);
        fail_msg("parse of %llu bytes succeeded, expected an error", (unsigned long long)size);
    }
    assert_null(f);
    const char *msg = ft_status_message(st);
    if (ft_status_code(st) != code)
        fail_msg("code %s, expected %s: %s", ft_status_code_name(ft_status_code(st)),
                 ft_status_code_name(code), msg);
    if (!strstr(msg, BAD)) fail_msg("message does not name the file: %s", msg);
    const char *needle;
    while ((needle = va_arg(ap, const char *)) != NULL)
        if (!strstr(msg, needle)) fail_msg("message lacks '%s': %s", needle, msg);
    ft_status_free(st);
}

/* A file from a header (JSON text padded to 8) and n_data zero bytes. */
static uint8_t *make_file(const char *json, uint64_t n_data, uint64_t *out_size)
{
    uint64_t n = strlen(json), padded = (n + 7) & ~7ull;
    uint8_t *buf = calloc(1, 8 + padded + n_data + 1);
    assert_non_null(buf);
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)(padded >> (8 * i));
    memcpy(buf + 8, json, n);
    memset(buf + 8 + n, ' ', padded - n);
    *out_size = 8 + padded + n_data;
    return buf;
}

static void expect_json_fail(const char *json, uint64_t n_data, ft_status_code_t code, ...)
{
    uint64_t size;
    uint8_t *buf = make_file(json, n_data, &size);
    va_list ap;
    va_start(ap, code);
    expect_fail_v(buf, size, code, ap);
    va_end(ap);
    free(buf);
}

static void expect_bytes_fail(const uint8_t *data, uint64_t size, ft_status_code_t code, ...)
{
    va_list ap;
    va_start(ap, code);
    expect_fail_v(data, size, code, ap);
    va_end(ap);
}

/* Writes a small file with the fixture writer: three tensors, metadata. */
static const char *write_sample(void)
{
    static char path[4200];
    snprintf(path, sizeof(path), "%s/sample.safetensors", ft_test_tmpdir("st"));
    ft_st_writer_t *w;
    ok(ft_st_writer_create(path, &w));
    const uint64_t s_w[2] = {2, 3}, s_b[1] = {4};
    ok(ft_st_writer_add_metadata(w, "format", "pt"));
    ok(ft_st_writer_add_tensor(w, "layer.weight", "F32", 2, s_w, 24));
    ok(ft_st_writer_add_tensor(w, "layer.bias", "BF16", 1, s_b, 8));
    ok(ft_st_writer_add_tensor(w, "step", "I64", 0, NULL, 8));
    ok(ft_st_writer_write_header(w));
    float wv[6] = {1, 2, 3, 4, 5, 6};
    uint16_t bv[4] = {0x3f80, 0x4000, 0x4040, 0x4080};
    int64_t step = 42;
    ok(ft_st_writer_write_data(w, wv, 10)); /* data may come in pieces */
    ok(ft_st_writer_write_data(w, (const uint8_t *)wv + 10, 14));
    ok(ft_st_writer_write_data(w, bv, 8));
    ok(ft_st_writer_write_data(w, &step, 8));
    ok(ft_st_writer_close(w));
    return path;
}

static void test_round_trip(void **state)
{
    (void)state;
    ft_mapped_file_t *m;
    ok(ft_mapped_file_open(write_sample(), &m));
    ft_st_file_t *f;
    ok(ft_st_parse(m->data, m->size, m->path, &f));
    assert_int_equal(f->header_bytes % 8, 0);
    assert_int_equal(f->data_offset, 8 + f->header_bytes);
    assert_int_equal(f->data_bytes, 40);
    assert_int_equal(f->n_tensors, 3);
    /* Sorted by offset = the order written. */
    assert_string_equal(f->tensors[0].name, "layer.weight");
    assert_int_equal(f->tensors[0].dtype, FT_DTYPE_F32);
    assert_int_equal(f->tensors[0].n_dims, 2);
    assert_int_equal(f->tensors[0].shape[0], 2);
    assert_int_equal(f->tensors[0].shape[1], 3);
    assert_int_equal(f->tensors[0].offset, f->data_offset);
    assert_int_equal(f->tensors[0].n_bytes, 24);
    assert_string_equal(f->tensors[1].name, "layer.bias");
    assert_int_equal(f->tensors[1].dtype, FT_DTYPE_BF16);
    assert_int_equal(f->tensors[1].offset, f->data_offset + 24);
    assert_string_equal(f->tensors[2].name, "step");
    assert_int_equal(f->tensors[2].n_dims, 0);
    assert_int_equal(f->tensors[2].n_bytes, 8);
    float w5;
    memcpy(&w5, m->data + f->tensors[0].offset + 5 * 4, 4);
    assert_true(w5 == 6.0f);
    int64_t step;
    memcpy(&step, m->data + f->tensors[2].offset, 8);
    assert_int_equal(step, 42);
    assert_int_equal(f->n_meta, 1);
    assert_string_equal(f->meta[0].key, "format");
    assert_string_equal(f->meta[0].value, "pt");
    ft_st_file_free(f);
    ft_mapped_file_close(m);
}

static void test_writer_misuse(void **state)
{
    (void)state;
    char path[4200];
    snprintf(path, sizeof(path), "%s/short.safetensors", ft_test_tmpdir("st"));
    ft_st_writer_t *w;
    ok(ft_st_writer_create(path, &w));
    const uint64_t s[1] = {4};
    ok(ft_st_writer_add_tensor(w, "t", "F32", 1, s, 16));
    ok(ft_st_writer_write_header(w));
    ft_status_t st = ft_st_writer_write_data(w, "0123456789abcdefX", 17);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    ok(ft_st_writer_write_data(w, "0123", 4));
    st = ft_st_writer_close(w); /* 4 of 16 bytes */
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
}

static void test_truncated_everywhere(void **state)
{
    (void)state;
    ft_mapped_file_t *m;
    ok(ft_mapped_file_open(write_sample(), &m));
    for (uint64_t cut = 0; cut < m->size; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1);
        assert_non_null(copy);
        memcpy(copy, m->data, cut);
        ft_st_file_t *f = NULL;
        ft_status_t st = ft_st_parse(copy, cut, BAD, &f);
        if (!st) fail_msg("truncation to %llu bytes was accepted", (unsigned long long)cut);
        ft_status_code_t code = ft_status_code(st);
        assert_true(code == FT_STATUS_FORMAT || code == FT_STATUS_OUT_OF_RANGE);
        assert_non_null(strstr(ft_status_message(st), BAD));
        if (cut < 8) assert_non_null(strstr(ft_status_message(st), "8-byte header length"));
        ft_status_free(st);
        free(copy);
    }
    ft_mapped_file_close(m);
}

static void test_header_length(void **state)
{
    (void)state;
    uint8_t buf[64] = {0};
    buf[7] = 0x80; /* 2^63 */
    expect_bytes_fail(buf, sizeof(buf), FT_STATUS_OUT_OF_RANGE, "header length 9223372036854775808",
                      "bytes 0..8", "limit", NULL);
    memset(buf, 0, sizeof(buf));
    buf[0] = 57; /* one byte past the end */
    expect_bytes_fail(buf, sizeof(buf), FT_STATUS_OUT_OF_RANGE, "header length 57",
                      "past the end of the file (64 bytes)", NULL);
    expect_bytes_fail(buf, 5, FT_STATUS_FORMAT, "5 bytes", NULL);
}

static void test_bad_json(void **state)
{
    (void)state;
    expect_json_fail("{\"a\": {\"dtype\": \"F32\",, }", 0, FT_STATUS_FORMAT, "header JSON",
                     "at byte 23 (file byte 31)", NULL);
    expect_json_fail("[1, 2]", 0, FT_STATUS_FORMAT, "not an object", NULL);
    expect_json_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                     "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                     8, FT_STATUS_FORMAT, "duplicate", NULL);
    /* A Latin-1 byte in a tensor name: jansson reports where. */
    expect_json_fail("{\"caf\xe9\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                     FT_STATUS_FORMAT, "unable to decode byte 0xe9", "(file byte 13)", NULL);
    expect_json_fail("{\"t\":[1,2]}", 0, FT_STATUS_FORMAT, "'t'", "not an object", NULL);
    expect_json_fail("{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                     FT_STATUS_FORMAT, "empty name", NULL);
}

static void test_bad_fields(void **state)
{
    (void)state;
    expect_json_fail("{\"w\":{\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[0,1]}}", 1,
                     FT_STATUS_UNSUPPORTED, "'w'", "dtype", "'F4'", NULL);
    expect_json_fail("{\"w\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, FT_STATUS_FORMAT,
                     "'dtype'", NULL);
    expect_json_fail("{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,2],"
                     "\"data_offsets\":[0,8]}}",
                     8, FT_STATUS_OUT_OF_RANGE, "'w'", "shape", "overflows", NULL);
    /* Elements fit in 64 bits, bytes do not. */
    expect_json_fail("{\"w\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904],"
                     "\"data_offsets\":[0,8]}}",
                     8, FT_STATUS_OUT_OF_RANGE, "'w'", "byte size overflows", NULL);
    expect_json_fail("{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,2],\"data_offsets\":[0,8]}}", 8,
                     FT_STATUS_UNSUPPORTED, "'w'", "5 dims", NULL);
    expect_json_fail("{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,8]}}", 8,
                     FT_STATUS_FORMAT, "'w'", "shape", NULL);
    expect_json_fail("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8,
                     FT_STATUS_FORMAT, "'w'", "data_offsets", "reversed", NULL);
    expect_json_fail("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 7,
                     FT_STATUS_OUT_OF_RANGE, "'w'", "data_offsets", "past the end",
                     "7 bytes from file byte", NULL);
    expect_json_fail("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,12]}}", 12,
                     FT_STATUS_FORMAT, "'w'", "spans 12 bytes", "needs 8", NULL);
    expect_json_fail("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8,
                     FT_STATUS_FORMAT, "'w'", "data_offsets", NULL);
    expect_json_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                     "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                     12, FT_STATUS_FORMAT, "'b'", "overlaps tensor 'a'", NULL);
    /* A tensor that starts inside a long one and ends inside it too. */
    expect_json_fail("{\"a\":{\"dtype\":\"U8\",\"shape\":[16],\"data_offsets\":[0,16]},"
                     "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]},"
                     "\"c\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[8,10]}}",
                     16, FT_STATUS_FORMAT, "overlaps tensor 'a'", NULL);
    expect_json_fail("{\"__metadata__\":{\"k\":1}}", 0, FT_STATUS_FORMAT, "__metadata__", "'k'",
                     NULL);
    expect_json_fail("{\"__metadata__\":[]}", 0, FT_STATUS_FORMAT, "__metadata__", NULL);
}

static void test_valid_edges(void **state)
{
    (void)state;
    /* Empty tensors overlap nothing; gaps and trailing bytes are allowed;
     * extra fields are ignored. */
    uint64_t size;
    uint8_t *buf =
        make_file("{\"z\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[4,4]},"
                  "\"s\":{\"dtype\":\"F16\",\"shape\":[],\"data_offsets\":[2,4],\"x\":1},"
                  "\"__metadata__\":{\"b\":\"2\",\"a\":\"1\"}}",
                  10, &size);
    ft_st_file_t *f;
    ok(ft_st_parse(buf, size, "ok.safetensors", &f));
    assert_int_equal(f->n_tensors, 2);
    assert_string_equal(f->tensors[0].name, "s");
    assert_int_equal(f->tensors[0].n_bytes, 2);
    assert_int_equal(f->tensors[0].offset, f->data_offset + 2);
    assert_string_equal(f->tensors[1].name, "z");
    assert_int_equal(f->tensors[1].n_bytes, 0);
    assert_int_equal(f->n_meta, 2);
    assert_string_equal(f->meta[0].key, "a"); /* sorted */
    ft_st_file_free(f);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_writer_misuse),
        cmocka_unit_test(test_truncated_everywhere),
        cmocka_unit_test(test_header_length),
        cmocka_unit_test(test_bad_json),
        cmocka_unit_test(test_bad_fields),
        cmocka_unit_test(test_valid_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
