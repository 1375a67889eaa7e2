/* Internal to tests/cuda_fake: the fake driver's state, shared by the
 * device/context, memory, stream and module files. One process-wide
 * device (ordinal 0) whose memory is host memory; tables are guarded by
 * one mutex, kernels and copies run on the calling thread. */
#ifndef FT_TESTS_CUDA_FAKE_DRIVER_H
#define FT_TESTS_CUDA_FAKE_DRIVER_H

#include "fake_cuda.h"

#include <pthread.h>
#include <time.h>

typedef unsigned long long ft_fake_dptr;

typedef enum ft_fake_range_kind {
    FT_FAKE_RANGE_DEVICE = 0,     /* cuMemAlloc */
    FT_FAKE_RANGE_HOST = 1,       /* cuMemHostAlloc */
    FT_FAKE_RANGE_REGISTERED = 2, /* cuMemHostRegister */
} ft_fake_range_kind_t;

typedef struct ft_fake_range {
    uintptr_t base;
    size_t n_bytes;
    ft_fake_range_kind_t kind;
} ft_fake_range_t;

typedef struct ft_fake_device {
    pthread_mutex_t lock;
    int initialized;
    int cc_major, cc_minor, n_sms;
    size_t total_bytes;   /* FT_CUDA_FAKE_VRAM */
    size_t used_bytes;    /* live cuMemAlloc bytes */
    size_t foreign_bytes; /* held by "other programs" (ft_cuda_fake_set_foreign_bytes) */
    int primary_refs;
    ft_fake_range_t *ranges;
    size_t n_ranges, cap_ranges;
} ft_fake_device_t;

extern ft_fake_device_t ft_fake_dev;

/* SUCCESS when cuInit ran and this thread has a current context. */
int ft_fake_ready(void);

/* 1 when [p, p + n) lies inside one live range (any kind). */
int ft_fake_range_ok(uintptr_t p, size_t n);

/* Streams record work instead of running it while captured (cuStreamBeginCapture). */
typedef struct ft_fake_graph ft_fake_graph_t;

typedef struct ft_fake_op ft_fake_op_t;

typedef struct ft_fake_stream {
    unsigned flags;
    ft_fake_graph_t *capture; /* non-NULL while capturing into this graph */
    /* Deferred mode (fake_queue.c): work queued until a sync point. */
    uint64_t id; /* unique: waits name streams by id */
    ft_fake_op_t *queue;
    size_t n_queued, cap_queued;
    uint64_t seq_base, seq_done; /* ops ever queued before queue[0]; ops ever run */
    int error;                   /* first failure of a queued op, for the next sync */
} ft_fake_stream_t;

typedef struct ft_fake_event {
    unsigned flags;
    int recorded;
    struct timespec when;
    ft_fake_graph_t *capture; /* recorded inside a capture: joins waiting streams */
    uint64_t stream_id, seq;  /* deferred: complete once that stream ran seq ops */
} ft_fake_event_t;

enum { FT_FAKE_MAX_PARAMS = 32 };

typedef struct ft_fake_function {
    ft_fake_kernel_t kernel;
    char name[96];
    /* The image's parameter list for this entry (fake_image.c), checked
     * against the emulation's (kernel.kind->arg_bytes) at each launch. */
    uint32_t n_params;
    uint32_t param_bytes[FT_FAKE_MAX_PARAMS];
    struct ft_fake_function *next;
} ft_fake_function_t;

/* One recorded operation of a captured graph. */
typedef enum ft_fake_op_kind {
    FT_FAKE_OP_LAUNCH = 0,
    FT_FAKE_OP_COPY = 1,
    FT_FAKE_OP_MEMSET = 2,
    FT_FAKE_OP_EVENT = 3,
    FT_FAKE_OP_WAIT = 4, /* deferred: run stream wait_stream_id up to wait_seq first */
} ft_fake_op_kind_t;

struct ft_fake_op {
    ft_fake_op_kind_t kind;
    const ft_fake_function_t *fn;
    uint32_t grid[3], block[3];
    uint64_t args[FT_FAKE_MAX_ARGS]; /* argument bytes, each in its own 8-byte cell */
    uintptr_t dst, src;
    size_t n_bytes;
    unsigned char value;
    ft_fake_event_t *event;
    uint64_t wait_stream_id, wait_seq;
    int snapshot; /* copy from pageable host memory: read src when queued */
    int sync_now; /* copy to pageable host memory: the call completes it */
    void *owned;  /* the snapshot, freed once the op ran */
};

/* Runs, queues (deferred mode) or (while s captures) records one
 * operation; a CUresult. */
int ft_fake_submit(ft_fake_stream_t *s, const ft_fake_op_t *op);
/* Runs one operation now. */
int ft_fake_execute(const ft_fake_op_t *op);

/* Deferred mode (FT_CUDA_FAKE_DEFER=1, read by cuInit): stream work runs
 * only at sync points, in stream order, with cross-stream waits honoured,
 * so a missing synchronization shows as stale data, as on a GPU. Copies
 * from pageable host memory read it when queued, copies to it complete in
 * the call (the driver's staging semantics). fake_queue.c. */
extern int ft_fake_defer;
int ft_fake_queue_submit(ft_fake_stream_t *s, const ft_fake_op_t *op);
void ft_fake_queue_add_stream(ft_fake_stream_t *s);
void ft_fake_queue_remove_stream(ft_fake_stream_t *s); /* runs its work first */
int ft_fake_queue_wait(ft_fake_stream_t *s, ft_fake_event_t *e);
/* Sync points: each runs what it needs and returns (and clears) the first
 * error of the work it ran. */
int ft_fake_flush_stream(ft_fake_stream_t *s); /* NULL: every stream */
int ft_fake_flush_event(ft_fake_event_t *e);
int ft_fake_event_pending(const ft_fake_event_t *e);

#endif
