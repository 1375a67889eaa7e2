/* The profiler (hwprofiles/) on this machine with tiny measurements:
 * figures are present, positive and ordered (min <= median <= max), one
 * thread reads no faster than all threads (with slack for noise), every
 * CPU GEMV format is measured at both expert shapes, the profile converts
 * to ft_hw_t and survives the text form; and a missing CUDA driver gives
 * a profile without GPU that says why. No timing thresholds: the machine
 * is shared and its speed is not the test's business. */
#include "../../hwprofiles/gpu_measure.h"
#include "../../hwprofiles/profiler.h"
#include "../../runtime/format/textproto.h"
#include "../../runtime/plan/hw_profile.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void check_figure(const Fthw__Figure *f, const char *what)
{
    if (!f)
        fail_msg("%s: missing", what);
    if (!(f->min > 0 && f->min <= f->median && f->median <= f->max && isfinite(f->max)))
        fail_msg("%s: min %g median %g max %g", what, f->min, f->median, f->max);
    assert_int_equal(f->source, FTHW__SOURCE__MEASURED);
    assert_true(f->n_runs >= 1);
    assert_true(f->note && *f->note);
}

static Fthw__Profile *tiny_profile(void)
{
    ft_profile_options_t o;
    ft_profile_options_init(&o);
    o.quick = 1;
    o.dram_buffer_bytes = 32u << 20;
    o.gemv_bytes = 4u << 20;
    o.n_runs = 3;
    o.skip_gpu = 1;
    Fthw__Profile *p = NULL;
    ft_status_t st = ft_profile_measure(&o, &p);
    if (st)
        fail_msg("%s", ft_status_message(st));
    return p;
}

static void test_measure(void **state)
{
    (void)state;
    Fthw__Profile *p = tiny_profile();
    const Fthw__Cpu *c = p->cpu;
    assert_non_null(c);
    assert_true(c->model && *c->model);
    check_figure(c->n_cores, "n_cores");
    check_figure(c->ram_bytes, "ram_bytes");
    assert_true(c->n_physical_cores->median <= c->n_cores->median);
    check_figure(c->dram_read_gbs, "dram_read_gbs");
    check_figure(c->dram_read_1t_gbs, "dram_read_1t_gbs");
    assert_int_equal(c->dram_read_gbs->n_runs, 3);
    /* No comparison of the two rates: both are timings on a shared machine
     * (tests run in parallel), and timed assertions do not belong in tests. */
    for (size_t i = 0; i < c->n_caches; i++)
        check_figure(c->caches[i]->size_bytes, "cache size");
    assert_int_equal(c->n_gemv, 2 * FT_HWP_N_GEMV_FORMATS);
    for (size_t i = 0; i < c->n_gemv; i++) {
        check_figure(c->gemv[i]->weight_gbs, c->gemv[i]->format);
        assert_true(ft_dtype_from_name(c->gemv[i]->format) == ft_hwp_gemv_formats[i / 2]);
        assert_int_equal(c->gemv[i]->rows * c->gemv[i]->cols, 768 * 2048);
    }
    assert_int_equal(p->n_gpus, 0);
    assert_non_null(strstr(p->gpu_note, "no GPU"));

    /* The planner's view, and the text form. */
    ft_hw_t hw;
    assert_null(ft_hw_from_profile(p, &hw));
    assert_true(hw.dram_gbs == c->dram_read_gbs->median);
    assert_true(hw.cpu_gemv_gbs[FT_DTYPE_Q8_0] > 0 && hw.cpu_gemv_gbs[FT_DTYPE_F32] > 0);
    assert_int_equal(hw.n_gpus, 0);
    char *text = NULL;
    size_t len;
    assert_null(ft_textproto_print(&p->base, NULL, &text, &len));
    ProtobufCMessage *m = NULL;
    ft_status_t st = ft_textproto_parse(&fthw__profile__descriptor, text, len, "measured", &m);
    if (st)
        fail_msg("%s", ft_status_message(st));
    ft_hw_t hw2;
    assert_null(ft_hw_from_profile((Fthw__Profile *)m, &hw2));
    assert_memory_equal(&hw, &hw2, sizeof(hw));
    protobuf_c_message_free_unpacked(m, NULL);
    free(text);
    fthw__profile__free_unpacked(p, NULL);
}

/* The GPU probe up to the dlopen failure: no error, a note naming it. */
static void test_no_driver(void **state)
{
    (void)state;
    ft_profile_options_t o;
    ft_profile_options_init(&o);
    Fthw__Profile p;
    fthw__profile__init(&p);
    ft_threadpool_t *pool = NULL;
    assert_null(ft_threadpool_create(1, &pool));
    ft_status_t st = ft_hwp_gpus(&o, pool, "libcuda-freetoken-test-absent.so.1", 1u << 20, &p);
    assert_null(st);
    assert_int_equal(p.n_gpus, 0);
    assert_non_null(strstr(p.gpu_note, "no GPU: no CUDA driver: dlopen(\"libcuda-freetoken-test-absent.so.1\")"));
    free(p.gpu_note);
    ft_threadpool_destroy(pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_measure), cmocka_unit_test(test_no_driver)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
