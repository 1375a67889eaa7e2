/* DRAM read bandwidth, all threads and one, over a buffer far larger than
 * the last-level cache, through the runtime's reader (runtime/base/membw.h,
 * the same one `ft bench` uses for its ceiling), keeping every run's
 * sample for the figure. */
#include "figure.h"
#include "profiler.h"

#include "base/membw.h"

#include <stdio.h>

FT_WARN_UNUSED static ft_status_t ft_hwp_dram_one(uint32_t n_threads, uint64_t bytes, uint32_t n_runs,
                                   Fthw__Figure **out)
{
    double gbs[FT_MEMBW_MAX_RUNS];
    n_runs = n_runs > FT_MEMBW_MAX_RUNS ? FT_MEMBW_MAX_RUNS : n_runs ? n_runs : 1;
    ft_threadpool_t *pool = NULL;
    ft_membw_result_t res;
    ft_status_t st = ft_threadpool_create(n_threads, &pool);
    if (st)
        return st;
    st = ft_membw_measure(pool, bytes, n_runs, gbs, &res);
    uint32_t nt = ft_threadpool_size(pool);
    ft_threadpool_destroy(pool);
    if (st)
        return st;
    char note[160];
    snprintf(note, sizeof(note), "sequential 256-bit reads of %llu MiB, %u thread%s, after a warm-up pass",
             (unsigned long long)(res.buffer_bytes >> 20), nt, nt == 1 ? "" : "s");
    *out = ft_hwp_figure(gbs, n_runs, FTHW__SOURCE__MEASURED, note);
    return *out ? FT_OK : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "DRAM figure: out of memory");
}

ft_status_t ft_hwp_dram(const ft_profile_options_t *opts, uint64_t buffer_bytes, Fthw__Cpu *cpu)
{
    uint32_t n_runs = opts->n_runs ? opts->n_runs : (opts->quick ? 7 : 15);
    ft_status_t st = ft_hwp_dram_one(opts->n_threads, buffer_bytes, n_runs, &cpu->dram_read_gbs);
    if (st)
        return ft_status_annotate(st, "DRAM read bandwidth, all threads");
    /* One thread cannot fill the memory system: half the buffer (still
     * far past the L3) keeps the run short. */
    st = ft_hwp_dram_one(1, buffer_bytes / 2, n_runs, &cpu->dram_read_1t_gbs);
    return ft_status_annotate(st, "DRAM read bandwidth, one thread");
}
