/* Overflow-checked size arithmetic for values that come from files.
 * Each returns 1 on success and 0 on overflow, leaving *out unspecified. */
#ifndef FT_BASE_CHECKED_H
#define FT_BASE_CHECKED_H

#include <stdint.h>

static inline int ft_add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

static inline int ft_mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

/* Rounds x up to a multiple of align (a power of two). */
static inline int ft_align_up_u64(uint64_t x, uint64_t align, uint64_t *out)
{
    uint64_t t;
    if (!ft_add_u64(x, align - 1, &t))
        return 0;
    *out = t & ~(align - 1);
    return 1;
}

/* 1 if [offset, offset + n_bytes) lies within [0, size). */
static inline int ft_range_ok(uint64_t offset, uint64_t n_bytes, uint64_t size)
{
    return offset <= size && n_bytes <= size - offset;
}

#endif
