/* UTF-8 validation and decoding (see utf8_scan.h). */
#include "utf8_scan.h"

size_t ft_utf8_next(const unsigned char *s, size_t n, uint32_t *out_cp)
{
    const unsigned c = s[0];
    if (c < 0x80) {
        *out_cp = c;
        return 1;
    }
    size_t len;
    uint32_t cp, min_cp;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2, cp = c & 0x1f, min_cp = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3, cp = c & 0x0f, min_cp = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4, cp = c & 0x07, min_cp = 0x10000;
    } else {
        return 0; /* continuation byte, 0xc0/0xc1 (always overlong) or 0xf5.. */
    }
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min_cp || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    *out_cp = cp;
    return len;
}

int ft_utf8_validate(const char *s, size_t n, size_t *out_bad_offset)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        /* ASCII runs are the common case: skip them a byte at a time
         * without the full decode. */
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        size_t len = ft_utf8_next(u + i, n - i, &cp);
        if (len == 0) {
            *out_bad_offset = i;
            return 0;
        }
        i += len;
    }
    return 1;
}

size_t ft_utf8_put(uint32_t cp, unsigned char *out)
{
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xc0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xe0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (unsigned char)(0xf0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}
