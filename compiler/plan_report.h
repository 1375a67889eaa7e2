/* `ftc inspect BUNDLE` for a plan solved for a machine: the partition as a
 * table, as JSON fields, and as an SVG picture (plan_svg.c). Every speed
 * shown is the planner's prediction. */
#ifndef FT_COMPILER_PLAN_REPORT_H
#define FT_COMPILER_PLAN_REPORT_H

#include "freetoken.h"
#include "plan.pb-c.h"

#include <jansson.h>
#include <stdio.h>

/* The table; prints nothing when the plan has no partition (a line about
 * calibration when it has only that). */
void ft_plan_report_print(const Ftplan__Plan *plan, FILE *out);

/* Adds the partition's fields to obj (vram_regions, n_slots, qstar, hit_rate,
 * predicted_decode_tok_s, ...; calibration_tokens) when the plan has them. */
FT_WARN_UNUSED ft_status_t ft_plan_report_json(const Ftplan__Plan *plan, json_t *obj);

/* Writes the SVG picture to path: bars of the VRAM regions and of host RAM,
 * and per layer the q* split at decode and the expected hit rate.
 * FT_STATUS_INVALID_ARGUMENT when the plan has no partition. */
FT_WARN_UNUSED ft_status_t ft_plan_svg_write(const Ftplan__Plan *plan, const char *path);

/* The decode q* of layer l: the first bucket's value (one token per
 * expert). The plan must have a validated partition. */
float ft_plan_report_decode_qstar(const Ftplan__Plan *plan, size_t l);

#endif
