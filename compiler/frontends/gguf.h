/* GGUF v2/v3 reader (llama.cpp's model container). */
#ifndef FT_FRONTENDS_GGUF_H
#define FT_FRONTENDS_GGUF_H

#include "freetoken.h"
#include "source.h"

/* Maps and validates a GGUF file and converts it into a source model:
 * every metadata key into src->meta (arrays of numbers kept, arrays of
 * strings only through the tokenizer), every tensor into src->tensors with
 * a row-major shape (GGUF ne[] reversed) and absolute file offset, and
 * tokenizer.ggml.* into src->tok. Errors name the file, field and byte
 * offset. */
FT_WARN_UNUSED ft_status_t ft_gguf_import(const char *path, ft_src_model_t **out_src);

#endif
