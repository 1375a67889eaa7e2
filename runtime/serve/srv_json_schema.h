/* response_format {"type": "json_schema", "json_schema": {"schema": S}}:
 * output constrained to a JSON object that S describes, through the same
 * sampler filter as json_object (srv_json_filter.h).
 *
 * The supported subset (what structured-output clients send): "type"
 * (object, array, string, number, integer, boolean, null, or an array of
 * them: ["string", "null"]), "properties", "required",
 * "additionalProperties" (a boolean: only the listed properties are ever
 * generated, which satisfies either), "items", "enum" and "const" (of
 * strings, numbers, booleans and null), nested to FT_SRV_JSON_MAX_DEPTH;
 * {} and an object without "properties" allow any JSON there. Descriptive
 * keywords ("description", "title", "$schema", "default", "examples",
 * "strict") are ignored. Anything else ("anyOf", "$ref", "pattern",
 * "minimum", ...) is refused with a 400 that names its JSON path.
 *
 * Compiled into a table of nodes; the recognizer is ft_srv_json_t (which
 * keeps the text JSON) with a schema layer on its events: a value's type
 * at its first byte, enum values and property names matched byte by byte
 * (each property at most once, "}" only after every required one, "," only
 * while one is left), integers without '.' or an exponent. The members of
 * an object may come in any order. */
#ifndef FT_SERVE_SRV_JSON_SCHEMA_H
#define FT_SERVE_SRV_JSON_SCHEMA_H

#include "srv_conv.h"
#include "srv_json_filter.h"

#include <jansson.h>
#include <stdint.h>

/* types a node allows (bits) */
#define FT_SRV_JT_OBJECT 0x01u
#define FT_SRV_JT_ARRAY 0x02u
#define FT_SRV_JT_STRING 0x04u
#define FT_SRV_JT_NUMBER 0x08u  /* any number */
#define FT_SRV_JT_INTEGER 0x10u /* digits only (a number allows these too) */
#define FT_SRV_JT_BOOLEAN 0x20u
#define FT_SRV_JT_NULL 0x40u
#define FT_SRV_JT_ANY 0x7fu

/* limits a schema is refused beyond (400) */
#define FT_SRV_JS_MAX_NODES 4096
#define FT_SRV_JS_MAX_PROPS 64 /* per object */
#define FT_SRV_JS_MAX_ENUM 64  /* values per enum */
#define FT_SRV_JS_MAX_LIT 1024 /* bytes of one enum value or property name */

typedef struct ft_srv_js_node {
    uint32_t types;    /* FT_SRV_JT_* */
    uint32_t items;    /* an array's items: a node (0: anything) */
    uint32_t props_at; /* this object's properties: props[props_at, +n_props) */
    uint32_t n_props;
    uint32_t has_props; /* "properties" given (else an object may have any members) */
    uint64_t required;  /* bit i: properties[i] is required */
    uint32_t enum_at;   /* enum values: lits[enum_at, +n_enum); 0 values: no enum */
    uint32_t n_enum;
} ft_srv_js_node_t;

typedef struct ft_srv_js_lit {
    char *text; /* a property name (raw bytes), or an enum value as compact JSON */
    uint32_t len;
    uint32_t node; /* a property's value */
} ft_srv_js_lit_t;

typedef struct ft_srv_js_schema {
    ft_srv_js_node_t *nodes; /* [0]: anything; [1]: the root */
    uint32_t n_nodes, cap_nodes;
    ft_srv_js_lit_t *props, *lits;
    uint32_t n_props, cap_props, n_lits, cap_lits;
} ft_srv_js_schema_t;

/* Compiles schema (the value at JSON path `path`, e.g.
 * "response_format.json_schema.schema") into a new *out. 0 and *err (a
 * 400 naming the path of what is wrong or unsupported) on failure. */
int ft_srv_js_compile(const json_t *schema, const char *path, ft_srv_js_schema_t **out,
                      ft_srv_error_t *err);
void ft_srv_js_free(ft_srv_js_schema_t *s);

/* The recognizer's state: copied by value (the filter tries each token on
 * a copy), so it holds no pointers into itself. */
typedef struct ft_srv_js_state {
    ft_srv_json_t lex; /* first: the hook finds the state from it */
    const ft_srv_js_schema_t *schema;
    uint32_t want;  /* the node of the next member's value (after its key) */
    uint32_t cur;   /* the node of the scalar being read */
    uint64_t cand;  /* enum values or property names still matching */
    uint32_t count; /* bytes of them matched */
    uint8_t depth;
    uint8_t free_key; /* the key being read is of an object with any members */
    uint8_t int_only; /* the scalar being read is a number that must be an integer */
    struct {
        uint32_t node;
        uint64_t seen; /* properties given so far */
    } frame[FT_SRV_JSON_MAX_DEPTH];
} ft_srv_js_state_t;

void ft_srv_js_init(ft_srv_js_state_t *st, const ft_srv_js_schema_t *schema);
/* Feeds n bytes: 1 while the text is a prefix of a JSON object that
 * matches the schema, 0 (state unspecified) when not. */
int ft_srv_js_feed(ft_srv_js_state_t *st, const char *s, size_t n);
/* 1 once the object is complete. */
int ft_srv_js_done(const ft_srv_js_state_t *st);

#endif
