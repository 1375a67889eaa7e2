/* One generation for one HTTP request, through the public request API:
 * a session from the pool (srv_pool.h: the one sharing the longest
 * prefix with the prompt), its own sampler, detokenizer, stop matcher and
 * output parser.
 * The connection's thread drives it with ft_srv_gen_step, which waits
 * for tokens in short slices so that it can notice a client that went
 * away (the request is then cancelled, prefill included, at the next
 * scheduler step) and report idle time (for keepalives). */
#ifndef FT_SERVE_SRV_GEN_H
#define FT_SERVE_SRV_GEN_H

#include "srv_conv.h"
#include "srv_json_filter.h"
#include "srv_outparse.h"
#include "srv_pool.h"

#include <pthread.h>

typedef enum ft_srv_finish {
    FT_SRV_FINISH_NONE = 0,
    FT_SRV_FINISH_STOP = 1,       /* end of generation, or a stop string */
    FT_SRV_FINISH_LENGTH = 2,     /* max_tokens or the context */
    FT_SRV_FINISH_TOOL_CALLS = 3, /* ended after tool calls */
    FT_SRV_FINISH_ERROR = 4,
} ft_srv_finish_t;

typedef struct ft_srv_gen {
    ft_engine_t *engine;
    ft_srv_pool_t *pool;
    ft_srv_slot_t *slot; /* the session, from the pool */
    ft_session_t *session;
    int32_t *all; /* what the session evaluates: the prompt (and a script) */
    uint32_t n_all;
    uint32_t n_cached; /* tokens of it the session already held (not evaluated again) */
    /* A prefix_cache session (pool->tree): the prompt goes in segments
     * ending at its boundaries (srv_anchor.h), each anchored, then the
     * generation (or the script) as a request of its own. */
    int tree;
    uint32_t ends[FT_SRV_MAX_ANCHORS + 2]; /* segment ends, the last n_prompt */
    uint64_t keys[FT_SRV_MAX_ANCHORS + 2];
    uint32_t n_ends, at_end; /* the segment running: ends[at_end] */
    /* An attention-only model needs no state at its anchors: the prompt
     * goes in one request (one forward pass less per boundary), and these
     * boundaries are anchored after it, where it did not restore them. */
    uint32_t late[FT_SRV_MAX_ANCHORS + 2];
    uint64_t late_keys[FT_SRV_MAX_ANCHORS + 2];
    uint32_t n_late;
    uint32_t hint;           /* the deepest boundary anchored before (0: none) */
    uint32_t *bounds;        /* the prompt's boundaries (an anchor hit restores to one) */
    uint32_t n_bounds;
    uint32_t max_new;
    int final_sub; /* the request running is the last one (generation or script) */
    int resubmit;  /* the next request met a full queue: submitted again shortly */
    uint32_t last_anchor;
    ft_sampler_t *sampler;
    int json;                  /* response_format json_object: the sampler's filter */
    ft_srv_json_filter_t json_filter;
    ft_request_t *request;
    ft_detokenizer_t *detok;
    ft_stop_matcher_t *stop;
    ft_srv_outparse_t parser;
    int parallel_tool_calls;
    /* the caller's event sink (the protocol formatter) */
    ft_srv_ev_fn fn;
    void *user;
    /* woken by the scheduler's token callback */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t n_signals, n_seen;
    double next_poll; /* when to look at the client's socket next (monotonic seconds) */
    /* content seen by the stop matcher, and how much of it went out */
    ft_srv_buf_t content;
    size_t content_sent;
    /* results */
    uint32_t n_prompt, n_generated;
    double t_start, t_first, t_last; /* monotonic seconds: submitted, first and last token */
    unsigned n_tool_calls;
    ft_srv_finish_t finish;
    int stop_index;       /* the stop string that ended it, or -1 */
    char error[256];      /* FINISH_ERROR */
    int keep_samples;     /* logprobs: every sample is kept */
    ft_sample_t *samples; /* [n_generated] when keep_samples */
    uint32_t n_samples_cap;
    /* scripted output (ft serve --script, a test hook): these tokens are
     * evaluated after the prompt, for real, and then given out as if
     * sampled */
    int32_t *script;
    uint32_t n_script, script_at;
    int script_cut; /* max_tokens cut the script short */
} ft_srv_gen_t;

/* Starts generating from prompt (n_prompt tokens) on a session from the
 * pool (the one sharing the longest prefix with it; n_cached says how
 * many tokens that saved). reasoning_open: the prompt ends inside a <think> block.
 * tools: parse tool calls, written in dialect (the model family's). call_prefix: NULL, or the
 * prompt ends inside a forced <tool_call> after this text. script: NULL, or the text the model is
 * made to "generate" (tokenized with special tokens). On error returns 0 with *err. */
int ft_srv_gen_start(ft_srv_gen_t *g, ft_srv_pool_t *pool, const ft_srv_conv_t *c,
                     const int32_t *prompt, uint32_t n_prompt, int reasoning_open, int tools,
                     ft_srv_dialect_t dialect, const char *call_prefix, const char *script,
                     ft_srv_ev_fn fn, void *user, ft_srv_error_t *err);

/* The same with the prompt's boundaries (token positions, ascending; see
 * srv_chat.h) and its cache priority (ft_cache_priority_t). */
int ft_srv_gen_start_anchored(ft_srv_gen_t *g, ft_srv_pool_t *pool, const ft_srv_conv_t *c,
                              const int32_t *prompt, uint32_t n_prompt, const uint32_t *bounds,
                              uint32_t n_bounds, int prio, int reasoning_open, int tools,
                              ft_srv_dialect_t dialect, const char *call_prefix,
                              const char *script, ft_srv_ev_fn fn, void *user,
                              ft_srv_error_t *err);

/* Waits up to max_wait_s for tokens and turns them into events. Returns
 * 1 when something happened, 0 when the time passed with nothing (send a
 * keepalive), -1 when the generation has finished (g->finish), -2 when
 * the client's socket fd (-1: not watched) was closed (cancelled). */
int ft_srv_gen_step(ft_srv_gen_t *g, int fd, double max_wait_s);

/* Cancels what still runs, waits for it and frees everything. */
void ft_srv_gen_free(ft_srv_gen_t *g);

#endif
