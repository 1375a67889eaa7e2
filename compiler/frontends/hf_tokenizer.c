/* tokenizer.json (Hugging Face tokenizers) -> the IR tokenizer in GGUF's
 * conventions, as llama.cpp's converter writes it: tokens ordered by id,
 * padded with "[PAD<id>]" up to config.json vocab_size, token types from
 * added_tokens, merges as "left right". Only byte-level BPE is accepted,
 * whose tokens are already spelled with GPT-2's byte-to-unicode map.
 *
 * Every string comes from jansson, which rejects invalid UTF-8 and (without
 * JSON_ALLOW_NUL) NUL bytes, so tokens are valid NUL-free UTF-8. */
#include "hf_internal.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Padding entries beyond the tokenizer's own tokens. Real checkpoints pad a
 * few hundred ids (to a multiple of 64 or 128); the bound keeps a hostile
 * vocab_size from allocating without end. */
#define FT_HF_MAX_PAD_TOKENS (1u << 20)

/* The Split regexes of tokenizer.json files, as llama.cpp recognizes them. */
static const char ft_hf_re_qwen2[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char ft_hf_re_llama3[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

typedef struct ft_hf_tok_ctx {
    ft_src_model_t *src;
    const char *where;
    const json_t *vocab; /* model.vocab */
    uint32_t cap;        /* slots allocated */
    const char **tokens;
    uint32_t *lens;
    uint8_t *types; /* 0 = no token has this id yet */
} ft_hf_tok_ctx_t;

int64_t ft_hf_token_lookup(const ft_ir_tokenizer_t *tok, const char *s, uint64_t len)
{
    for (uint32_t i = 0; i < tok->n_tokens; i++)
        if (tok->token_lens[i] == len && memcmp(tok->tokens[i], s, (size_t)len) == 0) return i;
    return -1;
}

FT_WARN_UNUSED static ft_status_t ft_hf_tok_put(ft_hf_tok_ctx_t *c, const char *field, json_int_t id,
                                 const char *s, uint8_t type)
{
    if (id < 0 || (uint64_t)id >= c->cap)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: %s: token '%.200s' has id %" JSON_INTEGER_FORMAT
                              ", outside 0..%u: token ids are not dense",
                              c->where, field, s, id, c->cap ? c->cap - 1 : 0);
    uint32_t i = (uint32_t)id;
    if (c->types[i]) {
        if (strcmp(c->tokens[i], s) != 0)
            return ft_status_make(FT_STATUS_FORMAT, "%s: %s: id %u is both '%.200s' and '%.200s'",
                                  c->where, field, i, c->tokens[i], s);
        c->types[i] = type; /* an added token that is also in the vocab */
        return FT_OK;
    }
    if (!(c->tokens[i] = ft_arena_strdup(c->src->arena, s)))
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", c->where);
    c->lens[i] = (uint32_t)strlen(s);
    c->types[i] = type;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_hf_tok_vocab(ft_hf_tok_ctx_t *c)
{
    const char *s;
    json_t *v;
    json_object_foreach((json_t *)c->vocab, s, v)
    {
        if (!json_is_integer(v))
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: model.vocab: token '%.200s': id is not an integer", c->where,
                                  s);
        ft_status_t st = ft_hf_tok_put(c, "model.vocab", json_integer_value(v), s, FT_TOKEN_NORMAL);
        if (st) return st;
    }
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_hf_tok_added(ft_hf_tok_ctx_t *c, const json_t *added)
{
    size_t i;
    const json_t *a;
    json_array_foreach(added, i, a)
    {
        const json_t *id = json_object_get(a, "id");
        const char *s = json_string_value(json_object_get(a, "content"));
        const json_t *special = json_object_get(a, "special");
        if (!json_is_integer(id) || !s || (special && !json_is_boolean(special)))
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: added_tokens[%zu] needs an integer 'id', a string 'content' "
                                  "and a boolean 'special'",
                                  c->where, i);
        char field[48];
        snprintf(field, sizeof(field), "added_tokens[%zu]", i);
        ft_status_t st =
            ft_hf_tok_put(c, field, json_integer_value(id), s,
                          json_is_true(special) ? FT_TOKEN_CONTROL : FT_TOKEN_USER_DEFINED);
        if (st) return st;
    }
    return FT_OK;
}

/* n = highest id + 1; every id below it must be taken. Then pads up to
 * config.json vocab_size (`want`, 0 when absent). */
FT_WARN_UNUSED static ft_status_t ft_hf_tok_dense(ft_hf_tok_ctx_t *c, uint32_t want, uint32_t *out_n)
{
    uint32_t n = c->cap;
    while (n > 0 && !c->types[n - 1])
        n--;
    if (n == 0) return ft_status_make(FT_STATUS_FORMAT, "%s: model.vocab is empty", c->where);
    for (uint32_t i = 0; i < n; i++)
        if (!c->types[i])
            return ft_status_make(
                FT_STATUS_FORMAT,
                "%s: token ids are not dense: no token has id %u (ids go up to %u)", c->where, i,
                n - 1);
    if (want && want < n)
        return ft_status_make(FT_STATUS_MISMATCH,
                              "%s/config.json: vocab_size %u is smaller than the %u tokens of %s",
                              c->src->path, want, n, c->where);
    for (uint32_t i = n; i < want; i++) {
        char pad[32];
        int len = snprintf(pad, sizeof(pad), "[PAD%u]", i);
        if (!(c->tokens[i] = ft_arena_strdup(c->src->arena, pad)))
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", c->where);
        c->lens[i] = (uint32_t)len;
        c->types[i] = FT_TOKEN_UNUSED;
    }
    *out_n = want > n ? want : n;
    return FT_OK;
}

/* Splits one merge (either "a b" or ["a", "b"]) into two parts. */
static int ft_hf_merge_parts(const json_t *m, const char **a, size_t *na, const char **b,
                             size_t *nb)
{
    if (json_is_string(m)) {
        const char *s = json_string_value(m);
        const char *sp = strchr(s, ' ');
        if (!sp || strchr(sp + 1, ' ')) return 0;
        *a = s, *na = (size_t)(sp - s), *b = sp + 1, *nb = strlen(sp + 1);
    } else if (json_is_array(m) && json_array_size(m) == 2 &&
               json_is_string(json_array_get(m, 0)) && json_is_string(json_array_get(m, 1))) {
        *a = json_string_value(json_array_get(m, 0)), *na = strlen(*a);
        *b = json_string_value(json_array_get(m, 1)), *nb = strlen(*b);
        if (memchr(*a, ' ', *na) || memchr(*b, ' ', *nb))
            return 0; /* would be ambiguous as "left right" */
    } else {
        return 0;
    }
    return *na > 0 && *nb > 0;
}

static int ft_hf_in_vocab(const json_t *vocab, const char *s, size_t n, char *buf)
{
    memcpy(buf, s, n);
    buf[n] = '\0';
    return json_object_get(vocab, buf) != NULL;
}

FT_WARN_UNUSED static ft_status_t ft_hf_tok_merges(ft_hf_tok_ctx_t *c, const json_t *merges)
{
    ft_ir_tokenizer_t *tok = &c->src->tok;
    size_t n = json_array_size(merges);
    if (!n) return FT_OK;
    const char **out = ft_arena_array(c->src->arena, n, sizeof(*out));
    if (!out)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: %zu merges: out of memory", c->where,
                              n);
    for (size_t i = 0; i < n; i++) {
        const json_t *m = json_array_get(merges, i);
        const char *a, *b;
        size_t na, nb;
        if (!ft_hf_merge_parts(m, &a, &na, &b, &nb))
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: model.merges[%zu] is neither \"left right\" nor "
                                  "[\"left\", \"right\"] with two non-empty, space-free parts",
                                  c->where, i);
        char *s = ft_arena_alloc(c->src->arena, (uint64_t)na + nb + 2);
        if (!s) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", c->where);
        /* s doubles as the NUL-terminated buffer for the vocab lookups. */
        if (!ft_hf_in_vocab(c->vocab, a, na, s) || !ft_hf_in_vocab(c->vocab, b, nb, s))
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: model.merges[%zu]: part '%.200s' is not in model.vocab",
                                  c->where, i, s);
        memcpy(s, a, na);
        s[na] = ' ';
        memcpy(s + na + 1, b, nb);
        s[na + 1 + nb] = '\0';
        out[i] = s;
    }
    tok->merges = out;
    tok->n_merges = (uint32_t)n;
    return FT_OK;
}

/* llama.cpp's pre-tokenizer name for the regex split tokenizer.json does. */
static const char *ft_hf_pre_name(const json_t *pre)
{
    const char *type = json_string_value(json_object_get(pre, "type"));
    if (!type) return "default";
    if (strcmp(type, "ByteLevel") == 0)
        return json_is_false(json_object_get(pre, "use_regex")) ? "default" : "gpt2";
    const json_t *split = NULL;
    if (strcmp(type, "Split") == 0) {
        split = pre;
    } else if (strcmp(type, "Sequence") == 0) {
        size_t i;
        const json_t *p;
        json_array_foreach(json_object_get(pre, "pretokenizers"), i, p)
        {
            const char *t = json_string_value(json_object_get(p, "type"));
            if (t && strcmp(t, "Split") == 0) {
                split = p;
                break;
            }
        }
    }
    const char *re = json_string_value(json_object_get(json_object_get(split, "pattern"), "Regex"));
    if (re && strcmp(re, ft_hf_re_qwen2) == 0) return "qwen2";
    if (re && strcmp(re, ft_hf_re_llama3) == 0) return "llama-bpe";
    return "default";
}

/* One normalizer of tokenizer.json: NFC and NFKC are applied (the
 * runtime's runtime/text/nfc.c; *form gets 1 for NFC, 2 for NFKC, which
 * includes NFC); any other would change the text in a way freetoken does
 * not reproduce, so it is refused rather than ignored. */
FT_WARN_UNUSED static ft_status_t
ft_hf_tok_normalizer_one(const ft_hf_tok_ctx_t *c, const json_t *n, const char *field, int *form)
{
    const char *type = json_string_value(json_object_get(n, "type"));
    if (!type)
        return ft_status_make(FT_STATUS_FORMAT, "%s: field '%s.type' is missing or not a string",
                              c->where, field);
    if (strcmp(type, "NFC") == 0 || strcmp(type, "NFKC") == 0) {
        const int f = type[2] == 'K' ? 2 : 1;
        if (f > *form) *form = f;
        return FT_OK;
    }
    if (strcmp(type, "Sequence") == 0) {
        const json_t *list = json_object_get(n, "normalizers");
        if (!json_is_array(list))
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: field '%s.normalizers' is missing or not an array", c->where,
                                  field);
        size_t i;
        const json_t *e;
        json_array_foreach(list, i, e)
        {
            char sub[96];
            snprintf(sub, sizeof(sub), "%.60s.normalizers[%zu]", field, i);
            ft_status_t st = ft_hf_tok_normalizer_one(c, e, sub, form);
            if (st) return st;
        }
        return FT_OK;
    }
    return ft_status_make(FT_STATUS_UNSUPPORTED,
                          "%s: field '%s' is a '%.40s' normalizer; freetoken applies only NFC and "
                          "NFKC",
                          c->where, field, type);
}

/* "normalizer": null (none), NFC, NFKC, or a Sequence of them. */
FT_WARN_UNUSED static ft_status_t ft_hf_tok_normalizer(const ft_hf_tok_ctx_t *c, const json_t *root)
{
    const json_t *n = json_object_get(root, "normalizer");
    if (!n || json_is_null(n)) return FT_OK;
    if (!json_is_object(n))
        return ft_status_make(FT_STATUS_FORMAT, "%s: field 'normalizer' is not an object or null",
                              c->where);
    int form = 0;
    ft_status_t st = ft_hf_tok_normalizer_one(c, n, "normalizer", &form);
    if (!st && form) c->src->tok.normalizer = form == 2 ? "NFKC" : "NFC";
    return st;
}

/* config.json vocab_size: 0 when absent; bounded by what padding allows. */
FT_WARN_UNUSED static ft_status_t ft_hf_tok_want(const ft_src_model_t *src, uint64_t n_entries, uint32_t *out)
{
    *out = 0;
    if (!ft_meta_find(&src->meta, "vocab_size")) return FT_OK;
    int64_t v;
    if (!ft_meta_get_i64(&src->meta, "vocab_size", &v) || v < 1)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s/config.json: vocab_size is not a positive integer", src->path);
    if ((uint64_t)v > n_entries + FT_HF_MAX_PAD_TOKENS)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s/config.json: vocab_size %" PRId64
                              " is more than %u above the %" PRIu64 " entries of the tokenizer",
                              src->path, v, FT_HF_MAX_PAD_TOKENS, n_entries);
    *out = (uint32_t)v;
    return FT_OK;
}

/* model.type, byte-level check, vocab + added_tokens -> tokens. */
FT_WARN_UNUSED static ft_status_t ft_hf_tok_build(ft_hf_tok_ctx_t *c, const json_t *root)
{
    const json_t *model = json_object_get(root, "model");
    const char *type = json_string_value(json_object_get(model, "type"));
    if (!type)
        return ft_status_make(FT_STATUS_FORMAT, "%s: field 'model.type' is missing or not a string",
                              c->where);
    if (strcmp(type, "BPE") != 0)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: model.type is '%.40s'; only byte-level 'BPE' is supported",
                              c->where, type);
    if (json_is_true(json_object_get(model, "byte_fallback")))
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: model.byte_fallback is set (SentencePiece-style BPE); only "
                              "byte-level BPE is supported",
                              c->where);
    c->vocab = json_object_get(model, "vocab");
    const json_t *added = json_object_get(root, "added_tokens");
    if (!json_is_object(c->vocab))
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: field 'model.vocab' is missing or not an object", c->where);
    if (added && !json_is_null(added) && !json_is_array(added))
        return ft_status_make(FT_STATUS_FORMAT, "%s: field 'added_tokens' is not an array",
                              c->where);
    /* Each entry takes several bytes of JSON, so this cannot overflow. */
    uint64_t n_entries = (uint64_t)json_object_size(c->vocab) + json_array_size(added);
    if (n_entries > INT32_MAX)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: %" PRIu64 " tokens is too many",
                              c->where, n_entries);
    uint32_t want, n = 0;
    ft_status_t st = ft_hf_tok_want(c->src, n_entries, &want);
    if (st) return st;
    c->cap = (uint32_t)(want > n_entries ? want : n_entries);
    ft_arena_t *ar = c->src->arena;
    c->tokens = ft_arena_array(ar, c->cap, sizeof(*c->tokens));
    c->lens = ft_arena_array(ar, c->cap, sizeof(*c->lens));
    c->types = ft_arena_array(ar, c->cap, sizeof(*c->types));
    if (c->cap && (!c->tokens || !c->lens || !c->types))
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: %u tokens: out of memory", c->where,
                              c->cap);
    if ((st = ft_hf_tok_vocab(c)) || (st = ft_hf_tok_added(c, added)) ||
        (st = ft_hf_tok_dense(c, want, &n)))
        return st;
    ft_ir_tokenizer_t *tok = &c->src->tok;
    tok->n_tokens = n;
    tok->tokens = c->tokens;
    tok->token_lens = c->lens;
    tok->token_types = c->types;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_hf_tok_unk(ft_hf_tok_ctx_t *c, const json_t *model)
{
    const json_t *u = json_object_get(model, "unk_token");
    if (!u || json_is_null(u)) return FT_OK;
    if (!json_is_string(u))
        return ft_status_make(FT_STATUS_FORMAT, "%s: field 'model.unk_token' is not a string",
                              c->where);
    int64_t id = ft_hf_token_lookup(&c->src->tok, json_string_value(u), json_string_length(u));
    if (id < 0)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: model.unk_token '%.200s' is not a token of the vocabulary",
                              c->where, json_string_value(u));
    c->src->tok.unk_id = (int32_t)id;
    return FT_OK;
}

ft_status_t ft_hf_tokenizer_parse(ft_src_model_t *src, const char *where_tok, const char *tok_json,
                                  uint64_t tok_len, const char *where_cfg, const char *cfg_json,
                                  uint64_t cfg_len)
{
    if (tok_len > FT_HF_MAX_TOKENIZER_BYTES)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: %" PRIu64 " bytes exceeds the limit of %llu", where_tok, tok_len,
                              FT_HF_MAX_TOKENIZER_BYTES);
    json_error_t err;
    json_t *root = json_loadb(tok_json, (size_t)tok_len, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return ft_status_make(FT_STATUS_FORMAT, "%s: JSON error at byte %d (line %d): %s",
                              where_tok, err.position, err.line, err.text);
    ft_hf_tok_ctx_t c = {.src = src, .where = where_tok};
    ft_ir_tokenizer_t *tok = &src->tok;
    ft_ir_tokenizer_init(tok);
    ft_status_t st;
    if (!json_is_object(root))
        st = ft_status_make(FT_STATUS_FORMAT, "%s: top level is not a JSON object", where_tok);
    else
        st = ft_hf_tok_build(&c, root);
    const json_t *model = json_object_get(root, "model");
    const json_t *merges = json_object_get(model, "merges");
    if (!st && merges && !json_is_array(merges))
        st =
            ft_status_make(FT_STATUS_FORMAT, "%s: field 'model.merges' is not an array", where_tok);
    if (!st) st = ft_hf_tok_merges(&c, merges);
    if (!st) st = ft_hf_tok_unk(&c, model);
    if (!st) st = ft_hf_tok_normalizer(&c, root);
    if (!st) {
        tok->model = "gpt2";
        tok->pre = ft_hf_pre_name(json_object_get(root, "pre_tokenizer"));
        st = ft_hf_special_tokens_parse(src, where_cfg, cfg_json, cfg_len);
    }
    json_decref(root);
    if (st) ft_ir_tokenizer_init(tok); /* leave no half-filled tokenizer behind */
    return st;
}
