/* UTF-8 validation and decoding for the text layer (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF). */
#ifndef FT_TEXT_UTF8_SCAN_H
#define FT_TEXT_UTF8_SCAN_H

#include <stddef.h>
#include <stdint.h>

/* The length in bytes (1..4) of the valid UTF-8 sequence at s[0..n), or 0
 * when the bytes there do not start a valid sequence. *out_cp gets the
 * code point when valid. n must be > 0. */
size_t ft_utf8_next(const unsigned char *s, size_t n, uint32_t *out_cp);

/* 1 when s[0..n) is valid UTF-8; otherwise 0 and *out_bad_offset is the
 * byte offset of the first byte that does not start a valid sequence. */
int ft_utf8_validate(const char *s, size_t n, size_t *out_bad_offset);

/* Writes cp (<= 0x10FFFF) as UTF-8 into out (4 bytes of room); returns
 * the length. */
size_t ft_utf8_put(uint32_t cp, unsigned char *out);

#endif
