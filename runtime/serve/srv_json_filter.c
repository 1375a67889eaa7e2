/* JSON-constrained output (srv_json_filter.h). */
#include "srv_json_filter.h"

#include "srv_json_schema.h"

#include <stdlib.h>
#include <string.h>

enum ft_srv_json_mode {
    J_VALUE = 0, /* a value (the top level: an object) */
    J_ARR_FIRST, /* after '[': a value or ']' */
    J_OBJ_FIRST, /* after '{': a key or '}' */
    J_OBJ_KEY,   /* after ',' in an object: a key */
    J_COLON,     /* after a key */
    J_AFTER,     /* after a value in a container: ',' or its close */
    J_STRING,    /* inside a string */
    J_ESC,       /* after '\' */
    J_HEX,       /* after "\u": count hex digits read */
    J_LIT,       /* inside true / false / null */
    J_N_MINUS,   /* "-": a digit */
    J_N_ZERO,    /* "0": '.', 'e' or the end */
    J_N_INT,     /* digits */
    J_N_DOT,     /* ".": a digit */
    J_N_FRAC,    /* fraction digits */
    J_N_E,       /* "e": a sign or a digit */
    J_N_ESIGN,   /* "e-": a digit */
    J_N_EXP,     /* exponent digits */
    J_DONE,      /* the object closed: nothing more */
};

void ft_srv_json_init(ft_srv_json_t *j)
{
    memset(j, 0, sizeof(*j));
    j->mode = J_VALUE;
}

int ft_srv_json_done(const ft_srv_json_t *j)
{
    return j->mode == J_DONE;
}

static int ft_srv_json_is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int ft_srv_json_is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* A value ended: the container's next, or the end. */
static void ft_srv_json_value_done(ft_srv_json_t *j)
{
    j->mode = j->depth ? J_AFTER : J_DONE;
}

static int ft_srv_json_open(ft_srv_json_t *j, int object)
{
    if (j->depth >= FT_SRV_JSON_MAX_DEPTH) return 0;
    if (object)
        j->stack |= 1ull << j->depth;
    else
        j->stack &= ~(1ull << j->depth);
    j->depth++;
    j->mode = object ? J_OBJ_FIRST : J_ARR_FIRST;
    return 1;
}

/* The schema layer's say on an event (1 without one). */
static int ft_srv_json_ev(ft_srv_json_t *j, int event, unsigned char c)
{
    return !j->hook || j->hook(j, event, c);
}

static int ft_srv_json_close(ft_srv_json_t *j, int object)
{
    if (!j->depth || (int)((j->stack >> (j->depth - 1)) & 1) != object) return 0;
    if (!ft_srv_json_ev(j, FT_SRV_JSON_EV_CLOSE, object ? '}' : ']')) return 0;
    j->depth--;
    ft_srv_json_value_done(j);
    return 1;
}

/* The start of a value at c. */
static int ft_srv_json_value(ft_srv_json_t *j, unsigned char c)
{
    if (!ft_srv_json_ev(j, FT_SRV_JSON_EV_VSTART, c)) return 0;
    if (j->depth == 0) return c == '{' && ft_srv_json_open(j, 1); /* an object, at the top */
    switch (c) {
    case '{':
        return ft_srv_json_open(j, 1);
    case '[':
        return ft_srv_json_open(j, 0);
    case '"':
        j->mode = J_STRING;
        j->key = 0;
        return 1;
    case '-':
        j->mode = J_N_MINUS;
        return 1;
    case '0':
        j->mode = J_N_ZERO;
        return 1;
    case 't':
    case 'f':
    case 'n':
        j->lit = c == 't' ? "true" : c == 'f' ? "false" : "null";
        j->count = 1;
        j->mode = J_LIT;
        return 1;
    default:
        if (c >= '1' && c <= '9') {
            j->mode = J_N_INT;
            return 1;
        }
        return 0;
    }
}

static int ft_srv_json_byte(ft_srv_json_t *j, unsigned char c);

/* A number ends at c, which belongs to what follows it. */
static int ft_srv_json_number_end(ft_srv_json_t *j, unsigned char c)
{
    if (!ft_srv_json_ev(j, FT_SRV_JSON_EV_VEND, 0)) return 0;
    ft_srv_json_value_done(j);
    return ft_srv_json_byte(j, c);
}

/* A byte inside a value (or key) being read: the schema layer sees it
 * first. Numbers' bytes that end them belong to what follows and are not
 * reported here. */
static int ft_srv_json_inner(ft_srv_json_t *j, unsigned char c)
{
    switch (j->mode) {
    case J_STRING:
        if (j->key && !j->utf8_left && c == '"') return ft_srv_json_ev(j, FT_SRV_JSON_EV_KEND, c);
        /* fall through */
    case J_ESC:
    case J_HEX:
        return ft_srv_json_ev(j, j->key ? FT_SRV_JSON_EV_KBYTE : FT_SRV_JSON_EV_VBYTE, c);
    case J_LIT:
        return ft_srv_json_ev(j, FT_SRV_JSON_EV_VBYTE, c);
    case J_N_MINUS:
    case J_N_DOT:
    case J_N_E:
    case J_N_ESIGN:
        return ft_srv_json_ev(j, FT_SRV_JSON_EV_VBYTE, c);
    case J_N_ZERO:
    case J_N_INT:
    case J_N_FRAC:
    case J_N_EXP:
        if (ft_srv_json_is_digit(c) || c == '.' || c == 'e' || c == 'E')
            return ft_srv_json_ev(j, FT_SRV_JSON_EV_VBYTE, c);
        return 1;
    default:
        return 1;
    }
}

static int ft_srv_json_byte(ft_srv_json_t *j, unsigned char c)
{
    if (j->hook && !ft_srv_json_inner(j, c)) return 0;
    const int ws = ft_srv_json_is_ws(c);
    switch (j->mode) {
    case J_VALUE:
    case J_ARR_FIRST:
    case J_OBJ_FIRST:
    case J_OBJ_KEY:
    case J_COLON:
    case J_AFTER:
        if (ws) return ++j->ws <= FT_SRV_JSON_MAX_WS;
        j->ws = 0;
        break;
    default:
        break;
    }
    switch (j->mode) {
    case J_VALUE:
        return ft_srv_json_value(j, c);
    case J_ARR_FIRST:
        if (c == ']') return ft_srv_json_close(j, 0);
        return ft_srv_json_value(j, c);
    case J_OBJ_FIRST:
        if (c == '}') return ft_srv_json_close(j, 1);
        /* fall through */
    case J_OBJ_KEY:
        if (c != '"' || !ft_srv_json_ev(j, FT_SRV_JSON_EV_KSTART, c)) return 0;
        j->mode = J_STRING;
        j->key = 1;
        return 1;
    case J_COLON:
        if (c != ':') return 0;
        j->mode = J_VALUE;
        return 1;
    case J_AFTER: {
        const int object = (int)((j->stack >> (j->depth - 1)) & 1);
        if (c == ',') {
            if (object && !ft_srv_json_ev(j, FT_SRV_JSON_EV_COMMA, c)) return 0;
            j->mode = object ? J_OBJ_KEY : J_VALUE;
            return 1;
        }
        return (c == '}' || c == ']') && ft_srv_json_close(j, c == '}');
    }
    case J_STRING:
        if (j->utf8_left) {
            if (c < j->utf8_lo || c > j->utf8_hi) return 0;
            j->utf8_left--;
            j->utf8_lo = 0x80;
            j->utf8_hi = 0xBF;
            return 1;
        }
        if (c == '"') {
            if (j->key) {
                j->mode = J_COLON;
            } else {
                if (!ft_srv_json_ev(j, FT_SRV_JSON_EV_VEND, 0)) return 0;
                ft_srv_json_value_done(j);
            }
            return 1;
        }
        if (c == '\\') {
            j->mode = J_ESC;
            return 1;
        }
        if (c < 0x20) return 0; /* control characters must be escaped */
        if (c < 0x80) return 1;
        /* well-formed UTF-8 (Unicode table 3-7): no overlong forms, no
         * surrogates, nothing past U+10FFFF */
        j->utf8_lo = 0x80;
        j->utf8_hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            j->utf8_left = 1;
        else if (c >= 0xE0 && c <= 0xEF)
            j->utf8_left = 2;
        else if (c >= 0xF0 && c <= 0xF4)
            j->utf8_left = 3;
        else
            return 0; /* a stray continuation byte, or not UTF-8 */
        if (c == 0xE0) j->utf8_lo = 0xA0;
        if (c == 0xED) j->utf8_hi = 0x9F;
        if (c == 0xF0) j->utf8_lo = 0x90;
        if (c == 0xF4) j->utf8_hi = 0x8F;
        return 1;
    case J_ESC:
        if (c == 'u') {
            j->mode = J_HEX;
            j->count = 0;
            return 1;
        }
        if (!strchr("\"\\/bfnrt", c) || !c) return 0;
        j->mode = J_STRING;
        return 1;
    case J_HEX:
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return 0;
        if (++j->count == 4) j->mode = J_STRING;
        return 1;
    case J_LIT:
        if (c != (unsigned char)j->lit[j->count]) return 0;
        if (!j->lit[++j->count]) {
            if (!ft_srv_json_ev(j, FT_SRV_JSON_EV_VEND, 0)) return 0;
            ft_srv_json_value_done(j);
        }
        return 1;
    case J_N_MINUS:
        if (c == '0')
            j->mode = J_N_ZERO;
        else if (ft_srv_json_is_digit(c))
            j->mode = J_N_INT;
        else
            return 0;
        return 1;
    case J_N_ZERO:
    case J_N_INT:
        if (j->mode == J_N_INT && ft_srv_json_is_digit(c)) return 1;
        if (c == '.')
            j->mode = J_N_DOT;
        else if (c == 'e' || c == 'E')
            j->mode = J_N_E;
        else
            return ft_srv_json_number_end(j, c);
        return 1;
    case J_N_DOT:
        if (!ft_srv_json_is_digit(c)) return 0;
        j->mode = J_N_FRAC;
        return 1;
    case J_N_FRAC:
        if (ft_srv_json_is_digit(c)) return 1;
        if (c == 'e' || c == 'E') {
            j->mode = J_N_E;
            return 1;
        }
        return ft_srv_json_number_end(j, c);
    case J_N_E:
        if (c == '+' || c == '-')
            j->mode = J_N_ESIGN;
        else if (ft_srv_json_is_digit(c))
            j->mode = J_N_EXP;
        else
            return 0;
        return 1;
    case J_N_ESIGN:
        if (!ft_srv_json_is_digit(c)) return 0;
        j->mode = J_N_EXP;
        return 1;
    case J_N_EXP:
        if (ft_srv_json_is_digit(c)) return 1;
        return ft_srv_json_number_end(j, c);
    case J_DONE:
    default:
        return 0;
    }
}

int ft_srv_json_feed(ft_srv_json_t *j, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!ft_srv_json_byte(j, (unsigned char)s[i])) return 0;
    return 1;
}

/* Special tokens: those whose text is <...> and that the tokenizer reads
 * as that one token only when asked to recognize special tokens. */
static int ft_srv_json_is_special(const ft_engine_t *e, int32_t id, const char *b, uint32_t n)
{
    if (n < 3 || b[0] != '<' || b[n - 1] != '>') return 0;
    int32_t *with = NULL, *without = NULL;
    uint32_t n_with = 0, n_without = 0;
    ft_status_t st = ft_engine_tokenize(e, b, n, FT_TOKENIZE_SPECIAL, &with, &n_with);
    if (!st) st = ft_engine_tokenize(e, b, n, 0, &without, &n_without);
    const int special =
        !st && n_with == 1 && with[0] == id && !(n_without == 1 && without[0] == id);
    ft_status_free(st);
    ft_engine_free(e, with);
    ft_engine_free(e, without);
    return special;
}

int ft_srv_json_filter_init(ft_srv_json_filter_t *f, const ft_engine_t *engine, uint32_t start,
                            const struct ft_srv_js_schema *schema)
{
    memset(f, 0, sizeof(*f));
    f->engine = engine;
    f->at = start;
    f->n_vocab = ft_engine_info(engine)->vocab_size;
    ft_srv_json_init(&f->j);
    if (schema) {
        f->js = malloc(sizeof(*f->js));
        if (!f->js) return 0;
        ft_srv_js_init(f->js, schema);
    }
    f->special = calloc(f->n_vocab ? f->n_vocab : 1, 1);
    if (!f->special) return 0;
    for (uint32_t id = 0; id < f->n_vocab; id++) {
        const char *b;
        uint32_t n;
        ft_status_t st = ft_engine_token_bytes(engine, (int32_t)id, &b, &n);
        if (st) {
            ft_status_free(st);
            f->special[id] = 1;
            continue;
        }
        f->special[id] = (uint8_t)ft_srv_json_is_special(engine, (int32_t)id, b, n);
    }
    return 1;
}

void ft_srv_json_filter_free(ft_srv_json_filter_t *f)
{
    free(f->special);
    free(f->js);
    memset(f, 0, sizeof(*f));
}

void ft_srv_json_filter_fn(void *user, const int32_t *history, uint32_t n_history, uint8_t *allowed,
                           uint32_t n_vocab)
{
    ft_srv_json_filter_t *f = user;
    /* what was generated since the last call */
    for (; f->at < n_history && !f->broken; f->at++) {
        const char *b;
        uint32_t n;
        ft_status_t st = ft_engine_token_bytes(f->engine, history[f->at], &b, &n);
        if (st || f->special[history[f->at]] ||
            !(f->js ? ft_srv_js_feed(f->js, b, n) : ft_srv_json_feed(&f->j, b, n)))
            f->broken = 1;
        ft_status_free(st);
    }
    if (f->broken || n_vocab != f->n_vocab) return;
    const int done = f->js ? ft_srv_js_done(f->js) : ft_srv_json_done(&f->j);
    for (uint32_t id = 0; id < n_vocab; id++) {
        if (ft_engine_is_eog(f->engine, (int32_t)id)) {
            allowed[id] = (uint8_t)done;
            continue;
        }
        if (done || f->special[id]) {
            allowed[id] = 0;
            continue;
        }
        const char *b;
        uint32_t n = 0;
        ft_status_t st = ft_engine_token_bytes(f->engine, (int32_t)id, &b, &n);
        if (st || n == 0) {
            ft_status_free(st);
            allowed[id] = 0;
            continue;
        }
        if (f->js) {
            ft_srv_js_state_t t = *f->js; /* a copy: the hook finds it from t.lex */
            allowed[id] = (uint8_t)ft_srv_js_feed(&t, b, n);
        } else {
            ft_srv_json_t t = f->j;
            allowed[id] = (uint8_t)ft_srv_json_feed(&t, b, n);
        }
    }
}
