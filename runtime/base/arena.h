/* A bump allocator for data that lives and dies together (an imported
 * model's names, shapes and metadata). Everything is freed at once by
 * ft_arena_destroy. A total-size cap turns hostile inputs that ask for
 * absurd amounts of metadata into a clear error instead of an OOM. */
#ifndef FT_BASE_ARENA_H
#define FT_BASE_ARENA_H

#include "freetoken.h"

#include <stddef.h>
#include <stdint.h>

typedef struct ft_arena ft_arena_t;

/* cap_bytes: the most the arena will ever hand out (0 = 1 GiB). */
FT_WARN_UNUSED ft_status_t ft_arena_create(uint64_t cap_bytes, ft_arena_t **out_arena);
void ft_arena_destroy(ft_arena_t *arena);

/* Zeroed memory aligned to 16 bytes, or NULL when the cap or malloc fails.
 * Overflow-checked: ft_arena_array(a, n, size) is safe for hostile n. */
void *ft_arena_alloc(ft_arena_t *arena, uint64_t n_bytes);
void *ft_arena_array(ft_arena_t *arena, uint64_t n, uint64_t elem_bytes);
/* Copies of strings; the result is NUL-terminated. NULL on failure. */
char *ft_arena_strdup(ft_arena_t *arena, const char *s);
char *ft_arena_strndup(ft_arena_t *arena, const char *s, size_t n);
char *ft_arena_printf(ft_arena_t *arena, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

uint64_t ft_arena_used_bytes(const ft_arena_t *arena);

#endif
