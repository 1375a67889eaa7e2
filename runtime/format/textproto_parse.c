/* The text-format parser: message structure (fields, nesting, repeated
 * fields, lists) over the descriptor; scalar values in textproto_value.c.
 *
 * The message under construction is always in a state that
 * protobuf_c_message_free_unpacked can release: a sub-message or string is
 * stored (and a repeated field's count raised) only once it is allocated,
 * and a oneof's case is set before its member. */
#include "textproto.h"
#include "textproto_internal.h"
#include "textproto_lex.h"
#include "textproto_value.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per message being parsed: which singular fields were given, and the
 * allocated capacity of each repeated field's array. */
typedef struct ft_tp_frame {
    ProtobufCMessage *msg;
    uint8_t *seen;   /* [n_fields] */
    size_t *cap;     /* [n_fields] */
} ft_tp_frame_t;

static int ft_tp_parse_body(ft_tp_lex_t *lx, ProtobufCMessage *msg, char close, uint32_t open_line,
                            uint32_t open_col, int depth);

static ProtobufCMessage *ft_tp_new_message(const ProtobufCMessageDescriptor *d)
{
    ProtobufCMessage *m = malloc(d->sizeof_message);
    if (m)
        protobuf_c_message_init(d, m);
    return m;
}

/* A message value: '{' body '}' or '<' body '>'. *slot receives the new
 * message before its body is parsed, so an error leaves it freeable. */
static int ft_tp_parse_submessage(ft_tp_lex_t *lx, const ProtobufCFieldDescriptor *f,
                                  ProtobufCMessage **slot, int depth)
{
    char close = ft_tp_is(lx, '{') ? '}' : ft_tp_is(lx, '<') ? '>' : 0;
    if (!close)
        return ft_tp_lex_expected(lx, "'{'");
    if (depth >= FT_TEXTPROTO_MAX_DEPTH)
        return ft_tp_lex_fail(lx, lx->tok_line, lx->tok_col, "messages nested more than %d deep",
                              FT_TEXTPROTO_MAX_DEPTH);
    ProtobufCMessage *m = ft_tp_new_message(f->descriptor);
    if (!m)
        return ft_tp_lex_fail(lx, lx->tok_line, lx->tok_col, "out of memory");
    *slot = m;
    uint32_t line = lx->tok_line, col = lx->tok_col;
    if (ft_tp_lex_next(lx))
        return -1;
    return ft_tp_parse_body(lx, m, close, line, col, depth + 1);
}

/* Makes room for one more element of a repeated field and returns a
 * zeroed slot for it (the count is not raised yet). */
static void *ft_tp_grow(ft_tp_lex_t *lx, ft_tp_frame_t *fr, const ProtobufCFieldDescriptor *f,
                        size_t fi)
{
    size_t *n = ft_tp_member(fr->msg, f->quantifier_offset);
    void **arr = ft_tp_member(fr->msg, f->offset);
    size_t sz = ft_tp_value_size(f->type);
    if (*n == fr->cap[fi]) {
        size_t cap = fr->cap[fi] ? fr->cap[fi] * 2 : 4;
        void *p = realloc(*arr, cap * sz);
        if (!p) {
            ft_tp_lex_fail(lx, lx->tok_line, lx->tok_col, "out of memory for field '%s'", f->name);
            return NULL;
        }
        *arr = p;
        fr->cap[fi] = cap;
    }
    void *slot = (char *)*arr + *n * sz;
    memset(slot, 0, sz);
    return slot;
}

/* One value of field f (a repeated element or the singular value). */
static int ft_tp_parse_one(ft_tp_lex_t *lx, ft_tp_frame_t *fr, const ProtobufCFieldDescriptor *f,
                           size_t fi, int depth)
{
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
        void *slot = ft_tp_grow(lx, fr, f, fi);
        if (!slot)
            return -1;
        size_t *n = ft_tp_member(fr->msg, f->quantifier_offset);
        if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
            /* Counted at once: the slot holds NULL or a freeable message. */
            (*n)++;
            return ft_tp_parse_submessage(lx, f, slot, depth);
        }
        if (ft_tp_parse_scalar(lx, f, slot))
            return -1;
        (*n)++;
        return 0;
    }
    void *dst = ft_tp_member(fr->msg, f->offset);
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
        *(uint32_t *)ft_tp_member(fr->msg, f->quantifier_offset) = f->id;
    if (f->type == PROTOBUF_C_TYPE_MESSAGE)
        return ft_tp_parse_submessage(lx, f, dst, depth);
    /* A string or bytes field still holds its default here (a singular
     * field is parsed once), which is not ours to free. */
    if (f->type == PROTOBUF_C_TYPE_STRING)
        *(char **)dst = NULL;
    if (f->type == PROTOBUF_C_TYPE_BYTES)
        memset(dst, 0, sizeof(ProtobufCBinaryData));
    if (ft_tp_parse_scalar(lx, f, dst))
        return -1;
    if (ft_tp_has_flag(f))
        *(protobuf_c_boolean *)ft_tp_member(fr->msg, f->quantifier_offset) = 1;
    return 0;
}

/* A [v, v, ...] list for a repeated field; the '[' is current. */
static int ft_tp_parse_list(ft_tp_lex_t *lx, ft_tp_frame_t *fr, const ProtobufCFieldDescriptor *f,
                            size_t fi, int depth)
{
    if (ft_tp_lex_next(lx))
        return -1;
    if (ft_tp_is(lx, ']'))
        return ft_tp_lex_next(lx);
    for (;;) {
        if (ft_tp_parse_one(lx, fr, f, fi, depth))
            return -1;
        if (ft_tp_is(lx, ']'))
            return ft_tp_lex_next(lx);
        if (!ft_tp_is(lx, ','))
            return ft_tp_lex_expected(lx, "',' or ']'");
        if (ft_tp_lex_next(lx))
            return -1;
    }
}

/* Another member of f's oneof already set? */
static int ft_tp_oneof_taken(const ft_tp_frame_t *fr, const ProtobufCFieldDescriptor *f)
{
    if (!(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
        return 0;
    uint32_t c = *(const uint32_t *)ft_tp_member(fr->msg, f->quantifier_offset);
    return c != 0 && c != f->id;
}

/* One `name: value`, `name { ... }` or `name: [ ... ]`; the name is current. */
static int ft_tp_parse_field(ft_tp_lex_t *lx, ft_tp_frame_t *fr, int depth)
{
    const ProtobufCMessageDescriptor *d = fr->msg->descriptor;
    char name[128];
    if (lx->tok != FT_TP_IDENT)
        return ft_tp_lex_expected(lx, "a field name");
    if (ft_tp_lex_copy(lx, name, sizeof(name), "field name"))
        return -1;
    uint32_t line = lx->tok_line, col = lx->tok_col;
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, name);
    if (!f)
        return ft_tp_lex_fail(lx, line, col, "unknown field '%s' in message %s", name, d->name);
    size_t fi = (size_t)(f - d->fields);
    if (f->label != PROTOBUF_C_LABEL_REPEATED) {
        if (fr->seen[fi])
            return ft_tp_lex_fail(lx, line, col, "field '%s' of %s is given twice", name, d->name);
        if (ft_tp_oneof_taken(fr, f))
            return ft_tp_lex_fail(lx, line, col, "field '%s' of %s: another field of its oneof is set",
                                  name, d->name);
        fr->seen[fi] = 1;
    }
    if (ft_tp_lex_next(lx))
        return -1;
    int colon = ft_tp_is(lx, ':');
    if (colon && ft_tp_lex_next(lx))
        return -1;
    if (!colon && f->type != PROTOBUF_C_TYPE_MESSAGE)
        return ft_tp_lex_expected(lx, "':'");
    if (ft_tp_is(lx, '[')) {
        if (f->label != PROTOBUF_C_LABEL_REPEATED)
            return ft_tp_lex_fail(lx, lx->tok_line, lx->tok_col, "field '%s' is not repeated: no [list]",
                                  name);
        return ft_tp_parse_list(lx, fr, f, fi, depth);
    }
    return ft_tp_parse_one(lx, fr, f, fi, depth);
}

/* Fields up to `close` ('}' or '>', opened at open_line:open_col), or to
 * the end of input when close is 0 (the top level). */
static int ft_tp_parse_body(ft_tp_lex_t *lx, ProtobufCMessage *msg, char close, uint32_t open_line,
                            uint32_t open_col, int depth)
{
    const ProtobufCMessageDescriptor *d = msg->descriptor;
    ft_tp_frame_t fr = {msg, calloc(d->n_fields + 1, 1), calloc(d->n_fields + 1, sizeof(size_t))};
    int rc = -1;
    if (!fr.seen || !fr.cap) {
        ft_tp_lex_fail(lx, lx->tok_line, lx->tok_col, "out of memory");
        goto out;
    }
    for (;;) {
        if (close && ft_tp_is(lx, close)) {
            rc = ft_tp_lex_next(lx);
            break;
        }
        if (lx->tok == FT_TP_EOF) {
            if (close)
                ft_tp_lex_fail(lx, lx->tok_line, lx->tok_col,
                               "the input ends inside message %s opened at %u:%u", d->name, open_line,
                               open_col);
            else
                rc = 0;
            break;
        }
        if (ft_tp_parse_field(lx, &fr, depth))
            break;
        if ((ft_tp_is(lx, ',') || ft_tp_is(lx, ';')) && ft_tp_lex_next(lx))
            break;
    }
out:
    free(fr.seen);
    free(fr.cap);
    return rc;
}

ft_status_t ft_textproto_parse(const ProtobufCMessageDescriptor *desc, const char *text, size_t len,
                               const char *input_name, ProtobufCMessage **out_msg)
{
    *out_msg = NULL;
    const char *name = input_name ? input_name : "<text>";
    if (len > FT_TEXTPROTO_MAX_BYTES)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: %zu bytes of text, more than the %u allowed",
                              name, len, FT_TEXTPROTO_MAX_BYTES);
    ProtobufCMessage *m = ft_tp_new_message(desc);
    if (!m)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", name);
    ft_tp_lex_t lx;
    ft_tp_lex_init(&lx, text, len, name);
    if (ft_tp_lex_next(&lx) == 0)
        ft_tp_parse_body(&lx, m, 0, 1, 1, 0);
    if (lx.err) {
        protobuf_c_message_free_unpacked(m, NULL);
        return lx.err;
    }
    *out_msg = m;
    return FT_OK;
}

ft_status_t ft_textproto_parse_file(const ProtobufCMessageDescriptor *desc, const char *path,
                                    ProtobufCMessage **out_msg)
{
    *out_msg = NULL;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return ft_status_make(FT_STATUS_IO, "%s: cannot open", path);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    ft_status_t st = FT_OK;
    while (buf) {
        if (len == cap) {
            if (cap > FT_TEXTPROTO_MAX_BYTES) {
                st = ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: larger than %u bytes", path,
                                    FT_TEXTPROTO_MAX_BYTES);
                break;
            }
            char *p = realloc(buf, cap * 2);
            if (!p)
                break;
            buf = p;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, fp);
        len += got;
        if (got == 0)
            break;
    }
    if (!st && !buf)
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    else if (!st && ferror(fp))
        st = ft_status_make(FT_STATUS_IO, "%s: read error", path);
    else if (!st && len == cap)
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    fclose(fp);
    if (!st)
        st = ft_textproto_parse(desc, buf, len, path, out_msg);
    free(buf);
    return st;
}
