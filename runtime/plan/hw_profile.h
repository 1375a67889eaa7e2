/* Hardware profiles (hwprofile.proto, text form) -> the planner's view of
 * the machine (ft_hw_t, hw.h). Profiles come from `ftc profile` or from
 * the presets in hwprofiles/presets/ (.textproto files). */
#ifndef FT_PLAN_HW_PROFILE_H
#define FT_PLAN_HW_PROFILE_H

#include "freetoken.h"
#include "../format/hw.h"
#include "hwprofile.pb-c.h"

/* Fills *out from a profile. Uses each figure's median and the first GPU.
 * Per-format GEMV rates measured at several shapes are combined as the
 * rate of streaming all of them once (total bytes / total time).
 * cpu.dram_read_gbs must be positive; a GPU needs a positive h2d_gbs.
 * dram_overlap_gbs takes the GPU's cpu_gemv_overlap_gbs (the CPU's expert
 * rate while PCIe copies run), 0 when not measured. Errors name the field. */
FT_WARN_UNUSED ft_status_t ft_hw_from_profile(const Fthw__Profile *p, ft_hw_t *out);

/* Reads a text profile or preset (path names it in errors). *out_profile
 * is released with fthw__profile__free_unpacked(p, NULL). */
FT_WARN_UNUSED ft_status_t ft_hw_profile_load(const char *path, Fthw__Profile **out_profile);

/* ft_hw_profile_load + ft_hw_from_profile. */
FT_WARN_UNUSED ft_status_t ft_hw_load(const char *path, ft_hw_t *out);

/* 1 when a and b hold the same figures (names, counts, every rate), so a
 * plan solved for one holds for the other. */
int ft_hw_same(const ft_hw_t *a, const ft_hw_t *b);

#endif
