/* The text-format tokenizer: one token of lookahead, positions as
 * line:column, errors recorded once in the parser state. */
#ifndef FT_FORMAT_TEXTPROTO_LEX_H
#define FT_FORMAT_TEXTPROTO_LEX_H

#include "freetoken.h"

#include <stddef.h>
#include <stdint.h>

typedef enum ft_tp_tok {
    FT_TP_EOF = 0,
    FT_TP_IDENT,  /* [A-Za-z_][A-Za-z0-9_]* */
    FT_TP_NUMBER, /* starts with a digit, '.', or a sign */
    FT_TP_STRING, /* "..." or '...', quotes included, escapes undecoded */
    FT_TP_PUNCT,  /* one of { } < > [ ] : , ; */
} ft_tp_tok_t;

typedef struct ft_tp_lex {
    const char *s;
    size_t n, pos;
    uint32_t line, col;   /* of s[pos], 1-based */
    const char *name;     /* input name for messages */
    ft_status_t err;      /* the first error; later ones are dropped */
    /* The current token. */
    ft_tp_tok_t tok;
    size_t tok_pos, tok_len;
    uint32_t tok_line, tok_col;
} ft_tp_lex_t;

void ft_tp_lex_init(ft_tp_lex_t *lx, const char *s, size_t n, const char *name);

/* Reads the next token into lx->tok; returns 0, or -1 on a lexical error
 * (recorded in lx->err). */
int ft_tp_lex_next(ft_tp_lex_t *lx);

/* Records "name:line:col: message" (the first error wins); returns -1. */
int ft_tp_lex_fail(ft_tp_lex_t *lx, uint32_t line, uint32_t col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Fails at the current token: "expected <what>, found <the token>". */
int ft_tp_lex_expected(ft_tp_lex_t *lx, const char *what);

/* 1 when the current token is the punctuation c. */
static inline int ft_tp_is(const ft_tp_lex_t *lx, char c)
{
    return lx->tok == FT_TP_PUNCT && lx->s[lx->tok_pos] == c;
}

/* Copies the current token into buf (NUL-terminated); -1 (and an error)
 * when it does not fit. */
int ft_tp_lex_copy(ft_tp_lex_t *lx, char *buf, size_t cap, const char *what);

#endif
