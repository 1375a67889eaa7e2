/* The simulated device behind the device interface: its memory is host
 * memory capped at the modelled GPU's size, copies really copy and take
 * the profile's time, streams and events order work as CUDA's do, and it
 * counts an order violation when a kernel reads memory whose copy has not
 * completed or a copy overwrites memory a queued kernel still reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backends/sim/sim_device.h"

#include <math.h>
#include <string.h>

/* Round numbers: 1 GB/s PCIe each way, 100 GB/s device memory (GEMV at
 * 70 of it), no launch latency, a 1 MB GPU. */
static ft_hw_t hw_round(void)
{
    ft_hw_t hw;
    memset(&hw, 0, sizeof(hw));
    hw.n_cores = 2;
    hw.dram_gbs = 10;
    hw.n_gpus = 1;
    hw.gpu.vram_bytes = 1000000;
    hw.gpu.hbm_gbs = 100;
    hw.gpu.h2d_gbs = 1;
    hw.gpu.d2h_gbs = 1;
    hw.gpu.gemm_tflops = 1000;
    return hw;
}

typedef struct rig {
    ft_device_t *d;
    ft_dstream_t cs, xs;
    ft_devent_t ev;
} rig_t;

static void rig_open(rig_t *r)
{
    const ft_hw_t hw = hw_round();
    assert_null(ft_sim_device_create(&hw, 0, NULL, &r->d));
    assert_true(ft_sim_device_is(r->d));
    assert_null(ft_dev_stream_create(r->d, &r->cs));
    assert_null(ft_dev_stream_create(r->d, &r->xs));
    assert_null(ft_dev_event_create(r->d, &r->ev));
}

static void rig_close(rig_t *r)
{
    ft_dev_event_destroy(r->d, r->ev);
    ft_dev_stream_destroy(r->d, r->cs);
    ft_dev_stream_destroy(r->d, r->xs);
    ft_dev_destroy(r->d);
}

static uint64_t violations(ft_device_t *d)
{
    ft_sim_counters_t c;
    ft_sim_counters(d, &c);
    return c.order_violations;
}

static void test_memory_is_capped_host_memory(void **state)
{
    (void)state;
    rig_t r;
    rig_open(&r);
    uint64_t free_b, total_b;
    assert_null(ft_dev_memory_info(r.d, &free_b, &total_b));
    assert_int_equal(total_b, 1000000);
    assert_int_equal(free_b, 1000000);
    ft_dptr_t a = 0, b = 0;
    assert_null(ft_dev_alloc(r.d, 600000, &a));
    assert_int_equal(a % 256, 0);
    assert_null(ft_dev_memory_info(r.d, &free_b, &total_b));
    assert_int_equal(free_b, 400000);
    ft_status_t st = ft_dev_alloc(r.d, 400001, &b);
    assert_non_null(st);
    assert_int_equal(ft_status_code(st), FT_STATUS_OUT_OF_MEMORY);
    assert_non_null(strstr(ft_status_message(st), "400000 of 1000000 free"));
    ft_status_free(st);
    assert_int_equal(b, 0);
    /* Copies really copy: the device address is the host address. */
    uint8_t src[1000], back[1000];
    for (int i = 0; i < 1000; i++)
        src[i] = (uint8_t)(i * 7);
    assert_null(ft_dev_copy_h2d(r.d, a + 4096, src, sizeof(src), r.xs));
    assert_memory_equal((const void *)(uintptr_t)(a + 4096), src, sizeof(src));
    assert_null(ft_dev_copy_d2h(r.d, back, a + 4096, sizeof(back), r.cs));
    assert_memory_equal(back, src, sizeof(src));
    ft_dev_free(r.d, a);
    assert_null(ft_dev_memory_info(r.d, &free_b, &total_b));
    assert_int_equal(free_b, 1000000);
    /* A budget above the card's size raises the cap. */
    const ft_hw_t hw = hw_round();
    ft_device_t *big = NULL;
    assert_null(ft_sim_device_create(&hw, 2000000, NULL, &big));
    assert_null(ft_dev_memory_info(big, &free_b, &total_b));
    assert_int_equal(total_b, 2000000);
    ft_dev_destroy(big);
    rig_close(&r);
}

/* A kernel reading a slot must wait for the copy that fills it. */
static void test_read_before_copy_is_a_violation(void **state)
{
    (void)state;
    rig_t r;
    rig_open(&r);
    ft_dptr_t slot = 0;
    assert_null(ft_dev_alloc(r.d, 100000, &slot));
    static uint8_t blob[100000];
    ft_sim_step_begin(r.d);
    assert_null(ft_dev_copy_h2d(r.d, slot, blob, sizeof(blob), r.xs)); /* 100 us at 1 GB/s */
    ft_sim_kernel(r.d, r.cs, slot, sizeof(blob), 0, 1, FT_DTYPE_Q8_0);  /* no wait */
    assert_int_equal(violations(r.d), 1);
    (void)ft_sim_step_end(r.d);
    /* The same with the compute stream waiting for the copy's event: no
     * violation, and the step is the copy then the kernel. */
    ft_sim_reset_counters(r.d);
    ft_sim_step_begin(r.d);
    assert_null(ft_dev_copy_h2d(r.d, slot, blob, sizeof(blob), r.xs));
    assert_null(ft_dev_event_record(r.d, r.ev, r.xs));
    assert_null(ft_dev_stream_wait(r.d, r.cs, r.ev));
    ft_sim_kernel(r.d, r.cs, slot, sizeof(blob), 0, 1, FT_DTYPE_Q8_0);
    const double dt = ft_sim_step_end(r.d);
    assert_int_equal(violations(r.d), 0);
    const double copy = 100000 / 1e9, kernel = 100000 / (70e9);
    assert_true(fabs(dt - (copy + kernel)) < 1e-12);
    ft_sim_counters_t c;
    ft_sim_counters(r.d, &c);
    assert_int_equal(c.bytes_copied, 100000);
    assert_int_equal(c.n_copies, 1);
    assert_int_equal(c.n_kernels, 1);
    assert_true(fabs(c.elapsed - dt) < 1e-15);
    ft_dev_free(r.d, slot);
    rig_close(&r);
}

/* A copy into memory that a kernel queued before it may still be reading
 * (the other stream did not wait) is a race; after the host synchronized
 * with the compute stream it is not. Work on different streams overlaps. */
static void test_overwrite_while_read_is_a_violation(void **state)
{
    (void)state;
    rig_t r;
    rig_open(&r);
    ft_dptr_t slot = 0;
    assert_null(ft_dev_alloc(r.d, 700000, &slot));
    static uint8_t blob[700000];
    ft_sim_step_begin(r.d);
    ft_sim_kernel(r.d, r.cs, slot, sizeof(blob), 0, 1, FT_DTYPE_Q8_0); /* reads for 10 us */
    assert_null(ft_dev_copy_h2d(r.d, slot, blob, 1000, r.xs));        /* starts at once */
    assert_int_equal(violations(r.d), 1);
    (void)ft_sim_step_end(r.d);
    ft_sim_reset_counters(r.d);
    ft_sim_step_begin(r.d);
    ft_sim_kernel(r.d, r.cs, slot, sizeof(blob), 0, 1, FT_DTYPE_Q8_0);
    assert_null(ft_dev_stream_sync(r.d, r.cs)); /* the host waits for the kernel */
    assert_null(ft_dev_copy_h2d(r.d, slot, blob, 1000, r.xs));
    assert_int_equal(violations(r.d), 0);
    (void)ft_sim_step_end(r.d);
    /* Independent work on the two streams runs in parallel: the step takes
     * the longer of the two. Resident weights (reads 0) are not checked. */
    ft_sim_reset_counters(r.d);
    ft_sim_step_begin(r.d);
    ft_dptr_t other = 0;
    assert_null(ft_dev_alloc(r.d, 200000, &other));
    ft_sim_kernel(r.d, r.cs, 0, 700000, 0, 1, FT_DTYPE_Q8_0);        /* 10 us */
    assert_null(ft_dev_copy_h2d(r.d, other, blob, 200000, r.xs));     /* 200 us */
    const double dt = ft_sim_step_end(r.d);
    assert_true(fabs(dt - 200000 / 1e9) < 1e-12);
    assert_int_equal(violations(r.d), 0);
    /* The host's CPU work delays what the host queues after it. */
    ft_sim_reset_counters(r.d);
    ft_sim_step_begin(r.d);
    ft_sim_cpu(r.d, 10000000, 0, 1, FT_DTYPE_Q8_0); /* 1 ms at 10 GB/s */
    ft_sim_kernel(r.d, r.cs, 0, 700000, 0, 1, FT_DTYPE_Q8_0);
    const double dt2 = ft_sim_step_end(r.d);
    assert_true(fabs(dt2 - (1e-3 + 1e-5)) < 1e-12);
    ft_dev_free(r.d, other);
    ft_dev_free(r.d, slot);
    rig_close(&r);
}

/* The sim launches no kernels of its own; callers must not ask it to. */
static void test_no_kernels_of_its_own(void **state)
{
    (void)state;
    rig_t r;
    rig_open(&r);
    assert_null(r.d->vt->function);
    assert_null(r.d->vt->launch);
    assert_int_equal(ft_dev_graphs_supported(r.d), 0);
    assert_string_equal(r.d->vt->name, "sim");
    rig_close(&r);
}

static void test_profile_without_gpu_is_refused(void **state)
{
    (void)state;
    ft_hw_t hw = hw_round();
    hw.n_gpus = 0;
    ft_device_t *d = NULL;
    ft_status_t st = ft_sim_device_create(&hw, 0, NULL, &d);
    assert_non_null(st);
    assert_null(d);
    assert_non_null(strstr(ft_status_message(st), "needs a GPU"));
    ft_status_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_is_capped_host_memory),
        cmocka_unit_test(test_read_before_copy_is_a_violation),
        cmocka_unit_test(test_overwrite_while_read_is_a_violation),
        cmocka_unit_test(test_no_kernels_of_its_own),
        cmocka_unit_test(test_profile_without_gpu_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
