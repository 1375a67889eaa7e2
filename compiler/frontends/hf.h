/* Hugging Face checkpoint directory reader: config.json, *.safetensors
 * (single file or sharded with model.safetensors.index.json),
 * tokenizer.json and tokenizer_config.json. */
#ifndef FT_FRONTENDS_HF_H
#define FT_FRONTENDS_HF_H

#include "freetoken.h"
#include "source.h"

/* Reads the directory `dir` into a source model: config.json flattened into
 * src->meta with dotted keys ("rope_scaling.factor", "architectures.0"),
 * every safetensors tensor into src->tensors (absolute offsets, one entry
 * in src->files per shard), and the tokenizer into src->tok in GGUF's
 * conventions. */
FT_WARN_UNUSED ft_status_t ft_hf_import(const char *dir, ft_src_model_t **out_src);

#endif
