/* ft launch claude|codex|opencode: a coding agent on freetoken (issue 11,
 * item 5). Finds an ft serve answering GET /health on the port, or starts
 * one on the bundle (its own process group, so the terminal's Ctrl-C goes
 * to the agent alone; its output in a log file) and waits until it
 * answers; then runs the agent with the environment and configuration
 * that point it there (docs/agents.md shows the same by hand):
 *   claude    ANTHROPIC_BASE_URL, ANTHROPIC_AUTH_TOKEN, the model for every
 *             model slot (ANTHROPIC_MODEL, ANTHROPIC_DEFAULT_{OPUS,SONNET,
 *             HAIKU}_MODEL, ANTHROPIC_SMALL_FAST_MODEL, CLAUDE_CODE_SUBAGENT_MODEL),
 *             no nonessential traffic, a long API timeout;
 *   codex     -c overrides: a model_provider "freetoken" with base_url .../v1,
 *             wire_api "responses", no websockets, the key in
 *             FREETOKEN_API_KEY (env_key);
 *   opencode  OPENCODE_CONFIG_CONTENT: a provider "freetoken" on
 *             @ai-sdk/openai-compatible with baseURL .../v1, the model as the
 *             default and the small model.
 * A server it found keeps running and the agent replaces ft (exec); a
 * server it started is stopped (SIGTERM) when the agent exits, and ft
 * exits with the agent's status. */
#include "cli.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* One GET over loopback: the status code (0: no answer), and the body's
 * start in body (NUL-terminated; NULL: not wanted). */
static int ft_launch_get(uint16_t port, const char *path, const char *key, char *body, size_t cap)
{
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int code = 0;
    char req[512], buf[16384];
    const int n = snprintf(
        req, sizeof(req),
        "GET %s HTTP/1.0\r\nHost: 127.0.0.1:%u\r\n%s%s%sConnection: close\r\n\r\n", path,
        (unsigned)port, key ? "Authorization: Bearer " : "", key ? key : "", key ? "\r\n" : "");
    if (n > 0 && (size_t)n < sizeof(req) && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        write(fd, req, (size_t)n) == n) {
        size_t got = 0;
        for (;;) {
            struct pollfd pf = {.fd = fd, .events = POLLIN};
            if (poll(&pf, 1, 5000) <= 0) break; /* a server that does not answer in 5 s */
            const ssize_t r = read(fd, buf + got, sizeof(buf) - 1 - got);
            if (r <= 0) break;
            got += (size_t)r;
            if (got == sizeof(buf) - 1) break;
        }
        buf[got] = '\0';
        int major = 0, minor = 0;
        if (sscanf(buf, "HTTP/%d.%d %d", &major, &minor, &code) != 3) code = 0;
        if (body && cap) {
            const char *b = strstr(buf, "\r\n\r\n");
            snprintf(body, cap, "%s", b ? b + 4 : "");
        }
    }
    close(fd);
    return code;
}

/* A freetoken server answers /health: 200 "ok", or 503 "degraded" (it
 * still serves). */
static int ft_launch_alive(uint16_t port)
{
    char body[256];
    const int code = ft_launch_get(port, "/health", NULL, body, sizeof(body));
    return (code == 200 || code == 503) && strstr(body, "\"status\"");
}

/* Starts `ft serve BUNDLE --port P [serve args]` (this executable) in its
 * own process group, output to log; waits until it answers or exits. */
static pid_t ft_launch_serve(const char *bundle, uint16_t port, char **serve_args, int n_serve,
                             const char *log)
{
    const int lfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (lfd < 0) {
        fprintf(stderr, "ft launch: cannot write the server's log %s: %s\n", log, strerror(errno));
        return -1;
    }
    char self[4096];
    const ssize_t sn = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (sn <= 0) {
        close(lfd);
        fprintf(stderr, "ft launch: cannot find this executable (/proc/self/exe)\n");
        return -1;
    }
    self[sn] = '\0';
    char ports[16];
    snprintf(ports, sizeof(ports), "%u", (unsigned)port);
    char **argv = calloc((size_t)n_serve + 6, sizeof(*argv));
    if (!argv) {
        close(lfd);
        return -1;
    }
    int k = 0;
    argv[k++] = self;
    argv[k++] = "serve";
    argv[k++] = (char *)bundle;
    argv[k++] = "--port";
    argv[k++] = ports;
    for (int i = 0; i < n_serve; i++)
        argv[k++] = serve_args[i];
    argv[k] = NULL;
    const pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        const int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) dup2(nul, 0);
        dup2(lfd, 1);
        dup2(lfd, 2);
        execv(self, argv);
        _exit(127);
    }
    free(argv);
    close(lfd);
    if (pid < 0) {
        fprintf(stderr, "ft launch: fork: %s\n", strerror(errno));
        return -1;
    }
    /* a large model takes a while to open: wait as long as it lives */
    for (;;) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            fprintf(stderr, "ft launch: ft serve %s exited before answering; its log %s:\n", bundle,
                    log);
            FILE *f = fopen(log, "r");
            char line[512];
            while (f && fgets(line, sizeof(line), f))
                fputs(line, stderr);
            if (f) fclose(f);
            return -1;
        }
        if (ft_launch_alive(port)) return pid;
        nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
    }
}

/* The model's context from GET /v1/models ("context_length": N), or 0. */
static uint32_t ft_launch_ctx(uint16_t port, const char *key)
{
    char body[8192];
    if (ft_launch_get(port, "/v1/models", key, body, sizeof(body)) != 200) return 0;
    const char *p = strstr(body, "\"context_length\"");
    unsigned long v = 0;
    if (p && (p = strchr(p, ':'))) v = strtoul(p + 1, NULL, 10);
    return v < UINT32_MAX ? (uint32_t)v : 0;
}

static int ft_launch_setenv(const char *name, const char *value, int overwrite)
{
    if (setenv(name, value, overwrite) == 0) return 1;
    fprintf(stderr, "ft launch: setenv %s: %s\n", name, strerror(errno));
    return 0;
}

/* A JSON string literal of s (model names and keys: printable ASCII
 * expected, anything else escaped). */
static void ft_launch_json_str(char *out, size_t cap, const char *s)
{
    size_t n = 0;
    if (cap < 3) return;
    out[n++] = '"';
    for (; *s && n + 8 < cap; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            n += (size_t)snprintf(out + n, cap - n, "\\%c", c);
        else if (c < 0x20)
            n += (size_t)snprintf(out + n, cap - n, "\\u%04x", c);
        else
            out[n++] = (char)c;
    }
    out[n++] = '"';
    out[n] = '\0';
}

typedef enum { FT_AGENT_CLAUDE, FT_AGENT_CODEX, FT_AGENT_OPENCODE } ft_agent_t;

/* The agent's argv (argv[0] its name, then ours, then the user's) with
 * its environment set. NULL on failure. */
static char **ft_launch_agent_argv(ft_agent_t agent, uint16_t port, const char *key,
                                   const char *model, uint32_t ctx, char **user, int n_user)
{
    static char url[64], url_v1[80], cfg[8][320];
    static char json[4096];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u", (unsigned)port);
    snprintf(url_v1, sizeof(url_v1), "%s/v1", url);
    char **argv = calloc((size_t)n_user + 24, sizeof(*argv)); /* ours: at most 17 */
    if (!argv) return NULL;
    int k = 0, ok = 1;
    switch (agent) {
    case FT_AGENT_CLAUDE: {
        argv[k++] = "claude";
        static const char *const slots[] = {"ANTHROPIC_MODEL",
                                            "ANTHROPIC_DEFAULT_OPUS_MODEL",
                                            "ANTHROPIC_DEFAULT_SONNET_MODEL",
                                            "ANTHROPIC_DEFAULT_HAIKU_MODEL",
                                            "ANTHROPIC_SMALL_FAST_MODEL",
                                            "CLAUDE_CODE_SUBAGENT_MODEL"};
        ok = ft_launch_setenv("ANTHROPIC_BASE_URL", url, 1) &&
             ft_launch_setenv("ANTHROPIC_AUTH_TOKEN", key, 1);
        for (size_t i = 0; ok && i < sizeof(slots) / sizeof(slots[0]); i++)
            ok = ft_launch_setenv(slots[i], model, 1);
        /* a real Anthropic key has no business with a local server */
        unsetenv("ANTHROPIC_API_KEY");
        ok = ok && ft_launch_setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1", 0) &&
             ft_launch_setenv("API_TIMEOUT_MS", "3600000", 0);
        break;
    }
    case FT_AGENT_CODEX: {
        argv[k++] = "codex";
        char m[256];
        ft_launch_json_str(m, sizeof(m), model);
        snprintf(cfg[0], sizeof(cfg[0]), "model=%s", m);
        snprintf(cfg[1], sizeof(cfg[1]), "model_provider=\"freetoken\"");
        snprintf(cfg[2], sizeof(cfg[2]), "model_providers.freetoken.name=\"freetoken\"");
        snprintf(cfg[3], sizeof(cfg[3]), "model_providers.freetoken.base_url=\"%s\"", url_v1);
        snprintf(cfg[4], sizeof(cfg[4]), "model_providers.freetoken.env_key=\"FREETOKEN_API_KEY\"");
        snprintf(cfg[5], sizeof(cfg[5]), "model_providers.freetoken.wire_api=\"responses\"");
        snprintf(cfg[6], sizeof(cfg[6]), "model_providers.freetoken.supports_websockets=false");
        snprintf(cfg[7], sizeof(cfg[7]),
                 "model_providers.freetoken.stream_idle_timeout_ms=3600000");
        for (int i = 0; i < 8; i++) {
            argv[k++] = "-c";
            argv[k++] = cfg[i];
        }
        ok = ft_launch_setenv("FREETOKEN_API_KEY", key, 1);
        break;
    }
    case FT_AGENT_OPENCODE: {
        argv[k++] = "opencode";
        char m[256], kq[512];
        ft_launch_json_str(m, sizeof(m), model);
        ft_launch_json_str(kq, sizeof(kq), key);
        char limit[96] = "";
        if (ctx)
            snprintf(limit, sizeof(limit), ", \"limit\": {\"context\": %u, \"output\": %u}", ctx,
                     ctx / 4 < 32768 ? ctx / 4 : 32768);
        const char *bare = m + 1; /* the name without its quotes, for "freetoken/NAME" */
        const int n = snprintf(
            json, sizeof(json),
            "{\"$schema\": \"https://opencode.ai/config.json\", \"provider\": {\"freetoken\": "
            "{\"npm\": \"@ai-sdk/openai-compatible\", \"name\": \"freetoken\", \"options\": "
            "{\"baseURL\": \"%s\", \"apiKey\": %s, \"timeout\": false}, \"models\": {%s: "
            "{\"name\": %s, \"tool_call\": true, \"reasoning\": true%s}}}}, \"model\": "
            "\"freetoken/%.*s\", \"small_model\": \"freetoken/%.*s\"}",
            url_v1, kq, m, m, limit, (int)strlen(bare) - 1, bare, (int)strlen(bare) - 1, bare);
        ok = n > 0 && (size_t)n < sizeof(json) &&
             ft_launch_setenv("OPENCODE_CONFIG_CONTENT", json, 1);
        break;
    }
    }
    for (int i = 0; i < n_user; i++)
        argv[k++] = user[i];
    argv[k] = NULL;
    if (!ok) {
        free(argv);
        return NULL;
    }
    return argv;
}

int ft_cli_launch(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"port", required_argument, 0, 'p'}, {"model", required_argument, 0, 'm'},
        {"ctx", required_argument, 0, 'C'},  {"parallel", required_argument, 0, 'P'},
        {"help", no_argument, 0, 'h'},       {0, 0, 0, 0}};
    uint32_t port = 8080;
    const char *model = "freetoken", *ctx_arg = NULL, *par_arg = NULL;
    ft_status_t st = FT_OK;
    int opt;
    /* "+": stop at the first operand, so that what follows "--" (or the
     * agent's own options after it) is the agent's */
    while (!st && (opt = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'p':
            st = ft_cli_parse_u32("--port", optarg, &port);
            break;
        case 'm':
            model = optarg;
            break;
        case 'C':
            ctx_arg = optarg;
            break;
        case 'P':
            par_arg = optarg;
            break;
        case 'h':
            return ft_cli_print_help("launch");
        default:
            return 2;
        }
    }
    if (!st && (port == 0 || port > 65535))
        st = ft_status_make(FT_STATUS_INVALID_ARGUMENT, "--port %u: 1 to 65535", port);
    if (st) {
        ft_cli_fail(st);
        return 2;
    }
    /* AGENT [BUNDLE] [--port P ...] [-- AGENT ARGS]: options may follow the operands too */
    const char *agent_name = NULL, *bundle = NULL;
    char **user = NULL;
    int n_user = 0;
    while (optind < argc) {
        if (!strcmp(argv[optind], "--")) {
            user = argv + optind + 1;
            n_user = argc - optind - 1;
            break;
        }
        if (argv[optind][0] == '-') {
            const int at = optind;
            opt = getopt_long(argc, argv, "+h", longopts, NULL);
            if (opt == 'p')
                st = ft_cli_parse_u32("--port", optarg, &port);
            else if (opt == 'm')
                model = optarg;
            else if (opt == 'C')
                ctx_arg = optarg;
            else if (opt == 'P')
                par_arg = optarg;
            else if (opt == 'h')
                return ft_cli_print_help("launch");
            else
                return 2;
            if (st || optind == at) break;
            continue;
        }
        if (!agent_name)
            agent_name = argv[optind];
        else if (!bundle)
            bundle = argv[optind];
        else {
            fprintf(stderr, "ft launch: unexpected '%s' (the agent's own arguments go after --)\n",
                    argv[optind]);
            return 2;
        }
        optind++;
    }
    if (st) {
        ft_cli_fail(st);
        return 2;
    }
    ft_agent_t agent;
    if (agent_name && !strcmp(agent_name, "claude"))
        agent = FT_AGENT_CLAUDE;
    else if (agent_name && !strcmp(agent_name, "codex"))
        agent = FT_AGENT_CODEX;
    else if (agent_name && !strcmp(agent_name, "opencode"))
        agent = FT_AGENT_OPENCODE;
    else {
        fprintf(stderr, "ft launch: the agent must be claude, codex or opencode%s%s\n",
                agent_name ? ", not " : "", agent_name ? agent_name : "");
        return 2;
    }
    const char *env_key = getenv("FT_API_KEY");
    const char *key = env_key && env_key[0] ? env_key : "freetoken";
    pid_t server = 0;
    char log[512] = "";
    if (ft_launch_alive((uint16_t)port)) {
        fprintf(stderr, "ft launch: using the ft serve on http://127.0.0.1:%u\n", (unsigned)port);
    } else if (!bundle) {
        fprintf(stderr,
                "ft launch: nothing answers on http://127.0.0.1:%u/health; give a BUNDLE to "
                "serve\n",
                (unsigned)port);
        return 2;
    } else {
        const char *tmpdir = getenv("TMPDIR");
        snprintf(log, sizeof(log), "%s/ft-launch-%u.log", tmpdir && tmpdir[0] ? tmpdir : "/tmp",
                 (unsigned)port);
        char *serve_args[4];
        int n_serve = 0;
        if (ctx_arg) serve_args[n_serve++] = "--ctx", serve_args[n_serve++] = (char *)ctx_arg;
        if (par_arg) serve_args[n_serve++] = "--parallel", serve_args[n_serve++] = (char *)par_arg;
        fprintf(stderr, "ft launch: starting ft serve %s on http://127.0.0.1:%u (log: %s)\n",
                bundle, (unsigned)port, log);
        server = ft_launch_serve(bundle, (uint16_t)port, serve_args, n_serve, log);
        if (server < 0) return 1;
    }
    const uint32_t ctx = ft_launch_ctx((uint16_t)port, key);
    char **agent_argv = ft_launch_agent_argv(agent, (uint16_t)port, key, model, ctx, user, n_user);
    int rc = 1;
    if (agent_argv && !server) {
        execvp(agent_argv[0], agent_argv);
        fprintf(stderr, "ft launch: cannot run '%s': %s\n", agent_argv[0], strerror(errno));
        free(agent_argv);
        return 127;
    }
    if (agent_argv) {
        /* like system(): the terminal's Ctrl-C is the agent's to handle */
        struct sigaction ign = {.sa_handler = SIG_IGN}, old_int, old_quit;
        sigemptyset(&ign.sa_mask);
        sigaction(SIGINT, &ign, &old_int);
        sigaction(SIGQUIT, &ign, &old_quit);
        const pid_t child = fork();
        if (child == 0) {
            sigaction(SIGINT, &old_int, NULL);
            sigaction(SIGQUIT, &old_quit, NULL);
            execvp(agent_argv[0], agent_argv);
            fprintf(stderr, "ft launch: cannot run '%s': %s\n", agent_argv[0], strerror(errno));
            _exit(127);
        }
        int status = 0;
        if (child > 0) {
            while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
            }
            rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        } else {
            fprintf(stderr, "ft launch: fork: %s\n", strerror(errno));
        }
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGQUIT, &old_quit, NULL);
        free(agent_argv);
    }
    /* the server it started goes with the agent */
    kill(server, SIGTERM);
    int status;
    while (waitpid(server, &status, 0) < 0 && errno == EINTR) {
    }
    return rc;
}
