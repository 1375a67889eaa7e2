/* The fake CUDA driver (tests/cuda_fake): its kernel-name parser accepts
 * exactly the names the emitter produces, its emulated kernels give
 * results computed here by other means (integer arithmetic, closed-form
 * softmax), it reads the emitter's ft_spec from PTX and cubins, and
 * runtime/backends/cuda works through it end to end (FT_CUDA_LIB): device
 * info, memory info and budget, alloc/copy/memset, pinned ranges, module
 * load and kernel lookup, a launch, events, graph capture + replay, and
 * deferred execution (FT_CUDA_FAKE_DEFER). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cuda_test_skip.h"
#include <dlfcn.h>
#include <math.h>
#include <sys/mman.h>

#include "backends/cuda/cuda_device.h"
#include "cuda_codegen.h"
#include "fake_cuda.h"
#include "format/convert.h"

/* ------------------------------------------------------------------ */
/* Name parser                                                         */
/* ------------------------------------------------------------------ */

static void expect_kernel(const char *name, const char *prefix, ft_dtype_t wtype, uint32_t d0,
                          uint32_t d1, uint32_t d2)
{
    ft_fake_kernel_t k;
    if (!ft_fake_kernel_parse(name, &k)) fail_msg("'%s' did not parse", name);
    assert_string_equal(k.kind->prefix, prefix);
    assert_int_equal(k.wtype, wtype);
    assert_int_equal(k.dims[0], d0);
    assert_int_equal(k.dims[1], d1);
    assert_int_equal(k.dims[2], d2);
}

static void test_parse_names(void **state)
{
    expect_kernel("ft_gemv_q8_0_k2048", "ft_gemv_", FT_DTYPE_Q8_0, 2048, 0, 0);
    expect_kernel("ft_gemv_experts_q4_k_k768", "ft_gemv_experts_", FT_DTYPE_Q4_K, 768, 0, 0);
    expect_kernel("ft_gemm_bf16_k64", "ft_gemm_", FT_DTYPE_BF16, 64, 0, 0);
    expect_kernel("ft_gemv_q6_k_k256", "ft_gemv_", FT_DTYPE_Q6_K, 256, 0, 0);
    expect_kernel("ft_rmsnorm_d2048", "ft_rmsnorm_d", FT_DTYPE_INVALID, 2048, 0, 0);
    expect_kernel("ft_rope_neox_h128_r64", "ft_rope_neox_h", FT_DTYPE_INVALID, 128, 64, 0);
    expect_kernel("ft_rope_norm_h128_r128", "ft_rope_norm_h", FT_DTYPE_INVALID, 128, 128, 0);
    expect_kernel("ft_attn_decode_h128_q32_kv4", "ft_attn_decode_h", FT_DTYPE_INVALID, 128, 32, 4);
    /* the f16-KV forms carry the cache's element type in wtype */
    expect_kernel("ft_attn_decode_f16_h128_q32_kv4", "ft_attn_decode_f16_h", FT_DTYPE_F16, 128, 32, 4);
    expect_kernel("ft_attn_decode_pos_f16_h64_q8_kv2", "ft_attn_decode_pos_f16_h", FT_DTYPE_F16, 64, 8, 2);
    expect_kernel("ft_attn_decode_pos_h64_q8_kv2", "ft_attn_decode_pos_h", FT_DTYPE_INVALID, 64, 8, 2);
    expect_kernel("ft_kv_append", "ft_kv_append", FT_DTYPE_INVALID, 0, 0, 0);
    expect_kernel("ft_kv_append_f16", "ft_kv_append_f16", FT_DTYPE_INVALID, 0, 0, 0);
    expect_kernel("ft_router_topk_e128_k8", "ft_router_topk_e", FT_DTYPE_INVALID, 128, 8, 0);
    expect_kernel("ft_expert_copy", "ft_expert_copy", FT_DTYPE_INVALID, 0, 0, 0);
    expect_kernel("ft_rows_scatter_add", "ft_rows_scatter_add", FT_DTYPE_INVALID, 0, 0, 0);
    expect_kernel("ft_swiglu", "ft_swiglu", FT_DTYPE_INVALID, 0, 0, 0);
    static const char *const bad[] = {
        "ft_gemv_q8_0_k2049",     /* not whole 32-element chunks */
        "ft_gemv_q4_k_k2080",     /* not whole 256-element blocks */
        "ft_gemv_zz_k2048",       /* no such format */
        "ft_gemv_Q8_0_k2048",     /* names are lower case */
        "ft_gemv_q8_0_k",         /* no columns */
        "ft_gemv_q8_0_k02048",    /* leading zero */
        "ft_gemv_q8_0_k2048x",    /* trailing junk */
        "ft_gemv_q8_0_k99999999", /* too many columns */
        "ft_gemv_i32_k64",        /* a format rows cannot be expanded from */
        "ft_rmsnorm_d",           /* no D */
        "ft_rope_neox_h128_r130", /* rotary part wider than the head */
        "ft_rope_neox_h128_r63",  /* odd rotary part */
        "ft_rope_norm_h128_r130", /* as NeoX's, for adjacent pairs */
        "ft_rope_norm_h128_r63",
        "ft_rope_norm_h128", /* no rotary part */
        "ft_rope_adjacent_h128_r128",
        "ft_attn_decode_h128_q32_kv5",
        "ft_attn_decode_f16_h128_q32_kv5",
        "ft_attn_decode_f32_h128_q32_kv4", /* the f32 forms have no suffix */
        "ft_kv_append_f32",
        "ft_router_topk_e128_k33", /* more than 32 experts per token */
        "ft_router_topk_e4_k8",    /* more picked than exist */
        "ft_swiglu2",
        "ft_expert_copy_v2",
        "ft_unknown",
        "",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ft_fake_kernel_t k;
        if (ft_fake_kernel_parse(bad[i], &k)) fail_msg("'%s' parsed", bad[i]);
        assert_null(k.kind);
    }
}

/* Every kernel the emitter writes for a small model parses. */
static void test_parse_emitted(void **state)
{
    ft_cg_cuda_spec_t sp = {.d_model = 256,
                            .n_heads = 4,
                            .n_kv_heads = 2,
                            .head_dim = 64,
                            .rope_dim = 64,
                            .rope_theta = 10000.0,
                            .norm_eps = 1e-6f,
                            .n_experts = 8,
                            .n_experts_used = 2,
                            .norm_topk_prob = 1};
    /* Every format the CUDA templates compute, so a new one is covered. */
    for (int t = 1; t < FT_DTYPE_COUNT && sp.n_matmuls < FT_CG_CUDA_MAX_MATMULS; t++)
        if (ft_cg_cuda_supports((ft_dtype_t)t) &&
            256 % ft_dtype_info((ft_dtype_t)t)->block_elems == 0)
            sp.matmuls[sp.n_matmuls++] = (ft_cg_cuda_matmul_t){(ft_dtype_t)t, 256, 1};
    assert_true(sp.n_matmuls >= 7);
    ft_cg_cuda_source_t src;
    assert_null(ft_cg_cuda_emit(&sp, &src));
    assert_true(src.n_kernels > 20);
    for (uint32_t i = 0; i < src.n_kernels; i++) {
        ft_fake_kernel_t k;
        if (!ft_fake_kernel_parse(src.kernels[i].name, &k))
            fail_msg("emitted kernel '%s' does not parse", src.kernels[i].name);
    }
    /* The source carries the constants for drivers that cannot run it. */
    assert_non_null(strstr(src.text, "ft_spec v1 norm_eps=9.99999997e-07 rope_theta=10000 "
                                     "norm_topk_prob=1"));
    ft_cg_cuda_source_free(&src);
}

/* ------------------------------------------------------------------ */
/* Emulated kernels against independent arithmetic                     */
/* ------------------------------------------------------------------ */

static int run(const char *name, const ft_fake_spec_t *spec, uint32_t gx, uint32_t gy,
               uint32_t block, void **params)
{
    ft_fake_kernel_t k;
    assert_true(ft_fake_kernel_parse(name, &k));
    if (spec) k.spec = *spec;
    const ft_fake_launch_t l = {{gx, gy, 1}, {block, 1, 1}, params};
    return ft_fake_kernel_run(&k, &l);
}

/* Q8_0 rows with scale 0.5 and small integer quants times integer x:
 * every product and partial sum is exact in float32. */
static void test_gemv_q8_0_exact(void **state)
{
    enum { ROWS = 6, COLS = 64, BLOCKS = COLS / 32 };
    uint8_t w[ROWS * BLOCKS * 34];
    float x[COLS], y[ROWS];
    const uint16_t half = ft_fp32_to_fp16(0.5f);
    for (int r = 0; r < ROWS; r++)
        for (int b = 0; b < BLOCKS; b++) {
            uint8_t *blk = w + (r * BLOCKS + b) * 34;
            memcpy(blk, &half, 2);
            for (int i = 0; i < 32; i++)
                blk[2 + i] = (uint8_t)(int8_t)((r * 7 + b * 32 + i) % 11 - 5);
        }
    for (int c = 0; c < COLS; c++)
        x[c] = (float)(c % 5 - 2);
    int rows = ROWS;
    void *p[] = {&(void *){w}, &(void *){x}, &(void *){y}, &rows};
    /* Two blocks of four warps cover six rows. */
    assert_int_equal(run("ft_gemv_q8_0_k64", NULL, 2, 1, 128, p), FT_FAKE_SUCCESS);
    for (int r = 0; r < ROWS; r++) {
        long acc2 = 0; /* twice the expected value */
        for (int c = 0; c < COLS; c++)
            acc2 += (long)((r * 7 + c) % 11 - 5) * (c % 5 - 2);
        assert_true(y[r] == (float)acc2 * 0.5f);
    }
    /* A block that is not whole warps cannot run the template. */
    assert_int_equal(run("ft_gemv_q8_0_k64", NULL, 2, 1, 100, p), FT_FAKE_ERROR_INVALID_VALUE);
    /* float4 loads of x need 16-byte alignment. */
    float xs[COLS + 1];
    void *pm[] = {&(void *){w}, &(void *){xs + 1}, &(void *){y}, &rows};
    if (((uintptr_t)(xs + 1) & 15) != 0)
        assert_int_equal(run("ft_gemv_q8_0_k64", NULL, 2, 1, 128, pm),
                         FT_FAKE_ERROR_MISALIGNED_ADDRESS);
}

/* Router: logits log(1), log(2), log(4), log(1), log(4): softmax 1/12,
 * 2/12, 4/12, 1/12, 4/12; top 3 are experts 2, 4 (tie: lower index
 * first), 1 with weights 4/10, 4/10, 2/10 after normalization. */
static void test_router_closed_form(void **state)
{
    const float logits[2][5] = {{0.0f, logf(2.0f), logf(4.0f), 0.0f, logf(4.0f)},
                                {5.0f, 5.0f, 5.0f, 5.0f, 5.0f}};
    int ids[6];
    float w[6];
    int n_tok = 2;
    void *p[] = {&(void *){(void *)logits}, &n_tok, &(void *){ids}, &(void *){w}};
    ft_fake_spec_t spec = {1, 1e-6f, 10000.0, 1};
    assert_int_equal(run("ft_router_topk_e5_k3", &spec, 1, 1, 64, p), FT_FAKE_SUCCESS);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 4);
    assert_int_equal(ids[2], 1);
    assert_float_equal(w[0], 0.4f, 1e-6f);
    assert_float_equal(w[1], 0.4f, 1e-6f);
    assert_float_equal(w[2], 0.2f, 1e-6f);
    /* All equal: experts 0, 1, 2, a third each. */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(ids[3 + i], i);
        assert_float_equal(w[3 + i], 1.0f / 3.0f, 1e-6f);
    }
    /* Without norm_topk_prob the weights stay probabilities. */
    spec.norm_topk_prob = 0;
    assert_int_equal(run("ft_router_topk_e5_k3", &spec, 1, 1, 64, p), FT_FAKE_SUCCESS);
    assert_float_equal(w[0], 4.0f / 12.0f, 1e-6f);
    assert_float_equal(w[2], 2.0f / 12.0f, 1e-6f);
    /* A module without ft_spec cannot run kernels that need it. */
    spec.present = 0;
    assert_int_equal(run("ft_router_topk_e5_k3", &spec, 1, 1, 64, p), FT_FAKE_ERROR_NOT_SUPPORTED);
}

/* RMSNorm of a row of 3s with eps 0 is w; RoPE (NeoX and adjacent pairs)
 * at position 0 is the identity and at theta^0 (pair 0) rotates by pos
 * radians. */
static void test_norm_rope(void **state)
{
    enum { D = 96 };
    float x[D], wt[D], y[D];
    for (int i = 0; i < D; i++)
        x[i] = 3.0f, wt[i] = (float)i - 40.0f;
    int n = 1;
    void *p[] = {&(void *){x}, &(void *){wt}, &(void *){y}, &n};
    const ft_fake_spec_t spec = {1, 0.0f, 10000.0, 1};
    assert_int_equal(run("ft_rmsnorm_d96", &spec, 1, 1, 64, p), FT_FAKE_SUCCESS);
    for (int i = 0; i < D; i++)
        assert_float_equal(y[i], wt[i], 1e-4f);
    float h[2][8] = {{1, 2, 3, 4, 5, 6, 7, 8}, {1, 0, 0, 0, 0, 0, 0, 0}};
    const int pos[2] = {0, 1};
    int heads = 1, tok = 2;
    void *pr[] = {&(void *){h}, &heads, &(void *){(void *)pos}, &tok};
    assert_int_equal(run("ft_rope_neox_h8_r8", &spec, 2, 1, 4, pr), FT_FAKE_SUCCESS);
    for (int i = 0; i < 8; i++)
        assert_float_equal(h[0][i], (float)(i + 1), 0.0f);
    assert_float_equal(h[1][0], cosf(1.0f), 1e-6f); /* pair (0, 4) turned by 1 rad */
    assert_float_equal(h[1][4], sinf(1.0f), 1e-6f);
    /* Adjacent pairs, 4 of 8 dims rotating: pair (0, 1) turns by pos rad,
     * pair (2, 3) by pos / theta^(1/2) = pos / 100 rad, dims 4..7 stay. */
    float a[2][8] = {{1, 2, 3, 4, 5, 6, 7, 8}, {1, 0, 0, 1, 5, 6, 7, 8}};
    const int pos2[2] = {0, 3};
    void *pa[] = {&(void *){a}, &heads, &(void *){(void *)pos2}, &tok};
    assert_int_equal(run("ft_rope_norm_h8_r4", &spec, 2, 1, 2, pa), FT_FAKE_SUCCESS);
    for (int i = 0; i < 8; i++)
        assert_float_equal(a[0][i], (float)(i + 1), 0.0f);
    assert_float_equal(a[1][0], cosf(3.0f), 1e-6f);
    assert_float_equal(a[1][1], sinf(3.0f), 1e-6f);
    assert_float_equal(a[1][2], -sinf(0.03f), 1e-6f); /* (0, 1) turned by 0.03 rad */
    assert_float_equal(a[1][3], cosf(0.03f), 1e-6f);
    for (int i = 4; i < 8; i++)
        assert_float_equal(a[1][i], (float)(i + 1), 0.0f);
}

/* ------------------------------------------------------------------ */
/* Images                                                              */
/* ------------------------------------------------------------------ */

/* PTX with the spec as NVRTC writes it (a byte list), and one kernel. */
static char *ptx_with_spec(const char *spec_text)
{
    char *ptx = malloc(4096);
    assert_non_null(ptx);
    int n = snprintf(ptx, 4096,
                     ".version 9.0\n.target sm_80\n.address_size 64\n"
                     ".global .align 1 .b8 ft_spec[%zu] = {",
                     strlen(spec_text) + 1);
    for (size_t i = 0; spec_text[i]; i++)
        n += snprintf(ptx + n, 4096 - (size_t)n, "%s%d", i ? ", " : "", spec_text[i]);
    snprintf(ptx + n, 4096 - (size_t)n,
             "};\n\n.visible .entry ft_swiglu(\n\t.param .u64 .ptr .global .align 4 p0,\n"
             "\t.param .u64 p1,\n\t.param .u64 p2,\n\t.param .u32 p3\n)\n{\n\tret;\n}\n");
    return ptx;
}

static void test_image_spec(void **state)
{
    char *ptx = ptx_with_spec("ft_spec v1 norm_eps=1e-05 rope_theta=500000 norm_topk_prob=0");
    const size_t n = ft_fake_image_size(ptx);
    assert_int_equal(n, strlen(ptx) + 1);
    ft_fake_spec_t spec;
    ft_fake_image_spec((const uint8_t *)ptx, n, &spec);
    assert_int_equal(spec.present, 1);
    assert_float_equal(spec.norm_eps, 1e-5f, 0.0f);
    assert_true(spec.rope_theta == 500000.0);
    assert_int_equal(spec.norm_topk_prob, 0);
    assert_true(ft_fake_image_has_kernel((const uint8_t *)ptx, n, "ft_swiglu"));
    assert_false(ft_fake_image_has_kernel((const uint8_t *)ptx, n, "ft_swig"));
    assert_false(ft_fake_image_has_kernel((const uint8_t *)ptx, n, "ft_rows_gather"));
    free(ptx);
    ptx = ptx_with_spec("ft_spec v1 norm_eps=oops");
    ft_fake_image_spec((const uint8_t *)ptx, ft_fake_image_size(ptx), &spec);
    assert_int_equal(spec.present, 0);
    free(ptx);
    /* Neither ELF nor PTX; an ELF whose section table runs past 1 GiB. */
    assert_int_equal(ft_fake_image_size("hello"), 0);
    uint8_t elf[64] = {0x7f, 'E', 'L', 'F', 2, 1};
    const uint64_t far = (uint64_t)1 << 40;
    memcpy(elf + 0x28, &far, 8);
    elf[0x3a] = 64, elf[0x3c] = 1;
    assert_int_equal(ft_fake_image_size(elf), 0);
}

/* PTX with one entry, ft_swiglu, whose parameter list is `params`. */
static char *ptx_entry(const char *params)
{
    char *ptx = malloc(4096);
    assert_non_null(ptx);
    snprintf(ptx, 4096,
             ".version 9.0\n.target sm_80\n.address_size 64\n\n"
             ".visible .entry ft_swiglu(%s)\n{\n\tret;\n}\n",
             params);
    return ptx;
}

/* Parameter lists as NVRTC writes them (scalars, .ptr, .align'd byte
 * arrays) are read with their sizes; malformed ones are refused. */
static void test_image_params(void **state)
{
    char *ptx = ptx_entry("\n\t.param .u64 .ptr .global .align 4 a,\n\t.param .f32 b,\n"
                          "\t.param .align 4 .b8 c[12],\n\t.param .u16 d,\n\t.param .s32 e\n");
    uint32_t sizes[8], n = 99;
    const size_t n_bytes = strlen(ptx) + 1;
    assert_int_equal(ft_fake_image_params((const uint8_t *)ptx, n_bytes, "ft_swiglu", sizes, 8, &n),
                     1);
    assert_int_equal(n, 5);
    static const uint32_t want[] = {8, 4, 12, 2, 4};
    assert_memory_equal(sizes, want, sizeof(want));
    assert_int_equal(ft_fake_image_params((const uint8_t *)ptx, n_bytes, "ft_swig", sizes, 8, &n),
                     0);
    assert_int_equal(ft_fake_image_params((const uint8_t *)ptx, n_bytes, "ft_swiglu", sizes, 4, &n),
                     -1); /* longer than the caller's array */
    free(ptx);
    ptx = ptx_entry("");
    assert_int_equal(
        ft_fake_image_params((const uint8_t *)ptx, strlen(ptx) + 1, "ft_swiglu", sizes, 8, &n), 1);
    assert_int_equal(n, 0);
    free(ptx);
    static const char *const bad[] = {
        ".param a",                      /* no type */
        ".param .u64 a .param .u64 b",   /* no comma */
        ".param .u64 .u32 a",            /* two types */
        ".param .u64",                   /* no name */
        ".param .align 3 .b8 a[4]",      /* alignment not a power of two */
        ".param .b8 a[]",                /* no count */
        ".param .b8 a[99999]",           /* too large */
        ".param .u64 a,",                /* trailing comma */
        ".reg .u64 a",                   /* not a parameter */
        ".param .u64 a, .param .u32 b[", /* text ends inside the list */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ptx = ptx_entry(bad[i]);
        if (ft_fake_image_params((const uint8_t *)ptx, strlen(ptx) + 1, "ft_swiglu", sizes, 8,
                                 &n) != -1)
            fail_msg("'%s' was accepted", bad[i]);
        free(ptx);
    }
    /* Truncated before the closing parenthesis: the NUL ends the list. */
    ptx = ptx_entry(".param .u64 a");
    *strchr(ptx, ')') = 0;
    assert_int_equal(
        ft_fake_image_params((const uint8_t *)ptx, strlen(ptx) + 1, "ft_swiglu", sizes, 8, &n), -1);
    free(ptx);
}

/* Every kernel of an NVRTC image declares the parameter list its
 * emulation decodes (so a launch that passes the emulation's layout
 * passes the real driver's); a corrupted .nv.info is refused. */
static void check_image_params(const ft_cg_cuda_source_t *src, const ft_cg_cuda_image_t *im)
{
    for (uint32_t i = 0; i < src->n_kernels; i++) {
        const char *name = src->kernels[i].name;
        ft_fake_kernel_t k;
        uint32_t sizes[32], n = 0;
        assert_true(ft_fake_kernel_parse(name, &k));
        if (ft_fake_image_params(im->data, im->n_bytes, name, sizes, 32, &n) != 1)
            fail_msg("%s: no parameter list in the image", name);
        if (n != k.kind->n_args)
            fail_msg("%s: %u parameters, emulated %u", name, n, k.kind->n_args);
        for (uint32_t j = 0; j < n; j++)
            if (sizes[j] != k.kind->arg_bytes[j])
                fail_msg("%s: parameter %u is %u bytes, emulated %u", name, j, sizes[j],
                         k.kind->arg_bytes[j]);
    }
    if (im->is_ptx) return;
    /* KPARAM_INFO records: {4, 0x17, u16 12, u32 index, u16 ordinal, ...}. */
    static const uint8_t rec[] = {4, 0x17, 12, 0};
    uint8_t *copy = malloc(im->n_bytes);
    assert_non_null(copy);
    uint32_t sizes[32], n;
    for (int how = 0; how < 2; how++) {
        memcpy(copy, im->data, im->n_bytes);
        for (uint8_t *p = copy; (p = memmem(p, (size_t)(copy + im->n_bytes - p), rec, 4)); p += 4)
            if (copy + im->n_bytes - p < 16)
                break; /* not a whole record */
            else if (how == 0)
                p[8] = p[9] = 0; /* every ordinal 0: duplicates */
            else
                p[2] = p[3] = 0xff; /* a record longer than its section */
        assert_int_equal(ft_fake_image_params(copy, im->n_bytes, "ft_gemv_q8_0_k64", sizes, 32, &n),
                         -1);
    }
    free(copy);
}

/* A cubin from NVRTC: its size, spec, kernel names and parameter lists
 * are found. */
static void test_image_cubin(void **state)
{
    if (!ft_cg_cuda_nvrtc_available()) FT_CUDA_TEST_SKIP("the CUDA codegen has no NVRTC");
    ft_cg_cuda_spec_t sp = {.d_model = 64,
                            .n_heads = 2,
                            .n_kv_heads = 1,
                            .head_dim = 32,
                            .rope_dim = 32,
                            .rope_theta = 1e6,
                            .norm_eps = 1e-6f,
                            .n_experts = 4,
                            .n_experts_used = 2};
    sp.matmuls[sp.n_matmuls++] = (ft_cg_cuda_matmul_t){FT_DTYPE_Q8_0, 64, 0};
    ft_cg_cuda_source_t src;
    ft_cg_cuda_images_t img;
    assert_null(ft_cg_cuda_emit(&sp, &src));
    const uint32_t sm = 90;
    assert_null(ft_cg_cuda_compile(&src, &sm, 1, &img));
    for (uint32_t i = 0; i < img.n_images; i++) {
        const ft_cg_cuda_image_t *im = &img.images[i];
        assert_int_equal(ft_fake_image_size(im->data), im->n_bytes);
        ft_fake_spec_t spec;
        ft_fake_image_spec(im->data, im->n_bytes, &spec);
        assert_int_equal(spec.present, 1);
        assert_true(spec.rope_theta == 1e6 && spec.norm_eps == 1e-6f && !spec.norm_topk_prob);
        assert_true(ft_fake_image_has_kernel(im->data, im->n_bytes, "ft_gemv_q8_0_k64"));
        assert_false(ft_fake_image_has_kernel(im->data, im->n_bytes, "ft_gemv_q8_0_k128"));
        check_image_params(&src, im);
    }
    ft_cg_cuda_images_free(&img);
    ft_cg_cuda_source_free(&src);
}

/* ------------------------------------------------------------------ */
/* runtime/backends/cuda through the fake driver                       */
/* ------------------------------------------------------------------ */

#define VRAM ((size_t)64 << 20)

static ft_cuda_device_t *open_fake(void)
{
    /* The environment route, as ctest and tests/gpu/run.sh use it. */
    setenv("FT_CUDA_LIB", FT_CUDA_FAKE_LIB, 1);
    setenv("FT_CUDA_FAKE_VRAM", "67108864", 1);
    ft_cuda_device_t *d = NULL;
    ft_status_t st = ft_cuda_device_create(NULL, &d);
    if (st) fail_msg("fake device: %s", ft_status_message(st));
    return d;
}

static void test_device_memory(void **state)
{
    ft_cuda_device_t *d = open_fake();
    const ft_cuda_device_info_t *in = ft_cuda_device_info(d);
    assert_string_equal(in->name, "FT fake device");
    assert_int_equal(in->cc_major, 9);
    assert_int_equal(in->cc_minor, 0);
    assert_int_equal(in->total_bytes, VRAM);
    assert_int_equal(in->read_only_register, 1);
    size_t free0, total;
    assert_null(ft_cuda_mem_info(d, &free0, &total));
    assert_int_equal(total, VRAM);
    ft_cu_deviceptr a = 0, b = 0;
    assert_null(ft_cuda_alloc(d, 1 << 20, &a));
    assert_true(a && a % 256 == 0);
    size_t free1;
    assert_null(ft_cuda_mem_info(d, &free1, &total));
    assert_int_equal(free0 - free1, 1 << 20);
    /* More than is free fails with the driver's out-of-memory error. */
    ft_status_t st = ft_cuda_alloc(d, VRAM, &b);
    assert_non_null(st);
    assert_non_null(strstr(ft_status_message(st), "CUDA error 2 (out of memory)"));
    ft_status_free(st);
    /* Another program taking memory shows in the free figure. */
    void *lib = dlopen(FT_CUDA_FAKE_LIB, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(lib);
    void (*set_foreign)(size_t) =
        (void (*)(size_t))(uintptr_t)dlsym(lib, "ft_cuda_fake_set_foreign_bytes");
    assert_non_null(set_foreign);
    set_foreign((size_t)16 << 20);
    size_t free2;
    assert_null(ft_cuda_mem_info(d, &free2, &total));
    assert_int_equal(free1 - free2, (size_t)16 << 20);
    set_foreign(0);
    dlclose(lib);
    /* Round trip, memset, device-to-device. */
    uint8_t host[4096], back[4096];
    for (int i = 0; i < 4096; i++)
        host[i] = (uint8_t)(i * 31 + 7);
    ft_cu_stream s;
    assert_null(ft_cuda_stream_create(d, &s));
    assert_null(ft_cuda_copy_h2d(d, a, host, sizeof(host), s));
    assert_null(ft_cuda_memset(d, a + 100, 0xab, 50, s));
    assert_null(ft_cuda_copy_d2d(d, a + 8192, a, 4096, s));
    assert_null(ft_cuda_copy_d2h(d, back, a + 8192, sizeof(back), s));
    assert_null(ft_cuda_stream_sync(d, s));
    for (int i = 0; i < 4096; i++)
        assert_int_equal(back[i], i >= 100 && i < 150 ? 0xab : host[i]);
    /* A copy past the end of the allocation is refused. */
    st = ft_cuda_copy_h2d(d, a + (1 << 20) - 16, host, 32, s);
    assert_non_null(st);
    assert_non_null(strstr(ft_status_message(st), "CUDA error 1"));
    ft_status_free(st);
    /* A registered range maps to its own address; twice is an error. */
    uint8_t *pinned = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(pinned != MAP_FAILED);
    ft_cu_deviceptr mapped = 0;
    assert_null(ft_cuda_host_register(d, pinned, 8192, 1, &mapped));
    assert_true(mapped == (ft_cu_deviceptr)(uintptr_t)pinned);
    st = ft_cuda_host_register(d, pinned + 4096, 4096, 0, NULL);
    assert_non_null(st);
    assert_non_null(strstr(ft_status_message(st), "CUDA error 712"));
    ft_status_free(st);
    ft_cuda_host_unregister(d, pinned);
    munmap(pinned, 8192);
    ft_cuda_stream_destroy(d, s);
    ft_cuda_free(d, a);
    assert_null(ft_cuda_mem_info(d, &free1, &total));
    assert_int_equal(free1, free0);
    ft_cuda_device_destroy(d);
}

/* Module load, kernel lookup, a launch, events. */
static void test_module_launch(void **state)
{
    ft_cuda_device_t *d = open_fake();
    char *ptx = ptx_with_spec("ft_spec v1 norm_eps=1e-06 rope_theta=10000 norm_topk_prob=1");
    const ft_cuda_image_t image = {80, 1, ptx, strlen(ptx) + 1};
    ft_cuda_module_t *m = NULL;
    assert_null(ft_cuda_module_load(d, &image, 1, &m));
    free(ptx); /* the driver keeps its own copy */
    ft_cu_function fn = NULL;
    ft_status_t st = ft_cuda_module_function(m, "ft_rows_gather", &fn);
    assert_int_equal(ft_status_code(st), FT_STATUS_FORMAT); /* not in this image */
    ft_status_free(st);
    st = ft_cuda_module_function(m, "ft_bogus", &fn);
    assert_int_equal(ft_status_code(st), FT_STATUS_FORMAT);
    ft_status_free(st);
    assert_null(ft_cuda_module_function(m, "ft_swiglu", &fn));
    enum { N = 1000 };
    float g[N], u[N], h[N];
    for (int i = 0; i < N; i++)
        g[i] = (float)(i - 500) / 100.0f, u[i] = (float)(i % 7);
    ft_cu_stream s;
    ft_cu_deviceptr dg, du, dh;
    assert_null(ft_cuda_stream_create(d, &s));
    assert_null(ft_cuda_alloc(d, sizeof(g), &dg));
    assert_null(ft_cuda_alloc(d, sizeof(u), &du));
    assert_null(ft_cuda_alloc(d, sizeof(h), &dh));
    assert_null(ft_cuda_copy_h2d(d, dg, g, sizeof(g), s));
    assert_null(ft_cuda_copy_h2d(d, du, u, sizeof(u), s));
    ft_cu_event e0, e1;
    assert_null(ft_cuda_event_create(d, 1, &e0));
    assert_null(ft_cuda_event_create(d, 1, &e1));
    assert_null(ft_cuda_event_record(d, e0, s));
    int n = N;
    void *p[] = {&dg, &du, &dh, &n};
    const ft_cuda_launch_t geom = {{4, 1, 1}, {256, 1, 1}, 0};
    assert_null(ft_cuda_launch_kernel(d, fn, &geom, s, p));
    assert_null(ft_cuda_event_record(d, e1, s));
    assert_null(ft_cuda_stream_wait(d, s, e1));
    assert_null(ft_cuda_event_sync(d, e1));
    float ms = -1.0f;
    assert_null(ft_cuda_event_elapsed_ms(d, e0, e1, &ms));
    assert_true(ms >= 0.0f);
    assert_null(ft_cuda_copy_d2h(d, h, dh, sizeof(h), s));
    assert_null(ft_cuda_stream_sync(d, s));
    for (int i = 0; i < N; i++) /* silu(g) * u, by the definition */
        assert_float_equal(h[i], (float)(g[i] / (1.0 + exp(-(double)g[i])) * u[i]), 1e-5f);
    ft_cuda_event_destroy(d, e0);
    ft_cuda_event_destroy(d, e1);
    ft_cuda_free(d, dg), ft_cuda_free(d, du), ft_cuda_free(d, dh);
    ft_cuda_stream_destroy(d, s);
    ft_cuda_module_unload(m);
    ft_cuda_device_destroy(d);
}

/* Graph capture: work queued while capturing runs only when the graph
 * is launched, and every launch replays it. */
typedef int (*cu_capture_fn)(void *stream, int mode);
typedef int (*cu_end_fn)(void *stream, void **graph);
typedef int (*cu_inst_fn)(void **exec, void *graph, unsigned long long flags);
typedef int (*cu_launch_fn)(void *exec, void *stream);
typedef int (*cu_destroy_fn)(void *g);

static void *sym(void *lib, const char *name)
{
    void *f = dlsym(lib, name);
    if (!f) fail_msg("fake driver lacks %s", name);
    return f;
}

typedef int (*cu_launch_kernel_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                   unsigned by, unsigned bz, unsigned shared_bytes, void *stream,
                                   void **params, void **extra);

/* One launch of ft_swiglu(g, u, h, n) on 4 floats from a module whose PTX
 * declares `params`, with the arguments as pointers (extra NULL) or
 * packed in a buffer of buffer_bytes; the CUresult. */
static int launch_swiglu(ft_cuda_device_t *d, cu_launch_kernel_fn launch, const char *params,
                         int packed, size_t buffer_bytes)
{
    char *ptx = ptx_entry(params);
    const ft_cuda_image_t image = {80, 1, ptx, strlen(ptx) + 1};
    ft_cuda_module_t *m = NULL;
    assert_null(ft_cuda_module_load(d, &image, 1, &m));
    free(ptx);
    ft_cu_function fn = NULL;
    assert_null(ft_cuda_module_function(m, "ft_swiglu", &fn));
    ft_cu_deviceptr buf;
    assert_null(ft_cuda_alloc(d, 48, &buf));
    assert_null(ft_cuda_memset(d, buf, 0, 48, NULL));
    ft_cu_deviceptr g = buf, u = buf + 16, h = buf + 32;
    uint32_t n = 4;
    void *p[] = {&g, &u, &h, &n};
    uint8_t args[32];
    size_t size = buffer_bytes;
    memcpy(args, &g, 8), memcpy(args + 8, &u, 8), memcpy(args + 16, &h, 8),
        memcpy(args + 24, &n, 4);
    void *extra[] = {(void *)1, args, (void *)2, &size, (void *)0};
    const int rc = launch(fn, 1, 1, 1, 32, 1, 1, 0, NULL, packed ? NULL : p, packed ? extra : NULL);
    assert_null(ft_cuda_stream_sync(d, NULL));
    ft_cuda_free(d, buf);
    ft_cuda_module_unload(m);
    return rc;
}

/* The fake refuses a launch whose kernel's parameter list (from the PTX)
 * is not the layout the emulation decodes, and a packed argument buffer
 * whose size is not the list's, as the real driver lays arguments out by
 * that list: an argument-layout mistake fails here, not on a GPU. */
static void test_launch_layout(void **state)
{
    ft_cuda_device_t *d = open_fake();
    void *lib = dlopen(FT_CUDA_FAKE_LIB, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(lib);
    cu_launch_kernel_fn launch;
    *(void **)&launch = sym(lib, "cuLaunchKernel");
    const char *right = ".param .u64 g, .param .u64 u, .param .u64 h, .param .u32 n";
    assert_int_equal(launch_swiglu(d, launch, right, 0, 0), 0);
    assert_int_equal(launch_swiglu(d, launch, right, 1, 28), 0);
    /* One parameter short, one too many, n as 8 bytes, g as 4. */
    assert_int_equal(launch_swiglu(d, launch, ".param .u64 g, .param .u64 u, .param .u64 h", 0, 0),
                     1);
    assert_int_equal(launch_swiglu(d, launch,
                                   ".param .u64 g, .param .u64 u, .param .u64 h, .param .u32 n, "
                                   ".param .u32 extra",
                                   0, 0),
                     1);
    assert_int_equal(launch_swiglu(d, launch,
                                   ".param .u64 g, .param .u64 u, .param .u64 h, .param .u64 n", 0,
                                   0),
                     1);
    assert_int_equal(launch_swiglu(d, launch,
                                   ".param .u32 g, .param .u64 u, .param .u64 h, .param .u32 n", 0,
                                   0),
                     1);
    /* Packed: the buffer lacks n, or has a parameter too many. */
    assert_int_equal(launch_swiglu(d, launch, right, 1, 24), 1);
    assert_int_equal(launch_swiglu(d, launch, right, 1, 32), 1);
    /* The runtime's launcher reports the refusal as a status. */
    char *ptx = ptx_entry(".param .u64 g, .param .u64 u, .param .u64 h");
    const ft_cuda_image_t image = {80, 1, ptx, strlen(ptx) + 1};
    ft_cuda_module_t *m = NULL;
    assert_null(ft_cuda_module_load(d, &image, 1, &m));
    free(ptx);
    ft_cu_function fn = NULL;
    assert_null(ft_cuda_module_function(m, "ft_swiglu", &fn));
    ft_cu_deviceptr x = 0;
    uint32_t n = 0;
    void *p[] = {&x, &x, &x, &n};
    const ft_cuda_launch_t geom = {{1, 1, 1}, {32, 1, 1}, 0};
    ft_status_t st = ft_cuda_launch_kernel(d, fn, &geom, NULL, p);
    assert_non_null(st);
    ft_status_free(st);
    ft_cuda_module_unload(m);
    dlclose(lib);
    ft_cuda_device_destroy(d);
}

static void test_graph_capture(void **state)
{
    ft_cuda_device_t *d = open_fake();
    void *lib = dlopen(FT_CUDA_FAKE_LIB, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(lib);
    cu_capture_fn begin;
    cu_end_fn end;
    cu_inst_fn inst;
    cu_launch_fn launch;
    cu_destroy_fn destroy, exec_destroy;
    *(void **)&begin = sym(lib, "cuStreamBeginCapture_v2");
    *(void **)&end = sym(lib, "cuStreamEndCapture");
    *(void **)&inst = sym(lib, "cuGraphInstantiateWithFlags");
    *(void **)&launch = sym(lib, "cuGraphLaunch");
    *(void **)&destroy = sym(lib, "cuGraphDestroy");
    *(void **)&exec_destroy = sym(lib, "cuGraphExecDestroy");
    ft_cu_stream s;
    ft_cu_deviceptr buf;
    assert_null(ft_cuda_stream_create(d, &s));
    assert_null(ft_cuda_alloc(d, 64, &buf));
    assert_null(ft_cuda_memset(d, buf, 0, 64, s));
    uint8_t add[64], back[64];
    memset(add, 5, sizeof(add));
    assert_int_equal(begin(s, 0), 0);
    assert_null(ft_cuda_memset(d, buf, 9, 32, s));
    assert_null(ft_cuda_copy_h2d(d, buf + 32, add, 32, s));
    void *graph = NULL, *exec = NULL;
    assert_int_equal(end(s, &graph), 0);
    assert_non_null(graph);
    assert_null(ft_cuda_copy_d2h(d, back, buf, 64, s));
    for (int i = 0; i < 64; i++)
        assert_int_equal(back[i], 0); /* captured, not run */
    assert_int_equal(inst(&exec, graph, 0), 0);
    assert_int_equal(destroy(graph), 0);
    assert_int_equal(launch(exec, s), 0);
    assert_null(ft_cuda_copy_d2h(d, back, buf, 64, s));
    for (int i = 0; i < 64; i++)
        assert_int_equal(back[i], i < 32 ? 9 : 5);
    /* Synchronizing a capturing stream breaks the capture. */
    assert_int_equal(begin(s, 0), 0);
    ft_status_t st = ft_cuda_stream_sync(d, s);
    assert_non_null(st);
    ft_status_free(st);
    assert_int_equal(end(s, &graph), 901);
    assert_int_equal(exec_destroy(exec), 0);
    ft_cuda_free(d, buf);
    ft_cuda_stream_destroy(d, s);
    dlclose(lib);
    ft_cuda_device_destroy(d);
}

/* FT_CUDA_FAKE_DEFER=1: stream work waits for a sync point, a wait on
 * an event orders two streams, pageable sources are read when queued and
 * pageable destinations written in the call. */
static void test_deferred(void **state)
{
    setenv("FT_CUDA_FAKE_DEFER", "1", 1);
    ft_cuda_device_t *d = open_fake(); /* cuInit reads the mode again */
    uint8_t *pin = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(pin != MAP_FAILED);
    assert_null(ft_cuda_host_register(d, pin, 8192, 0, NULL));
    ft_cu_stream a, b;
    ft_cu_event e;
    ft_cu_deviceptr buf;
    assert_null(ft_cuda_stream_create(d, &a));
    assert_null(ft_cuda_stream_create(d, &b));
    assert_null(ft_cuda_event_create(d, 0, &e));
    assert_null(ft_cuda_alloc(d, 4096, &buf));
    memset(pin, 1, 4096);
    assert_null(ft_cuda_copy_h2d(d, buf, pin, 4096, a));
    memset(pin, 2, 4096); /* pinned: the queued copy reads it later */
    assert_null(ft_cuda_event_record(d, e, a));
    assert_null(ft_cuda_stream_wait(d, b, e));
    assert_null(ft_cuda_copy_d2h(d, pin + 4096, buf, 4096, b));
    assert_int_equal(pin[4096], 0);         /* nothing ran yet */
    assert_null(ft_cuda_stream_sync(d, b)); /* runs a up to e, then b */
    for (int i = 0; i < 4096; i++)
        assert_int_equal(pin[4096 + i], 2);
    uint8_t pageable[64], out[64];
    memset(pageable, 3, sizeof(pageable));
    assert_null(ft_cuda_copy_h2d(d, buf, pageable, sizeof(pageable), a));
    memset(pageable, 4, sizeof(pageable));                      /* read when queued: the 3s count */
    assert_null(ft_cuda_copy_d2h(d, out, buf, sizeof(out), a)); /* done in the call */
    for (int i = 0; i < 64; i++)
        assert_int_equal(out[i], 3);
    ft_cuda_event_destroy(d, e);
    ft_cuda_free(d, buf);
    ft_cuda_stream_destroy(d, a);
    ft_cuda_stream_destroy(d, b);
    ft_cuda_host_unregister(d, pin);
    munmap(pin, 8192);
    ft_cuda_device_destroy(d);
    unsetenv("FT_CUDA_FAKE_DEFER");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_names),     cmocka_unit_test(test_parse_emitted),
        cmocka_unit_test(test_gemv_q8_0_exact), cmocka_unit_test(test_router_closed_form),
        cmocka_unit_test(test_norm_rope),       cmocka_unit_test(test_image_spec),
        cmocka_unit_test(test_image_params),    cmocka_unit_test(test_image_cubin),
        cmocka_unit_test(test_device_memory),   cmocka_unit_test(test_module_launch),
        cmocka_unit_test(test_launch_layout),   cmocka_unit_test(test_graph_capture),
        cmocka_unit_test(test_deferred),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
