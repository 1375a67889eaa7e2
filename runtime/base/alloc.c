#include "alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *ft_mem_alloc(const ft_allocator_t *a, size_t n_bytes)
{
    if (a && a->alloc)
        return a->alloc(a->user, n_bytes ? n_bytes : 1);
    return malloc(n_bytes ? n_bytes : 1);
}

void *ft_mem_calloc(const ft_allocator_t *a, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total))
        return NULL;
    void *p = ft_mem_alloc(a, total);
    if (p)
        memset(p, 0, total);
    return p;
}

void ft_mem_free(const ft_allocator_t *a, void *p)
{
    if (!p)
        return;
    if (a && a->free)
        a->free(a->user, p);
    else
        free(p);
}

void *ft_carve(ft_carver_t *c, size_t n_bytes)
{
    size_t at = (c->used + 63) & ~(size_t)63;
    c->used = at + n_bytes;
    if (!c->base)
        return NULL;
    return c->base + at;
}
