/* ft serve: the HTTP server (OpenAI and Anthropic APIs) over an open
 * engine. The only header of runtime/serve/ that the command line
 * includes; serve/ itself includes only freetoken.h and its own files
 * (DESIGN.md section 3), plus libmicrohttpd and jansson. */
#ifndef FT_SERVE_SERVE_H
#define FT_SERVE_SERVE_H

#include "freetoken.h"

#include <stdint.h>
#include <stdio.h>

/* How requests reuse what earlier ones computed. */
typedef enum ft_serve_cache {
    FT_SERVE_CACHE_OFF = 0,     /* no reuse: every request computed from its first token */
    FT_SERVE_CACHE_ANCHORS = 1, /* the default: the prefix cache and anchors where the engine
                                   has a KV page pool (cpu, sim), REWIND otherwise */
    FT_SERVE_CACHE_REWIND = 2,  /* n_slots kept sessions, each rewound to the longest prefix it
                                   shares with a request (a model with recurrent layers starts
                                   over) */
} ft_serve_cache_t;

typedef struct ft_serve_options {
    const char *host;         /* numeric address or name to bind (default 127.0.0.1) */
    uint16_t port;            /* 0: any free port */
    const char *api_key;      /* NULL: no key; required for a non-loopback host */
    const char *model_id;     /* the id /v1/models reports (any requested name is echoed) */
    uint32_t n_ctx;           /* tokens of context per request */
    uint64_t max_body_bytes;  /* larger request bodies get 413 */
    uint32_t max_connections; /* open connections at once */
    uint32_t conn_timeout_s;  /* an idle connection is closed after this */
    /* a test hook: NULL, or a file of replies separated by lines "%%" that
     * successive chat requests "generate" in turn (their tokens are
     * evaluated for real and then given out as if sampled), so that
     * tool-call round trips are deterministic on random-weight fixtures;
     * a separator "%% no-tools" marks the reply after it as the one for
     * every request that offers no tools (agents' title requests) */
    uint32_t n_slots; /* sessions kept between requests for prefix reuse (each holds its KV
                         cache of n_ctx tokens); 0: none */
    int prefix_cache; /* ft_serve_cache_t */
    const char *script_path;
} ft_serve_options_t;

/* host 127.0.0.1, port 8080, n_ctx 4096, 4 session slots, 64 MiB bodies,
 * 64 connections, a 120 s idle timeout. */
void ft_serve_options_init(ft_serve_options_t *o);

/* 1 when host is a loopback address (127.0.0.0/8, ::1, "localhost"). */
int ft_serve_host_is_loopback(const char *host);

/* Serves until SIGINT or SIGTERM (which it blocks in the calling thread
 * and waits for), printing "listening on http://HOST:PORT" on out once it
 * accepts connections. Errors: a non-loopback host without an api_key
 * (invalid_argument), a host it cannot resolve or bind (io). */
FT_WARN_UNUSED ft_status_t ft_serve_run(ft_engine_t *engine, const ft_serve_options_t *o,
                                        FILE *out);

#endif
