/* Hugging Face directories: config flattening, sharded weights, tokenizer,
 * and hostile directories and JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "hf.h"
#include "hf_internal.h"
#include "st_writer.h"
#include "test_tmp.h"

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Qwen2's Split regex (as in its tokenizer.json after JSON decoding). */
#define QWEN2_RE                                                                                   \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "                          \
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"                                                                \
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define LLAMA3_RE                                                                                  \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "                     \
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

static void ok(ft_status_t st)
{
    if (st) fail_msg("unexpected error: %s", ft_status_message(st));
}

/* Expects an error with `code` whose message holds every needle. */
static void expect_err(ft_status_t st, ft_status_code_t code, ...)
{
    if (!st) fail_msg("succeeded, expected an error");
    const char *msg = ft_status_message(st);
    if (ft_status_code(st) != code)
        fail_msg("code %s, expected %s: %s", ft_status_code_name(ft_status_code(st)),
                 ft_status_code_name(code), msg);
    va_list ap;
    va_start(ap, code);
    const char *needle;
    while ((needle = va_arg(ap, const char *)) != NULL)
        if (!strstr(msg, needle)) fail_msg("message lacks '%s': %s", needle, msg);
    va_end(ap);
    ft_status_free(st);
}

/* An empty scratch directory: files left by an earlier run are removed so
 * every run sees the same directory. */
static const char *fresh_dir(const char *name)
{
    const char *dir = ft_test_tmpdir(name);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    char path[4400];
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        assert_int_equal(unlink(path), 0);
    }
    closedir(d);
    return dir;
}

static void put_file(const char *dir, const char *name, const char *text)
{
    char path[4400];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    assert_int_equal(ft_test_write_file(path, text, strlen(text)), 0);
}

static void put_json(const char *dir, const char *name, json_t *v)
{
    char *text = json_dumps(v, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    assert_non_null(text);
    put_file(dir, name, text);
    free(text);
    json_decref(v);
}

/* A shard with n tensors named names[i], each F32 [2, 2] of value i. */
static void put_shard(const char *dir, const char *file, const char *const *names, int n)
{
    char path[4400];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    ft_st_writer_t *w;
    ok(ft_st_writer_create(path, &w));
    const uint64_t shape[2] = {2, 2};
    for (int i = 0; i < n; i++)
        ok(ft_st_writer_add_tensor(w, names[i], "F32", 2, shape, 16));
    ok(ft_st_writer_write_header(w));
    for (int i = 0; i < n; i++) {
        float v[4] = {(float)i, (float)i, (float)i, (float)i};
        ok(ft_st_writer_write_data(w, v, sizeof(v)));
    }
    ok(ft_st_writer_close(w));
}

static json_t *sample_config(void)
{
    return json_pack("{s:[s], s:s, s:i, s:i, s:f, s:b, s:n, s:{s:s, s:f, s:[i,i]}, s:i, s:i, s:i,"
                     " s:[s,s], s:{s:{s:i}}}",
                     "architectures", "Qwen3MoeForCausalLM", "model_type", "qwen3_moe",
                     "num_hidden_layers", 2, "vocab_size", 9, "rms_norm_eps", 1e-6,
                     "tie_word_embeddings", 0, "sliding_window", "rope_scaling", "type", "yarn",
                     "factor", 4.0, "mrope_section", 16, 24, "bos_token_id", 5, "eos_token_id", 5,
                     "pad_token_id", 100, "layer_types", "full", "sliding", "text_config", "inner",
                     "depth", 3);
}

/* A byte-level BPE vocabulary: 5 tokens, 2 added tokens, 2 merges in the
 * two accepted forms. */
static json_t *sample_tokenizer(const char *regex)
{
    return json_pack(
        "{s:s, s:[{s:i, s:s, s:b}, {s:i, s:s, s:b}], s:{s:s, s:[{s:s, s:{s:s}, s:s}, {s:s}]},"
        " s:{s:s, s:{s:i, s:i, s:i, s:i, s:i}, s:[s, [s, s]], s:n}}",
        "version", "1.0", "added_tokens", "id", 5, "content", "<|endoftext|>", "special", 1, "id",
        6, "content", "<think>", "special", 0, "pre_tokenizer", "type", "Sequence", "pretokenizers",
        "type", "Split", "pattern", "Regex", regex, "behavior", "Isolated", "type", "ByteLevel",
        "model", "type", "BPE", "vocab", "a", 0, "b", 1, "ab", 2, "\xc4\xa0", 3,
        "\xc4\xa0"
        "a",
        4, "merges", "a b", "\xc4\xa0", "a", "unk_token");
}

static const char *make_model_dir(const char *name)
{
    static char dir[4200];
    snprintf(dir, sizeof(dir), "%s", fresh_dir(name));
    put_json(dir, "config.json", sample_config());
    const char *s1[] = {"model.embed_tokens.weight", "model.layers.0.mlp.gate.weight"};
    const char *s2[] = {"lm_head.weight"};
    put_shard(dir, "model-00001-of-00002.safetensors", s1, 2);
    put_shard(dir, "model-00002-of-00002.safetensors", s2, 1);
    put_json(dir, "model.safetensors.index.json",
             json_pack("{s:{s:i}, s:{s:s, s:s, s:s}}", "metadata", "total_size", 48, "weight_map",
                       "model.embed_tokens.weight", "model-00001-of-00002.safetensors",
                       "lm_head.weight", "model-00002-of-00002.safetensors",
                       "model.layers.0.mlp.gate.weight", "model-00001-of-00002.safetensors"));
    put_json(dir, "tokenizer.json", sample_tokenizer(QWEN2_RE));
    put_json(dir, "tokenizer_config.json",
             json_pack("{s:b, s:n, s:s, s:{s:s, s:b}, s:[{s:s, s:s}, {s:s, s:s}]}", "add_bos_token",
                       0, "bos_token", "eos_token", "<|endoftext|>", "pad_token", "content",
                       "<|endoftext|>", "lstrip", 0, "chat_template", "name", "tool_use",
                       "template", "T", "name", "default", "template", "{{ messages }}"));
    return dir;
}

static void test_import_dir(void **state)
{
    (void)state;
    const char *dir = make_model_dir("hf_ok");
    ft_src_model_t *src;
    ok(ft_hf_import(dir, &src));
    assert_int_equal(src->kind, FT_SRC_HF);
    /* Metadata. */
    const ft_meta_t *m = &src->meta;
    assert_string_equal(ft_meta_get_string(m, "architectures.0"), "Qwen3MoeForCausalLM");
    int64_t i;
    double f;
    int b;
    assert_true(ft_meta_get_i64(m, "num_hidden_layers", &i) && i == 2);
    assert_true(ft_meta_get_f64(m, "rope_scaling.factor", &f) && f == 4.0);
    assert_string_equal(ft_meta_get_string(m, "rope_scaling.type"), "yarn");
    assert_true(ft_meta_get_f64(m, "rms_norm_eps", &f) && f == 1e-6);
    assert_true(ft_meta_get_bool(m, "tie_word_embeddings", &b) && b == 0);
    assert_int_equal(ft_meta_find(m, "sliding_window")->type, FT_META_NULL);
    const ft_meta_entry_t *arr = ft_meta_find(m, "rope_scaling.mrope_section");
    assert_non_null(arr);
    assert_int_equal(arr->type, FT_META_ARRAY);
    assert_int_equal(arr->len, 2);
    assert_true(arr->arr[1] == 24.0);
    assert_string_equal(ft_meta_get_string(m, "layer_types.1"), "sliding");
    assert_true(ft_meta_get_i64(m, "text_config.inner.depth", &i) && i == 3);
    /* Weights: shards sorted by name, tensors by offset within each. */
    assert_int_equal(src->n_files, 2);
    assert_non_null(strstr(src->files[0].path, "model-00001-of-00002.safetensors"));
    assert_int_equal(src->n_tensors, 3);
    const ft_src_tensor_t *t = ft_src_find_tensor(src, "lm_head.weight");
    assert_non_null(t);
    assert_int_equal(t->file, 1);
    assert_int_equal(t->dtype, FT_DTYPE_F32);
    assert_int_equal(t->n_dims, 2);
    assert_int_equal(t->n_bytes, 16);
    t = ft_src_find_tensor(src, "model.layers.0.mlp.gate.weight");
    assert_non_null(t);
    assert_int_equal(t->file, 0);
    /* Its bytes are where the offset says (value 1.0 as written). */
    FILE *fp = fopen(src->files[0].path, "rb");
    assert_non_null(fp);
    float v = 0;
    assert_int_equal(fseek(fp, (long)t->offset, SEEK_SET), 0);
    assert_int_equal(fread(&v, 4, 1, fp), 1);
    fclose(fp);
    assert_true(v == 1.0f);
    /* Tokenizer: 7 tokens padded to vocab_size 9. */
    const ft_ir_tokenizer_t *tok = &src->tok;
    assert_string_equal(tok->model, "gpt2");
    assert_string_equal(tok->pre, "qwen2");
    assert_int_equal(tok->n_tokens, 9);
    assert_string_equal(tok->tokens[4], "\xc4\xa0"
                                        "a");
    assert_int_equal(tok->token_lens[4], 3);
    assert_int_equal(tok->token_types[0], FT_TOKEN_NORMAL);
    assert_string_equal(tok->tokens[5], "<|endoftext|>");
    assert_int_equal(tok->token_types[5], FT_TOKEN_CONTROL);
    assert_int_equal(tok->token_types[6], FT_TOKEN_USER_DEFINED);
    assert_string_equal(tok->tokens[8], "[PAD8]");
    assert_int_equal(tok->token_types[7], FT_TOKEN_UNUSED);
    assert_int_equal(tok->n_merges, 2);
    assert_string_equal(tok->merges[0], "a b");
    assert_string_equal(tok->merges[1], "\xc4\xa0 a");
    assert_int_equal(tok->eos_id, 5);
    assert_int_equal(tok->pad_id, 5); /* tokenizer_config wins over config's 100 */
    assert_int_equal(tok->bos_id, 5); /* null in tokenizer_config: config.json's */
    assert_int_equal(tok->unk_id, -1);
    assert_int_equal(tok->add_bos, 0);
    assert_string_equal(tok->chat_template, "{{ messages }}");
    ft_src_model_destroy(src);
}

static void test_single_and_scanned_weights(void **state)
{
    (void)state;
    const char *dir = fresh_dir("hf_scan");
    put_file(dir, "config.json", "{\"num_hidden_layers\": 1}");
    const char *a[] = {"x"}, *b[] = {"y"};
    put_shard(dir, "b.safetensors", b, 1);
    put_shard(dir, "a.safetensors", a, 1);
    ft_src_model_t *src;
    ok(ft_hf_import(dir, &src));
    assert_int_equal(src->n_files, 2);
    assert_non_null(strstr(src->files[0].path, "/a.safetensors"));
    assert_string_equal(src->tensors[0].name, "x");
    assert_null(src->tok.model); /* no tokenizer.json */
    ft_src_model_destroy(src);
    /* model.safetensors wins over the scan. */
    put_shard(dir, "model.safetensors", a, 1);
    ok(ft_hf_import(dir, &src));
    assert_int_equal(src->n_files, 1);
    assert_int_equal(src->n_tensors, 1);
    ft_src_model_destroy(src);
}

static void test_template_file(void **state)
{
    (void)state;
    const char *dir = fresh_dir("hf_jinja");
    put_file(dir, "config.json", "{\"eos_token_id\": 5}");
    const char *a[] = {"x"};
    put_shard(dir, "model.safetensors", a, 1);
    put_json(dir, "tokenizer.json", sample_tokenizer(QWEN2_RE));
    put_file(dir, "chat_template.jinja", "{% for m in messages %}{{ m }}{% endfor %}");
    ft_src_model_t *src;
    ok(ft_hf_import(dir, &src));
    assert_string_equal(src->tok.chat_template, "{% for m in messages %}{{ m }}{% endfor %}");
    assert_int_equal(src->tok.eos_id, 5);
    ft_src_model_destroy(src);
    put_file(dir, "chat_template.jinja", "caf\xe9");
    expect_err(ft_hf_import(dir, &src), FT_STATUS_FORMAT, "chat_template.jinja", "UTF-8", NULL);
}

static void test_hostile_dirs(void **state)
{
    (void)state;
    ft_src_model_t *src = NULL;
    const char *dir = fresh_dir("hf_noconfig");
    expect_err(ft_hf_import(dir, &src), FT_STATUS_IO, "config.json", "cannot open", NULL);
    assert_null(src);
    put_file(dir, "config.json", "{}");
    expect_err(ft_hf_import(dir, &src), FT_STATUS_FORMAT, "no weights", NULL);
    put_file(dir, "config.json", "{\"a\": [1, 2,]}");
    expect_err(ft_hf_import(dir, &src), FT_STATUS_FORMAT, "config.json", "byte 13", NULL);

    dir = fresh_dir("hf_missing_shard");
    put_file(dir, "config.json", "{}");
    put_file(dir, "model.safetensors.index.json",
             "{\"weight_map\": {\"w\": \"model-00001-of-00002.safetensors\"}}");
    expect_err(ft_hf_import(dir, &src), FT_STATUS_IO, "model.safetensors.index.json",
               "model-00001-of-00002.safetensors", "cannot open", NULL);
    put_file(dir, "model.safetensors.index.json",
             "{\"weight_map\": {\"w\": \"../x.safetensors\"}}");
    expect_err(ft_hf_import(dir, &src), FT_STATUS_FORMAT, "model.safetensors.index.json",
               "'../x.safetensors'", "plain file name", NULL);
    put_file(dir, "model.safetensors.index.json", "{\"weight_map\": {\"w\": \"..\"}}");
    expect_err(ft_hf_import(dir, &src), FT_STATUS_FORMAT, "plain file name", NULL);
    const char *w[] = {"w"}, *w2[] = {"v", "w"};
    put_shard(dir, "s1.safetensors", w, 1);
    put_shard(dir, "s2.safetensors", w2, 2);
    put_file(dir, "model.safetensors.index.json",
             "{\"weight_map\": {\"w\": \"s1.safetensors\", \"v\": \"s2.safetensors\"}}");
    expect_err(ft_hf_import(dir, &src), FT_STATUS_FORMAT, "tensor 'w' is in both", "s1.safetensors",
               "s2.safetensors", NULL);
    put_shard(dir, "s2.safetensors", w2 + 0, 1); /* only v now */
    put_file(dir, "model.safetensors.index.json",
             "{\"weight_map\": {\"w\": \"s2.safetensors\", \"v\": \"s2.safetensors\"}}");
    expect_err(ft_hf_import(dir, &src), FT_STATUS_FORMAT, "model.safetensors.index.json",
               "'w' in shard 's2.safetensors'", NULL);
    const char *vy[] = {"v", "y"};
    put_shard(dir, "s2.safetensors", vy, 2);
    put_file(dir, "model.safetensors.index.json",
             "{\"weight_map\": {\"v\": \"s1.safetensors\", \"w\": \"s1.safetensors\","
             " \"y\": \"s2.safetensors\"}}");
    expect_err(ft_hf_import(dir, &src), FT_STATUS_FORMAT, "'v' in shard 's1.safetensors'",
               "but it is in", NULL);
    /* Duplicates without an index, found by scanning. */
    char path[4400];
    snprintf(path, sizeof(path), "%s/model.safetensors.index.json", dir);
    assert_int_equal(unlink(path), 0);
    put_shard(dir, "s2.safetensors", w, 1);
    expect_err(ft_hf_import(dir, &src), FT_STATUS_FORMAT, "tensor 'w' is in both", NULL);
    /* A broken shard names itself. */
    snprintf(path, sizeof(path), "%s/s2.safetensors", dir);
    assert_int_equal(ft_test_write_file(path, "\x10\0\0\0\0\0\0\0{}", 10), 0);
    expect_err(ft_hf_import(dir, &src), FT_STATUS_OUT_OF_RANGE, "s2.safetensors",
               "header length 16", NULL);
    expect_err(ft_hf_import("/nonexistent/dir", &src), FT_STATUS_IO, "/nonexistent/dir", NULL);
}

/* The in-memory tokenizer reader over config + tokenizer + tokenizer_config. */
static ft_status_t parse_tok(const char *config, json_t *tokj, const char *tcfg,
                             ft_src_model_t **out_src)
{
    ok(ft_src_model_create(FT_SRC_HF, "mem", out_src));
    ok(ft_hf_config_parse(&(*out_src)->meta, "mem/config.json", config, strlen(config)));
    char *text = json_dumps(tokj, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(tokj);
    assert_non_null(text);
    ft_status_t st =
        ft_hf_tokenizer_parse(*out_src, "mem/tokenizer.json", text, strlen(text),
                              "mem/tokenizer_config.json", tcfg, tcfg ? strlen(tcfg) : 0);
    free(text);
    return st;
}

static void expect_tok_err(const char *config, json_t *tokj, const char *tcfg,
                           ft_status_code_t code, const char *n1, const char *n2)
{
    ft_src_model_t *src;
    expect_err(parse_tok(config, tokj, tcfg, &src), code, n1, n2, NULL);
    assert_null(src->tok.tokens); /* nothing half-filled is left */
    ft_src_model_destroy(src);
}

static void test_tokenizer_variants(void **state)
{
    (void)state;
    ft_src_model_t *src;
    ok(parse_tok("{}", sample_tokenizer(LLAMA3_RE), NULL, &src));
    assert_string_equal(src->tok.pre, "llama-bpe");
    assert_int_equal(src->tok.n_tokens, 7); /* no vocab_size: no padding */
    assert_int_equal(src->tok.eos_id, -1);
    ft_src_model_destroy(src);

    json_t *t = sample_tokenizer("x");
    json_object_set_new(t, "pre_tokenizer", json_pack("{s:s}", "type", "ByteLevel"));
    json_object_set_new(json_object_get(t, "model"), "unk_token", json_string("ab"));
    ok(parse_tok("{\"eos_token_id\": 6}", t,
                 "{\"chat_template\": \"{{x}}\", \"add_bos_token\": true,"
                 " \"bos_token\": {\"content\": \"a\"}}",
                 &src));
    assert_string_equal(src->tok.pre, "gpt2");
    assert_int_equal(src->tok.unk_id, 2);
    assert_int_equal(src->tok.eos_id, 6);
    assert_int_equal(src->tok.bos_id, 0);
    assert_int_equal(src->tok.add_bos, 1);
    assert_string_equal(src->tok.chat_template, "{{x}}");
    ft_src_model_destroy(src);

    ok(parse_tok("{}", sample_tokenizer("\\s+"), NULL, &src));
    assert_string_equal(src->tok.pre, "default");
    assert_null(src->tok.normalizer);
    ft_src_model_destroy(src);

    /* normalizer: NFC alone or in a Sequence; null is none */
    t = sample_tokenizer(QWEN2_RE);
    json_object_set_new(t, "normalizer", json_pack("{s:s}", "type", "NFC"));
    ok(parse_tok("{}", t, NULL, &src));
    assert_string_equal(src->tok.normalizer, "NFC");
    ft_src_model_destroy(src);
    t = sample_tokenizer(QWEN2_RE);
    json_object_set_new(
        t, "normalizer",
        json_pack("{s:s, s:[{s:s}]}", "type", "Sequence", "normalizers", "type", "NFC"));
    ok(parse_tok("{}", t, NULL, &src));
    assert_string_equal(src->tok.normalizer, "NFC");
    ft_src_model_destroy(src);
    t = sample_tokenizer(QWEN2_RE);
    json_object_set_new(t, "normalizer",
                        json_pack("{s:s, s:[{s:s}, {s:s}]}", "type", "Sequence", "normalizers",
                                  "type", "NFKC", "type", "NFC"));
    ok(parse_tok("{}", t, NULL, &src));
    assert_string_equal(src->tok.normalizer, "NFKC");
    ft_src_model_destroy(src);
    t = sample_tokenizer(QWEN2_RE);
    json_object_set_new(t, "normalizer", json_null());
    ok(parse_tok("{}", t, NULL, &src));
    assert_null(src->tok.normalizer);
    ft_src_model_destroy(src);
}

static void test_tokenizer_hostile(void **state)
{
    (void)state;
    json_t *t = sample_tokenizer(QWEN2_RE);
    json_object_set_new(json_object_get(json_object_get(t, "model"), "vocab"), "zz",
                        json_integer(9)); /* ids 7, 8 missing */
    expect_tok_err("{}", t, NULL, FT_STATUS_FORMAT, "mem/tokenizer.json", "not dense");

    t = sample_tokenizer(QWEN2_RE);
    json_object_set_new(json_object_get(json_object_get(t, "model"), "vocab"), "zz",
                        json_integer(8)); /* id 7 missing, inside the padded size */
    expect_tok_err("{\"vocab_size\": 10}", t, NULL, FT_STATUS_FORMAT, "no token has id 7",
                   "up to 8");

    t = sample_tokenizer(QWEN2_RE);
    json_array_append_new(json_object_get(json_object_get(t, "model"), "merges"),
                          json_string("a b ab"));
    expect_tok_err("{}", t, NULL, FT_STATUS_FORMAT, "model.merges[2]", "left right");

    t = sample_tokenizer(QWEN2_RE);
    json_array_append_new(json_object_get(json_object_get(t, "model"), "merges"),
                          json_pack("[s]", "a"));
    expect_tok_err("{}", t, NULL, FT_STATUS_FORMAT, "model.merges[2]", "left");

    t = sample_tokenizer(QWEN2_RE);
    json_array_append_new(json_object_get(json_object_get(t, "model"), "merges"),
                          json_string("a q"));
    expect_tok_err("{}", t, NULL, FT_STATUS_FORMAT, "model.merges[2]", "'q' is not in model.vocab");

    expect_tok_err("{}", sample_tokenizer(QWEN2_RE), "{\"eos_token\": \"</s>\"}", FT_STATUS_FORMAT,
                   "mem/tokenizer_config.json", "'eos_token' = '</s>'");
    expect_tok_err("{}", sample_tokenizer(QWEN2_RE), "{\"eos_token\": 3}", FT_STATUS_FORMAT,
                   "'eos_token'", "neither");
    expect_tok_err("{\"eos_token_id\": 7}", sample_tokenizer(QWEN2_RE), NULL,
                   FT_STATUS_OUT_OF_RANGE, "config.json", "eos_token_id = 7");
    expect_tok_err("{\"vocab_size\": 6}", sample_tokenizer(QWEN2_RE), NULL, FT_STATUS_MISMATCH,
                   "vocab_size 6", "7 tokens");
    expect_tok_err("{\"vocab_size\": 1000000000}", sample_tokenizer(QWEN2_RE), NULL,
                   FT_STATUS_OUT_OF_RANGE, "vocab_size 1000000000", NULL);

    t = sample_tokenizer(QWEN2_RE);
    json_object_set_new(json_object_get(t, "model"), "type", json_string("Unigram"));
    expect_tok_err("{}", t, NULL, FT_STATUS_UNSUPPORTED, "'Unigram'", NULL);

    t = sample_tokenizer(QWEN2_RE);
    json_object_set_new(json_object_get(t, "model"), "byte_fallback", json_true());
    expect_tok_err("{}", t, NULL, FT_STATUS_UNSUPPORTED, "byte_fallback", NULL);

    t = sample_tokenizer(QWEN2_RE);
    json_object_set_new(json_array_get(json_object_get(t, "added_tokens"), 1), "id",
                        json_integer(1));
    json_object_set_new(json_array_get(json_object_get(t, "added_tokens"), 1), "content",
                        json_string("c")); /* id 1 is "b" in the vocab */
    expect_tok_err("{}", t, NULL, FT_STATUS_FORMAT, "added_tokens[1]", "id 1 is both 'b' and 'c'");

    t = sample_tokenizer(QWEN2_RE);
    json_object_set_new(json_object_get(t, "model"), "unk_token", json_string("<unk>"));
    expect_tok_err("{}", t, NULL, FT_STATUS_FORMAT, "model.unk_token", "'<unk>'");

    /* normalizers other than NFC are refused, naming the field */
    t = sample_tokenizer(QWEN2_RE);
    json_object_set_new(t, "normalizer", json_pack("{s:s}", "type", "Lowercase"));
    expect_tok_err("{}", t, NULL, FT_STATUS_UNSUPPORTED, "mem/tokenizer.json: field 'normalizer'",
                   "'Lowercase'");
    t = sample_tokenizer(QWEN2_RE);
    json_object_set_new(t, "normalizer",
                        json_pack("{s:s, s:[{s:s}, {s:s}]}", "type", "Sequence", "normalizers",
                                  "type", "NFC", "type", "NFD"));
    expect_tok_err("{}", t, NULL, FT_STATUS_UNSUPPORTED, "'normalizer.normalizers[1]'", "'NFD'");
    t = sample_tokenizer(QWEN2_RE);
    json_object_set_new(t, "normalizer", json_string("NFC"));
    expect_tok_err("{}", t, NULL, FT_STATUS_FORMAT, "'normalizer'", "not an object");
    t = sample_tokenizer(QWEN2_RE);
    json_object_set_new(t, "normalizer", json_pack("{s:i}", "type", 3));
    expect_tok_err("{}", t, NULL, FT_STATUS_FORMAT, "'normalizer.type'", NULL);

    ft_src_model_t *src;
    ok(ft_src_model_create(FT_SRC_HF, "mem", &src));
    const char *bad = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"a\": 1}}}";
    expect_err(ft_hf_tokenizer_parse(src, "mem/tokenizer.json", bad, strlen(bad), NULL, NULL, 0),
               FT_STATUS_FORMAT, "mem/tokenizer.json", "duplicate", NULL);
    ft_src_model_destroy(src);
}

static void test_config_hostile(void **state)
{
    (void)state;
    ft_src_model_t *src;
    ok(ft_src_model_create(FT_SRC_HF, "mem", &src));
    char deep[200] = {0};
    for (int i = 0; i < 20; i++)
        strcat(deep, "{\"a\":");
    strcat(deep, "1");
    for (int i = 0; i < 20; i++)
        strcat(deep, "}");
    expect_err(ft_hf_config_parse(&src->meta, "c.json", deep, strlen(deep)), FT_STATUS_UNSUPPORTED,
               "c.json", "nested deeper", NULL);
    expect_err(ft_hf_config_parse(&src->meta, "c.json", "[]", 2), FT_STATUS_FORMAT, "c.json",
               "not a JSON object", NULL);
    expect_err(ft_hf_config_parse(&src->meta, "c.json", "{\"a\":1,\"a\":2}", 13), FT_STATUS_FORMAT,
               "c.json", "duplicate", NULL);
    expect_err(ft_hf_config_parse(&src->meta, "c.json", "{\"a\":\"\xff\"}", 8), FT_STATUS_FORMAT,
               "c.json", "byte", NULL);
    const char *mixed = "{\"m\": [1, \"x\", null, [2, 3]], \"e\": []}";
    ok(ft_hf_config_parse(&src->meta, "c.json", mixed, strlen(mixed)));
    int64_t i;
    assert_true(ft_meta_get_i64(&src->meta, "m.0", &i) && i == 1);
    assert_string_equal(ft_meta_get_string(&src->meta, "m.1"), "x");
    assert_int_equal(ft_meta_find(&src->meta, "m.2")->type, FT_META_NULL);
    assert_int_equal(ft_meta_find(&src->meta, "m.3")->len, 2);
    assert_int_equal(ft_meta_find(&src->meta, "e")->type, FT_META_ARRAY);
    assert_int_equal(ft_meta_find(&src->meta, "e")->len, 0);
    ft_src_model_destroy(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import_dir),        cmocka_unit_test(test_single_and_scanned_weights),
        cmocka_unit_test(test_hostile_dirs),      cmocka_unit_test(test_tokenizer_variants),
        cmocka_unit_test(test_tokenizer_hostile), cmocka_unit_test(test_config_hostile),
        cmocka_unit_test(test_template_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
