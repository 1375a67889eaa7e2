/* ftc compile refuses, before writing anything, a matrix whose stored
 * format a selected target cannot compute (compiler/compile_formats.c):
 * the message names the tensor, the format, the target and what the
 * target supports. The IR of a fixture gets one tensor marked Q8_1
 * (as a GGUF copied as it is would carry it: ggml type 9, an activation
 * layout no kernel computes as a weight). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "compile.h"
#include "import.h"
#include "model_gen.h"
#include "ref_bundle.h"
#include "test_tmp.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define OK(expr)                                                                                   \
    do {                                                                                           \
        ft_status_t st_ = (expr);                                                                  \
        if (st_) fail_msg("%s: %s", #expr, ft_status_message(st_));                                \
    } while (0)

static void test_unsupported_format_refused_before_writing(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_ref_wide_opts(&o);
    char src[4096], bundle[4096], converted[4096];
    mkdir(ft_test_tmpdir("compile_formats"), 0755);
    snprintf(src, sizeof(src), "%s/model.gguf", ft_test_tmpdir("compile_formats"));
    snprintf(bundle, sizeof(bundle), "%s/refused", ft_test_tmpdir("compile_formats"));
    snprintf(converted, sizeof(converted), "%s/converted", ft_test_tmpdir("compile_formats"));
    OK(ft_fixture_write_gguf(&o, src));
    ft_ir_model_t *m = NULL;
    OK(ft_import_model(src, &m));
    ft_ir_tensor_t *t = NULL;
    for (uint32_t i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, "blk.1.ffn_down_exps.weight") == 0) t = &m->tensors[i];
    assert_non_null(t);
    t->dtype = FT_DTYPE_Q8_1;
    ft_compile_options_t co;
    ft_compile_options_init(&co);
    co.cpu_isa = NULL;
    co.n_cuda_archs = 0;
    ft_status_t st = ft_compile_bundle(m, &co, bundle);
    assert_int_equal(ft_status_code(st), FT_STATUS_UNSUPPORTED);
    const char *msg = ft_status_message(st);
    print_message("%s\n", msg);
    assert_non_null(strstr(msg, "tensor 'blk.1.ffn_down_exps.weight'"));
    assert_non_null(strstr(msg, "weight format q8_1"));
    assert_non_null(strstr(msg, "target cpu"));
    assert_non_null(strstr(msg, "q4_k"));
    ft_status_free(st);
    struct stat sb;
    assert_int_not_equal(stat(bundle, &sb), 0); /* nothing written */
    /* --format converts it away (a supported target format): accepted. */
    t->dtype = FT_DTYPE_F32;
    co.format = FT_DTYPE_Q5_K;
    OK(ft_compile_bundle(m, &co, converted));
    ft_ir_model_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unsupported_format_refused_before_writing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
