/* tokenizer_config.json: the chat template, add_bos_token, and the BOS, EOS
 * and PAD tokens (named by their text and resolved to ids through the
 * vocabulary), with config.json's *_token_id as the fallback, as
 * llama.cpp's converter (gguf-py SpecialVocab) does. */
#include "hf_internal.h"

#include <inttypes.h>
#include <jansson.h>
#include <string.h>

typedef struct ft_hf_special {
    const char *cfg_key;    /* in tokenizer_config.json */
    const char *config_key; /* in config.json */
    int32_t *out;
} ft_hf_special_t;

/* "chat_template": a string, or [{"name": ..., "template": ...}] of which
 * the one named "default" is taken. */
FT_WARN_UNUSED static ft_status_t ft_hf_chat_template(ft_src_model_t *src, const char *where, const json_t *v)
{
    const char *text = NULL;
    if (!v || json_is_null(v)) return FT_OK;
    if (json_is_string(v)) {
        text = json_string_value(v);
    } else if (json_is_array(v)) {
        size_t i;
        const json_t *e;
        json_array_foreach(v, i, e)
        {
            const char *name = json_string_value(json_object_get(e, "name"));
            const char *t = json_string_value(json_object_get(e, "template"));
            if (!name || !t)
                return ft_status_make(FT_STATUS_FORMAT,
                                      "%s: chat_template[%zu] needs string 'name' and 'template'",
                                      where, i);
            if (strcmp(name, "default") == 0) text = t;
        }
    } else {
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: field 'chat_template' is neither a string nor a list", where);
    }
    if (text && !(src->tok.chat_template = ft_arena_strdup(src->arena, text)))
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", where);
    return FT_OK;
}

/* A special token named in tokenizer_config.json: "text", {"content":
 * "text", ...} or null. *out_named is 0 when it names none. */
FT_WARN_UNUSED static ft_status_t ft_hf_special_named(const ft_src_model_t *src, const char *where,
                                       const ft_hf_special_t *sp, const json_t *v, int *out_named)
{
    *out_named = 0;
    if (!v || json_is_null(v)) return FT_OK;
    const json_t *s = json_is_object(v) ? json_object_get(v, "content") : v;
    if (!json_is_string(s))
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: field '%s' is neither a string nor {\"content\": string}", where,
                              sp->cfg_key);
    int64_t id = ft_hf_token_lookup(&src->tok, json_string_value(s), json_string_length(s));
    if (id < 0)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: field '%s' = '%.200s' is not a token of the vocabulary", where,
                              sp->cfg_key, json_string_value(s));
    *sp->out = (int32_t)id;
    *out_named = 1;
    return FT_OK;
}

/* config.json *_token_id when it is a single integer (lists, as in some
 * instruct models, are ignored as llama.cpp does). */
FT_WARN_UNUSED static ft_status_t ft_hf_special_fallback(const ft_src_model_t *src, const ft_hf_special_t *sp)
{
    const ft_meta_entry_t *e = ft_meta_find(&src->meta, sp->config_key);
    if (!e || e->type != FT_META_INT) return FT_OK;
    if (e->i < 0 || e->i >= (int64_t)src->tok.n_tokens)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s/config.json: %s = %" PRId64
                              " is outside the vocabulary (%u tokens)",
                              src->path, sp->config_key, e->i, src->tok.n_tokens);
    *sp->out = (int32_t)e->i;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_hf_special_apply(ft_src_model_t *src, const char *where, const json_t *root)
{
    ft_ir_tokenizer_t *tok = &src->tok;
    const ft_hf_special_t specials[] = {
        {"bos_token", "bos_token_id", &tok->bos_id},
        {"eos_token", "eos_token_id", &tok->eos_id},
        {"pad_token", "pad_token_id", &tok->pad_id},
    };
    for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]); i++) {
        int named;
        ft_status_t st = ft_hf_special_named(src, where, &specials[i],
                                             json_object_get(root, specials[i].cfg_key), &named);
        if (!st && !named) st = ft_hf_special_fallback(src, &specials[i]);
        if (st) return st;
    }
    const json_t *add_bos = json_object_get(root, "add_bos_token");
    if (add_bos && !json_is_null(add_bos) && !json_is_boolean(add_bos))
        return ft_status_make(FT_STATUS_FORMAT, "%s: field 'add_bos_token' is not a boolean",
                              where);
    tok->add_bos = json_is_true(add_bos);
    return ft_hf_chat_template(src, where, json_object_get(root, "chat_template"));
}

ft_status_t ft_hf_special_tokens_parse(ft_src_model_t *src, const char *where_cfg,
                                       const char *cfg_json, uint64_t cfg_len)
{
    json_t *root = NULL;
    const char *where = where_cfg ? where_cfg : "tokenizer_config.json";
    if (cfg_json) {
        if (cfg_len > FT_HF_MAX_CONFIG_BYTES)
            return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                                  "%s: %" PRIu64 " bytes exceeds the limit of %llu", where, cfg_len,
                                  FT_HF_MAX_CONFIG_BYTES);
        json_error_t err;
        root = json_loadb(cfg_json, (size_t)cfg_len, JSON_REJECT_DUPLICATES, &err);
        if (!root)
            return ft_status_make(FT_STATUS_FORMAT, "%s: JSON error at byte %d (line %d): %s",
                                  where, err.position, err.line, err.text);
        if (!json_is_object(root)) {
            json_decref(root);
            return ft_status_make(FT_STATUS_FORMAT, "%s: top level is not a JSON object", where);
        }
    }
    /* With no tokenizer_config.json, root is NULL and every lookup below
     * finds nothing, which leaves the config.json fallbacks. */
    ft_status_t st = ft_hf_special_apply(src, where, root);
    json_decref(root);
    return st;
}
