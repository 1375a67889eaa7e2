/* ft run: prompt in, text streamed out. */
#include "cli.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FT_RUN_MAX_STOPS 16
#define FT_RUN_MAX_BIASES 64

typedef struct ft_run_opts {
    const char *bundle, *prompt, *prompt_tokens;
    const char *stops[FT_RUN_MAX_STOPS];
    size_t n_stops;
    ft_logit_bias_t biases[FT_RUN_MAX_BIASES];
    uint32_t n_predict, n_ctx, n_batch;
    int chat, json;
    ft_engine_options_t eo;
    ft_sampler_options_t sampling;
} ft_run_opts_t;

/* --logit-bias ID=BIAS (BIAS may be -inf: a ban). */
FT_WARN_UNUSED static ft_status_t ft_run_parse_bias(ft_run_opts_t *o, const char *arg)
{
    if (o->sampling.n_logit_bias == FT_RUN_MAX_BIASES)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "at most %d --logit-bias", FT_RUN_MAX_BIASES);
    const char *eq = strchr(arg, '=');
    char id[16];
    if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof(id))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "--logit-bias: '%s' is not ID=BIAS", arg);
    memcpy(id, arg, (size_t)(eq - arg));
    id[eq - arg] = 0;
    ft_logit_bias_t *b = &o->biases[o->sampling.n_logit_bias];
    uint32_t v;
    ft_status_t st = ft_cli_parse_u32("--logit-bias", id, &v);
    if (!st && v > INT32_MAX)
        st = ft_status_make(FT_STATUS_INVALID_ARGUMENT, "--logit-bias: token %u", v);
    if (!st)
        st = ft_cli_parse_float("--logit-bias", eq + 1, &b->bias);
    if (st)
        return st;
    b->id = (int32_t)v;
    o->sampling.logit_bias = o->biases;
    o->sampling.n_logit_bias++;
    return FT_OK;
}

/* 0 when parsed, -1 when the help was asked for, else the exit code. */
static int ft_run_parse(int argc, char **argv, ft_run_opts_t *o)
{
    static const struct option longopts[] = {
        {"prompt", required_argument, 0, 'p'},      {"n-predict", required_argument, 0, 'n'},
        {"temp", required_argument, 0, 't'},        {"seed", required_argument, 0, 's'},
        {"top-k", required_argument, 0, 'k'},       {"top-p", required_argument, 0, 'P'},
        {"min-p", required_argument, 0, 'm'},       {"repeat-penalty", required_argument, 0, 'r'},
        {"stop", required_argument, 0, 'S'},        {"chat", no_argument, 0, 'c'},
        {"json", no_argument, 0, 'j'},              {"prompt-tokens", required_argument, 0, 'T'},
        {"ctx", required_argument, 0, 'C'},         {"batch", required_argument, 0, 'b'},
        {"presence-penalty", required_argument, 0, 'R'}, {"frequency-penalty", required_argument, 0, 'F'},
        {"logit-bias", required_argument, 0, 'L'},  {"top-logprobs", required_argument, 0, 'N'},
        FT_CLI_ENGINE_LONGOPTS,                     {0, 0, 0, 0}};
    memset(o, 0, sizeof(*o));
    ft_engine_options_init(&o->eo);
    o->n_predict = 128;
    ft_sampler_options_init(&o->sampling);
    o->sampling.temperature = 0.0f; /* greedy unless asked: reproducible by default */
    ft_status_t st = FT_OK;
    int c;
    uint32_t seed32;
    while (!st && (c = getopt_long(argc, argv, "p:n:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'p': o->prompt = optarg; break;
        case 'T': o->prompt_tokens = optarg; break;
        case 'n': st = ft_cli_parse_u32("-n", optarg, &o->n_predict); break;
        case 't': st = ft_cli_parse_float("--temp", optarg, &o->sampling.temperature); break;
        case 's':
            st = ft_cli_parse_u32("--seed", optarg, &seed32);
            o->sampling.seed = seed32;
            break;
        case 'k': st = ft_cli_parse_u32("--top-k", optarg, &o->sampling.top_k); break;
        case 'P': st = ft_cli_parse_float("--top-p", optarg, &o->sampling.top_p); break;
        case 'm': st = ft_cli_parse_float("--min-p", optarg, &o->sampling.min_p); break;
        case 'r': st = ft_cli_parse_float("--repeat-penalty", optarg, &o->sampling.repeat_penalty); break;
        case 'S':
            if (o->n_stops == FT_RUN_MAX_STOPS)
                st = ft_status_make(FT_STATUS_INVALID_ARGUMENT, "at most %d --stop strings", FT_RUN_MAX_STOPS);
            else
                o->stops[o->n_stops++] = optarg;
            break;
        case 'R': st = ft_cli_parse_float("--presence-penalty", optarg, &o->sampling.presence_penalty); break;
        case 'F': st = ft_cli_parse_float("--frequency-penalty", optarg, &o->sampling.frequency_penalty); break;
        case 'L': st = ft_run_parse_bias(o, optarg); break;
        case 'N': st = ft_cli_parse_u32("--top-logprobs", optarg, &o->sampling.top_logprobs); break;
        case 'c': o->chat = 1; break;
        case 'j': o->json = 1; break;
        case 'C': st = ft_cli_parse_u32("--ctx", optarg, &o->n_ctx); break;
        case 'b': st = ft_cli_parse_u32("--batch", optarg, &o->n_batch); break;
        case 'h':
            ft_cli_print_help("run");
            return -1;
        default:
            if (!ft_cli_engine_option(c, optarg, &o->eo, &st))
                return 2;
        }
    }
    if (st) {
        ft_cli_fail(st);
        return 2;
    }
    if (optind + 1 != argc || (!o->prompt == !o->prompt_tokens)) {
        fputs("ft run: BUNDLE and exactly one of -p TEXT or --prompt-tokens are needed\n", stderr);
        return 2;
    }
    o->bundle = argv[optind];
    return 0;
}

/* The prompt as token ids: raw ids, plain text, or a one-message chat. */
FT_WARN_UNUSED static ft_status_t ft_run_prompt(ft_engine_t *e, const ft_run_opts_t *o, int32_t **ids, uint32_t *n)
{
    if (o->prompt_tokens)
        return ft_cli_parse_tokens(o->prompt_tokens, ids, n);
    if (!*o->prompt)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "the prompt is empty");
    if (!o->chat)
        return ft_engine_tokenize(e, o->prompt, strlen(o->prompt), FT_TOKENIZE_ADD_BOS, ids, n);
    ft_chat_message_t msg = {"user", o->prompt};
    char *text = NULL;
    ft_status_t st = ft_engine_chat_format(e, &msg, 1, 1, &text);
    if (!st)
        st = ft_engine_tokenize(e, text, strlen(text), FT_TOKENIZE_SPECIAL | FT_TOKENIZE_ADD_BOS, ids, n);
    ft_engine_free(e, text);
    return st;
}

typedef struct ft_gen {
    int32_t *ids;  /* prompt then generated */
    uint32_t n_prompt, n_ids;
    ft_sample_t *samples; /* [n_predict] with --json: each generated token's logprobs */
    char *text;    /* generated text */
    size_t n_text, cap_text, n_shown;
    double t_prefill, t_decode;
    int stopped;
} ft_gen_t;

FT_WARN_UNUSED static ft_status_t ft_gen_append_text(ft_gen_t *g, const char *b, size_t n)
{
    if (g->n_text + n + 1 > g->cap_text) {
        size_t cap = (g->cap_text + n + 1) * 2;
        char *t = realloc(g->text, cap);
        if (!t)
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
        g->text = t;
        g->cap_text = cap;
    }
    memcpy(g->text + g->n_text, b, n);
    g->n_text += n;
    g->text[g->n_text] = 0;
    return FT_OK;
}

/* Appends a piece of text (whole UTF-8 characters, from the detokenizer)
 * and writes out what can be shown: everything before a stop string, or
 * all but the bytes that may start one. */
FT_WARN_UNUSED static ft_status_t ft_gen_text(ft_gen_t *g, ft_stop_matcher_t *stop, const ft_run_opts_t *o,
                                              const char *piece, size_t n)
{
    if (g->stopped) /* nothing after a stop string is output */
        return FT_OK;
    ft_status_t st = ft_gen_append_text(g, piece, n);
    if (st)
        return st;
    size_t stop_at = 0, hold = 0;
    if (ft_stop_matcher_feed(stop, piece, n, &stop_at, &hold)) {
        g->n_text = stop_at;
        g->text[stop_at] = 0;
        g->stopped = 1;
    }
    size_t safe = g->stopped ? g->n_text : g->n_text - hold;
    if (!o->json && safe > g->n_shown) {
        fwrite(g->text + g->n_shown, 1, safe - g->n_shown, stdout);
        fflush(stdout);
        g->n_shown = safe;
    }
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_run_generate(ft_engine_t *e, ft_session_t *s, ft_sampler_t *smp,
                                   ft_detokenizer_t *detok, ft_stop_matcher_t *stop,
                                   const ft_run_opts_t *o, ft_gen_t *g)
{
    double t0 = ft_cli_now();
    ft_status_t st = ft_session_eval(s, g->ids, g->n_prompt, NULL);
    g->t_prefill = ft_cli_now() - t0;
    if (st)
        return st;
    t0 = ft_cli_now();
    const char *piece;
    size_t n_piece;
    for (uint32_t i = 0; i < o->n_predict; i++) {
        ft_sample_t smpl;
        if ((st = ft_sampler_next(smp, ft_session_logits(s), g->ids, g->n_ids, &smpl)))
            return st;
        const int32_t tok = smpl.token;
        if (ft_engine_is_eog(e, tok))
            break;
        if (g->samples)
            g->samples[g->n_ids - g->n_prompt] = smpl;
        g->ids[g->n_ids++] = tok;
        if ((st = ft_detokenizer_feed(detok, tok, &piece, &n_piece)) ||
            (st = ft_gen_text(g, stop, o, piece, n_piece)))
            return st;
        if (g->stopped || i + 1 == o->n_predict)
            break;
        if ((st = ft_session_eval(s, &tok, 1, NULL)))
            return st;
    }
    g->t_decode = ft_cli_now() - t0;
    /* The end of the text: a character left incomplete becomes U+FFFD, and
     * the bytes held for a stop string that did not come are shown. */
    if ((st = ft_detokenizer_flush(detok, &piece, &n_piece)) || (st = ft_gen_text(g, stop, o, piece, n_piece)))
        return st;
    if (!o->json && g->n_text > g->n_shown)
        fwrite(g->text + g->n_shown, 1, g->n_text - g->n_shown, stdout);
    return FT_OK;
}

/* A float as JSON (which has no infinities: null). */
static void ft_run_json_float(float v)
{
    if (isfinite(v))
        printf("%.9g", v);
    else
        printf("null");
}

static void ft_run_report(const ft_run_opts_t *o, const ft_gen_t *g)
{
    const uint32_t n_gen = g->n_ids - g->n_prompt;
    const double prefill = g->t_prefill > 0 ? g->n_prompt / g->t_prefill : 0;
    /* The first generated token needs no decode step: n_gen - 1 steps. */
    const double decode = n_gen > 1 && g->t_decode > 0 ? (n_gen - 1) / g->t_decode : 0;
    if (!o->json) {
        fprintf(stderr, "\n[%u prompt tokens at %.1f tok/s, %u generated at %.1f tok/s]\n", g->n_prompt,
                prefill, n_gen, decode);
        return;
    }
    printf("{\"tokens\": [");
    for (uint32_t i = g->n_prompt; i < g->n_ids; i++)
        printf("%s%d", i > g->n_prompt ? ", " : "", g->ids[i]);
    printf("]");
    if (g->samples) {
        printf(", \"logprobs\": [");
        for (uint32_t i = 0; i < n_gen; i++) {
            const ft_sample_t *r = &g->samples[i];
            printf("%s{\"id\": %d, \"logprob\": ", i ? ", " : "", r->token);
            ft_run_json_float(r->logprob);
            printf(", \"top\": [");
            for (uint32_t k = 0; k < r->n_top; k++) {
                printf("%s{\"id\": %d, \"logprob\": ", k ? ", " : "", r->top[k].id);
                ft_run_json_float(r->top[k].logprob);
                printf("}");
            }
            printf("]}");
        }
        printf("]");
    }
    printf(", \"text\": ");
    ft_cli_json_string(stdout, g->text ? g->text : "", g->n_text);
    printf(", \"n_prompt_tokens\": %u, \"n_generated\": %u, \"prefill_tok_s\": %.3f, "
           "\"decode_tok_s\": %.3f, \"stopped\": %s}\n",
           g->n_prompt, n_gen, prefill, decode, g->stopped ? "true" : "false");
}

int ft_cli_run(int argc, char **argv)
{
    ft_run_opts_t o;
    int rc = ft_run_parse(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    ft_engine_options_t eo = o.eo;
    eo.plan_ctx = o.n_ctx; /* the VRAM plan reserves KV for the session's context */
    ft_engine_t *e = NULL;
    ft_session_t *s = NULL;
    ft_sampler_t *smp = NULL;
    ft_stop_matcher_t *stop = NULL;
    ft_detokenizer_t *detok = NULL;
    ft_gen_t g = {0};
    int32_t *prompt = NULL;
    ft_status_t st = ft_cli_open_engine(o.bundle, &eo, &e);
    if (!st)
        st = ft_run_prompt(e, &o, &prompt, &g.n_prompt);
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = o.n_ctx;
    so.n_batch = o.n_batch;
    if (!st)
        st = ft_session_create(e, &so, &s);
    if (!st && g.n_prompt >= ft_session_n_ctx(s))
        st = ft_status_make(FT_STATUS_OUT_OF_RANGE, "the prompt has %u tokens; the context holds %u",
                            g.n_prompt, ft_session_n_ctx(s));
    if (!st)
        st = ft_sampler_create(&o.sampling, ft_engine_info(e)->vocab_size, &smp);
    if (!st)
        st = ft_stop_matcher_create(o.stops, o.n_stops, &stop);
    if (!st)
        st = ft_detokenizer_create(e, &detok);
    if (!st) {
        /* Generation never runs past the context. */
        uint32_t room = ft_session_n_ctx(s) - g.n_prompt;
        if (o.n_predict > room)
            o.n_predict = room;
        g.ids = malloc(((size_t)g.n_prompt + o.n_predict + 1) * sizeof(int32_t));
        if (o.json)
            g.samples = malloc(((size_t)o.n_predict + 1) * sizeof(ft_sample_t));
        if (!g.ids || (o.json && !g.samples))
            st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    if (!st) {
        memcpy(g.ids, prompt, g.n_prompt * sizeof(int32_t));
        g.n_ids = g.n_prompt;
        st = ft_run_generate(e, s, smp, detok, stop, &o, &g);
    }
    if (!st)
        ft_run_report(&o, &g);
    rc = st ? ft_cli_fail(st) : 0;
    free(g.ids);
    free(g.samples);
    free(g.text);
    if (e)
        ft_engine_free(e, prompt);
    ft_detokenizer_destroy(detok);
    ft_stop_matcher_destroy(stop);
    ft_sampler_destroy(smp);
    ft_session_destroy(s);
    ft_engine_close(e);
    return rc;
}
