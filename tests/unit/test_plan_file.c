/* The plan container and the plan's semantic check: round trips, byte-
 * identical rewrites, and every kind of damage giving the right code and a
 * message with the file name and the field. Also writes the fuzz seeds
 * (tests/fuzz/corpus/fuzz_plan/README.txt). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/format/ftw.h"
#include "../../runtime/format/plan_file.h"
#include "../../runtime/format/plan_validate.h"
#include "plan_fixture.h"
#include "test_tmp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define BAD_NAME "bad.ftp"

static void expect_error(ft_status_t st, ft_status_code_t code, const char *needle1,
                         const char *needle2)
{
    if (ft_status_code(st) != code || !strstr(ft_status_message(st), needle1) ||
        (needle2 && !strstr(ft_status_message(st), needle2)))
        fail_msg("expected %s with '%s' and '%s', got %s: %s", ft_status_code_name(code),
                 needle1, needle2 ? needle2 : "", ft_status_code_name(ft_status_code(st)),
                 ft_status_message(st));
    ft_status_free(st);
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* A plan file built by hand from the documented layout (plan_file.h), so
 * the test does not trust the writer: header + payload with a true hash. */
static uint8_t *build_file(const void *payload, size_t n, uint64_t raw_bytes, size_t *out_n)
{
    uint8_t *f = calloc(1, 48 + n);
    assert_non_null(f);
    memcpy(f, "FTPLAN\r\n", 8);
    f[8] = 1;   /* format_version */
    f[12] = 48; /* header_bytes */
    put64(f + 16, raw_bytes);
    put64(f + 24, n);
    memcpy(f + 48, payload, n);
    put64(f + 32, XXH3_64bits(f + 48, n));
    *out_n = 48 + n;
    return f;
}

static uint8_t *zstd_of(const void *raw, size_t n, size_t *out_n)
{
    size_t cap = ZSTD_compressBound(n);
    uint8_t *z = malloc(cap);
    assert_non_null(z);
    size_t rc = ZSTD_compress(z, cap, raw, n, 3);
    assert_false(ZSTD_isError(rc));
    *out_n = rc;
    return z;
}

static uint8_t *encode(ft_plan_fixture_t *fx, size_t *out_n)
{
    uint8_t *data = NULL;
    uint64_t n = 0;
    assert_null(ft_plan_encode(&fx->plan, &data, &n));
    *out_n = (size_t)n;
    return data;
}

/* Packs a plan to protobuf bytes, for exact comparisons. */
static uint8_t *pack(const Ftplan__Plan *plan, size_t *out_n)
{
    *out_n = ftplan__plan__get_packed_size(plan);
    uint8_t *b = malloc(*out_n + 1);
    assert_non_null(b);
    assert_int_equal(ftplan__plan__pack(plan, b), *out_n);
    return b;
}

static void check_round_trip(int variant)
{
    ft_plan_fixture_t fx;
    ft_plan_fixture_init(&fx, variant);
    assert_null(ft_plan_validate(&fx.plan, "fixture"));
    char path[4200];
    snprintf(path, sizeof(path), "%s/round%d.ftp", ft_test_tmpdir("plan"), variant);
    assert_null(ft_plan_write(&fx.plan, path));
    Ftplan__Plan *plan = NULL;
    assert_null(ft_plan_read(path, &plan));
    assert_non_null(plan);
    assert_int_equal(plan->n_tensors, 27);
    assert_int_equal(plan->n_blocks, 2);
    assert_string_equal(plan->tensors[0]->name, "token_embd.weight");
    assert_int_equal(plan->tokenizer->n_tokens, FT_PLAN_FIXTURE_TOKENS);
    size_t n1, n2;
    uint8_t *p1 = pack(&fx.plan, &n1), *p2 = pack(plan, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(p1, p2, n1);
    free(p1);
    free(p2);
    ft_plan_free(plan);
}

static void test_round_trip(void **state)
{
    check_round_trip(0);
    check_round_trip(1);
    ft_plan_free(NULL);
}

static void test_identical_bytes(void **state)
{
    ft_plan_fixture_t fx;
    ft_plan_fixture_init(&fx, 1);
    const char *dir = ft_test_tmpdir("plan");
    char a[4200], b[4200];
    snprintf(a, sizeof(a), "%s/same_a.ftp", dir);
    snprintf(b, sizeof(b), "%s/same_b.ftp", dir);
    assert_null(ft_plan_write(&fx.plan, a));
    ft_plan_fixture_t fx2;
    ft_plan_fixture_init(&fx2, 1);
    assert_null(ft_plan_write(&fx2.plan, b));
    size_t na, nb, ne;
    uint8_t *da = ft_test_read_file(a, &na), *db = ft_test_read_file(b, &nb), *de = encode(&fx, &ne);
    assert_int_equal(na, nb);
    assert_memory_equal(da, db, na);
    assert_int_equal(na, ne);
    assert_memory_equal(da, de, na);
    /* The header is the documented layout. */
    assert_memory_equal(da, "FTPLAN\r\n", 8);
    assert_int_equal(get64(da + 24), na - 48);
    assert_int_equal(get64(da + 16), ftplan__plan__get_packed_size(&fx.plan));
    assert_int_equal(get64(da + 32), XXH3_64bits(da + 48, na - 48));
    assert_int_equal(get64(da + 40), 0);
    free(da);
    free(db);
    free(de);
}

/* The plan and its weights together: sizes and hashes agree, and every
 * tensor's bytes (every expert's slice) are reachable in its file. */
static void test_with_weights(void **state)
{
    for (int variant = 0; variant < 2; variant++) {
        ft_plan_fixture_t fx;
        ft_plan_fixture_init(&fx, variant);
        const char *dir = ft_test_tmpdir(variant ? "bundle1" : "bundle0");
        char dir_copy[4096], path[4200];
        snprintf(dir_copy, sizeof(dir_copy), "%s", dir);
        assert_null(ft_plan_fixture_write_ftw(&fx, dir_copy));
        snprintf(path, sizeof(path), "%s/plan.ftp", dir_copy);
        assert_null(ft_plan_write(&fx.plan, path));
        Ftplan__Plan *plan = NULL;
        assert_null(ft_plan_read(path, &plan));
        ft_ftw_t *files[2] = {NULL, NULL};
        for (size_t f = 0; f < plan->n_weight_files; f++) {
            const Ftplan__WeightFile *wf = plan->weight_files[f];
            snprintf(path, sizeof(path), "%s/%s", dir_copy, wf->name);
            assert_null(ft_ftw_open(path, &files[f]));
            assert_null(ft_ftw_check(files[f], wf->size, wf->content_hash.data));
            assert_null(ft_ftw_verify(files[f]));
        }
        for (size_t i = 0; i < plan->n_tensors; i++) {
            const Ftplan__Tensor *t = plan->tensors[i];
            uint64_t n_slices = t->expert_stride ? t->shape[0] : 1;
            for (uint64_t e = 0; e < n_slices; e++) {
                const uint8_t *p = NULL;
                assert_null(ft_ftw_range(files[t->file], t->offset + e * t->expert_stride,
                                         t->size, &p));
                assert_int_equal((uintptr_t)p % 4096, 0);
            }
        }
        ft_ftw_close(files[0]);
        ft_ftw_close(files[1]);
        ft_plan_free(plan);
    }
}

static void test_truncation(void **state)
{
    ft_plan_fixture_t fx;
    ft_plan_fixture_init(&fx, 0);
    size_t n;
    uint8_t *data = encode(&fx, &n);
    for (size_t cut = 0; cut < n; cut++) {
        uint8_t *copy = malloc(cut + 1);
        memcpy(copy, data, cut);
        Ftplan__Plan *plan = NULL;
        ft_status_t st = ft_plan_read_mem(copy, cut, BAD_NAME, &plan);
        assert_null(plan);
        if (cut < 8)
            expect_error(st, FT_STATUS_FORMAT, BAD_NAME, "magic (byte 0)");
        else if (cut < 48)
            expect_error(st, FT_STATUS_FORMAT, BAD_NAME, "truncated header");
        else
            expect_error(st, FT_STATUS_FORMAT, BAD_NAME ": truncated: payload_bytes (byte 24)",
                         NULL);
        free(copy);
    }
    free(data);
}

/* Reads data (n bytes) after edit() and expects the given error. */
static void expect_read_error(const uint8_t *data, size_t n, void (*edit)(uint8_t *, size_t *),
                              ft_status_code_t code, const char *needle1, const char *needle2)
{
    uint8_t *copy = malloc(n + 64);
    memcpy(copy, data, n);
    memset(copy + n, 0, 64);
    edit(copy, &n);
    Ftplan__Plan *plan = NULL;
    expect_error(ft_plan_read_mem(copy, n, BAD_NAME, &plan), code, needle1, needle2);
    assert_null(plan);
    free(copy);
}

static void edit_magic(uint8_t *b, size_t *n) { b[2] = 'p'; }
static void edit_version7(uint8_t *b, size_t *n) { b[8] = 7; }
static void edit_version0(uint8_t *b, size_t *n) { b[8] = 0; }
static void edit_header_bytes(uint8_t *b, size_t *n) { b[12] = 64; }
static void edit_reserved(uint8_t *b, size_t *n) { b[47] = 1; }
static void edit_payload_byte(uint8_t *b, size_t *n) { b[*n - 3] ^= 0x40; }
static void edit_payload_big(uint8_t *b, size_t *n) { put64(b + 24, get64(b + 24) + 1); }
static void edit_trailing(uint8_t *b, size_t *n) { *n += 5; }
static void edit_raw_huge(uint8_t *b, size_t *n) { put64(b + 16, UINT64_C(1) << 62); }
static void edit_raw_bound(uint8_t *b, size_t *n) { put64(b + 16, UINT64_C(3) << 30); }
static void edit_raw_off_by_one(uint8_t *b, size_t *n) { put64(b + 16, get64(b + 16) + 1); }

static void test_header_corruption(void **state)
{
    ft_plan_fixture_t fx;
    ft_plan_fixture_init(&fx, 0);
    size_t n;
    uint8_t *d = encode(&fx, &n);
    expect_read_error(d, n, edit_magic, FT_STATUS_FORMAT, BAD_NAME, "magic (byte 0)");
    expect_read_error(d, n, edit_version7, FT_STATUS_UNSUPPORTED, BAD_NAME ": format_version",
                      "plan format version 7 is newer than this freetoken (1)");
    expect_read_error(d, n, edit_version0, FT_STATUS_FORMAT, BAD_NAME,
                      "format_version (byte 8) is 0");
    expect_read_error(d, n, edit_header_bytes, FT_STATUS_FORMAT, BAD_NAME,
                      "header_bytes (byte 12) is 64");
    expect_read_error(d, n, edit_reserved, FT_STATUS_FORMAT, BAD_NAME, "reserved (byte 40)");
    expect_read_error(d, n, edit_payload_byte, FT_STATUS_MISMATCH, BAD_NAME,
                      "payload_hash (byte 32)");
    expect_read_error(d, n, edit_payload_big, FT_STATUS_FORMAT, BAD_NAME,
                      "payload_bytes (byte 24)");
    expect_read_error(d, n, edit_trailing, FT_STATUS_FORMAT, BAD_NAME, "5 unexpected bytes");
    expect_read_error(d, n, edit_raw_huge, FT_STATUS_OUT_OF_RANGE, BAD_NAME,
                      "raw_bytes (byte 16) is 4611686018427387904");
    expect_read_error(d, n, edit_raw_bound, FT_STATUS_OUT_OF_RANGE, BAD_NAME,
                      "decompresses to at most");
    expect_read_error(d, n, edit_raw_off_by_one, FT_STATUS_MISMATCH, BAD_NAME,
                      "content size");
    free(d);
}

static void test_payload_corruption(void **state)
{
    Ftplan__Plan *plan = NULL;
    size_t zn, fn;
    /* Valid zstd, garbage protobuf: a field tag with wire type 7. */
    static const uint8_t garbage[] = {0x0f, 0xff, 0xff, 0xff, 0x01, 0x02};
    uint8_t *z = zstd_of(garbage, sizeof(garbage), &zn);
    uint8_t *f = build_file(z, zn, sizeof(garbage), &fn);
    expect_error(ft_plan_read_mem(f, fn, BAD_NAME, &plan), FT_STATUS_FORMAT, BAD_NAME,
                 "not a valid ftplan.Plan");
    free(f);

    /* Two frames where one belongs. */
    uint8_t *zz = malloc(2 * zn);
    memcpy(zz, z, zn);
    memcpy(zz + zn, z, zn);
    f = build_file(zz, 2 * zn, sizeof(garbage), &fn);
    expect_error(ft_plan_read_mem(f, fn, BAD_NAME, &plan), FT_STATUS_FORMAT, BAD_NAME,
                 "exactly one frame");
    free(f);
    free(zz);

    /* Not zstd at all, with a true hash. */
    f = build_file("not zstd data", 13, 10, &fn);
    expect_error(ft_plan_read_mem(f, fn, BAD_NAME, &plan), FT_STATUS_FORMAT,
                 BAD_NAME ": payload (byte 48): zstd:", NULL);
    free(f);

    /* A damaged block inside a frame whose header is intact. */
    ft_plan_fixture_t fx;
    ft_plan_fixture_init(&fx, 0);
    size_t rn;
    uint8_t *raw = pack(&fx.plan, &rn);
    free(z);
    z = zstd_of(raw, rn, &zn);
    for (size_t i = zn / 2; i < zn / 2 + 8; i++)
        z[i] ^= 0xa5;
    f = build_file(z, zn, rn, &fn);
    /* zstd carries no checksum of its own here (payload_hash covers it), so
     * the damage shows either in zstd or in the protobuf it yields. */
    expect_error(ft_plan_read_mem(f, fn, BAD_NAME, &plan), FT_STATUS_FORMAT, BAD_NAME ": payload",
                 NULL);
    assert_null(plan);
    free(f);
    free(z);

    /* A raw protobuf that unpacks but is empty: schema_version missing. */
    expect_error(ft_plan_unpack(raw, 0, BAD_NAME, &plan), FT_STATUS_FORMAT, BAD_NAME,
                 "schema_version");
    assert_null(ft_plan_unpack(raw, rn, BAD_NAME, &plan));
    ft_plan_free(plan);
    free(raw);

    expect_error(ft_plan_read("/nonexistent-dir/plan.ftp", &plan), FT_STATUS_IO,
                 "/nonexistent-dir/plan.ftp", NULL);
    expect_error(ft_plan_read_mem(NULL, 0, BAD_NAME, &plan), FT_STATUS_FORMAT, BAD_NAME, "magic");
}

/* ---- Semantic errors: one edit of the fixture each ---- */

#define EDIT(name, body) \
    static void name(ft_plan_fixture_t *fx) { body; }
#define T(name) ft_plan_fixture_tensor(fx, name)

static uint64_t five_dims[5] = {1, 1, 1, 1, 32};

EDIT(past_file, T("output.weight")->offset = fx->weight_files[0].size)
EDIT(expert_past_file, T("blk.1.ffn_down_exps.weight")->expert_stride += 4 * 4096)
EDIT(stack_count, T("blk.1.ffn_down_exps.weight")->shape[0] = 5)
EDIT(stack_global, T("blk.1.ffn_down_exps.weight")->layer = -1)
EDIT(misaligned, T("blk.0.attn_q.weight")->offset += 64)
EDIT(in_header, T("token_embd.weight")->offset = 0)
EDIT(bad_format, T("blk.0.attn_v.weight")->format = 99)
EDIT(invalid_format, T("blk.0.attn_v.weight")->format = 0)
EDIT(shape_size, T("blk.0.attn_k.weight")->shape[0] = 64)
EDIT(layout_unknown, T("blk.0.attn_q.weight")->layout = 7)
EDIT(layout_vector, T("blk.0.attn_q_norm.weight")->layout = 1)
EDIT(partial_block, T("blk.0.attn_q.weight")->shape[1] = 48)
EDIT(zero_dim, T("blk.0.attn_q.weight")->shape[1] = 0)
EDIT(too_many_dims, T("output_norm.weight")->n_shape = 5; T("output_norm.weight")->shape = five_dims)
EDIT(file_index, T("output.weight")->file = 1)
EDIT(duplicate_tensor, fx->names[5][11] = 'q') /* blk.0.attn_k -> attn_q */
EDIT(tensor_layer, T("blk.1.attn_norm.weight")->layer = 2)
EDIT(expert_stride, T("blk.0.ffn_gate_exps.weight")->expert_stride += 8)
EDIT(types_len, fx->tokenizer.token_types.len = 15)
EDIT(type_value, fx->token_types[4] = 7)
EDIT(eos_id, fx->tokenizer.eos_id = 16)
EDIT(small_vocab, fx->hparams.vocab_size = 8)
EDIT(no_tokenizer, fx->plan.tokenizer = NULL)
EDIT(parent_name, fx->weight_files[0].name = "../x")
EDIT(slash_name, fx->weight_files[0].name = "sub/model.ftw")
EDIT(empty_name, fx->weight_files[0].name = "")
EDIT(dup_file, fx->weight_files[1].name = "model.ftw")
EDIT(short_hash, fx->weight_files[0].content_hash.len = 8)
EDIT(file_size, fx->weight_files[0].size += 100)
EDIT(schema_new, fx->plan.schema_version = FT_PLAN_SCHEMA_VERSION + 1)
EDIT(schema_zero, fx->plan.schema_version = 0)
EDIT(no_hparams, fx->plan.hparams = NULL)
EDIT(arch_unknown, fx->hparams.arch = 0)
EDIT(norm_enum, fx->hparams.norm = 5)
EDIT(zero_layers, fx->hparams.n_layers = 0)
EDIT(three_layers, fx->hparams.n_layers = 3)
EDIT(eps_nan, fx->hparams.norm_eps = __builtin_nanf(""))
EDIT(block_index, fx->blocks[1].index = 0)
EDIT(kv_heads, fx->attn[0].n_kv_heads = 3)
EDIT(no_moe, fx->blocks[1].moe = NULL)
EDIT(experts_used, fx->moe[0].n_experts_used = 5)
EDIT(eb_layer, fx->expert_blocks[1].layer = 5)
EDIT(eb_count, fx->expert_blocks[0].n_experts = 8)
EDIT(eb_dup, fx->expert_blocks[1].layer = 0)
EDIT(eb_stride, fx->expert_blocks[0].stride = 100)
EDIT(eb_past, fx->expert_blocks[1].offset += 4096)

typedef struct semantic_case {
    const char *label;
    int variant;
    void (*edit)(ft_plan_fixture_t *fx);
    ft_status_code_t code;
    const char *needle;
} semantic_case_t;

static const semantic_case_t semantic_cases[] = {
    {"past_file", 0, past_file, FT_STATUS_OUT_OF_RANGE,
     "tensors[2] 'output.weight': offset 204800 + 1088 bytes lies past"},
    {"past_file_name", 0, past_file, FT_STATUS_OUT_OF_RANGE, "past the end of 'model.ftw'"},
    {"expert_past_file", 0, expert_past_file, FT_STATUS_OUT_OF_RANGE,
     "'blk.1.ffn_down_exps.weight': offset"},
    {"stack_count", 0, stack_count, FT_STATUS_MISMATCH, "of 5 slices, but layer 1 has 4 experts"},
    {"stack_global", 0, stack_global, FT_STATUS_MISMATCH, "but layer -1 has 0 experts"},
    {"misaligned", 0, misaligned, FT_STATUS_FORMAT, "'blk.0.attn_q.weight': offset"},
    {"misaligned_why", 0, misaligned, FT_STATUS_FORMAT, "4096-aligned"},
    {"in_header", 0, in_header, FT_STATUS_FORMAT, "past the header"},
    {"bad_format", 0, bad_format, FT_STATUS_FORMAT,
     "'blk.0.attn_v.weight': format 99 is not a known weight format"},
    {"invalid_format", 0, invalid_format, FT_STATUS_FORMAT, "format 0 is not"},
    {"shape_size", 0, shape_size, FT_STATUS_MISMATCH,
     "'blk.0.attn_k.weight': size is 2176 bytes but shape [64, 64] of q8_0 gives 4352"},
    {"partial_block", 0, partial_block, FT_STATUS_MISMATCH, "whole number of q8_0 blocks"},
    {"layout_unknown", 0, layout_unknown, FT_STATUS_FORMAT,
     "'blk.0.attn_q.weight': layout 7 (unknown) cannot hold a q8_0 matrix of 2 dims"},
    {"layout_vector", 0, layout_vector, FT_STATUS_FORMAT,
     "'blk.0.attn_q_norm.weight': layout 1 (q8_0_r16) cannot hold a f32 matrix of 1 dims"},
    {"zero_dim", 0, zero_dim, FT_STATUS_FORMAT, "dim 1 is 0"},
    {"too_many_dims", 0, too_many_dims, FT_STATUS_FORMAT, "5 dims, expected 1..4"},
    {"file_index", 0, file_index, FT_STATUS_OUT_OF_RANGE, "file 1, but the plan has 1 weight"},
    {"duplicate_tensor", 0, duplicate_tensor, FT_STATUS_FORMAT,
     "are both named 'blk.0.attn_q.weight'"},
    {"tensor_layer", 0, tensor_layer, FT_STATUS_OUT_OF_RANGE, "layer 2, expected -1 or below 2"},
    {"expert_stride", 0, expert_stride, FT_STATUS_FORMAT, "expert_stride 12296"},
    {"types_len", 0, types_len, FT_STATUS_MISMATCH,
     "tokenizer.token_types: 15 bytes for 16 tokens"},
    {"type_value", 0, type_value, FT_STATUS_FORMAT, "tokenizer.token_types[4] is 7"},
    {"eos_id", 0, eos_id, FT_STATUS_OUT_OF_RANGE, "tokenizer.eos_id is 16"},
    {"small_vocab", 0, small_vocab, FT_STATUS_OUT_OF_RANGE, "vocab_size (8)"},
    {"no_tokenizer", 0, no_tokenizer, FT_STATUS_FORMAT, "tokenizer: missing"},
    {"parent_name", 0, parent_name, FT_STATUS_FORMAT,
     "weight_files[0].name '../x' is not a plain file name"},
    {"slash_name", 0, slash_name, FT_STATUS_FORMAT, "'sub/model.ftw' is not a plain"},
    {"empty_name", 0, empty_name, FT_STATUS_FORMAT, "weight_files[0].name is empty"},
    {"dup_file", 1, dup_file, FT_STATUS_FORMAT, "weight_files[0] and weight_files[1]"},
    {"short_hash", 0, short_hash, FT_STATUS_FORMAT, "content_hash is 8 bytes, expected 16"},
    {"file_size", 0, file_size, FT_STATUS_FORMAT, "4096-byte pages"},
    {"schema_new", 0, schema_new, FT_STATUS_UNSUPPORTED,
     "plan schema version 3 is newer than this freetoken (2)"},
    {"schema_zero", 0, schema_zero, FT_STATUS_FORMAT, "schema_version is missing"},
    {"no_hparams", 0, no_hparams, FT_STATUS_FORMAT, "hparams: missing"},
    {"arch_unknown", 0, arch_unknown, FT_STATUS_FORMAT, "hparams.arch"},
    {"norm_enum", 0, norm_enum, FT_STATUS_FORMAT, "hparams.norm: unknown value 5"},
    {"zero_layers", 0, zero_layers, FT_STATUS_OUT_OF_RANGE, "hparams.n_layers is 0"},
    {"three_layers", 0, three_layers, FT_STATUS_MISMATCH, "blocks: 2 entries, hparams.n_layers is 3"},
    {"eps_nan", 0, eps_nan, FT_STATUS_OUT_OF_RANGE, "hparams.norm_eps"},
    {"block_index", 0, block_index, FT_STATUS_MISMATCH, "blocks[1].index is 0"},
    {"kv_heads", 0, kv_heads, FT_STATUS_OUT_OF_RANGE, "blocks[0].attn: n_heads 4 and n_kv_heads 3"},
    {"no_moe", 0, no_moe, FT_STATUS_FORMAT, "blocks[1].moe: missing"},
    {"experts_used", 0, experts_used, FT_STATUS_OUT_OF_RANGE, "n_experts_used 5"},
    {"eb_layer", 0, eb_layer, FT_STATUS_OUT_OF_RANGE, "expert_blocks[1]: layer 5"},
    {"eb_count", 0, eb_count, FT_STATUS_MISMATCH, "expert_blocks[0]: 8 experts, but layer 0 has 4"},
    {"eb_dup", 0, eb_dup, FT_STATUS_FORMAT, "a second expert block for layer 0"},
    {"eb_stride", 0, eb_stride, FT_STATUS_FORMAT, "stride 100"},
    {"eb_past", 0, eb_past, FT_STATUS_OUT_OF_RANGE, "past the end of 'model.ftw'"},
    {"eb_past_experts", 1, eb_past, FT_STATUS_OUT_OF_RANGE, "past the end of 'experts.ftw'"},
};

static void test_semantic_errors(void **state)
{
    for (size_t i = 0; i < sizeof(semantic_cases) / sizeof(semantic_cases[0]); i++) {
        const semantic_case_t *c = &semantic_cases[i];
        ft_plan_fixture_t fx;
        ft_plan_fixture_init(&fx, c->variant);
        c->edit(&fx);
        ft_status_t direct = ft_plan_validate(&fx.plan, BAD_NAME);
        if (ft_status_code(direct) != c->code)
            fail_msg("%s: validate gave %s: %s", c->label,
                     ft_status_code_name(ft_status_code(direct)), ft_status_message(direct));
        ft_status_free(direct);
        size_t n;
        uint8_t *d = encode(&fx, &n);
        Ftplan__Plan *plan = NULL;
        ft_status_t st = ft_plan_read_mem(d, n, BAD_NAME, &plan);
        assert_null(plan);
        if (ft_status_code(st) != c->code || !strstr(ft_status_message(st), BAD_NAME ": ") ||
            !strstr(ft_status_message(st), c->needle))
            fail_msg("%s: expected %s with '%s', got %s: %s", c->label,
                     ft_status_code_name(c->code), c->needle,
                     ft_status_code_name(ft_status_code(st)), ft_status_message(st));
        ft_status_free(st);
        free(d);
    }
}

/* ---- Fuzz seeds ---- */

static void write_seed(const char *dir, const char *name, const void *data, size_t n)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    assert_true(n < 32 * 1024);
    assert_int_equal(ft_test_write_file(path, data, n), 0);
}

/* Seeds for tests/fuzz/fuzz_plan.c, written into $FT_PLAN_SEED_DIR when it
 * is set (see tests/fuzz/corpus/fuzz_plan/README.txt), else into scratch. */
static void test_write_seeds(void **state)
{
    const char *env = getenv("FT_PLAN_SEED_DIR");
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", env && *env ? env : ft_test_tmpdir("seeds"));
    for (int variant = 0; variant < 2; variant++) {
        ft_plan_fixture_t fx;
        ft_plan_fixture_init(&fx, variant);
        size_t n;
        uint8_t *d = encode(&fx, &n);
        write_seed(dir, variant ? "plan_f16_two_files.ftp" : "plan_q8_0.ftp", d, n);
        Ftplan__Plan *plan = NULL;
        assert_null(ft_plan_read_mem(d, n, "seed", &plan));
        ft_plan_free(plan);
        if (variant == 0) {
            /* The other two fuzz modes: a bare zstd payload, a bare protobuf. */
            write_seed(dir, "payload_q8_0.zst", d + 48, n - 48);
            size_t rn;
            uint8_t *raw = pack(&fx.plan, &rn);
            write_seed(dir, "raw_q8_0.pb", raw, rn);
            free(raw);
        }
        free(d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_identical_bytes),
        cmocka_unit_test(test_with_weights),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_header_corruption),
        cmocka_unit_test(test_payload_corruption),
        cmocka_unit_test(test_semantic_errors),
        cmocka_unit_test(test_write_seeds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
