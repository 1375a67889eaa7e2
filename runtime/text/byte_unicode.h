/* GPT-2's bytes_to_unicode: byte-level BPE vocabularies spell every byte
 * as one printable code point, so that token strings never hold raw
 * control bytes or spaces ("Ġ" U+0120 is the space byte 0x20). */
#ifndef FT_TEXT_BYTE_UNICODE_H
#define FT_TEXT_BYTE_UNICODE_H

#include <stdint.h>

/* The code point that spells byte b (U+0021..U+0143). */
uint32_t ft_byte_unicode_encode(uint8_t b);

/* The byte that code point cp spells, or -1 when cp spells no byte. */
int ft_byte_unicode_decode(uint32_t cp);

#endif
