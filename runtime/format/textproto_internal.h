/* Helpers shared by the text-format printer and parser: where a field's
 * value lives in a protobuf-c message struct. */
#ifndef FT_FORMAT_TEXTPROTO_INTERNAL_H
#define FT_FORMAT_TEXTPROTO_INTERNAL_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes one value of the field's type takes in the C struct (and in a
 * repeated field's array). */
static inline size_t ft_tp_value_size(ProtobufCType type)
{
    switch (type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_ENUM: return 4;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: return 8;
    case PROTOBUF_C_TYPE_FLOAT: return sizeof(float);
    case PROTOBUF_C_TYPE_DOUBLE: return sizeof(double);
    case PROTOBUF_C_TYPE_BOOL: return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING: return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES: return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE: return sizeof(ProtobufCMessage *);
    }
    return 0;
}

static inline void *ft_tp_member(const ProtobufCMessage *m, unsigned offset)
{
    return (char *)m + offset;
}

/* 1 for optional (proto2 or proto3 `optional`) scalars that carry has_. */
static inline int ft_tp_has_flag(const ProtobufCFieldDescriptor *f)
{
    return f->label == PROTOBUF_C_LABEL_OPTIONAL && !(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
           f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE;
}

#endif
