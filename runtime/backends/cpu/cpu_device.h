/* The cpu device: the device interface (backend.h) over host memory, for
 * the cpu backend (DESIGN.md section 8: "host memory is device memory").
 * A device address is the host address of the bytes, so the CPU's kernels
 * read device memory directly.
 *
 * Memory comes from the caller's allocator (base/alloc.h), 256-byte
 * aligned as the CUDA backend aligns, and may be capped at a byte budget
 * (the RAM a caller grants); without a cap, memory_info reports the
 * machine's available memory. Host memory (host_alloc) is the same memory,
 * not counted against the cap; pin and unpin succeed and do nothing (host
 * memory is already where the device reads it).
 *
 * Work runs when it is issued: a copy or memset has completed when the
 * call returns, so every stream is trivially in order, stream_sync and
 * stream_wait have nothing to wait for, and an event recorded on a stream
 * marks a point that has already passed. The calls keep the interface's
 * contract all the same (handles are made and destroyed; a NULL stream or
 * event is an error), so code written for a queued device runs unchanged.
 *
 * Kernels: function and launch are NULL, as on the sim device, and the
 * executor calls the CPU's kernels itself. The plan's CPU module
 * (cpu_module.h) is a dispatch table of typed C entry points keyed by
 * (op, format, shape), bound once per matrix at engine open
 * (ft_model_bind_kernels) and called by the thread pool's workers with
 * their row ranges; a launch by name with untyped parameters and a grid
 * would add a lookup and an argument marshal on every product of the
 * decode step and could not express the pool's row split, for no caller
 * that needs it. Graphs are not supported (nothing is queued to capture).
 *
 * The sim device (backends/sim) is this device's memory plus the modelled
 * GPU's size as the cap plus a virtual clock: it embeds ft_cpu_device_t
 * first and puts the memory functions below in its own table. */
#ifndef FT_CPU_DEVICE_H
#define FT_CPU_DEVICE_H

#include "freetoken.h"
#include "../backend.h"

#include <stddef.h>
#include <stdint.h>

/* A device over host memory of at most cap_bytes (0: no cap). Destroy it
 * with ft_dev_destroy; every allocation must be freed first. */
FT_WARN_UNUSED ft_status_t ft_cpu_device_create(uint64_t cap_bytes, const ft_allocator_t *alloc,
                                                ft_device_t **out);

/* ---- the host memory layer, shared with the sim device ----------------- */

typedef struct ft_cpu_device {
    ft_device_t base;
    ft_device_info_t info;
    const ft_allocator_t *a;
    uint64_t cap;  /* bytes of device memory allowed; 0: no cap */
    uint64_t used; /* bytes of device memory allocated (as asked, without alignment) */
} ft_cpu_device_t;

/* Fills d for the table vt (whose memory functions are the ones below),
 * named name, capped at cap_bytes (0: none). */
void ft_cpu_device_init(ft_cpu_device_t *d, const ft_device_vtable_t *vt, const char *name,
                        uint64_t cap_bytes, const ft_allocator_t *alloc);

/* The table's memory entries for any device that starts with an
 * ft_cpu_device_t. Errors name the table (vt->name), the request and the
 * cap. */
const ft_device_info_t *ft_cpu_device_info(const ft_device_t *d);
FT_WARN_UNUSED ft_status_t ft_cpu_device_memory_info(ft_device_t *d, uint64_t *free_bytes,
                                                     uint64_t *total_bytes);
FT_WARN_UNUSED ft_status_t ft_cpu_device_alloc(ft_device_t *d, uint64_t n_bytes, ft_dptr_t *out);
void ft_cpu_device_free(ft_device_t *d, ft_dptr_t p);
FT_WARN_UNUSED ft_status_t ft_cpu_device_host_alloc(ft_device_t *d, size_t n_bytes, void **out);
void ft_cpu_device_host_free(ft_device_t *d, void *p);
FT_WARN_UNUSED ft_status_t ft_cpu_device_pin(ft_device_t *d, const void *p, size_t n_bytes,
                                             const char *what);
void ft_cpu_device_unpin(ft_device_t *d, const void *p);

/* Those entries, for a table's initializer. */
#define FT_CPU_DEVICE_MEMORY_ENTRIES                                                               \
    .info = ft_cpu_device_info, .memory_info = ft_cpu_device_memory_info,                          \
    .alloc = ft_cpu_device_alloc, .free = ft_cpu_device_free,                                      \
    .host_alloc = ft_cpu_device_host_alloc, .host_free = ft_cpu_device_host_free,                  \
    .pin = ft_cpu_device_pin, .unpin = ft_cpu_device_unpin

#endif
