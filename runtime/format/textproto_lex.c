#include "textproto_lex.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void ft_tp_lex_init(ft_tp_lex_t *lx, const char *s, size_t n, const char *name)
{
    memset(lx, 0, sizeof(*lx));
    lx->s = s;
    lx->n = n;
    lx->line = lx->col = 1;
    lx->name = name ? name : "<text>";
}

int ft_tp_lex_fail(ft_tp_lex_t *lx, uint32_t line, uint32_t col, const char *fmt, ...)
{
    if (lx->err)
        return -1;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    lx->err = ft_status_make(FT_STATUS_FORMAT, "%s:%u:%u: %s", lx->name, line, col, msg);
    return -1;
}

int ft_tp_lex_expected(ft_tp_lex_t *lx, const char *what)
{
    if (lx->tok == FT_TP_EOF)
        return ft_tp_lex_fail(lx, lx->tok_line, lx->tok_col, "expected %s, found the end of the input",
                              what);
    /* Quote at most 40 bytes of the token, with control bytes as '?'. */
    char shown[48];
    size_t n = lx->tok_len < 40 ? lx->tok_len : 40;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)lx->s[lx->tok_pos + i];
        shown[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    shown[n] = 0;
    return ft_tp_lex_fail(lx, lx->tok_line, lx->tok_col, "expected %s, found '%s%s'", what, shown,
                          lx->tok_len > n ? "..." : "");
}

int ft_tp_lex_copy(ft_tp_lex_t *lx, char *buf, size_t cap, const char *what)
{
    if (lx->tok_len + 1 > cap)
        return ft_tp_lex_fail(lx, lx->tok_line, lx->tok_col, "%s is too long (%zu bytes, at most %zu)",
                              what, lx->tok_len, cap - 1);
    memcpy(buf, lx->s + lx->tok_pos, lx->tok_len);
    buf[lx->tok_len] = 0;
    return 0;
}

static void ft_tp_advance(ft_tp_lex_t *lx)
{
    if (lx->s[lx->pos] == '\n') {
        lx->line++;
        lx->col = 1;
    } else {
        lx->col++;
    }
    lx->pos++;
}

static int ft_tp_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int ft_tp_digit(char c) { return c >= '0' && c <= '9'; }

static void ft_tp_skip_space(ft_tp_lex_t *lx)
{
    while (lx->pos < lx->n) {
        char c = lx->s[lx->pos];
        if (c == '#') {
            while (lx->pos < lx->n && lx->s[lx->pos] != '\n')
                ft_tp_advance(lx);
        } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            ft_tp_advance(lx);
        } else {
            break;
        }
    }
}

/* A quoted string: ends at the matching quote; a backslash skips the next
 * byte; a newline or the end of input before the quote is an error. */
static int ft_tp_lex_string(ft_tp_lex_t *lx)
{
    char q = lx->s[lx->pos];
    ft_tp_advance(lx);
    while (lx->pos < lx->n && lx->s[lx->pos] != q) {
        if (lx->s[lx->pos] == '\n')
            break;
        if (lx->s[lx->pos] == '\\' && lx->pos + 1 < lx->n && lx->s[lx->pos + 1] != '\n')
            ft_tp_advance(lx);
        ft_tp_advance(lx);
    }
    if (lx->pos >= lx->n || lx->s[lx->pos] != q)
        return ft_tp_lex_fail(lx, lx->tok_line, lx->tok_col,
                              "string not closed before the end of its line");
    ft_tp_advance(lx);
    return 0;
}

int ft_tp_lex_next(ft_tp_lex_t *lx)
{
    if (lx->err)
        return -1;
    ft_tp_skip_space(lx);
    lx->tok_pos = lx->pos;
    lx->tok_line = lx->line;
    lx->tok_col = lx->col;
    lx->tok_len = 0;
    if (lx->pos >= lx->n) {
        lx->tok = FT_TP_EOF;
        return 0;
    }
    char c = lx->s[lx->pos];
    char c1 = lx->pos + 1 < lx->n ? lx->s[lx->pos + 1] : 0;
    if (ft_tp_alpha(c)) {
        lx->tok = FT_TP_IDENT;
        while (lx->pos < lx->n && (ft_tp_alpha(lx->s[lx->pos]) || ft_tp_digit(lx->s[lx->pos])))
            ft_tp_advance(lx);
    } else if (ft_tp_digit(c) || ((c == '-' || c == '+' || c == '.') &&
                                  (ft_tp_digit(c1) || c1 == '.' || ft_tp_alpha(c1)))) {
        /* Numbers, hex, exponents, suffixes and "-inf": the value parser
         * decides what the characters mean. */
        lx->tok = FT_TP_NUMBER;
        ft_tp_advance(lx);
        while (lx->pos < lx->n) {
            char d = lx->s[lx->pos], prev = lx->s[lx->pos - 1];
            if (ft_tp_alpha(d) || ft_tp_digit(d) || d == '.' ||
                ((d == '-' || d == '+') && (prev == 'e' || prev == 'E')))
                ft_tp_advance(lx);
            else
                break;
        }
    } else if (c == '"' || c == '\'') {
        lx->tok = FT_TP_STRING;
        if (ft_tp_lex_string(lx))
            return -1;
    } else if (c != 0 && strchr("{}<>[]:,;", c)) {
        lx->tok = FT_TP_PUNCT;
        ft_tp_advance(lx);
    } else {
        return ft_tp_lex_fail(lx, lx->line, lx->col, "unexpected character 0x%02x",
                              (unsigned)(unsigned char)c);
    }
    lx->tok_len = lx->pos - lx->tok_pos;
    return 0;
}
