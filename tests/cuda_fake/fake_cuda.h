/* Internal to tests/cuda_fake: a fake CUDA driver (libftcudafake.so) that
 * exports the Driver API entry points runtime/backends/cuda resolves, so
 * the CUDA backend runs in CI on machines without a GPU (point
 * FT_CUDA_LIB at the library).
 *
 * Model: device memory is host memory (a device pointer is the host
 * address), every stream executes synchronously in call order, and a
 * kernel launch runs a CPU emulation of the CUDA template it names
 * (codegen/cuda/templates), with the template's argument order, grid and
 * block meaning and float32 accumulation in the template's order. The
 * kernel names are parsed (fake_kernels.c); the constants the emitter
 * bakes into the source (RMSNorm eps, RoPE theta, norm_topk_prob) are read
 * from the module's "ft_spec v1 ..." string (fake_image.c). Each launch
 * is checked against the entry's parameter list in the image (PTX .param
 * list, cubin .nv.info), as the real driver lays arguments out by it: an
 * emulation (and so a runtime launcher) whose argument layout differs
 * fails with CUDA_ERROR_INVALID_VALUE and a line on stderr.
 *
 * Environment (read by the first cuInit; FT_CUDA_FAKE_DEFER by every one):
 *   FT_CUDA_FAKE_VRAM   total device memory in bytes (default 24 GiB)
 *   FT_CUDA_FAKE_CC     compute capability "major.minor" (default "9.0")
 *   FT_CUDA_FAKE_SMS    multiprocessor count (default 132)
 *   FT_CUDA_FAKE_DEFER  1: stream work runs only at sync points
 *                       (fake_queue.c), to expose missing synchronization
 * Besides the Driver API the library exports
 *   void ft_cuda_fake_set_foreign_bytes(size_t n_bytes)
 * (device memory held by "another program": less free, allocations fail
 * sooner) for tests of free-VRAM polling and re-planning. */
#ifndef FT_TESTS_CUDA_FAKE_H
#define FT_TESTS_CUDA_FAKE_H

#include "format/dtype.h"

#include <stddef.h>
#include <stdint.h>

/* Exported from the shared library; everything else is hidden. */
#define FT_FAKE_API __attribute__((visibility("default")))

/* cuda.h's CUresult values the fake returns. */
enum {
    FT_FAKE_SUCCESS = 0,
    FT_FAKE_ERROR_INVALID_VALUE = 1,
    FT_FAKE_ERROR_OUT_OF_MEMORY = 2,
    FT_FAKE_ERROR_NOT_INITIALIZED = 3,
    FT_FAKE_ERROR_NO_DEVICE = 100,
    FT_FAKE_ERROR_INVALID_DEVICE = 101,
    FT_FAKE_ERROR_INVALID_IMAGE = 200,
    FT_FAKE_ERROR_INVALID_CONTEXT = 201,
    FT_FAKE_ERROR_INVALID_HANDLE = 400,
    FT_FAKE_ERROR_NOT_FOUND = 500,
    FT_FAKE_ERROR_NOT_READY = 600,
    FT_FAKE_ERROR_ILLEGAL_ADDRESS = 700,
    FT_FAKE_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
    FT_FAKE_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
    FT_FAKE_ERROR_MISALIGNED_ADDRESS = 716,
    FT_FAKE_ERROR_LAUNCH_FAILED = 719,
    FT_FAKE_ERROR_NOT_SUPPORTED = 801,
    FT_FAKE_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
    FT_FAKE_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
};

/* The module constants the emitter bakes into kernels. */
typedef struct ft_fake_spec {
    int present; /* 0: the module carries no ft_spec string */
    float norm_eps;
    double rope_theta;
    int norm_topk_prob;
} ft_fake_spec_t;

enum { FT_FAKE_MAX_ARGS = 12 };

typedef struct ft_fake_kind ft_fake_kind_t;

/* One kernel, parsed from its name: the kind, and the template arguments
 * the name encodes (dims[] per kind, see fake_kernels.c). */
typedef struct ft_fake_kernel {
    const ft_fake_kind_t *kind;
    ft_dtype_t wtype; /* matmuls; FT_DTYPE_INVALID otherwise */
    uint32_t dims[3];
    int sinks;           /* attention: the _sink forms (one more argument, the sink logits) */
    ft_fake_spec_t spec; /* the module's, copied at lookup */
} ft_fake_kernel_t;

/* A launch: grid and block as cuLaunchKernel got them; params point at
 * each argument, in the kernel's order. */
typedef struct ft_fake_launch {
    uint32_t grid[3], block[3];
    void **params;
} ft_fake_launch_t;

/* One table entry: a kernel name prefix, its parser (rest: the name after
 * the prefix; 1 when it is a valid instance, filling k), its emulator
 * (returns a CUresult) and its parameter sizes in bytes, in order. To
 * support a new template, add one entry to ft_fake_kinds in
 * fake_kernels.c. */
struct ft_fake_kind {
    const char *prefix;
    int exact;      /* 1: the name is the prefix alone */
    int needs_spec; /* 1: reads ft_fake_spec_t */
    int (*parse)(const char *rest, ft_fake_kernel_t *k);
    int (*run)(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
    uint32_t n_args;
    uint8_t arg_bytes[FT_FAKE_MAX_ARGS];
};

/* Parses a kernel name into k (kind NULL when no table entry accepts it).
 * Returns 1 when the name is a kernel the emitter can produce. */
int ft_fake_kernel_parse(const char *name, ft_fake_kernel_t *k);

/* Runs the emulation of k for launch l; a CUresult. */
int ft_fake_kernel_run(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);

/* Module images (fake_image.c). The byte length of a cubin (ELF64,
 * computed from its headers) or PTX text (with its NUL); 0 when image is
 * neither or its headers are inconsistent. */
size_t ft_fake_image_size(const void *image);
/* Finds the ft_spec string in an image of n bytes (raw in a cubin, a byte
 * list in PTX) and parses it into spec (present 0 when absent or
 * malformed). */
void ft_fake_image_spec(const uint8_t *image, size_t n, ft_fake_spec_t *spec);
/* 1 when the image defines a kernel of this name (a symbol in a cubin's
 * string table, ".entry NAME(" in PTX). */
int ft_fake_image_has_kernel(const uint8_t *image, size_t n, const char *name);

/* The parameter list of kernel `name` as the image declares it (PTX
 * ".entry NAME(.param ...)", a cubin's .nv.info.NAME KPARAM_INFO
 * records): sizes[i] is parameter i's size in bytes (an array parameter's
 * whole size), *out_n their count (at most max). Returns 1 when found, 0
 * when the image has no such list, -1 when it is malformed or longer than
 * max. */
int ft_fake_image_params(const uint8_t *image, size_t n, const char *name, uint32_t *sizes,
                         uint32_t max, uint32_t *out_n);

/* Emulation helpers shared by the kernel files (fake_kernels.c). */
/* The result every lane holds after ft_warp_sum's xor butterfly over
 * v[32] (v is overwritten). */
float ft_fake_warp_sum(float v[32]);
/* Warps in the block, 0 when the block is not a whole number of warps
 * (the templates' shuffles need full warps). */
uint32_t ft_fake_block_warps(const ft_fake_launch_t *l);

/* fake_matmul.c, fake_layer.c, fake_moe.c: one emulator per kernel kind. */
int ft_fake_run_gemv(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
int ft_fake_run_gemv_experts(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
int ft_fake_run_gemm(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
int ft_fake_run_rmsnorm(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
int ft_fake_run_rope(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);      /* NeoX pairs */
int ft_fake_run_rope_norm(const ft_fake_kernel_t *k, const ft_fake_launch_t *l); /* adjacent pairs */
int ft_fake_run_attn_decode(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
int ft_fake_run_attn_decode_pos(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
int ft_fake_run_kv_append(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
int ft_fake_run_kv_append_f16(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
int ft_fake_run_router_topk(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
int ft_fake_run_expert_copy(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
int ft_fake_run_rows_gather(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
int ft_fake_run_rows_scatter_add(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
int ft_fake_run_swiglu(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
/* fake_variants.c: the op variants' kernels (templates/variants.cuh). */
int ft_fake_run_bias_add(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
int ft_fake_run_swiglu_oai(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
int ft_fake_run_sigmoid_mul(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
int ft_fake_run_rope_tab_neox(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
int ft_fake_run_rope_tab_norm(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
int ft_fake_run_router_ext(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
/* fake_deltanet.c: templates/deltanet.cuh. */
int ft_fake_run_deltanet_conv(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
int ft_fake_run_deltanet_recur(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);
int ft_fake_run_sigmoid_bcast_mul(const ft_fake_kernel_t *k, const ft_fake_launch_t *l);

/* Reads argument i of a launch as type T (params[i] points at it). */
#define FT_FAKE_ARG(l, i, T) (*(T const *)(l)->params[i])

#endif
