/* Decode-shaped expert GEMV with the runtime's kernels (ft_cpu_matmul on
 * the thread pool): a set of [rows x cols] weight matrices in one format,
 * larger in total than the caches, each multiplied by a fresh activation
 * vector the way a decode step does (prepare the activation, then one pool
 * run splitting the rows). Used for the CPU figures and, with a GPU, for
 * the CPU side of the overlap measurement. */
#ifndef FT_HWPROFILES_GEMV_BENCH_H
#define FT_HWPROFILES_GEMV_BENCH_H

#include "freetoken.h"

#include "base/threadpool.h"
#include "format/dtype.h"

#include <stdint.h>

typedef struct ft_hwp_gemv ft_hwp_gemv_t;

/* total_bytes of weights (rounded up to whole matrices, at least one).
 * The matrices hold a quantized random matrix, copied. */
FT_WARN_UNUSED ft_status_t ft_hwp_gemv_create(ft_threadpool_t *pool, ft_dtype_t wtype, uint32_t rows, uint32_t cols,
                               uint64_t total_bytes, ft_hwp_gemv_t **out);
void ft_hwp_gemv_destroy(ft_hwp_gemv_t *g);

/* One pass over every matrix; returns its seconds. */
double ft_hwp_gemv_pass(ft_hwp_gemv_t *g);
/* Weight bytes one pass reads. */
uint64_t ft_hwp_gemv_bytes(const ft_hwp_gemv_t *g);
uint64_t ft_hwp_gemv_n_mats(const ft_hwp_gemv_t *g);
/* A checksum of the outputs, so the work cannot be optimized away. */
float ft_hwp_gemv_sink(const ft_hwp_gemv_t *g);

#endif
