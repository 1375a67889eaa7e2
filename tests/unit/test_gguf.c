/* GGUF reader, frontend and fixture writer: round trips of every value
 * type, import of a small qwen3moe-like file, and a table of hostile files
 * (patched bytes, truncations) that must each fail with the right code and
 * a message naming the file, the field and the byte offset.
 *
 * `test_gguf --write-seeds DIR` writes the fuzz seeds of
 * tests/fuzz/corpus/fuzz_gguf/ instead of running the tests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gguf.h"
#include "gguf_reader.h"
#include "gguf_writer.h"
#include "test_tmp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---------------------------------------------------------- */

static void ok(ft_status_t st)
{
    if (st) fail_msg("unexpected error: %s", ft_status_message(st));
}

static void put_le(uint8_t *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* An in-memory GGUF builder for what the writer cannot express (every
 * value type, nested arrays, v2). */
typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf_t;

static void b_raw(buf_t *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void b_le(buf_t *b, uint64_t v, unsigned n)
{
    uint8_t tmp[8];
    put_le(tmp, v, n);
    b_raw(b, tmp, n);
}

static void b_str(buf_t *b, const char *s)
{
    b_le(b, strlen(s), 8);
    b_raw(b, s, strlen(s));
}

static void b_key(buf_t *b, const char *key, uint32_t type)
{
    b_str(b, key);
    b_le(b, type, 4);
}

static uint64_t f64_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Parses and, when that succeeds, converts; returns the first error. */
static ft_status_t parse_and_convert(const uint8_t *data, uint64_t size, const char *name)
{
    ft_gguf_t *g = NULL;
    ft_status_t st = ft_gguf_parse(data, size, name, &g);
    if (st) return st;
    ft_src_model_t *src = NULL;
    st = ft_src_model_create(FT_SRC_GGUF, name, &src);
    if (!st) st = ft_gguf_to_source(g, src);
    ft_src_model_destroy(src);
    ft_gguf_free(g);
    return st;
}

static void expect_error(ft_status_t st, ft_status_code_t code, const char *name, const char *want1,
                         const char *want2)
{
    if (!st)
        fail_msg("expected a %s error mentioning '%s', got success", ft_status_code_name(code),
                 want1);
    const char *msg = ft_status_message(st);
    if (ft_status_code(st) != code || !strstr(msg, name) || !strstr(msg, "byte") ||
        (want1 && !strstr(msg, want1)) || (want2 && !strstr(msg, want2))) {
        fprintf(stderr, "got %s: %s\nwanted %s with '%s' and '%s'\n",
                ft_status_code_name(ft_status_code(st)), msg, ft_status_code_name(code),
                want1 ? want1 : "", want2 ? want2 : "");
        ft_status_free(st);
        fail();
    }
    ft_status_free(st);
}

/* ---- the qwen3moe-like fixture ---------------------------------------- */

typedef struct fixture_opts {
    uint32_t alignment;   /* 0 = default */
    int omit_token_type;  /* leave tokenizer.ggml.token_type out */
    int token_type_short; /* one entry fewer than tokens */
    int32_t eos_id;
} fixture_opts_t;

#define FX_N_TOKENS 8
#define FX_N_TENSORS 5

static const char *const fx_tensor_names[FX_N_TENSORS] = {
    "token_embd.weight", "blk.0.ffn_gate_exps.weight", "blk.0.attn_k.weight", "blk.0.attn_q.weight",
    "output_norm.weight"};
static const uint32_t fx_tensor_types[FX_N_TENSORS] = {0, 8, 0, 0, 0}; /* f32, q8_0 */
static const uint32_t fx_tensor_dims[FX_N_TENSORS] = {2, 3, 2, 2, 1};
static const uint64_t fx_tensor_ne[FX_N_TENSORS][3] = {
    {16, 8, 1}, {32, 8, 4}, {16, 4, 1}, {16, 4, 1}, {16, 1, 1}};
static const uint64_t fx_tensor_bytes[FX_N_TENSORS] = {512, 32 * 34, 256, 256, 64};

static uint8_t fx_byte(unsigned tensor, uint64_t i)
{
    return (uint8_t)(i * 7 + tensor * 31 + 1);
}

static void fx_write_model(const char *path, const fixture_opts_t *o)
{
    ft_gguf_writer_t *w;
    ok(ft_gguf_writer_create(path, o->alignment, &w));
    ok(ft_gguf_writer_add_string(w, "general.architecture", "qwen3moe"));
    ok(ft_gguf_writer_add_string(w, "general.name", "tiny"));
    ok(ft_gguf_writer_add_u32(w, "qwen3moe.block_count", 1));
    ok(ft_gguf_writer_add_u64(w, "qwen3moe.context_length", 4096));
    ok(ft_gguf_writer_add_u32(w, "qwen3moe.expert_count", 4));
    ok(ft_gguf_writer_add_u32(w, "qwen3moe.expert_used_count", 2));
    ok(ft_gguf_writer_add_f32(w, "qwen3moe.rope.freq_base", 1000000.0f));
    ok(ft_gguf_writer_add_i32(w, "test.delta", -7));
    ok(ft_gguf_writer_add_u64(w, "test.big", UINT64_MAX));
    ok(ft_gguf_writer_add_bool(w, "test.flag", 1));
    ok(ft_gguf_writer_add_u32(w, "test.dup_a", 1));
    ok(ft_gguf_writer_add_u32(w, "test.dup_b", 2));
    const float fv[3] = {0.5f, 1.5f, -2.0f};
    ok(ft_gguf_writer_add_f32s(w, "test.floats", fv, 3));
    const char *const strs[2] = {"x", "y"};
    ok(ft_gguf_writer_add_strings(w, "test.strings", strs, NULL, 2));
    ok(ft_gguf_writer_add_string(w, "tokenizer.ggml.model", "gpt2"));
    ok(ft_gguf_writer_add_string(w, "tokenizer.ggml.pre", "qwen2"));
    const char *const toks[FX_N_TOKENS] = {"a", "b", "c", "ab", "abc", "a\0b", "<s>", "</s>"};
    const uint32_t lens[FX_N_TOKENS] = {1, 1, 1, 2, 3, 3, 3, 4};
    ok(ft_gguf_writer_add_strings(w, "tokenizer.ggml.tokens", toks, lens, FX_N_TOKENS));
    const int32_t types[FX_N_TOKENS] = {1, 1, 1, 1, 1, 6, 3, 3};
    if (!o->omit_token_type)
        ok(ft_gguf_writer_add_i32s(w, "tokenizer.ggml.token_type", types,
                                   FX_N_TOKENS - (o->token_type_short ? 1 : 0)));
    const float scores[FX_N_TOKENS] = {0};
    ok(ft_gguf_writer_add_f32s(w, "tokenizer.ggml.scores", scores, FX_N_TOKENS));
    const char *const merges[2] = {"a b", "ab c"};
    ok(ft_gguf_writer_add_strings(w, "tokenizer.ggml.merges", merges, NULL, 2));
    ok(ft_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", 6));
    ok(ft_gguf_writer_add_i32(w, "tokenizer.ggml.eos_token_id", o->eos_id));
    ok(ft_gguf_writer_add_u32(w, "tokenizer.ggml.padding_token_id", 7));
    ok(ft_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", 0));
    ok(ft_gguf_writer_add_string(w, "tokenizer.chat_template", "{{ messages }}"));
    for (unsigned t = 0; t < FX_N_TENSORS; t++)
        ok(ft_gguf_writer_add_tensor(w, fx_tensor_names[t], fx_tensor_types[t], fx_tensor_dims[t],
                                     fx_tensor_ne[t], fx_tensor_bytes[t]));
    ok(ft_gguf_writer_write_header(w));
    for (unsigned t = 0; t < FX_N_TENSORS; t++) {
        uint8_t data[2048];
        for (uint64_t i = 0; i < fx_tensor_bytes[t]; i++)
            data[i] = fx_byte(t, i);
        /* Two calls per tensor exercise the streaming path. */
        ok(ft_gguf_writer_write_data(w, data, 10));
        ok(ft_gguf_writer_write_data(w, data + 10, fx_tensor_bytes[t] - 10));
    }
    ok(ft_gguf_writer_close(w));
}

static const fixture_opts_t fx_default = {64, 0, 0, 7};

/* ---- every value type, built by hand ---------------------------------- */

/* Writes a file with every scalar type, an array of each, a nested array
 * and one tensor; records the byte offset of each pair in kv_at. */
static void build_all_types(buf_t *b, uint32_t version, uint64_t *kv_at, uint64_t *n_kv)
{
    b->n = 0;
    b_raw(b, "GGUF", 4);
    b_le(b, version, 4);
    b_le(b, 1, 8);
    b_le(b, 0, 8); /* n_kv, patched below */
    uint64_t k = 0;
#define KV(name, type) (kv_at[k++] = b->n, b_key(b, name, type))
    KV("t.u8", 0), b_le(b, 200, 1);
    KV("t.i8", 1), b_le(b, (uint8_t)-100, 1);
    KV("t.u16", 2), b_le(b, 60000, 2);
    KV("t.i16", 3), b_le(b, (uint16_t)-30000, 2);
    KV("t.u32", 4), b_le(b, 4000000000u, 4);
    KV("t.i32", 5), b_le(b, (uint32_t)-2000000000, 4);
    KV("t.f32", 6), b_le(b, f32_bits(0.25f), 4);
    KV("t.bool", 7), b_le(b, 1, 1);
    KV("t.str", 8), b_str(b, "h\xc3\xa9llo");
    KV("t.u64", 10), b_le(b, (1ull << 63) + 5, 8);
    KV("t.i64", 11), b_le(b, (uint64_t) - (1ll << 40), 8);
    KV("t.f64", 12), b_le(b, f64_bits(3.5), 8);
    KV("t.a.u8", 9), b_le(b, 0, 4), b_le(b, 3, 8), b_le(b, 1, 1), b_le(b, 2, 1), b_le(b, 255, 1);
    KV("t.a.i8", 9), b_le(b, 1, 4), b_le(b, 2, 8), b_le(b, 0xff, 1), b_le(b, 5, 1);
    KV("t.a.u16", 9), b_le(b, 2, 4), b_le(b, 1, 8), b_le(b, 65535, 2);
    KV("t.a.i16", 9), b_le(b, 3, 4), b_le(b, 1, 8), b_le(b, 0x8000, 2);
    KV("t.a.u32", 9), b_le(b, 4, 4), b_le(b, 1, 8), b_le(b, 0xffffffffu, 4);
    KV("t.a.i32", 9), b_le(b, 5, 4), b_le(b, 2, 8), b_le(b, (uint32_t)-3, 4), b_le(b, 9, 4);
    KV("t.a.f32", 9), b_le(b, 6, 4), b_le(b, 1, 8), b_le(b, f32_bits(-1.5f), 4);
    KV("t.a.bool", 9), b_le(b, 7, 4), b_le(b, 3, 8), b_le(b, 0, 1), b_le(b, 1, 1), b_le(b, 1, 1);
    KV("t.a.str", 9), b_le(b, 8, 4), b_le(b, 3, 8), b_str(b, "a"), b_str(b, ""),
        b_str(b, "\xc3\xbc");
    KV("t.a.u64", 9), b_le(b, 10, 4), b_le(b, 1, 8), b_le(b, UINT64_MAX, 8);
    KV("t.a.i64", 9), b_le(b, 11, 4), b_le(b, 1, 8), b_le(b, (uint64_t)-5, 8);
    KV("t.a.f64", 9), b_le(b, 12, 4), b_le(b, 1, 8), b_le(b, f64_bits(1.25), 8);
    KV("t.a.nested", 9), b_le(b, 9, 4), b_le(b, 2, 8);
    b_le(b, 5, 4), b_le(b, 2, 8), b_le(b, 1, 4), b_le(b, 2, 4); /* [1, 2] */
    b_le(b, 5, 4), b_le(b, 1, 8), b_le(b, 3, 4);                /* [3] */
    KV("t.a.empty", 9), b_le(b, 0, 4), b_le(b, 0, 8);
#undef KV
    *n_kv = k;
    put_le(b->p + 16, k, 8);
    b_str(b, "w");
    b_le(b, 1, 4), b_le(b, 8, 8), b_le(b, 0, 4), b_le(b, 0, 8); /* f32 [8] at 0 */
    while (b->n % 32)
        b_le(b, 0, 1);
    for (int i = 0; i < 8; i++)
        b_le(b, f32_bits((float)i), 4);
}

static const ft_gguf_value_t *val(const ft_gguf_t *g, const char *key)
{
    const ft_gguf_kv_t *kv = ft_gguf_find(g, key);
    if (!kv) fail_msg("missing key %s", key);
    return &kv->value;
}

static void check_all_types(const ft_gguf_t *g, const uint64_t *kv_at, uint64_t n_kv)
{
    assert_int_equal(g->n_kv, n_kv);
    for (uint64_t i = 0; i < n_kv; i++)
        assert_int_equal(g->kvs[i].offset, kv_at[i]);
    assert_int_equal(val(g, "t.u8")->u, 200);
    assert_int_equal(val(g, "t.i8")->i, -100);
    assert_int_equal(val(g, "t.u16")->u, 60000);
    assert_int_equal(val(g, "t.i16")->i, -30000);
    assert_int_equal(val(g, "t.u32")->u, 4000000000u);
    assert_int_equal(val(g, "t.i32")->i, -2000000000);
    assert_true(val(g, "t.f32")->f == 0.25);
    assert_int_equal(val(g, "t.bool")->u, 1);
    assert_int_equal(val(g, "t.str")->str.len, 6);
    assert_string_equal(val(g, "t.str")->str.s, "h\xc3\xa9llo");
    assert_true(val(g, "t.u64")->u == (1ull << 63) + 5);
    assert_true(val(g, "t.i64")->i == -(1ll << 40));
    assert_true(val(g, "t.f64")->f == 3.5);
    static const struct {
        const char *key;
        ft_gguf_type_t et;
        uint64_t n;
        double first, last;
    } arrs[] = {
        {"t.a.u8", FT_GGUF_UINT8, 3, 1, 255},
        {"t.a.i8", FT_GGUF_INT8, 2, -1, 5},
        {"t.a.u16", FT_GGUF_UINT16, 1, 65535, 65535},
        {"t.a.i16", FT_GGUF_INT16, 1, -32768, -32768},
        {"t.a.u32", FT_GGUF_UINT32, 1, 4294967295.0, 4294967295.0},
        {"t.a.i32", FT_GGUF_INT32, 2, -3, 9},
        {"t.a.f32", FT_GGUF_FLOAT32, 1, -1.5, -1.5},
        {"t.a.bool", FT_GGUF_BOOL, 3, 0, 1},
        {"t.a.u64", FT_GGUF_UINT64, 1, 18446744073709551615.0, 18446744073709551615.0},
        {"t.a.i64", FT_GGUF_INT64, 1, -5, -5},
        {"t.a.f64", FT_GGUF_FLOAT64, 1, 1.25, 1.25},
        {"t.a.empty", FT_GGUF_UINT8, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof(arrs) / sizeof(arrs[0]); i++) {
        const ft_gguf_value_t *v = val(g, arrs[i].key);
        assert_int_equal(v->type, FT_GGUF_ARRAY);
        assert_int_equal(v->elem_type, arrs[i].et);
        assert_int_equal(v->n, arrs[i].n);
        double d;
        if (v->n) {
            assert_true(ft_gguf_array_f64(v, 0, &d) && d == arrs[i].first);
            assert_true(ft_gguf_array_f64(v, v->n - 1, &d) && d == arrs[i].last);
        }
        assert_false(ft_gguf_array_f64(v, v->n, &d)); /* out of bounds */
    }
    int64_t i64;
    assert_false(ft_gguf_array_i64(val(g, "t.a.u64"), 0, &i64)); /* does not fit */
    assert_true(ft_gguf_array_i64(val(g, "t.a.i8"), 0, &i64) && i64 == -1);
    const ft_gguf_value_t *s = val(g, "t.a.str");
    const ft_gguf_str_t *strs = s->elems;
    assert_int_equal(s->elem_type, FT_GGUF_STRING);
    assert_string_equal(strs[0].s, "a");
    assert_int_equal(strs[1].len, 0);
    assert_string_equal(strs[2].s, "\xc3\xbc");
    const ft_gguf_value_t *nest = val(g, "t.a.nested");
    const ft_gguf_value_t *inner = nest->elems;
    assert_int_equal(nest->elem_type, FT_GGUF_ARRAY);
    assert_int_equal(nest->n, 2);
    assert_int_equal(inner[0].n, 2);
    assert_true(ft_gguf_array_i64(&inner[0], 1, &i64) && i64 == 2);
    assert_true(ft_gguf_array_i64(&inner[1], 0, &i64) && i64 == 3);
    assert_int_equal(g->n_tensors, 1);
    assert_int_equal(g->tensors[0].n_bytes, 32);
    assert_int_equal(g->data_start % 32, 0);
}

static void test_all_value_types(void **state)
{
    (void)state;
    buf_t b = {0};
    uint64_t kv_at[64], n_kv;
    for (uint32_t version = 2; version <= 3; version++) {
        build_all_types(&b, version, kv_at, &n_kv);
        ft_gguf_t *g;
        ok(ft_gguf_parse(b.p, b.n, "all.gguf", &g));
        assert_int_equal(g->version, version);
        check_all_types(g, kv_at, n_kv);

        ft_src_model_t *src;
        ok(ft_src_model_create(FT_SRC_GGUF, "all.gguf", &src));
        ok(ft_gguf_to_source(g, src));
        const ft_meta_entry_t *e = ft_meta_find(&src->meta, "t.u64");
        assert_non_null(e);
        assert_int_equal(e->type, FT_META_FLOAT); /* above INT64_MAX */
        assert_true(e->f == (double)((1ull << 63) + 5));
        int64_t i;
        assert_true(ft_meta_get_i64(&src->meta, "t.i8", &i) && i == -100);
        assert_true(ft_meta_get_i64(&src->meta, "t.u32", &i) && i == 4000000000ll);
        int bv;
        assert_true(ft_meta_get_bool(&src->meta, "t.bool", &bv) && bv == 1);
        assert_string_equal(ft_meta_get_string(&src->meta, "t.str"), "h\xc3\xa9llo");
        e = ft_meta_find(&src->meta, "t.a.bool");
        assert_true(e && e->type == FT_META_ARRAY && e->len == 3 && e->arr[2] == 1.0);
        e = ft_meta_find(&src->meta, "t.a.u8");
        assert_true(e && e->type == FT_META_ARRAY && e->len == 3 && e->arr[2] == 255.0);
        assert_null(ft_meta_find(&src->meta, "t.a.str"));    /* string arrays not kept */
        assert_null(ft_meta_find(&src->meta, "t.a.nested")); /* not numbers */
        assert_int_equal(src->n_tensors, 1);
        assert_int_equal(src->tensors[0].offset, g->data_start);
        ft_src_model_destroy(src);
        ft_gguf_free(g);
    }
    free(b.p);
}

/* Arrays may nest FT_GGUF_MAX_ARRAY_DEPTH levels, not more. */
static void build_nested(buf_t *b, int depth)
{
    b->n = 0;
    b_raw(b, "GGUF", 4);
    b_le(b, 3, 4), b_le(b, 0, 8), b_le(b, 1, 8);
    b_key(b, "deep", 9);
    for (int d = 1; d < depth; d++)
        b_le(b, 9, 4), b_le(b, 1, 8);
    b_le(b, 4, 4), b_le(b, 1, 8), b_le(b, 42, 4);
}

static void test_nesting_depth(void **state)
{
    (void)state;
    buf_t b = {0};
    build_nested(&b, FT_GGUF_MAX_ARRAY_DEPTH);
    ft_gguf_t *g;
    ok(ft_gguf_parse(b.p, b.n, "deep.gguf", &g));
    ft_gguf_free(g);
    build_nested(&b, FT_GGUF_MAX_ARRAY_DEPTH + 1);
    expect_error(ft_gguf_parse(b.p, b.n, "deep.gguf", &g), FT_STATUS_UNSUPPORTED, "deep.gguf",
                 "metadata 'deep' (at byte 24)", "deeper than 4");
    free(b.p);
}

/* ---- the writer and the frontend -------------------------------------- */

static void test_writer_round_trip(void **state)
{
    (void)state;
    char path[4200];
    uint32_t aligns[3] = {0, 64, 4096};
    for (int a = 0; a < 3; a++) {
        fixture_opts_t o = fx_default;
        o.alignment = aligns[a];
        snprintf(path, sizeof(path), "%s/rt%d.gguf", ft_test_tmpdir("gguf"), a);
        fx_write_model(path, &o);
        size_t size;
        uint8_t *data = ft_test_read_file(path, &size);
        ft_gguf_t *g;
        ok(ft_gguf_parse(data, size, path, &g));
        uint32_t want_align = aligns[a] ? aligns[a] : 32;
        assert_int_equal(g->version, 3);
        assert_int_equal(g->alignment, want_align);
        assert_int_equal(ft_gguf_find(g, "general.alignment") != NULL, want_align != 32);
        assert_int_equal(g->kvs[0].offset, 24);
        assert_int_equal(g->data_start % want_align, 0);
        assert_int_equal(g->n_tensors, FX_N_TENSORS);
        for (unsigned t = 0; t < FX_N_TENSORS; t++) {
            const ft_gguf_tensor_t *ti = &g->tensors[t];
            assert_string_equal(ti->name, fx_tensor_names[t]);
            assert_int_equal(ti->ggml_type, fx_tensor_types[t]);
            assert_int_equal(ti->n_bytes, fx_tensor_bytes[t]);
            assert_int_equal(ti->offset % want_align, 0);
            for (uint64_t i = 0; i < ti->n_bytes; i++)
                if (data[g->data_start + ti->offset + i] != fx_byte(t, i))
                    fail_msg("tensor %u byte %llu differs", t, (unsigned long long)i);
        }
        assert_int_equal(val(g, "test.delta")->i, -7);
        assert_true(val(g, "test.big")->u == UINT64_MAX);
        assert_true(val(g, "qwen3moe.rope.freq_base")->f == 1e6);
        assert_int_equal(val(g, "tokenizer.ggml.tokens")->n, FX_N_TOKENS);
        ft_gguf_free(g);
        free(data);
    }
}

static void test_import_qwen3moe(void **state)
{
    (void)state;
    char path[4200];
    snprintf(path, sizeof(path), "%s/qwen3moe.gguf", ft_test_tmpdir("gguf"));
    fx_write_model(path, &fx_default);
    ft_src_model_t *src;
    ok(ft_gguf_import(path, &src));
    assert_int_equal(src->kind, FT_SRC_GGUF);
    assert_int_equal(src->n_files, 1);
    assert_string_equal(src->files[0].path, path);
    size_t size;
    uint8_t *data = ft_test_read_file(path, &size);
    assert_int_equal(src->files[0].size, size);

    const ft_meta_t *m = &src->meta;
    int64_t i;
    double f;
    int bv;
    assert_string_equal(ft_meta_get_string(m, "general.architecture"), "qwen3moe");
    assert_true(ft_meta_get_i64(m, "qwen3moe.block_count", &i) && i == 1);
    assert_true(ft_meta_get_i64(m, "qwen3moe.context_length", &i) && i == 4096);
    assert_true(ft_meta_get_i64(m, "general.alignment", &i) && i == 64);
    assert_true(ft_meta_get_f64(m, "qwen3moe.rope.freq_base", &f) && f == 1e6);
    assert_true(ft_meta_get_i64(m, "test.delta", &i) && i == -7);
    assert_int_equal(ft_meta_find(m, "test.big")->type, FT_META_FLOAT);
    assert_true(ft_meta_get_bool(m, "test.flag", &bv) && bv == 1);
    const ft_meta_entry_t *e = ft_meta_find(m, "test.floats");
    assert_true(e && e->type == FT_META_ARRAY && e->len == 3 && e->arr[2] == -2.0);
    assert_null(ft_meta_find(m, "test.strings"));
    assert_null(ft_meta_find(m, "tokenizer.ggml.tokens"));
    assert_null(ft_meta_find(m, "tokenizer.ggml.scores")); /* numeric, but tokenizer-only */
    assert_null(ft_meta_find(m, "tokenizer.ggml.token_type"));
    assert_string_equal(ft_meta_get_string(m, "tokenizer.ggml.model"), "gpt2");

    assert_int_equal(src->n_tensors, FX_N_TENSORS);
    for (unsigned t = 0; t < FX_N_TENSORS; t++) {
        const ft_src_tensor_t *st = ft_src_find_tensor(src, fx_tensor_names[t]);
        assert_non_null(st);
        assert_int_equal(st->n_dims, fx_tensor_dims[t]);
        for (uint32_t d = 0; d < st->n_dims; d++) /* row-major: ne reversed */
            assert_int_equal(st->shape[d], fx_tensor_ne[t][st->n_dims - 1 - d]);
        assert_int_equal(st->dtype, t == 1 ? FT_DTYPE_Q8_0 : FT_DTYPE_F32);
        assert_int_equal(st->file, 0);
        assert_int_equal(st->offset % 64, 0);
        assert_int_equal(st->n_bytes, fx_tensor_bytes[t]);
        assert_true(st->offset + st->n_bytes <= size);
        for (uint64_t k = 0; k < st->n_bytes; k++)
            if (data[st->offset + k] != fx_byte(t, k))
                fail_msg("tensor %s byte %llu differs", st->name, (unsigned long long)k);
    }
    const ft_src_tensor_t *gate = ft_src_find_tensor(src, "blk.0.ffn_gate_exps.weight");
    assert_int_equal(gate->shape[0], 4); /* experts outermost */
    assert_int_equal(gate->shape[2], 32);

    const ft_ir_tokenizer_t *tok = &src->tok;
    assert_string_equal(tok->model, "gpt2");
    assert_string_equal(tok->pre, "qwen2");
    assert_string_equal(tok->normalizer, "NFC"); /* implied by "qwen2" */
    assert_int_equal(tok->n_tokens, FX_N_TOKENS);
    assert_string_equal(tok->tokens[3], "ab");
    assert_int_equal(tok->token_lens[5], 3);
    assert_memory_equal(tok->tokens[5], "a\0b", 3);
    assert_int_equal(tok->token_types[0], FT_TOKEN_NORMAL);
    assert_int_equal(tok->token_types[5], FT_TOKEN_BYTE);
    assert_int_equal(tok->token_types[6], FT_TOKEN_CONTROL);
    assert_int_equal(tok->n_merges, 2);
    assert_string_equal(tok->merges[1], "ab c");
    assert_int_equal(tok->bos_id, 6);
    assert_int_equal(tok->eos_id, 7);
    assert_int_equal(tok->pad_id, 7);
    assert_int_equal(tok->unk_id, -1);
    assert_int_equal(tok->add_bos, 0);
    assert_string_equal(tok->chat_template, "{{ messages }}");
    free(data);
    ft_src_model_destroy(src);
}

static void test_import_defaults(void **state)
{
    (void)state;
    char path[4200];
    snprintf(path, sizeof(path), "%s/notypes.gguf", ft_test_tmpdir("gguf"));
    fixture_opts_t o = fx_default;
    o.omit_token_type = 1;
    fx_write_model(path, &o);
    ft_src_model_t *src;
    ok(ft_gguf_import(path, &src));
    for (uint32_t t = 0; t < src->tok.n_tokens; t++)
        assert_int_equal(src->tok.token_types[t], FT_TOKEN_NORMAL);
    ft_src_model_destroy(src);

    snprintf(path, sizeof(path), "%s/missing.gguf", ft_test_tmpdir("gguf"));
    ft_status_t st = ft_gguf_import(path, &src);
    assert_int_equal(ft_status_code(st), FT_STATUS_IO);
    assert_null(src);
    ft_status_free(st);
}

/* ---- hostile files ---------------------------------------------------- */

#define HOSTILE "hostile.gguf"

typedef struct hostile {
    uint8_t *base; /* the valid fixture */
    uint8_t *p;    /* the copy each case patches */
    size_t size;
    ft_gguf_t *g; /* the fixture parsed, for field offsets */
    char want[256];
} hostile_t;

static void h_reset(hostile_t *h)
{
    memcpy(h->p, h->base, h->size);
}

static void h_expect(hostile_t *h, ft_status_code_t code, const char *want2)
{
    expect_error(parse_and_convert(h->p, h->size, HOSTILE), code, HOSTILE, h->want, want2);
    h_reset(h);
}

static uint64_t h_kv(const hostile_t *h, const char *key)
{
    const ft_gguf_kv_t *kv = ft_gguf_find(h->g, key);
    assert_non_null(kv);
    return kv->offset;
}

static uint64_t h_value_at(const hostile_t *h, const char *key)
{
    return h_kv(h, key) + 8 + strlen(key) + 4;
}

static const ft_gguf_tensor_t *h_t(const hostile_t *h, unsigned t)
{
    return &h->g->tensors[t];
}

static uint64_t h_ndims_at(const hostile_t *h, unsigned t)
{
    return h_t(h, t)->info_offset + 8 + strlen(h_t(h, t)->name);
}

static uint64_t h_ne_at(const hostile_t *h, unsigned t, unsigned d)
{
    return h_ndims_at(h, t) + 4 + 8ull * d;
}

static uint64_t h_type_at(const hostile_t *h, unsigned t)
{
    return h_ne_at(h, t, h_t(h, t)->n_dims);
}

static uint64_t h_off_at(const hostile_t *h, unsigned t)
{
    return h_type_at(h, t) + 4;
}

static void h_want(hostile_t *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void h_want(hostile_t *h, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->want, sizeof(h->want), fmt, ap);
    va_end(ap);
}

static void h_tensor_want(hostile_t *h, unsigned t)
{
    h_want(h, "tensor '%s' (info at byte %llu)", h_t(h, t)->name,
           (unsigned long long)h_t(h, t)->info_offset);
}

static void hostile_header(hostile_t *h)
{
    h->p[3] = 'X';
    h_want(h, "magic at byte 0");
    h_expect(h, FT_STATUS_FORMAT, "GGUF");
    put_le(h->p + 4, 1, 4);
    h_want(h, "version 1 (at byte 4)");
    h_expect(h, FT_STATUS_UNSUPPORTED, NULL);
    put_le(h->p + 4, 99, 4);
    h_want(h, "version 99 at byte 4");
    h_expect(h, FT_STATUS_UNSUPPORTED, NULL);
    put_le(h->p + 4, 0x03000000u, 4);
    h_want(h, "big-endian");
    h_expect(h, FT_STATUS_UNSUPPORTED, NULL);
    put_le(h->p + 8, 1ull << 60, 8);
    h_want(h, "tensor count 1152921504606846976 at byte 8 cannot fit in the %llu-byte file",
           (unsigned long long)h->size);
    h_expect(h, FT_STATUS_OUT_OF_RANGE, NULL);
    put_le(h->p + 16, 1ull << 62, 8);
    h_want(h, "metadata count 4611686018427387904 at byte 16 cannot fit");
    h_expect(h, FT_STATUS_OUT_OF_RANGE, NULL);
}

static void hostile_metadata(hostile_t *h)
{
    put_le(h->p + 24, 1ull << 63, 8);
    h_want(h, "metadata #0 key at byte 24");
    h_expect(h, FT_STATUS_OUT_OF_RANGE, "string length 9223372036854775808");
    put_le(h->p + h_value_at(h, "general.architecture"), 1ull << 63, 8);
    h_want(h, "metadata 'general.architecture' (at byte %llu)",
           (unsigned long long)h_kv(h, "general.architecture"));
    h_expect(h, FT_STATUS_OUT_OF_RANGE, "string length");
    /* "test.dup_b" -> "test.dup_a" */
    h->p[h_kv(h, "test.dup_b") + 8 + 9] = 'a';
    h_want(h, "metadata 'test.dup_a' at byte %llu repeats the key at byte %llu",
           (unsigned long long)h_kv(h, "test.dup_b"), (unsigned long long)h_kv(h, "test.dup_a"));
    h_expect(h, FT_STATUS_FORMAT, NULL);
    h->p[h_kv(h, "general.name") + 8 + 3] = 0xff;
    h_want(h, "metadata #2 key at byte %llu", (unsigned long long)h_kv(h, "general.name"));
    h_expect(h, FT_STATUS_FORMAT, "not valid UTF-8");
    /* "tiny" -> an overlong encoding of '4' */
    h->p[h_value_at(h, "general.name") + 8] = 0xc0;
    h->p[h_value_at(h, "general.name") + 9] = 0xb4;
    h_want(h, "metadata 'general.name' (at byte %llu)",
           (unsigned long long)h_kv(h, "general.name"));
    h_expect(h, FT_STATUS_FORMAT, "not valid UTF-8");
    for (uint32_t bad = 0; bad <= 3; bad += 3) {
        put_le(h->p + h_value_at(h, "general.alignment"), bad, 4);
        h_want(h, "metadata 'general.alignment' (at byte %llu) is %u",
               (unsigned long long)h_kv(h, "general.alignment"), bad);
        h_expect(h, FT_STATUS_FORMAT, "power of two");
    }
    h->p[h_value_at(h, "test.flag")] = 2;
    h_want(h, "metadata 'test.flag' (at byte %llu)", (unsigned long long)h_kv(h, "test.flag"));
    h_expect(h, FT_STATUS_FORMAT, "not 0 or 1");
    put_le(h->p + h_value_at(h, "test.flag") - 4, 13, 4);
    h_want(h, "metadata 'test.flag' (at byte %llu)", (unsigned long long)h_kv(h, "test.flag"));
    h_expect(h, FT_STATUS_FORMAT, "unknown value type 13");
}

static void hostile_tensor_infos(hostile_t *h)
{
    put_le(h->p + h_ndims_at(h, 0), 5, 4);
    h_tensor_want(h, 0);
    char at[64];
    snprintf(at, sizeof(at), "n_dims 5 at byte %llu", (unsigned long long)h_ndims_at(h, 0));
    h_expect(h, FT_STATUS_FORMAT, at);
    put_le(h->p + h_ne_at(h, 0, 0), 1ull << 32, 8);
    put_le(h->p + h_ne_at(h, 0, 1), 1ull << 32, 8);
    h_tensor_want(h, 0);
    h_expect(h, FT_STATUS_OUT_OF_RANGE, "more than 2^63 elements");
    put_le(h->p + h_ne_at(h, 0, 1), 0, 8);
    h_tensor_want(h, 0);
    snprintf(at, sizeof(at), "ne[1] at byte %llu is 0", (unsigned long long)h_ne_at(h, 0, 1));
    h_expect(h, FT_STATUS_FORMAT, at);
    put_le(h->p + h_type_at(h, 0), 200, 4);
    h_tensor_want(h, 0);
    snprintf(at, sizeof(at), "unknown ggml type 200 at byte %llu",
             (unsigned long long)h_type_at(h, 0));
    h_expect(h, FT_STATUS_FORMAT, at);
    put_le(h->p + h_type_at(h, 0), 4, 4);
    h_tensor_want(h, 0);
    h_expect(h, FT_STATUS_UNSUPPORTED, "q4_2 (removed from ggml)");
    put_le(h->p + h_ne_at(h, 1, 0), 16, 8); /* q8_0 rows of half a block */
    h_tensor_want(h, 1);
    h_expect(h, FT_STATUS_FORMAT, "not a whole number of q8_0 blocks");
    /* "blk.0.attn_q.weight" -> "blk.0.attn_k.weight" */
    h->p[h_t(h, 3)->info_offset + 8 + strlen("blk.0.attn_")] = 'k';
    h_want(h,
           "tensor 'blk.0.attn_k.weight' (info at byte %llu) repeats the name of the tensor at "
           "byte %llu",
           (unsigned long long)h_t(h, 3)->info_offset, (unsigned long long)h_t(h, 2)->info_offset);
    h_expect(h, FT_STATUS_FORMAT, NULL);
    h->p[h_t(h, 1)->info_offset + 8] = 0x80; /* a lone continuation byte */
    h_want(h, "tensor #1 name at byte %llu", (unsigned long long)h_t(h, 1)->info_offset);
    h_expect(h, FT_STATUS_FORMAT, "not valid UTF-8");
}

static void hostile_layout(hostile_t *h)
{
    put_le(h->p + h_off_at(h, 4), 1ull << 20, 8);
    h_tensor_want(h, 4);
    h_expect(h, FT_STATUS_OUT_OF_RANGE, "lies past the end of the file");
    put_le(h->p + h_off_at(h, 4), UINT64_MAX - 63, 8); /* aligned, overflows data_start + */
    h_tensor_want(h, 4);
    h_expect(h, FT_STATUS_OUT_OF_RANGE, "lies past the end of the file");
    put_le(h->p + h_off_at(h, 4), h_t(h, 4)->offset + 32, 8);
    h_tensor_want(h, 4);
    h_expect(h, FT_STATUS_FORMAT, "is not a multiple of the alignment 64");
    put_le(h->p + h_off_at(h, 3), h_t(h, 2)->offset, 8);
    h_tensor_want(h, 3);
    h_expect(h, FT_STATUS_FORMAT, "overlap tensor 'blk.0.attn_k.weight'");
}

/* Every cut before the end of the last tensor's bytes must fail cleanly. */
static void hostile_truncations(hostile_t *h)
{
    uint64_t end = 0;
    for (uint64_t t = 0; t < h->g->n_tensors; t++) {
        uint64_t e = h->g->data_start + h->g->tensors[t].offset + h->g->tensors[t].n_bytes;
        end = e > end ? e : end;
    }
    for (uint64_t cut = 0; cut < end; cut++) {
        uint8_t *p = malloc(cut ? cut : 1);
        memcpy(p, h->base, cut);
        ft_status_t st = parse_and_convert(p, cut, HOSTILE);
        free(p);
        if (!st) fail_msg("file cut at %llu bytes was accepted", (unsigned long long)cut);
        ft_status_code_t code = ft_status_code(st);
        assert_true(code == FT_STATUS_FORMAT || code == FT_STATUS_OUT_OF_RANGE);
        assert_non_null(strstr(ft_status_message(st), HOSTILE));
        assert_non_null(strstr(ft_status_message(st), "byte"));
        ft_status_free(st);
    }
    ft_status_t st = parse_and_convert(h->base, end, HOSTILE); /* the padding after is optional */
    ok(st);
}

static void test_hostile_patches(void **state)
{
    (void)state;
    char path[4200];
    snprintf(path, sizeof(path), "%s/base.gguf", ft_test_tmpdir("gguf"));
    fx_write_model(path, &fx_default);
    hostile_t h = {0};
    h.base = ft_test_read_file(path, &h.size);
    h.p = malloc(h.size);
    ok(ft_gguf_parse(h.base, h.size, HOSTILE, &h.g));
    h_reset(&h);
    ok(parse_and_convert(h.p, h.size, HOSTILE));
    hostile_header(&h);
    hostile_metadata(&h);
    hostile_tensor_infos(&h);
    hostile_layout(&h);
    hostile_truncations(&h);
    ft_gguf_free(h.g);
    free(h.p);
    free(h.base);
}

/* Tokenizer errors come from the conversion, on files the writer makes. */
static void test_hostile_tokenizer(void **state)
{
    (void)state;
    char path[4200];
    snprintf(path, sizeof(path), "%s/short_types.gguf", ft_test_tmpdir("gguf"));
    fixture_opts_t o = fx_default;
    o.token_type_short = 1;
    fx_write_model(path, &o);
    ft_src_model_t *src = NULL;
    expect_error(ft_gguf_import(path, &src), FT_STATUS_FORMAT, path,
                 "metadata 'tokenizer.ggml.token_type' (at byte",
                 "has 7 entries but tokenizer.ggml.tokens has 8");
    assert_null(src);
    int32_t bad_ids[2] = {FX_N_TOKENS, -1};
    for (int k = 0; k < 2; k++) {
        o = fx_default;
        o.eos_id = bad_ids[k];
        snprintf(path, sizeof(path), "%s/eos%d.gguf", ft_test_tmpdir("gguf"), k);
        fx_write_model(path, &o);
        char want[64];
        snprintf(want, sizeof(want), "token id %d is out of range for 8 tokens", bad_ids[k]);
        expect_error(ft_gguf_import(path, &src), FT_STATUS_OUT_OF_RANGE, path,
                     "metadata 'tokenizer.ggml.eos_token_id' (at byte", want);
    }
}

/* ---- fuzz seeds ------------------------------------------------------- */

/* Writes the seeds of tests/fuzz/corpus/fuzz_gguf/ into dir. */
static int write_seeds(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/qwen3moe_align64.gguf", dir);
    fx_write_model(path, &fx_default);
    fixture_opts_t o = fx_default;
    o.alignment = 0;
    o.omit_token_type = 1;
    snprintf(path, sizeof(path), "%s/qwen3moe_align32.gguf", dir);
    fx_write_model(path, &o);
    buf_t b = {0};
    uint64_t kv_at[64], n_kv;
    build_all_types(&b, 2, kv_at, &n_kv);
    snprintf(path, sizeof(path), "%s/all_types_v2.gguf", dir);
    int rc = ft_test_write_file(path, b.p, b.n);
    free(b.p);
    return rc == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0) return write_seeds(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_value_types),   cmocka_unit_test(test_nesting_depth),
        cmocka_unit_test(test_writer_round_trip), cmocka_unit_test(test_import_qwen3moe),
        cmocka_unit_test(test_import_defaults),   cmocka_unit_test(test_hostile_patches),
        cmocka_unit_test(test_hostile_tokenizer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
