/* A checkpoint as a frontend reads it, before any architecture knowledge:
 * metadata, a list of named tensors with their bytes' location, and the
 * tokenizer. The GGUF and the HF safetensors frontends both produce this;
 * models/ turns it into the model IR. */
#ifndef FT_IR_SOURCE_H
#define FT_IR_SOURCE_H

#include "freetoken.h"
#include "../runtime/base/arena.h"
#include "../runtime/format/dtype.h"
#include "meta.h"
#include "tokenizer_ir.h"

#include <stdint.h>

#define FT_MAX_DIMS 4

typedef enum ft_src_kind {
    FT_SRC_GGUF = 1,
    FT_SRC_HF = 2, /* config.json + *.safetensors (+ tokenizer.json) */
} ft_src_kind_t;

typedef struct ft_src_tensor {
    const char *name;        /* as in the file */
    ft_dtype_t dtype;
    uint32_t n_dims;
    uint64_t shape[FT_MAX_DIMS]; /* row-major: shape[n_dims-1] varies fastest.
                                   GGUF's ne[] is reversed into this order. */
    uint32_t file;           /* index into ft_src_model_t.files */
    uint64_t offset;         /* absolute byte offset in that file */
    uint64_t n_bytes;        /* validated against dtype and shape */
} ft_src_tensor_t;

typedef struct ft_src_file {
    const char *path;
    uint64_t size;
} ft_src_file_t;

typedef struct ft_src_model {
    ft_arena_t *arena; /* owns every string and array below */
    ft_src_kind_t kind;
    const char *path;  /* what the user named: a .gguf file or an HF directory */
    uint32_t n_files;
    ft_src_file_t *files;
    ft_meta_t meta;
    uint32_t n_tensors;
    ft_src_tensor_t *tensors;
    ft_ir_tokenizer_t tok;
} ft_src_model_t;

/* Creates an empty source model with its own arena. */
FT_WARN_UNUSED ft_status_t ft_src_model_create(ft_src_kind_t kind, const char *path, ft_src_model_t **out_src);
void ft_src_model_destroy(ft_src_model_t *src);

/* Linear lookup by name; NULL when absent. */
const ft_src_tensor_t *ft_src_find_tensor(const ft_src_model_t *src, const char *name);

#endif
