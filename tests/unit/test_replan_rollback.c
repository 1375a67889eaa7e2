/* A re-plan on a driven device (ft_offload_create_device, as the cuda
 * backend uses it) whose reserve or fill fails part way: for every k, the
 * k-th device call of the re-plan fails, and then the cache's slot map, the
 * device's slot contents (each resident expert's bytes in its slot), the
 * reserved layout and the counters are as before. With no failure the
 * re-plan takes effect and the device matches the new map. */
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

/* The driven device: host memory for its slots; fails its fail_at-th call. */
typedef struct fake_dev {
    uint8_t *mem;
    uint32_t n_slots;
    uint64_t slot_bytes, stream_bytes;
    uint64_t n_calls, fail_at;
} fake_dev_t;

static int fake_fails(fake_dev_t *d)
{
    return d->fail_at && ++d->n_calls == d->fail_at;
}

static ft_status_t fake_reserve(void *user, uint32_t n_slots, uint64_t slot_bytes, uint64_t stream_bytes)
{
    fake_dev_t *d = user;
    if (fake_fails(d))
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "fake device: reserve fails (injected)");
    uint8_t *m = calloc(n_slots ? n_slots : 1, slot_bytes);
    if (!m)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "fake device: out of memory");
    /* As a real device: the new layout's contents are undefined until filled. */
    free(d->mem);
    d->mem = m;
    d->n_slots = n_slots;
    d->slot_bytes = slot_bytes;
    d->stream_bytes = stream_bytes;
    return FT_OK;
}

static ft_status_t fake_fill(void *user, int32_t slot, const uint8_t *blob, uint64_t n_bytes)
{
    fake_dev_t *d = user;
    if (fake_fails(d))
        return ft_status_make(FT_STATUS_INTERNAL, "fake device: fill fails (injected)");
    assert_true(slot >= 0 && (uint32_t)slot < d->n_slots && n_bytes <= d->slot_bytes);
    memcpy(d->mem + (uint64_t)slot * d->slot_bytes, blob, n_bytes);
    return FT_OK;
}

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
 * resident expert's slot on the device holds its blob. */
static void snapshot(const ft_offload_t *o, const fake_dev_t *d, int32_t *where)
{
    for (uint32_t l = 0; l < o->n_layers; l++)
        for (uint32_t e = 0; e < o->max_experts; e++) {
            const uint32_t id = l * o->max_experts + e;
            where[id] = ft_expert_cache_find(o->cache, id);
            if (where[id] < 0)
                continue;
            const ft_offload_layer_t *L = &o->L[l];
            assert_true((uint32_t)where[id] < d->n_slots);
            assert_memory_equal(d->mem + (uint64_t)where[id] * d->slot_bytes,
                                L->blob0 + (uint64_t)e * L->blob_stride, L->blob_stride);
        }
}

static void replan_failing(ft_engine_t *eng, uint64_t budget)
{
    const ft_model_t *m = eng->model;
    const size_t n_ids = (size_t)m->n_layers * m->max_experts;
    int32_t *before = calloc(n_ids, sizeof(int32_t)), *after = calloc(n_ids, sizeof(int32_t));
    assert_true(before && after);
    uint64_t k = 1;
    for (; k < 10000; k++) {
        fake_dev_t d = {0};
        const ft_offload_device_t dev = {&d, fake_reserve, fake_fill};
        ft_offload_t *o = NULL;
        ft_status_t st = ft_offload_create_device(eng->bundle, &eng->offload->hw, g_more, 64, &dev, NULL, &o);
        if (st)
            fail_msg("create: %s", ft_status_message(st));
        /* Some decode traffic, so recency and counters are not the load's. */
        for (uint32_t l = 0; l < m->n_layers; l++) {
            const int32_t active[2] = {(int32_t)(l % (m->layers[l].n_experts - 1)),
                                       (int32_t)(m->layers[l].n_experts - 1)};
            const uint32_t counts[2] = {1, 1};
            ft_offload_decision_t dd;
            ft_offload_dispatch(o, l, 1, active, counts, 2, &dd);
            for (uint32_t i = 0; i < dd.n_items; i++)
                if (dd.items[i].where == FT_OFFLOAD_COPY) {
                    const int32_t e = active[dd.items[i].index];
                    const ft_layer_t *L = &m->layers[l];
                    assert_null(fake_fill(&d, dd.items[i].slot, L->blob0 + (uint64_t)e * L->blob_stride,
                                          L->blob_stride));
                }
        }
        ft_offload_stats_t s0, s1;
        ft_offload_stats(o, &s0);
        snapshot(o, &d, before);
        const uint32_t slots0 = d.n_slots;
        d.n_calls = 0;
        d.fail_at = k;
        st = ft_offload_replan(o, budget);
        const int failed = d.n_calls >= k;
        d.fail_at = 0;
        ft_offload_stats(o, &s1);
        snapshot(o, &d, after);
        if (st) {
            assert_true(failed);
            ft_status_free(st);
            assert_memory_equal(before, after, n_ids * sizeof(int32_t));
            assert_int_equal(d.n_slots, slots0);
            assert_int_equal(s1.hits, s0.hits);
            assert_int_equal(s1.misses, s0.misses);
            assert_int_equal(s1.n_slots, s0.n_slots);
            assert_int_equal(s1.vram_bytes, s0.vram_bytes);
        } else {
            assert_int_equal(s1.vram_bytes, budget);
            assert_int_equal(d.n_slots, s1.n_slots);
        }
        ft_offload_destroy(o);
        free(d.mem);
        if (!st && !failed)
            break;
    }
    assert_true(k > 1 && k < 10000);
    print_message("re-plan to %llu KiB: %llu device calls\n", (unsigned long long)(budget >> 10),
                  (unsigned long long)(k - 1));
    free(before);
    free(after);
}

static void test_driven_replan_rolls_back(void **state)
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
        cmocka_unit_test(test_driven_replan_rolls_back),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
