/* The plan's kernel modules (plan_validate_kernels.c): a consistent CPU
 * module and CUDA images validate; each malformed field is refused with
 * the field named in the message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ft_kernel_abi.h"
#include "../../runtime/format/plan_validate.h"
#include "plan_fixture.h"

#include <string.h>

typedef struct fx_kern {
    ft_plan_fixture_t fx;
    uint8_t so[16], cubin[2][8];
    Ftplan__CpuModule cm;
    Ftplan__CpuKernel k[2], *kp[2];
    Ftplan__CudaImage im[2], *imp[2];
    Ftplan__CudaPtx ptx, *ptxp[1];
} fx_kern_t;

static void fx_kern_init(fx_kern_t *x)
{
    memset(x, 0, sizeof(*x));
    ft_plan_fixture_init(&x->fx, 0);
    memcpy(x->so, "\177ELF", 4);
    x->cm = (Ftplan__CpuModule)FTPLAN__CPU_MODULE__INIT;
    x->cm.isa = "avx2";
    x->cm.abi_version = FT_KABI_VERSION;
    x->cm.so.data = x->so;
    x->cm.so.len = sizeof(x->so);
    for (int i = 0; i < 2; i++) {
        x->k[i] = (Ftplan__CpuKernel)FTPLAN__CPU_KERNEL__INIT;
        x->k[i].op = i ? FT_KABI_OP_EXPERT : FT_KABI_OP_MATMUL;
        x->k[i].format = FTPLAN__WEIGHT_FORMAT__WF_Q8_0;
        x->k[i].format_aux = i ? FTPLAN__WEIGHT_FORMAT__WF_Q4_K : FTPLAN__WEIGHT_FORMAT__WF_INVALID;
        x->k[i].rows = 256;
        x->k[i].cols = 512;
        x->kp[i] = &x->k[i];
        memcpy(x->cubin[i], "\177ELF", 4);
        x->im[i] = (Ftplan__CudaImage)FTPLAN__CUDA_IMAGE__INIT;
        x->im[i].arch = i ? "sm_120" : "sm_80";
        x->im[i].cubin.data = x->cubin[i];
        x->im[i].cubin.len = sizeof(x->cubin[i]);
        x->imp[i] = &x->im[i];
    }
    x->cm.n_kernels = 2;
    x->cm.kernels = x->kp;
    x->ptx = (Ftplan__CudaPtx)FTPLAN__CUDA_PTX__INIT;
    x->ptx.arch = "compute_80";
    x->ptx.text = ".version 8.0\n";
    x->ptxp[0] = &x->ptx;
    Ftplan__Plan *p = &x->fx.plan;
    p->cpu_module = &x->cm;
    p->n_cuda_images = 2;
    p->cuda_images = x->imp;
    p->n_cuda_ptx = 1;
    p->cuda_ptx = x->ptxp;
}

static void expect_refused(const fx_kern_t *x, ft_status_code_t code, const char *field)
{
    ft_status_t st = ft_plan_validate(&x->fx.plan, "p.ftp");
    assert_non_null(st);
    if (!strstr(ft_status_message(st), field))
        fail_msg("message lacks '%s': %s", field, ft_status_message(st));
    assert_int_equal(ft_status_code(st), code);
    ft_status_free(st);
}

static void test_valid(void **state)
{
    (void)state;
    fx_kern_t x;
    fx_kern_init(&x);
    assert_null(ft_plan_validate(&x.fx.plan, "p.ftp"));
    x.fx.plan.cpu_module = NULL; /* both are optional */
    x.fx.plan.n_cuda_images = x.fx.plan.n_cuda_ptx = 0;
    assert_null(ft_plan_validate(&x.fx.plan, "p.ftp"));
}

static void test_cpu_module_refused(void **state)
{
    (void)state;
    fx_kern_t x;
    fx_kern_init(&x);
    x.cm.isa = "sse9";
    expect_refused(&x, FT_STATUS_FORMAT, "cpu_module.isa");
    fx_kern_init(&x);
    x.cm.abi_version = FT_KABI_VERSION + 1;
    expect_refused(&x, FT_STATUS_MISMATCH, "cpu_module.abi_version");
    fx_kern_init(&x);
    x.so[0] = 'X';
    expect_refused(&x, FT_STATUS_FORMAT, "cpu_module.so");
    fx_kern_init(&x);
    x.cm.so.len = 3;
    expect_refused(&x, FT_STATUS_FORMAT, "cpu_module.so");
    fx_kern_init(&x);
    x.k[0].op = FT_KABI_OP_MLA + 1;
    expect_refused(&x, FT_STATUS_FORMAT, "cpu_module.kernels[0].op");
    fx_kern_init(&x);
    x.k[1].format_aux = FTPLAN__WEIGHT_FORMAT__WF_INVALID;
    expect_refused(&x, FT_STATUS_FORMAT, "cpu_module.kernels[1].format_aux");
    fx_kern_init(&x);
    x.k[0].format_aux = FTPLAN__WEIGHT_FORMAT__WF_Q8_0;
    expect_refused(&x, FT_STATUS_FORMAT, "cpu_module.kernels[0].format_aux");
    fx_kern_init(&x);
    x.k[1].format = (Ftplan__WeightFormat)999;
    expect_refused(&x, FT_STATUS_FORMAT, "cpu_module.kernels[1].format");
    fx_kern_init(&x);
    x.k[0].rows = 0;
    expect_refused(&x, FT_STATUS_OUT_OF_RANGE, "cpu_module.kernels[0]");
    fx_kern_init(&x);
    x.cm.n_kernels = FT_PLAN_MAX_CPU_KERNELS + 1;
    expect_refused(&x, FT_STATUS_OUT_OF_RANGE, "cpu_module.kernels");
    fx_kern_init(&x);
    x.k[0].key_heads = 2; /* only a DELTANET key has key heads */
    expect_refused(&x, FT_STATUS_FORMAT, "cpu_module.kernels[0].key_heads");
}

/* ABI 4's DeltaNet key: F32, value heads (rows) whole groups of the key
 * heads (key_heads, bit 31 the tiling). */
static void set_deltanet(fx_kern_t *x, Ftplan__WeightFormat f, uint32_t key_heads)
{
    fx_kern_init(x);
    x->k[0].op = FT_KABI_OP_DELTANET;
    x->k[0].format = f;
    x->k[0].rows = 32;
    x->k[0].cols = 128;
    x->k[0].key_heads = key_heads;
}

static void test_deltanet_kernel_key(void **state)
{
    (void)state;
    fx_kern_t x;
    set_deltanet(&x, FTPLAN__WEIGHT_FORMAT__WF_F32, 16 | FT_KABI_DELTANET_TILED);
    assert_null(ft_plan_validate(&x.fx.plan, "p.ftp"));
    set_deltanet(&x, FTPLAN__WEIGHT_FORMAT__WF_F32, 16);
    assert_null(ft_plan_validate(&x.fx.plan, "p.ftp"));
    set_deltanet(&x, FTPLAN__WEIGHT_FORMAT__WF_F32, 0);
    expect_refused(&x, FT_STATUS_FORMAT, "cpu_module.kernels[0].key_heads");
    set_deltanet(&x, FTPLAN__WEIGHT_FORMAT__WF_F32, FT_KABI_DELTANET_TILED);
    expect_refused(&x, FT_STATUS_FORMAT, "cpu_module.kernels[0].key_heads");
    set_deltanet(&x, FTPLAN__WEIGHT_FORMAT__WF_F32, 5);
    expect_refused(&x, FT_STATUS_FORMAT, "cpu_module.kernels[0].key_heads");
    set_deltanet(&x, FTPLAN__WEIGHT_FORMAT__WF_Q8_0, 16);
    expect_refused(&x, FT_STATUS_FORMAT, "cpu_module.kernels[0].key_heads");
}

/* ABI 5's MLA key: F32, rows q_nope, cols kv_lora, key_heads the RoPE
 * width | the value width << 16 (FT_KABI_MLA_AUX), both nonzero. */
static void test_mla_kernel_key(void **state)
{
    (void)state;
    fx_kern_t x;
    const uint32_t aux[] = {FT_KABI_MLA_AUX(64, 128), FT_KABI_MLA_AUX(0, 128), FT_KABI_MLA_AUX(64, 0), 0};
    for (size_t i = 0; i < sizeof(aux) / sizeof(aux[0]); i++)
        for (int q8 = 0; q8 < 2; q8++) {
            fx_kern_init(&x);
            x.k[0].op = FT_KABI_OP_MLA;
            x.k[0].format = q8 ? FTPLAN__WEIGHT_FORMAT__WF_Q8_0 : FTPLAN__WEIGHT_FORMAT__WF_F32;
            x.k[0].rows = 128;
            x.k[0].cols = 512;
            x.k[0].key_heads = aux[i];
            if (i == 0 && !q8)
                assert_null(ft_plan_validate(&x.fx.plan, "p.ftp"));
            else
                expect_refused(&x, FT_STATUS_FORMAT, "cpu_module.kernels[0].key_heads");
        }
}

static void test_cuda_refused(void **state)
{
    (void)state;
    fx_kern_t x;
    const char *bad_arch[] = {"sm_8", "sm_080", "sm_8a", "compute_80", "sm_1200", ""};
    for (size_t i = 0; i < sizeof(bad_arch) / sizeof(bad_arch[0]); i++) {
        fx_kern_init(&x);
        x.im[0].arch = (char *)bad_arch[i];
        expect_refused(&x, FT_STATUS_FORMAT, "cuda_images[0].arch");
    }
    fx_kern_init(&x);
    x.im[1].arch = "sm_80"; /* not ascending */
    expect_refused(&x, FT_STATUS_FORMAT, "cuda_images[1].arch");
    fx_kern_init(&x);
    x.cubin[1][1] = 'Z';
    expect_refused(&x, FT_STATUS_FORMAT, "cuda_images[1].cubin");
    fx_kern_init(&x);
    x.fx.plan.n_cuda_images = FT_PLAN_MAX_CUDA_IMAGES + 1;
    expect_refused(&x, FT_STATUS_OUT_OF_RANGE, "cuda_images");
    fx_kern_init(&x);
    x.ptx.arch = "sm_80";
    expect_refused(&x, FT_STATUS_FORMAT, "cuda_ptx[0].arch");
    fx_kern_init(&x);
    x.ptx.text = "";
    expect_refused(&x, FT_STATUS_FORMAT, "cuda_ptx[0].text");
    fx_kern_init(&x);
    x.fx.plan.n_cuda_images = 0; /* PTX without images */
    expect_refused(&x, FT_STATUS_MISMATCH, "cuda_ptx");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_cpu_module_refused),
        cmocka_unit_test(test_deltanet_kernel_key),
        cmocka_unit_test(test_mla_kernel_key),
        cmocka_unit_test(test_cuda_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
