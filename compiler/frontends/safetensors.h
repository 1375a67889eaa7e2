/* safetensors reader: validates one file held in memory (usually mapped)
 * and lists its tensors.
 *
 * Layout: an 8-byte little-endian header length N, N bytes of UTF-8 JSON
 * {"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
 *  "__metadata__": {"key": "value", ...}}, then the data section; offsets
 * in the JSON are relative to the data section, which starts at 8 + N. */
#ifndef FT_FRONTENDS_SAFETENSORS_H
#define FT_FRONTENDS_SAFETENSORS_H

#include "freetoken.h"
#include "source.h"

#include <stdint.h>

/* The largest header accepted (bytes): the biggest real checkpoints need a
 * few MiB of JSON for tens of thousands of tensors. */
#define FT_ST_MAX_HEADER_BYTES (100ull << 20)

typedef struct ft_st_tensor {
    const char *name; /* UTF-8, NUL-free */
    ft_dtype_t dtype;
    uint32_t n_dims;             /* 0 for a scalar (one element) */
    uint64_t shape[FT_MAX_DIMS]; /* row-major */
    uint64_t offset;             /* absolute byte offset in the file: 8 + N + begin */
    uint64_t n_bytes;            /* = elements * element size, checked */
} ft_st_tensor_t;

typedef struct ft_st_meta_kv {
    const char *key;
    const char *value;
} ft_st_meta_kv_t;

typedef struct ft_st_file {
    ft_arena_t *arena;     /* owns every string and array below */
    uint64_t header_bytes; /* N */
    uint64_t data_offset;  /* 8 + N */
    uint64_t data_bytes;   /* file size - data_offset */
    uint32_t n_tensors;
    ft_st_tensor_t *tensors; /* sorted by offset, then by name */
    uint32_t n_meta;
    ft_st_meta_kv_t *meta; /* "__metadata__" entries, sorted by key */
} ft_st_file_t;

/* Parses and validates the `size` bytes at `data`: header length bounds,
 * JSON syntax (duplicate keys are rejected), every tensor's dtype, shape
 * (at most FT_MAX_DIMS dims), offsets, byte count, and that no two tensors
 * overlap. `name` is used in error messages only (usually the file path).
 * The result holds no pointer into `data`. On success *out is owned by the
 * caller and released with ft_st_file_free. */
FT_WARN_UNUSED ft_status_t ft_st_parse(const uint8_t *data, uint64_t size, const char *name, ft_st_file_t **out);
void ft_st_file_free(ft_st_file_t *file);

#endif
