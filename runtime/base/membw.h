/* A quick measure of this machine's DRAM read bandwidth, used by `ft bench`
 * to report achieved bandwidth as a fraction of a ceiling measured in the
 * same run (the profiler, `ftc profile`, will measure it more thoroughly). */
#ifndef FT_BASE_MEMBW_H
#define FT_BASE_MEMBW_H

#include "freetoken.h"
#include "threadpool.h"

typedef struct ft_membw_result {
    double median_gbs; /* GB/s (1e9 bytes per second) */
    double min_gbs, max_gbs;
    uint32_t n_runs;
    uint64_t buffer_bytes;
} ft_membw_result_t;

/* Reads a buffer of buffer_bytes (much larger than the caches) with every
 * thread of the pool, n_runs times after one warm-up pass. */
ft_status_t ft_membw_measure(ft_threadpool_t *pool, uint64_t buffer_bytes, uint32_t n_runs,
                             ft_membw_result_t *out);

#endif
