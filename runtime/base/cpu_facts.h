/* This machine's CPU as the OS describes it: model and ISA flags
 * (/proc/cpuinfo), logical and physical cores, RAM (sysconf). One reader
 * behind `ftc profile`'s CPU facts (hwprofiles/cpu_info.c) and the machine
 * `ft bench --json` records, so the two describe a machine alike. */
#ifndef FT_BASE_CPU_FACTS_H
#define FT_BASE_CPU_FACTS_H

#include <stdint.h>

#define FT_CPU_FACTS_CPUINFO "/proc/cpuinfo"
#define FT_CPU_FACTS_MAX_ISA 32

typedef struct ft_cpu_facts {
    char model[128];  /* "model name" (x86), "Model" or "Hardware" (arm64); "unknown CPU" */
    uint32_t n_cores; /* logical CPUs online, at least 1 */
    uint32_t n_physical_cores; /* distinct (physical id, core id) pairs; n_cores when not listed */
    uint64_t ram_bytes;        /* 0 when sysconf does not say */
    uint32_t n_isa;
    /* The profile's ISA names (hwprofile.proto: "avx2", "avx512_vnni",
     * "amx", "neon", "dotprod", ...) of the flags the first processor
     * lists, in a fixed order; static strings. */
    const char *isa[FT_CPU_FACTS_MAX_ISA];
} ft_cpu_facts_t;

/* Fills *out. cpuinfo: the file to read (NULL: FT_CPU_FACTS_CPUINFO); one
 * that cannot be read (not Linux, /proc not mounted) gives "unknown CPU"
 * and no ISA flags. Cores and RAM always come from this machine. Never
 * fails and allocates nothing. */
void ft_cpu_facts_read(const char *cpuinfo, ft_cpu_facts_t *out);

#endif
