/* Scalar values of the text format: integers with range checks, floats,
 * bools, enums by name, and quoted strings with C escapes. */
#include "textproto_value.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Integers: [-]digits or [-]0x hex, checked against the field's range. */
static int ft_tp_parse_int(ft_tp_lex_t *lx, ProtobufCType type, void *dst)
{
    char buf[72];
    if (lx->tok != FT_TP_NUMBER)
        return ft_tp_lex_expected(lx, "an integer");
    if (ft_tp_lex_copy(lx, buf, sizeof(buf), "number"))
        return -1;
    const char *p = buf;
    int neg = 0;
    if (*p == '-' || *p == '+')
        neg = *p++ == '-';
    int base = 10;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    }
    if (!*p || !(base == 16 ? strchr("0123456789abcdefABCDEF", *p) != NULL : (*p >= '0' && *p <= '9')))
        return ft_tp_lex_expected(lx, "an integer");
    errno = 0;
    char *end;
    unsigned long long mag = strtoull(p, &end, base);
    if (*end)
        return ft_tp_lex_expected(lx, "an integer");
    int range_ok = errno == 0;
    int is_signed = type == PROTOBUF_C_TYPE_INT32 || type == PROTOBUF_C_TYPE_SINT32 ||
                    type == PROTOBUF_C_TYPE_SFIXED32 || type == PROTOBUF_C_TYPE_INT64 ||
                    type == PROTOBUF_C_TYPE_SINT64 || type == PROTOBUF_C_TYPE_SFIXED64 ||
                    type == PROTOBUF_C_TYPE_ENUM;
    int is64 = type == PROTOBUF_C_TYPE_INT64 || type == PROTOBUF_C_TYPE_SINT64 ||
               type == PROTOBUF_C_TYPE_SFIXED64 || type == PROTOBUF_C_TYPE_UINT64 ||
               type == PROTOBUF_C_TYPE_FIXED64;
    unsigned long long max = is_signed ? (is64 ? (unsigned long long)INT64_MAX : INT32_MAX)
                                       : (is64 ? UINT64_MAX : UINT32_MAX);
    if (neg && !is_signed && mag != 0)
        range_ok = 0;
    if (mag > max + (neg && is_signed ? 1ull : 0ull))
        range_ok = 0;
    if (!range_ok)
        return ft_tp_lex_fail(lx, lx->tok_line, lx->tok_col, "integer %s is out of range for a %s%d field",
                              buf, is_signed ? "int" : "uint", is64 ? 64 : 32);
    if (is64) {
        uint64_t v = neg ? (uint64_t)0 - mag : mag;
        memcpy(dst, &v, 8);
    } else {
        uint32_t v = neg ? (uint32_t)(0u - (uint32_t)mag) : (uint32_t)mag;
        memcpy(dst, &v, 4);
    }
    return 0;
}

/* Floats: decimal or exponent notation, an optional f suffix, inf and nan. */
static int ft_tp_parse_real(ft_tp_lex_t *lx, double *out)
{
    char buf[72];
    if (lx->tok != FT_TP_NUMBER && lx->tok != FT_TP_IDENT)
        return ft_tp_lex_expected(lx, "a number");
    if (ft_tp_lex_copy(lx, buf, sizeof(buf), "number"))
        return -1;
    const char *p = buf;
    int neg = *p == '-';
    if (*p == '-' || *p == '+')
        p++;
    if (!strcasecmp(p, "inf") || !strcasecmp(p, "infinity") || !strcasecmp(p, "inff")) {
        *out = neg ? -INFINITY : INFINITY;
        return 0;
    }
    if (!strcasecmp(p, "nan") || !strcasecmp(p, "nanf")) {
        *out = NAN;
        return 0;
    }
    /* Only digits, '.', exponents and one trailing f: strtod would also
     * accept hex floats and "infinity" spellings we do not promise. */
    size_t len = strlen(buf);
    if (len > 1 && (buf[len - 1] == 'f' || buf[len - 1] == 'F'))
        buf[--len] = 0;
    if (!(*p >= '0' && *p <= '9') && *p != '.')
        return ft_tp_lex_expected(lx, "a number");
    if (strspn(p, "0123456789.eE+-") != strlen(p))
        return ft_tp_lex_expected(lx, "a number");
    errno = 0;
    char *end;
    double v = strtod(buf, &end);
    if (*end || end == buf)
        return ft_tp_lex_expected(lx, "a number");
    if (errno == ERANGE && isinf(v))
        return ft_tp_lex_fail(lx, lx->tok_line, lx->tok_col, "number %s is out of range", buf);
    *out = v;
    return 0;
}

static int ft_tp_parse_bool(ft_tp_lex_t *lx, protobuf_c_boolean *dst)
{
    static const char *const yes[] = {"true", "True", "t", "1"}, *const no[] = {"false", "False", "f", "0"};
    char buf[8];
    if ((lx->tok == FT_TP_IDENT || lx->tok == FT_TP_NUMBER) && lx->tok_len < sizeof(buf)) {
        ft_tp_lex_copy(lx, buf, sizeof(buf), "bool");
        for (int i = 0; i < 4; i++) {
            if (!strcmp(buf, yes[i]) || !strcmp(buf, no[i])) {
                *dst = !strcmp(buf, yes[i]);
                return 0;
            }
        }
    }
    return ft_tp_lex_expected(lx, "true or false");
}

static int ft_tp_parse_enum(ft_tp_lex_t *lx, const ProtobufCEnumDescriptor *ed, int32_t *dst)
{
    const ProtobufCEnumValue *v = NULL;
    if (lx->tok == FT_TP_IDENT) {
        char buf[128];
        if (ft_tp_lex_copy(lx, buf, sizeof(buf), "enum value name"))
            return -1;
        v = protobuf_c_enum_descriptor_get_value_by_name(ed, buf);
        if (!v)
            return ft_tp_lex_fail(lx, lx->tok_line, lx->tok_col, "'%s' is not a value of enum %s", buf,
                                  ed->name);
    } else if (lx->tok == FT_TP_NUMBER) {
        int32_t n;
        if (ft_tp_parse_int(lx, PROTOBUF_C_TYPE_ENUM, &n))
            return -1;
        v = protobuf_c_enum_descriptor_get_value(ed, n);
        if (!v)
            return ft_tp_lex_fail(lx, lx->tok_line, lx->tok_col, "%d is not a value of enum %s", (int)n,
                                  ed->name);
    } else {
        return ft_tp_lex_expected(lx, "an enum value name");
    }
    *dst = v->value;
    return 0;
}

static int ft_tp_hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The byte a one-letter escape stands for, or -1. */
static int ft_tp_simple_escape(char e)
{
    switch (e) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    case 'a': return '\a';
    case 'b': return '\b';
    case 'f': return '\f';
    case 'v': return '\v';
    case '\\': return '\\';
    case '\'': return '\'';
    case '"': return '"';
    case '?': return '?';
    default: return -1;
    }
}

/* Decodes the escapes of one quoted token (quotes excluded) onto out,
 * which has room for len more bytes (decoding never grows the text,
 * except \u, which takes 6 bytes for at most 3). Returns the bytes written
 * or -1. */
static long ft_tp_unescape(ft_tp_lex_t *lx, const char *s, size_t len, uint8_t *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '\\') {
            out[o++] = (uint8_t)s[i];
            continue;
        }
        uint32_t col = lx->tok_col + 1 + (uint32_t)i;
        char e = s[++i]; /* the lexer guarantees a byte after '\' */
        int simple = ft_tp_simple_escape(e);
        if (simple >= 0) {
            out[o++] = (uint8_t)simple;
        } else if (e >= '0' && e <= '7') {
            unsigned v = 0;
            size_t k = 0;
            for (; k < 3 && i + k < len && s[i + k] >= '0' && s[i + k] <= '7'; k++)
                v = v * 8 + (unsigned)(s[i + k] - '0');
            if (v > 255)
                return ft_tp_lex_fail(lx, lx->tok_line, col, "octal escape \\%.3s is above 255", s + i);
            out[o++] = (uint8_t)v;
            i += k - 1;
        } else if (e == 'x' || e == 'X') {
            int h0 = i + 1 < len ? ft_tp_hex(s[i + 1]) : -1;
            if (h0 < 0)
                return ft_tp_lex_fail(lx, lx->tok_line, col, "\\x needs a hex digit");
            int h1 = i + 2 < len ? ft_tp_hex(s[i + 2]) : -1;
            out[o++] = (uint8_t)(h1 < 0 ? h0 : h0 * 16 + h1);
            i += h1 < 0 ? 1 : 2;
        } else if (e == 'u') {
            uint32_t cp = 0;
            for (size_t k = 1; k <= 4; k++) {
                int h = i + k < len ? ft_tp_hex(s[i + k]) : -1;
                if (h < 0)
                    return ft_tp_lex_fail(lx, lx->tok_line, col, "\\u needs four hex digits");
                cp = cp * 16 + (uint32_t)h;
            }
            if (cp >= 0xd800 && cp <= 0xdfff)
                return ft_tp_lex_fail(lx, lx->tok_line, col, "\\u%04x is a surrogate", (unsigned)cp);
            if (cp < 0x80) {
                out[o++] = (uint8_t)cp;
            } else if (cp < 0x800) {
                out[o++] = (uint8_t)(0xc0 | (cp >> 6));
                out[o++] = (uint8_t)(0x80 | (cp & 0x3f));
            } else {
                out[o++] = (uint8_t)(0xe0 | (cp >> 12));
                out[o++] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
                out[o++] = (uint8_t)(0x80 | (cp & 0x3f));
            }
            i += 4;
        } else {
            return ft_tp_lex_fail(lx, lx->tok_line, col, "unknown escape \\%c", e >= 0x20 && e < 0x7f ? e : '?');
        }
    }
    return (long)o;
}

/* One or more adjacent quoted strings, concatenated, into a malloc'ed
 * buffer (NUL-terminated for convenience). */
static int ft_tp_parse_string(ft_tp_lex_t *lx, uint8_t **out, size_t *out_len)
{
    if (lx->tok != FT_TP_STRING)
        return ft_tp_lex_expected(lx, "a quoted string");
    uint8_t *buf = NULL;
    size_t len = 0;
    while (lx->tok == FT_TP_STRING) {
        size_t raw = lx->tok_len - 2;
        uint8_t *p = realloc(buf, len + raw + 1);
        if (!p) {
            free(buf);
            return ft_tp_lex_fail(lx, lx->tok_line, lx->tok_col, "out of memory for a %zu-byte string", raw);
        }
        buf = p;
        long n = ft_tp_unescape(lx, lx->s + lx->tok_pos + 1, raw, buf + len);
        if (n < 0 || ft_tp_lex_next(lx)) {
            free(buf);
            return -1;
        }
        len += (size_t)n;
    }
    buf[len] = 0;
    *out = buf;
    *out_len = len;
    return 0;
}

int ft_tp_parse_scalar(ft_tp_lex_t *lx, const ProtobufCFieldDescriptor *f, void *dst)
{
    double d;
    switch (f->type) {
    case PROTOBUF_C_TYPE_FLOAT:
        if (ft_tp_parse_real(lx, &d))
            return -1;
        if (isfinite(d) && fabs(d) > 3.4028234663852886e38)
            return ft_tp_lex_fail(lx, lx->tok_line, lx->tok_col, "number is out of range for a float");
        *(float *)dst = (float)d;
        return ft_tp_lex_next(lx);
    case PROTOBUF_C_TYPE_DOUBLE:
        if (ft_tp_parse_real(lx, &d))
            return -1;
        *(double *)dst = d;
        return ft_tp_lex_next(lx);
    case PROTOBUF_C_TYPE_BOOL:
        return ft_tp_parse_bool(lx, dst) ? -1 : ft_tp_lex_next(lx);
    case PROTOBUF_C_TYPE_ENUM:
        return ft_tp_parse_enum(lx, f->descriptor, dst) ? -1 : ft_tp_lex_next(lx);
    case PROTOBUF_C_TYPE_STRING: {
        uint32_t line = lx->tok_line, col = lx->tok_col;
        uint8_t *s;
        size_t n;
        if (ft_tp_parse_string(lx, &s, &n))
            return -1;
        if (strlen((const char *)s) != n) {
            free(s);
            return ft_tp_lex_fail(lx, line, col, "string field '%s' holds a NUL byte", f->name);
        }
        *(char **)dst = (char *)s;
        return 0;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        ProtobufCBinaryData *b = dst;
        return ft_tp_parse_string(lx, &b->data, &b->len);
    }
    case PROTOBUF_C_TYPE_MESSAGE:
        return ft_tp_lex_fail(lx, lx->tok_line, lx->tok_col, "internal: message as a scalar");
    default:
        return ft_tp_parse_int(lx, f->type, dst) ? -1 : ft_tp_lex_next(lx);
    }
}
