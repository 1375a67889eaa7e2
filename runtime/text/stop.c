/* Stop strings over streamed output (ft_stop_matcher_* in freetoken.h).
 *
 * Each stop string runs a Knuth-Morris-Pratt automaton over the bytes as
 * they arrive, so a stop string split across tokens is still found and
 * nothing is buffered: a matcher's state is the length of the longest
 * prefix of its stop string that the text ends with, and the longest
 * such state is what must be held back. The first stop string to
 * complete wins (ties: the longer one, which starts earlier). After a
 * match the matcher stays stopped and keeps reporting it. */
#include "freetoken.h"

#include "utf8_scan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct ft_stop_one {
    const unsigned char *s; /* into the matcher's text block */
    size_t len;
    size_t *fail; /* [len] KMP failure: longest proper border of s[0..i] */
    size_t state; /* bytes of s the text currently ends with */
} ft_stop_one_t;

struct ft_stop_matcher {
    ft_stop_one_t *stops;
    size_t n_stops;
    unsigned char *text; /* the stop strings, copied */
    size_t *fail_block;
    uint64_t n_seen; /* bytes fed so far */
    int stopped;
    int which; /* the stop string found, -1 before */
    size_t stop_at;
};

static void ft_stop_build_fail(ft_stop_one_t *o)
{
    o->fail[0] = 0;
    size_t k = 0;
    for (size_t i = 1; i < o->len; i++) {
        while (k > 0 && o->s[i] != o->s[k])
            k = o->fail[k - 1];
        if (o->s[i] == o->s[k]) k++;
        o->fail[i] = k;
    }
}

ft_status_t ft_stop_matcher_create(const char *const *stops, size_t n_stops,
                                   ft_stop_matcher_t **out_matcher)
{
    *out_matcher = NULL;
    if (n_stops > 0 && !stops)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "stop strings: %zu but no array",
                              n_stops);
    if (n_stops > INT32_MAX)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "stop strings: %zu of them", n_stops);
    size_t total = 0;
    for (size_t i = 0; i < n_stops; i++) {
        if (!stops[i] || !stops[i][0])
            return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "stop string %zu is %s", i,
                                  stops[i] ? "empty" : "NULL");
        const size_t len = strlen(stops[i]);
        size_t bad = 0;
        if (!ft_utf8_validate(stops[i], len, &bad))
            return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                                  "stop string %zu is not valid UTF-8 (byte %zu)", i, bad);
        if (total > SIZE_MAX / sizeof(size_t) - len)
            return ft_status_make(FT_STATUS_OUT_OF_RANGE, "stop strings too long at %zu", i);
        total += len;
    }
    ft_stop_matcher_t *m = calloc(1, sizeof(*m));
    if (!m) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "stop matcher");
    m->n_stops = n_stops;
    m->which = -1;
    m->stops = calloc(n_stops ? n_stops : 1, sizeof(*m->stops));
    m->text = malloc(total ? total : 1);
    m->fail_block = malloc((total ? total : 1) * sizeof(size_t));
    if (!m->stops || !m->text || !m->fail_block) {
        ft_stop_matcher_destroy(m);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "stop matcher: %zu bytes", total);
    }
    size_t at = 0;
    for (size_t i = 0; i < n_stops; i++) {
        ft_stop_one_t *o = &m->stops[i];
        o->len = strlen(stops[i]);
        memcpy(m->text + at, stops[i], o->len);
        o->s = m->text + at;
        o->fail = m->fail_block + at;
        ft_stop_build_fail(o);
        at += o->len;
    }
    *out_matcher = m;
    return FT_OK;
}

void ft_stop_matcher_destroy(ft_stop_matcher_t *m)
{
    if (!m) return;
    free(m->stops);
    free(m->text);
    free(m->fail_block);
    free(m);
}

/* Advances one automaton by byte c; 1 when its string just completed. */
static int ft_stop_step(ft_stop_one_t *o, unsigned char c)
{
    size_t k = o->state;
    if (k == o->len) /* cannot stay complete: fall back to the border */
        k = o->fail[k - 1];
    while (k > 0 && o->s[k] != c)
        k = o->fail[k - 1];
    if (o->s[k] == c) k++;
    o->state = k;
    return k == o->len;
}

int ft_stop_matcher_feed(ft_stop_matcher_t *m, const char *bytes, size_t n, size_t *out_stop_at,
                         size_t *out_hold)
{
    *out_hold = 0;
    if (m->stopped) {
        *out_stop_at = m->stop_at;
        return 1;
    }
    const unsigned char *b = (const unsigned char *)bytes;
    for (size_t i = 0; i < n && b; i++) {
        m->n_seen++;
        size_t best_len = 0;
        int best = -1;
        for (size_t j = 0; j < m->n_stops; j++)
            if (ft_stop_step(&m->stops[j], b[i]) && m->stops[j].len > best_len) {
                best_len = m->stops[j].len;
                best = (int)j;
            }
        if (best_len) {
            m->stopped = 1;
            m->which = best;
            m->stop_at = (size_t)(m->n_seen - best_len);
            *out_stop_at = m->stop_at;
            return 1;
        }
    }
    size_t hold = 0;
    for (size_t j = 0; j < m->n_stops; j++)
        if (m->stops[j].state > hold) hold = m->stops[j].state;
    *out_hold = hold;
    return 0;
}

int ft_stop_matcher_which(const ft_stop_matcher_t *m)
{
    return m ? m->which : -1;
}
