/* Shared between plan_validate.c, plan_validate_tensors.c and
 * plan_validate_partition.c only. */
#ifndef FT_FORMAT_PLAN_VALIDATE_INTERNAL_H
#define FT_FORMAT_PLAN_VALIDATE_INTERNAL_H

#include "freetoken.h"
#include "ftw.h"
#include "plan.pb-c.h"

#include <stddef.h>

/* Names from a hostile plan may be megabytes long: messages print at most
 * this many bytes of one (printf "%.*s"). */
#define FT_PLAN_NAME_MAX 128

typedef struct ft_plan_named {
    const char *name;
    size_t index; /* position in the repeated field, for messages */
} ft_plan_named_t;

/* 1 if value is defined by the enum. */
int ft_plan_enum_ok(const ProtobufCEnumDescriptor *desc, int value);

/* Sorts items and fails (FT_STATUS_FORMAT) on the first duplicate name;
 * what is the field, e.g. "tensors". O(n log n) for hostile n. */
FT_WARN_UNUSED ft_status_t ft_plan_check_unique(ft_plan_named_t *items, size_t n, const char *name,
                                 const char *what);

/* Need hparams, blocks and weight_files already checked. */
FT_WARN_UNUSED ft_status_t ft_plan_check_tensors(const Ftplan__Plan *plan, const char *name);
FT_WARN_UNUSED ft_status_t ft_plan_check_expert_blocks(const Ftplan__Plan *plan, const char *name);

/* plan_validate_partition.c; need hparams and blocks already checked. */
FT_WARN_UNUSED ft_status_t ft_plan_check_partition(const Ftplan__Plan *plan, const char *name);
FT_WARN_UNUSED ft_status_t ft_plan_check_calibration(const Ftplan__Plan *plan, const char *name);

/* plan_validate_kernels.c: the CPU module and CUDA images. */
FT_WARN_UNUSED ft_status_t ft_plan_check_kernels(const Ftplan__Plan *plan, const char *name);

/* plan_validate_schedule.c: the op schedule; needs hparams and tensors
 * already checked. */
FT_WARN_UNUSED ft_status_t ft_plan_check_schedule(const Ftplan__Plan *plan, const char *name);

#endif
