/* Unicode Normalization Form C (UAX #15), which a tokenizer.json's
 * "normalizer": {"type": "NFC"} (Qwen's tokenizers) applies to the text
 * before pre-tokenization: canonical decomposition, canonical ordering of
 * combining marks, canonical composition; and Form KC ("NFKC"), the same
 * after compatibility decomposition (U+FB01 "fi" ligature -> "fi"). The tables are generated at
 * build time from Debian's unicode-data (runtime/text/gen/); Hangul
 * syllables are decomposed and composed algorithmically. */
#ifndef FT_TEXT_NFC_H
#define FT_TEXT_NFC_H

#include "freetoken.h"

#include <stddef.h>

/* 1 when s[0..len) is certainly in NFC already (every code point is one
 * that NFC leaves alone whatever surrounds it, e.g. all ASCII), so the
 * caller can skip ft_nfc. 0 means "maybe not". s must be valid UTF-8. */
int ft_nfc_quick_check(const char *s, size_t len);

/* The NFC form of the valid UTF-8 s[0..len) into *out (malloc'ed, free();
 * NUL-terminated, *out_len without the NUL). Invalid UTF-8 is an error
 * naming the byte offset. The result may be longer than the input (at
 * most 3 times in bytes). */
FT_WARN_UNUSED ft_status_t ft_nfc(const char *s, size_t len, char **out, size_t *out_len);

/* The same for NFKC. The result may be up to 18 times as many code
 * points (U+FDFA). */
int ft_nfkc_quick_check(const char *s, size_t len);
FT_WARN_UNUSED ft_status_t ft_nfkc(const char *s, size_t len, char **out, size_t *out_len);

#endif
