/* base/cpu_facts.c, the CPU reader ftc profile and ft bench share, on
 * written cpuinfo files: an x86 one with two sockets (model, ISA names in
 * the table's order, whole flags only, physical cores as distinct
 * (physical id, core id) pairs), an arm64 one (Features renamed, "Model"),
 * and a missing one ("unknown CPU", no ISA); cores and RAM from sysconf. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/base/cpu_facts.h"
#include "test_tmp.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char path[512];

static void write_file(const char *text)
{
    snprintf(path, sizeof(path), "%s/cpuinfo", ft_test_tmpdir("cpu_facts"));
    assert_int_equal(ft_test_write_file(path, text, strlen(text)), 0);
}

static int has_isa(const ft_cpu_facts_t *c, const char *name)
{
    for (uint32_t i = 0; i < c->n_isa; i++)
        if (strcmp(c->isa[i], name) == 0) return 1;
    return 0;
}

/* Two sockets of two cores with two threads each: 8 processors, 4 cores.
 * "avx512" alone and "xavx2" are no flags of ours; "avx2" and "amx_tile"
 * are (the latter named "amx"). */
static void test_x86(void **state)
{
    (void)state;
    static const char proc[] = "processor\t: %d\n"
                               "model name\t: Test CPU %d\n"
                               "flags\t\t: fpu sse4_2 avx512 xavx2 avx2 fma amx_tile%s\n"
                               "physical id\t: %d\n"
                               "core id\t\t: %d\n\n";
    char text[4096] = "";
    for (int p = 0; p < 8; p++) {
        char one[512];
        snprintf(one, sizeof(one), proc, p, p, p == 0 ? "" : " avx512f", p / 4, (p / 2) % 2);
        strcat(text, one);
    }
    write_file(text);
    ft_cpu_facts_t c;
    ft_cpu_facts_read(path, &c);
    assert_string_equal(c.model, "Test CPU 0"); /* the first processor's */
    assert_int_equal(c.n_isa, 4);               /* the first processor's flags */
    assert_string_equal(c.isa[0], "sse4_2");
    assert_string_equal(c.isa[1], "avx2");
    assert_string_equal(c.isa[2], "fma");
    assert_string_equal(c.isa[3], "amx");
    assert_false(has_isa(&c, "avx512f"));
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    assert_int_equal(c.n_cores, online < 1 ? 1 : (uint32_t)online);
    /* 4 distinct cores in the file, unless this machine has fewer CPUs */
    assert_int_equal(c.n_physical_cores, c.n_cores < 4 ? c.n_cores : 4);
    assert_true(c.ram_bytes > 0);
    unlink(path);
}

static void test_arm64(void **state)
{
    (void)state;
    write_file("processor\t: 0\nBogoMIPS\t: 50.00\n"
               "Features\t: fp asimd evtstrm aes asimddp sve sve2 i8mm bf16 fphp\n"
               "CPU implementer\t: 0x41\n\nModel\t: Raspberry Pi 5\n");
    ft_cpu_facts_t c;
    ft_cpu_facts_read(path, &c);
    assert_string_equal(c.model, "Raspberry Pi 5");
    const char *want[] = {"neon", "dotprod", "i8mm", "bf16", "sve", "sve2", "fp16"};
    assert_int_equal(c.n_isa, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        assert_string_equal(c.isa[i], want[i]);
    assert_int_equal(c.n_physical_cores, c.n_cores); /* no core ids listed */
    unlink(path);
}

static void test_missing(void **state)
{
    (void)state;
    ft_cpu_facts_t c;
    ft_cpu_facts_read("/nonexistent/cpuinfo", &c);
    assert_string_equal(c.model, "unknown CPU");
    assert_int_equal(c.n_isa, 0);
    assert_true(c.n_cores >= 1);
    assert_int_equal(c.n_physical_cores, c.n_cores);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_x86),
        cmocka_unit_test(test_arm64),
        cmocka_unit_test(test_missing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
