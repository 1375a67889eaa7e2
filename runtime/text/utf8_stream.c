/* Incremental UTF-8 repair (see utf8_stream.h). */
#include "utf8_stream.h"

#include <string.h>

static size_t ft_utf8_put_fffd(unsigned char *out)
{
    out[0] = 0xef;
    out[1] = 0xbf;
    out[2] = 0xbd;
    return 3;
}

/* The length of the sequence lead byte c starts (0: c starts none) and
 * the allowed range of its second byte (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF). */
static unsigned ft_utf8_lead(unsigned char c, unsigned char *lo, unsigned char *hi)
{
    *lo = 0x80;
    *hi = 0xbf;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) return 2;
    if (c == 0xe0) {
        *lo = 0xa0;
        return 3;
    }
    if (c == 0xed) {
        *hi = 0x9f;
        return 3;
    }
    if (c >= 0xe1 && c <= 0xef) return 3;
    if (c == 0xf0) {
        *lo = 0x90;
        return 4;
    }
    if (c >= 0xf1 && c <= 0xf3) return 4;
    if (c == 0xf4) {
        *hi = 0x8f;
        return 4;
    }
    return 0;
}

void ft_utf8_stream_init(ft_utf8_stream_t *u)
{
    memset(u, 0, sizeof(*u));
}

/* 1 when c may follow the pending bytes. */
static int ft_utf8_continues(const ft_utf8_stream_t *u, unsigned char c)
{
    unsigned char lo = 0x80, hi = 0xbf;
    if (u->n_pending == 1) ft_utf8_lead(u->pending[0], &lo, &hi);
    return c >= lo && c <= hi;
}

size_t ft_utf8_stream_push(ft_utf8_stream_t *u, const unsigned char *in, size_t n,
                           unsigned char *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        const unsigned char c = in[i];
        if (u->n_pending) {
            if (ft_utf8_continues(u, c)) {
                u->pending[u->n_pending++] = c;
                i++;
                if (u->n_pending == u->n_need) {
                    memcpy(out + k, u->pending, u->n_need);
                    k += u->n_need;
                    u->n_pending = 0;
                }
                continue;
            }
            /* The pending bytes are a maximal subpart: one U+FFFD, and c
             * is looked at again as a new start. */
            k += ft_utf8_put_fffd(out + k);
            u->n_pending = 0;
            continue;
        }
        unsigned char lo, hi;
        const unsigned len = ft_utf8_lead(c, &lo, &hi);
        i++;
        if (len == 1) {
            out[k++] = c;
        } else if (len == 0) {
            k += ft_utf8_put_fffd(out + k);
        } else {
            u->pending[0] = c;
            u->n_pending = 1;
            u->n_need = (uint8_t)len;
        }
    }
    return k;
}

size_t ft_utf8_stream_flush(ft_utf8_stream_t *u, unsigned char *out)
{
    if (!u->n_pending) return 0;
    u->n_pending = 0;
    return ft_utf8_put_fffd(out);
}
