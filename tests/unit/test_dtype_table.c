/* The format descriptor table (runtime/format/dtype.c) and the places
 * that mirror it: every row is self-consistent (name and ggml id look up
 * back to it), a weight format has everything the compiler and the CPU
 * kernels need, the CPU dot table (backends/cpu/matmul.c), the CUDA name
 * table, the generated CPU kernels and the profiler's GEMV list agree with
 * the flags, and the enums plan.proto stores (WeightFormat, and the IR's
 * enums) have exactly the C values, by name. The numbers themselves are
 * _Static_assert'ed at build time (runtime/format/dtype_mirrors.c,
 * ir/ir_mirrors.c); this checks what a static assertion cannot see: a
 * value added on the proto side only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/backends/cpu/cpu_dot.h"
#include "../../runtime/format/convert.h"
#include "../../codegen/cpu/cg_cpu_internal.h"
#include "../../hwprofiles/profiler.h"
#include "../../ir/schedule.h"
#include "../../runtime/plan/planner.h"
#include "ft_cuda_kernels.h"
#include "plan.pb-c.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static void test_rows_look_up_to_themselves(void **state)
{
    (void)state;
    assert_null(ft_dtype_info(FT_DTYPE_INVALID));
    assert_null(ft_dtype_info(FT_DTYPE_COUNT));
    for (int i = 1; i < FT_DTYPE_COUNT; i++) {
        const ft_dtype_t t = (ft_dtype_t)i;
        const ft_dtype_info_t *info = ft_dtype_info(t);
        assert_non_null(info);
        assert_non_null(info->name);
        assert_int_equal(ft_dtype_from_name(info->name), t);
        assert_true(info->block_elems >= 1 && info->block_bytes >= 1);
        if (info->ggml_id >= 0) {
            assert_int_equal(ft_dtype_from_ggml((uint32_t)info->ggml_id), t);
            assert_string_equal(ft_ggml_type_name((uint32_t)info->ggml_id), info->name);
        }
        if (info->st_name)
            assert_int_equal(ft_dtype_from_safetensors(info->st_name), t);
        assert_int_equal(ft_quant_supported(t), info->quantize != NULL);
        assert_int_equal(ft_dequant_supported(t), info->dequantize != NULL);
        /* a format that is written can be read back */
        if (info->quantize)
            assert_non_null(info->dequantize);
    }
}

/* What each flag promises. */
static void test_flags(void **state)
{
    (void)state;
    int n_weight = 0;
    for (int i = 1; i < FT_DTYPE_COUNT; i++) {
        const ft_dtype_t t = (ft_dtype_t)i;
        const ft_dtype_info_t *info = ft_dtype_info(t);
        const uint32_t f = info->flags;
        if (f & FT_DTYPE_FLAG_WEIGHT) {
            n_weight++;
            assert_non_null(info->quantize);
            assert_non_null(info->dequantize);
            assert_int_not_equal(info->cpu_act, FT_DTYPE_INVALID);
            assert_true(ft_cpu_supports(t));
        }
        if (f & FT_DTYPE_FLAG_CPU_GEN)
            assert_true(f & FT_DTYPE_FLAG_WEIGHT);
        if (f & FT_DTYPE_FLAG_ACT_ONLY) {
            assert_false(f & FT_DTYPE_FLAG_WEIGHT);
            assert_non_null(info->quantize);
        }
        assert_int_equal(ft_dtype_has(t, FT_DTYPE_FLAG_WEIGHT), (f & FT_DTYPE_FLAG_WEIGHT) != 0);
    }
    assert_true(n_weight > 0);
    assert_false(ft_dtype_has(FT_DTYPE_INVALID, 0));
    assert_false(ft_dtype_has(FT_DTYPE_COUNT, 0));
}

/* matmul.c's dot table and the table's cpu_act describe the same set, and
 * a weight block is a whole number of activation blocks. */
static void test_cpu_kernels_match_table(void **state)
{
    (void)state;
    for (int i = 1; i < FT_DTYPE_COUNT; i++) {
        const ft_dtype_t t = (ft_dtype_t)i;
        const ft_dtype_info_t *info = ft_dtype_info(t);
        const int has_dot = ft_cpu_dot_for(t, 1) != NULL;
        assert_int_equal(has_dot, info->cpu_act != FT_DTYPE_INVALID);
        assert_int_equal(ft_cpu_dot_for(t, 0) != NULL, has_dot);
        assert_int_equal(ft_cpu_supports(t), has_dot);
        assert_int_equal(ft_cpu_act_type(t), info->cpu_act);
        if (!has_dot) {
            assert_int_equal(ft_cpu_act_row_bytes(t, 256), 0);
            continue;
        }
        const ft_dtype_t at = info->cpu_act;
        assert_true(at == FT_DTYPE_F32 || at == FT_DTYPE_Q8_0 || at == FT_DTYPE_Q8_K);
        const ft_dtype_info_t *ai = ft_dtype_info(at);
        assert_int_equal(info->block_elems % ai->block_elems, 0);
        uint64_t rb;
        assert_true(ft_dtype_row_bytes(at, info->block_elems, &rb));
        assert_int_equal(ft_cpu_act_row_bytes(t, info->block_elems), rb);
    }
}

/* The CUDA names, the generated CPU kernels and the profiler's list read
 * the flags. */
static void test_backend_lists_match_flags(void **state)
{
    (void)state;
    for (int i = 1; i < FT_DTYPE_COUNT; i++) {
        const ft_dtype_t t = (ft_dtype_t)i;
        const char *cuda = ft_cuda_kernel_format((uint32_t)t);
        if (ft_dtype_has(t, FT_DTYPE_FLAG_CUDA))
            assert_string_equal(cuda, ft_dtype_name(t));
        else
            assert_null(cuda);
        assert_int_equal(ft_cg_cpu_format_supported((uint32_t)t),
                         ft_dtype_has(t, FT_DTYPE_FLAG_CPU_GEN));
        int profiled = 0;
        for (int j = 0; j < FT_HWP_N_GEMV_FORMATS; j++)
            profiled |= ft_hwp_gemv_formats[j] == t;
        assert_int_equal(profiled, ft_dtype_has(t, FT_DTYPE_FLAG_WEIGHT));
    }
    assert_null(ft_cuda_kernel_format(FT_DTYPE_COUNT));
    assert_null(ft_cuda_kernel_format(UINT32_MAX));
}

/* plan.proto's WeightFormat: the value i is named WF_<upper-case name of
 * dtype i>, and there are exactly FT_DTYPE_COUNT of them. */
static void test_weight_format_proto(void **state)
{
    (void)state;
    const ProtobufCEnumDescriptor *d = &ftplan__weight_format__descriptor;
    assert_int_equal(d->n_values, FT_DTYPE_COUNT);
    for (unsigned i = 0; i < d->n_values; i++) {
        const ProtobufCEnumValue *v = &d->values[i];
        char want[32];
        const char *name = v->value == 0 ? "invalid" : ft_dtype_name((ft_dtype_t)v->value);
        int n = snprintf(want, sizeof(want), "WF_%s", name);
        assert_true(n > 0 && (size_t)n < sizeof(want));
        for (char *p = want; *p; p++)
            *p = (char)toupper((unsigned char)*p);
        assert_string_equal(v->name, want);
        assert_int_equal(v->value, (int)i);
    }
}

/* The IR enums plan.proto mirrors have as many values as the proto enums
 * (the values themselves are asserted in ir/ir_mirrors.c), and so does
 * the planner's bottleneck. */
static void test_ir_enums_proto(void **state)
{
    (void)state;
    assert_int_equal(ftplan__arch__descriptor.n_values, FT_ARCH_MINIMAX_M2 + 1);
    assert_int_equal(ftplan__norm_kind__descriptor.n_values, FT_NORM_LAYER + 1);
    assert_int_equal(ftplan__rope_kind__descriptor.n_values, FT_ROPE_NEOX + 1);
    assert_int_equal(ftplan__attn_kind__descriptor.n_values, FT_ATTN_GATED_DELTANET + 1);
    assert_int_equal(ftplan__router_scoring__descriptor.n_values, FT_ROUTER_SIGMOID + 1);
    assert_int_equal(ftplan__activation__descriptor.n_values, FT_ACT_SIGMOID + 1);
    /* Roles are numbered with gaps (ranges kept per feature): the proto
     * has one value per role the IR names. */
    size_t n_roles = 1; /* FT_ROLE_UNKNOWN */
    for (int r = 1; r < FT_ROLE_COUNT; r++)
        n_roles += strcmp(ft_tensor_role_name((ft_tensor_role_t)r), "unknown") != 0;
    assert_int_equal(ftplan__tensor_role__descriptor.n_values, n_roles);
    assert_int_equal(ftplan__op_kind__descriptor.n_values, FT_OP_COUNT);
    assert_int_equal(ftplan__buffer_kind__descriptor.n_values, FT_BUF_LOGITS + 1);
    /* and the planner's (values asserted in compiler/plan_partition.c) */
    assert_int_equal(ftplan__bottleneck__descriptor.n_values, FT_BOTTLENECK_CPU + 1);
}

static void test_dtype_list(void **state)
{
    (void)state;
    char buf[256];
    assert_string_equal(
        ft_dtype_list(FT_DTYPE_FLAG_WEIGHT, "or", buf, sizeof(buf)),
        "f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_k, q3_k, q4_k, q5_k, q6_k, "
        "iq2_xxs, iq2_xs, iq3_xxs, iq1_s, iq4_nl, iq3_s, iq2_s, iq4_xs, iq1_m, tq1_0, tq2_0, "
        "mxfp4, nvfp4 or fp8");
    assert_string_equal(
        ft_dtype_list(FT_DTYPE_FLAG_WEIGHT | FT_DTYPE_FLAG_CPU_GEN, "and", buf, sizeof(buf)),
        "f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_k, q3_k, q4_k, q5_k, q6_k, "
        "iq2_xxs, iq2_xs, iq3_xxs, iq1_s, iq4_nl, iq3_s, iq2_s, iq4_xs, iq1_m, tq1_0, tq2_0, mxfp4, "
        "nvfp4 and fp8");
    assert_string_equal(ft_dtype_list(FT_DTYPE_FLAG_ACT_ONLY, "or", buf, sizeof(buf)), "q8_k");
    assert_string_equal(
        ft_dtype_list(FT_DTYPE_FLAG_ACT_ONLY | FT_DTYPE_FLAG_WEIGHT, "or", buf, sizeof(buf)), "");
    /* too small: cut at a whole entry, still terminated */
    char small[12];
    memset(small, 'x', sizeof(small));
    ft_dtype_list(FT_DTYPE_FLAG_WEIGHT, "or", small, sizeof(small));
    assert_string_equal(small, "f32, f16");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_look_up_to_themselves),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_cpu_kernels_match_table),
        cmocka_unit_test(test_backend_lists_match_flags),
        cmocka_unit_test(test_weight_format_proto),
        cmocka_unit_test(test_ir_enums_proto),
        cmocka_unit_test(test_dtype_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
