/* A re-plan on a device (the sim's, through the device interface, as
 * cuda's goes) whose allocations or copies fail part way: for every k, the
 * k-th such device call of the re-plan fails, and then the cache's slot
 * map, the device's slot contents (each resident expert's bytes in its
 * slot), the reserved layout and the counters are as before. With no
 * failure the re-plan takes effect and the device matches the new map. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "exec/engine_internal.h"
#include "moe/offload_internal.h"
#include "ref_bundle.h"
#include "test_tmp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_bundle[4096];
static const char *g_slowcpu = FT_SOURCE_DIR "/tests/data/slow_cpu_fast_pcie.textproto";
static const uint64_t g_few = 2200ull << 10, g_more = 2250ull << 10, g_all = 64ull << 20;

/* A device that forwards to the sim's and fails its fail_at-th
 * allocation or host-to-device copy (the calls a re-plan makes). */
typedef struct fail_dev {
    ft_device_t base;
    ft_device_t *in;
    uint64_t n_calls, fail_at;
} fail_dev_t;

static ft_device_t *inner(ft_device_t *d)
{
    return ((fail_dev_t *)d)->in;
}

static int fails(ft_device_t *dev)
{
    fail_dev_t *d = (fail_dev_t *)dev;
    return d->fail_at && ++d->n_calls == d->fail_at;
}

static void f_destroy(ft_device_t *d)
{
    (void)d;
}
static const ft_device_info_t *f_info(const ft_device_t *d)
{
    return ft_dev_info(((const fail_dev_t *)d)->in);
}
static ft_status_t f_memory_info(ft_device_t *d, uint64_t *f, uint64_t *t)
{
    return ft_dev_memory_info(inner(d), f, t);
}
static ft_status_t f_alloc(ft_device_t *d, uint64_t n, ft_dptr_t *out)
{
    if (fails(d)) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "failing device: alloc fails (injected)");
    return ft_dev_alloc(inner(d), n, out);
}
static void f_free(ft_device_t *d, ft_dptr_t p)
{
    ft_dev_free(inner(d), p);
}
static ft_status_t f_host_alloc(ft_device_t *d, size_t n, void **out)
{
    return ft_dev_host_alloc(inner(d), n, out);
}
static void f_host_free(ft_device_t *d, void *p)
{
    ft_dev_host_free(inner(d), p);
}
static ft_status_t f_pin(ft_device_t *d, const void *p, size_t n, const char *what)
{
    return ft_dev_pin(inner(d), p, n, what);
}
static void f_unpin(ft_device_t *d, const void *p)
{
    ft_dev_unpin(inner(d), p);
}
static ft_status_t f_stream_create(ft_device_t *d, ft_dstream_t *out)
{
    return ft_dev_stream_create(inner(d), out);
}
static void f_stream_destroy(ft_device_t *d, ft_dstream_t s)
{
    ft_dev_stream_destroy(inner(d), s);
}
static ft_status_t f_stream_sync(ft_device_t *d, ft_dstream_t s)
{
    return ft_dev_stream_sync(inner(d), s);
}
static ft_status_t f_event_create(ft_device_t *d, ft_devent_t *out)
{
    return ft_dev_event_create(inner(d), out);
}
static void f_event_destroy(ft_device_t *d, ft_devent_t e)
{
    ft_dev_event_destroy(inner(d), e);
}
static ft_status_t f_event_record(ft_device_t *d, ft_devent_t e, ft_dstream_t s)
{
    return ft_dev_event_record(inner(d), e, s);
}
static ft_status_t f_stream_wait(ft_device_t *d, ft_dstream_t s, ft_devent_t e)
{
    return ft_dev_stream_wait(inner(d), s, e);
}
static ft_status_t f_copy_h2d(ft_device_t *d, ft_dptr_t dst, const void *src, size_t n, ft_dstream_t s)
{
    if (fails(d)) return ft_status_make(FT_STATUS_INTERNAL, "failing device: copy fails (injected)");
    return ft_dev_copy_h2d(inner(d), dst, src, n, s);
}
static ft_status_t f_copy_d2h(ft_device_t *d, void *dst, ft_dptr_t src, size_t n, ft_dstream_t s)
{
    return ft_dev_copy_d2h(inner(d), dst, src, n, s);
}
static ft_status_t f_copy_d2d(ft_device_t *d, ft_dptr_t dst, ft_dptr_t src, size_t n, ft_dstream_t s)
{
    return ft_dev_copy_d2d(inner(d), dst, src, n, s);
}
static ft_status_t f_memset(ft_device_t *d, ft_dptr_t dst, uint8_t v, size_t n, ft_dstream_t s)
{
    return ft_dev_memset(inner(d), dst, v, n, s);
}

static const ft_device_vtable_t fail_vt = {
    .name = "failing",
    .destroy = f_destroy,
    .info = f_info,
    .memory_info = f_memory_info,
    .alloc = f_alloc,
    .free = f_free,
    .host_alloc = f_host_alloc,
    .host_free = f_host_free,
    .pin = f_pin,
    .unpin = f_unpin,
    .stream_create = f_stream_create,
    .stream_destroy = f_stream_destroy,
    .stream_sync = f_stream_sync,
    .event_create = f_event_create,
    .event_destroy = f_event_destroy,
    .event_record = f_event_record,
    .stream_wait = f_stream_wait,
    .copy_h2d = f_copy_h2d,
    .copy_d2h = f_copy_d2h,
    .copy_d2d = f_copy_d2d,
    .memset = f_memset,
};

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.seed = 21;
    o.format = FT_DTYPE_Q8_0;
    ft_status_t st = ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_INVALID, ft_test_tmpdir("rollback"),
                                         g_bundle, sizeof(g_bundle));
    if (st) {
        fprintf(stderr, "%s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    return 0;
}

/* The slot of every expert id (-1: not resident), and a check that each
 * resident expert's slot in device memory (the sim's: host memory) holds
 * its blob. */
static void snapshot(const ft_offload_t *o, int32_t *where)
{
    for (uint32_t l = 0; l < o->n_layers; l++)
        for (uint32_t e = 0; e < o->max_experts; e++) {
            const uint32_t id = l * o->max_experts + e;
            where[id] = ft_expert_cache_find(o->cache, id);
            if (where[id] < 0)
                continue;
            const ft_offload_layer_t *L = &o->L[l];
            assert_true((uint32_t)where[id] < o->n_dev_slots);
            assert_memory_equal((const void *)(uintptr_t)ft_offload_slot(o, where[id]),
                                L->blob0 + (uint64_t)e * L->blob_stride, L->blob_stride);
        }
}

static void replan_failing(ft_engine_t *eng, uint64_t budget)
{
    const ft_model_t *m = eng->model;
    const size_t n_ids = (size_t)m->n_layers * m->max_experts;
    int32_t *before = calloc(n_ids, sizeof(int32_t)), *after = calloc(n_ids, sizeof(int32_t));
    assert_true(before && after);
    fail_dev_t fd = {.base = {&fail_vt}, .in = eng->sim.dev};
    const ft_offload_device_t dev = {&fd.base, eng->sim.compute, eng->sim.copy};
    uint64_t k = 1;
    for (; k < 10000; k++) {
        fd.fail_at = 0;
        ft_offload_t *o = NULL;
        ft_status_t st = ft_offload_create(eng->bundle, &eng->offload->hw, g_more, 64, &dev, NULL, &o);
        if (st)
            fail_msg("create: %s", ft_status_message(st));
        /* Some decode traffic, so recency and counters are not the load's. */
        for (uint32_t l = 0; l < m->n_layers; l++) {
            const int32_t active[2] = {(int32_t)(l % (m->layers[l].n_experts - 1)),
                                       (int32_t)(m->layers[l].n_experts - 1)};
            const uint32_t counts[2] = {1, 1};
            ft_offload_decision_t dd;
            ft_offload_dispatch(o, l, 1, active, counts, 2, &dd);
            assert_null(ft_offload_copies(o, l, &dd, active));
        }
        assert_null(ft_dev_stream_sync(dev.dev, dev.copy));
        ft_offload_stats_t s0, s1;
        ft_offload_stats(o, &s0);
        snapshot(o, before);
        const uint32_t slots0 = o->n_dev_slots;
        fd.n_calls = 0;
        fd.fail_at = k;
        st = ft_offload_replan(o, budget);
        const int failed = fd.n_calls >= k;
        fd.fail_at = 0;
        ft_offload_stats(o, &s1);
        snapshot(o, after);
        if (st) {
            assert_true(failed);
            ft_status_free(st);
            assert_memory_equal(before, after, n_ids * sizeof(int32_t));
            assert_int_equal(o->n_dev_slots, slots0);
            assert_int_equal(s1.hits, s0.hits);
            assert_int_equal(s1.misses, s0.misses);
            assert_int_equal(s1.n_slots, s0.n_slots);
            assert_int_equal(s1.vram_bytes, s0.vram_bytes);
        } else {
            assert_int_equal(s1.vram_bytes, budget);
            assert_int_equal(o->n_dev_slots, s1.n_slots);
        }
        ft_offload_destroy(o);
        if (!st && !failed)
            break;
    }
    assert_true(k > 1 && k < 10000);
    print_message("re-plan to %llu KiB: %llu device calls\n", (unsigned long long)(budget >> 10),
                  (unsigned long long)(k - 1));
    free(before);
    free(after);
}

static void test_device_replan_rolls_back(void **state)
{
    (void)state;
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = FT_BACKEND_SIM;
    eo.hw_profile = g_slowcpu;
    eo.vram_bytes = g_more;
    eo.plan_ctx = 64;
    ft_engine_t *e = NULL;
    ft_status_t st = ft_engine_open(g_bundle, &eo, &e);
    if (st)
        fail_msg("open: %s", ft_status_message(st));
    replan_failing(e, g_all);
    replan_failing(e, g_few);
    ft_engine_close(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_replan_rolls_back),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
