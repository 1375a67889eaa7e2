/* Allocation through the caller's ft_allocator_t (NULL: libc). Every heap
 * allocation of an engine or session goes through these, so an embedding
 * program can account for or cap memory, and a test can prove the decode
 * step allocates nothing. */
#ifndef FT_BASE_ALLOC_H
#define FT_BASE_ALLOC_H

#include "freetoken.h"

#include <stddef.h>

void *ft_mem_alloc(const ft_allocator_t *a, size_t n_bytes);
/* Zeroed; NULL when n * size overflows. */
void *ft_mem_calloc(const ft_allocator_t *a, size_t n, size_t size);
void ft_mem_free(const ft_allocator_t *a, void *p);

/* Carves aligned sub-buffers out of one block: call ft_carve with base NULL
 * to measure (the returned pointers are offsets), allocate `used` + align
 * bytes, then carve again with the real base. */
typedef struct ft_carver {
    unsigned char *base;
    size_t used;
} ft_carver_t;

/* 64-byte aligned region of n_bytes; NULL while measuring. */
void *ft_carve(ft_carver_t *c, size_t n_bytes);

#endif
