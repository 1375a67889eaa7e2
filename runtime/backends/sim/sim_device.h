/* The simulated device: a GPU that does not exist, modelled from a hardware
 * profile on a virtual clock. Three queues run in parallel in virtual time:
 * the host CPU, the copy engine (host -> device over PCIe) and the GPU's
 * compute stream. Operations say what they wait for (an event: a virtual
 * time); the device advances each queue and checks that no kernel reads a
 * slot before the copy that fills it has completed in virtual time (a
 * violation means the caller forgot to wait: tests require zero).
 * The numerics are computed elsewhere, on the CPU, from the same bytes the
 * device would hold; this only keeps time. */
#ifndef FT_SIM_DEVICE_H
#define FT_SIM_DEVICE_H

#include "freetoken.h"
#include "../../plan/hw.h"

#include <stdint.h>

typedef double ft_sim_event_t; /* virtual seconds at which something completes */

typedef struct ft_sim_device ft_sim_device_t;

typedef struct ft_sim_counters {
    double busy_cpu, busy_copy, busy_gpu; /* virtual seconds each queue worked */
    double elapsed;                       /* virtual seconds of all steps */
    uint64_t bytes_copied;
    uint64_t n_copies, n_kernels, n_cpu_ops;
    uint64_t order_violations;
} ft_sim_counters_t;

/* n_slots: device buffers whose fill time is tracked (expert slots plus the
 * two streaming buffers). */
FT_WARN_UNUSED ft_status_t ft_sim_device_create(const ft_hw_t *hw, uint32_t n_slots, ft_sim_device_t **out_dev);
void ft_sim_device_destroy(ft_sim_device_t *dev);
/* Tracks a different number of slots (after a re-plan); fill times of the
 * slots that remain are kept. */
FT_WARN_UNUSED ft_status_t ft_sim_device_resize_slots(ft_sim_device_t *dev, uint32_t n_slots);

/* A step starts when the previous one has fully finished. */
ft_sim_event_t ft_sim_step_begin(ft_sim_device_t *dev);
/* Ends the step at `done`; returns its duration. */
double ft_sim_step_end(ft_sim_device_t *dev, ft_sim_event_t done);

/* Copy of n_bytes into slot (after `after`); returns its completion. */
ft_sim_event_t ft_sim_copy(ft_sim_device_t *dev, int32_t slot, uint64_t n_bytes, ft_sim_event_t after);
/* A GPU kernel reading n_bytes of weights (params of them) for n_tok tokens,
 * from slot (or -1: resident memory), started no earlier than `after`. */
ft_sim_event_t ft_sim_kernel(ft_sim_device_t *dev, int32_t slot, uint64_t n_bytes, uint64_t params,
                             uint32_t n_tok, ft_dtype_t format, ft_sim_event_t after);
/* The CPU computing a product over n_bytes of host weights. */
ft_sim_event_t ft_sim_cpu(ft_sim_device_t *dev, uint64_t n_bytes, uint64_t params, uint32_t n_tok,
                          ft_dtype_t format, ft_sim_event_t after);
/* Moving small activations between host and device (results of CPU-run
 * experts, the router's output): latency-dominated. */
ft_sim_event_t ft_sim_sync(ft_sim_device_t *dev, ft_sim_event_t after);

void ft_sim_counters(const ft_sim_device_t *dev, ft_sim_counters_t *out);
void ft_sim_reset_counters(ft_sim_device_t *dev);

#endif
