/* ftc's help texts (ftc_help.c): the overview and each command's, the
 * text the man page ftc(1) is generated from. */
#ifndef FT_COMPILER_FTC_HELP_H
#define FT_COMPILER_FTC_HELP_H

#include <stdio.h>

typedef struct ftc_help {
    const char *name;    /* the command */
    const char *summary; /* one line, for the overview */
    const char *text;    /* its help: usage, description, options with defaults, examples */
} ftc_help_t;

/* Every command, ended by a zeroed entry. */
extern const ftc_help_t ftc_help_commands[];
/* The command called name, or NULL. */
const ftc_help_t *ftc_help_find(const char *name);
/* What `ftc help` prints. */
void ftc_help_overview(FILE *out);
/* Prints command name's help on stdout (for --help) and returns 0. */
int ftc_help_print(const char *name);
/* The usage lines of command name's help and where to find the rest, for
 * usage errors. */
void ftc_help_usage(const char *name, FILE *out);

#endif
