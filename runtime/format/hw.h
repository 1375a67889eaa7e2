/* The machine as the planner and the sim see it: the figures of a
 * hardware profile (hwprofile.proto, beside this file; plan/hw_profile.c
 * reads them) that the q* split, the memory partition and the sim
 * device's virtual clock use. Plain data beside the schema it comes from,
 * so backends/sim may read it (DESIGN section 3: backends -> base, format).
 * Bandwidths in GB/s (1e9 bytes/s), times in microseconds, sizes in bytes. */
#ifndef FT_FORMAT_HW_H
#define FT_FORMAT_HW_H

#include "dtype.h"

#include <stdint.h>

typedef struct ft_hw_gpu {
    char name[64];
    uint32_t cc_major, cc_minor;   /* compute capability */
    uint64_t vram_bytes;           /* total */
    uint64_t vram_free_bytes;      /* free when profiled */
    double hbm_gbs;                /* device memory read bandwidth */
    double h2d_gbs;                /* pinned host->device, large transfers */
    double h2d_overlap_gbs;        /* the same while the CPU computes (DRAM contention) */
    double d2h_gbs;
    double gather_gbs;             /* host->device copies of expert-sized blobs */
    double launch_us;              /* kernel launch latency */
    double gemv_gbs[FT_DTYPE_COUNT];  /* weight bytes/s at decode per format; 0: unknown */
    double gemm_tflops;            /* dense prefill throughput (fp16/bf16 tensor cores) */
    int unified_memory;            /* e.g. DGX Spark: VRAM is the host RAM */
} ft_hw_gpu_t;

typedef struct ft_hw {
    char cpu_name[64];
    uint32_t n_cores;
    uint64_t ram_bytes;
    double dram_gbs;               /* read bandwidth, all threads */
    double dram_1t_gbs;            /* one thread */
    double dram_overlap_gbs;       /* while PCIe copies run; 0: unknown (use dram_gbs) */
    double cpu_gemv_gbs[FT_DTYPE_COUNT]; /* expert GEMV weight bytes/s per format, all threads; 0: unknown */
    double cpu_gemm_gflops[FT_DTYPE_COUNT]; /* prefill-shaped products per format; 0: unknown */
    uint32_t n_gpus;               /* 0 or 1 for now */
    ft_hw_gpu_t gpu;
} ft_hw_t;

#endif
