/* The ft command line: shared helpers of its subcommands. */
#ifndef FT_CLI_CLI_H
#define FT_CLI_CLI_H

#include "freetoken.h"

#include <stdint.h>
#include <stdio.h>

/* The commands: each takes its own argv (argv[0] is the command's name)
 * and returns the exit code. */
int ft_cli_run(int argc, char **argv);
int ft_cli_logits(int argc, char **argv);
int ft_cli_perplexity(int argc, char **argv);
int ft_cli_bench(int argc, char **argv);
/* ft bench --parallel N (cli_bench_parallel.c): prints the report. */
FT_WARN_UNUSED ft_status_t ft_cli_bench_parallel(ft_engine_t *e, uint32_t n_par, uint32_t n_prompt,
                                                 uint32_t n_gen, int json);
/* ft bench --agent-edit (cli_bench_agent.c): prints the report. */
FT_WARN_UNUSED ft_status_t ft_cli_bench_agent(ft_engine_t *e, uint32_t ctx, uint32_t reps, int json);
int ft_cli_chat(int argc, char **argv);
int ft_cli_serve(int argc, char **argv);
int ft_cli_launch(int argc, char **argv);
int ft_cli_version(int argc, char **argv);
int ft_cli_help(int argc, char **argv);

/* A command: its name, a one-line summary, its help (cli_help.c, the text
 * the man page is generated from) and its entry point. */
typedef struct ft_cli_command {
    const char *name, *summary, *help;
    int (*main)(int argc, char **argv);
} ft_cli_command_t;

/* Every command, ended by a zeroed entry. */
extern const ft_cli_command_t ft_cli_commands[];
/* The command called name, or NULL. */
const ft_cli_command_t *ft_cli_command_find(const char *name);
/* The overview `ft help` prints: what ft is, the commands, sizes, exit
 * status, examples. */
void ft_cli_usage(FILE *out);
/* Prints command name's help on stdout (for --help) and returns 0. */
int ft_cli_print_help(const char *name);

/* Prints "ft: error: <message>", frees st, returns 1. */
int ft_cli_fail(ft_status_t st);
double ft_cli_now(void);
/* Parses "1,2,3" into a malloc'ed array; NULL status on success. */
FT_WARN_UNUSED ft_status_t ft_cli_parse_tokens(const char *s, int32_t **out_ids, uint32_t *out_n);
/* Parses a non-negative integer option value, or fails with its name. */
FT_WARN_UNUSED ft_status_t ft_cli_parse_u32(const char *name, const char *s, uint32_t *out);
FT_WARN_UNUSED ft_status_t ft_cli_parse_float(const char *name, const char *s, float *out);
/* Sizes: "512", "3M", "8G", "24GiB", "1.5G" (binary units: K = 1024). */
FT_WARN_UNUSED ft_status_t ft_cli_parse_size(const char *name, const char *s, uint64_t *out);
/* "cpu", "sim" or "cuda". */
FT_WARN_UNUSED ft_status_t ft_cli_parse_backend(const char *s, ft_backend_kind_t *out);
/* The options of every command that opens an engine: --threads N,
 * --backend cpu|sim|cuda, --hw PROFILE, --vram SIZE, --kernels auto|generated|reference,
 * --verify lazy|full|off (getopt codes >= 0x100), and -h, --help (getopt code
 * 'h': put "h" in the short options too). Their help is cli_help.c's
 * FT_HELP_ENGINE. */
// clang-format off
#define FT_CLI_ENGINE_LONGOPTS                                                               \
    {"threads", required_argument, 0, 0x100}, {"backend", required_argument, 0, 0x101},       \
        {"hw", required_argument, 0, 0x102}, {"vram", required_argument, 0, 0x103},           \
        {"kernels", required_argument, 0, 0x104}, {"verify", required_argument, 0, 0x105},     \
        {"kv-budget", required_argument, 0, 0x106}, {"help", no_argument, 0, 'h'}
// clang-format on

/* Applies getopt result c to eo when it is one of those: returns 1 (and
 * *st: the parse status), else 0. */
int ft_cli_engine_option(int c, const char *arg, ft_engine_options_t *eo, ft_status_t *st);

/* Opens the engine; for the cuda backend without a GPU, says so in one line
 * and falls back to the cpu backend. */
FT_WARN_UNUSED ft_status_t ft_cli_open_engine(const char *bundle, ft_engine_options_t *eo,
                                              ft_engine_t **out);
/* Writes s (n bytes) as a JSON string literal, escaping as needed. */
void ft_cli_json_string(FILE *out, const char *s, size_t n);

#endif
