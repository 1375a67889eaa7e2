/* Thread pool: every thread index runs exactly once per run, over many
 * consecutive runs (fast back-to-back runs exercise the spinning path,
 * runs with pauses between them the sleeping path), for pools of 1..8
 * threads (more threads than this machine's cores included); and
 * ft_split_range covers [0, n) exactly with grain-aligned boundaries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/base/threadpool.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

enum { MAX_THREADS = 8 };

struct count_ctx {
    _Atomic uint32_t hits[MAX_THREADS];
    _Atomic uint32_t calls;
    uint32_t expect_n;
    _Atomic uint32_t bad_n; /* calls that saw the wrong n_threads */
    uint64_t payload[MAX_THREADS]; /* plain writes, read by the caller after run */
};

static void count_fn(void *p, uint32_t idx, uint32_t n)
{
    struct count_ctx *c = p;
    if (n != c->expect_n || idx >= MAX_THREADS)
        atomic_fetch_add(&c->bad_n, 1);
    else
        atomic_fetch_add(&c->hits[idx], 1);
    atomic_fetch_add(&c->calls, 1);
    if (idx < MAX_THREADS)
        c->payload[idx] += idx + 1;
}

static void sleep_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static void run_pool(uint32_t n_threads, uint32_t n_runs, long pause_us)
{
    ft_threadpool_t *pool = NULL;
    assert_null(ft_threadpool_create(n_threads, &pool));
    assert_int_equal(ft_threadpool_size(pool), n_threads);
    struct count_ctx c;
    memset(&c, 0, sizeof(c));
    c.expect_n = n_threads;
    for (uint32_t r = 0; r < n_runs; r++) {
        ft_threadpool_run(pool, count_fn, &c);
        /* After run returns, every thread's work of this run is done and
         * visible: the per-index counters equal the number of runs. */
        assert_int_equal(atomic_load(&c.calls), (r + 1) * n_threads);
        for (uint32_t i = 0; i < n_threads; i++) {
            assert_int_equal(atomic_load(&c.hits[i]), r + 1);
            assert_true(c.payload[i] == (uint64_t)(r + 1) * (i + 1));
        }
        if (pause_us)
            sleep_us(pause_us);
    }
    assert_int_equal(atomic_load(&c.bad_n), 0);
    ft_threadpool_destroy(pool);
}

static void test_pool_sizes_back_to_back(void **state)
{
    (void)state;
    for (uint32_t n = 1; n <= MAX_THREADS; n++)
        run_pool(n, n <= 2 ? 20000 : 500, 0);
}

static void test_pool_sleeping_workers(void **state)
{
    (void)state;
    /* Pauses of 2 ms outlast the spin, so workers sleep on the futex and
     * the caller must wake them; 1 ms pauses land in between. */
    run_pool(2, 30, 2000);
    run_pool(3, 30, 1000);
    run_pool(MAX_THREADS, 10, 2000);
}

static void test_pool_default_size_and_destroy_idle(void **state)
{
    (void)state;
    ft_threadpool_t *pool = NULL;
    assert_null(ft_threadpool_create(0, &pool));
    assert_true(ft_threadpool_size(pool) >= 1);
    ft_threadpool_destroy(pool); /* never ran: workers are still waiting */
    ft_threadpool_destroy(NULL);
    ft_status_t st = ft_threadpool_create(100000, &pool);
    assert_non_null(st);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    assert_null(pool);
    ft_status_free(st);
}

/* Checks one (n, grain, n_threads) split: contiguous, in order, covering
 * [0, n), boundaries on multiples of grain, sizes within one grain of each
 * other except the final partial grain. */
static void check_split(uint64_t n, uint64_t grain, uint32_t nt)
{
    const uint64_t g = grain ? grain : 1;
    uint64_t expect_begin = 0, min_units = UINT64_MAX, max_units = 0;
    for (uint32_t i = 0; i < nt; i++) {
        uint64_t b, e;
        ft_split_range(n, grain, i, nt, &b, &e);
        if (b != expect_begin || e < b || e > n)
            fail_msg("split n=%llu grain=%llu nt=%u: thread %u got [%llu, %llu), expected "
                     "begin %llu",
                     (unsigned long long)n, (unsigned long long)grain, nt, i,
                     (unsigned long long)b, (unsigned long long)e,
                     (unsigned long long)expect_begin);
        if (e != n && e % g != 0)
            fail_msg("split n=%llu grain=%llu: boundary %llu is not a multiple of the grain",
                     (unsigned long long)n, (unsigned long long)grain, (unsigned long long)e);
        const uint64_t units = (e - b + g - 1) / g;
        if (units < min_units) min_units = units;
        if (units > max_units) max_units = units;
        expect_begin = e;
    }
    assert_true(expect_begin == n);
    assert_true(max_units - min_units <= 1);
    uint64_t b, e; /* an index past the pool gets an empty range */
    ft_split_range(n, grain, nt, nt, &b, &e);
    assert_true(b == e);
}

static void test_split_range(void **state)
{
    (void)state;
    const uint64_t ns[] = {0, 1, 2, 7, 31, 32, 33, 100, 255, 256, 257, 1000, 4096, 100003};
    const uint64_t grains[] = {0, 1, 2, 3, 16, 32, 256};
    for (size_t a = 0; a < sizeof(ns) / sizeof(ns[0]); a++)
        for (size_t b = 0; b < sizeof(grains) / sizeof(grains[0]); b++)
            for (uint32_t nt = 1; nt <= 9; nt++)
                check_split(ns[a], grains[b], nt);
    check_split(UINT64_MAX, 1, 3); /* no overflow at the top of the range */
    check_split(UINT64_MAX - 5, 64, 7);
    /* A known answer: 100 rows, grain 8, 3 threads -> 13 grains as 5,4,4. */
    uint64_t b, e;
    ft_split_range(100, 8, 0, 3, &b, &e);
    assert_true(b == 0 && e == 40);
    ft_split_range(100, 8, 1, 3, &b, &e);
    assert_true(b == 40 && e == 72);
    ft_split_range(100, 8, 2, 3, &b, &e);
    assert_true(b == 72 && e == 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_sizes_back_to_back),
        cmocka_unit_test(test_pool_sleeping_workers),
        cmocka_unit_test(test_pool_default_size_and_destroy_idle),
        cmocka_unit_test(test_split_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
