/* `ftc plan`: plan a model for a machine before downloading its weights. */
#ifndef FT_COMPILER_CMD_PLAN_H
#define FT_COMPILER_CMD_PLAN_H

#include <stdint.h>

/* argv[0] is "plan". Exit codes: 0 the model fits, 1 it does not fit or an
 * error, 2 usage. */
int ftc_cmd_plan(int argc, char **argv);

/* Strict size parser for budgets: a number (decimals allowed) and an
 * optional unit: none (bytes), K/M/G/T or KiB/MiB/GiB/TiB (powers of
 * 1024), KB/MB/GB/TB (powers of 1000); case-insensitive. Returns 0 for
 * anything else (empty, signs, trailing text, zero, overflow). */
int ftc_parse_size(const char *s, uint64_t *out);

#endif
