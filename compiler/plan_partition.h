/* The machine-specific part of a compiled plan: solving the planner for an
 * imported model in the formats its bundle is written in, and storing the
 * result (partition, q* table, predictions), its budgets, the profile and
 * calibration counts in the ftplan message. */
#ifndef FT_COMPILER_PLAN_PARTITION_H
#define FT_COMPILER_PLAN_PARTITION_H

#include "calibrate.h"
#include "compile.h"
#include "plan.pb-c.h"

/* What ft_compile_plan_solve decided. */
typedef struct ft_compile_plan {
    ft_plan_result_t result;
    ft_plan_budget_t budget; /* resolved: the budgets the result was solved for */
} ft_compile_plan_t;

/* Solves the planner for plan (built by ft_plan_build, with its
 * calibration counts when there are any) with opts->hw_profile and
 * opts->budget. The model description is the runtime's
 * (ft_plan_model_from_plan): the packed tensors, the FTW expert blobs, the
 * plan's KV format and the calibration's popularity. A plan that does not
 * fit is FT_STATUS_OUT_OF_RANGE with the planner's reason. Release with
 * ft_compile_plan_release. */
FT_WARN_UNUSED ft_status_t ft_compile_plan_solve(const Ftplan__Plan *plan, const ft_compile_options_t *opts,
                                  ft_compile_plan_t *out);
void ft_compile_plan_release(ft_compile_plan_t *cp);

/* Sets plan->hw_profile (borrowed: it must outlive the message), budget
 * and partition from cp; every other allocation comes from arena. */
FT_WARN_UNUSED ft_status_t ft_plan_add_partition(Ftplan__Plan *plan, const Fthw__Profile *hw,
                                  const ft_compile_plan_t *cp, uint32_t n_layers,
                                  ft_arena_t *arena);

/* Sets plan->calibration from c (counts borrowed: c must outlive the
 * message). */
FT_WARN_UNUSED ft_status_t ft_plan_add_calibration(Ftplan__Plan *plan, const ft_calibration_t *c,
                                    ft_arena_t *arena);

#endif
