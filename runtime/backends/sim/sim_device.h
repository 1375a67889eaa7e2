/* The simulated device: a GPU that does not exist, modelled from a hardware
 * profile on a virtual clock, behind the device interface (backend.h).
 *
 * Its memory is the cpu device's (cpu_device.h: host memory, a device
 * address is the host address, so the CPU computes from exactly the bytes
 * the device would hold), capped at the modelled GPU's size; sessions'
 * KV caches and buffers are allocated there too, as on a GPU. Copies really copy, at once, and take virtual time:
 * host to device on the copy engine at the profile's PCIe rate, device to
 * host on a second engine. Streams are in-order queues and events points in
 * them, with the same ordering rules as CUDA: work queued on a stream starts
 * when the stream's previous work, the engine it needs, and the host that
 * queued it are all ready; stream_wait orders a stream after an event;
 * stream_sync moves the host to the stream's end (and a launch latency
 * on, when it had to wait).
 *
 * The device launches no kernels of its own (function and launch are
 * absent): the numerics run on the CPU's kernels. What a kernel would cost
 * is put on a stream by ft_sim_kernel, naming the device memory it reads,
 * and the CPU's share of the work by ft_sim_cpu. The device checks the
 * ordering the caller set up: a kernel that reads memory before the copy
 * filling it has completed, or a copy that overwrites memory a kernel
 * queued earlier may still be reading, is an order violation (tests
 * require none). */
#ifndef FT_SIM_DEVICE_H
#define FT_SIM_DEVICE_H

#include "freetoken.h"
#include "../backend.h"
#include "../../format/hw.h"

#include <stdint.h>

typedef struct ft_sim_counters {
    double busy_cpu, busy_copy, busy_gpu; /* virtual seconds each engine worked */
    double elapsed;                       /* virtual seconds of all steps */
    uint64_t bytes_copied;                /* host to device */
    uint64_t n_copies, n_kernels, n_cpu_ops;
    uint64_t order_violations;
} ft_sim_counters_t;

/* A device modelling hw's GPU (it needs H2D and memory bandwidths and a
 * DRAM bandwidth); memory is capped at the GPU's size, or at vram_bytes
 * when that is larger (a budget above the profile's card). */
FT_WARN_UNUSED ft_status_t ft_sim_device_create(const ft_hw_t *hw, uint64_t vram_bytes,
                                                const ft_allocator_t *alloc, ft_device_t **out);
/* 1 when d is a simulated device (the calls below need one). */
int ft_sim_device_is(const ft_device_t *d);

/* A step starts when everything queued before it has finished; ending it
 * waits for everything queued and returns its virtual duration. */
void ft_sim_step_begin(ft_device_t *d);
double ft_sim_step_end(ft_device_t *d);

/* A GPU kernel on stream s reading n_bytes of weights (params of them) for
 * n_tok tokens: from device memory at `reads` (checked against the copies
 * into it), or resident weights when reads is 0. */
void ft_sim_kernel(ft_device_t *d, ft_dstream_t s, ft_dptr_t reads, uint64_t n_bytes, uint64_t params,
                   uint32_t n_tok, ft_dtype_t format);
/* The host's CPU computing a product over n_bytes of host weights: the
 * host is busy for its duration (work it queues afterwards starts later). */
void ft_sim_cpu(ft_device_t *d, uint64_t n_bytes, uint64_t params, uint32_t n_tok, ft_dtype_t format);

/* The time of a transfer of n_bytes on stream s, to the device or back,
 * whose data the numerics keep on the host (the router's choices, the
 * CPU's expert results). */
void ft_sim_transfer(ft_device_t *d, ft_dstream_t s, uint64_t n_bytes, int to_device);

void ft_sim_counters(const ft_device_t *d, ft_sim_counters_t *out);
void ft_sim_reset_counters(ft_device_t *d);

#endif
