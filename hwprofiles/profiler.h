/* The hardware profiler behind `ftc profile` (DESIGN.md section 4):
 * measures this machine into a hwprofile.proto Profile. */
#ifndef FT_HWPROFILES_PROFILER_H
#define FT_HWPROFILES_PROFILER_H

#include "freetoken.h"
#include "hwprofile.pb-c.h"

#include "base/threadpool.h"
#include "format/dtype.h"

#include <stdint.h>

/* Called between measurements: stage names what runs next, fraction is
 * the share of the whole profile done so far (0..1). */
typedef void (*ft_profile_progress_fn)(void *user, const char *stage, double fraction);

typedef struct ft_profile_options {
    int quick;                  /* fewer, smaller runs: under ~30 s on a small machine */
    uint32_t n_threads;         /* 0: one per online CPU */
    uint64_t dram_buffer_bytes; /* 0: chosen from the L3 size and the RAM */
    uint32_t n_runs;            /* 0: 3 (quick) or 7 per figure */
    uint64_t gemv_bytes;        /* weights streamed per GEMV run; 0: chosen from the L3 */
    int skip_gpu;               /* do not look for a CUDA driver */
    ft_profile_progress_fn progress;
    void *progress_user;
} ft_profile_options_t;

void ft_profile_options_init(ft_profile_options_t *opts);

/* Measures the machine. *out is released with
 * fthw__profile__free_unpacked(*out, NULL). No GPU (no driver, no device)
 * is not an error: the profile then has no gpus and gpu_note says why. */
FT_WARN_UNUSED ft_status_t ft_profile_measure(const ft_profile_options_t *opts, Fthw__Profile **out);

/* The parts, for tests and for callers that want one figure. */
FT_WARN_UNUSED ft_status_t ft_hwp_cpu_facts(Fthw__Cpu *cpu);
FT_WARN_UNUSED ft_status_t ft_hwp_dram(const ft_profile_options_t *opts, uint64_t buffer_bytes, Fthw__Cpu *cpu);

/* The formats measured (those the CPU kernels compute). */
#define FT_HWP_N_GEMV_FORMATS 27
extern const ft_dtype_t ft_hwp_gemv_formats[FT_HWP_N_GEMV_FORMATS];

/* Per format and expert shape, weight GB/s on the pool's threads; bytes:
 * weights per pass. Progress runs from frac0 to frac1. */
FT_WARN_UNUSED ft_status_t ft_hwp_cpu_gemv(ft_threadpool_t *pool, const ft_profile_options_t *opts, uint64_t bytes,
                            Fthw__Cpu *cpu, double frac0, double frac1);

#endif
