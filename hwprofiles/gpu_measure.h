/* GPUs in a profile: every CUDA device's figures, or, when there is no
 * driver or no device, a gpu_note saying so (not an error). */
#ifndef FT_HWPROFILES_GPU_MEASURE_H
#define FT_HWPROFILES_GPU_MEASURE_H

#include "profiler.h"

/* lib_name: the driver library to open (NULL: "libcuda.so.1"); tests pass
 * a name that does not exist. gemv_bytes sizes the CPU side of the
 * overlap measurement. */
FT_WARN_UNUSED ft_status_t ft_hwp_gpus(const ft_profile_options_t *opts, ft_threadpool_t *pool, const char *lib_name,
                        uint64_t gemv_bytes, Fthw__Profile *p);

#endif
