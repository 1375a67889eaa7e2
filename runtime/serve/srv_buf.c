/* Growable byte buffer (srv_buf.h). */
#include "srv_buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ft_srv_buf_reserve(ft_srv_buf_t *b, size_t add)
{
    if (b->oom) return 0;
    if (add > ((size_t)-1) / 2 - b->len) {
        b->oom = 1;
        return 0;
    }
    const size_t need = b->len + add + 1;
    if (need <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        b->oom = 1;
        return 0;
    }
    b->data = p;
    b->cap = cap;
    return 1;
}

void ft_srv_buf_put(ft_srv_buf_t *b, const char *s, size_t n)
{
    if (!ft_srv_buf_reserve(b, n)) return;
    if (n) memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void ft_srv_buf_puts(ft_srv_buf_t *b, const char *s)
{
    ft_srv_buf_put(b, s, strlen(s));
}

void ft_srv_buf_printf(ft_srv_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    const int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof(small)) {
        ft_srv_buf_put(b, small, (size_t)n);
        return;
    }
    if (!ft_srv_buf_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void ft_srv_buf_consume(ft_srv_buf_t *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
        if (b->data) b->data[0] = '\0';
        return;
    }
    memmove(b->data, b->data + n, b->len - n + 1);
    b->len -= n;
}

char *ft_srv_buf_take(ft_srv_buf_t *b)
{
    char *p = NULL;
    if (!b->oom) {
        p = b->data ? b->data : calloc(1, 1);
        b->data = NULL;
    }
    ft_srv_buf_free(b);
    return p;
}

void ft_srv_buf_free(ft_srv_buf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->oom = 0;
}
