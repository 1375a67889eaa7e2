/* ft chat: a multi-turn conversation on stdin, keeping the session (and its
 * KV cache) between turns, with commands:
 *   /vram SIZE   re-plan the VRAM budget while the session lives
 *   /stats       offloading statistics
 *   /reset       forget the conversation
 *   /quit        leave (so does end of input) */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

typedef struct ft_chat_state {
    ft_engine_t *e;
    ft_session_t *s;
    ft_sampler_t *smp;
    ft_detokenizer_t *detok;
    int32_t *hist;
    uint32_t n_hist, cap_hist, n_predict;
    int in_turn; /* an assistant turn is open and needs closing */
} ft_chat_state_t;

FT_WARN_UNUSED static ft_status_t ft_chat_feed(ft_chat_state_t *c, const char *text, unsigned flags)
{
    int32_t *ids = NULL;
    uint32_t n = 0;
    ft_status_t st = ft_engine_tokenize(c->e, text, strlen(text), flags, &ids, &n);
    if (!st && n > c->cap_hist - c->n_hist)
        st = ft_status_make(FT_STATUS_OUT_OF_RANGE, "the conversation no longer fits the context (/reset)");
    if (!st && n)
        st = ft_session_eval(c->s, ids, n, NULL);
    if (!st) {
        memcpy(c->hist + c->n_hist, ids, n * sizeof(int32_t));
        c->n_hist += n;
    }
    ft_engine_free(c->e, ids);
    return st;
}

FT_WARN_UNUSED static ft_status_t ft_chat_turn(ft_chat_state_t *c, const char *line)
{
    ft_chat_message_t msg = {"user", line};
    char *text = NULL;
    ft_status_t st = FT_OK;
    if (c->in_turn && (st = ft_chat_feed(c, "<|im_end|>\n", FT_TOKENIZE_SPECIAL)))
        return st;
    if ((st = ft_engine_chat_format(c->e, &msg, 1, 1, &text)))
        return st;
    st = ft_chat_feed(c, text, FT_TOKENIZE_SPECIAL | (c->n_hist ? 0 : FT_TOKENIZE_ADD_BOS));
    ft_engine_free(c->e, text);
    c->in_turn = 1;
    for (uint32_t i = 0; !st && i < c->n_predict && c->n_hist < c->cap_hist; i++) {
        ft_sample_t smpl;
        if ((st = ft_sampler_next(c->smp, ft_session_logits(c->s), c->hist, c->n_hist, &smpl)))
            break;
        const int32_t tok = smpl.token;
        if (ft_engine_is_eog(c->e, tok))
            break;
        const char *b;
        size_t len;
        if (!(st = ft_detokenizer_feed(c->detok, tok, &b, &len))) {
            fwrite(b, 1, len, stdout);
            fflush(stdout);
            c->hist[c->n_hist++] = tok;
            st = ft_session_eval(c->s, &tok, 1, NULL);
        }
    }
    /* a character the turn left incomplete comes out as U+FFFD */
    const char *b;
    size_t len;
    ft_status_t fst = ft_detokenizer_flush(c->detok, &b, &len);
    if (!fst)
        fwrite(b, 1, len, stdout);
    fputc('\n', stdout);
    if (st) {
        ft_status_free(fst); /* the first error is the one to report */
        return st;
    }
    return fst;
}

static void ft_chat_stats(const ft_engine_t *e)
{
    ft_engine_stats_t s;
    ft_engine_stats(e, &s);
    if (!s.predicted && !s.vram_bytes) { /* the cuda backend always has a budget */
        printf("[cpu backend: no offloading statistics]\n");
        return;
    }
    const double n = (double)(s.expert_hits + s.expert_misses);
    printf("[vram %.1f MiB, %u slots, hit rate %.1f%%, %.2f MB copied, %llu tokens, %.3f s %s]\n",
           s.vram_bytes / 1048576.0, s.n_slots, n > 0 ? 100.0 * s.expert_hits / n : 0.0, s.bytes_copied / 1e6,
           (unsigned long long)s.n_tokens, s.device_seconds, s.predicted ? "modelled" : "measured");
}

/* Returns 1 when the line was a command (handled), 2 to quit, 0 otherwise. */
static int ft_chat_command(ft_chat_state_t *c, const char *line)
{
    if (line[0] != '/')
        return 0;
    ft_status_t st = FT_OK;
    if (strcmp(line, "/quit") == 0 || strcmp(line, "/exit") == 0)
        return 2;
    if (strcmp(line, "/stats") == 0) {
        ft_chat_stats(c->e);
    } else if (strcmp(line, "/reset") == 0) {
        st = ft_session_rewind(c->s, 0);
        c->n_hist = 0;
        c->in_turn = 0;
    } else if (strncmp(line, "/vram ", 6) == 0) {
        uint64_t bytes;
        if (!(st = ft_cli_parse_size("/vram", line + 6, &bytes)) && !(st = ft_engine_replan(c->e, bytes)))
            ft_chat_stats(c->e);
    } else {
        printf("[commands: /vram SIZE, /stats, /reset, /quit]\n");
    }
    if (st) {
        fprintf(stderr, "ft: %s\n", ft_status_message(st));
        ft_status_free(st);
    }
    return 1;
}

int ft_cli_chat(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"temp", required_argument, 0, 't'},  {"seed", required_argument, 0, 's'},
        {"n-predict", required_argument, 0, 'n'}, {"ctx", required_argument, 0, 'C'},
        FT_CLI_ENGINE_LONGOPTS,               {0, 0, 0, 0}};
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    ft_sampler_options_t so;
    ft_sampler_options_init(&so);
    ft_session_options_t sesso;
    ft_session_options_init(&sesso);
    ft_chat_state_t c = {.n_predict = 256};
    uint32_t seed = 0;
    ft_status_t st = FT_OK;
    int opt;
    while (!st && (opt = getopt_long(argc, argv, "n:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 't': st = ft_cli_parse_float("--temp", optarg, &so.temperature); break;
        case 's': st = ft_cli_parse_u32("--seed", optarg, &seed); so.seed = seed; break;
        case 'n': st = ft_cli_parse_u32("-n", optarg, &c.n_predict); break;
        case 'C': st = ft_cli_parse_u32("--ctx", optarg, &sesso.n_ctx); break;
        case 'h':
            return ft_cli_print_help("chat");
        default:
            if (!ft_cli_engine_option(opt, optarg, &eo, &st))
                return 2;
        }
    }
    if (st) {
        ft_cli_fail(st);
        return 2;
    }
    if (optind + 1 != argc) {
        fputs("ft chat: one BUNDLE is needed\n", stderr);
        return 2;
    }
    eo.plan_ctx = sesso.n_ctx;
    if (!(st = ft_cli_open_engine(argv[optind], &eo, &c.e)) && !(st = ft_session_create(c.e, &sesso, &c.s)) &&
        !(st = ft_sampler_create(&so, ft_engine_info(c.e)->vocab_size, &c.smp)) &&
        !(st = ft_detokenizer_create(c.e, &c.detok))) {
        c.cap_hist = ft_session_n_ctx(c.s);
        c.hist = malloc(c.cap_hist * sizeof(int32_t));
        if (!c.hist)
            st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    char line[8192];
    while (!st && fgets(line, sizeof(line), stdin)) {
        line[strcspn(line, "\r\n")] = 0;
        int cmd = ft_chat_command(&c, line);
        if (cmd == 2)
            break;
        if (cmd == 0 && line[0])
            st = ft_chat_turn(&c, line);
    }
    free(c.hist);
    ft_detokenizer_destroy(c.detok);
    ft_sampler_destroy(c.smp);
    ft_session_destroy(c.s);
    ft_engine_close(c.e);
    return st ? ft_cli_fail(st) : 0;
}
