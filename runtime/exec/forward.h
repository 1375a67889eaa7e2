/* One chunk of tokens (at most n_batch) through the plan's op schedule
 * (executor.c): batched for prefill, the same code for a single decode
 * token. */
#ifndef FT_EXEC_FORWARD_H
#define FT_EXEC_FORWARD_H

#include "engine_internal.h"

/* Runs tokens[0..n) at positions n_past.. and appends them to the KV cache.
 * all_logits: NULL, or n x vocab floats to fill; s->logits always receives
 * the last token's logits. Inputs are validated by the caller; allocates
 * nothing. Fails only on a device (the cpu and sim backends cannot). */
FT_WARN_UNUSED ft_status_t ft_forward_chunk(ft_session_t *s, const int32_t *tokens, uint32_t n, float *all_logits);

#endif
