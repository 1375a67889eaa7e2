/* gpt-oss harmony in the output parser (srv_outparse.h). The reply is a
 * run of messages, each a header and a body:
 *   [<|start|>assistant]<|channel|>CH[ to=functions.NAME][ <|constrain|>json]<|message|>
 *   BODY <|end|> | <|call|> | <|return|>
 * (the recipient may also come before <|channel|>). A body for
 * functions.NAME is a call's arguments; channel analysis is reasoning;
 * any other body is content. <|call|> and <|return|> end generation, so
 * they rarely reach the parser; a <|start|> in a body ends it too. */
#include "srv_outparse_internal.h"

#include <stdlib.h>
#include <string.h>

static const char ft_h_message[] = "<|message|>", ft_h_channel[] = "<|channel|>";
static const char *const ft_h_ends[] = {"<|end|>", "<|call|>", "<|return|>", "<|start|>"};
/* The starts a header may have; text that begins otherwise is content. */
static const char *const ft_h_heads[] = {"<|start|>", "<|channel|>", " to=", "to="};

/* The longest header read before taking the text as content. */
#define FT_H_MAX_HEADER 512

/* The first end marker in s[0, n): its index in ft_h_ends (*which) and
 * offset; n when none. */
static size_t ft_h_find_end(const char *s, size_t n, size_t *which)
{
    size_t best = n;
    for (size_t k = 0; k < sizeof(ft_h_ends) / sizeof(ft_h_ends[0]); k++) {
        const size_t at = ft_srv_op_find(s, n, ft_h_ends[k]);
        if (at < best) {
            best = at;
            *which = k;
        }
    }
    return best;
}

static size_t ft_h_hold(const char *s, size_t n)
{
    size_t hold = 0;
    for (size_t k = 0; k < sizeof(ft_h_ends) / sizeof(ft_h_ends[0]); k++) {
        const size_t h = ft_srv_op_partial(s, n, ft_h_ends[k]);
        if (h > hold) hold = h;
    }
    return hold;
}

/* The word after `key` in the header h[0, n) (up to a space, '<' or the
 * end): its start and length; 0 when key is absent. */
static size_t ft_h_word(const char *h, size_t n, const char *key, const char **w)
{
    const size_t at = ft_srv_op_find(h, n, key);
    if (at == n) return 0;
    size_t i = at + strlen(key), k = i;
    while (k < n && h[k] != ' ' && h[k] != '<' && h[k] != '\n')
        k++;
    *w = h + i;
    return k - i;
}

static int ft_h_header_start(const char *s, size_t n)
{
    for (size_t k = 0; k < sizeof(ft_h_heads) / sizeof(ft_h_heads[0]); k++) {
        const size_t m = strlen(ft_h_heads[k]);
        if (!memcmp(s, ft_h_heads[k], n < m ? n : m)) return 1;
    }
    return 0;
}

size_t ft_srv_harmony_step(ft_srv_outparse_t *p, const char *s, size_t n)
{
    switch (p->state) {
    case FT_SRV_PS_H_HEADER: {
        if (!n) return 0;
        if (!ft_h_header_start(s, n)) { /* not a header: text */
            p->state = FT_SRV_PS_H_TEXT;
            p->h_kind = FT_SRV_EV_CONTENT;
            return 0;
        }
        /* a header is looked for in the first FT_H_MAX_HEADER bytes only, so
         * the decision does not depend on how the text arrives */
        const size_t lim = FT_H_MAX_HEADER + sizeof(ft_h_message) - 1;
        size_t at = ft_srv_op_find(s, n < lim ? n : lim, ft_h_message);
        if (at == (n < lim ? n : lim)) at = n;
        if (at == n) {
            if (n >= lim) { /* too long for a header: text */
                p->state = FT_SRV_PS_H_TEXT;
                p->h_kind = FT_SRV_EV_CONTENT;
            }
            return 0;
        }
        const char *ch = NULL, *to = NULL;
        const size_t chn = ft_h_word(s, at, ft_h_channel, &ch);
        size_t ton = ft_h_word(s, at, "to=", &to);
        if (ton > 10 && !memcmp(to, "functions.", 10)) to += 10, ton -= 10;
        if (ton && p->tools) {
            char *name = strndup(to, ton);
            if (name) {
                ft_srv_op_start(p, name);
                free(name);
                p->state = FT_SRV_PS_H_ARGS;
                return at + sizeof(ft_h_message) - 1;
            }
        }
        p->state = FT_SRV_PS_H_TEXT;
        p->h_kind =
            chn == 8 && !memcmp(ch, "analysis", 8) ? FT_SRV_EV_REASONING : FT_SRV_EV_CONTENT;
        return at + sizeof(ft_h_message) - 1;
    }
    case FT_SRV_PS_H_TEXT:
    case FT_SRV_PS_H_ARGS: {
        size_t which = 0;
        const size_t at = ft_h_find_end(s, n, &which);
        const size_t take = at < n ? at : n - ft_h_hold(s, n);
        if (p->state == FT_SRV_PS_H_ARGS)
            ft_srv_op_args(p, s, take);
        else
            ft_srv_op_emit(p, p->h_kind, s, take);
        if (at == n) return take;
        if (p->state == FT_SRV_PS_H_ARGS) ft_srv_op_end(p);
        p->state = FT_SRV_PS_H_HEADER;
        /* <|start|> opens the next header: it stays */
        return ft_h_ends[which][3] == 's' ? at : at + strlen(ft_h_ends[which]);
    }
    default:
        return 0;
    }
}

void ft_srv_harmony_finish(ft_srv_outparse_t *p, const char *s, size_t n)
{
    switch (p->state) {
    case FT_SRV_PS_H_HEADER: /* an unfinished header is markup; other text is content */
        if (n && !ft_h_header_start(s, n)) ft_srv_op_emit(p, FT_SRV_EV_CONTENT, s, n);
        break;
    case FT_SRV_PS_H_TEXT:
        ft_srv_op_emit(p, p->h_kind, s, n);
        break;
    case FT_SRV_PS_H_ARGS:
        ft_srv_op_args(p, s, n);
        ft_srv_op_end(p);
        break;
    default:
        break;
    }
}
