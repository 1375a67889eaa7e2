/* `ftc inspect BUNDLE --schedule`: the plan's op schedule as text, one op
 * a line, and as the "schedule" field of --json. */
#ifndef FT_COMPILER_SCHEDULE_REPORT_H
#define FT_COMPILER_SCHEDULE_REPORT_H

#include "freetoken.h"
#include "plan.pb-c.h"

#include <jansson.h>
#include <stdio.h>

/* Prints nothing but a line saying so when the plan has no schedule. */
void ft_schedule_print(const Ftplan__Plan *plan, FILE *out);
/* Adds "schedule" (null without one): buffers, prologue, blocks (a list
 * of op lists) and epilogue; each op names its kind, buffers, weights and
 * the parameters its kind reads. */
FT_WARN_UNUSED ft_status_t ft_schedule_json(const Ftplan__Plan *plan, json_t *obj);

#endif
