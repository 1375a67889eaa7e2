/* ft: run compiled bundles. The commands, their summaries and their help
 * are one table (cli_help.c); `ft help` prints it.
 *
 * Exit codes: 0 ok, 1 failure, 2 usage. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        ft_cli_usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0) cmd = "version";
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) cmd = "help";
    const ft_cli_command_t *c = ft_cli_command_find(cmd);
    if (c) return c->main(argc - 1, argv + 1);
    fprintf(stderr, "ft: unknown command '%s'\n\n", cmd);
    ft_cli_usage(stderr);
    return 2;
}
