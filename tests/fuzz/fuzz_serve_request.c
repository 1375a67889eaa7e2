/* Fuzzes ft serve's request handling in memory: the input's first byte
 * picks the protocol (bit 0 set: Anthropic messages, bit 1 then says
 * count_tokens; bit 0 clear: bit 2 picks the Responses API, else bit 1
 * OpenAI completions over chat completions), the rest is the request body. A body that parses is
 * rendered with every family's renderer (ChatML, Qwen3, Qwen3.5, harmony,
 * DeepSeek, GLM, Qwen3-Coder); whatever the input, its bytes are also fed to the output
 * parser as model text in the dialect (first byte >> 3) % 5 picks (Qwen3
 * JSON calls, XML calls, DeepSeek, harmony, GLM), whole and byte by byte,
 * which must give the same events. Errors must carry an
 * HTTP status and a message; nothing may crash or leak. */
#include "srv_format.h"
#include "srv_outparse.h"
#include "srv_template.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The events as one string, consecutive text of one kind merged (what a
 * client sees does not depend on how the text was split; arguments stream
 * in pieces of any size between a call's start and end). */
typedef struct ft_fuzz_rec {
    ft_srv_buf_t b;
    int last;
} ft_fuzz_rec_t;

static void ft_fuzz_record(void *user, const ft_srv_ev_t *ev)
{
    ft_fuzz_rec_t *r = user;
    const int text = ev->kind == FT_SRV_EV_REASONING || ev->kind == FT_SRV_EV_CONTENT ||
                     ev->kind == FT_SRV_EV_TOOL_ARGS;
    if (text && ev->len == 0) __builtin_trap(); /* no empty text events */
    if (!text || r->last != (int)ev->kind)
        ft_srv_buf_printf(&r->b, "\n#%d:%u:%s#", (int)ev->kind, ev->tool_index,
                          ev->name ? ev->name : "");
    ft_srv_buf_put(&r->b, ev->text, ev->len);
    r->last = text ? (int)ev->kind : -1;
}

/* Tools for the XML dialect's typed parameters. */
static const char ft_fuzz_tools[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": "
    "\"object\", \"properties\": {\"n\": {\"type\": \"integer\"}, \"s\": {\"type\": "
    "\"string\"}}}}}]";

static char *ft_fuzz_parse(const char *text, size_t n, size_t step, int tools, ft_srv_dialect_t d,
                           const json_t *defs)
{
    ft_fuzz_rec_t r = {.last = -1};
    ft_srv_outparse_t p;
    ft_srv_outparse_init(&p, d == FT_SRV_DIALECT_XML, tools, ft_fuzz_record, &r);
    ft_srv_outparse_set_dialect(&p, d, defs);
    for (size_t at = 0; at < n; at += step)
        ft_srv_outparse_feed(&p, text + at, n - at < step ? n - at : step);
    ft_srv_outparse_finish(&p);
    ft_srv_outparse_free(&p);
    return ft_srv_buf_take(&r.b);
}

/* Every error must make a body in both shapes (its text may quote the
 * request's bytes). */
static void ft_fuzz_error_bodies(const ft_srv_error_t *err)
{
    for (int p = FT_SRV_OPENAI; p <= FT_SRV_RESPONSES; p++) {
        char *b = ft_srv_error_body((ft_srv_proto_t)p, err);
        if (!b) __builtin_trap();
        free(b);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    const int anthropic = data[0] & 1;
    const char *body = (const char *)data + 1;
    const size_t n = size - 1;
    json_t *root = NULL;
    ft_srv_error_t err;
    if (ft_srv_json_parse(body, n, &root, &err)) {
        ft_srv_conv_t c;
        ft_srv_conv_init(&c);
        const int ok = anthropic     ? ft_srv_anthropic_parse(root, data[0] & 2, &c, &err)
                       : data[0] & 4 ? ft_srv_responses_parse(root, &c, &err)
                       : data[0] & 2 ? ft_srv_completions_parse(root, 1000, &c, &err)
                                     : ft_srv_openai_parse(root, 1000, &c, &err);
        if (ok) {
            for (int f = FT_SRV_FAMILY_CHATML; f <= FT_SRV_FAMILY_QWEN3_CODER; f++) {
                ft_srv_buf_t out = {0};
                if (!ft_srv_render((ft_srv_family_t)f, &c, 1, &out, &err) &&
                    (err.http < 400 || !err.message[0]))
                    __builtin_trap();
                ft_srv_buf_free(&out);
            }
        } else if (err.http < 400 || !err.message[0]) {
            __builtin_trap();
        } else {
            ft_fuzz_error_bodies(&err);
        }
        ft_srv_conv_free(&c);
        json_decref(root);
    } else if (err.http != 400 || !err.message[0]) {
        __builtin_trap();
    } else {
        ft_fuzz_error_bodies(&err);
    }
    /* the same bytes as model output (text, not necessarily UTF-8) */
    json_t *defs = json_loads(ft_fuzz_tools, 0, NULL);
    const ft_srv_dialect_t d = (ft_srv_dialect_t)(((unsigned)data[0] >> 3) % 5);
    char *whole = ft_fuzz_parse(body, n, n ? n : 1, 1, d, defs);
    char *bytes = ft_fuzz_parse(body, n, 1, 1, d, defs);
    if (!whole || !bytes || strcmp(whole, bytes) != 0) __builtin_trap();
    free(whole);
    free(bytes);
    json_decref(defs);
    return 0;
}
