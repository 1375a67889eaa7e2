/* ft bench --agent-edit: what an agent's edit of its context costs (issue
 * 10, item 8; DESIGN.md section 7).
 *
 * The conversation: a system prompt with tool definitions (about a quarter
 * of --ctx tokens), then rounds of a user message, an assistant tool call
 * and a tool result (about a twentieth of --ctx each: some 800 tokens at
 * 16k), in the model's chat format
 * (ft_engine_chat_format), until --ctx tokens. Each message is rendered and
 * tokenized on its own (the chat format's special tokens begin every
 * message, so the pieces are the whole's tokens; checked against
 * tokenizing the whole rendering), so each message boundary is a token
 * position.
 *
 * 1. A prefix_cache session evaluates it message by message, marking an
 *    anchor at each boundary (ft_session_anchor), then the generation
 *    prompt: the agent's request.
 * 2. The last tool result is edited and the request re-sent:
 *    - cold: a session without the cache evaluates it (once: the longest
 *      part of the run);
 *    - anchor: a prefix_cache session evaluates it, restoring the anchor
 *      before the edited result (each of R runs edits it differently);
 *      its logits are compared (memcmp) with cold's.
 * 3. append: instead of an edit, a new tool result follows the request's
 *    messages (R runs, each a different result).
 * TTFT is the wall time of the request's evaluation: its logits are what
 * the first token is sampled from. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

typedef struct ft_agent_toks {
    int32_t *t;
    uint32_t n, cap;
} ft_agent_toks_t;

FT_WARN_UNUSED static ft_status_t ft_agent_push(ft_agent_toks_t *a, const int32_t *t, uint32_t n)
{
    if (a->n + n > a->cap) {
        uint32_t cap = a->cap ? a->cap : 1024;
        while (cap < a->n + n)
            cap *= 2;
        int32_t *nt = realloc(a->t, (size_t)cap * sizeof(int32_t));
        if (!nt) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory for %u tokens", cap);
        a->t = nt;
        a->cap = cap;
    }
    memcpy(a->t + a->n, t, (size_t)n * sizeof(int32_t));
    a->n += n;
    return FT_OK;
}

/* n_words pseudo-words (a fixed list, seeded order), a newline every 12. */
static char *ft_agent_words(uint32_t n_words, uint32_t seed)
{
    static const char *const w[] = {"the",     "file",   "returns", "value",  "struct", "index",
                                    "buffer",  "tokens", "error",   "static", "const",  "page",
                                    "session", "if",     "while",   "return", "size",   "count",
                                    "layer",   "tool",   "path",    "result", "cache",  "anchor",
                                    "prefix",  "engine", "step",    "= 0;"};
    const size_t n_w = sizeof(w) / sizeof(w[0]);
    char *out = malloc((size_t)n_words * 9 + 1);
    if (!out) return NULL;
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x1234567;
    size_t at = 0;
    for (uint32_t i = 0; i < n_words; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const char *s = w[x % n_w];
        const size_t len = strlen(s);
        memcpy(out + at, s, len);
        at += len;
        out[at++] = i % 12 == 11 ? '\n' : ' ';
    }
    out[at] = 0;
    return out;
}

/* One message's tokens (role, content) appended to a. */
FT_WARN_UNUSED static ft_status_t ft_agent_msg(ft_engine_t *e, const char *role,
                                               const char *content, ft_agent_toks_t *a, char **text)
{
    const ft_chat_message_t m = {role, content};
    char *s = NULL;
    int32_t *ids = NULL;
    uint32_t n = 0;
    ft_status_t st = ft_engine_chat_format(e, &m, role ? 1 : 0, role == NULL, &s);
    if (!st) st = ft_engine_tokenize(e, s, strlen(s), FT_TOKENIZE_SPECIAL, &ids, &n);
    if (!st) st = ft_agent_push(a, ids, n);
    if (!st && text) { /* the rendering so far, to check against the whole's */
        const size_t have = *text ? strlen(*text) : 0, add = strlen(s);
        char *t = realloc(*text, have + add + 1);
        if (!t)
            st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
        else {
            memcpy(t + have, s, add + 1);
            *text = t;
        }
    }
    ft_engine_free(e, ids);
    ft_engine_free(e, s);
    return st;
}

/* A message of n_words words wrapped as role's content. */
FT_WARN_UNUSED static ft_status_t ft_agent_words_msg(ft_engine_t *e, const char *role,
                                                     const char *pre, uint32_t n_words,
                                                     uint32_t seed, const char *post,
                                                     ft_agent_toks_t *a, char **text)
{
    char *w = ft_agent_words(n_words, seed);
    char *c = w ? malloc(strlen(pre) + strlen(w) + strlen(post) + 1) : NULL;
    if (!c) {
        free(w);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    strcpy(c, pre);
    strcat(c, w);
    strcat(c, post);
    ft_status_t st = ft_agent_msg(e, role, c, a, text);
    free(c);
    free(w);
    return st;
}

#define FT_AGENT_TOOL_PRE "<tool_response>\n"
#define FT_AGENT_TOOL_POST "\n</tool_response>"

typedef struct ft_agent_conv {
    ft_agent_toks_t t; /* the messages */
    uint32_t *bound;   /* [n_bound] the position after each message */
    uint32_t n_bound, n_msgs;
    uint32_t last_at; /* where the last tool result begins */
    uint32_t result_words;
    ft_agent_toks_t gen; /* the generation prompt */
} ft_agent_conv_t;

FT_WARN_UNUSED static ft_status_t ft_agent_build(ft_engine_t *e, uint32_t ctx, ft_agent_conv_t *c)
{
    /* Tokens per word of this vocabulary, from a sample. */
    ft_agent_toks_t probe = {0};
    ft_status_t st = ft_agent_words_msg(e, "user", "", 400, 1, "", &probe, NULL);
    const double per_word = st ? 1 : (double)probe.n / 400.0;
    free(probe.t);
    const uint32_t sys_w = (uint32_t)(ctx / 4 / per_word),
                   res_w = (uint32_t)(ctx / 20 / per_word) + 1;
    const uint32_t user_w = ctx / 40 / per_word < 24 ? (uint32_t)(ctx / 40 / per_word) + 1 : 24;
    c->result_words = res_w;
    c->bound = calloc(ctx, sizeof(uint32_t));
    if (!c->bound) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    char *text = NULL;
    if (!st)
        st = ft_agent_words_msg(
            e, "system", "Tools: {\"name\": \"read\", \"parameters\": {\"path\": \"string\"}}\n",
            sys_w, 2, "", &c->t, &text);
    if (!st) c->bound[c->n_bound++] = c->t.n;
    c->n_msgs = 1;
    /* Rounds while one more fits (a round: about 40 + user_w + res_w words). */
    for (uint32_t r = 0;
         !st && (r == 0 || c->t.n + (uint32_t)((40 + user_w + res_w) * per_word * 1.2) < ctx);
         r++) {
        char call[160];
        snprintf(
            call, sizeof(call),
            "<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"m%u.c\"}}</tool_call>", r);
        if (!(st = ft_agent_words_msg(e, "user", "See: ", user_w, 100 + r, "", &c->t, &text)))
            c->bound[c->n_bound++] = c->t.n;
        if (!st && !(st = ft_agent_msg(e, "assistant", call, &c->t, &text)))
            c->bound[c->n_bound++] = c->t.n;
        c->last_at = c->t.n;
        if (!st && !(st = ft_agent_words_msg(e, "tool", FT_AGENT_TOOL_PRE, res_w, 200 + r,
                                             FT_AGENT_TOOL_POST, &c->t, &text)))
            c->bound[c->n_bound++] = c->t.n;
        c->n_msgs += 3;
    }
    if (!st) st = ft_agent_msg(e, NULL, NULL, &c->gen, &text);
    /* The pieces are the whole: the rendered text tokenized at once gives
     * the same tokens. */
    int32_t *ids = NULL;
    uint32_t n = 0;
    if (!st && !(st = ft_engine_tokenize(e, text, strlen(text), FT_TOKENIZE_SPECIAL, &ids, &n))) {
        uint32_t k = 0;
        while (k < n && k < c->t.n + c->gen.n &&
               ids[k] == (k < c->t.n ? c->t.t[k] : c->gen.t[k - c->t.n]))
            k++;
        if (k != n || n != c->t.n + c->gen.n)
            st = ft_status_make(
                FT_STATUS_INTERNAL,
                "--agent-edit: the messages tokenized one by one differ from the whole "
                "conversation's tokens at token %u",
                k);
    }
    ft_engine_free(e, ids);
    free(text);
    return st;
}

typedef struct ft_agent_run {
    double ms;
    uint32_t restored, n;
} ft_agent_run_t;

/* Evaluates tokens t in a new session (prefix_cache as said) and times
 * it; logits copied to out_logits when given. */
FT_WARN_UNUSED static ft_status_t ft_agent_request(ft_engine_t *e, uint32_t n_ctx, int cache,
                                                   const int32_t *t, uint32_t n, float *out_logits,
                                                   ft_agent_run_t *out)
{
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = n_ctx;
    so.prefix_cache = cache;
    ft_session_t *s = NULL;
    ft_status_t st = ft_session_create(e, &so, &s);
    const double t0 = ft_cli_now();
    if (!st) st = ft_session_eval(s, t, n, NULL);
    out->ms = (ft_cli_now() - t0) * 1e3;
    out->n = n;
    if (!st) {
        out->restored = ft_session_n_restored(s);
        if (out_logits)
            memcpy(out_logits, ft_session_logits(s), ft_engine_info(e)->vocab_size * sizeof(float));
    }
    ft_session_destroy(s);
    return st;
}

/* The edited (edit 1) or appended-to (edit 0) request of run r. */
FT_WARN_UNUSED static ft_status_t ft_agent_variant(ft_engine_t *e, const ft_agent_conv_t *c,
                                                   int edit, uint32_t r, ft_agent_toks_t *out)
{
    out->n = 0;
    ft_status_t st = ft_agent_push(out, c->t.t, edit ? c->last_at : c->t.n);
    if (!st)
        st = ft_agent_words_msg(e, "tool", FT_AGENT_TOOL_PRE,
                                edit ? c->result_words : c->result_words / 2,
                                (edit ? 5000 : 9000) + r, FT_AGENT_TOOL_POST, out, NULL);
    if (!st) st = ft_agent_push(out, c->gen.t, c->gen.n);
    return st;
}

static int ft_agent_cmp(const void *a, const void *b)
{
    const double x = ((const ft_agent_run_t *)a)->ms, y = ((const ft_agent_run_t *)b)->ms;
    return (x > y) - (x < y);
}

ft_status_t ft_cli_bench_agent(ft_engine_t *e, uint32_t ctx, uint32_t reps, int json)
{
    const ft_model_info_t *mi = ft_engine_info(e);
    const uint32_t n_ctx =
        ctx + ctx / 4 + 64 < mi->context_length ? ctx + ctx / 4 + 64 : mi->context_length;
    ft_agent_conv_t c = {0};
    ft_agent_toks_t req = {0};
    ft_agent_run_t first = {0}, cold = {0}, *anchor = calloc(reps, sizeof(*anchor)),
                   *append = calloc(reps, sizeof(*append));
    float *cold_logits = malloc(mi->vocab_size * sizeof(float)),
          *logits = malloc(mi->vocab_size * sizeof(float));
    int identical = 0;
    ft_session_t *s = NULL;
    /* The conversation stops short of the model's context by a tool
     * result's length, so that the edited and appended requests fit. */
    const uint32_t room =
        mi->context_length > ctx / 20 + 128 ? mi->context_length - ctx / 20 - 128 : 0;
    ft_status_t st = anchor && append && cold_logits && logits
                         ? ft_agent_build(e, ctx < room ? ctx : room, &c)
                         : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!st && c.t.n + c.gen.n + (c.t.n - c.last_at) + 16 > n_ctx)
        st = ft_status_make(
            FT_STATUS_OUT_OF_RANGE,
            "--agent-edit: a conversation of %u tokens and its edits need more than the "
            "model's context of %u tokens (give a smaller --ctx)",
            c.t.n, mi->context_length);
    /* 1. The agent's request, message by message, anchored. */
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = n_ctx;
    so.prefix_cache = 1;
    if (!st) st = ft_session_create(e, &so, &s);
    const double t0 = ft_cli_now();
    for (uint32_t i = 0, at = 0; !st && i < c.n_bound; at = c.bound[i++])
        if (!(st = ft_session_eval(s, c.t.t + at, c.bound[i] - at, NULL)))
            st = ft_session_anchor(s, c.bound[i]);
    if (!st) st = ft_session_eval(s, c.gen.t, c.gen.n, NULL);
    first.ms = (ft_cli_now() - t0) * 1e3;
    ft_session_destroy(s);
    /* 2. The edit: cold once, then from the anchor. */
    if (!st && !(st = ft_agent_variant(e, &c, 1, 0, &req)))
        st = ft_agent_request(e, n_ctx, 0, req.t, req.n, cold_logits, &cold);
    for (uint32_t r = 0; r < reps && !st; r++)
        if (!(st = ft_agent_variant(e, &c, 1, r, &req))) {
            st = ft_agent_request(e, n_ctx, 1, req.t, req.n, r ? NULL : logits, &anchor[r]);
            if (!st && r == 0)
                identical = !memcmp(logits, cold_logits, mi->vocab_size * sizeof(float));
        }
    /* 3. An appended tool result. */
    for (uint32_t r = 0; r < reps && !st; r++)
        if (!(st = ft_agent_variant(e, &c, 0, r, &req)))
            st = ft_agent_request(e, n_ctx, 1, req.t, req.n, NULL, &append[r]);
    if (!st) {
        const ft_agent_run_t a0 = anchor[0], p0 = append[0];
        qsort(anchor, reps, sizeof(*anchor), ft_agent_cmp);
        qsort(append, reps, sizeof(*append), ft_agent_cmp);
        const ft_agent_run_t a = anchor[reps / 2], p = append[reps / 2];
        ft_engine_stats_t es;
        ft_engine_stats(e, &es);
        if (json)
            printf("{\"agent_edit\": true, \"kernels\": \"%s\", \"n_threads\": %u, \"ctx\": %u, "
                   "\"conversation_tokens\": %u, \"messages\": %u, \"anchors\": %u, "
                   "\"request_tokens\": %u, "
                   "\"reps\": %u, \"first_request_ms\": %.3f, \"ttft_cold_ms\": %.3f, "
                   "\"ttft_anchor_ms\": %.3f, "
                   "\"ttft_append_ms\": %.3f, \"anchor_speedup\": %.2f, \"append_speedup\": %.2f, "
                   "\"anchor_restored_tokens\": %u, \"append_restored_tokens\": %u, "
                   "\"append_request_tokens\": "
                   "%u, \"anchor_logits_identical\": %s, \"kv_page_bytes\": %llu, "
                   "\"kv_bytes_allocated\": "
                   "%llu, \"kv_evictions\": %llu}\n",
                   mi->kernels, mi->n_threads, ctx, c.t.n, c.n_msgs, c.n_bound, cold.n, reps,
                   first.ms, cold.ms, a.ms, p.ms, cold.ms / a.ms, cold.ms / p.ms, a0.restored,
                   p0.restored, p0.n, identical ? "true" : "false",
                   (unsigned long long)es.kv_page_bytes, (unsigned long long)es.kv_bytes_allocated,
                   (unsigned long long)es.kv_evictions);
        else
            printf(
                "agent-edit %u messages, %u tokens, an anchor at each message (%u threads, %s)\n"
                "first      %.1f ms to evaluate it message by message, anchoring\n"
                "cold       %.1f ms to first token: the last tool result edited, no cache (%u "
                "tokens)\n"
                "anchor     %.1f ms (%.1fx faster): %u tokens restored, logits %s (median of %u)\n"
                "append     %.1f ms (%.1fx faster): a new tool result, %u of %u tokens restored\n",
                c.n_msgs, c.t.n, mi->n_threads, mi->kernels, first.ms, cold.ms, cold.n, a.ms,
                cold.ms / a.ms, a0.restored,
                identical ? "bit-identical to cold" : "DIFFER from cold", reps, p.ms,
                cold.ms / p.ms, p0.restored, p0.n);
    }
    free(c.t.t);
    free(c.gen.t);
    free(c.bound);
    free(req.t);
    free(anchor);
    free(append);
    free(cold_logits);
    free(logits);
    return st;
}
