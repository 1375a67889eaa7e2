/* JSON-schema-constrained output (srv_json_schema.h). */
#include "srv_json_schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- compiling -------------------------------------------------------- */

static int ft_srv_js_bad(ft_srv_error_t *err, const char *path, const char *what)
{
    ft_srv_error_set(err, 400, "invalid_request_error", "response_format", "'%.300s' %s", path,
                     what);
    /* the param: the path, its end kept when it is longer than the field */
    const size_t n = strlen(path), cap = sizeof(err->param) - 1;
    memcpy(err->param, path + (n > cap ? n - cap : 0), n > cap ? cap : n);
    err->param[n > cap ? cap : n] = '\0';
    return 0;
}

static int ft_srv_js_oom(ft_srv_error_t *err)
{
    ft_srv_error_set(err, 500, "server_error", "", "out of memory compiling the JSON schema");
    return 0;
}

static int ft_srv_js_grow(void **p, uint32_t *cap, uint32_t n, size_t elem)
{
    if (n < *cap) return 1;
    const uint32_t c = *cap ? *cap * 2 : 16;
    void *q = realloc(*p, (size_t)c * elem);
    if (!q) return 0;
    *p = q;
    *cap = c;
    return 1;
}

static uint32_t ft_srv_js_type_bit(const char *t)
{
    static const struct {
        const char *name;
        uint32_t bit;
    } types[] = {{"object", FT_SRV_JT_OBJECT},   {"array", FT_SRV_JT_ARRAY},
                 {"string", FT_SRV_JT_STRING},   {"number", FT_SRV_JT_NUMBER | FT_SRV_JT_INTEGER},
                 {"integer", FT_SRV_JT_INTEGER}, {"boolean", FT_SRV_JT_BOOLEAN},
                 {"null", FT_SRV_JT_NULL}};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (!strcmp(t, types[i].name)) return types[i].bit;
    return 0;
}

/* Keywords that only describe (ignored); everything not here or handled
 * below is refused. */
static int ft_srv_js_descriptive(const char *k)
{
    static const char *const words[] = {"description", "title",    "$schema", "$id",
                                        "default",     "examples", "strict",  "$comment"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (!strcmp(k, words[i])) return 1;
    return 0;
}

static int ft_srv_js_node(ft_srv_js_schema_t *s, const json_t *v, char *path, size_t at, int depth,
                          uint32_t *out, ft_srv_error_t *err);

/* path[at..]: ".key" appended (cut short past the buffer: 320 bytes) */
static size_t ft_srv_js_path(char *path, size_t at, const char *fmt, const char *key)
{
    const int n = snprintf(path + at, 320 - at, fmt, key);
    return n < 0 || at + (size_t)n >= 320 ? 319 : at + (size_t)n;
}

static int ft_srv_js_lit_push(ft_srv_js_schema_t *s, int prop, const char *text, size_t len,
                              uint32_t node, ft_srv_error_t *err)
{
    ft_srv_js_lit_t **arr = prop ? &s->props : &s->lits;
    uint32_t *n = prop ? &s->n_props : &s->n_lits, *cap = prop ? &s->cap_props : &s->cap_lits;
    if (!ft_srv_js_grow((void **)arr, cap, *n, sizeof(**arr))) return ft_srv_js_oom(err);
    char *t = malloc(len + 1);
    if (!t) return ft_srv_js_oom(err);
    memcpy(t, text, len);
    t[len] = '\0';
    (*arr)[(*n)++] = (ft_srv_js_lit_t){.text = t, .len = (uint32_t)len, .node = node};
    return 1;
}

/* "enum" (or "const": one value) */
static int ft_srv_js_enum(ft_srv_js_schema_t *s, uint32_t id, const json_t *values, char *path,
                          ft_srv_error_t *err)
{
    const size_t n = json_array_size(values);
    if (n == 0) return ft_srv_js_bad(err, path, "must be a non-empty array");
    if (n > FT_SRV_JS_MAX_ENUM) return ft_srv_js_bad(err, path, "has more than 64 values");
    s->nodes[id].enum_at = s->n_lits;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(values, i);
        if (json_is_object(e) || json_is_array(e))
            return ft_srv_js_bad(err, path, "may hold only strings, numbers, booleans and null");
        char *text = json_dumps(e, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!text) return ft_srv_js_oom(err);
        const size_t len = strlen(text);
        const int ok = len <= FT_SRV_JS_MAX_LIT
                           ? ft_srv_js_lit_push(s, 0, text, len, 0, err)
                           : ft_srv_js_bad(err, path, "has a value longer than 1024 bytes");
        free(text);
        if (!ok) return 0;
    }
    s->nodes[id].n_enum = (uint32_t)n;
    return 1;
}

static int ft_srv_js_properties(ft_srv_js_schema_t *s, uint32_t id, const json_t *props,
                                const json_t *required, char *path, size_t at, int depth,
                                ft_srv_error_t *err)
{
    const size_t pat = ft_srv_js_path(path, at, ".%s", "properties");
    if (!json_is_object(props)) return ft_srv_js_bad(err, path, "must be an object");
    if (json_object_size(props) > FT_SRV_JS_MAX_PROPS)
        return ft_srv_js_bad(err, path, "has more than 64 properties");
    /* the property entries go in one run: their value nodes first */
    const size_t n = json_object_size(props);
    uint32_t nodes[FT_SRV_JS_MAX_PROPS];
    const char *names[FT_SRV_JS_MAX_PROPS];
    size_t k = 0;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)props, key, v)
    {
        const size_t kat = ft_srv_js_path(path, pat, ".%s", key);
        const size_t len = strlen(key);
        for (size_t i = 0; i < len; i++)
            if (key[i] == '"' || key[i] == '\\' || (unsigned char)key[i] < 0x20)
                return ft_srv_js_bad(err, path,
                                     "is a property name with a quote, backslash or control "
                                     "character (not supported)");
        if (len > FT_SRV_JS_MAX_LIT)
            return ft_srv_js_bad(err, path, "is a property name longer than 1024 bytes");
        if (!ft_srv_js_node(s, v, path, kat, depth + 1, &nodes[k], err)) return 0;
        names[k++] = key;
        path[pat] = '\0';
    }
    s->nodes[id].props_at = s->n_props;
    s->nodes[id].n_props = (uint32_t)n;
    s->nodes[id].has_props = 1;
    for (size_t i = 0; i < n; i++)
        if (!ft_srv_js_lit_push(s, 1, names[i], strlen(names[i]), nodes[i], err)) return 0;
    path[at] = '\0';
    if (!required) return 1;
    const size_t rat = ft_srv_js_path(path, at, ".%s", "required");
    if (!json_is_array(required)) return ft_srv_js_bad(err, path, "must be an array of names");
    size_t i;
    const json_t *r;
    json_array_foreach((json_t *)required, i, r)
    {
        size_t j = 0;
        while (j < n && !(json_is_string(r) && !strcmp(json_string_value(r), names[j])))
            j++;
        if (j == n) {
            char where[48];
            snprintf(where, sizeof(where), "[%zu]", i);
            ft_srv_js_path(path, rat, "%s", where);
            return ft_srv_js_bad(err, path, "names no property of 'properties'");
        }
        s->nodes[id].required |= 1ull << j;
    }
    path[at] = '\0';
    return 1;
}

/* One schema value at path[0..at) into a new node (*out). */
static int ft_srv_js_node(ft_srv_js_schema_t *s, const json_t *v, char *path, size_t at, int depth,
                          uint32_t *out, ft_srv_error_t *err)
{
    path[at] = '\0';
    if (depth > FT_SRV_JSON_MAX_DEPTH) return ft_srv_js_bad(err, path, "is nested too deeply");
    if (json_is_true(v)) { /* the schema `true`: anything */
        *out = 0;
        return 1;
    }
    if (!json_is_object(v)) return ft_srv_js_bad(err, path, "must be a schema object");
    if (s->n_nodes >= FT_SRV_JS_MAX_NODES)
        return ft_srv_js_bad(err, path, "makes the schema too large (4096 nodes)");
    if (!ft_srv_js_grow((void **)&s->nodes, &s->cap_nodes, s->n_nodes, sizeof(*s->nodes)))
        return ft_srv_js_oom(err);
    const uint32_t id = s->n_nodes++;
    memset(&s->nodes[id], 0, sizeof(s->nodes[id]));
    const char *key;
    const json_t *x;
    json_object_foreach((json_t *)v, key, x)
    {
        if (ft_srv_js_descriptive(key) || !strcmp(key, "type") || !strcmp(key, "properties") ||
            !strcmp(key, "required") || !strcmp(key, "items") || !strcmp(key, "enum") ||
            !strcmp(key, "const"))
            continue;
        ft_srv_js_path(path, at, ".%s", key);
        if (!strcmp(key, "additionalProperties")) {
            if (!json_is_boolean(x))
                return ft_srv_js_bad(err, path, "must be a boolean (a schema is not supported)");
            path[at] = '\0';
            continue;
        }
        return ft_srv_js_bad(err, path, "is not supported in response_format json_schema");
    }
    ft_srv_js_node_t *n = &s->nodes[id];
    const json_t *type = json_object_get(v, "type");
    if (type) {
        ft_srv_js_path(path, at, ".%s", "type");
        const size_t nt = json_is_array(type) ? json_array_size(type) : 1;
        if (!json_is_string(type) && !(json_is_array(type) && nt > 0))
            return ft_srv_js_bad(err, path, "must be a type name or an array of them");
        for (size_t i = 0; i < nt; i++) {
            const json_t *t = json_is_array(type) ? json_array_get(type, i) : type;
            const uint32_t bit = json_is_string(t) ? ft_srv_js_type_bit(json_string_value(t)) : 0;
            if (!bit)
                return ft_srv_js_bad(err, path,
                                     "names a type other than object, array, string, number, "
                                     "integer, boolean and null");
            n->types |= bit;
        }
        path[at] = '\0';
    } else {
        n->types = json_object_get(v, "properties") ? FT_SRV_JT_OBJECT : FT_SRV_JT_ANY;
    }
    const json_t *en = json_object_get(v, "enum"), *cn = json_object_get(v, "const");
    if (en && cn) {
        ft_srv_js_path(path, at, ".%s", "const");
        return ft_srv_js_bad(err, path, "and 'enum' together are not supported");
    }
    if (en || cn) {
        ft_srv_js_path(path, at, ".%s", en ? "enum" : "const");
        json_t *one = cn ? json_pack("[O]", cn) : NULL;
        if (cn && !one) return ft_srv_js_oom(err);
        const int ok = ft_srv_js_enum(s, id, en ? en : one, path, err);
        json_decref(one);
        if (!ok) return 0;
        path[at] = '\0';
    }
    const json_t *props = json_object_get(v, "properties");
    if (props &&
        !ft_srv_js_properties(s, id, props, json_object_get(v, "required"), path, at, depth, err))
        return 0;
    if (!props && json_object_get(v, "required")) {
        ft_srv_js_path(path, at, ".%s", "required");
        return ft_srv_js_bad(err, path, "needs 'properties'");
    }
    const json_t *items = json_object_get(v, "items");
    if (items) {
        uint32_t it;
        if (!ft_srv_js_node(s, items, path, ft_srv_js_path(path, at, ".%s", "items"), depth + 1,
                            &it, err))
            return 0;
        s->nodes[id].items = it;
        path[at] = '\0';
    }
    *out = id;
    return 1;
}

int ft_srv_js_compile(const json_t *schema, const char *path, ft_srv_js_schema_t **out,
                      ft_srv_error_t *err)
{
    *out = NULL;
    ft_srv_js_schema_t *s = calloc(1, sizeof(*s));
    if (!s) return ft_srv_js_oom(err);
    s->cap_nodes = 16;
    s->nodes = calloc(s->cap_nodes, sizeof(*s->nodes));
    if (!s->nodes) {
        free(s);
        return ft_srv_js_oom(err);
    }
    s->nodes[0].types = FT_SRV_JT_ANY; /* node 0: anything */
    s->n_nodes = 1;
    char p[320];
    const size_t at = ft_srv_js_path(p, 0, "%s", path);
    uint32_t root = 0;
    if (!ft_srv_js_node(s, schema, p, at, 0, &root, err)) {
        ft_srv_js_free(s);
        return 0;
    }
    p[at] = '\0';
    if (root != 1 || !(s->nodes[1].types & FT_SRV_JT_OBJECT) || s->nodes[1].n_enum) {
        ft_srv_js_free(s);
        return ft_srv_js_bad(err, p, "must describe an object (\"type\": \"object\")");
    }
    s->nodes[1].types = FT_SRV_JT_OBJECT; /* the reply is an object */
    *out = s;
    return 1;
}

void ft_srv_js_free(ft_srv_js_schema_t *s)
{
    if (!s) return;
    for (uint32_t i = 0; i < s->n_props; i++)
        free(s->props[i].text);
    for (uint32_t i = 0; i < s->n_lits; i++)
        free(s->lits[i].text);
    free(s->props);
    free(s->lits);
    free(s->nodes);
    free(s);
}

/* ---- recognizing ------------------------------------------------------ */

/* The node a value starting now has: the root at the top, an array's
 * items, or the member's (set at its key). */
static uint32_t ft_srv_js_value_node(const ft_srv_js_state_t *st)
{
    if (st->lex.depth == 0) return 1;
    const uint32_t top = st->frame[st->depth - 1].node;
    const int object = (int)((st->lex.stack >> (st->lex.depth - 1)) & 1);
    return object ? st->want : st->schema->nodes[top].items;
}

static uint64_t ft_srv_js_all(uint32_t n)
{
    return n >= 64 ? ~0ull : (1ull << n) - 1;
}

/* The candidates of lits[at, +n) that continue with c at byte count. */
static uint64_t ft_srv_js_match(const ft_srv_js_lit_t *lits, uint64_t cand, uint32_t count,
                                unsigned char c)
{
    uint64_t out = 0;
    for (uint64_t m = cand; m; m &= m - 1) {
        const int i = __builtin_ctzll(m);
        if (lits[i].len > count && (unsigned char)lits[i].text[count] == c) out |= 1ull << i;
    }
    return out;
}

static int ft_srv_js_complete(const ft_srv_js_lit_t *lits, uint64_t cand, uint32_t count,
                              int *which)
{
    for (uint64_t m = cand; m; m &= m - 1) {
        const int i = __builtin_ctzll(m);
        if (lits[i].len == count) {
            if (which) *which = i;
            return 1;
        }
    }
    return 0;
}

static int ft_srv_js_vstart(ft_srv_js_state_t *st, unsigned char c)
{
    const ft_srv_js_schema_t *s = st->schema;
    const uint32_t id = ft_srv_js_value_node(st);
    const ft_srv_js_node_t *n = &s->nodes[id];
    st->cur = id;
    st->int_only = 0;
    if (n->n_enum) {
        st->cand = ft_srv_js_match(s->lits + n->enum_at, ft_srv_js_all(n->n_enum), 0, c);
        st->count = 1;
        return st->cand != 0;
    }
    uint32_t need;
    switch (c) {
    case '{':
        need = FT_SRV_JT_OBJECT;
        break;
    case '[':
        need = FT_SRV_JT_ARRAY;
        break;
    case '"':
        need = FT_SRV_JT_STRING;
        break;
    case 't':
    case 'f':
        need = FT_SRV_JT_BOOLEAN;
        break;
    case 'n':
        need = FT_SRV_JT_NULL;
        break;
    default: /* '-' or a digit */
        need = FT_SRV_JT_INTEGER;
        break;
    }
    if (!(n->types & need)) return 0;
    st->int_only = need == FT_SRV_JT_INTEGER && !(n->types & FT_SRV_JT_NUMBER);
    if (c == '{' || c == '[') {
        if (st->depth >= FT_SRV_JSON_MAX_DEPTH) return 0;
        st->frame[st->depth].node = id;
        st->frame[st->depth].seen = 0;
        st->depth++;
    }
    return 1;
}

static int ft_srv_js_hook(ft_srv_json_t *j, int event, unsigned char c)
{
    ft_srv_js_state_t *st = (ft_srv_js_state_t *)j; /* lex is the first member */
    const ft_srv_js_schema_t *s = st->schema;
    const ft_srv_js_node_t *cur = &s->nodes[st->cur];
    const ft_srv_js_node_t *top = st->depth ? &s->nodes[st->frame[st->depth - 1].node] : NULL;
    switch (event) {
    case FT_SRV_JSON_EV_VSTART:
        return ft_srv_js_vstart(st, c);
    case FT_SRV_JSON_EV_VBYTE:
        if (cur->n_enum) {
            st->cand = ft_srv_js_match(s->lits + cur->enum_at, st->cand, st->count++, c);
            return st->cand != 0;
        }
        /* an integer only: no fraction, no exponent */
        return !(st->int_only && (c == '.' || c == 'e' || c == 'E'));
    case FT_SRV_JSON_EV_VEND:
        return !cur->n_enum ||
               ft_srv_js_complete(s->lits + cur->enum_at, st->cand, st->count, NULL);
    case FT_SRV_JSON_EV_KSTART:
        st->free_key = !top->has_props;
        st->cand = ft_srv_js_all(top->n_props) & ~st->frame[st->depth - 1].seen;
        st->count = 0;
        return 1;
    case FT_SRV_JSON_EV_KBYTE:
        if (st->free_key) return 1;
        st->cand = ft_srv_js_match(s->props + top->props_at, st->cand, st->count++, c);
        return st->cand != 0;
    case FT_SRV_JSON_EV_KEND: {
        if (st->free_key) {
            st->want = 0;
            return 1;
        }
        int i;
        if (!ft_srv_js_complete(s->props + top->props_at, st->cand, st->count, &i)) return 0;
        st->frame[st->depth - 1].seen |= 1ull << i;
        st->want = s->props[top->props_at + (uint32_t)i].node;
        return 1;
    }
    case FT_SRV_JSON_EV_COMMA: /* another member only while one is left to give */
        return !top->has_props || (st->frame[st->depth - 1].seen & ft_srv_js_all(top->n_props)) !=
                                      ft_srv_js_all(top->n_props);
    case FT_SRV_JSON_EV_CLOSE:
        if (c == '}' && (st->frame[st->depth - 1].seen & top->required) != top->required) return 0;
        st->depth--;
        return 1;
    default:
        return 0;
    }
}

void ft_srv_js_init(ft_srv_js_state_t *st, const ft_srv_js_schema_t *schema)
{
    memset(st, 0, sizeof(*st));
    ft_srv_json_init(&st->lex);
    st->lex.hook = ft_srv_js_hook;
    st->schema = schema;
}

int ft_srv_js_feed(ft_srv_js_state_t *st, const char *s, size_t n)
{
    return ft_srv_json_feed(&st->lex, s, n);
}

int ft_srv_js_done(const ft_srv_js_state_t *st)
{
    return ft_srv_json_done(&st->lex);
}
