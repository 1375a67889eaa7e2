/* Help text that ft (cli_help.c) and ftc (compiler/ftc_help.c) share, in
 * the layout their man pages are generated from. */
#ifndef FT_CLI_HELP_TEXT_H
#define FT_CLI_HELP_TEXT_H

/* Both programs' exit codes. */
#define FT_HELP_EXIT_STATUS                                                                        \
    "exit status:\n"                                                                               \
    "  0  success\n"                                                                               \
    "  1  failure: a message on stderr says what was wrong and where (file, field,\n"              \
    "     offset)\n"                                                                               \
    "  2  usage error: an unknown option, or a missing or malformed argument\n"

#endif
