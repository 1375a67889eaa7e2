/* An in-memory GGUF v2/v3 parser and its conversion into a source model.
 *
 * ft_gguf_parse validates the whole container (header, metadata, tensor
 * infos, data layout) against the bytes it is given and keeps copies of
 * everything it returns, so the input may be released once it returns.
 * ft_gguf_to_source turns a parsed file into an ft_src_model_t (metadata,
 * tensors, tokenizer); ft_gguf_import (gguf.h) maps a file and does both.
 * Every error names the file, the field (key or tensor name) and the byte
 * offset where that field was read. */
#ifndef FT_FRONTENDS_GGUF_READER_H
#define FT_FRONTENDS_GGUF_READER_H

#include "freetoken.h"
#include "../../runtime/base/arena.h"
#include "../../runtime/format/dtype.h"
#include "source.h"

#include <stdint.h>

/* GGUF value types (gguf_type in ggml). Stored in files: never renumber. */
typedef enum ft_gguf_type {
    FT_GGUF_UINT8 = 0,
    FT_GGUF_INT8 = 1,
    FT_GGUF_UINT16 = 2,
    FT_GGUF_INT16 = 3,
    FT_GGUF_UINT32 = 4,
    FT_GGUF_INT32 = 5,
    FT_GGUF_FLOAT32 = 6,
    FT_GGUF_BOOL = 7,
    FT_GGUF_STRING = 8,
    FT_GGUF_ARRAY = 9,
    FT_GGUF_UINT64 = 10,
    FT_GGUF_INT64 = 11,
    FT_GGUF_FLOAT64 = 12,
    FT_GGUF_TYPE_COUNT
} ft_gguf_type_t;

#define FT_GGUF_DEFAULT_ALIGNMENT 32u
#define FT_GGUF_MAX_ARRAY_DEPTH 4      /* an array of arrays of ... counts each level */
#define FT_GGUF_MAX_KV (1u << 16)      /* real files hold a few dozen keys */
#define FT_GGUF_MAX_TENSORS (1u << 20) /* the largest MoE checkpoints hold ~100k */

typedef struct ft_gguf_str {
    const char *s; /* NUL-terminated copy; may contain NULs inside `len` */
    uint64_t len;  /* bytes, without the terminator */
} ft_gguf_str_t;

typedef struct ft_gguf_value {
    ft_gguf_type_t type;
    uint64_t u;        /* UINT8, UINT16, UINT32, UINT64, BOOL (0/1) */
    int64_t i;         /* INT8, INT16, INT32, INT64 */
    double f;          /* FLOAT32, FLOAT64 */
    ft_gguf_str_t str; /* STRING */
    /* ARRAY: n elements of elem_type. `elems` holds, by elem_type:
     *   numbers and BOOL: n packed little-endian values as in the file
     *     (read them with ft_gguf_array_i64 / _u64 / _f64),
     *   STRING: ft_gguf_str_t[n],
     *   ARRAY: ft_gguf_value_t[n]. */
    ft_gguf_type_t elem_type;
    uint64_t n;
    const void *elems;
} ft_gguf_value_t;

typedef struct ft_gguf_kv {
    const char *key; /* UTF-8, no NULs */
    uint64_t offset; /* byte offset in the file where the pair starts */
    ft_gguf_value_t value;
} ft_gguf_kv_t;

typedef struct ft_gguf_tensor {
    const char *name;     /* UTF-8, no NULs */
    uint32_t n_dims;      /* 1..4 */
    uint64_t ne[4];       /* ggml order: ne[0] varies fastest; unused dims are 1 */
    uint32_t ggml_type;   /* as in the file */
    ft_dtype_t dtype;     /* ft_dtype_from_ggml(ggml_type) */
    uint64_t offset;      /* relative to data_start, a multiple of alignment */
    uint64_t n_bytes;     /* implied by dtype and ne */
    uint64_t info_offset; /* byte offset in the file of this tensor info */
} ft_gguf_tensor_t;

typedef struct ft_gguf {
    ft_arena_t *arena;   /* owns everything below */
    const char *name;    /* the name errors use (usually the path) */
    uint64_t size;       /* bytes of the parsed file */
    uint32_t version;    /* 2 or 3 */
    uint32_t alignment;  /* general.alignment, or 32 */
    uint64_t data_start; /* absolute byte offset of the data section */
    uint64_t n_kv;
    ft_gguf_kv_t *kvs; /* in file order */
    uint64_t n_tensors;
    ft_gguf_tensor_t *tensors; /* in file order */
} ft_gguf_t;

/* Parses and validates `size` bytes of a GGUF file. `name` is used in
 * error messages and kept. On success *out owns its own copies (release
 * with ft_gguf_free); `data` is not referenced afterwards. */
FT_WARN_UNUSED ft_status_t ft_gguf_parse(const uint8_t *data, uint64_t size, const char *name, ft_gguf_t **out);
void ft_gguf_free(ft_gguf_t *g);

/* The pair with this key, or NULL. */
const ft_gguf_kv_t *ft_gguf_find(const ft_gguf_t *g, const char *key);

/* Element idx (< arr->n) of a numeric or BOOL array, converted: 1 when the
 * conversion is exact (an integer that fits, any number as a double), else 0. */
int ft_gguf_array_i64(const ft_gguf_value_t *arr, uint64_t idx, int64_t *out);
int ft_gguf_array_f64(const ft_gguf_value_t *arr, uint64_t idx, double *out);

/* A scalar integer value (any signed or unsigned type) as int64: 1 when
 * it is one and fits, else 0. */
int ft_gguf_value_i64(const ft_gguf_value_t *v, int64_t *out);

const char *ft_gguf_type_name(ft_gguf_type_t type); /* "uint32", ...; "unknown" */

/* Fills an empty source model (as made by ft_src_model_create) from a
 * parsed file: metadata, tensors (shape = ne reversed, offset absolute)
 * and tokenizer. src->files[0] becomes {g->name, g->size}. On error src
 * may be partly filled; destroy it. */
FT_WARN_UNUSED ft_status_t ft_gguf_to_source(const ft_gguf_t *g, ft_src_model_t *src);

#endif
