/* The cpu device behind the device interface: host memory from the
 * caller's allocator, aligned and optionally capped (the error names the
 * request and the cap), the machine's memory reported without a cap,
 * copies and memset that have completed when they return, streams and
 * events that keep the interface's contract, and no kernels of its own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backends/cpu/cpu_device.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An allocator hook that counts its calls and the bytes live, and fails
 * every call while fail is set. */
typedef struct counting {
    uint64_t n_alloc, n_free;
    int fail;
} counting_t;

static void *count_alloc(void *user, size_t n)
{
    counting_t *c = user;
    if (c->fail) return NULL;
    c->n_alloc++;
    return malloc(n);
}

static void *count_realloc(void *user, void *p, size_t n)
{
    (void)user;
    return realloc(p, n);
}

static void count_free(void *user, void *p)
{
    ((counting_t *)user)->n_free++;
    free(p);
}

static void test_capped_memory(void **state)
{
    (void)state;
    counting_t c = {0};
    const ft_allocator_t a = {count_alloc, count_realloc, count_free, &c};
    ft_device_t *d = NULL;
    assert_null(ft_cpu_device_create(1000000, &a, &d));
    assert_int_equal(ft_dev_info(d)->total_bytes, 1000000);
    uint64_t free_b, total_b;
    assert_null(ft_dev_memory_info(d, &free_b, &total_b));
    assert_int_equal(total_b, 1000000);
    assert_int_equal(free_b, 1000000);
    const uint64_t before = c.n_alloc;
    ft_dptr_t p = 0, q = 0, r = 0;
    assert_null(ft_dev_alloc(d, 600000, &p));
    assert_null(ft_dev_alloc(d, 3, &q));
    assert_int_equal(c.n_alloc, before + 2); /* through the caller's allocator */
    assert_int_equal(p % 256, 0);
    assert_int_equal(q % 256, 0);
    assert_true(p != q);
    memset((void *)(uintptr_t)p, 0xab, 600000); /* the whole block is usable host memory */
    assert_null(ft_dev_memory_info(d, &free_b, &total_b));
    assert_int_equal(free_b, 1000000 - 600003);
    /* One byte over what is left: refused, naming the request and the cap. */
    ft_status_t st = ft_dev_alloc(d, 399998, &r);
    assert_non_null(st);
    assert_int_equal(ft_status_code(st), FT_STATUS_OUT_OF_MEMORY);
    assert_non_null(strstr(ft_status_message(st),
                           "cpu: 399998 bytes of device memory asked, 399997 of 1000000 free"));
    assert_non_null(strstr(ft_status_message(st), "cap"));
    ft_status_free(st);
    assert_int_equal(r, 0);
    assert_null(ft_dev_alloc(d, 399997, &r)); /* exactly what is left */
    assert_null(ft_dev_memory_info(d, &free_b, &total_b));
    assert_int_equal(free_b, 0);
    ft_dev_free(d, p);
    ft_dev_free(d, r);
    assert_null(ft_dev_memory_info(d, &free_b, &total_b));
    assert_int_equal(free_b, 1000000 - 3);
    ft_dev_free(d, q);
    /* The allocator failing: a status naming the request, never a crash. */
    c.fail = 1;
    st = ft_dev_alloc(d, 1234, &r);
    assert_int_equal(ft_status_code(st), FT_STATUS_OUT_OF_MEMORY);
    assert_non_null(strstr(ft_status_message(st), "1234 bytes"));
    ft_status_free(st);
    void *h = NULL;
    st = ft_dev_host_alloc(d, 77, &h);
    assert_int_equal(ft_status_code(st), FT_STATUS_OUT_OF_MEMORY);
    ft_status_free(st);
    ft_dstream_t s = NULL;
    st = ft_dev_stream_create(d, &s);
    assert_int_equal(ft_status_code(st), FT_STATUS_OUT_OF_MEMORY);
    ft_status_free(st);
    c.fail = 0;
    assert_null(ft_dev_memory_info(d, &free_b, &total_b));
    assert_int_equal(free_b, 1000000);
    ft_dev_destroy(d);
    assert_int_equal(c.n_alloc, c.n_free); /* the device too came from the hook */
}

static void test_uncapped_reports_the_machine(void **state)
{
    (void)state;
    ft_device_t *d = NULL;
    assert_null(ft_cpu_device_create(0, NULL, &d));
    const uint64_t phys = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t free_b, total_b;
    assert_null(ft_dev_memory_info(d, &free_b, &total_b));
    assert_int_equal(total_b, phys);
    assert_int_equal(ft_dev_info(d)->total_bytes, phys);
    assert_true(free_b > 0 && free_b <= total_b);
    /* No cap: more than a capped device's budget, and nothing counted
     * against a cap that does not exist. */
    ft_dptr_t p = 0;
    assert_null(ft_dev_alloc(d, 8u << 20, &p));
    assert_int_equal(p % 256, 0);
    ft_dev_free(d, p);
    /* A request no host can satisfy fails with a status. */
    ft_status_t st = ft_dev_alloc(d, UINT64_MAX - 16, &p);
    assert_int_equal(ft_status_code(st), FT_STATUS_OUT_OF_MEMORY);
    assert_int_equal(p, 0);
    ft_status_free(st);
    ft_dev_destroy(d);
}

static void test_copies_and_memset(void **state)
{
    (void)state;
    ft_device_t *d = NULL;
    assert_null(ft_cpu_device_create(1 << 20, NULL, &d));
    ft_dstream_t s = NULL;
    assert_null(ft_dev_stream_create(d, &s));
    ft_dptr_t p = 0;
    assert_null(ft_dev_alloc(d, 4096, &p));
    uint8_t src[1000], back[1000];
    for (int i = 0; i < 1000; i++)
        src[i] = (uint8_t)(i * 7 + 1);
    /* The device address is the host address; the copy has completed. */
    assert_null(ft_dev_copy_h2d(d, p, src, sizeof(src), s));
    assert_memory_equal((const void *)(uintptr_t)p, src, sizeof(src));
    memset(back, 0, sizeof(back));
    assert_null(ft_dev_copy_d2h(d, back, p, sizeof(back), s));
    assert_memory_equal(back, src, sizeof(src));
    /* Device to device, overlapping forward by 10 bytes: as memmove. */
    assert_null(ft_dev_copy_d2d(d, p + 10, p, 1000, s));
    assert_null(ft_dev_copy_d2h(d, back, p + 10, sizeof(back), s));
    assert_memory_equal(back, src, sizeof(src));
    assert_null(ft_dev_memset(d, p + 100, 0x5a, 50, s));
    assert_null(ft_dev_copy_d2h(d, back, p, sizeof(back), s));
    for (int i = 0; i < 1000; i++) {
        const uint8_t want = i >= 100 && i < 150 ? 0x5a : i < 10 ? src[i] : src[i - 10];
        assert_int_equal(back[i], want);
    }
    /* Zero bytes: nothing to do, and no error. */
    assert_null(ft_dev_copy_h2d(d, p, NULL, 0, s));
    assert_null(ft_dev_memset(d, p, 0, 0, s));
    ft_dev_free(d, p);
    ft_dev_stream_destroy(d, s);
    ft_dev_destroy(d);
}

/* What one stream wrote, another reads after waiting for an event
 * recorded after the write; the calls reject a handle of the wrong kind. */
static void test_streams_and_events(void **state)
{
    (void)state;
    ft_device_t *d = NULL;
    assert_null(ft_cpu_device_create(0, NULL, &d));
    ft_dstream_t copy = NULL, compute = NULL;
    ft_devent_t done = NULL;
    assert_null(ft_dev_stream_create(d, &copy));
    assert_null(ft_dev_stream_create(d, &compute));
    assert_null(ft_dev_event_create(d, &done));
    assert_true(copy != compute);
    ft_dptr_t p = 0;
    assert_null(ft_dev_alloc(d, 64, &p));
    const uint32_t words[4] = {1, 2, 3, 4};
    uint32_t got[4] = {0};
    assert_null(ft_dev_memset(d, p, 0, 64, compute));
    assert_null(ft_dev_copy_h2d(d, p, words, sizeof(words), copy));
    assert_null(ft_dev_event_record(d, done, copy));
    assert_null(ft_dev_stream_wait(d, compute, done));
    assert_null(ft_dev_copy_d2h(d, got, p, sizeof(got), compute));
    assert_null(ft_dev_stream_sync(d, compute));
    assert_memory_equal(got, words, sizeof(words));
    /* Later work on the copy stream after the event does not reach back:
     * the compute stream already read. */
    const uint32_t later[4] = {9, 9, 9, 9};
    assert_null(ft_dev_copy_h2d(d, p, later, sizeof(later), copy));
    assert_memory_equal(got, words, sizeof(words));
    assert_null(ft_dev_stream_sync(d, copy));
    /* An event where a stream belongs, a stream where an event belongs,
     * and NULL: refused, naming the call. */
    ft_status_t st = ft_dev_event_record(d, copy, done);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ft_status_message(st), "event_record"));
    ft_status_free(st);
    st = ft_dev_event_record(d, compute, copy);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    st = ft_dev_stream_wait(d, done, done);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ft_status_message(st), "stream_wait"));
    ft_status_free(st);
    st = ft_dev_stream_sync(d, NULL);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    st = ft_dev_copy_h2d(d, p, later, sizeof(later), done);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(ft_status_message(st), "copy_h2d"));
    ft_status_free(st);
    ft_dev_free(d, p);
    ft_dev_event_destroy(d, done);
    ft_dev_stream_destroy(d, copy);
    ft_dev_stream_destroy(d, compute);
    ft_dev_destroy(d);
}

/* Host memory is device memory: host_alloc works, pinning is a no-op that
 * succeeds, and the kernels are the executor's (no function, no graphs). */
static void test_host_memory_and_no_kernels(void **state)
{
    (void)state;
    ft_device_t *d = NULL;
    assert_null(ft_cpu_device_create(4096, NULL, &d));
    void *h = NULL;
    assert_null(ft_dev_host_alloc(d, 1 << 20, &h)); /* not counted against the cap */
    memset(h, 1, 1 << 20);
    uint64_t free_b, total_b;
    assert_null(ft_dev_memory_info(d, &free_b, &total_b));
    assert_int_equal(free_b, 4096);
    static const uint8_t weights[8192];
    assert_null(ft_dev_pin(d, weights, sizeof(weights), "weights.ftw"));
    ft_dev_unpin(d, weights);
    ft_dev_host_free(d, h);
    ft_dfn_t fn = NULL;
    ft_status_t st = ft_dev_function(d, "ft_gemv_q8_0", &fn);
    assert_int_equal(ft_status_code(st), FT_STATUS_UNSUPPORTED);
    assert_non_null(strstr(ft_status_message(st), "cpu device"));
    assert_non_null(strstr(ft_status_message(st), "ft_gemv_q8_0"));
    ft_status_free(st);
    assert_false(ft_dev_graphs_supported(d));
    assert_string_equal(d->vt->name, "cpu");
    ft_dev_destroy(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capped_memory),
        cmocka_unit_test(test_uncapped_reports_the_machine),
        cmocka_unit_test(test_copies_and_memset),
        cmocka_unit_test(test_streams_and_events),
        cmocka_unit_test(test_host_memory_and_no_kernels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
