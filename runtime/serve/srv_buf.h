/* A growable byte buffer for the server's output (JSON bodies, SSE frames,
 * rendered prompts). Appends never fail silently: a failed allocation sets
 * oom and later appends are dropped, so a caller checks once at the end. */
#ifndef FT_SERVE_SRV_BUF_H
#define FT_SERVE_SRV_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct ft_srv_buf {
    char *data; /* NUL-terminated when len > 0 */
    size_t len, cap;
    int oom;
} ft_srv_buf_t;

void ft_srv_buf_put(ft_srv_buf_t *b, const char *s, size_t n);
void ft_srv_buf_puts(ft_srv_buf_t *b, const char *s);
void ft_srv_buf_printf(ft_srv_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drops the first n bytes (what a reader has taken). */
void ft_srv_buf_consume(ft_srv_buf_t *b, size_t n);
/* Gives the bytes away (malloc'ed, NUL-terminated; NULL after oom) and
 * leaves the buffer empty. */
char *ft_srv_buf_take(ft_srv_buf_t *b);
void ft_srv_buf_free(ft_srv_buf_t *b);

#endif
