/* The protobuf text format for any protobuf-c message, by reflection over
 * its ProtobufCMessageDescriptor (protobuf-c itself has no text format).
 * Used for hardware profiles and presets (hwprofile.proto), which people
 * read and write by hand.
 *
 * Grammar accepted (a subset of protobuf's text format):
 *   message := { field [',' | ';'] }
 *   field   := NAME ':' value | NAME ':' '[' [value {',' value}] ']'
 *            | NAME [':'] ('{' message '}' | '<' message '>')
 *   value   := number | 'inf' | 'nan' | true | false | ENUM_NAME | string {string}
 *   string  := "..." or '...' with C escapes (\n \t \" \\ \ooo \xHH ...)
 *   '#' starts a comment that runs to the end of the line.
 * Repeated fields are given by repeating the field or with a [list]; a
 * singular field given twice is an error. Enums are written by name (an
 * integer that names a known value is accepted too). Extensions and Any
 * are not supported.
 *
 * Input is untrusted: every error names the input, the line and column
 * (1-based, columns in bytes) and what was expected; nesting is bounded by
 * FT_TEXTPROTO_MAX_DEPTH and the input size by FT_TEXTPROTO_MAX_BYTES; the
 * memory allocated is bounded by a small multiple of the input size. */
#ifndef FT_FORMAT_TEXTPROTO_H
#define FT_FORMAT_TEXTPROTO_H

#include "freetoken.h"

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

#define FT_TEXTPROTO_MAX_DEPTH 32
#define FT_TEXTPROTO_MAX_BYTES (16u << 20) /* 16 MiB of text */

/* Prints msg as text into a malloc'ed, NUL-terminated string (*out_text,
 * released with free; *out_len excludes the NUL). header, when not NULL,
 * is written first as comment lines ("# " + each line). Fields are printed
 * in descriptor order; proto3 fields holding their default are omitted. */
FT_WARN_UNUSED ft_status_t ft_textproto_print(const ProtobufCMessage *msg, const char *header, char **out_text,
                               size_t *out_len);

/* Parses len bytes of text (no NUL needed) as a message of type desc.
 * input_name is used in error messages ("profile.textproto:3:14: ...").
 * *out_msg is allocated with the libc allocator and released with
 * protobuf_c_message_free_unpacked(*out_msg, NULL). */
FT_WARN_UNUSED ft_status_t ft_textproto_parse(const ProtobufCMessageDescriptor *desc, const char *text, size_t len,
                               const char *input_name, ProtobufCMessage **out_msg);

/* Reads a file (at most FT_TEXTPROTO_MAX_BYTES) and parses it. */
FT_WARN_UNUSED ft_status_t ft_textproto_parse_file(const ProtobufCMessageDescriptor *desc, const char *path,
                                    ProtobufCMessage **out_msg);

#endif
