/* ft serve: the OpenAI- and Anthropic-compatible HTTP server
 * (runtime/serve/). This file only reads the command line and opens the
 * engine; serve/ does the rest through freetoken.h. */
#include "cli.h"

#include <stdio.h>

#if FT_HAVE_SERVE
#include "serve/serve.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

int ft_cli_serve(int argc, char **argv)
{
    static const struct option longopts[] = {{"host", required_argument, 0, 'H'},
                                             {"port", required_argument, 0, 'p'},
                                             {"api-key", required_argument, 0, 'k'},
                                             {"parallel", required_argument, 0, 'P'},
                                             {"ctx", required_argument, 0, 'C'},
                                             {"max-body", required_argument, 0, 'B'},
                                             {"model-id", required_argument, 0, 'M'},
                                             {"script", required_argument, 0, 'S'},
                                             {"prefix-cache", required_argument, 0, 'N'},
                                             FT_CLI_ENGINE_LONGOPTS,
                                             {0, 0, 0, 0}};
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    ft_serve_options_t so;
    ft_serve_options_init(&so);
    uint32_t port = so.port, parallel = 4, n_ctx = 0;
    ft_status_t st = FT_OK;
    int opt;
    while (!st && (opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'H':
            so.host = optarg;
            break;
        case 'p':
            st = ft_cli_parse_u32("--port", optarg, &port);
            break;
        case 'k':
            so.api_key = optarg;
            break;
        case 'P':
            st = ft_cli_parse_u32("--parallel", optarg, &parallel);
            break;
        case 'C':
            st = ft_cli_parse_u32("--ctx", optarg, &n_ctx);
            break;
        case 'B':
            st = ft_cli_parse_size("--max-body", optarg, &so.max_body_bytes);
            break;
        case 'M':
            so.model_id = optarg;
            break;
        case 'S':
            so.script_path = optarg;
            break;
        case 'N':
            if (!strcmp(optarg, "anchors"))
                so.prefix_cache = FT_SERVE_CACHE_ANCHORS;
            else if (!strcmp(optarg, "rewind"))
                so.prefix_cache = FT_SERVE_CACHE_REWIND;
            else if (!strcmp(optarg, "off"))
                so.prefix_cache = FT_SERVE_CACHE_OFF;
            else
                st = ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                                    "--prefix-cache '%s': anchors, rewind or off", optarg);
            break;
        case 'h':
            return ft_cli_print_help("serve");
        default:
            if (!ft_cli_engine_option(opt, optarg, &eo, &st)) return 2;
        }
    }
    if (!st && port > 65535)
        st = ft_status_make(FT_STATUS_INVALID_ARGUMENT, "--port %u: above 65535", port);
    if (!st && parallel == 0)
        st = ft_status_make(FT_STATUS_INVALID_ARGUMENT, "--parallel must be at least 1");
    if (st) {
        ft_cli_fail(st);
        return 2;
    }
    if (optind + 1 != argc) {
        fputs("ft serve: one BUNDLE is needed\n", stderr);
        return 2;
    }
    if (!so.api_key) { /* from the environment: out of the process's command line (a service's
                          EnvironmentFile, packaging/freetoken.service) */
        const char *env = getenv("FT_API_KEY");
        if (env && env[0]) so.api_key = env;
    }
    if (so.api_key && !so.api_key[0]) {
        fputs("ft serve: --api-key is empty\n", stderr);
        return 2;
    }
    if (!so.api_key && !ft_serve_host_is_loopback(so.host)) {
        fprintf(stderr,
                "ft serve: refusing to listen on '%s' (not a loopback address) without "
                "--api-key\n",
                so.host);
        return 2;
    }
    so.port = (uint16_t)port;
    eo.max_running = parallel;
    so.n_slots = parallel; /* one kept session per request that can run at once */
    eo.plan_ctx = n_ctx;
    ft_engine_t *e = NULL;
    if ((st = ft_cli_open_engine(argv[optind], &eo, &e))) return ft_cli_fail(st);
    const uint32_t model_ctx = ft_engine_info(e)->context_length;
    so.n_ctx = n_ctx ? n_ctx : (model_ctx && model_ctx < 4096 ? model_ctx : 4096);
    if (model_ctx && so.n_ctx > model_ctx) so.n_ctx = model_ctx;
    if (!strcmp(so.model_id, "freetoken")) {
        /* the bundle's folder name, without a trailing slash */
        static char name[256];
        const char *b = argv[optind];
        size_t n = strlen(b);
        while (n > 1 && b[n - 1] == '/')
            n--;
        size_t s = n;
        while (s > 0 && b[s - 1] != '/')
            s--;
        if (n - s > 0 && n - s < sizeof(name)) {
            memcpy(name, b + s, n - s);
            name[n - s] = '\0';
            so.model_id = name;
        }
    }
    st = ft_serve_run(e, &so, stdout);
    ft_status_t cst = ft_engine_close(e);
    if (st) {
        ft_status_free(cst);
        return ft_cli_fail(st);
    }
    return cst ? ft_cli_fail(cst) : 0;
}
#else
/* Built with -DFT_SERVE=OFF (scripts/gpu-prepare.sh's glibc-only ft). */
int ft_cli_serve(int argc, char **argv)
{
    (void)argc, (void)argv;
    fputs("ft serve: this ft was built without the HTTP server (cmake -DFT_SERVE=OFF)\n", stderr);
    return 1;
}
#endif
