/* What the scheduler (runtime/sched) calls to open, run and close: the
 * executor's side of the engine and session objects. freetoken.h's
 * ft_engine_open/close, ft_session_create/destroy/eval/rewind are the
 * scheduler's (sched_api.c), which wraps these with its queue, refcounts
 * and locks; these know nothing of threads beyond the engine's step_lock,
 * which their callers hold where said. */
#ifndef FT_EXEC_EXEC_API_H
#define FT_EXEC_EXEC_API_H

#include "engine_internal.h"

/* Opens the bundle (plan, weights, model, tokenizer, thread pool, backend)
 * without a scheduler. */
FT_WARN_UNUSED ft_status_t ft_exec_engine_open(const char *bundle_path,
                                               const ft_engine_options_t *opts,
                                               ft_engine_t **out_engine);
/* Frees everything; the scheduler is gone and no session is left. */
void ft_exec_engine_close(ft_engine_t *engine);

/* A session's KV cache and buffers (the caller holds step_lock: a device
 * backend allocates device memory). */
FT_WARN_UNUSED ft_status_t ft_exec_session_create(ft_engine_t *engine,
                                                  const ft_session_options_t *opts,
                                                  ft_session_t **out_session);
void ft_exec_session_destroy(ft_session_t *session);

/* The checks ft_session_eval made before running anything: tokens given,
 * room in the context after n_past, every id inside the vocabulary. */
FT_WARN_UNUSED ft_status_t ft_exec_session_check(const ft_session_t *session, const int32_t *tokens,
                                                 uint32_t n);
/* One work item of a step: n checked tokens (1 <= n <= the session's
 * n_batch) of a session; out_rows: NULL or n rows of logits. The session's
 * logits become the last token's. */
typedef struct ft_exec_item {
    ft_session_t *s;
    const int32_t *tokens;
    uint32_t n;
    float *out_rows;
} ft_exec_item_t;

#define FT_EXEC_MAX_ITEMS 64 /* items of one pass (a step with more runs several) */

/* Runs the items (each of a different session) as a step: on cpu and sim
 * as few passes as the workspace allows, each pass one forward over all
 * its items' tokens (the MoE block reads each routed expert once for every
 * token that chose it), on a device one item after another. A session's
 * logits do not depend on what else shares its pass: items whose kernel
 * path differs (ft_exec_uses_generated) never share one. The caller holds
 * step_lock. On error the sessions' state is unspecified past their
 * n_past (which the failing pass did not advance). */
FT_WARN_UNUSED ft_status_t ft_exec_step(ft_engine_t *engine, const ft_exec_item_t *items, uint32_t n_items);
/* Whether a chunk of n tokens runs the plan's generated kernels. */
int ft_exec_uses_generated(const ft_engine_t *engine, uint32_t n);
/* Makes the engine's step workspace hold steps of `rows` tokens over
 * `items` sessions (the scheduler's step budget), before it starts. */
FT_WARN_UNUSED ft_status_t ft_exec_reserve(ft_engine_t *engine, uint32_t rows, uint32_t items);
/* Forgets every position from n_past on (the caller holds step_lock: the
 * pages go back to the pool). */
FT_WARN_UNUSED ft_status_t ft_exec_session_rewind(ft_session_t *session, uint32_t n_past);

/* KV pages for the session's next n positions (from n_past): allocated,
 * shared ones copied (cpu and sim; nothing on cuda). The caller holds
 * step_lock. Errors: a full pool (FT_STATUS_RESOURCE_EXHAUSTED). */
FT_WARN_UNUSED ft_status_t ft_exec_session_prepare(ft_session_t *session, uint32_t n);
/* The prefix cache (freetoken.h, prefix_cache); the caller holds
 * step_lock. publish: caches the full pages of history[0, n_past) (the
 * session's tokens) not yet cached. restore: a prefix_cache session with
 * nothing evaluated takes the longest cached prefix of tokens[0, n - 1)
 * (*out_n positions: n_past becomes that). anchor: ft_session_anchor at
 * pos, history the session's tokens. Each is nothing without
 * prefix_cache (anchor: an error). */
FT_WARN_UNUSED ft_status_t ft_exec_session_publish(ft_session_t *session, const int32_t *history);
FT_WARN_UNUSED ft_status_t ft_exec_session_restore(ft_session_t *session, const int32_t *tokens,
                                                   uint32_t n, uint32_t *out_n);
FT_WARN_UNUSED ft_status_t ft_exec_session_anchor(ft_session_t *session, const int32_t *history,
                                                  uint32_t pos);

#endif
