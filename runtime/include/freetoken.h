/*
 * freetoken.h - the public C API of libfreetoken.
 *
 * This header is the contract between libfreetoken and the programs that
 * embed it. Every fallible call returns an ft_status_t: NULL means success,
 * anything else is an owned error object that the caller must release with
 * ft_status_free() (or hand on to its own caller).
 */
#ifndef FREETOKEN_H
#define FREETOKEN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FT_VERSION_MAJOR 0
#define FT_VERSION_MINOR 1
#define FT_VERSION_PATCH 0

/* Error classes. Values never change meaning; new ones are appended. */
typedef enum ft_status_code {
    FT_STATUS_OK = 0,
    FT_STATUS_INVALID_ARGUMENT = 1, /* the caller passed something wrong */
    FT_STATUS_IO = 2,               /* open/read/write/mmap failed */
    FT_STATUS_FORMAT = 3,           /* a file or message is malformed */
    FT_STATUS_OUT_OF_MEMORY = 4,
    FT_STATUS_UNSUPPORTED = 5, /* valid input that we do not handle (yet) */
    FT_STATUS_OUT_OF_RANGE = 6,  /* a count, size or offset is past a limit */
    FT_STATUS_UNAVAILABLE = 7,   /* a device or library is not present */
    FT_STATUS_MISMATCH = 8,      /* hashes, versions or shapes disagree */
    FT_STATUS_INTERNAL = 9,      /* a bug in freetoken */
} ft_status_code_t;

/* An error: a code plus a message. NULL is success. */
typedef struct ft_status *ft_status_t;

#define FT_OK ((ft_status_t)NULL)

/* Makes an error with a printf-style message. Never returns NULL: when the
 * message cannot be allocated a static out-of-memory status is returned
 * (which ft_status_free accepts). */
ft_status_t ft_status_make(ft_status_code_t code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
ft_status_t ft_status_makev(ft_status_code_t code, const char *fmt, va_list ap);

/* Prefixes context to an existing error ("while reading X: <old message>")
 * and returns it. NULL in gives NULL out, so it can wrap any call. */
ft_status_t ft_status_annotate(ft_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

ft_status_code_t ft_status_code(ft_status_t status);
/* The message; "ok" for NULL. Valid until the status is freed. */
const char *ft_status_message(ft_status_t status);
/* A short stable name for the code, e.g. "format". */
const char *ft_status_code_name(ft_status_code_t code);
void ft_status_free(ft_status_t status);

/* Allocator hook: every allocation libfreetoken makes goes through one.
 * NULL wherever an allocator is accepted means the libc allocator. */
typedef struct ft_allocator {
    void *(*alloc)(void *user, size_t n_bytes);
    void *(*realloc)(void *user, void *p, size_t n_bytes);
    void (*free)(void *user, void *p);
    void *user;
} ft_allocator_t;

#ifdef __cplusplus
}
#endif
#endif /* FREETOKEN_H */
