/* Status objects: a code and a heap-allocated message. */
#include "freetoken.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ft_status {
    ft_status_code_t code;
    int is_static; /* the out-of-memory fallback is never freed */
    char *message;
};

static struct ft_status ft_status_oom = {
    FT_STATUS_OUT_OF_MEMORY, 1, "out of memory while reporting an error"};

ft_status_t ft_status_makev(ft_status_code_t code, const char *fmt, va_list ap)
{
    struct ft_status *st = malloc(sizeof(*st));
    if (!st)
        return &ft_status_oom;
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        n = 0;
    st->message = malloc((size_t)n + 1);
    if (!st->message) {
        free(st);
        return &ft_status_oom;
    }
    vsnprintf(st->message, (size_t)n + 1, fmt, ap);
    st->code = code == FT_STATUS_OK ? FT_STATUS_INTERNAL : code;
    st->is_static = 0;
    return st;
}

ft_status_t ft_status_make(ft_status_code_t code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ft_status_t st = ft_status_makev(code, fmt, ap);
    va_end(ap);
    return st;
}

ft_status_t ft_status_annotate(ft_status_t status, const char *fmt, ...)
{
    if (!status || status->is_static)
        return status;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return status;
    size_t old_len = strlen(status->message);
    char *msg = malloc((size_t)n + 2 + old_len + 1);
    if (!msg)
        return status; /* keep the original message rather than lose it */
    va_start(ap, fmt);
    vsnprintf(msg, (size_t)n + 1, fmt, ap);
    va_end(ap);
    memcpy(msg + n, ": ", 2);
    memcpy(msg + n + 2, status->message, old_len + 1);
    free(status->message);
    status->message = msg;
    return status;
}

ft_status_code_t ft_status_code(ft_status_t status)
{
    return status ? status->code : FT_STATUS_OK;
}

const char *ft_status_message(ft_status_t status)
{
    return status ? status->message : "ok";
}

const char *ft_status_code_name(ft_status_code_t code)
{
    switch (code) {
    case FT_STATUS_OK: return "ok";
    case FT_STATUS_INVALID_ARGUMENT: return "invalid argument";
    case FT_STATUS_IO: return "i/o error";
    case FT_STATUS_FORMAT: return "format error";
    case FT_STATUS_OUT_OF_MEMORY: return "out of memory";
    case FT_STATUS_UNSUPPORTED: return "unsupported";
    case FT_STATUS_OUT_OF_RANGE: return "out of range";
    case FT_STATUS_UNAVAILABLE: return "unavailable";
    case FT_STATUS_MISMATCH: return "mismatch";
    case FT_STATUS_INTERNAL: return "internal error";
    case FT_STATUS_CANCELLED: return "cancelled";
    case FT_STATUS_BUSY: return "busy";
    case FT_STATUS_RESOURCE_EXHAUSTED: return "resource exhausted";
    }
    return "unknown";
}

void ft_status_free(ft_status_t status)
{
    if (!status || status->is_static)
        return;
    free(status->message);
    free(status);
}
