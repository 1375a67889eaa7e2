/* Parsing one scalar value of the text format into a protobuf-c field. */
#ifndef FT_FORMAT_TEXTPROTO_VALUE_H
#define FT_FORMAT_TEXTPROTO_VALUE_H

#include "textproto_lex.h"

#include <protobuf-c/protobuf-c.h>

/* Parses the current token(s) as a value of f's (non-message) type into
 * dst (the field's storage: a scalar, a char * or a ProtobufCBinaryData
 * the caller frees) and moves past it. Returns 0 or -1 (lx->err set). */
int ft_tp_parse_scalar(ft_tp_lex_t *lx, const ProtobufCFieldDescriptor *f, void *dst);

#endif
