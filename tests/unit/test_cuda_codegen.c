/* CUDA codegen: the emitter specializes the templates to a Qwen3-MoE's
 * shapes and formats, and NVRTC compiles every emitted kernel for every
 * default target (sm_80, sm_86, sm_89, sm_90, sm_100, sm_120) into cubins
 * (ELF) plus PTX. No GPU is needed: this is the CI check of the CUDA path
 * (about 5 s of NVRTC on two cores). */
#include "cuda_codegen_test.h"
#include "cuda_test_skip.h"

#include "ft_cuda_kernels.h"
#include "gguf.h"
#include "model_gen.h"
#include "model_registry.h"
#include "test_tmp.h"

#include <stdlib.h>

static void test_emit_kernel_table(void **state)
{
    ft_cg_cuda_spec_t spec;
    ft_cg_cuda_test_spec(&spec);
    ft_cg_cuda_source_t src;
    FT_CG_ASSERT_OK(ft_cg_cuda_emit(&spec, &src));
    assert_non_null(strstr(src.text, "do not edit"));
    /* Every matmul shape has its GEMV and GEMM; expert shapes the grouped
     * GEMV; plus norms, both RoPE layouts (NeoX and adjacent pairs; the
     * spec is NeoX's), attention, router and the MoE movers. */
    static const char *const want[] = {"ft_gemv_bf16_k512",
                                       "ft_gemm_bf16_k512",
                                       "ft_gemv_q8_0_k512",
                                       "ft_gemv_experts_q4_k_k512",
                                       "ft_gemm_q4_k_k512",
                                       "ft_gemv_experts_q6_k_k256",
                                       "ft_gemv_q4_0_k512",
                                       "ft_gemv_f32_k512",
                                       "ft_gemv_f16_k512",
                                       "ft_rmsnorm_d512",
                                       "ft_rmsnorm_d64",
                                       "ft_rope_neox_h64_r64",
                                       "ft_rope_norm_h64_r64",
                                       "ft_attn_decode_h64_q8_kv2",
                                       "ft_router_topk_e16_k4",
                                       "ft_expert_copy",
                                       "ft_rows_gather",
                                       "ft_rows_scatter_add",
                                       "ft_swiglu"};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        int found = 0;
        for (uint32_t k = 0; k < src.n_kernels; k++)
            found |= strcmp(src.kernels[k].name, want[i]) == 0;
        if (!found) fail_msg("kernel %s not emitted", want[i]);
        assert_non_null(strstr(src.text, want[i]));
    }
    /* Deterministic: a second emit gives the same bytes. */
    ft_cg_cuda_source_t again;
    FT_CG_ASSERT_OK(ft_cg_cuda_emit(&spec, &again));
    assert_int_equal(again.len, src.len);
    assert_memory_equal(again.text, src.text, src.len);
    ft_cg_cuda_source_free(&again);
    ft_cg_cuda_source_free(&src);
}

/* The spec of a tiny Q8_0 Qwen3-MoE fixture imported from GGUF: its
 * shapes, one matmul shape per (format, columns), experts marked, and the
 * emitted source compiles for sm_80. */
static void test_spec_from_fixture(void **state)
{
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    FT_CG_ASSERT_OK(ft_fixture_opts_preset(&o, "tiny"));
    o.format = FT_DTYPE_Q8_0;
    char path[4300];
    snprintf(path, sizeof(path), "%s/tiny_q8.gguf", ft_test_tmpdir("cuda_spec"));
    FT_CG_ASSERT_OK(ft_fixture_write_gguf(&o, path));
    ft_src_model_t *src = NULL;
    ft_ir_model_t *ir = NULL;
    FT_CG_ASSERT_OK(ft_gguf_import(path, &src));
    FT_CG_ASSERT_OK(ft_model_build_ir(src, &ir));
    ft_cg_cuda_spec_t spec;
    FT_CG_ASSERT_OK(ft_cg_cuda_spec_from_ir(ir, &spec));
    assert_int_equal(spec.d_model, o.d_model);
    assert_int_equal(spec.n_heads, o.n_heads);
    assert_int_equal(spec.n_kv_heads, o.n_kv_heads);
    assert_int_equal(spec.head_dim, o.head_dim);
    assert_int_equal(spec.n_experts, o.n_experts);
    assert_int_equal(spec.n_experts_used, o.n_experts_used);
    int have_down = 0, have_attn_o = 0;
    for (uint32_t i = 0; i < spec.n_matmuls; i++) {
        const ft_cg_cuda_matmul_t *m = &spec.matmuls[i];
        /* The router and norms may stay F32; projections are Q8_0. */
        assert_true(m->wtype == FT_DTYPE_Q8_0 || m->wtype == FT_DTYPE_F32);
        have_down |= m->cols == o.expert_ffn && m->experts;
        have_attn_o |= m->cols == o.n_heads * o.head_dim;
    }
    assert_true(have_down && have_attn_o);
    ft_cg_cuda_source_t cs;
    FT_CG_ASSERT_OK(ft_cg_cuda_emit(&spec, &cs));
    if (ft_cg_cuda_nvrtc_available()) {
        const uint32_t sm80 = 80;
        ft_cg_cuda_images_t img;
        FT_CG_ASSERT_OK(ft_cg_cuda_compile(&cs, &sm80, 1, &img));
        assert_int_equal(img.n_images, 2);
        ft_cg_cuda_images_free(&img);
    }
    ft_cg_cuda_source_free(&cs);
    ft_ir_model_destroy(ir);
    ft_src_model_destroy(src);
}

/* 1 when src emits a kernel called name (its table entry, and its
 * definition in the text: a wrapper, or a template's own kernel). */
static int emitted(const ft_cg_cuda_source_t *src, const char *name)
{
    char def[128];
    snprintf(def, sizeof(def), "%s(", name);
    for (uint32_t k = 0; k < src->n_kernels; k++)
        if (strcmp(src->kernels[k].name, name) == 0) return strstr(src->text, def) != NULL;
    return 0;
}

/* The one table of kernel names (ft_cuda_kernels.h): every name the
 * launcher (runtime/exec/dev_kernels.c) can ask for, built from the spec's
 * shapes through the table, is a kernel the emitter wrote for that spec;
 * the variants' kernels only where the spec has the variant. */
static void test_kernel_names_table(void **state)
{
    ft_cg_cuda_spec_t spec;
    ft_cg_cuda_test_spec(&spec);
    for (int with = 1; with >= 0; with--) {
        if (!with) spec.variants = 0;
        ft_cg_cuda_source_t src;
        FT_CG_ASSERT_OK(ft_cg_cuda_emit(&spec, &src));
        char name[96];
        for (uint32_t i = 0; i < spec.n_matmuls; i++) {
            const ft_cg_cuda_matmul_t *m = &spec.matmuls[i];
            for (int k = FT_CUDA_GEMV; k <= FT_CUDA_GEMM; k++) {
                assert_true(ft_cuda_kernel_matmul_name((ft_cuda_matmul_kind_t)k, m->wtype, m->cols,
                                                       name, sizeof(name)) > 0);
                if (k == FT_CUDA_GEMV_EXPERTS && !m->experts) continue;
                if (!emitted(&src, name)) fail_msg("%s not emitted", name);
            }
        }
        assert_true(ft_cuda_kernel_rmsnorm_name(spec.d_model, name, sizeof(name)) > 0 &&
                    emitted(&src, name));
        assert_true(ft_cuda_kernel_rmsnorm_name(spec.head_dim, name, sizeof(name)) > 0 &&
                    emitted(&src, name));
        for (int neox = 0; neox < 2; neox++) {
            assert_true(ft_cuda_kernel_rope_name(neox, spec.head_dim, spec.rope_dim, name,
                                                 sizeof(name)) > 0);
            assert_true(emitted(&src, name));
            assert_true(ft_cuda_kernel_rope_table_name(neox, spec.head_dim, spec.rope_dim, name,
                                                       sizeof(name)) > 0);
            assert_int_equal(emitted(&src, name), with);
        }
        for (unsigned f = 0; f < 8; f++) {
            assert_true(ft_cuda_kernel_attn_name(f, spec.head_dim, spec.n_heads, spec.n_kv_heads,
                                                 name, sizeof(name)) > 0);
            if (emitted(&src, name) != (with || !(f & FT_CUDA_ATTN_SINKS)))
                fail_msg("%s: emitted?", name);
        }
        assert_true(ft_cuda_kernel_router_name(0, spec.n_experts, spec.n_experts_used, name,
                                               sizeof(name)) > 0);
        assert_true(emitted(&src, name));
        assert_true(ft_cuda_kernel_router_name(1, spec.n_experts, spec.n_experts_used, name,
                                               sizeof(name)) > 0);
        assert_int_equal(emitted(&src, name), with);
        static const char *const fixed[] = {
            FT_CUDA_KERNEL_KV_APPEND,   FT_CUDA_KERNEL_KV_APPEND_F16,    FT_CUDA_KERNEL_EXPERT_COPY,
            FT_CUDA_KERNEL_ROWS_GATHER, FT_CUDA_KERNEL_ROWS_SCATTER_ADD, FT_CUDA_KERNEL_SWIGLU};
        for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
            if (!emitted(&src, fixed[i])) fail_msg("%s not emitted", fixed[i]);
        assert_int_equal(emitted(&src, FT_CUDA_KERNEL_BIAS_ADD), with);
        assert_int_equal(emitted(&src, FT_CUDA_KERNEL_SWIGLU_OAI), with);
        assert_int_equal(emitted(&src, FT_CUDA_KERNEL_SIGMOID_MUL), with);
        ft_cg_cuda_source_free(&src);
    }
    /* Names that do not fit, or name no format, are refused. */
    char small[8];
    assert_int_equal(ft_cuda_kernel_attn_name(7, 64, 8, 2, small, sizeof(small)), -1);
    assert_string_equal(small, "");
    assert_int_equal(
        ft_cuda_kernel_matmul_name(FT_CUDA_GEMV, FT_DTYPE_COUNT, 64, small, sizeof(small)), -1);
}

/* The variants a model needs come from its IR: gpt-oss's biases, sinks,
 * YaRN and clamped SwiGLU (its softmax router is the plain kernel). */
static void test_spec_variants(void **state)
{
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    ft_fixture_opts_gpt_oss(&o);
    char path[4300];
    snprintf(path, sizeof(path), "%s/oss.gguf", ft_test_tmpdir("cuda_spec_variants"));
    FT_CG_ASSERT_OK(ft_fixture_write_gguf(&o, path));
    ft_src_model_t *src = NULL;
    ft_ir_model_t *ir = NULL;
    FT_CG_ASSERT_OK(ft_gguf_import(path, &src));
    FT_CG_ASSERT_OK(ft_model_build_ir(src, &ir));
    ft_cg_cuda_spec_t spec;
    FT_CG_ASSERT_OK(ft_cg_cuda_spec_from_ir(ir, &spec));
    assert_int_equal(spec.variants, FT_CG_CUDA_VAR_BIAS | FT_CG_CUDA_VAR_SINKS |
                                        FT_CG_CUDA_VAR_ROPE_TABLE | FT_CG_CUDA_VAR_SWIGLU_OAI);
    ft_ir_model_destroy(ir);
    ft_src_model_destroy(src);
    /* A plain Qwen3-MoE needs none. */
    ft_fixture_opts_init(&o);
    snprintf(path, sizeof(path), "%s/plain.gguf", ft_test_tmpdir("cuda_spec_variants"));
    FT_CG_ASSERT_OK(ft_fixture_write_gguf(&o, path));
    FT_CG_ASSERT_OK(ft_gguf_import(path, &src));
    FT_CG_ASSERT_OK(ft_model_build_ir(src, &ir));
    FT_CG_ASSERT_OK(ft_cg_cuda_spec_from_ir(ir, &spec));
    assert_int_equal(spec.variants, 0);
    ft_ir_model_destroy(ir);
    ft_src_model_destroy(src);
}

static void test_spec_errors(void **state)
{
    ft_cg_cuda_spec_t spec;
    ft_cg_cuda_test_spec(&spec);
    spec.matmuls[0].wtype = FT_DTYPE_Q8_1;
    ft_cg_cuda_source_t src;
    FT_CG_ASSERT_STATUS(ft_cg_cuda_emit(&spec, &src), FT_STATUS_UNSUPPORTED, "q8_1");
    ft_cg_cuda_test_spec(&spec);
    spec.matmuls[1].cols = 100;
    FT_CG_ASSERT_STATUS(ft_cg_cuda_emit(&spec, &src), FT_STATUS_INVALID_ARGUMENT, "100 columns");
    ft_cg_cuda_test_spec(&spec);
    spec.n_kv_heads = 3;
    FT_CG_ASSERT_STATUS(ft_cg_cuda_emit(&spec, &src), FT_STATUS_INVALID_ARGUMENT,
                        "over 3 KV heads");
}

static void test_parse_archs(void **state)
{
    uint32_t a[FT_CG_CUDA_MAX_ARCHS], n = 0;
    FT_CG_ASSERT_OK(ft_cg_cuda_parse_archs("sm_90,80,sm_120,sm_90", a, FT_CG_CUDA_MAX_ARCHS, &n));
    assert_int_equal(n, 3);
    assert_int_equal(a[0], 80);
    assert_int_equal(a[1], 90);
    assert_int_equal(a[2], 120);
    FT_CG_ASSERT_STATUS(ft_cg_cuda_parse_archs("sm_80,sm_x", a, FT_CG_CUDA_MAX_ARCHS, &n),
                        FT_STATUS_INVALID_ARGUMENT, "'sm_x' (byte 6");
    FT_CG_ASSERT_STATUS(ft_cg_cuda_parse_archs("sm_52", a, FT_CG_CUDA_MAX_ARCHS, &n),
                        FT_STATUS_INVALID_ARGUMENT, "sm_52");
    FT_CG_ASSERT_STATUS(ft_cg_cuda_parse_archs("", a, FT_CG_CUDA_MAX_ARCHS, &n),
                        FT_STATUS_INVALID_ARGUMENT, "empty");
}

static void test_compile_default_archs(void **state)
{
    if (!ft_cg_cuda_nvrtc_available()) {
        /* Without the toolkit, compiling says so instead of failing oddly. */
        ft_cg_cuda_spec_t spec;
        ft_cg_cuda_test_spec(&spec);
        ft_cg_cuda_source_t src;
        ft_cg_cuda_images_t img;
        FT_CG_ASSERT_OK(ft_cg_cuda_emit(&spec, &src));
        FT_CG_ASSERT_STATUS(ft_cg_cuda_compile(&src, ft_cg_cuda_default_archs, 6, &img),
                            FT_STATUS_UNAVAILABLE, "without NVRTC");
        ft_cg_cuda_source_free(&src);
        FT_CUDA_TEST_SKIP("the CUDA codegen has no NVRTC");
    }
    ft_cg_cuda_test_compile(ft_cg_cuda_default_archs, 6);
}

static void test_broken_template_diagnostic(void **state)
{
    if (!ft_cg_cuda_nvrtc_available()) FT_CUDA_TEST_SKIP("the CUDA codegen has no NVRTC");
    ft_cg_cuda_spec_t spec;
    ft_cg_cuda_test_spec(&spec);
    ft_cg_cuda_source_t src;
    FT_CG_ASSERT_OK(ft_cg_cuda_emit(&spec, &src));
    /* A template whose body uses an undeclared name on its third line. */
    const uint32_t first = src.n_lines + 1;
    FT_CG_ASSERT_OK(ft_cg_cuda_source_append(&src, "template broken",
                                             "extern \"C\" __global__ void ft_broken(float *y)\n"
                                             "{\n"
                                             "    y[0] = not_declared_anywhere;\n"
                                             "}\n"));
    const uint32_t archs[] = {80};
    ft_cg_cuda_images_t img;
    ft_status_t st = ft_cg_cuda_compile(&src, archs, 1, &img);
    assert_non_null(st);
    const char *msg = ft_status_message(st);
    assert_int_equal(ft_status_code(st), FT_STATUS_FORMAT);
    char where[96];
    snprintf(where, sizeof(where), "in template broken (lines %u-%u", first, first + 3);
    if (!strstr(msg, "sm_80") || !strstr(msg, where) || !strstr(msg, "not_declared_anywhere"))
        fail_msg("diagnostic lacks target, section or NVRTC's text: %s", msg);
    char line[64];
    snprintf(line, sizeof(line), "ft_model.cu(%u): error", first + 2);
    if (!strstr(msg, line)) fail_msg("diagnostic lacks the error line %s: %s", line, msg);
    if (getenv("FT_TEST_VERBOSE")) fprintf(stderr, "%s\n", msg);
    ft_status_free(st);
    ft_cg_cuda_images_free(&img);
    ft_cg_cuda_source_free(&src);
}

int main(void)
{
    if (!ft_cg_cuda_nvrtc_available())
        fprintf(stderr,
                "test_cuda_codegen: skipping NVRTC compiles: built without the CUDA toolkit\n");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_emit_kernel_table),
        cmocka_unit_test(test_spec_from_fixture),
        cmocka_unit_test(test_kernel_names_table),
        cmocka_unit_test(test_spec_variants),
        cmocka_unit_test(test_spec_errors),
        cmocka_unit_test(test_parse_archs),
        cmocka_unit_test(test_compile_default_archs),
        cmocka_unit_test(test_broken_template_diagnostic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
