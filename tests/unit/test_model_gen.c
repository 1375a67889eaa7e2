/* The fixture generator: determinism, seeds, the BPE trainer, the special
 * token ids in every file, and that HF expert tensors are exactly the
 * slices of the GGUF expert stacks. Files are read back with the small
 * readers below, independent of the project's importers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bpe_train.h"
#include "model_gen.h"
#include "test_tmp.h"
#include "tokenizer_ir.h"
#include "../../runtime/format/convert.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading files back ---------------------------------------------- */

static int files_equal(const char *a, const char *b)
{
    size_t na, nb;
    uint8_t *pa = ft_test_read_file(a, &na), *pb = ft_test_read_file(b, &nb);
    int eq = na == nb && memcmp(pa, pb, na) == 0;
    free(pa);
    free(pb);
    return eq;
}

/* A minimal GGUF v3 reader: enough to find KVs and tensor data. */
typedef struct gg_tensor {
    char name[96];
    uint32_t type, n_dims;
    uint64_t ne[4], offset;
} gg_tensor_t;

typedef struct gg_file {
    uint8_t *buf;
    size_t len, pos, data_start;
    uint64_t n_tensors;
    gg_tensor_t t[128];
    const uint8_t *kv_at[256]; /* value start of each KV, by index */
    char kv_key[256][64];
    uint32_t kv_type[256];
    uint64_t n_kv;
} gg_file_t;

static uint64_t gg_u64(gg_file_t *g)
{
    uint64_t v;
    assert_true(g->pos + 8 <= g->len);
    memcpy(&v, g->buf + g->pos, 8);
    g->pos += 8;
    return v;
}

static uint32_t gg_u32(gg_file_t *g)
{
    uint32_t v;
    assert_true(g->pos + 4 <= g->len);
    memcpy(&v, g->buf + g->pos, 4);
    g->pos += 4;
    return v;
}

static void gg_skip_value(gg_file_t *g, uint32_t type)
{
    static const size_t sizes[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    assert_true(type <= 12);
    if (type == 8) {
        uint64_t n = gg_u64(g);
        assert_true(n <= g->len - g->pos);
        g->pos += n;
    } else if (type == 9) {
        uint32_t et = gg_u32(g);
        uint64_t n = gg_u64(g);
        for (uint64_t i = 0; i < n; i++)
            gg_skip_value(g, et);
    } else {
        g->pos += sizes[type];
    }
}

static void gg_open(gg_file_t *g, const char *path)
{
    memset(g, 0, sizeof(*g));
    g->buf = ft_test_read_file(path, &g->len);
    assert_memory_equal(g->buf, "GGUF", 4);
    g->pos = 4;
    assert_int_equal(gg_u32(g), 3);
    g->n_tensors = gg_u64(g);
    g->n_kv = gg_u64(g);
    assert_true(g->n_tensors <= 128 && g->n_kv <= 256);
    for (uint64_t i = 0; i < g->n_kv; i++) {
        uint64_t kl = gg_u64(g);
        assert_true(kl < 64);
        memcpy(g->kv_key[i], g->buf + g->pos, kl);
        g->pos += kl;
        g->kv_type[i] = gg_u32(g);
        g->kv_at[i] = g->buf + g->pos;
        gg_skip_value(g, g->kv_type[i]);
    }
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        gg_tensor_t *t = &g->t[i];
        uint64_t nl = gg_u64(g);
        assert_true(nl < sizeof(t->name));
        memcpy(t->name, g->buf + g->pos, nl);
        g->pos += nl;
        t->n_dims = gg_u32(g);
        for (uint32_t d = 0; d < 4; d++)
            t->ne[d] = d < t->n_dims ? gg_u64(g) : 1;
        t->type = gg_u32(g);
        t->offset = gg_u64(g);
    }
    g->data_start = (g->pos + 31) / 32 * 32;
}

static int gg_kv(const gg_file_t *g, const char *key)
{
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (strcmp(g->kv_key[i], key) == 0) return (int)i;
    fail_msg("GGUF key %s missing", key);
    return -1;
}

static uint32_t gg_kv_u32(const gg_file_t *g, const char *key)
{
    int i = gg_kv(g, key);
    uint32_t v;
    assert_int_equal(g->kv_type[i], 4);
    memcpy(&v, g->kv_at[i], 4);
    return v;
}

/* Element idx of a string array KV, copied NUL-terminated into out. */
static void gg_kv_string_at(const gg_file_t *g, const char *key, uint64_t idx, char *out,
                            size_t cap)
{
    int i = gg_kv(g, key);
    const uint8_t *p = g->kv_at[i];
    uint32_t et;
    uint64_t n, sl;
    memcpy(&et, p, 4);
    memcpy(&n, p + 4, 8);
    assert_int_equal(et, 8);
    assert_true(idx < n);
    p += 12;
    for (uint64_t k = 0;; k++) {
        memcpy(&sl, p, 8);
        if (k == idx) break;
        p += 8 + sl;
    }
    assert_true(sl < cap);
    memcpy(out, p + 8, sl);
    out[sl] = 0;
}

static const gg_tensor_t *gg_tensor(const gg_file_t *g, const char *name)
{
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (strcmp(g->t[i].name, name) == 0) return &g->t[i];
    fail_msg("GGUF tensor %s missing", name);
    return NULL;
}

static const uint8_t *gg_data(const gg_file_t *g, const gg_tensor_t *t)
{
    return g->buf + g->data_start + t->offset;
}

/* A minimal safetensors reader: the header as JSON, data by name. */
typedef struct st_file {
    uint8_t *buf;
    size_t len;
    json_t *header;
    size_t data_start;
} st_file_t;

static void st_open(st_file_t *s, const char *path)
{
    uint64_t hl;
    json_error_t err;
    s->buf = ft_test_read_file(path, &s->len);
    memcpy(&hl, s->buf, 8);
    assert_true(hl <= s->len - 8);
    s->header = json_loadb((const char *)s->buf + 8, hl, 0, &err);
    if (!s->header) fail_msg("%s: header: %s", path, err.text);
    s->data_start = 8 + hl;
}

static void st_close(st_file_t *s)
{
    json_decref(s->header);
    free(s->buf);
}

static const uint8_t *st_data(const st_file_t *s, const char *name, const char *dtype,
                              uint64_t *out_bytes)
{
    json_t *t = json_object_get(s->header, name);
    if (!t) fail_msg("safetensors tensor %s missing", name);
    assert_string_equal(json_string_value(json_object_get(t, "dtype")), dtype);
    json_t *offs = json_object_get(t, "data_offsets");
    uint64_t b = (uint64_t)json_integer_value(json_array_get(offs, 0));
    uint64_t e = (uint64_t)json_integer_value(json_array_get(offs, 1));
    assert_true(b <= e && e <= s->len - s->data_start);
    *out_bytes = e - b;
    return s->buf + s->data_start + b;
}

/* ---- tests ------------------------------------------------------------ */

static void gen_gguf(const ft_fixture_opts_t *o, const char *path)
{
    ft_status_t st = ft_fixture_write_gguf(o, path);
    if (st) fail_msg("%s", ft_status_message(st));
}

static void gen_hf(const ft_fixture_opts_t *o, const char *dir, uint32_t n_shards)
{
    ft_status_t st = ft_fixture_write_hf(o, dir, n_shards);
    if (st) fail_msg("%s", ft_status_message(st));
}

static void test_bpe_first_merges(void **state)
{
    (void)state;
    ft_bpe_vocab_t v;
    const char text[] = "low lower lowest low";
    assert_null(ft_bpe_train(text, sizeof(text) - 1, 4, &v));
    /* pieces: "low" " lower" " lowest" " low". (l,o) and (o,w) both occur 4
     * times: the tie goes to the smaller left string "l". */
    assert_int_equal(v.n_merges, 4);
    assert_string_equal(v.merges[0], "l o");
    assert_string_equal(v.merges[1], "lo w");
    assert_string_equal(v.merges[2], "\xc4\xa0 low"); /* "Ġ low" */
    assert_string_equal(v.merges[3], "\xc4\xa0low e");
    assert_string_equal(v.tokens[256], "lo");
    assert_string_equal(v.tokens[259], "\xc4\xa0lowe");
    assert_int_equal(v.n_tokens, 256 + 4 + 7);
    ft_bpe_vocab_free(&v);

    ft_status_t st = ft_bpe_train(text, sizeof(text) - 1, 100, &v);
    assert_int_equal(ft_status_code(st), FT_STATUS_OUT_OF_RANGE);
    ft_status_free(st);
}

static void collect(void *user, const char *piece, size_t n)
{
    char *out = user;
    strcat(out, "[");
    strncat(out, piece, n);
    strcat(out, "]");
}

static void test_bpe_pretokenize(void **state)
{
    (void)state;
    char out[512] = "";
    const char *text = "Hello world's  end\n\n 123 ... x\tcaf\xc3\xa9 \xf0\x9f\x98\x80!  ";
    ft_bpe_pretokenize(text, strlen(text), collect, out);
    assert_string_equal(out,
                        "[Hello][ world]['s][ ][ end][\n\n][ ][1][2][3][ ...][ x][\tcaf\xc3\xa9]"
                        "[ \xf0\x9f\x98\x80!][  ]");
}

static void test_byte_tokens(void **state)
{
    (void)state;
    assert_int_equal(ft_bpe_byte_token_id('!'), 0);
    assert_int_equal(ft_bpe_byte_token_id('~'), 93);
    assert_int_equal(ft_bpe_byte_token_id(0xa1), 94);
    assert_int_equal(ft_bpe_byte_token_id(0x00), 188);
    assert_int_equal(ft_bpe_byte_token_id(' '), 220);  /* "Ġ", as in GPT-2 */
    assert_int_equal(ft_bpe_byte_token_id('\n'), 198); /* "Ċ" */
    assert_int_equal(ft_bpe_byte_codepoint(' '), 0x120);
    assert_int_equal(ft_bpe_byte_codepoint(0xad), 0x143);
    int seen[256] = {0};
    for (int b = 0; b < 256; b++) {
        uint32_t id = ft_bpe_byte_token_id((uint8_t)b);
        assert_true(id < 256 && !seen[id]);
        seen[id] = 1;
    }
}

/* The vocabulary, and the same ids in the GGUF and in the HF files. */
static void test_special_tokens(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    ft_bpe_vocab_t v;
    assert_null(ft_fixture_vocab(&o, &v));
    const uint32_t first = 256 + o.n_merges;
    assert_int_equal(v.n_merges, o.n_merges);
    assert_int_equal(v.n_tokens, first + 7);
    assert_int_equal(v.endoftext_id, first);
    assert_int_equal(v.im_start_id, first + 1);
    assert_int_equal(v.im_end_id, first + 2);
    assert_int_equal(v.think_id, first + 3);
    assert_int_equal(v.tool_call_end_id, first + 6);
    assert_string_equal(v.tokens[first], "<|endoftext|>");
    assert_string_equal(v.tokens[first + 2], "<|im_end|>");
    assert_string_equal(v.tokens[first + 4], "</think>");
    assert_int_equal(v.token_types[0], FT_TOKEN_NORMAL);
    assert_int_equal(v.token_types[first - 1], FT_TOKEN_NORMAL);
    assert_int_equal(v.token_types[first + 1], FT_TOKEN_CONTROL);
    assert_int_equal(v.token_types[first + 3], FT_TOKEN_USER_DEFINED);
    /* no duplicate token strings */
    for (uint32_t i = 0; i < v.n_tokens; i++)
        for (uint32_t j = i + 1; j < v.n_tokens; j++)
            if (strcmp(v.tokens[i], v.tokens[j]) == 0)
                fail_msg("token %u and %u are both '%s'", i, j, v.tokens[i]);

    const char *dir = ft_test_tmpdir("special");
    char gguf[4200], hf[4200], path[4300];
    snprintf(gguf, sizeof(gguf), "%s/m.gguf", dir);
    snprintf(hf, sizeof(hf), "%s/hf", dir);
    gen_gguf(&o, gguf);
    gen_hf(&o, hf, 1);
    gg_file_t *g = malloc(sizeof(*g));
    assert_non_null(g);
    gg_open(g, gguf);
    assert_int_equal(gg_kv_u32(g, "tokenizer.ggml.eos_token_id"), v.im_end_id);
    assert_int_equal(gg_kv_u32(g, "tokenizer.ggml.padding_token_id"), v.endoftext_id);
    assert_int_equal(gg_kv_u32(g, "tokenizer.ggml.bos_token_id"), v.endoftext_id);
    assert_int_equal(gg_kv_u32(g, "qwen3moe.expert_count"), o.n_experts);
    char tok[64];
    gg_kv_string_at(g, "tokenizer.ggml.tokens", v.im_start_id, tok, sizeof(tok));
    assert_string_equal(tok, "<|im_start|>");
    gg_kv_string_at(g, "tokenizer.ggml.merges", 0, tok, sizeof(tok));
    assert_string_equal(tok, v.merges[0]);

    json_error_t err;
    snprintf(path, sizeof(path), "%s/config.json", hf);
    json_t *cfg = json_load_file(path, 0, &err);
    assert_non_null(cfg);
    assert_int_equal(json_integer_value(json_object_get(cfg, "bos_token_id")), v.endoftext_id);
    assert_int_equal(json_integer_value(json_object_get(cfg, "eos_token_id")), v.im_end_id);
    assert_int_equal(json_integer_value(json_object_get(cfg, "vocab_size")), v.n_tokens);
    assert_string_equal(json_string_value(json_object_get(cfg, "model_type")), "qwen3_moe");
    json_decref(cfg);
    snprintf(path, sizeof(path), "%s/tokenizer.json", hf);
    json_t *tj = json_load_file(path, 0, &err);
    assert_non_null(tj);
    json_t *added = json_object_get(tj, "added_tokens");
    assert_int_equal(json_array_size(added), 7);
    for (size_t i = 0; i < 7; i++) {
        json_t *a = json_array_get(added, i);
        assert_int_equal(json_integer_value(json_object_get(a, "id")), first + i);
        assert_string_equal(json_string_value(json_object_get(a, "content")), v.tokens[first + i]);
        assert_int_equal(json_is_true(json_object_get(a, "special")), i < 3);
    }
    json_t *model = json_object_get(tj, "model");
    assert_int_equal(json_object_size(json_object_get(model, "vocab")), first);
    assert_int_equal(json_array_size(json_object_get(model, "merges")), o.n_merges);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(model, "vocab"), "!")), 0);
    json_decref(tj);
    snprintf(path, sizeof(path), "%s/tokenizer_config.json", hf);
    json_t *tc = json_load_file(path, 0, &err);
    assert_non_null(tc);
    assert_string_equal(json_string_value(json_object_get(tc, "eos_token")), "<|im_end|>");
    assert_string_equal(json_string_value(json_object_get(tc, "pad_token")), "<|endoftext|>");
    assert_string_equal(json_string_value(json_object_get(tc, "chat_template")),
                        ft_fixture_chat_template);
    json_decref(tc);
    free(g->buf);
    free(g);
    ft_bpe_vocab_free(&v);
}

static const char *const hf_files[] = {"config.json",
                                       "generation_config.json",
                                       "tokenizer.json",
                                       "tokenizer_config.json",
                                       "model.safetensors.index.json",
                                       "model-00001-of-00002.safetensors",
                                       "model-00002-of-00002.safetensors"};

static void test_determinism_and_seeds(void **state)
{
    (void)state;
    const char *dir = ft_test_tmpdir("determinism");
    char a[4200], b[4200], c[4200], pa[4300], pb[4300];
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.seed = 42;
    o.format = FT_DTYPE_Q8_0;
    snprintf(a, sizeof(a), "%s/a.gguf", dir);
    snprintf(b, sizeof(b), "%s/b.gguf", dir);
    snprintf(c, sizeof(c), "%s/c.gguf", dir);
    gen_gguf(&o, a);
    gen_gguf(&o, b);
    assert_true(files_equal(a, b));
    o.seed = 43;
    gen_gguf(&o, c);
    assert_false(files_equal(a, c));

    o.seed = 42;
    o.format = FT_DTYPE_BF16;
    snprintf(a, sizeof(a), "%s/hf_a", dir);
    snprintf(b, sizeof(b), "%s/hf_b", dir);
    gen_hf(&o, a, 2);
    gen_hf(&o, b, 2);
    for (size_t i = 0; i < sizeof(hf_files) / sizeof(hf_files[0]); i++) {
        snprintf(pa, sizeof(pa), "%s/%s", a, hf_files[i]);
        snprintf(pb, sizeof(pb), "%s/%s", b, hf_files[i]);
        if (!files_equal(pa, pb)) fail_msg("%s differs between two runs", hf_files[i]);
    }
    o.seed = 7;
    gen_hf(&o, b, 2);
    snprintf(pa, sizeof(pa), "%s/model-00001-of-00002.safetensors", a);
    snprintf(pb, sizeof(pb), "%s/model-00001-of-00002.safetensors", b);
    assert_false(files_equal(pa, pb));
    snprintf(pa, sizeof(pa), "%s/tokenizer.json", a);
    snprintf(pb, sizeof(pb), "%s/tokenizer.json", b);
    assert_true(files_equal(pa, pb)); /* the vocabulary does not depend on the seed */
}

typedef struct hf_dir {
    st_file_t shards[4];
    uint32_t n;
    json_t *weight_map; /* NULL for a single file */
} hf_dir_t;

static void hf_open(hf_dir_t *h, const char *dir, uint32_t n)
{
    char path[4300];
    h->n = n;
    h->weight_map = NULL;
    for (uint32_t i = 0; i < n; i++) {
        if (n == 1)
            snprintf(path, sizeof(path), "%s/model.safetensors", dir);
        else
            snprintf(path, sizeof(path), "%s/model-%05u-of-%05u.safetensors", dir, i + 1, n);
        st_open(&h->shards[i], path);
    }
    if (n > 1) {
        json_error_t err;
        snprintf(path, sizeof(path), "%s/model.safetensors.index.json", dir);
        json_t *idx = json_load_file(path, 0, &err);
        assert_non_null(idx);
        h->weight_map = json_incref(json_object_get(idx, "weight_map"));
        json_decref(idx);
    }
}

static void hf_close(hf_dir_t *h)
{
    for (uint32_t i = 0; i < h->n; i++)
        st_close(&h->shards[i]);
    json_decref(h->weight_map);
}

/* Finds name in its shard; checks the index names that shard. */
static const uint8_t *hf_data(const hf_dir_t *h, const char *name, const char *dtype,
                              uint64_t *out_bytes)
{
    for (uint32_t i = 0; i < h->n; i++) {
        if (!json_object_get(h->shards[i].header, name)) continue;
        if (h->weight_map) {
            char file[64];
            snprintf(file, sizeof(file), "model-%05u-of-%05u.safetensors", i + 1, h->n);
            assert_string_equal(json_string_value(json_object_get(h->weight_map, name)), file);
        }
        return st_data(&h->shards[i], name, dtype, out_bytes);
    }
    fail_msg("HF tensor %s missing", name);
    return NULL;
}

static void check_same_weights(ft_dtype_t fmt, uint32_t n_shards)
{
    const char *dir = ft_test_tmpdir("slices");
    char gguf[4200], hf[4200], name[128];
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.seed = 5;
    o.format = fmt;
    snprintf(gguf, sizeof(gguf), "%s/%s.gguf", dir, ft_dtype_name(fmt));
    snprintf(hf, sizeof(hf), "%s/%s_hf", dir, ft_dtype_name(fmt));
    gen_gguf(&o, gguf);
    gen_hf(&o, hf, n_shards);
    gg_file_t *g = malloc(sizeof(*g));
    assert_non_null(g);
    gg_open(g, gguf);
    hf_dir_t h;
    hf_open(&h, hf, n_shards);
    assert_int_equal(g->n_tensors, 3 + 12 * o.n_layers);
    const ft_dtype_t hf_fmt = fmt == FT_DTYPE_Q8_0 ? FT_DTYPE_F32 : fmt;
    const char *st_name = ft_dtype_info(hf_fmt)->st_name;
    const uint64_t d = o.d_model, f = o.expert_ffn, per = d * f;
    static const char *const gg_proj[] = {"gate", "up", "down"};
    float *vals = malloc(per * sizeof(float));
    uint8_t *q = malloc(per * 2);
    for (uint32_t l = 0; l < o.n_layers; l++) {
        for (int p = 0; p < 3; p++) {
            snprintf(name, sizeof(name), "blk.%u.ffn_%s_exps.weight", l, gg_proj[p]);
            const gg_tensor_t *t = gg_tensor(g, name);
            assert_int_equal(t->n_dims, 3);
            assert_int_equal(t->ne[0], p == 2 ? f : d);
            assert_int_equal(t->ne[1], p == 2 ? d : f);
            assert_int_equal(t->ne[2], o.n_experts);
            assert_int_equal(t->type, (uint32_t)ft_dtype_info(fmt)->ggml_id);
            uint64_t slice_bytes;
            assert_true(ft_dtype_row_bytes(fmt, per, &slice_bytes));
            for (uint32_t e = 0; e < o.n_experts; e++) {
                snprintf(name, sizeof(name), "model.layers.%u.mlp.experts.%u.%s_proj.weight", l, e,
                         gg_proj[p]);
                uint64_t nb;
                const uint8_t *hd = hf_data(&h, name, st_name, &nb);
                const uint8_t *gd = gg_data(g, t) + e * slice_bytes;
                if (fmt == FT_DTYPE_Q8_0) {
                    assert_int_equal(nb, per * 4);
                    memcpy(vals, hd, nb);
                    ft_quantize_row_q8_0(vals, q, per);
                    hd = q;
                } else {
                    assert_int_equal(nb, slice_bytes);
                }
                if (memcmp(hd, gd, slice_bytes) != 0)
                    fail_msg("%s (%s) differs from its GGUF slice", name, ft_dtype_name(fmt));
            }
        }
    }
    /* a dense weight and a norm: same bytes; norms are F32 everywhere */
    uint64_t nb;
    const gg_tensor_t *t = gg_tensor(g, "blk.1.attn_norm.weight");
    assert_int_equal(t->type, 0);
    assert_memory_equal(hf_data(&h, "model.layers.1.input_layernorm.weight", "F32", &nb),
                        gg_data(g, t), d * 4);
    t = gg_tensor(g, "blk.0.attn_k_norm.weight");
    assert_int_equal(t->ne[0], o.head_dim);
    assert_memory_equal(hf_data(&h, "model.layers.0.self_attn.k_norm.weight", "F32", &nb),
                        gg_data(g, t), o.head_dim * 4);
    if (fmt != FT_DTYPE_Q8_0) {
        t = gg_tensor(g, "output.weight");
        const uint8_t *hd = hf_data(&h, "lm_head.weight", st_name, &nb);
        assert_int_equal(t->ne[0], d);
        assert_memory_equal(hd, gg_data(g, t), nb);
        t = gg_tensor(g, "blk.0.attn_output.weight");
        hd = hf_data(&h, "model.layers.0.self_attn.o_proj.weight", st_name, &nb);
        assert_int_equal(t->ne[0], (uint64_t)o.n_heads * o.head_dim);
        assert_memory_equal(hd, gg_data(g, t), nb);
    }
    free(vals);
    free(q);
    hf_close(&h);
    free(g->buf);
    free(g);
}

static void test_slices_f32(void **state)
{
    (void)state;
    check_same_weights(FT_DTYPE_F32, 1);
}

static void test_slices_f16_sharded(void **state)
{
    (void)state;
    check_same_weights(FT_DTYPE_F16, 3);
}

static void test_slices_bf16(void **state)
{
    (void)state;
    check_same_weights(FT_DTYPE_BF16, 2);
}

static void test_slices_q8_0(void **state)
{
    (void)state;
    check_same_weights(FT_DTYPE_Q8_0, 4);
}

/* Values look like initialized weights: mean ~0, std ~1/sqrt(fan_in). */
static void test_weight_statistics(void **state)
{
    (void)state;
    const char *dir = ft_test_tmpdir("stats");
    char gguf[4200];
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    snprintf(gguf, sizeof(gguf), "%s/m.gguf", dir);
    gen_gguf(&o, gguf);
    gg_file_t *g = malloc(sizeof(*g));
    assert_non_null(g);
    gg_open(g, gguf);
    const gg_tensor_t *t = gg_tensor(g, "blk.0.ffn_up_exps.weight");
    const uint64_t n = t->ne[0] * t->ne[1] * t->ne[2];
    double sum = 0, sum2 = 0;
    for (uint64_t i = 0; i < n; i++) {
        float x;
        memcpy(&x, gg_data(g, t) + 4 * i, 4);
        sum += x;
        sum2 += (double)x * x;
    }
    const double mean = sum / n, sd = sqrt(sum2 / n - mean * mean);
    assert_true(fabs(mean) < 0.01);
    assert_true(fabs(sd * sqrt((double)o.d_model) - 1.0) < 0.05);
    t = gg_tensor(g, "output_norm.weight");
    for (uint64_t i = 0; i < t->ne[0]; i++) {
        float x;
        memcpy(&x, gg_data(g, t) + 4 * i, 4);
        assert_true(x > 0.5f && x < 1.5f);
    }
    free(g->buf);
    free(g);
}

static void test_option_errors(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    ft_status_t st = ft_fixture_opts_preset(&o, "huge");
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ft_status_message(st), "huge"));
    ft_status_free(st);
    o.format = FT_DTYPE_Q8_0;
    o.d_model = 48;
    st = ft_fixture_write_gguf(&o, "/nonexistent/never.gguf");
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ft_status_message(st), "d_model"));
    ft_status_free(st);
    ft_fixture_opts_init(&o);
    o.format = FT_DTYPE_Q8_1; /* an activation layout: the fixture cannot write it */
    st = ft_fixture_opts_check(&o);
    assert_int_equal(ft_status_code(st), FT_STATUS_UNSUPPORTED);
    ft_status_free(st);
    ft_fixture_opts_init(&o);
    o.mix = FT_FIXTURE_MIX_Q4_K_M; /* the tiny fixture's rows of 64 are not K blocks */
    st = ft_fixture_opts_check(&o);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ft_status_message(st), "q4_k_m"));
    ft_status_free(st);
    ft_fixture_opts_init(&o);
    o.n_kv_heads = 3;
    st = ft_fixture_opts_check(&o);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    ft_fixture_opts_init(&o);
    st = ft_fixture_write_hf(&o, ft_test_tmpdir("errors"), 0);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    st = ft_fixture_write_gguf(&o, "/nonexistent-dir/x.gguf");
    assert_int_equal(ft_status_code(st), FT_STATUS_IO);
    ft_status_free(st);
    ft_fixture_opts_preset(&o, "bench");
    assert_int_equal(o.d_model, 1024);
    assert_int_equal(o.n_experts, 64);
    assert_null(ft_fixture_opts_check(&o));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bpe_first_merges),      cmocka_unit_test(test_bpe_pretokenize),
        cmocka_unit_test(test_byte_tokens),           cmocka_unit_test(test_special_tokens),
        cmocka_unit_test(test_determinism_and_seeds), cmocka_unit_test(test_slices_f32),
        cmocka_unit_test(test_slices_f16_sharded),    cmocka_unit_test(test_slices_bf16),
        cmocka_unit_test(test_slices_q8_0),           cmocka_unit_test(test_weight_statistics),
        cmocka_unit_test(test_option_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
