/* Formatter dispatch and shared pieces (srv_format.h). */
#include "srv_format_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

void ft_srv_make_id(char *out, size_t n, const char *prefix)
{
    unsigned char r[12] = {0};
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
        const unsigned long long t =
            (unsigned long long)time(NULL) ^ (unsigned long long)(size_t)out;
        memcpy(r, &t, sizeof(t));
    }
    int at = snprintf(out, n, "%s", prefix);
    for (size_t i = 0; i < sizeof(r) && at > 0 && (size_t)at + 2 < n; i++)
        at += snprintf(out + at, n - (size_t)at, "%02x", r[i]);
}

void ft_srv_fmt_init(ft_srv_fmt_t *f, ft_srv_proto_t proto, const ft_srv_conv_t *c,
                     const ft_engine_t *e, int stream)
{
    memset(f, 0, sizeof(*f));
    f->proto = proto;
    f->conv = c;
    f->engine = e;
    f->stream = stream;
    f->created = (long long)time(NULL);
    f->model = c->model ? c->model : "freetoken";
    f->block_open = -1;
    ft_srv_make_id(f->id, sizeof(f->id),
                   proto == FT_SRV_RESPONSES   ? "resp_"
                   : proto == FT_SRV_OPENAI    ? "chatcmpl-"
                   : proto == FT_SRV_ANTHROPIC ? "msg_"
                                               : "cmpl-");
    f->calls = json_array();
}

void ft_srv_fmt_free(ft_srv_fmt_t *f)
{
    ft_srv_buf_free(&f->out);
    ft_srv_buf_free(&f->content);
    ft_srv_buf_free(&f->reasoning);
    json_decref(f->calls);
    memset(f, 0, sizeof(*f));
}

void ft_srv_sse(ft_srv_buf_t *out, const char *event, json_t *v)
{
    char *s = v ? json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
    json_decref(v);
    if (!s) {
        out->oom = 1;
        return;
    }
    if (event) ft_srv_buf_printf(out, "event: %s\n", event);
    ft_srv_buf_puts(out, "data: ");
    ft_srv_buf_puts(out, s);
    ft_srv_buf_puts(out, "\n\n");
    free(s);
}

json_t *ft_srv_json_lossy(const char *s, size_t n)
{
    json_t *v = json_stringn(s, n);
    if (v) return v;
    /* not UTF-8 (part of a character): each byte outside ASCII -> U+FFFD */
    ft_srv_buf_t b = {0};
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)s[i] < 0x80)
            ft_srv_buf_put(&b, s + i, 1);
        else
            ft_srv_buf_puts(&b, "\xEF\xBF\xBD");
    }
    v = json_stringn(b.data ? b.data : "", b.len);
    ft_srv_buf_free(&b);
    return v;
}

void ft_srv_fmt_begin(ft_srv_fmt_t *f, uint32_t n_prompt)
{
    switch (f->proto) {
    case FT_SRV_OPENAI:
        ft_srv_openai_begin(f);
        break;
    case FT_SRV_COMPLETIONS:
        ft_srv_completions_begin(f);
        break;
    case FT_SRV_RESPONSES:
        ft_srv_responses_begin(f);
        break;
    case FT_SRV_ANTHROPIC:
        ft_srv_anthropic_begin(f, n_prompt);
        break;
    }
}

void ft_srv_fmt_event(void *fmt, const ft_srv_ev_t *ev)
{
    ft_srv_fmt_t *f = fmt;
    switch (f->proto) {
    case FT_SRV_OPENAI:
        ft_srv_openai_event(f, ev);
        break;
    case FT_SRV_COMPLETIONS:
        ft_srv_completions_event(f, ev);
        break;
    case FT_SRV_RESPONSES:
        ft_srv_responses_event(f, ev);
        break;
    case FT_SRV_ANTHROPIC:
        ft_srv_anthropic_event(f, ev);
        break;
    }
}

void ft_srv_fmt_ping(ft_srv_fmt_t *f)
{
    if (f->proto == FT_SRV_ANTHROPIC)
        ft_srv_sse(&f->out, "ping", json_pack("{s:s}", "type", "ping"));
    else if (f->proto == FT_SRV_RESPONSES)
        ft_srv_responses_ping(f); /* Codex drops comments: a data event */
    else
        ft_srv_buf_puts(&f->out, ": ping\n\n");
}

void ft_srv_fmt_end(ft_srv_fmt_t *f)
{
    switch (f->proto) {
    case FT_SRV_OPENAI:
        ft_srv_openai_end(f);
        break;
    case FT_SRV_COMPLETIONS:
        ft_srv_completions_end(f);
        break;
    case FT_SRV_RESPONSES:
        ft_srv_responses_end(f);
        break;
    case FT_SRV_ANTHROPIC:
        ft_srv_anthropic_end(f);
        break;
    }
}

char *ft_srv_fmt_body(ft_srv_fmt_t *f)
{
    return f->proto == FT_SRV_OPENAI        ? ft_srv_openai_body(f)
           : f->proto == FT_SRV_COMPLETIONS ? ft_srv_completions_body(f)
           : f->proto == FT_SRV_RESPONSES   ? ft_srv_responses_body(f)
                                            : ft_srv_anthropic_body(f);
}

/* Anthropic's error types for our (OpenAI-named) ones. */
static const char *ft_srv_anthropic_error_type(const ft_srv_error_t *err)
{
    switch (err->http) {
    case 400:
        return "invalid_request_error";
    case 401:
        return "authentication_error";
    case 403:
        return "permission_error";
    case 404:
        return "not_found_error";
    case 413:
        return "request_too_large";
    case 429:
        return "rate_limit_error";
    case 503:
    case 529:
        return "overloaded_error";
    default:
        return "api_error";
    }
}

static json_t *ft_srv_error_json(ft_srv_proto_t proto, const ft_srv_error_t *err)
{
    if (proto == FT_SRV_ANTHROPIC)
        return json_pack("{s:s,s:{s:s,s:s}}", "type", "error", "error", "type",
                         ft_srv_anthropic_error_type(err), "message", err->message);
    return json_pack("{s:{s:s,s:s,s:s?,s:s?}}", "error", "message", err->message, "type",
                     err->type ? err->type : "server_error", "param",
                     err->param[0] ? err->param : NULL, "code", err->code[0] ? err->code : NULL);
}

char *ft_srv_error_body(ft_srv_proto_t proto, const ft_srv_error_t *err)
{
    json_t *v = ft_srv_error_json(proto, err);
    char *s = v ? json_dumps(v, JSON_COMPACT) : NULL;
    json_decref(v);
    return s;
}

void ft_srv_error_frame(ft_srv_proto_t proto, const ft_srv_error_t *err, ft_srv_buf_t *out)
{
    ft_srv_sse(out, proto == FT_SRV_ANTHROPIC ? "error" : NULL, ft_srv_error_json(proto, err));
    if (proto != FT_SRV_ANTHROPIC) ft_srv_buf_puts(out, "data: [DONE]\n\n");
}
