/* This machine's DRAM read bandwidth: the one reader behind `ftc profile`'s
 * DRAM figures and the ceiling `ft bench` reports fractions of, so the two
 * commands measure the same thing. */
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

#define FT_MEMBW_MAX_RUNS 64u

/* Reads a buffer of buffer_bytes (much larger than the caches; rounded down
 * to 4 KiB) with every thread of the pool, n_runs times (at most
 * FT_MEMBW_MAX_RUNS) after one warm-up pass. Each thread first writes the
 * pages it will read (distinct values, so no page can be merged), then
 * reads 128 bytes per step through four independent vector accumulators,
 * so one thread is limited by memory rather than by issue. out_samples,
 * when not NULL, receives the n_runs rates in run order. */
FT_WARN_UNUSED ft_status_t ft_membw_measure(ft_threadpool_t *pool, uint64_t buffer_bytes, uint32_t n_runs,
                             double *out_samples, ft_membw_result_t *out);

#endif
