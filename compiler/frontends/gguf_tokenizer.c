/* tokenizer.ggml.* and tokenizer.chat_template -> ft_ir_tokenizer_t. The
 * keys are llama.cpp's (gguf-py constants.py, Keys.Tokenizer). Strings are
 * copied into the source model's arena. */
#include "gguf_cursor.h"

#include <string.h>

/* A key's value as a string copy in the arena; *out stays NULL when the
 * key is absent. */
FT_WARN_UNUSED static ft_status_t ft_gguf_tok_string(const ft_gguf_t *g, const char *key, ft_src_model_t *src,
                                      const char **out)
{
    const ft_gguf_kv_t *kv = ft_gguf_find(g, key);
    if (!kv) return FT_OK;
    if (kv->value.type != FT_GGUF_STRING)
        return ft_status_make(
            FT_STATUS_FORMAT, "%s: metadata '%s' (at byte %llu) is a %s, expected string", g->name,
            key, (unsigned long long)kv->offset, ft_gguf_type_name(kv->value.type));
    char *s = ft_arena_alloc(src->arena, kv->value.str.len + 1);
    if (!s)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: metadata '%s': out of memory", g->name,
                              key);
    memcpy(s, kv->value.str.s, (size_t)kv->value.str.len);
    *out = s;
    return FT_OK;
}

/* An array of strings (tokens, merges): arena copies and lengths. The
 * count must fit a uint32 (the tokenizer's id type). */
FT_WARN_UNUSED static ft_status_t ft_gguf_tok_strings(const ft_gguf_t *g, const char *key, ft_src_model_t *src,
                                       uint32_t *out_n, const char ***out_strs,
                                       const uint32_t **out_lens)
{
    const ft_gguf_kv_t *kv = ft_gguf_find(g, key);
    if (!kv) return FT_OK;
    const ft_gguf_value_t *v = &kv->value;
    if (v->type != FT_GGUF_ARRAY || v->elem_type != FT_GGUF_STRING)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: metadata '%s' (at byte %llu) is not an array of strings",
                              g->name, key, (unsigned long long)kv->offset);
    if (v->n > UINT32_MAX)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: metadata '%s' (at byte %llu): %llu entries", g->name, key,
                              (unsigned long long)kv->offset, (unsigned long long)v->n);
    const ft_gguf_str_t *in = v->elems;
    const char **strs = ft_arena_array(src->arena, v->n ? v->n : 1, sizeof(*strs));
    uint32_t *lens = out_lens ? ft_arena_array(src->arena, v->n ? v->n : 1, sizeof(*lens)) : NULL;
    if (!strs || (out_lens && !lens))
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: metadata '%s': out of memory", g->name,
                              key);
    for (uint64_t i = 0; i < v->n; i++) {
        if (in[i].len > UINT32_MAX)
            return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                                  "%s: metadata '%s' (at byte %llu): entry %llu is %llu bytes long",
                                  g->name, key, (unsigned long long)kv->offset,
                                  (unsigned long long)i, (unsigned long long)in[i].len);
        char *s = ft_arena_alloc(src->arena, in[i].len + 1);
        if (!s)
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: metadata '%s': out of memory",
                                  g->name, key);
        memcpy(s, in[i].s, (size_t)in[i].len);
        strs[i] = s;
        if (lens) lens[i] = (uint32_t)in[i].len;
    }
    *out_n = (uint32_t)v->n;
    *out_strs = strs;
    if (out_lens) *out_lens = lens;
    return FT_OK;
}

/* token_type: one integer in 1..6 per token; all NORMAL when absent. */
FT_WARN_UNUSED static ft_status_t ft_gguf_tok_types(const ft_gguf_t *g, ft_src_model_t *src)
{
    ft_ir_tokenizer_t *tok = &src->tok;
    uint8_t *types = ft_arena_alloc(src->arena, tok->n_tokens ? tok->n_tokens : 1);
    if (!types)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: token types: out of memory", g->name);
    tok->token_types = types;
    const ft_gguf_kv_t *kv = ft_gguf_find(g, "tokenizer.ggml.token_type");
    if (!kv) {
        memset(types, FT_TOKEN_NORMAL, tok->n_tokens);
        return FT_OK;
    }
    const ft_gguf_value_t *v = &kv->value;
    if (v->type != FT_GGUF_ARRAY || v->n != tok->n_tokens)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: metadata 'tokenizer.ggml.token_type' (at byte %llu) has %llu "
                              "entries but tokenizer.ggml.tokens has %u",
                              g->name, (unsigned long long)kv->offset,
                              (unsigned long long)(v->type == FT_GGUF_ARRAY ? v->n : 1),
                              tok->n_tokens);
    for (uint64_t i = 0; i < v->n; i++) {
        int64_t t;
        if (!ft_gguf_array_i64(v, i, &t) || t < FT_TOKEN_NORMAL || t > FT_TOKEN_BYTE)
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: metadata 'tokenizer.ggml.token_type' (at byte %llu): entry "
                                  "%llu is not a token type in 1..6",
                                  g->name, (unsigned long long)kv->offset, (unsigned long long)i);
        types[i] = (uint8_t)t;
    }
    return FT_OK;
}

/* A token id: an integer < n_tokens; *out keeps -1 when absent. */
FT_WARN_UNUSED static ft_status_t ft_gguf_tok_id(const ft_gguf_t *g, const char *key, uint32_t n_tokens,
                                  int32_t *out)
{
    const ft_gguf_kv_t *kv = ft_gguf_find(g, key);
    if (!kv) return FT_OK;
    int64_t id;
    if (!ft_gguf_value_i64(&kv->value, &id) || kv->value.type == FT_GGUF_BOOL)
        return ft_status_make(
            FT_STATUS_FORMAT, "%s: metadata '%s' (at byte %llu) is a %s, expected an integer",
            g->name, key, (unsigned long long)kv->offset, ft_gguf_type_name(kv->value.type));
    if (id < 0 || id >= (int64_t)n_tokens)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: metadata '%s' (at byte %llu): token id %lld is out of range for "
                              "%u tokens",
                              g->name, key, (unsigned long long)kv->offset, (long long)id,
                              n_tokens);
    *out = (int32_t)id;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_gguf_tok_add_bos(const ft_gguf_t *g, ft_ir_tokenizer_t *tok)
{
    const ft_gguf_kv_t *kv = ft_gguf_find(g, "tokenizer.ggml.add_bos_token");
    if (!kv) return FT_OK;
    if (kv->value.type != FT_GGUF_BOOL)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: metadata 'tokenizer.ggml.add_bos_token' (at byte %llu) is a %s, "
                              "expected bool",
                              g->name, (unsigned long long)kv->offset,
                              ft_gguf_type_name(kv->value.type));
    tok->add_bos = (int)kv->value.u;
    return FT_OK;
}

ft_status_t ft_gguf_tokenizer_fill(const ft_gguf_t *g, ft_src_model_t *src)
{
    ft_ir_tokenizer_t *tok = &src->tok;
    ft_status_t st = ft_gguf_tok_string(g, "tokenizer.ggml.model", src, &tok->model);
    if (!st) st = ft_gguf_tok_string(g, "tokenizer.ggml.pre", src, &tok->pre);
    if (!st) st = ft_gguf_tok_string(g, "tokenizer.chat_template", src, &tok->chat_template);
    if (!st)
        st = ft_gguf_tok_strings(g, "tokenizer.ggml.tokens", src, &tok->n_tokens, &tok->tokens,
                                 &tok->token_lens);
    if (!st) st = ft_gguf_tok_types(g, src);
    if (!st)
        st = ft_gguf_tok_strings(g, "tokenizer.ggml.merges", src, &tok->n_merges, &tok->merges,
                                 NULL);
    if (!st) st = ft_gguf_tok_id(g, "tokenizer.ggml.bos_token_id", tok->n_tokens, &tok->bos_id);
    if (!st) st = ft_gguf_tok_id(g, "tokenizer.ggml.eos_token_id", tok->n_tokens, &tok->eos_id);
    if (!st) st = ft_gguf_tok_id(g, "tokenizer.ggml.padding_token_id", tok->n_tokens, &tok->pad_id);
    if (!st) st = ft_gguf_tok_id(g, "tokenizer.ggml.unknown_token_id", tok->n_tokens, &tok->unk_id);
    if (!st) st = ft_gguf_tok_add_bos(g, tok);
    /* GGUF has no normalizer key, and llama.cpp normalizes no BPE text
     * (only its WordPiece tokenizer applies NFD). The "qwen2" pre-tokenizer
     * comes from Qwen's tokenizers, whose tokenizer.json all ask for NFC
     * (the text the model was trained on), so it gets NFC here as from the
     * HF directory; this departs from llama.cpp on text that is not in NFC. */
    if (!st && tok->pre && strcmp(tok->pre, "qwen2") == 0) tok->normalizer = "NFC";
    return st;
}
