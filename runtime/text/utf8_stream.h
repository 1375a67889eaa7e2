/* Incremental UTF-8 repair: bytes in, in pieces of any size; out only
 * whole characters. A valid sequence split across pieces is held (at most
 * 3 bytes) until it completes. Bytes that can no longer be part of a valid
 * sequence become U+FFFD by the Unicode Standard's "maximal subpart"
 * practice (chapter 3, U+FFFD substitution), as Rust's
 * String::from_utf8_lossy and so HF tokenizers' decode do: one U+FFFD per
 * maximal prefix of a valid sequence, one per other bad byte. The
 * concatenated output of any split equals that lossy decoding of the
 * whole input. */
#ifndef FT_TEXT_UTF8_STREAM_H
#define FT_TEXT_UTF8_STREAM_H

#include <stddef.h>
#include <stdint.h>

typedef struct ft_utf8_stream {
    unsigned char pending[4]; /* a valid but incomplete sequence (up to 3 bytes; the
                                 4th completes it) */
    uint8_t n_pending;
    uint8_t n_need; /* its full length (2..4) while n_pending > 0 */
} ft_utf8_stream_t;

/* Bytes ft_utf8_stream_push may write for n input bytes: each of them at
 * most 3 (a U+FFFD), plus 3 for the bytes held from earlier input (their
 * U+FFFD, or themselves when they complete). */
#define FT_UTF8_STREAM_OUT_MAX(n) (((n) + 3) * 3)

void ft_utf8_stream_init(ft_utf8_stream_t *u);

/* Feeds in[0..n) and writes the characters now complete to out (room for
 * FT_UTF8_STREAM_OUT_MAX(n) bytes); returns the bytes written, always
 * valid UTF-8. */
size_t ft_utf8_stream_push(ft_utf8_stream_t *u, const unsigned char *in, size_t n,
                           unsigned char *out);

/* The end of the input: a pending incomplete sequence becomes one U+FFFD
 * (out needs 3 bytes). Returns the bytes written; the stream is empty
 * afterwards and can take new input. */
size_t ft_utf8_stream_flush(ft_utf8_stream_t *u, unsigned char *out);

#endif
