/* ft logits: the float32 logits of every position of a token sequence,
 * for comparing with other implementations. */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

int ft_cli_logits(int argc, char **argv)
{
    static const struct option longopts[] = {{"tokens", required_argument, 0, 't'},
                                             {"output", required_argument, 0, 'o'},
                                             FT_CLI_ENGINE_LONGOPTS,
                                             {0, 0, 0, 0}};
    const char *tokens = NULL, *out_path = NULL;
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    ft_status_t st = FT_OK;
    int c;
    while (!st && (c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 't': tokens = optarg; break;
        case 'o': out_path = optarg; break;
        case 'h':
            return ft_cli_print_help("logits");
        default:
            if (!ft_cli_engine_option(c, optarg, &eo, &st))
                return 2;
        }
    }
    if (st) {
        ft_cli_fail(st);
        return 2;
    }
    if (optind + 1 != argc || !tokens || !out_path) {
        fputs("ft logits: BUNDLE, --tokens 1,2,3 and -o FILE are needed\n", stderr);
        return 2;
    }
    int32_t *ids = NULL;
    uint32_t n = 0;
    if ((st = ft_cli_parse_tokens(tokens, &ids, &n)))
        return ft_cli_fail(st);
    ft_engine_t *e = NULL;
    ft_session_t *s = NULL;
    float *logits = NULL;
    ft_session_options_t so;
    ft_session_options_init(&so);
    if (!(st = ft_cli_open_engine(argv[optind], &eo, &e))) {
        const uint32_t vocab = ft_engine_info(e)->vocab_size;
        so.n_ctx = n < ft_engine_info(e)->context_length ? n : ft_engine_info(e)->context_length;
        logits = malloc((size_t)n * vocab * sizeof(float));
        if (!logits)
            st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%u x %u logits: out of memory", n, vocab);
        if (!st)
            st = ft_session_create(e, &so, &s);
        if (!st)
            st = ft_session_eval(s, ids, n, logits);
        if (!st) {
            FILE *f = fopen(out_path, "wb");
            size_t count = (size_t)n * vocab;
            if (!f || fwrite(logits, sizeof(float), count, f) != count || fclose(f) != 0)
                st = ft_status_make(FT_STATUS_IO, "%s: cannot write the logits", out_path);
            else
                fprintf(stderr, "wrote %u x %u float32 logits to %s\n", n, vocab, out_path);
        }
    }
    free(logits);
    free(ids);
    ft_session_destroy(s);
    ft_engine_close(e);
    return st ? ft_cli_fail(st) : 0;
}
