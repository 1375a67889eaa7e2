/* The base logits file of ft perplexity: `--save-logits FILE` writes a
 * bundle's logits over a text, `--kl-base FILE` reads them back so another
 * bundle's distributions can be compared with them without opening the
 * base again (llama.cpp's --kl-divergence-base, in a format of our own).
 *
 * Layout, every integer and float little-endian:
 *
 *   offset  size  field
 *   0       8     magic "FTKLBASE"
 *   8       4     version (1)
 *   12      4     vocab_size: floats per row
 *   16      4     ctx: tokens per window (at least FT_PPL_MIN_CTX)
 *   20      4     n_windows (at least 1)
 *   24      8     vocab_hash: FNV-1a 64 over every token's bytes in id order,
 *                 each preceded by its length as a u32 (ft_ppl_vocab_hash);
 *                 it names the tokenizer, so a file from another vocabulary
 *                 is refused
 *   32      4 * n_windows * ctx
 *                 the windows' token ids (int32) as they were evaluated, the
 *                 first of each replaced by BOS when the model adds one
 *   ...     4 * n_windows * n_scored * vocab_size
 *                 float32 logits: for each window, the rows of positions
 *                 ctx/2 .. ctx-2 (n_scored = ctx - 1 - ctx/2), the ones
 *                 perplexity scores
 *
 * The size must be exactly that; the logits are raw (not log-softmax) so
 * that a bundle compared with its own saved file gives KL divergence 0. */
#ifndef FT_CLI_PPL_FILE_H
#define FT_CLI_PPL_FILE_H

#include "freetoken.h"

#include <stdint.h>
#include <stdio.h>

#define FT_PPL_FILE_MAGIC "FTKLBASE"
#define FT_PPL_FILE_VERSION 1u
#define FT_PPL_FILE_HEADER_BYTES 32u
/* The smallest window: its second half must score at least one token. */
#define FT_PPL_MIN_CTX 4u

typedef struct ft_ppl_file_header {
    uint32_t version, vocab_size, ctx, n_windows;
    uint64_t vocab_hash;
} ft_ppl_file_header_t;

/* Positions scored in a window of ctx tokens: ctx/2 .. ctx-2, each
 * predicting the next token (llama.cpp's perplexity). */
static inline uint32_t ft_ppl_n_scored(uint32_t ctx)
{
    return ctx - 1 - ctx / 2;
}

/* The vocabulary's hash (the header's vocab_hash) from the engine's
 * tokenizer. */
FT_WARN_UNUSED ft_status_t ft_ppl_vocab_hash(const ft_engine_t *e, uint64_t *out_hash);

/* Writes the header and the tokens (n_windows * ctx ids); the logits
 * follow, one ft_ppl_file_write_rows per window. path names f in errors. */
FT_WARN_UNUSED ft_status_t ft_ppl_file_write_header(FILE *f, const char *path,
                                                    const ft_ppl_file_header_t *h,
                                                    const int32_t *tokens);
FT_WARN_UNUSED ft_status_t ft_ppl_file_write_rows(FILE *f, const char *path, const float *rows,
                                                  size_t n_floats);

/* A file opened for reading: the validated header and the tokens. */
typedef struct ft_ppl_file {
    FILE *f; /* borrowed */
    const char *path;
    ft_ppl_file_header_t h;
    int32_t *tokens; /* n_windows * ctx, each in [0, vocab_size) */
} ft_ppl_file_t;

/* 1 when the file at path starts with the magic (a saved file, not a
 * bundle). */
int ft_ppl_file_is(const char *path);

/* Reads and checks the header (magic, version, ctx >= FT_PPL_MIN_CTX,
 * counts, and that f's size is exactly what they give) and the tokens.
 * Errors name path, the field and its offset. */
FT_WARN_UNUSED ft_status_t ft_ppl_file_open(FILE *f, const char *path, ft_ppl_file_t *out);
/* Reads window w's n_scored * vocab_size logits into rows; a NaN or
 * infinite logit is an error naming the window and position. */
FT_WARN_UNUSED ft_status_t ft_ppl_file_read_window(const ft_ppl_file_t *pf, uint32_t w,
                                                   float *rows);
/* Frees the tokens (not f). */
void ft_ppl_file_close(ft_ppl_file_t *pf);

#endif
