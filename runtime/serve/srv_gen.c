/* One request's generation (srv_gen.h). */
#include "srv_gen.h"

#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double ft_srv_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The scheduler's thread: only wakes the connection's thread. */
static void ft_srv_gen_on_token(void *user, ft_request_t *r, const ft_sample_t *s, uint32_t i)
{
    (void)r, (void)s, (void)i;
    ft_srv_gen_t *g = user;
    pthread_mutex_lock(&g->mu);
    g->n_signals++;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static void ft_srv_gen_send_content(ft_srv_gen_t *g, size_t upto)
{
    if (upto <= g->content_sent) return;
    const ft_srv_ev_t ev = {.kind = FT_SRV_EV_CONTENT,
                            .text = g->content.data + g->content_sent,
                            .len = upto - g->content_sent};
    g->content_sent = upto;
    g->fn(g->user, &ev);
}

/* Ends the generation early (a stop string, or the first tool call when
 * parallel calls are off): the scheduler stops it at its next step, and
 * whatever it makes until then is dropped. */
static void ft_srv_gen_end_early(ft_srv_gen_t *g, ft_srv_finish_t why)
{
    g->finish = why;
    ft_request_cancel(g->request);
}

/* Parser events: content goes through the stop matcher first. */
static void ft_srv_gen_on_event(void *user, const ft_srv_ev_t *ev)
{
    ft_srv_gen_t *g = user;
    if (g->finish != FT_SRV_FINISH_NONE) return;
    if (ev->kind != FT_SRV_EV_CONTENT) {
        ft_srv_gen_send_content(g, g->content.len); /* held text cannot become a stop now */
        if (ev->kind == FT_SRV_EV_TOOL_END) g->n_tool_calls++;
        g->fn(g->user, ev);
        if (ev->kind == FT_SRV_EV_TOOL_END && !g->parallel_tool_calls)
            ft_srv_gen_end_early(g, FT_SRV_FINISH_TOOL_CALLS);
        return;
    }
    const size_t before = g->content.len;
    ft_srv_buf_put(&g->content, ev->text, ev->len);
    if (!g->stop) {
        ft_srv_gen_send_content(g, g->content.len);
        return;
    }
    size_t stop_at = 0, hold = 0;
    if (ft_stop_matcher_feed(g->stop, g->content.data + before, ev->len, &stop_at, &hold)) {
        g->stop_index = ft_stop_matcher_which(g->stop);
        ft_srv_gen_send_content(g, stop_at);
        ft_srv_gen_end_early(g, FT_SRV_FINISH_STOP);
        return;
    }
    ft_srv_gen_send_content(g, g->content.len - hold);
}

/* Submits tokens [from, to) of g->all with max_new tokens to generate. */
FT_WARN_UNUSED static ft_status_t ft_srv_gen_submit(ft_srv_gen_t *g, uint32_t from, uint32_t to,
                                                    uint32_t max_new)
{
    ft_request_options_t ro;
    ft_request_options_init(&ro);
    ro.tokens = g->all + from;
    ro.n_tokens = to - from;
    ro.max_new_tokens = max_new;
    ro.sampler = g->sampler;
    ro.on_token = ft_srv_gen_on_token;
    ro.user = g;
    return ft_request_submit(g->session, &ro, &g->request);
}

/* The request after the prompt's last segment: the script's tokens, or
 * the generation (from the logits the prompt left). */
FT_WARN_UNUSED static ft_status_t ft_srv_gen_submit_final(ft_srv_gen_t *g)
{
    ft_status_t st = g->script ? ft_srv_gen_submit(g, g->n_prompt, g->n_all, 0)
                               : ft_srv_gen_submit(g, g->n_all, g->n_all, g->max_new);
    if (!st) g->final_sub = 1;
    return st;
}

/* Anchors the session at pos (its n_past): tokens g->all[0, pos) then
 * gen. Refusals only cost reuse. */
static void ft_srv_gen_anchor(ft_srv_gen_t *g, uint32_t pos, uint64_t key)
{
    ft_status_t st = ft_session_anchor(g->session, pos);
    if (st) {
        atomic_fetch_add(&g->pool->anchors.n_failed, 1);
        ft_status_free(st);
        return;
    }
    atomic_fetch_add(&g->pool->anchors.n_marked, 1);
    ft_srv_anchors_note(&g->pool->anchors, key);
    g->last_anchor = pos;
}

/* The first segment restored what it could: that is the request's
 * cached count. An anchor restored it when it ends inside a page (the
 * prefix tree holds only full pages) or at one of the prompt's
 * boundaries. */
static void ft_srv_gen_count_restored(ft_srv_gen_t *g)
{
    g->n_cached = ft_session_n_restored(g->session);
    if (!g->n_cached) return;
    atomic_fetch_add(&g->pool->anchors.n_prefix_hits, 1);
    int anchor = g->pool->page_tokens && g->n_cached % g->pool->page_tokens;
    for (uint32_t i = 0; i < g->n_bounds && !anchor; i++)
        anchor = g->bounds[i] == g->n_cached;
    if (anchor) atomic_fetch_add(&g->pool->anchors.n_anchor_hits, 1);
}

int ft_srv_gen_start(ft_srv_gen_t *g, ft_srv_pool_t *pool, const ft_srv_conv_t *c,
                     const int32_t *prompt, uint32_t n_prompt, int reasoning_open, int tools,
                     ft_srv_dialect_t dialect, const char *call_prefix, const char *script,
                     ft_srv_ev_fn fn, void *user, ft_srv_error_t *err)
{
    return ft_srv_gen_start_anchored(g, pool, c, prompt, n_prompt, NULL, 0, FT_CACHE_NORMAL,
                                     reasoning_open, tools, dialect, call_prefix, script, fn, user,
                                     err);
}

int ft_srv_gen_start_anchored(ft_srv_gen_t *g, ft_srv_pool_t *pool, const ft_srv_conv_t *c,
                              const int32_t *prompt, uint32_t n_prompt, const uint32_t *bounds,
                              uint32_t n_bounds, int prio, int reasoning_open, int tools,
                              ft_srv_dialect_t dialect, const char *call_prefix, const char *script,
                              ft_srv_ev_fn fn, void *user, ft_srv_error_t *err)
{
    ft_engine_t *engine = pool->engine;
    const uint32_t n_ctx = pool->n_ctx;
    static _Atomic uint64_t ft_srv_seed_counter;
    memset(g, 0, sizeof(*g));
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->engine = engine;
    g->fn = fn;
    g->user = user;
    g->stop_index = -1;
    g->parallel_tool_calls = c->parallel_tool_calls;
    g->n_prompt = n_prompt;
    g->t_start = ft_srv_now();
    ft_srv_outparse_init(&g->parser, reasoning_open, tools, ft_srv_gen_on_event, g);
    ft_srv_outparse_set_dialect(&g->parser, dialect, c->tools);
    if (c->raw) g->parser.state = FT_SRV_PS_CONTENT; /* completions: the text as it comes */
    if (call_prefix) ft_srv_outparse_open_call(&g->parser, call_prefix, strlen(call_prefix));

    const uint32_t room = n_ctx > n_prompt ? n_ctx - n_prompt : 0;
    const uint32_t max_new = c->max_tokens && c->max_tokens < room ? c->max_tokens : room;
    g->max_new = max_new;
    ft_sampler_options_t so = c->sampling;
    if (!c->has_seed) /* a different draw per request unless the client pins it */
        so.seed = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull +
                  atomic_fetch_add(&ft_srv_seed_counter, 1);
    g->keep_samples = c->logprobs;
    g->pool = pool;
    ft_status_t st = FT_OK;
    if (c->json_object && !script) { /* the reply constrained to one JSON object */
        if (!ft_srv_json_filter_init(&g->json_filter, engine, n_prompt, c->json_schema))
            st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "the JSON filter");
        g->json = 1;
        so.filter = ft_srv_json_filter_fn;
        so.filter_user = &g->json_filter;
    }
    if (!st) st = ft_sampler_create(&so, ft_engine_info(engine)->vocab_size, &g->sampler);
    if (!st) st = ft_detokenizer_create(engine, &g->detok);
    if (!st && c->n_stops) st = ft_stop_matcher_create(c->stops, c->n_stops, &g->stop);
    /* what the session evaluates: the prompt, and a script's reply */
    if (!st && script) {
        st = ft_engine_tokenize(engine, script, strlen(script), FT_TOKENIZE_SPECIAL, &g->script,
                                &g->n_script);
        if (!st && g->n_script > max_new) {
            g->n_script = max_new;
            g->script_cut = 1;
        }
    }
    g->n_all = n_prompt + g->n_script;
    if (!st && !(g->all = malloc(((size_t)g->n_all + 1) * sizeof(*g->all))))
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "prompt copy");
    if (!st && n_bounds && !(g->bounds = malloc(n_bounds * sizeof(*g->bounds))))
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "prompt boundaries");
    if (!st) {
        memcpy(g->all, prompt, n_prompt * sizeof(*g->all));
        if (g->n_script) memcpy(g->all + n_prompt, g->script, g->n_script * sizeof(*g->all));
        if (n_bounds) memcpy(g->bounds, bounds, n_bounds * sizeof(*g->bounds));
        g->n_bounds = n_bounds;
        /* a session that shares a prefix with it: that much is not evaluated again */
        st = ft_srv_pool_acquire(pool, g->all, g->n_all, prio, &g->slot, &g->n_cached);
        if (!st) g->session = g->slot->session;
    }
    if (!st && g->keep_samples) {
        g->samples = calloc(max_new ? max_new : 1, sizeof(*g->samples));
        if (!g->samples) st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "logprobs buffer");
        g->n_samples_cap = max_new;
    }
    g->tree = pool->tree && n_prompt > 0 && (!script || g->n_script > 0);
    if (!st && g->tree) {
        /* the prompt's first segment: it restores what the cache holds */
        g->n_ends = ft_srv_anchor_plan(&pool->anchors, g->all, n_prompt, g->bounds, g->n_bounds,
                                       g->ends, g->keys, &g->hint);
        if (!pool->recurrent) { /* one prompt request; its boundaries anchored after it */
            g->n_late = g->n_ends - 1;
            memcpy(g->late, g->ends, g->n_late * sizeof(*g->late));
            memcpy(g->late_keys, g->keys, g->n_late * sizeof(*g->late_keys));
            g->ends[0] = g->ends[g->n_ends - 1];
            g->keys[0] = g->keys[g->n_ends - 1];
            g->n_ends = 1;
        }
        st = ft_srv_gen_submit(g, 0, g->ends[0], 0);
    } else if (!st) {
        g->final_sub = 1;
        st = ft_srv_gen_submit(g, g->n_cached, g->n_all, script ? 0 : max_new);
    }
    if (st) {
        const int busy = ft_status_code(st) == FT_STATUS_BUSY;
        const int arg = ft_status_code(st) == FT_STATUS_INVALID_ARGUMENT;
        ft_srv_error_set(err,
                         busy  ? 429
                         : arg ? 400
                               : 500,
                         busy  ? "rate_limit_error"
                         : arg ? "invalid_request_error"
                               : "server_error",
                         "", "%s", ft_status_message(st));
        ft_status_free(st);
        return 0;
    }
    return 1;
}

/* Submits the request after segment at_end - 1: the next segment, or the
 * final request. 1: it runs; 0: the scheduler's queue is full (g->resubmit:
 * try again shortly); -1: refused (g->finish set). */
static int ft_srv_gen_submit_next(ft_srv_gen_t *g)
{
    const uint32_t from = g->ends[g->at_end - 1];
    ft_status_t st = g->at_end < g->n_ends ? ft_srv_gen_submit(g, from, g->ends[g->at_end], 0)
                                           : ft_srv_gen_submit_final(g);
    g->resubmit = 0;
    if (!st) return 1;
    if (ft_status_code(st) == FT_STATUS_BUSY) {
        ft_status_free(st);
        g->resubmit = 1;
        return 0;
    }
    snprintf(g->error, sizeof(g->error), "%s", ft_status_message(st));
    ft_status_free(st);
    g->finish = FT_SRV_FINISH_ERROR;
    g->final_sub = 1;
    return -1;
}

/* A prompt segment finished: anchor its end, go on with the next one (or
 * the final request). 1: the next request runs or waits for room in the
 * queue; 0: this one did not end well (g->request stays, for the caller's
 * finish), or the next was refused (g->finish set, g->request NULL). */
static int ft_srv_gen_next_segment(ft_srv_gen_t *g)
{
    if (ft_request_finish_reason(g->request) != FT_FINISH_EVALUATED) {
        g->final_sub = 1; /* its error or cancel ends the generation */
        return 0;
    }
    if (g->at_end == 0) ft_srv_gen_count_restored(g);
    const uint32_t end = g->ends[g->at_end];
    ft_request_release(g->request);
    g->request = NULL;
    for (uint32_t i = 0; g->at_end == 0 && i < g->n_late; i++)
        if (g->late[i] > g->n_cached) ft_srv_gen_anchor(g, g->late[i], g->late_keys[i]);
    ft_srv_gen_anchor(g, end, g->keys[g->at_end]);
    g->at_end++;
    return ft_srv_gen_submit_next(g) >= 0;
}

static void ft_srv_gen_feed_token(ft_srv_gen_t *g, const ft_sample_t *s)
{
    if (g->keep_samples && g->n_generated < g->n_samples_cap) g->samples[g->n_generated] = *s;
    if (g->n_generated++ == 0) g->t_first = ft_srv_now();
    g->t_last = ft_srv_now();
    if (g->finish != FT_SRV_FINISH_NONE || ft_engine_is_eog(g->engine, s->token)) return;
    const char *text;
    size_t n;
    ft_status_t st = ft_detokenizer_feed(g->detok, s->token, &text, &n);
    if (st) {
        ft_status_free(st); /* an id from our own sampler is always in range */
        return;
    }
    if (n) ft_srv_outparse_feed(&g->parser, text, n);
}

static void ft_srv_gen_finalize(ft_srv_gen_t *g)
{
    ft_finish_reason_t why = ft_request_finish_reason(g->request);
    if (g->pool->tree && !g->tree) ft_srv_gen_count_restored(g); /* one request did it all */
    if (g->script && why == FT_FINISH_EVALUATED)
        why = g->script_cut ? FT_FINISH_LENGTH : FT_FINISH_EOG;
    if (g->finish == FT_SRV_FINISH_NONE) {
        const char *text;
        size_t n;
        ft_status_t st = ft_detokenizer_flush(g->detok, &text, &n);
        if (!st && n) ft_srv_outparse_feed(&g->parser, text, n);
        ft_status_free(st);
        ft_srv_outparse_finish(&g->parser);
    }
    if (g->finish == FT_SRV_FINISH_NONE) ft_srv_gen_send_content(g, g->content.len);
    if (g->finish != FT_SRV_FINISH_NONE) return;
    switch (why) {
    case FT_FINISH_EOG:
    case FT_FINISH_EVALUATED:
        g->finish = g->n_tool_calls ? FT_SRV_FINISH_TOOL_CALLS : FT_SRV_FINISH_STOP;
        break;
    case FT_FINISH_LENGTH:
    case FT_FINISH_CONTEXT:
    case FT_FINISH_LIMIT:
        g->finish = FT_SRV_FINISH_LENGTH;
        break;
    default: {
        ft_status_t st = ft_request_wait(g->request);
        snprintf(g->error, sizeof(g->error), "%s",
                 st ? ft_status_message(st) : "the request was cancelled");
        ft_status_free(st);
        g->finish = FT_SRV_FINISH_ERROR;
    }
    }
}

static int ft_srv_fd_closed(int fd)
{
    if (fd < 0) return 0;
    struct pollfd pf = {.fd = fd, .events = POLLRDHUP};
    if (poll(&pf, 1, 0) <= 0) return 0;
    return (pf.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

int ft_srv_gen_step(ft_srv_gen_t *g, int fd, double max_wait_s)
{
    const double deadline = ft_srv_now() + max_wait_s;
    for (;;) {
        int any = 0;
        if (g->resubmit && ft_srv_gen_submit_next(g) < 0) return -1;
        if (!g->request) { /* waiting for room in the scheduler's queue */
            if (ft_srv_fd_closed(fd)) return -2;
            if (ft_srv_now() >= deadline) return 0;
            nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
            continue;
        }
        if (!g->final_sub && ft_request_finish_reason(g->request) != FT_FINISH_NONE &&
            !ft_srv_gen_next_segment(g) && !g->request)
            return -1; /* the next request could not start: g->finish says why */
        if (!g->request) continue;
        for (;;) {
            ft_sample_t s;
            int got = 0;
            ft_status_t st = ft_request_next(g->request, 0, &s, &got);
            if (st) {
                ft_status_free(st);
                break;
            }
            if (!got) break;
            ft_srv_gen_feed_token(g, &s);
            any = 1;
        }
        if (g->final_sub && g->script &&
            ft_request_finish_reason(g->request) == FT_FINISH_EVALUATED &&
            g->script_at < g->n_script) {
            /* the scripted tokens, evaluated: out one at a time, as if sampled */
            const ft_sample_t s = {.token = g->script[g->script_at++]};
            ft_srv_gen_feed_token(g, &s);
            return 1;
        }
        if (g->final_sub && ft_request_finish_reason(g->request) != FT_FINISH_NONE) {
            /* every token taken: the request is over */
            ft_sample_t s;
            int got = 0;
            ft_status_t st = ft_request_next(g->request, 0, &s, &got);
            ft_status_free(st);
            if (!got) {
                ft_srv_gen_finalize(g);
                return -1;
            }
            ft_srv_gen_feed_token(g, &s);
            continue;
        }
        /* the client's socket, every 100 ms whether tokens flow or not (a
         * whole reply sends nothing until it is done) */
        const double now = ft_srv_now();
        if (now >= g->next_poll) {
            if (ft_srv_fd_closed(fd)) {
                ft_request_cancel(g->request);
                return -2;
            }
            g->next_poll = now + 0.1;
        }
        if (any) return 1;
        if (now >= deadline) return 0;
        pthread_mutex_lock(&g->mu);
        if (g->n_signals == g->n_seen) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 20 * 1000 * 1000; /* 20 ms: a token seen late costs at most this */
            if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
            pthread_cond_timedwait(&g->cv, &g->mu, &ts);
        }
        g->n_seen = g->n_signals;
        pthread_mutex_unlock(&g->mu);
    }
}

void ft_srv_gen_free(ft_srv_gen_t *g)
{
    int32_t *gen = NULL;
    uint32_t n_gen = 0;
    if (g->request) {
        ft_request_cancel(g->request);
        ft_status_free(ft_request_wait(g->request)); /* no callback runs after this */
        n_gen = ft_request_n_generated(g->request);
        gen = malloc(((size_t)n_gen + 1) * sizeof(*gen));
        n_gen = gen ? ft_request_tokens(g->request, gen, n_gen) : 0;
        ft_request_release(g->request);
        g->request = NULL;
    }
    /* where the reply ended (after a generated tool call): the next request
     * resumes there when the client sends the turn back as it was made */
    if (g->tree && g->final_sub && g->session && g->finish != FT_SRV_FINISH_ERROR &&
        g->finish != FT_SRV_FINISH_NONE) {
        const uint32_t n_past = ft_session_n_past(g->session);
        if (n_past >= g->last_anchor + FT_SRV_MIN_SEGMENT && n_past >= g->n_all &&
            n_past - g->n_all <= n_gen) {
            uint64_t h = ft_srv_anchor_chain(0, g->all, g->n_all);
            h = ft_srv_anchor_chain(h, gen, n_past - g->n_all);
            ft_srv_gen_anchor(g, n_past, ft_srv_anchor_key(h, n_past));
        }
    }
    /* the session goes back with what it holds, for the next request to reuse */
    if (g->slot)
        ft_srv_pool_release(g->pool, g->slot, g->all + g->n_cached, g->n_all - g->n_cached, gen,
                            n_gen);
    free(gen);
    free(g->all);
    free(g->bounds);
    ft_detokenizer_destroy(g->detok);
    ft_stop_matcher_destroy(g->stop);
    ft_sampler_destroy(g->sampler);
    if (g->json) ft_srv_json_filter_free(&g->json_filter);
    ft_srv_outparse_free(&g->parser);
    ft_srv_buf_free(&g->content);
    free(g->samples);
    ft_engine_free(g->engine, g->script);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    memset(g, 0, sizeof(*g));
}
