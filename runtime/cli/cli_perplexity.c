/* ft perplexity: how well a bundle predicts a text, and how far its token
 * distributions are from a base's (KL divergence), the two figures that say
 * what a quantization costs.
 *
 * The method is llama.cpp's perplexity tool's, so the figures compare: the
 * text is tokenized (BOS added when the model wants one, special tokens
 * taken as text), cut into n_windows = n_tokens / ctx windows of ctx tokens
 * (the tail that fills no window is dropped), the first token of each
 * window replaced by BOS when the model adds one, and each window evaluated
 * from an empty context. Only the second half is scored, so every scored
 * token has at least ctx/2 tokens of context: positions ctx/2 .. ctx-2,
 * each predicting the token after it. Perplexity is exp of the mean
 * negative log-likelihood over all windows; its +/- is llama.cpp's (the
 * standard error of the mean NLL, times the perplexity). Like llama.cpp we
 * need at least 2 * ctx tokens, so that at least two windows are averaged.
 *
 * With a base (another bundle, or the file --save-logits wrote from one),
 * every scored position also gives KL(base || this) = sum_i p_i (log p_i -
 * log q_i) over the vocabulary, computed in double from log-softmax with
 * the maximum subtracted, and whether both distributions' most likely token
 * is the same. The base evaluates this bundle's token ids, so both see the
 * same windows. Quantiles are taken from the sorted values, interpolating
 * linearly between the two nearest ranks (numpy's default). */
#include "cli.h"
#include "cli_ppl_file.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct ft_ppl_opts {
    const char *bundle, *text_path, *kl_base, *save_path;
    uint32_t ctx; /* 0: min(512, the model's context length), or the saved file's */
    int json;
    ft_engine_options_t eo;
} ft_ppl_opts_t;

/* What the windows add up. */
typedef struct ft_ppl_acc {
    double nll, nll2, base_nll, base_nll2;
    uint64_t count, same_top;
    double *kld; /* one a scored position, when there is a base */
} ft_ppl_acc_t;

/* One of the two sides: a bundle evaluated here, or (base only) a saved
 * file. */
typedef struct ft_ppl_side {
    ft_engine_t *e;
    ft_session_t *s;
    FILE *f;
    ft_ppl_file_t file;
    int from_file;
} ft_ppl_side_t;

/* 0 when parsed, -1 when the help was asked for, else the exit code. */
static int ft_ppl_parse(int argc, char **argv, ft_ppl_opts_t *o)
{
    static const struct option longopts[] = {{"file", required_argument, 0, 'f'},
                                             {"ctx", required_argument, 0, 'c'},
                                             {"kl-base", required_argument, 0, 'k'},
                                             {"save-logits", required_argument, 0, 's'},
                                             {"json", no_argument, 0, 'j'},
                                             FT_CLI_ENGINE_LONGOPTS,
                                             {0, 0, 0, 0}};
    memset(o, 0, sizeof(*o));
    ft_engine_options_init(&o->eo);
    ft_status_t st = FT_OK;
    int c;
    while (!st && (c = getopt_long(argc, argv, "f:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
            o->text_path = optarg;
            break;
        case 'c':
            st = ft_cli_parse_u32("--ctx", optarg, &o->ctx);
            break;
        case 'k':
            o->kl_base = optarg;
            break;
        case 's':
            o->save_path = optarg;
            break;
        case 'j':
            o->json = 1;
            break;
        case 'h':
            ft_cli_print_help("perplexity");
            return -1;
        default:
            if (!ft_cli_engine_option(c, optarg, &o->eo, &st)) return 2;
        }
    }
    if (st) {
        ft_cli_fail(st);
        return 2;
    }
    if (optind + 1 != argc || !o->text_path) {
        fputs("ft perplexity: BUNDLE and --file TEXT are needed\n", stderr);
        return 2;
    }
    if (o->kl_base && o->save_path) {
        fputs("ft perplexity: --kl-base and --save-logits exclude each other\n", stderr);
        return 2;
    }
    if (o->ctx && o->ctx < FT_PPL_MIN_CTX) {
        fprintf(stderr, "ft perplexity: --ctx %u: at least %u\n", o->ctx, FT_PPL_MIN_CTX);
        return 2;
    }
    o->bundle = argv[optind];
    return 0;
}

/* The whole text file, NUL-terminated. */
FT_WARN_UNUSED static ft_status_t ft_ppl_read_text(const char *path, char **out, size_t *out_len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return ft_status_make(FT_STATUS_IO, "%s: cannot open the text", path);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    ft_status_t st =
        buf ? FT_OK : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    while (!st) {
        if (cap - len < 2) {
            char *nb = cap < SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
                break;
            }
            buf = nb;
            cap *= 2;
        }
        const size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) {
            if (ferror(f)) st = ft_status_make(FT_STATUS_IO, "%s: read failed", path);
            break;
        }
    }
    fclose(f);
    if (!st && len == 0)
        st = ft_status_make(FT_STATUS_INVALID_ARGUMENT, "%s: the text is empty", path);
    if (st) {
        free(buf);
        return st;
    }
    buf[len] = 0;
    *out = buf;
    *out_len = len;
    return FT_OK;
}

/* Tokenizes the text as llama.cpp's perplexity does (BOS when the model
 * adds one, special tokens as text); *out_bos: the BOS id, or -1. */
FT_WARN_UNUSED static ft_status_t ft_ppl_tokenize(const ft_engine_t *e, const char *path,
                                                  const char *text, size_t len, int32_t **out_ids,
                                                  uint32_t *out_n, int32_t *out_bos)
{
    int32_t *plain = NULL, *with = NULL;
    uint32_t n_plain = 0, n_with = 0;
    ft_status_t st = ft_engine_tokenize(e, text, len, 0, &plain, &n_plain);
    if (!st) st = ft_engine_tokenize(e, text, len, FT_TOKENIZE_ADD_BOS, &with, &n_with);
    ft_engine_free(e, plain);
    if (st) {
        ft_engine_free(e, with);
        return ft_status_annotate(st, "%s", path);
    }
    *out_bos = n_with == n_plain + 1 ? with[0] : -1;
    *out_ids = with;
    *out_n = n_with;
    return FT_OK;
}

/* log-softmax of row (n floats) into out, in double. Finite logits only. */
static void ft_ppl_log_softmax(const float *row, uint32_t n, double *out)
{
    double max = row[0];
    for (uint32_t i = 1; i < n; i++)
        if (row[i] > max) max = row[i];
    double sum = 0;
    for (uint32_t i = 0; i < n; i++)
        sum += exp((double)row[i] - max);
    const double lse = max + log(sum);
    for (uint32_t i = 0; i < n; i++)
        out[i] = (double)row[i] - lse;
}

/* The most likely token (the lowest id on ties). */
static uint32_t ft_ppl_argmax(const float *row, uint32_t n)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (row[i] > row[best]) best = i;
    return best;
}

FT_WARN_UNUSED static ft_status_t ft_ppl_check_finite(const float *rows, size_t n, uint32_t vocab,
                                                      uint32_t w, uint32_t first)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(rows[i]))
            return ft_status_make(FT_STATUS_INTERNAL,
                                  "window %u, position %u: the logit of token %zu is %g", w,
                                  first + (uint32_t)(i / vocab), i % vocab, (double)rows[i]);
    return FT_OK;
}

/* Evaluates window w (ctx tokens) on a bundle from an empty context and
 * puts the n_scored scored rows in rows: the first half is evaluated
 * without logits, the second with (its rows start at position ctx/2), so
 * only half a window of logits is ever held. Its last row (position ctx-1,
 * whose next token is in the next window) is not scored; rows has room for
 * it. */
FT_WARN_UNUSED static ft_status_t ft_ppl_eval_window(ft_session_t *s, const int32_t *win,
                                                     uint32_t ctx, float *rows)
{
    const uint32_t half = ctx / 2;
    ft_status_t st = ft_session_rewind(s, 0);
    if (!st) st = ft_session_eval(s, win, half, NULL);
    if (!st) st = ft_session_eval(s, win + half, ctx - half, rows);
    return st;
}

/* Scores one window: this bundle's rows q, the base's rows p (NULL: none). */
static void ft_ppl_score(ft_ppl_acc_t *a, const int32_t *win, uint32_t ctx, uint32_t vocab,
                         const float *q, const float *p, double *lq, double *lp)
{
    const uint32_t half = ctx / 2, n_scored = ft_ppl_n_scored(ctx);
    for (uint32_t j = 0; j < n_scored; j++) {
        const float *qr = q + (size_t)j * vocab;
        const int32_t target = win[half + j + 1];
        ft_ppl_log_softmax(qr, vocab, lq);
        a->nll -= lq[target];
        a->nll2 += lq[target] * lq[target];
        if (p) {
            const float *pr = p + (size_t)j * vocab;
            ft_ppl_log_softmax(pr, vocab, lp);
            a->base_nll -= lp[target];
            a->base_nll2 += lp[target] * lp[target];
            double kl = 0;
            for (uint32_t i = 0; i < vocab; i++) {
                const double pi = exp(lp[i]);
                if (pi > 0) kl += pi * (lp[i] - lq[i]);
            }
            a->kld[a->count] = kl;
            a->same_top += ft_ppl_argmax(qr, vocab) == ft_ppl_argmax(pr, vocab);
        }
        a->count++;
    }
}

static int ft_ppl_cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile of n sorted values, linear between the nearest ranks. */
static double ft_ppl_quantile(const double *sorted, size_t n, double q)
{
    const double r = q * (double)(n - 1);
    const size_t i = (size_t)r;
    const double f = r - (double)i;
    return i + 1 < n ? sorted[i] * (1 - f) + sorted[i + 1] * f : sorted[i];
}

/* exp(mean NLL) and llama.cpp's +/- (standard error of the mean NLL times
 * the perplexity). */
static void ft_ppl_value(double nll, double nll2, uint64_t n, double *ppl, double *err)
{
    const double mean = nll / (double)n, var = nll2 / (double)n - mean * mean;
    *ppl = exp(mean);
    *err = n > 1 && var > 0 ? sqrt(var / (double)(n - 1)) * *ppl : 0;
}

static void ft_ppl_report(const ft_ppl_opts_t *o, ft_ppl_acc_t *a, uint32_t n_text, uint32_t ctx,
                          uint32_t n_windows, int has_base)
{
    double ppl, err, base_ppl = 0, base_err = 0;
    ft_ppl_value(a->nll, a->nll2, a->count, &ppl, &err);
    double mean = 0, median = 0, p99 = 0, max = 0, same = 0;
    if (has_base) {
        ft_ppl_value(a->base_nll, a->base_nll2, a->count, &base_ppl, &base_err);
        for (uint64_t i = 0; i < a->count; i++)
            mean += a->kld[i];
        mean /= (double)a->count;
        qsort(a->kld, a->count, sizeof(double), ft_ppl_cmp_double);
        median = ft_ppl_quantile(a->kld, a->count, 0.5);
        p99 = ft_ppl_quantile(a->kld, a->count, 0.99);
        max = a->kld[a->count - 1];
        same = (double)a->same_top / (double)a->count;
    }
    if (o->json) {
        printf("{\"perplexity\": %.10g, \"perplexity_err\": %.6g, \"n_tokens\": %llu, "
               "\"n_text_tokens\": %u, \"ctx\": %u, \"n_windows\": %u",
               ppl, err, (unsigned long long)a->count, n_text, ctx, n_windows);
        if (has_base)
            printf(", \"base_perplexity\": %.10g, \"kld_mean\": %.10g, \"kld_median\": %.10g, "
                   "\"kld_p99\": %.10g, \"kld_max\": %.10g, \"same_top\": %.10g",
                   base_ppl, mean, median, p99, max, same);
        if (o->save_path) {
            fputs(", \"saved_logits\": ", stdout);
            ft_cli_json_string(stdout, o->save_path, strlen(o->save_path));
        }
        puts("}");
        return;
    }
    printf("perplexity: %.4f +/- %.4f over %llu tokens (%u windows of %u tokens from %u, the "
           "second half of each scored)\n",
           ppl, err, (unsigned long long)a->count, n_windows, ctx, n_text);
    if (has_base) {
        printf("base perplexity: %.4f +/- %.4f\n", base_ppl, base_err);
        printf("KL divergence from the base: mean %.6f, median %.6f, p99 %.6f, max %.6f\n", mean,
               median, p99, max);
        printf("same top token: %.2f%% of positions\n", 100 * same);
    }
    if (o->save_path) printf("saved the logits to %s\n", o->save_path);
}

/* Opens the base: a saved file (checked against this bundle's vocabulary
 * and, when --ctx was given, its ctx) or a bundle. */
FT_WARN_UNUSED static ft_status_t ft_ppl_open_base(ft_ppl_opts_t *o, const ft_engine_t *e,
                                                   uint64_t vocab_hash, ft_ppl_side_t *b)
{
    const uint32_t vocab = ft_engine_info(e)->vocab_size;
    ft_status_t st = FT_OK;
    if (ft_ppl_file_is(o->kl_base)) {
        b->from_file = 1;
        if (!(b->f = fopen(o->kl_base, "rb")))
            return ft_status_make(FT_STATUS_IO, "%s: cannot open", o->kl_base);
        if ((st = ft_ppl_file_open(b->f, o->kl_base, &b->file))) return st;
        const ft_ppl_file_header_t *h = &b->file.h;
        if (h->vocab_size != vocab || h->vocab_hash != vocab_hash)
            return ft_status_make(FT_STATUS_MISMATCH,
                                  "%s: saved for another vocabulary (%u tokens, hash %016llx); %s "
                                  "has %u tokens, hash %016llx",
                                  o->kl_base, h->vocab_size, (unsigned long long)h->vocab_hash,
                                  o->bundle, vocab, (unsigned long long)vocab_hash);
        if (o->ctx && o->ctx != h->ctx)
            return ft_status_make(
                FT_STATUS_MISMATCH,
                "%s: saved with --ctx %u, not %u (leave --ctx out to take the file's)", o->kl_base,
                h->ctx, o->ctx);
        o->ctx = h->ctx;
        return FT_OK;
    }
    ft_engine_options_t beo = o->eo;
    if ((st = ft_cli_open_engine(o->kl_base, &beo, &b->e)))
        return ft_status_annotate(st, "--kl-base");
    uint64_t base_hash = 0;
    if ((st = ft_ppl_vocab_hash(b->e, &base_hash))) return st;
    if (ft_engine_info(b->e)->vocab_size != vocab || base_hash != vocab_hash)
        return ft_status_make(FT_STATUS_MISMATCH,
                              "--kl-base %s has another vocabulary (%u tokens, hash %016llx) than "
                              "%s (%u tokens, hash %016llx)",
                              o->kl_base, ft_engine_info(b->e)->vocab_size,
                              (unsigned long long)base_hash, o->bundle, vocab,
                              (unsigned long long)vocab_hash);
    return FT_OK;
}

/* The windows' tokens (n_windows * ctx), BOS first in each when bos >= 0;
 * with a saved base, they must be the file's. */
FT_WARN_UNUSED static ft_status_t ft_ppl_windows(const ft_ppl_opts_t *o, const int32_t *ids,
                                                 uint32_t n, int32_t bos, const ft_ppl_side_t *b,
                                                 int32_t **out, uint32_t *out_n_windows)
{
    const uint32_t ctx = o->ctx;
    if (n / 2 < ctx)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "%s: %u tokens, but a window of %u needs at least %u (two windows); "
                              "give a longer text or a smaller --ctx",
                              o->text_path, n, ctx, 2 * ctx);
    const uint32_t n_windows = n / ctx;
    int32_t *win = malloc((size_t)n_windows * ctx * sizeof(int32_t));
    if (!win)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%u tokens: out of memory", n_windows * ctx);
    memcpy(win, ids, (size_t)n_windows * ctx * sizeof(int32_t));
    if (bos >= 0)
        for (uint32_t w = 0; w < n_windows; w++)
            win[(size_t)w * ctx] = bos;
    if (b && b->from_file) {
        ft_status_t st = FT_OK;
        if (b->file.h.n_windows != n_windows)
            st = ft_status_make(FT_STATUS_MISMATCH,
                                "%s: saved over %u windows, but %s makes %u: not the same text",
                                o->kl_base, b->file.h.n_windows, o->text_path, n_windows);
        for (size_t i = 0; !st && i < (size_t)n_windows * ctx; i++)
            if (win[i] != b->file.tokens[i])
                st = ft_status_make(FT_STATUS_MISMATCH,
                                    "%s: saved from another text: token %zu is %d there, %d in %s",
                                    o->kl_base, i, b->file.tokens[i], win[i], o->text_path);
        if (st) {
            free(win);
            return st;
        }
    }
    *out = win;
    *out_n_windows = n_windows;
    return FT_OK;
}

/* Runs every window; writes the saved file when asked. */
FT_WARN_UNUSED static ft_status_t ft_ppl_run(const ft_ppl_opts_t *o, ft_ppl_side_t *t,
                                             ft_ppl_side_t *b, const int32_t *win,
                                             uint32_t n_windows, uint64_t vocab_hash,
                                             ft_ppl_acc_t *a)
{
    const uint32_t ctx = o->ctx, vocab = ft_engine_info(t->e)->vocab_size;
    const uint32_t n_scored = ft_ppl_n_scored(ctx);
    const size_t n_rows = (size_t)(ctx - ctx / 2) * vocab;
    float *q = malloc(n_rows * sizeof(float)), *p = b ? malloc(n_rows * sizeof(float)) : NULL;
    double *lq = malloc((size_t)vocab * sizeof(double)),
           *lp = malloc((size_t)vocab * sizeof(double));
    FILE *save = NULL;
    ft_status_t st = FT_OK;
    if (!q || !lq || !lp || (b && !p))
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%u x %u logits: out of memory", ctx, vocab);
    if (!st && o->save_path) {
        const ft_ppl_file_header_t h = {FT_PPL_FILE_VERSION, vocab, ctx, n_windows, vocab_hash};
        if (!(save = fopen(o->save_path, "wb")))
            st = ft_status_make(FT_STATUS_IO, "%s: cannot create", o->save_path);
        else
            st = ft_ppl_file_write_header(save, o->save_path, &h, win);
    }
    const int progress = isatty(2);
    const double t0 = ft_cli_now();
    for (uint32_t w = 0; !st && w < n_windows; w++) {
        const int32_t *ww = win + (size_t)w * ctx;
        st = ft_ppl_eval_window(t->s, ww, ctx, q);
        if (!st) st = ft_ppl_check_finite(q, (size_t)n_scored * vocab, vocab, w, ctx / 2);
        if (!st && b)
            st = b->from_file ? ft_ppl_file_read_window(&b->file, w, p)
                              : ft_ppl_eval_window(b->s, ww, ctx, p);
        if (!st && b && !b->from_file)
            st = ft_ppl_check_finite(p, (size_t)n_scored * vocab, vocab, w, ctx / 2);
        if (!st && save)
            st = ft_ppl_file_write_rows(save, o->save_path, q, (size_t)n_scored * vocab);
        if (st) break;
        ft_ppl_score(a, ww, ctx, vocab, q, b ? p : NULL, lq, lp);
        if (progress)
            fprintf(stderr, "\rft perplexity: window %u/%u, perplexity %.4f, %.1f s", w + 1,
                    n_windows, exp(a->nll / (double)a->count), ft_cli_now() - t0);
    }
    if (progress) fputc('\n', stderr);
    if (save && fclose(save) != 0 && !st)
        st = ft_status_make(FT_STATUS_IO, "%s: write failed", o->save_path);
    if (save && st) remove(o->save_path);
    free(q);
    free(p);
    free(lq);
    free(lp);
    return st;
}

int ft_cli_perplexity(int argc, char **argv)
{
    ft_ppl_opts_t o;
    const int rc = ft_ppl_parse(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    ft_ppl_side_t t = {0}, b = {0};
    ft_ppl_acc_t a = {0};
    char *text = NULL;
    size_t len = 0;
    int32_t *ids = NULL, *win = NULL, bos = -1;
    uint32_t n = 0, n_windows = 0;
    uint64_t vocab_hash = 0;
    ft_status_t st = ft_ppl_read_text(o.text_path, &text, &len);
    if (!st) st = ft_cli_open_engine(o.bundle, &o.eo, &t.e);
    if (!st) st = ft_ppl_vocab_hash(t.e, &vocab_hash);
    if (!st && o.kl_base) st = ft_ppl_open_base(&o, t.e, vocab_hash, &b);
    if (!st) {
        const uint32_t model_ctx = ft_engine_info(t.e)->context_length;
        if (!o.ctx) o.ctx = model_ctx < 512 ? model_ctx : 512;
        if (o.ctx > model_ctx || o.ctx < FT_PPL_MIN_CTX)
            st = ft_status_make(
                FT_STATUS_OUT_OF_RANGE,
                "--ctx %u: the model's context is %u tokens (and a window at least %u)", o.ctx,
                model_ctx, FT_PPL_MIN_CTX);
    }
    if (!st) st = ft_ppl_tokenize(t.e, o.text_path, text, len, &ids, &n, &bos);
    if (!st) st = ft_ppl_windows(&o, ids, n, bos, o.kl_base ? &b : NULL, &win, &n_windows);
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = o.ctx;
    if (!st) st = ft_session_create(t.e, &so, &t.s);
    if (!st && b.e) st = ft_session_create(b.e, &so, &b.s);
    if (!st && o.kl_base) {
        const uint64_t n_pos = (uint64_t)n_windows * ft_ppl_n_scored(o.ctx);
        if (!(a.kld = malloc(n_pos * sizeof(double))))
            st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    if (!st) st = ft_ppl_run(&o, &t, o.kl_base ? &b : NULL, win, n_windows, vocab_hash, &a);
    if (!st) ft_ppl_report(&o, &a, n, o.ctx, n_windows, o.kl_base != NULL);
    free(a.kld);
    free(win);
    if (t.e) ft_engine_free(t.e, ids);
    free(text);
    ft_session_destroy(t.s);
    ft_session_destroy(b.s);
    ft_engine_close(t.e);
    ft_engine_close(b.e);
    ft_ppl_file_close(&b.file);
    if (b.f) fclose(b.f);
    return st ? ft_cli_fail(st) : 0;
}
