/* Internal pieces of the Hugging Face directory reader (hf.c). Each JSON
 * file has an in-memory entry point so that tests and fuzz targets can
 * drive it without a directory. */
#ifndef FT_FRONTENDS_HF_INTERNAL_H
#define FT_FRONTENDS_HF_INTERNAL_H

#include "freetoken.h"
#include "source.h"

#include <stdint.h>

/* Size limits (bytes) for the JSON files of a checkpoint. Real ones are a
 * few KiB (config), a few MiB (index) and tens of MiB (tokenizer). */
#define FT_HF_MAX_CONFIG_BYTES (16ull << 20)
#define FT_HF_MAX_INDEX_BYTES (64ull << 20)
#define FT_HF_MAX_TOKENIZER_BYTES (256ull << 20)
#define FT_HF_MAX_TEMPLATE_BYTES (16ull << 20)

/* Reads the regular file `path` into a NUL-terminated heap buffer, refusing
 * files over max_bytes before reading them. *out_len excludes the NUL.
 * The caller frees *out_data. */
FT_WARN_UNUSED ft_status_t ft_hf_read_file(const char *path, uint64_t max_bytes, char **out_data,
                            uint64_t *out_len);

/* Flattens config.json text (len bytes) into meta with dotted keys:
 * {"a": {"b": 1}} -> "a.b"; arrays of numbers -> one FT_META_ARRAY; any
 * other array -> "key.0", "key.1", ...; null -> FT_META_NULL. `where`
 * names the file in messages. */
FT_WARN_UNUSED ft_status_t ft_hf_config_parse(ft_meta_t *meta, const char *where, const char *json, uint64_t len);

/* Reads the weights of `dir` (index + shards, model.safetensors, or every
 * *.safetensors sorted by name) into src->files and src->tensors. */
FT_WARN_UNUSED ft_status_t ft_hf_weights_load(ft_src_model_t *src, const char *dir);

/* A multimodal checkpoint's text model (hf_text_model.c): with tensors
 * under model.language_model.* and config keys under text_config.*, the
 * keys lifted to the top level and the tensors renamed model.*; anything
 * else is left as it is. */
FT_WARN_UNUSED ft_status_t ft_hf_unwrap_text_model(ft_src_model_t *src);

/* Reads tokenizer.json text (and tokenizer_config.json text, or NULL) into
 * src->tok. src->meta must already hold config.json (vocab_size and the
 * *_token_id fallbacks). The where_* strings name the files in messages. */
FT_WARN_UNUSED ft_status_t ft_hf_tokenizer_parse(ft_src_model_t *src, const char *where_tok, const char *tok_json,
                                  uint64_t tok_len, const char *where_cfg, const char *cfg_json,
                                  uint64_t cfg_len);

/* tokenizer_config.json text (or NULL) -> chat template, add_bos and the
 * BOS/EOS/PAD ids, falling back to config.json's *_token_id in src->meta.
 * src->tok's vocabulary must be filled. */
FT_WARN_UNUSED ft_status_t ft_hf_special_tokens_parse(ft_src_model_t *src, const char *where_cfg,
                                       const char *cfg_json, uint64_t cfg_len);

/* The id of the token spelled s (len bytes) in tok, or -1. Linear. */
int64_t ft_hf_token_lookup(const ft_ir_tokenizer_t *tok, const char *s, uint64_t len);

#endif
