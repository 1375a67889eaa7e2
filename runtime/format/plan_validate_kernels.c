/* The plan's kernel modules (plan_validate.h): the CPU shared object and
 * its kernel list, the CUDA cubins and PTX. Their contents are code the
 * compiler produced; here only their shape is checked (sizes, names, the
 * ABI version), so the loaders can rely on it. */
#include "plan_validate.h"

#include "plan_validate_internal.h"
#include "ft_kernel_abi.h"

#include <string.h>

static int ft_plan_is_elf(const ProtobufCBinaryData *b)
{
    return b->len >= 4 && memcmp(b->data, "\177ELF", 4) == 0;
}

/* "<prefix>NN" or "<prefix>NNN" with NN >= 10: a CUDA target name.
 * *out_sm receives the number (10 * major + minor). */
static int ft_plan_arch_ok(const char *arch, const char *prefix, uint32_t *out_sm)
{
    const size_t pl = strlen(prefix);
    if (!arch || strncmp(arch, prefix, pl) != 0)
        return 0;
    const char *d = arch + pl;
    const size_t n = strlen(d);
    if (n < 2 || n > 3 || d[0] == '0')
        return 0;
    uint32_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (d[i] < '0' || d[i] > '9')
            return 0;
        v = v * 10 + (uint32_t)(d[i] - '0');
    }
    *out_sm = v;
    return 1;
}

FT_WARN_UNUSED static ft_status_t ft_plan_check_cpu_kernel(const Ftplan__CpuKernel *k, size_t i, const char *name)
{
    if (!k)
        return ft_status_make(FT_STATUS_FORMAT, "%s: cpu_module.kernels[%zu]: missing", name, i);
    if (k->op < FT_KABI_OP_MATMUL || k->op > FT_KABI_OP_MLA)
        return ft_status_make(FT_STATUS_FORMAT, "%s: cpu_module.kernels[%zu].op: unknown op %u",
                              name, i, k->op);
    if (!ft_plan_enum_ok(&ftplan__weight_format__descriptor, k->format) ||
        k->format == FTPLAN__WEIGHT_FORMAT__WF_INVALID)
        return ft_status_make(FT_STATUS_FORMAT, "%s: cpu_module.kernels[%zu].format: bad value %d",
                              name, i, (int)k->format);
    const int aux_ok = k->op == FT_KABI_OP_EXPERT
                           ? ft_plan_enum_ok(&ftplan__weight_format__descriptor, k->format_aux) &&
                                 k->format_aux != FTPLAN__WEIGHT_FORMAT__WF_INVALID
                           : k->format_aux == FTPLAN__WEIGHT_FORMAT__WF_INVALID;
    if (!aux_ok)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: cpu_module.kernels[%zu].format_aux: %d is not valid for op %u",
                              name, i, (int)k->format_aux, k->op);
    const uint32_t hk = k->key_heads & ~FT_KABI_DELTANET_TILED;
    const uint32_t rope = k->key_heads & 0xffffu, v = k->key_heads >> 16;
    if (k->op == FT_KABI_OP_DELTANET
            ? hk == 0 || k->rows % hk != 0 || k->format != FTPLAN__WEIGHT_FORMAT__WF_F32
        : k->op == FT_KABI_OP_MLA ? rope == 0 || v == 0 || k->format != FTPLAN__WEIGHT_FORMAT__WF_F32
                                  : k->key_heads != 0)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: cpu_module.kernels[%zu].key_heads: %u is not valid for op %u with "
                              "%u rows",
                              name, i, k->key_heads, k->op, k->rows);
    /* layouts: rows, or Q8_0 rows interleaved by 16 for a product's weights */
    const int mm = k->op == FT_KABI_OP_MATMUL || k->op == FT_KABI_OP_EXPERT;
    if ((k->layout != 0 && (k->layout != 1 || !mm || k->format != FTPLAN__WEIGHT_FORMAT__WF_Q8_0)) ||
        (k->layout_aux != 0 &&
         (k->layout_aux != 1 || k->op != FT_KABI_OP_EXPERT || k->format_aux != FTPLAN__WEIGHT_FORMAT__WF_Q8_0)))
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: cpu_module.kernels[%zu]: layout %u/%u is not valid for op %u of format %d/%d",
                              name, i, k->layout, k->layout_aux, k->op, (int)k->format, (int)k->format_aux);
    const uint32_t max = FT_PLAN_MAX_VOCAB > FT_PLAN_MAX_FFN ? FT_PLAN_MAX_VOCAB : FT_PLAN_MAX_FFN;
    if (k->rows < 1 || k->rows > max || k->cols < 1 || k->cols > max)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: cpu_module.kernels[%zu]: shape %u x %u, expected 1..%u each",
                              name, i, k->rows, k->cols, max);
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_plan_check_cpu_module(const Ftplan__CpuModule *cm, const char *name)
{
    const char *isa = cm->isa ? cm->isa : "";
    if (strcmp(isa, "avx512") != 0 && strcmp(isa, "avx2") != 0 && strcmp(isa, "portable") != 0)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: cpu_module.isa: '%.*s' is not avx512, avx2 or portable", name,
                              FT_PLAN_NAME_MAX, isa);
    if (cm->abi_version != FT_KABI_VERSION)
        return ft_status_make(FT_STATUS_MISMATCH,
                              "%s: cpu_module.abi_version is %u, this runtime's kernel ABI is %u "
                              "(recompile the bundle)",
                              name, cm->abi_version, FT_KABI_VERSION);
    if (cm->so.len > FT_PLAN_MAX_MODULE_BYTES || !ft_plan_is_elf(&cm->so))
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: cpu_module.so: %zu bytes, expected an ELF shared object of at "
                              "most %u bytes",
                              name, cm->so.len, FT_PLAN_MAX_MODULE_BYTES);
    if (cm->n_kernels > FT_PLAN_MAX_CPU_KERNELS)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: cpu_module.kernels: %zu, at most %u",
                              name, cm->n_kernels, FT_PLAN_MAX_CPU_KERNELS);
    for (size_t i = 0; i < cm->n_kernels; i++) {
        ft_status_t st = ft_plan_check_cpu_kernel(cm->kernels[i], i, name);
        if (st)
            return st;
    }
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_plan_check_cuda(const Ftplan__Plan *plan, const char *name)
{
    if (plan->n_cuda_images > FT_PLAN_MAX_CUDA_IMAGES)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: cuda_images: %zu, at most %u", name,
                              plan->n_cuda_images, FT_PLAN_MAX_CUDA_IMAGES);
    uint32_t prev = 0;
    for (size_t i = 0; i < plan->n_cuda_images; i++) {
        const Ftplan__CudaImage *im = plan->cuda_images[i];
        uint32_t sm = 0;
        if (!im || !ft_plan_arch_ok(im->arch, "sm_", &sm) || sm <= prev)
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: cuda_images[%zu].arch: '%.*s', expected sm_NN, ascending",
                                  name, i, FT_PLAN_NAME_MAX, im && im->arch ? im->arch : "");
        prev = sm;
        if (im->cubin.len > FT_PLAN_MAX_MODULE_BYTES || !ft_plan_is_elf(&im->cubin))
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: cuda_images[%zu].cubin: %zu bytes, expected an ELF image "
                                  "of at most %u bytes",
                                  name, i, im->cubin.len, FT_PLAN_MAX_MODULE_BYTES);
    }
    if (plan->n_cuda_ptx > plan->n_cuda_images || (plan->n_cuda_ptx && !plan->n_cuda_images))
        return ft_status_make(FT_STATUS_MISMATCH, "%s: cuda_ptx: %zu entries for %zu cuda_images",
                              name, plan->n_cuda_ptx, plan->n_cuda_images);
    for (size_t i = 0; i < plan->n_cuda_ptx; i++) {
        const Ftplan__CudaPtx *p = plan->cuda_ptx[i];
        uint32_t sm = 0;
        if (!p || !ft_plan_arch_ok(p->arch, "compute_", &sm))
            return ft_status_make(FT_STATUS_FORMAT, "%s: cuda_ptx[%zu].arch: '%.*s', expected compute_NN",
                                  name, i, FT_PLAN_NAME_MAX, p && p->arch ? p->arch : "");
        const size_t len = p->text ? strlen(p->text) : 0;
        if (len == 0 || len > FT_PLAN_MAX_MODULE_BYTES)
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: cuda_ptx[%zu].text: %zu bytes, expected 1..%u", name, i, len,
                                  FT_PLAN_MAX_MODULE_BYTES);
    }
    return FT_OK;
}

ft_status_t ft_plan_check_kernels(const Ftplan__Plan *plan, const char *name)
{
    ft_status_t st = plan->cpu_module ? ft_plan_check_cpu_module(plan->cpu_module, name) : FT_OK;
    return st ? st : ft_plan_check_cuda(plan, name);
}
