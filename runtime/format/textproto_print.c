/* The text-format printer: walks a message through its descriptor. */
#include "textproto.h"
#include "textproto_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ft_tp_out {
    char *buf;
    size_t len, cap;
    int oom;
} ft_tp_out_t;

static void ft_tp_put(ft_tp_out_t *o, const char *s, size_t n)
{
    if (o->oom)
        return;
    if (o->len + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 1024;
        while (cap < o->len + n + 1)
            cap *= 2;
        char *p = realloc(o->buf, cap);
        if (!p) {
            o->oom = 1;
            return;
        }
        o->buf = p;
        o->cap = cap;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = 0;
}

static void ft_tp_puts(ft_tp_out_t *o, const char *s) { ft_tp_put(o, s, strlen(s)); }

static void ft_tp_printf(ft_tp_out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ft_tp_printf(ft_tp_out_t *o, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n > 0)
        ft_tp_put(o, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static void ft_tp_indent(ft_tp_out_t *o, int depth)
{
    for (int i = 0; i < depth; i++)
        ft_tp_put(o, "  ", 2);
}

/* Shortest of %.{6..17}g that reads back as the same double. */
static void ft_tp_put_double(ft_tp_out_t *o, double v, int is_float)
{
    if (isnan(v)) {
        ft_tp_puts(o, "nan");
        return;
    }
    if (isinf(v)) {
        ft_tp_puts(o, v < 0 ? "-inf" : "inf");
        return;
    }
    char tmp[40];
    for (int prec = is_float ? 6 : 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
        if (is_float ? (float)strtod(tmp, NULL) == (float)v : strtod(tmp, NULL) == v)
            break;
    }
    ft_tp_puts(o, tmp);
}

static void ft_tp_put_string(ft_tp_out_t *o, const uint8_t *s, size_t n)
{
    ft_tp_put(o, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        switch (c) {
        case '"': ft_tp_puts(o, "\\\""); break;
        case '\\': ft_tp_puts(o, "\\\\"); break;
        case '\n': ft_tp_puts(o, "\\n"); break;
        case '\t': ft_tp_puts(o, "\\t"); break;
        case '\r': ft_tp_puts(o, "\\r"); break;
        default:
            /* Control bytes as octal; UTF-8 (>= 0x80) stays readable. */
            if (c < 0x20 || c == 0x7f)
                ft_tp_printf(o, "\\%03o", c);
            else
                ft_tp_put(o, (const char *)&c, 1);
        }
    }
    ft_tp_put(o, "\"", 1);
}

static void ft_tp_print_msg(ft_tp_out_t *o, const ProtobufCMessage *m, int depth);

/* One value at p of the field's type. */
static void ft_tp_print_value(ft_tp_out_t *o, const ProtobufCFieldDescriptor *f, const void *p,
                              int depth)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32: ft_tp_printf(o, "%" PRId32, *(const int32_t *)p); break;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: ft_tp_printf(o, "%" PRIu32, *(const uint32_t *)p); break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64: ft_tp_printf(o, "%" PRId64, *(const int64_t *)p); break;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: ft_tp_printf(o, "%" PRIu64, *(const uint64_t *)p); break;
    case PROTOBUF_C_TYPE_FLOAT: ft_tp_put_double(o, *(const float *)p, 1); break;
    case PROTOBUF_C_TYPE_DOUBLE: ft_tp_put_double(o, *(const double *)p, 0); break;
    case PROTOBUF_C_TYPE_BOOL: ft_tp_puts(o, *(const protobuf_c_boolean *)p ? "true" : "false"); break;
    case PROTOBUF_C_TYPE_ENUM: {
        int32_t v = *(const int32_t *)p;
        const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(f->descriptor, v);
        if (ev)
            ft_tp_puts(o, ev->name);
        else
            ft_tp_printf(o, "%" PRId32, v);
        break;
    }
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(char *const *)p;
        ft_tp_put_string(o, (const uint8_t *)(s ? s : ""), s ? strlen(s) : 0);
        break;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        const ProtobufCBinaryData *b = p;
        ft_tp_put_string(o, b->data, b->len);
        break;
    }
    case PROTOBUF_C_TYPE_MESSAGE:
        ft_tp_puts(o, "{\n");
        ft_tp_print_msg(o, *(ProtobufCMessage *const *)p, depth + 1);
        ft_tp_indent(o, depth);
        ft_tp_puts(o, "}");
        break;
    }
}

static void ft_tp_print_one(ft_tp_out_t *o, const ProtobufCFieldDescriptor *f, const void *p,
                            int depth)
{
    ft_tp_indent(o, depth);
    ft_tp_puts(o, f->name);
    ft_tp_puts(o, f->type == PROTOBUF_C_TYPE_MESSAGE ? " " : ": ");
    ft_tp_print_value(o, f, p, depth);
    ft_tp_puts(o, "\n");
}

/* 1 when a proto3 (label NONE) value holds its type's zero. */
static int ft_tp_is_zero(const ProtobufCFieldDescriptor *f, const void *p)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(char *const *)p;
        return !s || !*s;
    }
    case PROTOBUF_C_TYPE_BYTES: return ((const ProtobufCBinaryData *)p)->len == 0;
    case PROTOBUF_C_TYPE_MESSAGE: return *(ProtobufCMessage *const *)p == NULL;
    case PROTOBUF_C_TYPE_FLOAT: return *(const float *)p == 0 && !signbit(*(const float *)p);
    case PROTOBUF_C_TYPE_DOUBLE: return *(const double *)p == 0 && !signbit(*(const double *)p);
    default: {
        static const uint8_t zeros[8];
        return memcmp(p, zeros, ft_tp_value_size(f->type)) == 0;
    }
    }
}

static int ft_tp_present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    const void *p = ft_tp_member(m, f->offset);
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
        return *(const uint32_t *)ft_tp_member(m, f->quantifier_offset) == f->id;
    if (ft_tp_has_flag(f))
        return *(const protobuf_c_boolean *)ft_tp_member(m, f->quantifier_offset);
    if (f->type == PROTOBUF_C_TYPE_MESSAGE)
        return *(ProtobufCMessage *const *)p != NULL;
    if (f->type == PROTOBUF_C_TYPE_STRING && f->label != PROTOBUF_C_LABEL_NONE) {
        const char *s = *(char *const *)p;
        return s && s != f->default_value;
    }
    if (f->label == PROTOBUF_C_LABEL_REQUIRED)
        return 1;
    return !ft_tp_is_zero(f, p);
}

static void ft_tp_print_msg(ft_tp_out_t *o, const ProtobufCMessage *m, int depth)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)ft_tp_member(m, f->quantifier_offset);
            const char *arr = *(char *const *)ft_tp_member(m, f->offset);
            size_t sz = ft_tp_value_size(f->type);
            for (size_t k = 0; k < n; k++)
                ft_tp_print_one(o, f, arr + k * sz, depth);
        } else if (ft_tp_present(m, f)) {
            ft_tp_print_one(o, f, ft_tp_member(m, f->offset), depth);
        }
    }
}

ft_status_t ft_textproto_print(const ProtobufCMessage *msg, const char *header, char **out_text,
                               size_t *out_len)
{
    *out_text = NULL;
    if (out_len)
        *out_len = 0;
    if (!msg || !msg->descriptor)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "textproto print: no message");
    ft_tp_out_t o = {0};
    ft_tp_put(&o, "", 0);
    for (const char *h = header; h && *h;) {
        const char *nl = strchr(h, '\n');
        size_t n = nl ? (size_t)(nl - h) : strlen(h);
        ft_tp_put(&o, n ? "# " : "#", n ? 2 : 1);
        ft_tp_put(&o, h, n);
        ft_tp_put(&o, "\n", 1);
        h += n + (nl ? 1 : 0);
    }
    ft_tp_print_msg(&o, msg, 0);
    if (o.oom) {
        free(o.buf);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "textproto print: out of memory (%zu bytes)",
                              o.len);
    }
    *out_text = o.buf;
    if (out_len)
        *out_len = o.len;
    return FT_OK;
}
