/* Mixtral on the CUDA side. Its GGUF import rotates adjacent pairs
 * (FT_ROPE_NORM) and its HF import NeoX halves; both have a CUDA spec, and
 * every emitted module carries both RoPE kernels. Compiling the GGUF with
 * ftc's default CUDA targets (sm_80 .. sm_120 cubins and compute_80 PTX)
 * gives a plan whose every image defines the kernel its schedule's ROPE
 * ops name (ft_cuda_kernel_rope_name) with the (x, n_heads, pos, n_tok)
 * parameter list; loaded from the plan through the fake driver
 * (tests/cuda_fake) and launched as the op needs, it computes
 * ft_op_rope_norm with the op's theta and rope_dim. A model without RoPE
 * has no CUDA spec. Skips only where this build has no NVRTC. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cuda_test_skip.h"

#include "backends/cuda/cuda_device.h"
#include "compile.h"
#include "cuda_codegen.h"
#include "exec/ops.h"
#include "fake_cuda.h"
#include "format/plan_file.h"
#include "ft_cuda_kernels.h"
#include "gguf.h"
#include "hf.h"
#include "import.h"
#include "model_gen.h"
#include "model_registry.h"
#include "test_tmp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ASSERT_OK(expr)                                                                            \
    do {                                                                                           \
        ft_status_t st_ = (expr);                                                                  \
        if (st_) fail_msg("%s: %s", #expr, ft_status_message(st_));                                \
    } while (0)

/* The tiny fixture (d_model 64, 4 query / 2 KV heads of 16, 8 experts). */
static void write_fixture(char *gguf, char *hf, size_t cap)
{
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.arch = FT_FIXTURE_MIXTRAL;
    o.seed = 5;
    o.name = "freetoken-fixture-mixtral";
    snprintf(gguf, cap, "%s/mixtral.gguf", ft_test_tmpdir("mixtral_cuda"));
    ASSERT_OK(ft_fixture_write_gguf(&o, gguf));
    if (hf) {
        snprintf(hf, cap, "%s/mixtral-hf", ft_test_tmpdir("mixtral_cuda"));
        ASSERT_OK(ft_fixture_write_hf(&o, hf, 2));
    }
}

/* The emitted kernel of this name, or fails. */
static const ft_cg_cuda_kernel_t *kernel(const ft_cg_cuda_source_t *src, const char *name)
{
    for (uint32_t k = 0; k < src->n_kernels; k++)
        if (strcmp(src->kernels[k].name, name) == 0) return &src->kernels[k];
    fail_msg("kernel %s not emitted", name);
    return NULL;
}

static void test_spec_both_layouts(void **state)
{
    (void)state;
    char gguf[4096], hf[4096];
    write_fixture(gguf, hf, sizeof(gguf));
    ft_src_model_t *sg = NULL, *sh = NULL;
    ft_ir_model_t *g = NULL, *h = NULL;
    ASSERT_OK(ft_gguf_import(gguf, &sg));
    ASSERT_OK(ft_hf_import(hf, &sh));
    ASSERT_OK(ft_model_build_ir(sg, &g));
    ASSERT_OK(ft_model_build_ir(sh, &h));
    assert_int_equal(g->hp.rope, FT_ROPE_NORM);
    assert_int_equal(h->hp.rope, FT_ROPE_NEOX);
    ft_ir_model_t *both[2] = {g, h};
    for (int i = 0; i < 2; i++) {
        ft_cg_cuda_spec_t sp;
        ASSERT_OK(ft_cg_cuda_spec_from_ir(both[i], &sp));
        assert_int_equal(sp.head_dim, 16);
        assert_int_equal(sp.rope_dim, 16);
        assert_true(sp.rope_theta == 1e6);
        assert_int_equal(sp.n_experts, 8);
        assert_int_equal(sp.n_experts_used, 2);
        assert_int_equal(sp.norm_topk_prob, 1);
        ft_cg_cuda_source_t src;
        ASSERT_OK(ft_cg_cuda_emit(&sp, &src));
        /* Both layouts, one thread per rotated pair. */
        const ft_cg_cuda_kernel_t *neox = kernel(&src, "ft_rope_neox_h16_r16");
        const ft_cg_cuda_kernel_t *norm = kernel(&src, "ft_rope_norm_h16_r16");
        assert_int_equal(neox->op, FT_CG_CUDA_OP_ROPE);
        assert_int_equal(norm->op, FT_CG_CUDA_OP_ROPE_NORM);
        assert_int_equal(neox->block_threads, 8);
        assert_int_equal(norm->block_threads, 8);
        assert_non_null(strstr(src.text, "ft_rope_norm_h16_r16(float *x, int n_heads, const int "
                                         "*pos, int n_tok)\n{ ft_rope_norm_body<16, 16>("));
        ft_cg_cuda_source_free(&src);
    }
    /* No RoPE at all: no kernel computes it. */
    g->hp.rope = FT_ROPE_NONE;
    ft_cg_cuda_spec_t sp;
    ft_status_t st = ft_cg_cuda_spec_from_ir(g, &sp);
    assert_int_equal(ft_status_code(st), FT_STATUS_UNSUPPORTED);
    if (!strstr(ft_status_message(st),
                "RoPE over NeoX or adjacent pairs (model has norm 0, rope 0"))
        fail_msg("message: %s", ft_status_message(st));
    ft_status_free(st);
    ft_ir_model_destroy(g);
    ft_ir_model_destroy(h);
    ft_src_model_destroy(sg);
    ft_src_model_destroy(sh);
}

static void test_rope_names(void **state)
{
    (void)state;
    char name[32];
    assert_int_equal(ft_cuda_kernel_rope_name(0, 128, 64, name, sizeof(name)), 21);
    assert_string_equal(name, "ft_rope_norm_h128_r64");
    assert_int_equal(ft_cuda_kernel_rope_name(1, 16, 16, name, sizeof(name)), 20);
    assert_string_equal(name, "ft_rope_neox_h16_r16");
    /* One byte short of the NUL: refused, and the buffer left empty. */
    assert_int_equal(ft_cuda_kernel_rope_name(1, 16, 16, name, 20), -1);
    assert_string_equal(name, "");
}

/* Plan.cuda_images and cuda_ptx as the device API takes them. */
static uint32_t plan_images(const Ftplan__Plan *p, ft_cuda_image_t *im, uint32_t cap)
{
    uint32_t n = 0;
    for (size_t i = 0; i < p->n_cuda_images && n < cap; i++, n++)
        im[n] = (ft_cuda_image_t){(uint32_t)strtoul(p->cuda_images[i]->arch + 3, NULL, 10), 0,
                                  p->cuda_images[i]->cubin.data, p->cuda_images[i]->cubin.len};
    for (size_t i = 0; i < p->n_cuda_ptx && n < cap; i++, n++)
        im[n] = (ft_cuda_image_t){(uint32_t)strtoul(p->cuda_ptx[i]->arch + 8, NULL, 10), 1,
                                  p->cuda_ptx[i]->text, strlen(p->cuda_ptx[i]->text) + 1};
    return n;
}

/* The schedule's ROPE ops: all adjacent pairs, one shape; *out the first. */
static const Ftplan__Op *rope_op(const Ftplan__Plan *p)
{
    const Ftplan__Op *first = NULL;
    assert_non_null(p->schedule);
    for (size_t l = 0; l < p->schedule->n_blocks; l++)
        for (size_t i = 0; i < p->schedule->blocks[l]->n_ops; i++) {
            const Ftplan__Op *op = p->schedule->blocks[l]->ops[i];
            if (op->kind != FTPLAN__OP_KIND__OP_ROPE) continue;
            assert_int_equal(op->rope, FTPLAN__ROPE_KIND__ROPE_NORM);
            if (!first) first = op;
            assert_int_equal(op->head_dim, first->head_dim);
            assert_int_equal(op->rope_dim, first->rope_dim);
        }
    assert_non_null(first);
    return first;
}

/* heads [n_tok][n_heads][head_dim] rotated by the op's kernel on the device
 * and by ft_op_rope_norm here, with inv_freq as runtime/exec/program.c
 * builds it; returns the normalized difference. */
static double rope_on_device(ft_cuda_device_t *d, ft_cuda_module_t *m, const Ftplan__Op *op,
                             uint32_t n_heads)
{
    enum { TOK = 4, MAX_HD = 64 };
    const int pos[TOK] = {0, 1, 37, 255};
    const uint32_t hd = op->head_dim, rd = op->rope_dim;
    assert_true(hd <= MAX_HD && rd <= hd && n_heads <= 8);
    float x0[TOK * 8 * MAX_HD], x[TOK * 8 * MAX_HD], ref[TOK * 8 * MAX_HD];
    float inv_freq[MAX_HD / 2];
    const size_t n = (size_t)TOK * n_heads * hd;
    for (size_t i = 0; i < n; i++)
        x0[i] = x[i] = ref[i] = (float)sin(0.37 * (double)i + 0.1) * 2.0f;
    for (uint32_t k = 0; k < rd / 2; k++)
        inv_freq[k] = (float)pow((double)op->rope_theta, -2.0 * k / rd);
    for (int t = 0; t < TOK; t++)
        for (uint32_t h = 0; h < n_heads; h++)
            ft_op_rope_norm(ref + ((size_t)t * n_heads + h) * hd, rd, inv_freq, (uint32_t)pos[t]);
    char name[64];
    assert_true(ft_cuda_kernel_rope_name(0, hd, rd, name, sizeof(name)) > 0);
    ft_cu_function fn;
    ASSERT_OK(ft_cuda_module_function(m, name, &fn));
    ft_cu_stream s;
    ft_cu_deviceptr dx, dpos;
    ASSERT_OK(ft_cuda_stream_create(d, &s));
    ASSERT_OK(ft_cuda_alloc(d, sizeof(float) * n, &dx));
    ASSERT_OK(ft_cuda_alloc(d, sizeof(pos), &dpos));
    ASSERT_OK(ft_cuda_copy_h2d(d, dx, x, sizeof(float) * n, s));
    ASSERT_OK(ft_cuda_copy_h2d(d, dpos, pos, sizeof(pos), s));
    int heads = (int)n_heads, tok = TOK;
    void *p[] = {&dx, &heads, &dpos, &tok};
    const ft_cuda_launch_t geom = {{TOK, n_heads, 1}, {rd / 2, 1, 1}, 0};
    ASSERT_OK(ft_cuda_launch_kernel(d, fn, &geom, s, p));
    ASSERT_OK(ft_cuda_copy_d2h(d, x, dx, sizeof(float) * n, s));
    ASSERT_OK(ft_cuda_stream_sync(d, s));
    ft_cuda_free(d, dx);
    ft_cuda_free(d, dpos);
    ft_cuda_stream_destroy(d, s);
    double num = 0.0, den = 0.0, moved = 0.0;
    for (size_t i = 0; i < n; i++) {
        num += ((double)x[i] - ref[i]) * ((double)x[i] - ref[i]);
        den += (double)ref[i] * ref[i];
        moved += fabs((double)ref[i] - x0[i]);
    }
    assert_true(moved > 1.0); /* the positions past 0 did rotate */
    return sqrt(num / den);
}

static void test_compile_default_targets(void **state)
{
    (void)state;
    if (!ft_cg_cuda_nvrtc_available()) FT_CUDA_TEST_SKIP("the CUDA codegen has no NVRTC");
    char gguf[4096], bundle[4200], plan_path[4300];
    write_fixture(gguf, NULL, sizeof(gguf));
    snprintf(bundle, sizeof(bundle), "%s/bundle", ft_test_tmpdir("mixtral_cuda"));
    snprintf(plan_path, sizeof(plan_path), "%s/plan.ftp", bundle);
    ft_ir_model_t *m = NULL;
    ASSERT_OK(ft_import_model(gguf, &m));
    ft_compile_options_t co;
    ft_compile_options_init(&co);
    co.cpu_isa = NULL; /* the CPU module is not what this checks */
    memcpy(co.cuda_archs, ft_cg_cuda_default_archs, sizeof(ft_cg_cuda_default_archs));
    co.n_cuda_archs = 6;
    ASSERT_OK(ft_compile_bundle(m, &co, bundle));
    ft_ir_model_destroy(m);
    Ftplan__Plan *p = NULL;
    ASSERT_OK(ft_plan_read(plan_path, &p));
    static const char *const archs[] = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"};
    assert_int_equal(p->n_cuda_images, 6);
    for (int i = 0; i < 6; i++)
        assert_string_equal(p->cuda_images[i]->arch, archs[i]);
    assert_int_equal(p->n_cuda_ptx, 1);
    assert_string_equal(p->cuda_ptx[0]->arch, "compute_80");
    const Ftplan__Op *op = rope_op(p);
    assert_int_equal(op->head_dim, 16);
    assert_int_equal(op->rope_dim, 16);
    char norm[64], neox[64];
    assert_true(ft_cuda_kernel_rope_name(0, op->head_dim, op->rope_dim, norm, sizeof(norm)) > 0);
    assert_true(ft_cuda_kernel_rope_name(1, op->head_dim, op->rope_dim, neox, sizeof(neox)) > 0);
    assert_string_equal(norm, "ft_rope_norm_h16_r16");
    ft_cuda_image_t im[8];
    const uint32_t n_im = plan_images(p, im, 8);
    assert_int_equal(n_im, 7);
    for (uint32_t i = 0; i < n_im; i++) {
        /* The driver's parameter layout: pointer, int, pointer, int. */
        static const uint32_t want[4] = {8, 4, 8, 4};
        uint32_t bytes[8], n_params = 0;
        const uint8_t *data = im[i].data;
        if (!ft_fake_image_has_kernel(data, im[i].n_bytes, norm))
            fail_msg("%s image %u lacks %s", im[i].is_ptx ? "compute" : "sm", im[i].sm, norm);
        assert_true(ft_fake_image_has_kernel(data, im[i].n_bytes, neox));
        assert_int_equal(ft_fake_image_params(data, im[i].n_bytes, norm, bytes, 8, &n_params), 1);
        assert_int_equal(n_params, 4);
        assert_memory_equal(bytes, want, sizeof(want));
    }
    /* The module the runtime loads (the fake device is sm_90: its cubin),
     * then the PTX alone; q heads and k heads as the op rotates both. */
    setenv("FT_CUDA_LIB", FT_CUDA_FAKE_LIB, 1);
    ft_cuda_device_t *d = NULL;
    ASSERT_OK(ft_cuda_device_create(NULL, &d));
    for (int ptx_only = 0; ptx_only < 2; ptx_only++) {
        ft_cuda_module_t *mod = NULL;
        ASSERT_OK(ptx_only ? ft_cuda_module_load(d, &im[6], 1, &mod)
                           : ft_cuda_module_load(d, im, n_im, &mod));
        assert_int_equal(ft_cuda_module_image(mod), ptx_only ? 0 : 3);
        const double eq = rope_on_device(d, mod, op, op->n_heads);
        const double ek = rope_on_device(d, mod, op, op->n_kv_heads);
        if (!(eq <= 1e-6 && ek <= 1e-6))
            fail_msg("%s: q heads err %.3e, k heads err %.3e (tol 1e-6)", norm, eq, ek);
        ft_cuda_module_unload(mod);
    }
    ft_cuda_device_destroy(d);
    ft_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_both_layouts),
        cmocka_unit_test(test_rope_names),
        cmocka_unit_test(test_compile_default_targets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
