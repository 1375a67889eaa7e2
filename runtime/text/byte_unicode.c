/* GPT-2 bytes_to_unicode, both directions, from one rule: the printable
 * Latin-1 bytes ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) keep their own code
 * point, and the other 68 bytes take U+0100, U+0101, ... in byte order. */
#include "byte_unicode.h"

/* The highest code point the mapping produces: U+0100 + 68 - 1. */
#define FT_BYTE_UNICODE_MAX_CP 0x143u

static int ft_byte_unicode_printable(uint32_t b)
{
    return (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
}

uint32_t ft_byte_unicode_encode(uint8_t b)
{
    if (ft_byte_unicode_printable(b)) return b;
    /* Count the non-printable bytes below b. They are 0x00..0x20 (33),
     * 0x7f..0xa0 (34) and 0xad (1). */
    uint32_t n;
    if (b <= 0x20)
        n = b;
    else if (b <= 0xa0)
        n = 33u + (b - 0x7fu);
    else
        n = 67u; /* 0xad */
    return 0x100u + n;
}

int ft_byte_unicode_decode(uint32_t cp)
{
    if (cp < 0x100) return ft_byte_unicode_printable(cp) ? (int)cp : -1;
    if (cp > FT_BYTE_UNICODE_MAX_CP) return -1;
    uint32_t n = cp - 0x100u;
    if (n <= 0x20) return (int)n;
    if (n < 67) return (int)(0x7fu + (n - 33u));
    return 0xad;
}
