/* The thread pool behind every parallel kernel.
 *
 * A run must cost a few hundred nanoseconds, not a few microseconds, because
 * the decode step makes 100-300 of them per token. So there is no queue and
 * no mutex: the caller publishes (fn, ctx), bumps a generation counter and
 * works as thread 0; workers that are spinning on the counter see the bump
 * within ~100 ns. A worker that has spun for a while without work goes to
 * sleep on the counter with a futex, and the caller only pays for a wake-up
 * syscall when someone actually sleeps (n_sleeping > 0). Completion is the
 * mirror image: workers decrement `pending`, the caller spins on it and
 * sleeps on it only when the workers are slow (e.g. more threads than cores).
 *
 * Ordering: the sleeping handshakes are Dekker-style ("I announce I sleep,
 * then re-check" against "I publish, then check for sleepers"), which needs
 * sequentially consistent atomics on both sides; everything else uses
 * acquire/release. */
#include "threadpool.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Waiting has three phases. First FT_POOL_SPIN pause instructions (each
 * ~10-40 ns, so tens of microseconds: longer than the serial work between
 * two runs of a decode step). Then FT_POOL_YIELDS sched_yield calls: when
 * the machine is oversubscribed (other processes, or more threads than
 * cores) the thread we wait for may be queued on our own core, and a pure
 * spin would hold that core until the scheduler tick (milliseconds per
 * run); a yield hands it over and costs well under a microsecond when
 * nobody else is waiting. Then a futex sleep. */
#define FT_POOL_SPIN 2048u
#define FT_POOL_YIELDS 256u
#define FT_POOL_MAX_THREADS 1024u

struct ft_pool_worker {
    ft_threadpool_t *pool;
    uint32_t index;
};

struct ft_threadpool {
    uint32_t n_threads; /* including the caller */
    pthread_t *threads; /* n_threads - 1 workers */
    struct ft_pool_worker *workers;

    /* Published by the caller before the generation bump. */
    ft_parallel_fn fn;
    void *ctx;
    int stop;

    /* Separate cache lines: workers hammer `generation` while spinning and
     * `pending` while finishing. */
    _Alignas(64) _Atomic uint32_t generation;
    _Atomic uint32_t n_sleeping;
    _Alignas(64) _Atomic uint32_t pending;
    _Atomic uint32_t caller_sleeping;
};

static inline void ft_pool_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void ft_pool_futex_wait(_Atomic uint32_t *addr, uint32_t expected)
{
    /* Returns at once (EAGAIN) when *addr != expected; spurious wake-ups
     * and EINTR are handled by the callers' loops. */
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void ft_pool_futex_wake(_Atomic uint32_t *addr)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Waits until pool->generation differs from `seen` and returns it. */
static uint32_t ft_pool_wait_generation(ft_threadpool_t *pool, uint32_t seen)
{
    for (uint32_t i = 0; i < FT_POOL_SPIN + FT_POOL_YIELDS; i++) {
        const uint32_t g = atomic_load_explicit(&pool->generation, memory_order_acquire);
        if (g != seen)
            return g;
        if (i < FT_POOL_SPIN)
            ft_pool_pause();
        else
            sched_yield();
    }
    for (;;) {
        atomic_fetch_add(&pool->n_sleeping, 1); /* seq_cst: see the file comment */
        const uint32_t g = atomic_load(&pool->generation);
        if (g == seen)
            ft_pool_futex_wait(&pool->generation, seen);
        atomic_fetch_sub(&pool->n_sleeping, 1);
        const uint32_t now = atomic_load_explicit(&pool->generation, memory_order_acquire);
        if (now != seen)
            return now;
    }
}

static void *ft_pool_worker_main(void *arg)
{
    const struct ft_pool_worker *w = arg;
    ft_threadpool_t *pool = w->pool;
    uint32_t seen = 0;
    for (;;) {
        seen = ft_pool_wait_generation(pool, seen);
        if (pool->stop)
            break;
        pool->fn(pool->ctx, w->index, pool->n_threads);
        /* The last worker to finish wakes the caller if it went to sleep. */
        if (atomic_fetch_sub(&pool->pending, 1) == 1 && atomic_load(&pool->caller_sleeping))
            ft_pool_futex_wake(&pool->pending);
    }
    return NULL;
}

/* Publishes the current fn/ctx/stop to every worker. */
static void ft_pool_kick(ft_threadpool_t *pool)
{
    atomic_fetch_add(&pool->generation, 1); /* seq_cst: pairs with n_sleeping */
    if (atomic_load(&pool->n_sleeping) > 0)
        ft_pool_futex_wake(&pool->generation);
}

static void ft_pool_stop_workers(ft_threadpool_t *pool, uint32_t n_started)
{
    pool->stop = 1;
    ft_pool_kick(pool);
    for (uint32_t i = 0; i < n_started; i++)
        pthread_join(pool->threads[i], NULL);
}

ft_status_t ft_threadpool_create(uint32_t n_threads, ft_threadpool_t **out_pool)
{
    *out_pool = NULL;
    if (n_threads == 0) {
        const long n = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = n > 0 ? (uint32_t)(n < FT_POOL_MAX_THREADS ? n : FT_POOL_MAX_THREADS) : 1;
    }
    if (n_threads > FT_POOL_MAX_THREADS)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "thread pool: %u threads asked, at most %u are supported", n_threads,
                              FT_POOL_MAX_THREADS);
    ft_threadpool_t *pool = aligned_alloc(64, (sizeof(*pool) + 63) / 64 * 64);
    if (!pool)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "thread pool: out of memory");
    memset(pool, 0, sizeof(*pool));
    pool->n_threads = n_threads;
    atomic_init(&pool->generation, 0);
    atomic_init(&pool->n_sleeping, 0);
    atomic_init(&pool->pending, 0);
    atomic_init(&pool->caller_sleeping, 0);
    const uint32_t n_workers = n_threads - 1;
    if (n_workers > 0) {
        pool->threads = calloc(n_workers, sizeof(*pool->threads));
        pool->workers = calloc(n_workers, sizeof(*pool->workers));
        if (!pool->threads || !pool->workers) {
            ft_threadpool_destroy(pool);
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "thread pool: out of memory");
        }
    }
    for (uint32_t i = 0; i < n_workers; i++) {
        pool->workers[i] = (struct ft_pool_worker){pool, i + 1};
        const int err = pthread_create(&pool->threads[i], NULL, ft_pool_worker_main,
                                       &pool->workers[i]);
        if (err != 0) {
            ft_pool_stop_workers(pool, i);
            free(pool->threads);
            free(pool->workers);
            free(pool);
            return ft_status_make(FT_STATUS_UNAVAILABLE,
                                  "thread pool: starting worker %u of %u failed: %s", i + 1,
                                  n_workers, strerror(err));
        }
    }
    *out_pool = pool;
    return FT_OK;
}

void ft_threadpool_destroy(ft_threadpool_t *pool)
{
    if (!pool)
        return;
    if (pool->threads && pool->workers)
        ft_pool_stop_workers(pool, pool->n_threads - 1);
    free(pool->threads);
    free(pool->workers);
    free(pool);
}

uint32_t ft_threadpool_size(const ft_threadpool_t *pool)
{
    return pool->n_threads;
}

void ft_threadpool_run(ft_threadpool_t *pool, ft_parallel_fn fn, void *ctx)
{
    if (pool->n_threads == 1) {
        fn(ctx, 0, 1);
        return;
    }
    pool->fn = fn;
    pool->ctx = ctx;
    atomic_store_explicit(&pool->pending, pool->n_threads - 1, memory_order_relaxed);
    ft_pool_kick(pool); /* seq_cst: also orders the plain stores above */
    fn(ctx, 0, pool->n_threads);

    for (uint32_t i = 0; i < FT_POOL_SPIN + FT_POOL_YIELDS; i++) {
        if (atomic_load_explicit(&pool->pending, memory_order_acquire) == 0)
            return;
        if (i < FT_POOL_SPIN)
            ft_pool_pause();
        else
            sched_yield();
    }
    atomic_store(&pool->caller_sleeping, 1);
    for (;;) {
        const uint32_t left = atomic_load(&pool->pending);
        if (left == 0)
            break;
        ft_pool_futex_wait(&pool->pending, left);
    }
    atomic_store(&pool->caller_sleeping, 0);
    /* Pairs with the workers' seq_cst decrements: their writes are visible. */
    atomic_thread_fence(memory_order_acquire);
}

void ft_split_range(uint64_t n, uint64_t grain, uint32_t thread_index, uint32_t n_threads,
                    uint64_t *out_begin, uint64_t *out_end)
{
    if (grain == 0)
        grain = 1;
    if (n_threads == 0)
        n_threads = 1;
    /* Whole grains, the last one possibly partial; thread i gets units
     * [i*base + min(i, rem), ...) so sizes differ by at most one grain. */
    const uint64_t units = n / grain + (n % grain != 0);
    const uint64_t base = units / n_threads, rem = units % n_threads;
    const uint64_t i = thread_index < n_threads ? thread_index : n_threads;
    const uint64_t ub = i * base + (i < rem ? i : rem);
    const uint64_t ue = ub + (i < n_threads ? base + (i < rem) : 0);
    uint64_t b, e;
    if (__builtin_mul_overflow(ub, grain, &b) || b > n)
        b = n;
    if (__builtin_mul_overflow(ue, grain, &e) || e > n || i + 1 == n_threads)
        e = n;
    *out_begin = b;
    *out_end = e;
}
