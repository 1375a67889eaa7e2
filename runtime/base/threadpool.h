/* A fixed pool of worker threads for data-parallel kernels. The caller is
 * thread 0 and takes part in every run, so a pool of n threads starts n-1
 * workers. A run hands the same function to every thread, each with its own
 * index, and returns when all have finished: no allocation, no queue, so
 * the decode step can call it dozens of times per token. */
#ifndef FT_BASE_THREADPOOL_H
#define FT_BASE_THREADPOOL_H

#include "freetoken.h"

#include <stdint.h>

typedef struct ft_threadpool ft_threadpool_t;

/* fn runs once on each thread: thread_index in [0, n_threads). */
typedef void (*ft_parallel_fn)(void *ctx, uint32_t thread_index, uint32_t n_threads);

/* n_threads 0: one per online CPU. */
FT_WARN_UNUSED ft_status_t ft_threadpool_create(uint32_t n_threads, ft_threadpool_t **out_pool);
void ft_threadpool_destroy(ft_threadpool_t *pool);
uint32_t ft_threadpool_size(const ft_threadpool_t *pool);

/* Runs fn on every thread of the pool and waits for all of them. Not
 * reentrant: one run at a time per pool (fn must not call run). */
void ft_threadpool_run(ft_threadpool_t *pool, ft_parallel_fn fn, void *ctx);

/* Splits [0, n) into n_threads nearly equal contiguous ranges, rounded to
 * multiples of `grain` (the last range takes the rest). */
void ft_split_range(uint64_t n, uint64_t grain, uint32_t thread_index, uint32_t n_threads,
                    uint64_t *out_begin, uint64_t *out_end);

#endif
