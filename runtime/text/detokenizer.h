/* The incremental detokenizer (the public ft_detokenizer_* API in
 * freetoken.h) over a tokenizer, for callers inside the runtime and tests
 * that hold a tokenizer rather than an engine. */
#ifndef FT_TEXT_DETOKENIZER_H
#define FT_TEXT_DETOKENIZER_H

#include "freetoken.h"
#include "tokenizer.h"

/* As ft_detokenizer_create; tok must outlive the detokenizer. */
FT_WARN_UNUSED ft_status_t ft_detokenizer_create_for(const ft_tokenizer_t *tok,
                                                     ft_detokenizer_t **out_detok);

#endif
