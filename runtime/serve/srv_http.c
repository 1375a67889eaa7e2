/* The HTTP server of ft serve on libmicrohttpd (serve.h): one thread per
 * connection (MHD_USE_THREAD_PER_CONNECTION), so a handler may block on
 * its generation; streamed replies come from a reader callback that
 * waits for tokens in short slices, sends a keepalive when nothing came
 * for FT_SRV_KEEPALIVE_S, and cancels the request when the client's
 * socket closes. Limits: body bytes (413 in the protocol's shape),
 * header memory, open connections, an idle timeout. */
#include "serve.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <strings.h>

#include "srv_chat.h"
#include "srv_page.h"

#define FT_SRV_KEEPALIVE_S 10.0
#define FT_SRV_N_TTFT_BUCKETS 10
#define FT_SRV_N_TOK_BUCKETS 8

typedef struct ft_srv {
    ft_srv_model_t model;
    ft_srv_pool_t pool;
    ft_serve_options_t o;
    /* --script: the replies, taken in turn by successive chat requests */
    char *script_text;
    char **replies;
    size_t n_replies;
    _Atomic size_t next_reply;
    const char *no_tools_reply; /* "%% no-tools": for requests that offer no tools */
    /* GET /v1/stats: chat requests that ran (errors: finished with an
     * engine error; cancelled: their client went away first) */
    _Atomic uint64_t n_active, n_completed, n_cancelled, n_errors;
    _Atomic uint64_t n_prompt_tokens, n_cached_tokens, n_generated_tokens;
    /* GET /metrics: time to first token and per-token latency histograms */
    pthread_mutex_t metrics_mu;
    uint64_t ttft_counts[FT_SRV_N_TTFT_BUCKETS + 1], tok_counts[FT_SRV_N_TOK_BUCKETS + 1];
    double ttft_sum, tok_sum;
    uint64_t tok_n;
    /* The idle verification pass (ft_srv_verifier): expert blobs it has
     * still to check, and how it is stopped. */
    _Atomic uint64_t verify_left;
    pthread_t verifier;
    int verifier_started, verifier_stop;
    pthread_mutex_t verifier_mu;
    pthread_cond_t verifier_cv;
} ft_srv_t;

/* The idle verification pass: while no request runs, the expert blobs lazy
 * verification has not checked yet, FT_SRV_VERIFY_SLICE bytes at a time
 * (a few milliseconds of reading, so a request that arrives waits little
 * for the disk), until every one is checked; a damaged one shows in
 * /health and /metrics before any request routes to it. */
#define FT_SRV_VERIFY_SLICE (32ull << 20)
static void *ft_srv_verifier(void *arg)
{
    ft_srv_t *srv = arg;
    uint64_t left = 1;
    pthread_mutex_lock(&srv->verifier_mu);
    while (!srv->verifier_stop && left) {
        if (atomic_load(&srv->n_active) == 0) {
            pthread_mutex_unlock(&srv->verifier_mu);
            ft_status_t st = ft_engine_verify_some(srv->model.engine, FT_SRV_VERIFY_SLICE, &left);
            if (st) fprintf(stderr, "ft serve: %s\n", ft_status_message(st));
            ft_status_free(st);
            atomic_store(&srv->verify_left, left);
            pthread_mutex_lock(&srv->verifier_mu);
            continue;
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 200 * 1000000L; /* look again in 200 ms */
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&srv->verifier_cv, &srv->verifier_mu, &until);
    }
    pthread_mutex_unlock(&srv->verifier_mu);
    return NULL;
}

static const double ft_srv_ttft_buckets[FT_SRV_N_TTFT_BUCKETS] = {0.05, 0.1, 0.25, 0.5, 1,
                                                                  2.5,  5,   10,   30,  60};
static const double ft_srv_tok_buckets[FT_SRV_N_TOK_BUCKETS] = {0.005, 0.01, 0.025, 0.05,
                                                                0.1,   0.25, 0.5,   1};

/* Counts x, weight times, in the first bucket whose bound holds it (the
 * last: +Inf). */
static void ft_srv_observe(uint64_t *counts, const double *bounds, int n, double x, uint64_t weight)
{
    int i = 0;
    while (i < n && x > bounds[i])
        i++;
    counts[i] += weight;
}

/* One connection's request: its body as it arrives. */
typedef struct ft_srv_conn {
    ft_srv_buf_t body;
    int too_big;
} ft_srv_conn_t;

/* A streamed reply, owned by its MHD response (freed by its free
 * callback when the response is done or the client went away). */
typedef struct ft_srv_stream {
    ft_srv_conv_t conv;
    ft_srv_gen_t gen;
    ft_srv_fmt_t fmt;
    ft_srv_t *srv;
    int fd;
    int started; /* the generation was submitted (counted in the stats) */
    int ended;   /* it finished and its last frames were made */
} ft_srv_stream_t;

void ft_serve_options_init(ft_serve_options_t *o)
{
    memset(o, 0, sizeof(*o));
    o->host = "127.0.0.1";
    o->port = 8080;
    o->model_id = "freetoken";
    o->n_ctx = 4096;
    o->max_body_bytes = 64ull << 20;
    o->max_connections = 64;
    o->conn_timeout_s = 120;
    o->n_slots = 4;
    o->prefix_cache = FT_SERVE_CACHE_ANCHORS;
}

static int ft_srv_addr_is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return 0;
}

int ft_serve_host_is_loopback(const char *host)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    if (!host || getaddrinfo(host, NULL, &hints, &res) != 0) return 0;
    int all = res != NULL;
    for (struct addrinfo *r = res; r; r = r->ai_next)
        if (!ft_srv_addr_is_loopback(r->ai_addr)) all = 0;
    freeaddrinfo(res);
    return all;
}

/* ---- responses ---------------------------------------------------------- */

static enum MHD_Result ft_srv_reply(struct MHD_Connection *conn, unsigned status, char *body,
                                    const char *content_type)
{
    if (!body) {
        body = strdup("{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\"}}");
        status = 500;
        if (!body) return MHD_NO;
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", content_type);
    const enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result ft_srv_reply_json(struct MHD_Connection *conn, unsigned status, json_t *v)
{
    char *s = v ? json_dumps(v, JSON_COMPACT) : NULL;
    json_decref(v);
    return ft_srv_reply(conn, status, s, "application/json");
}

static enum MHD_Result ft_srv_reply_error(struct MHD_Connection *conn, ft_srv_proto_t proto,
                                          const ft_srv_error_t *err)
{
    return ft_srv_reply(conn, (unsigned)err->http, ft_srv_error_body(proto, err),
                        "application/json");
}

/* ---- streaming ------------------------------------------------------------ */

static ssize_t ft_srv_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    ft_srv_stream_t *s = cls;
    while (s->fmt.out.len == 0) {
        if (s->ended || s->fmt.out.oom) return MHD_CONTENT_READER_END_OF_STREAM;
        const int r = ft_srv_gen_step(&s->gen, s->fd, FT_SRV_KEEPALIVE_S);
        if (r == -2) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (r == -1) {
            ft_srv_fmt_end(&s->fmt);
            s->ended = 1;
        } else if (r == 0) {
            ft_srv_fmt_ping(&s->fmt);
        }
    }
    const size_t n = s->fmt.out.len < max ? s->fmt.out.len : max;
    memcpy(buf, s->fmt.out.data, n);
    ft_srv_buf_consume(&s->fmt.out, n);
    return (ssize_t)n;
}

static void ft_srv_stream_free(void *cls)
{
    ft_srv_stream_t *s = cls;
    if (s->started) {
        ft_srv_t *srv = s->srv;
        atomic_fetch_sub(&srv->n_active, 1);
        atomic_fetch_add(&srv->n_prompt_tokens, s->gen.n_prompt);
        atomic_fetch_add(&srv->n_cached_tokens, s->gen.n_cached);
        const ft_srv_gen_t *g = &s->gen;
        pthread_mutex_lock(&srv->metrics_mu);
        if (g->n_generated) {
            srv->ttft_sum += g->t_first - g->t_start;
            ft_srv_observe(srv->ttft_counts, ft_srv_ttft_buckets, FT_SRV_N_TTFT_BUCKETS,
                           g->t_first - g->t_start, 1);
        }
        if (g->n_generated > 1) {
            const double per = (g->t_last - g->t_first) / (g->n_generated - 1);
            srv->tok_sum += per * (g->n_generated - 1);
            srv->tok_n += g->n_generated - 1;
            /* one sample per token: the request's mean */
            ft_srv_observe(srv->tok_counts, ft_srv_tok_buckets, FT_SRV_N_TOK_BUCKETS, per,
                           g->n_generated - 1);
        }
        pthread_mutex_unlock(&srv->metrics_mu);
        atomic_fetch_add(&srv->n_generated_tokens, s->gen.n_generated);
        atomic_fetch_add(!s->ended                              ? &srv->n_cancelled
                         : s->gen.finish == FT_SRV_FINISH_ERROR ? &srv->n_errors
                                                                : &srv->n_completed,
                         1);
    }
    ft_srv_gen_free(&s->gen); /* cancels a generation still running */
    ft_srv_fmt_free(&s->fmt);
    ft_srv_conv_free(&s->conv);
    free(s);
}

static int ft_srv_conn_fd(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

/* ---- scripted output (--script) -------------------------------------------- */

/* The reply for a chat request: the "%% no-tools" reply for one that
 * offers no tools (agents' titles and summaries) when the script has one,
 * else the next of the others in turn; NULL (sample for real) when none. */
static const char *ft_srv_next_reply(ft_srv_t *srv, int has_tools)
{
    if (!has_tools && srv->no_tools_reply) return srv->no_tools_reply;
    if (!srv->n_replies) return NULL;
    return srv->replies[atomic_fetch_add(&srv->next_reply, 1) % srv->n_replies];
}

/* A separator line at p (a line's start): 1 for "%%", 2 for
 * "%% no-tools", 0 for anything else; *len: its length without the newline. */
static int ft_srv_script_sep(const char *p, size_t *len)
{
    static const char marked[] = "%% no-tools";
    if (!strncmp(p, marked, sizeof(marked) - 1) &&
        (p[sizeof(marked) - 1] == '\n' || p[sizeof(marked) - 1] == '\0')) {
        *len = sizeof(marked) - 1;
        return 2;
    }
    if (p[0] == '%' && p[1] == '%' && (p[2] == '\n' || p[2] == '\0')) {
        *len = 2;
        return 1;
    }
    return 0;
}

/* The file's replies are separated by lines that are exactly "%%"; the
 * newline before such a line, and one at the end of the file, are not
 * part of a reply. A separator "%% no-tools" instead marks the reply after
 * it as the one for requests that offer no tools (at most one such). */
static ft_status_t ft_srv_load_script(ft_srv_t *srv, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return ft_status_make(FT_STATUS_IO, "--script %s: cannot open", path);
    ft_srv_buf_t b = {0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        ft_srv_buf_put(&b, chunk, n);
    fclose(f);
    if (b.oom) {
        ft_srv_buf_free(&b);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "--script %s", path);
    }
    char *text = ft_srv_buf_take(&b);
    size_t len = strlen(text);
    if (len && text[len - 1] == '\n') text[--len] = '\0';
    size_t cap = 1;
    for (const char *p = text; (p = strstr(p, "\n%%")); p += 3)
        cap++;
    srv->replies = calloc(cap, sizeof(*srv->replies));
    if (!srv->replies) {
        free(text);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "--script %s", path);
    }
    srv->script_text = text;
    char *p = text;
    int kind = 1; /* what the reply starting at p is: 1 taken in turn, 2 the no-tools one */
    size_t sl = 0;
    const int lead = ft_srv_script_sep(text, &sl); /* the file may start with a separator */
    if (lead) {
        kind = lead;
        p = text + sl + (text[sl] == '\n');
    }
    for (;;) {
        char *sep = NULL;
        int next = 0;
        for (char *q = strchr(p, '\n'); q; q = strchr(q + 1, '\n'))
            if ((next = ft_srv_script_sep(q + 1, &sl))) {
                sep = q;
                break;
            }
        if (sep) *sep = '\0';
        if (kind == 2) {
            if (srv->no_tools_reply)
                return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                                      "--script %s: more than one '%%%% no-tools' reply", path);
            srv->no_tools_reply = p;
        } else if (srv->n_replies < cap) {
            srv->replies[srv->n_replies++] = p;
        }
        if (!sep) break;
        kind = next;
        p = sep + 1 + sl + (sep[1 + sl] == '\n');
    }
    return FT_OK;
}

/* ---- endpoints ------------------------------------------------------------ */

static enum MHD_Result ft_srv_chat(ft_srv_t *srv, struct MHD_Connection *conn, ft_srv_proto_t proto,
                                   const ft_srv_buf_t *body)
{
    ft_srv_stream_t *s = calloc(1, sizeof(*s));
    if (!s) return MHD_NO;
    s->srv = srv;
    ft_srv_conv_init(&s->conv);
    ft_srv_error_t err;
    ft_srv_prompt_t p;
    if (!ft_srv_prepare(&srv->model, proto, 0, body->data ? body->data : "", body->len, &s->conv,
                        &p, &err)) {
        ft_srv_conv_free(&s->conv);
        free(s);
        return ft_srv_reply_error(conn, proto, &err);
    }
    if (!s->conv.model) s->conv.model = srv->o.model_id;
    ft_srv_fmt_init(&s->fmt, proto, &s->conv, srv->model.engine, s->conv.stream);
    s->fmt.gen = &s->gen;
    s->fd = ft_srv_conn_fd(conn);
    const int started = ft_srv_gen_start_anchored(
        &s->gen, &srv->pool, &s->conv, p.ids, p.n_ids, p.bounds, p.n_bounds,
        p.side ? FT_CACHE_LOW : FT_CACHE_NORMAL, p.reasoning_open, p.tools, p.dialect,
        p.call_prefix, ft_srv_next_reply(srv, s->conv.tools != NULL), ft_srv_fmt_event, &s->fmt,
        &err);
    ft_srv_prompt_free(&srv->model, &p);
    if (!started) {
        ft_srv_stream_free(s);
        return ft_srv_reply_error(conn, proto, &err);
    }
    s->started = 1;
    atomic_fetch_add(&srv->n_active, 1);
    if (s->conv.stream) {
        ft_srv_fmt_begin(&s->fmt, s->gen.n_prompt);
        struct MHD_Response *r = MHD_create_response_from_callback(
            MHD_SIZE_UNKNOWN, 16384, ft_srv_stream_read, s, ft_srv_stream_free);
        if (!r) {
            ft_srv_stream_free(s);
            return MHD_NO;
        }
        MHD_add_response_header(r, "Content-Type", "text/event-stream");
        MHD_add_response_header(r, "Cache-Control", "no-cache");
        const enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
        return ret;
    }
    int rc;
    while ((rc = ft_srv_gen_step(&s->gen, s->fd, 3600.0)) >= 0) {
    }
    if (rc == -2) {
        ft_srv_stream_free(s);
        return MHD_NO; /* the client is gone */
    }
    s->ended = 1;
    enum MHD_Result ret;
    if (s->gen.finish == FT_SRV_FINISH_ERROR) {
        ft_srv_error_set(&err, 500, "server_error", "", "%s", s->gen.error);
        ret = ft_srv_reply_error(conn, proto, &err);
    } else {
        ret = ft_srv_reply(conn, MHD_HTTP_OK, ft_srv_fmt_body(&s->fmt), "application/json");
    }
    ft_srv_stream_free(s);
    return ret;
}

/* /v1/messages/count_tokens and /v1/responses/input_tokens: what the
 * generating endpoint would evaluate, counted the same way. */
static enum MHD_Result ft_srv_count_tokens(ft_srv_t *srv, struct MHD_Connection *conn,
                                           ft_srv_proto_t proto, const ft_srv_buf_t *body)
{
    ft_srv_conv_t c;
    ft_srv_conv_init(&c);
    ft_srv_error_t err;
    ft_srv_prompt_t p;
    if (!ft_srv_prepare(&srv->model, proto, 1, body->data ? body->data : "", body->len, &c, &p,
                        &err)) {
        ft_srv_conv_free(&c);
        return ft_srv_reply_error(conn, proto, &err);
    }
    const int n = (int)p.n_ids;
    ft_srv_prompt_free(&srv->model, &p);
    ft_srv_conv_free(&c);
    if (proto == FT_SRV_RESPONSES)
        return ft_srv_reply_json(
            conn, MHD_HTTP_OK,
            json_pack("{s:s,s:i}", "object", "response.input_tokens", "input_tokens", n));
    return ft_srv_reply_json(conn, MHD_HTTP_OK, json_pack("{s:i}", "input_tokens", n));
}

static enum MHD_Result ft_srv_stats(ft_srv_t *srv, struct MHD_Connection *conn)
{
    ft_engine_stats_t es;
    ft_engine_stats(srv->model.engine, &es);
    return ft_srv_reply_json(
        conn, MHD_HTTP_OK,
        json_pack("{s:{s:s,s:i,s:s},s:{s:I,s:I,s:I,s:I},s:{s:I,s:I,s:I},"
                  "s:{s:I,s:I,s:I,s:I,s:I,s:I,s:b}}",
                  "model", "id", srv->o.model_id, "ctx", (int)srv->model.n_ctx, "template",
                  ft_srv_family_name(srv->model.family), "requests", "active",
                  (json_int_t)srv->n_active, "completed", (json_int_t)srv->n_completed, "cancelled",
                  (json_int_t)srv->n_cancelled, "errors", (json_int_t)srv->n_errors, "tokens",
                  "prompt", (json_int_t)srv->n_prompt_tokens, "cached",
                  (json_int_t)srv->n_cached_tokens, "generated",
                  (json_int_t)srv->n_generated_tokens, "engine", "tokens", (json_int_t)es.n_tokens,
                  "steps", (json_int_t)es.sched_steps, "expert_hits", (json_int_t)es.expert_hits,
                  "expert_misses", (json_int_t)es.expert_misses, "bytes_copied",
                  (json_int_t)es.bytes_copied, "expert_bytes_read",
                  (json_int_t)es.expert_bytes_read, "predicted", es.predicted));
}

static void ft_srv_histogram(ft_srv_buf_t *b, const char *name, const char *help,
                             const uint64_t *counts, const double *bounds, int n, double sum)
{
    ft_srv_buf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (int i = 0; i < n; i++) {
        cum += counts[i];
        ft_srv_buf_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name, bounds[i],
                          (unsigned long long)cum);
    }
    cum += counts[n];
    ft_srv_buf_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name,
                      (unsigned long long)cum, name, sum, name, (unsigned long long)cum);
}

static void ft_srv_metric(ft_srv_buf_t *b, const char *name, const char *type, const char *help,
                          uint64_t v)
{
    ft_srv_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name,
                      (unsigned long long)v);
}

/* GET /health: 200 "ok", or 503 "degraded" once a weight blob was found
 * damaged (by a request that routed to it or by the idle verification
 * pass): the engine still answers requests that do not touch it, but a
 * supervisor should replace the bundle. */
static enum MHD_Result ft_srv_health(ft_srv_t *srv, struct MHD_Connection *conn)
{
    ft_engine_stats_t es;
    ft_engine_stats(srv->model.engine, &es);
    json_t *w = json_pack("{s:I,s:I,s:I}", "checked", (json_int_t)es.blobs_checked, "damaged",
                          (json_int_t)es.blobs_damaged, "unchecked",
                          (json_int_t)atomic_load(&srv->verify_left));
    if (w && es.blobs_damaged) json_object_set_new(w, "error", json_string(es.verify_damage));
    if (w && es.verify_note && es.verify_note[0])
        json_object_set_new(w, "note", json_string(es.verify_note));
    return ft_srv_reply_json(
        conn, es.blobs_damaged ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_OK,
        json_pack("{s:s,s:o*}", "status", es.blobs_damaged ? "degraded" : "ok", "weights", w));
}

/* GET /metrics: Prometheus text exposition. */
static enum MHD_Result ft_srv_metrics(ft_srv_t *srv, struct MHD_Connection *conn)
{
    ft_engine_stats_t es;
    ft_engine_stats(srv->model.engine, &es);
    ft_srv_buf_t b = {0};
    ft_srv_buf_printf(&b,
                      "# HELP ft_requests_total Generating requests that ran, by how they ended.\n"
                      "# TYPE ft_requests_total counter\n"
                      "ft_requests_total{outcome=\"completed\"} %llu\n"
                      "ft_requests_total{outcome=\"cancelled\"} %llu\n"
                      "ft_requests_total{outcome=\"error\"} %llu\n",
                      (unsigned long long)srv->n_completed, (unsigned long long)srv->n_cancelled,
                      (unsigned long long)srv->n_errors);
    ft_srv_metric(&b, "ft_requests_active", "gauge", "Generating requests running or queued.",
                  srv->n_active);
    ft_srv_metric(&b, "ft_prompt_tokens_total", "counter", "Prompt tokens of finished requests.",
                  srv->n_prompt_tokens);
    ft_srv_metric(&b, "ft_cached_prompt_tokens_total", "counter",
                  "Prompt tokens restored from the prefix cache (or a kept session) instead of "
                  "evaluated.",
                  srv->n_cached_tokens);
    ft_srv_metric(&b, "ft_prefix_cache_hits_total", "counter",
                  "Requests that restored part of their prompt from the prefix cache.",
                  srv->pool.anchors.n_prefix_hits);
    ft_srv_metric(&b, "ft_anchor_hits_total", "counter",
                  "Requests that restored their prompt up to one of its message boundaries (an "
                  "anchor).",
                  srv->pool.anchors.n_anchor_hits);
    ft_srv_metric(&b, "ft_anchors_marked_total", "counter",
                  "Anchors marked at message boundaries, prompt ends and reply ends.",
                  srv->pool.anchors.n_marked);
    ft_srv_metric(&b, "ft_anchors_refused_total", "counter",
                  "Anchors the engine refused (a full KV pool); they only cost reuse.",
                  srv->pool.anchors.n_failed);
    ft_srv_metric(&b, "ft_kv_anchors", "gauge", "Anchors the prefix cache holds.", es.kv_anchors);
    ft_srv_metric(&b, "ft_kv_pages_cached", "gauge", "Full KV pages the prefix tree caches.",
                  es.kv_pages_cached);
    ft_srv_metric(&b, "ft_kv_pages_used", "gauge",
                  "KV pages in use (by sessions, the prefix cache and anchors).", es.kv_pages_used);
    ft_srv_metric(&b, "ft_kv_page_bytes", "gauge", "Bytes of one KV page.", es.kv_page_bytes);
    ft_srv_metric(&b, "ft_kv_evictions_total", "counter", "Cached KV pages and anchors evicted.",
                  es.kv_evictions);
    ft_srv_metric(&b, "ft_generated_tokens_total", "counter", "Tokens generated.",
                  srv->n_generated_tokens);
    pthread_mutex_lock(&srv->metrics_mu);
    ft_srv_histogram(&b, "ft_time_to_first_token_seconds",
                     "From submitting a request to its first generated token.", srv->ttft_counts,
                     ft_srv_ttft_buckets, FT_SRV_N_TTFT_BUCKETS, srv->ttft_sum);
    ft_srv_histogram(&b, "ft_time_per_token_seconds",
                     "Time per generated token after the first (each request's mean, once per "
                     "token).",
                     srv->tok_counts, ft_srv_tok_buckets, FT_SRV_N_TOK_BUCKETS, srv->tok_sum);
    pthread_mutex_unlock(&srv->metrics_mu);
    ft_srv_metric(&b, "ft_engine_steps_total", "counter", "Scheduler steps run.", es.sched_steps);
    ft_srv_metric(&b, "ft_engine_expert_hits_total", "counter",
                  "Expert cache hits (sim and cuda backends).", es.expert_hits);
    ft_srv_metric(&b, "ft_engine_expert_misses_total", "counter",
                  "Expert cache misses (sim and cuda backends).", es.expert_misses);
    ft_srv_metric(&b, "ft_engine_expert_bytes_read_total", "counter",
                  "Bytes of expert weights the forward passes read.", es.expert_bytes_read);
    ft_srv_metric(&b, "ft_weight_blobs_checked", "gauge",
                  "Expert weight blobs checked against the plan's hashes and found intact.",
                  es.blobs_checked);
    ft_srv_metric(&b, "ft_weight_blobs_damaged", "gauge",
                  "Expert weight blobs found damaged (the bundle should be replaced).",
                  es.blobs_damaged);
    ft_srv_metric(&b, "ft_weight_blobs_unchecked", "gauge",
                  "Expert weight blobs not checked yet (the idle pass checks them).",
                  atomic_load(&srv->verify_left));
    return ft_srv_reply(conn, MHD_HTTP_OK, ft_srv_buf_take(&b),
                        "text/plain; version=0.0.4; charset=utf-8");
}

static enum MHD_Result ft_srv_models(ft_srv_t *srv, struct MHD_Connection *conn)
{
    const char *id = srv->o.model_id;
    if (MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "anthropic-version"))
        return ft_srv_reply_json(conn, MHD_HTTP_OK,
                                 json_pack("{s:[{s:s,s:s,s:s,s:s}],s:b,s:s,s:s}", "data", "type",
                                           "model", "id", id, "display_name", id, "created_at",
                                           "1970-01-01T00:00:00Z", "has_more", 0, "first_id", id,
                                           "last_id", id));
    return ft_srv_reply_json(
        conn, MHD_HTTP_OK,
        json_pack("{s:s,s:[{s:s,s:s,s:i,s:s,s:i,s:i}]}", "object", "list", "data", "id", id,
                  "object", "model", "created", 0, "owned_by", "freetoken", "context_length",
                  (int)srv->model.n_ctx, "max_model_len", (int)srv->model.n_ctx));
}

/* Compares the whole expected key whatever the given one is, so the time
 * taken does not say how much of a guess was right. */
static int ft_srv_key_equal(const char *want, const char *got)
{
    const size_t wn = strlen(want), gn = strlen(got);
    unsigned char d = wn != gn;
    for (size_t i = 0; i < wn; i++)
        d |= (unsigned char)(want[i] ^ (i < gn ? got[i] : 0));
    return d == 0;
}

/* Without a key the server trusts whoever reaches the loopback address,
 * so a web page must not reach it through a DNS name rebound to
 * 127.0.0.1: the Host header must name loopback itself (or be absent,
 * HTTP/1.0). */
static int ft_srv_host_ok(const ft_srv_t *srv, struct MHD_Connection *conn)
{
    if (srv->o.api_key) return 1;
    const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host");
    if (!host) return 1;
    char name[256];
    size_t n = 0;
    if (host[0] == '[') {
        const char *end = strchr(host, ']');
        if (!end || (size_t)(end - host - 1) >= sizeof(name)) return 0;
        n = (size_t)(end - host - 1);
        memcpy(name, host + 1, n);
    } else {
        n = strcspn(host, ":");
        if (n >= sizeof(name)) return 0;
        memcpy(name, host, n);
    }
    name[n] = '\0';
    if (!strcasecmp(name, "localhost") || !strcmp(name, "::1")) return 1;
    struct in_addr a;
    return inet_pton(AF_INET, name, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

static int ft_srv_authorized(const ft_srv_t *srv, struct MHD_Connection *conn)
{
    if (!srv->o.api_key) return 1;
    const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    const char *xkey = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "x-api-key");
    int ok = 0;
    if (auth && !strncasecmp(auth, "Bearer ", 7)) ok |= ft_srv_key_equal(srv->o.api_key, auth + 7);
    if (xkey) ok |= ft_srv_key_equal(srv->o.api_key, xkey);
    return ok;
}

static enum MHD_Result ft_srv_route(ft_srv_t *srv, struct MHD_Connection *conn, const char *url,
                                    const char *method, ft_srv_conn_t *cc)
{
    const ft_srv_proto_t proto =
        !strncmp(url, "/v1/messages", 12) ? FT_SRV_ANTHROPIC : FT_SRV_OPENAI;
    const int get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    ft_srv_error_t err;
    if (!ft_srv_host_ok(srv, conn)) {
        ft_srv_error_set(&err, 403, "permission_error", "",
                         "the Host header must name a loopback address (localhost, 127.0.0.1, "
                         "[::1]) when the server runs without --api-key");
        return ft_srv_reply_error(conn, proto, &err);
    }
    if (!strcmp(url, "/health") && get) return ft_srv_health(srv, conn);
    if (ft_srv_page_path(url)) return ft_srv_page_reply(conn, url, method);
    if (!ft_srv_authorized(srv, conn)) {
        ft_srv_error_set(
            &err, 401, "authentication_error", "",
            "invalid API key: send it as 'Authorization: Bearer KEY' or 'x-api-key: KEY'");
        snprintf(err.code, sizeof(err.code), "invalid_api_key");
        return ft_srv_reply_error(conn, proto, &err);
    }
    if (cc->too_big) {
        ft_srv_error_set(&err, 413, "invalid_request_error", "",
                         "the request body is larger than %llu bytes",
                         (unsigned long long)srv->o.max_body_bytes);
        return ft_srv_reply_error(conn, proto, &err);
    }
    static const struct {
        const char *path;
        int post;
    } routes[] = {{"/v1/models", 0},
                  {"/v1/chat/completions", 1},
                  {"/v1/messages", 1},
                  {"/v1/messages/count_tokens", 1},
                  {"/tokenize", 1},
                  {"/detokenize", 1},
                  {"/apply-template", 1},
                  {"/v1/stats", 0},
                  {"/v1/completions", 1},
                  {"/v1/responses", 1},
                  {"/v1/responses/input_tokens", 1},
                  {"/metrics", 0}};
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        if (strcmp(url, routes[i].path) != 0) continue;
        if (routes[i].post ? !post : !get) {
            ft_srv_error_set(&err, 405, "invalid_request_error", "", "%s takes %s, not %s", url,
                             routes[i].post ? "POST" : "GET", method);
            return ft_srv_reply_error(conn, proto, &err);
        }
        const char *body = cc->body.data ? cc->body.data : "";
        json_t *out = NULL;
        int ok = 0;
        switch (i) {
        case 0:
            return ft_srv_models(srv, conn);
        case 1:
            return ft_srv_chat(srv, conn, FT_SRV_OPENAI, &cc->body);
        case 2:
            return ft_srv_chat(srv, conn, FT_SRV_ANTHROPIC, &cc->body);
        case 3:
            return ft_srv_count_tokens(srv, conn, FT_SRV_ANTHROPIC, &cc->body);
        case 4:
            ok = ft_srv_op_tokenize(&srv->model, body, cc->body.len, &out, &err);
            break;
        case 5:
            ok = ft_srv_op_detokenize(&srv->model, body, cc->body.len, &out, &err);
            break;
        case 7:
            return ft_srv_stats(srv, conn);
        case 8:
            return ft_srv_chat(srv, conn, FT_SRV_COMPLETIONS, &cc->body);
        case 9:
            return ft_srv_chat(srv, conn, FT_SRV_RESPONSES, &cc->body);
        case 10:
            return ft_srv_count_tokens(srv, conn, FT_SRV_RESPONSES, &cc->body);
        case 11:
            return ft_srv_metrics(srv, conn);
        default:
            ok = ft_srv_op_apply_template(&srv->model, body, cc->body.len, &out, &err);
            break;
        }
        return ok ? ft_srv_reply_json(conn, MHD_HTTP_OK, out)
                  : ft_srv_reply_error(conn, proto, &err);
    }
    ft_srv_error_set(&err, 404, "not_found_error", "", "no route for %s %.200s", method, url);
    return ft_srv_reply_error(conn, proto, &err);
}

static enum MHD_Result ft_srv_access(void *cls, struct MHD_Connection *conn, const char *url,
                                     const char *method, const char *version,
                                     const char *upload_data, size_t *upload_data_size,
                                     void **con_cls)
{
    (void)version;
    ft_srv_t *srv = cls;
    ft_srv_conn_t *cc = *con_cls;
    if (!cc) {
        cc = calloc(1, sizeof(*cc));
        if (!cc) return MHD_NO;
        *con_cls = cc;
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > srv->o.max_body_bytes) {
            /* said up front: answered at once, the body is never read (MHD
             * closes the connection after the reply) */
            cc->too_big = 1;
            ft_srv_error_t err;
            ft_srv_error_set(&err, 413, "invalid_request_error", "",
                             "the request body is larger than %llu bytes",
                             (unsigned long long)srv->o.max_body_bytes);
            return ft_srv_reply_error(
                conn, !strncmp(url, "/v1/messages", 12) ? FT_SRV_ANTHROPIC : FT_SRV_OPENAI, &err);
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (!cc->too_big && cc->body.len + *upload_data_size <= srv->o.max_body_bytes)
            ft_srv_buf_put(&cc->body, upload_data, *upload_data_size);
        else
            cc->too_big = 1; /* read and dropped; answered with 413 at the end */
        if (cc->body.oom) cc->too_big = 1;
        *upload_data_size = 0;
        return MHD_YES;
    }
    return ft_srv_route(srv, conn, url, method, cc);
}

static void ft_srv_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                             enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)conn, (void)toe;
    ft_srv_conn_t *cc = *con_cls;
    if (!cc) return;
    ft_srv_buf_free(&cc->body);
    free(cc);
    *con_cls = NULL;
}

/* ---- the daemon ----------------------------------------------------------- */

ft_status_t ft_serve_run(ft_engine_t *engine, const ft_serve_options_t *o, FILE *out)
{
    if (!engine || !o || !o->host)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "serve: NULL engine or options");
    if (!o->api_key && !ft_serve_host_is_loopback(o->host))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "serve: refusing to listen on '%s' (not a loopback address) "
                              "without --api-key",
                              o->host);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE},
                    *res = NULL;
    const int gai = getaddrinfo(o->host, NULL, &hints, &res);
    if (gai != 0 || !res)
        return ft_status_make(FT_STATUS_IO, "serve: cannot resolve host '%s': %s", o->host,
                              gai_strerror(gai));
    struct sockaddr_storage addr;
    memset(&addr, 0, sizeof(addr));
    memcpy(&addr, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    const int v6 = addr.ss_family == AF_INET6;
    if (v6)
        ((struct sockaddr_in6 *)&addr)->sin6_port = htons(o->port);
    else
        ((struct sockaddr_in *)&addr)->sin_port = htons(o->port);

    ft_srv_t *srv = calloc(1, sizeof(*srv));
    if (!srv) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "serve: server state");
    srv->o = *o;
    ft_srv_model_init(&srv->model, engine, o->n_ctx);
    pthread_mutex_init(&srv->metrics_mu, NULL);
    ft_status_t pst = ft_srv_pool_init(&srv->pool, engine, o->n_ctx,
                                       o->prefix_cache != FT_SERVE_CACHE_OFF ? o->n_slots : 0,
                                       o->prefix_cache == FT_SERVE_CACHE_ANCHORS);
    if (!pst && o->script_path) pst = ft_srv_load_script(srv, o->script_path);
    if (pst) {
        ft_srv_pool_free(&srv->pool);
        free(srv->replies);
        free(srv->script_text);
        free(srv);
        return pst;
    }

    /* SIGINT/SIGTERM are taken by sigwait below: block them before MHD
     * starts its threads, which inherit the mask. */
    sigset_t sigs, old;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, &old);
    signal(SIGPIPE, SIG_IGN);
    const unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                           MHD_USE_POLL | (v6 ? MHD_USE_IPv6 : 0);
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, o->port, NULL, NULL, ft_srv_access, srv, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&addr, MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024), MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)o->conn_timeout_s, MHD_OPTION_NOTIFY_COMPLETED, ft_srv_completed, srv,
        MHD_OPTION_END);
    if (!d) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        ft_srv_pool_free(&srv->pool);
        free(srv->replies);
        free(srv->script_text);
        free(srv);
        return ft_status_make(FT_STATUS_IO, "serve: cannot listen on %s port %u (in use?)", o->host,
                              (unsigned)o->port);
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    const unsigned port = di ? di->port : o->port;
    char host[INET6_ADDRSTRLEN] = "?";
    if (v6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&addr)->sin6_addr, host, sizeof(host));
    else
        inet_ntop(AF_INET, &((struct sockaddr_in *)&addr)->sin_addr, host, sizeof(host));
    pthread_mutex_init(&srv->verifier_mu, NULL);
    pthread_cond_init(&srv->verifier_cv, NULL);
    uint64_t left = 0;
    ft_status_free(ft_engine_verify_some(engine, 1, &left)); /* how many are left (checks one) */
    atomic_store(&srv->verify_left, left);
    if (left)
        srv->verifier_started = pthread_create(&srv->verifier, NULL, ft_srv_verifier, srv) == 0;
    fprintf(out, v6 ? "listening on http://[%s]:%u\n" : "listening on http://%s:%u\n", host, port);
    fflush(out);
    int sig = 0;
    sigwait(&sigs, &sig);
    if (srv->verifier_started) {
        pthread_mutex_lock(&srv->verifier_mu);
        srv->verifier_stop = 1;
        pthread_cond_signal(&srv->verifier_cv);
        pthread_mutex_unlock(&srv->verifier_mu);
        pthread_join(srv->verifier, NULL);
    }
    pthread_cond_destroy(&srv->verifier_cv);
    pthread_mutex_destroy(&srv->verifier_mu);
    MHD_stop_daemon(d); /* waits for the connection threads */
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_mutex_destroy(&srv->metrics_mu);
    ft_srv_pool_free(&srv->pool); /* after MHD stopped: no request holds a session */
    free(srv->replies);
    free(srv->script_text);
    free(srv);
    return FT_OK;
}
