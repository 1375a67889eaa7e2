/* libclang checks of emitted sources: a deliberately broken template is
 * reported at file:line:column with the kernel it falls in, before any
 * compiler runs; an error only the system compiler sees is reported the
 * same way by ft_cg_cpu_build. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cg_cpu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const ft_cg_kreq_t k_req = {FT_KABI_OP_MATMUL, FT_KABI_FMT_Q8_0, 0, 4, 64};

/* Line (1-based) at which the portable template starts in a good source. */
static unsigned template_first_line(void)
{
    char *src = NULL;
    ft_status_t st = ft_cg_cpu_emit_kernels(&k_req, 1, "portable", NULL, 0, &src);
    assert_null(st);
    const char *m = strstr(src, "/* ---- template portable ---- */\n");
    assert_non_null(m);
    unsigned line = 1;
    for (const char *p = src; p < m; p++)
        line += *p == '\n';
    free(src);
    return line + 1;
}

static void test_broken_template(void **state)
{
    (void)state;
    /* line 3 of the template uses an undeclared name */
    const ft_cg_template_t broken = {
        "portable",
        "FTT_INLINE void ftt_matmul_q8_0(uint32_t cols, const void *w, size_t wrb, const void *xp,\n"
        "    uint32_t n_tok, uint32_t r0, uint32_t r1, float *y, size_t ldy)\n"
        "{   y[0] = undeclared_scale * (float)cols;\n"
        "}\n"
        "FTT_DEFINE_ROWLOOP_MATMUL(q4_k, (size_t)(cols / FTT_QK_K) * FTT_Q8_K_BYTES)\n"};
    char *src = NULL;
    ft_status_t st = ft_cg_cpu_emit_kernels(&k_req, 1, "portable", &broken, 1, &src);
    assert_non_null(st);
    assert_null(src);
    char want[64];
    snprintf(want, sizeof(want), "ft_kernels.c:%u:12:", template_first_line() + 2);
    const char *msg = ft_status_message(st);
    if (!strstr(msg, want) || !strstr(msg, "in kernel 'ftt_matmul_q8_0'") || !strstr(msg, "undeclared_scale"))
        fail_msg("diagnostic '%s' lacks '%s' or the kernel name", msg, want);
    ft_status_free(st);
}

static void test_compiler_error_named(void **state)
{
    (void)state;
    /* libclang defines __clang__, the system compiler (gcc) does not: the
     * #error reaches only the real compile */
    const ft_cg_template_t odd = {
        "portable",
        "FTT_DEFINE_ROWLOOP_MATMUL(q4_k, (size_t)(cols / FTT_QK_K) * FTT_Q8_K_BYTES)\n"
        "FTT_INLINE void ftt_matmul_q8_0(uint32_t cols, const void *w, size_t wrb, const void *xp,\n"
        "    uint32_t n_tok, uint32_t r0, uint32_t r1, float *y, size_t ldy)\n"
        "{\n"
        "#if !defined(__clang__)\n"
        "#error only the system compiler sees this\n"
        "#endif\n"
        "}\n"};
    char *src = NULL;
    ft_status_t st = ft_cg_cpu_emit_kernels(&k_req, 1, "portable", &odd, 1, &src);
    assert_null(st);
    uint8_t *so = NULL;
    size_t len = 0;
    st = ft_cg_cpu_build(src, "portable", &so, &len);
    if (st && ft_status_code(st) == FT_STATUS_UNAVAILABLE) { /* no gcc here: nothing to check */
        ft_status_free(st);
        free(src);
        skip();
    }
    assert_non_null(st);
    const char *msg = ft_status_message(st);
    if (!strstr(msg, "in kernel 'ftt_matmul_q8_0'") || !strstr(msg, "only the system compiler"))
        fail_msg("compiler error '%s' does not name the kernel", msg);
    ft_status_free(st);
    free(src);
}

static void test_bad_isa(void **state)
{
    (void)state;
    char *src = NULL;
    ft_status_t st = ft_cg_cpu_emit_kernels(&k_req, 1, "sse9", NULL, 0, &src);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    const ft_cg_kreq_t bad = {FT_KABI_OP_MATMUL, FT_KABI_FMT_Q4_K, 0, 4, 100};
    st = ft_cg_cpu_emit_kernels(&bad, 1, "portable", NULL, 0, &src);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_broken_template),
        cmocka_unit_test(test_compiler_error_named),
        cmocka_unit_test(test_bad_isa),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
