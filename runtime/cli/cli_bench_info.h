/* What makes an `ft bench --json` result reproducible, recorded next to
 * the numbers: the bundle (path, plan and weights hashes, architecture,
 * producer), this machine (CPU facts and the DRAM bandwidth measured in the
 * same run), the hardware profile the plan was solved for or the sim
 * modelled, the build of this ft, and the command line. */
#ifndef FT_CLI_BENCH_INFO_H
#define FT_CLI_BENCH_INFO_H

#include "freetoken.h"

#include "base/membw.h"

/* The command line as a JSON array, ["ft", argv[0], ...] (argv[0]:
 * "bench"). Take it before getopt reorders argv. NULL when out of memory;
 * free() it. */
char *ft_cli_bench_argv_json(int argc, char *const *argv);

typedef struct ft_bench_info_in {
    const char *bundle;            /* as given on the command line */
    const char *hw_path;           /* --hw, or NULL */
    int hw_modelled;               /* the backend uses hw_path (sim, cuda) */
    const ft_membw_result_t *dram; /* measured in this run */
    const char *argv_json;         /* ft_cli_bench_argv_json */
} ft_bench_info_in_t;

/* The members ", \"bundle\": {...}, \"machine\": {...}, \"profile\":
 * {...} | null, \"build\": {...}, \"argv\": [...]", ready to close a JSON
 * object with. *out is malloc'ed (free()). Fails when the bundle or the
 * profile cannot be read again (messages name the file) or out of memory. */
FT_WARN_UNUSED ft_status_t ft_cli_bench_info(const ft_bench_info_in_t *in, char **out);

#endif
