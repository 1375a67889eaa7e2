/* Sessions take their memory from the engine's device: the cpu device on
 * the cpu backend, the simulated GPU on sim, where it counts against the
 * modelled card. A session's own allocation (its logits) is returned when
 * it is destroyed; the engine's step workspace grows to its batch and
 * context; its KV cache is pages of the engine's pool, which takes slabs
 * from the same device as positions are evaluated and keeps them for the
 * next session until the engine closes. A device whose memory cannot hold
 * a session refuses it with a status naming the device's request. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backends/cpu/cpu_device.h"
#include "exec/engine_internal.h"
#include "ref_bundle.h"
#include "test_tmp.h"

#include <stdio.h>
#include <string.h>

static char g_bundle[4096];
static const char *g_hw = FT_SOURCE_DIR "/tests/data/slow_cpu_fast_pcie.textproto";

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.seed = 4;
    o.format = FT_DTYPE_Q8_0;
    ft_status_t st = ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_INVALID,
                                         ft_test_tmpdir("sessmem"), g_bundle, sizeof(g_bundle));
    if (st) {
        fprintf(stderr, "%s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    return 0;
}

static ft_engine_t *open_engine(ft_backend_kind_t backend)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = backend;
    eo.hw_profile = backend == FT_BACKEND_SIM ? g_hw : NULL;
    eo.vram_bytes = backend == FT_BACKEND_SIM ? 2250ull << 10 : 0;
    eo.n_threads = 1;
    ft_engine_t *e = NULL;
    assert_null(ft_engine_open(g_bundle, &eo, &e));
    return e;
}

/* Device memory in use, as the device's memory layer counts it. */
static uint64_t used(const ft_engine_t *e)
{
    return ((const ft_cpu_device_t *)e->mem)->used;
}

static void session_from_device(ft_backend_kind_t backend)
{
    ft_engine_t *e = open_engine(backend);
    assert_non_null(e->mem);
    assert_string_equal(e->mem->vt->name, backend == FT_BACKEND_SIM ? "sim" : "cpu");
    const uint64_t before = used(e), work_before = e->work_bytes;
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = 64;
    ft_session_t *s = NULL;
    assert_null(ft_session_create(e, &so, &s));
    const uint64_t grew = used(e) - before;
    /* The engine's step workspace may grow to the session's context (it
     * stays, for the next session); the session holds its KV and logits. */
    const uint64_t work_grew = e->work_bytes - work_before;
    assert_true(grew > work_grew);               /* its logits */
    assert_int_equal(ft_session_kv_bytes(s), 0); /* KV pages come as positions do */
    const int32_t prompt[3] = {5, 9, 11};
    assert_null(ft_session_eval(s, prompt, 3, NULL));
    /* The first page: the pool took a slab of pages from the device. */
    ft_engine_stats_t es;
    ft_engine_stats(e, &es);
    assert_int_equal(ft_session_kv_bytes(s), es.kv_page_bytes);
    assert_int_equal(es.kv_pages_used, 1);
    assert_true(es.kv_bytes_allocated >= es.kv_page_bytes);
    assert_int_equal(used(e) - before, grew + es.kv_bytes_allocated);
    assert_null(ft_session_eval(s, prompt, 3, NULL));
    assert_int_equal(used(e) - before,
                     grew + es.kv_bytes_allocated); /* evaluating allocates nothing */
    if (backend == FT_BACKEND_SIM) {
        uint64_t free_b, total_b;
        assert_null(ft_dev_memory_info(e->mem, &free_b, &total_b));
        assert_int_equal(total_b - free_b, used(e)); /* the modelled card's memory */
    }
    ft_session_destroy(s);
    /* The workspace and the pool's slab (free pages for the next session)
     * stay until close. */
    assert_int_equal(used(e), before + work_grew + es.kv_bytes_allocated);
    ft_engine_stats(e, &es);
    assert_int_equal(es.kv_pages_used, 0);
    ft_engine_close(e);
}

static void test_cpu_session_from_device(void **state)
{
    (void)state;
    session_from_device(FT_BACKEND_CPU);
}

static void test_sim_session_from_device(void **state)
{
    (void)state;
    session_from_device(FT_BACKEND_SIM);
}

/* A cap the session does not fit under: refused, naming what. */
static void test_capped_device_refuses_session(void **state)
{
    (void)state;
    ft_engine_t *e = open_engine(FT_BACKEND_CPU);
    ft_device_t *capped = NULL;
    assert_null(ft_cpu_device_create(4096, NULL, &capped));
    ft_device_t *keep = e->mem;
    e->mem = capped;
    ft_session_t *s = NULL;
    ft_status_t st = ft_session_create(e, NULL, &s);
    assert_int_equal(ft_status_code(st), FT_STATUS_OUT_OF_MEMORY);
    assert_null(s);
    assert_non_null(strstr(ft_status_message(st), "session: buffers for batches"));
    assert_non_null(strstr(ft_status_message(st), "of 4096 free"));
    ft_status_free(st);
    e->mem = keep;
    ft_dev_destroy(capped);
    ft_engine_close(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_session_from_device),
        cmocka_unit_test(test_sim_session_from_device),
        cmocka_unit_test(test_capped_device_refuses_session),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
