/* ftc profile: CPU facts, DRAM, CPU GEMV, then GPUs. */
#include "profiler.h"
#include "figure.h"
#include "gpu_measure.h"

#include <stdlib.h>
#include <string.h>

void ft_profile_options_init(ft_profile_options_t *opts)
{
    memset(opts, 0, sizeof(*opts));
}

/* The largest cache in the profile, bytes (0 when unknown). */
static uint64_t ft_hwp_llc_bytes(const Fthw__Cpu *cpu)
{
    double best = 0;
    for (size_t i = 0; i < cpu->n_caches; i++)
        if (cpu->caches[i]->size_bytes && cpu->caches[i]->size_bytes->median > best)
            best = cpu->caches[i]->size_bytes->median;
    return (uint64_t)best;
}

static void ft_hwp_progress(const ft_profile_options_t *o, const char *stage, double f)
{
    if (o->progress)
        o->progress(o->progress_user, stage, f);
}

FT_WARN_UNUSED static ft_status_t ft_hwp_measure_cpu(const ft_profile_options_t *opts, ft_threadpool_t *pool,
                                      Fthw__Cpu *cpu, uint64_t *out_gemv_bytes)
{
    ft_hwp_progress(opts, "CPU facts", 0.0);
    ft_status_t st = ft_hwp_cpu_facts(cpu);
    if (st)
        return st;
    /* Buffers far past the last-level cache: 8x the LLC, at least 256 MiB
     * (1 GiB for a full run), at most an eighth of the RAM. */
    uint64_t llc = ft_hwp_llc_bytes(cpu), ram = (uint64_t)cpu->ram_bytes->median;
    uint64_t dram = opts->dram_buffer_bytes;
    if (!dram) {
        dram = opts->quick ? 256ull << 20 : 1ull << 30;
        if (dram < 8 * llc)
            dram = 8 * llc;
        if (ram && dram > ram / 8)
            dram = ram / 8;
    }
    uint64_t gemv = opts->gemv_bytes;
    if (!gemv) {
        gemv = opts->quick ? 64ull << 20 : 256ull << 20;
        if (gemv < 2 * llc)
            gemv = 2 * llc;
    }
    *out_gemv_bytes = gemv;
    ft_hwp_progress(opts, "DRAM read bandwidth", 0.05);
    if ((st = ft_hwp_dram(opts, dram, cpu)))
        return st;
    return ft_hwp_cpu_gemv(pool, opts, gemv, cpu, 0.3, 0.7);
}

ft_status_t ft_profile_measure(const ft_profile_options_t *opts, Fthw__Profile **out)
{
    *out = NULL;
    Fthw__Profile *p = malloc(sizeof(*p));
    Fthw__Cpu *cpu = malloc(sizeof(*cpu));
    if (!p || !cpu) {
        free(p);
        free(cpu);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "profile: out of memory");
    }
    fthw__profile__init(p);
    fthw__cpu__init(cpu);
    p->cpu = cpu;
    p->version = 1;
    p->quick = opts->quick != 0;
    p->tool = ft_hwp_strdup("ftc profile " FT_PRODUCER_VERSION);
    ft_threadpool_t *pool = NULL;
    ft_status_t st = p->tool ? ft_threadpool_create(opts->n_threads, &pool)
                             : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "profile: out of memory");
    uint64_t gemv_bytes = 0;
    if (!st)
        st = ft_hwp_measure_cpu(opts, pool, cpu, &gemv_bytes);
    if (!st && !opts->skip_gpu)
        st = ft_hwp_gpus(opts, pool, NULL, gemv_bytes, p);
    if (!st && opts->skip_gpu) {
        free(p->gpu_note == protobuf_c_empty_string ? NULL : p->gpu_note);
        p->gpu_note = ft_hwp_strdup("no GPU: not looked for (skipped)");
        if (!p->gpu_note)
            st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "profile: out of memory");
    }
    ft_threadpool_destroy(pool);
    if (st) {
        fthw__profile__free_unpacked(p, NULL);
        return st;
    }
    ft_hwp_progress(opts, "done", 1.0);
    *out = p;
    return FT_OK;
}
