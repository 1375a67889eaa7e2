/* The q* dispatch every device shares (runtime/moe/offload_dispatch.c),
 * driven directly with chosen experts: hits come first and are locked for
 * the layer, misses follow with the most tokens first, the plan's q*
 * decides copies against the CPU, a copied expert hits next time, and
 * prefill batches at the plan's threshold stream the whole layer through
 * the buffer the layer owns. The counters add up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "exec/engine_internal.h"
#include "ref_bundle.h"
#include "test_tmp.h"

#include <stdio.h>
#include <string.h>

static char g_bundle[4096];
static const char *g_laptop = FT_SOURCE_DIR "/hwprofiles/presets/rtx4060_laptop.textproto";
static const char *g_slowcpu = FT_SOURCE_DIR "/tests/data/slow_cpu_fast_pcie.textproto";

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.seed = 3;
    o.format = FT_DTYPE_Q8_0;
    ft_status_t st = ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_INVALID,
                                         ft_test_tmpdir("dispatch"), g_bundle, sizeof(g_bundle));
    if (st) {
        fprintf(stderr, "%s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    return 0;
}

static ft_engine_t *open_sim(const char *hw, uint64_t vram)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = FT_BACKEND_SIM;
    eo.hw_profile = hw;
    eo.vram_bytes = vram;
    eo.plan_ctx = 64;
    ft_engine_t *e = NULL;
    ft_status_t st = ft_engine_open(g_bundle, &eo, &e);
    if (st) fail_msg("open: %s", ft_status_message(st));
    return e;
}

/* Every active expert gets exactly one item; hits precede misses; misses
 * are ordered by tokens, most first; slots of one layer are distinct. */
static void check_items(const ft_offload_decision_t *d, const uint32_t *counts, uint32_t n_active)
{
    assert_int_equal(d->n_items, n_active);
    assert_int_equal(d->n_hits + d->n_copies + d->n_cpu + d->n_streamed, n_active);
    uint8_t seen[64] = {0};
    int32_t slots[64];
    uint32_t n_slots = 0;
    int in_misses = 0;
    for (uint32_t k = 0; k < d->n_items; k++) {
        const ft_offload_item_t *it = &d->items[k];
        assert_true(it->index < n_active && !seen[it->index]);
        seen[it->index] = 1;
        if (it->where == FT_OFFLOAD_HIT)
            assert_false(in_misses);
        else if (it->where != FT_OFFLOAD_STREAM) {
            if (in_misses) assert_true(counts[d->items[k - 1].index] >= counts[it->index]);
            in_misses = 1;
        }
        if (it->where == FT_OFFLOAD_HIT || it->where == FT_OFFLOAD_COPY) {
            for (uint32_t j = 0; j < n_slots; j++)
                assert_int_not_equal(slots[j], it->slot);
            slots[n_slots++] = it->slot;
        }
        if (it->where == FT_OFFLOAD_CPU) assert_int_equal(it->slot, -1);
    }
}

static void test_decode_copies_then_hits(void **state)
{
    (void)state;
    ft_engine_t *e = open_sim(g_slowcpu, 2200ull << 10); /* a few slots; misses copied */
    ft_offload_t *off = e->offload;
    ft_offload_stats_t s0, s1;
    ft_offload_reset_stats(off);
    const uint32_t n_e = e->model->layers[0].n_experts;
    assert_true(n_e >= 8);
    /* Two experts of one token each, as a decode step routes. */
    const int32_t active[2] = {(int32_t)n_e - 1, (int32_t)n_e - 2};
    const uint32_t counts[2] = {1, 1};
    ft_offload_decision_t d;
    ft_offload_dispatch(off, 1, 1, active, counts, 2, &d);
    check_items(&d, counts, 2);
    assert_false(d.streamed);
    ft_offload_stats(off, &s0);
    assert_int_equal(s0.hits, d.n_hits);
    assert_int_equal(s0.misses, d.n_copies + d.n_cpu);
    assert_int_equal(s0.misses_to_gpu, d.n_copies);
    /* Whatever was copied is in a slot now: the same experts again hit. */
    const uint32_t copied = d.n_copies, hits = d.n_hits;
    assert_true(copied > 0);
    ft_offload_dispatch(off, 1, 1, active, counts, 2, &d);
    check_items(&d, counts, 2);
    assert_int_equal(d.n_hits, hits + copied);
    ft_offload_stats(off, &s1);
    assert_int_equal(s1.hits, s0.hits + d.n_hits);
    ft_engine_close(e);
}

static void test_misses_on_the_cpu(void **state)
{
    (void)state;
    ft_engine_t *e =
        open_sim(g_laptop, 2250ull << 10); /* the CPU is the cheaper place for misses */
    ft_offload_t *off = e->offload;
    const uint32_t n_e = e->model->layers[0].n_experts;
    int32_t active[8];
    uint32_t counts[8];
    for (uint32_t i = 0; i < 8; i++) {
        active[i] = (int32_t)(n_e - 1 - i);
        counts[i] = 1 + (i * 5) % 7; /* a prefill-like spread of tokens */
    }
    ft_offload_decision_t d;
    ft_offload_dispatch(off, 0, 16, active, counts, 8, &d);
    check_items(&d, counts, 8);
    assert_true(d.n_cpu > 0);
    ft_engine_close(e);
}

static void test_prefill_streams_layers(void **state)
{
    (void)state;
    ft_engine_t *e = open_sim(g_slowcpu, 2400ull << 10); /* room for the two buffers */
    ft_offload_t *off = e->offload;
    const ft_plan_result_t *plan = ft_offload_plan(off);
    assert_true(plan->stream_buffers && ft_offload_stream_bytes(off) > 0);
    const uint32_t n_tok = plan->prefill_stream_tokens > 2 ? plan->prefill_stream_tokens : 2;
    const int32_t active[3] = {0, 2, 5};
    const uint32_t counts[3] = {n_tok, 1, 3};
    ft_offload_decision_t d;
    for (uint32_t l = 0; l < 2; l++) {
        ft_offload_dispatch(off, l, n_tok, active, counts, 3, &d);
        check_items(&d, counts, 3);
        assert_true(d.streamed);
        assert_int_equal(d.buffer, l % 2);
        assert_int_equal(d.n_streamed, 3);
        for (uint32_t k = 0; k < 3; k++)
            assert_int_equal(d.items[k].slot, (int32_t)(l % 2));
    }
    /* A single token never streams. */
    ft_offload_dispatch(off, 0, 1, active, counts, 1, &d);
    assert_false(d.streamed);
    ft_engine_close(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_copies_then_hits),
        cmocka_unit_test(test_misses_on_the_cpu),
        cmocka_unit_test(test_prefill_streams_layers),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
