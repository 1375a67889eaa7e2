/* Neutral model metadata: a flat list of typed key/value pairs that every
 * frontend fills the same way. GGUF keys keep their names
 * ("qwen3moe.block_count"); an HF config.json is flattened with dots
 * ("rope_scaling.factor", "architectures.0"). models/ reads hyperparameters
 * from here without knowing which file format they came from. */
#ifndef FT_IR_META_H
#define FT_IR_META_H

#include "freetoken.h"
#include "../runtime/base/arena.h"

#include <stdint.h>

typedef enum ft_meta_type {
    FT_META_INT = 1,    /* signed 64-bit; GGUF unsigned values above INT64_MAX are kept as FLOAT */
    FT_META_FLOAT = 2,  /* double */
    FT_META_BOOL = 3,
    FT_META_STRING = 4, /* UTF-8, NUL-terminated, `len` bytes */
    FT_META_ARRAY = 5,  /* array of numbers, stored as doubles; string arrays are not kept */
    FT_META_NULL = 6,   /* JSON null */
} ft_meta_type_t;

typedef struct ft_meta_entry {
    const char *key;
    ft_meta_type_t type;
    int64_t i;
    double f;
    int b;
    const char *s;
    uint64_t len;      /* string bytes, or array element count */
    const double *arr; /* FT_META_ARRAY elements */
} ft_meta_entry_t;

typedef struct ft_meta {
    ft_arena_t *arena; /* not owned */
    uint32_t n_entries;
    uint32_t cap_entries;
    ft_meta_entry_t *entries;
    /* Open-addressing index over the keys (entry index + 1, 0 = empty), so
     * that files with tens of thousands of keys load in linear time. */
    uint32_t index_cap; /* a power of two, >= 2 * cap_entries */
    uint32_t *index;
} ft_meta_t;

/* Initializes an empty list whose strings live in `arena`. */
void ft_meta_init(ft_meta_t *meta, ft_arena_t *arena);
void ft_meta_release(ft_meta_t *meta); /* frees the entry array only */

/* Adders copy the key and string into the arena. A later add of the same
 * key replaces the earlier value. */
FT_WARN_UNUSED ft_status_t ft_meta_add_int(ft_meta_t *meta, const char *key, int64_t v);
FT_WARN_UNUSED ft_status_t ft_meta_add_float(ft_meta_t *meta, const char *key, double v);
FT_WARN_UNUSED ft_status_t ft_meta_add_bool(ft_meta_t *meta, const char *key, int v);
FT_WARN_UNUSED ft_status_t ft_meta_add_string(ft_meta_t *meta, const char *key, const char *s, uint64_t len);
FT_WARN_UNUSED ft_status_t ft_meta_add_array(ft_meta_t *meta, const char *key, const double *v, uint64_t n);
FT_WARN_UNUSED ft_status_t ft_meta_add_null(ft_meta_t *meta, const char *key);

const ft_meta_entry_t *ft_meta_find(const ft_meta_t *meta, const char *key);

/* Typed getters: 1 when the key exists and converts exactly (an integral
 * float for an int, an int for a float, 0/1 int for a bool), else 0. */
int ft_meta_get_i64(const ft_meta_t *meta, const char *key, int64_t *out);
int ft_meta_get_f64(const ft_meta_t *meta, const char *key, double *out);
int ft_meta_get_bool(const ft_meta_t *meta, const char *key, int *out);
const char *ft_meta_get_string(const ft_meta_t *meta, const char *key);

/* A required positive 32-bit count: a clear error naming `where` (the
 * source file) and the key when it is missing, not an integer, or outside
 * [min, max]. */
FT_WARN_UNUSED ft_status_t ft_meta_require_u32(const ft_meta_t *meta, const char *where, const char *key,
                                uint32_t min, uint32_t max, uint32_t *out);

#endif
