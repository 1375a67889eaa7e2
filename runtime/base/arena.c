#include "arena.h"

#include "checked.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FT_ARENA_CHUNK_BYTES (64u * 1024u)

typedef struct ft_arena_chunk {
    struct ft_arena_chunk *next;
    uint64_t size; /* usable bytes after the header */
    uint64_t used;
    _Alignas(16) unsigned char data[];
} ft_arena_chunk_t;

struct ft_arena {
    ft_arena_chunk_t *head;
    uint64_t cap_bytes;
    uint64_t used_bytes;
};

ft_status_t ft_arena_create(uint64_t cap_bytes, ft_arena_t **out_arena)
{
    *out_arena = NULL;
    ft_arena_t *a = calloc(1, sizeof(*a));
    if (!a)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "arena: out of memory");
    a->cap_bytes = cap_bytes ? cap_bytes : (1ull << 30);
    *out_arena = a;
    return FT_OK;
}

void ft_arena_destroy(ft_arena_t *arena)
{
    if (!arena)
        return;
    ft_arena_chunk_t *c = arena->head;
    while (c) {
        ft_arena_chunk_t *next = c->next;
        free(c);
        c = next;
    }
    free(arena);
}

void *ft_arena_alloc(ft_arena_t *arena, uint64_t n_bytes)
{
    uint64_t need;
    if (!ft_align_up_u64(n_bytes ? n_bytes : 1, 16, &need))
        return NULL;
    if (need > arena->cap_bytes - arena->used_bytes)
        return NULL;
    ft_arena_chunk_t *c = arena->head;
    if (!c || c->size - c->used < need) {
        uint64_t size = need > FT_ARENA_CHUNK_BYTES ? need : FT_ARENA_CHUNK_BYTES;
        c = malloc(sizeof(*c) + size);
        if (!c)
            return NULL;
        c->size = size;
        c->used = 0;
        /* A large one-off block goes behind the current chunk so the
         * current chunk's free space is not wasted. */
        if (arena->head && need > FT_ARENA_CHUNK_BYTES) {
            c->next = arena->head->next;
            arena->head->next = c;
        } else {
            c->next = arena->head;
            arena->head = c;
        }
    }
    void *p = c->data + c->used;
    c->used += need;
    arena->used_bytes += need;
    memset(p, 0, need);
    return p;
}

void *ft_arena_array(ft_arena_t *arena, uint64_t n, uint64_t elem_bytes)
{
    uint64_t total;
    if (!ft_mul_u64(n, elem_bytes, &total))
        return NULL;
    return ft_arena_alloc(arena, total);
}

char *ft_arena_strndup(ft_arena_t *arena, const char *s, size_t n)
{
    char *p = ft_arena_alloc(arena, (uint64_t)n + 1);
    if (p)
        memcpy(p, s, n);
    return p;
}

char *ft_arena_strdup(ft_arena_t *arena, const char *s)
{
    return ft_arena_strndup(arena, s, strlen(s));
}

char *ft_arena_printf(ft_arena_t *arena, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *p = ft_arena_alloc(arena, (uint64_t)n + 1);
    if (!p)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

uint64_t ft_arena_used_bytes(const ft_arena_t *arena)
{
    return arena->used_bytes;
}
