/* Kernel modules into the plan: the formats the kernels specialize on are
 * the ones the weights were packed in (pw), not the source's. */
#include "kernel_modules.h"

#include "cuda_codegen.h"
#include "ft_kernel_abi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void ft_kernels_stage(const ft_compile_options_t *opts, const char *fmt, const char *arg)
{
    if (!opts->stage)
        return;
    char line[160];
    snprintf(line, sizeof(line), fmt, arg);
    opts->stage(opts->progress_user, line);
}

/* The model as packed: a shallow copy whose tensors carry the written
 * formats. Free *out_tensors with free(). */
FT_WARN_UNUSED static ft_status_t ft_kernels_packed_view(const ft_ir_model_t *m, const ft_packed_weights_t *pw,
                                          ft_ir_model_t *out, ft_ir_tensor_t **out_tensors)
{
    ft_ir_tensor_t *t = calloc(m->n_tensors ? m->n_tensors : 1, sizeof(*t));
    if (!t)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: kernels: out of memory", m->source_name);
    for (uint32_t i = 0; i < m->n_tensors; i++) {
        t[i] = m->tensors[i];
        t[i].dtype = pw->placements[i].dtype;
    }
    *out = *m;
    out->tensors = t;
    *out_tensors = t;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_kernels_cpu(const ft_ir_model_t *pm, const ft_packed_weights_t *pw,
                                  const ft_compile_options_t *opts, ft_arena_t *a, Ftplan__Plan *plan)
{
    const char *isa = opts->cpu_isa;
    if (!ft_cg_cpu_isa_valid(isa))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "cpu kernels: unknown ISA '%s' (avx512, avx2 or portable)", isa);
    char *src = NULL;
    uint8_t *so = NULL;
    size_t so_len = 0;
    ft_cg_cpu_kernel_t *ks = NULL;
    uint32_t n_ks = 0;
    ft_kernels_stage(opts, "cpu kernels (%s): emitting and checking with libclang", isa);
    /* the layouts the weights were packed in (the kernels' keys) */
    uint32_t *layouts = malloc((pm->n_tensors ? pm->n_tensors : 1) * sizeof(*layouts));
    if (!layouts)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cpu kernels: out of memory");
    for (uint32_t i = 0; i < pm->n_tensors; i++)
        layouts[i] = pw->placements[i].layout;
    ft_status_t st = ft_cg_cpu_kernels(pm, NULL, layouts, &ks, &n_ks);
    if (!st)
        st = ft_cg_cpu_emit(pm, NULL, layouts, isa, &src);
    free(layouts);
    if (!st) {
        ft_kernels_stage(opts, "cpu kernels (%s): compiling", isa);
        st = ft_cg_cpu_build(src, isa, &so, &so_len);
    }
    Ftplan__CpuModule *cm = NULL;
    Ftplan__CpuKernel **kv = NULL;
    uint8_t *so_copy = NULL;
    if (!st) {
        cm = ft_arena_alloc(a, sizeof(*cm));
        kv = ft_arena_array(a, n_ks ? n_ks : 1, sizeof(*kv));
        so_copy = ft_arena_alloc(a, so_len);
        if (!cm || !kv || !so_copy)
            st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cpu kernels: out of memory");
    }
    for (uint32_t i = 0; !st && i < n_ks; i++) {
        Ftplan__CpuKernel *k = ft_arena_alloc(a, sizeof(*k));
        if (!k) {
            st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cpu kernels: out of memory");
            break;
        }
        *k = (Ftplan__CpuKernel)FTPLAN__CPU_KERNEL__INIT;
        k->op = ks[i].op;
        k->format = (Ftplan__WeightFormat)(ks[i].format & ~FT_KABI_LAYOUT_R16);
        k->layout = ks[i].format & FT_KABI_LAYOUT_R16 ? 1u : 0u; /* FT_WLAYOUT_Q8_0_R16 */
        if (ks[i].op == FT_KABI_OP_DELTANET || ks[i].op == FT_KABI_OP_MLA) { /* key heads / widths, not a format */
            k->key_heads = ks[i].format_aux;
        } else {
            k->format_aux = (Ftplan__WeightFormat)(ks[i].format_aux & ~FT_KABI_LAYOUT_R16);
            k->layout_aux = ks[i].format_aux & FT_KABI_LAYOUT_R16 ? 1u : 0u;
        }
        k->rows = ks[i].rows;
        k->cols = ks[i].cols;
        kv[i] = k;
    }
    if (!st) {
        *cm = (Ftplan__CpuModule)FTPLAN__CPU_MODULE__INIT;
        cm->isa = (char *)isa; /* a static string of codegen */
        cm->abi_version = FT_KABI_VERSION;
        memcpy(so_copy, so, so_len);
        cm->so.data = so_copy;
        cm->so.len = so_len;
        cm->n_kernels = n_ks;
        cm->kernels = kv;
        plan->cpu_module = cm;
    }
    free(src);
    free(so);
    free(ks);
    return st ? ft_status_annotate(st, "%s: cpu kernels (%s)", pm->source_name, isa) : FT_OK;
}

/* Copies the NVRTC images into the plan: cubins as cuda_images, PTX as
 * cuda_ptx. */
FT_WARN_UNUSED static ft_status_t ft_kernels_store_cuda(const ft_cg_cuda_images_t *im, ft_arena_t *a,
                                         Ftplan__Plan *plan)
{
    Ftplan__CudaImage **cub = ft_arena_array(a, im->n_images + 1, sizeof(*cub));
    Ftplan__CudaPtx **ptx = ft_arena_array(a, im->n_images + 1, sizeof(*ptx));
    if (!cub || !ptx)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cuda kernels: out of memory");
    size_t n_cub = 0, n_ptx = 0;
    for (uint32_t i = 0; i < im->n_images; i++) {
        const ft_cg_cuda_image_t *x = &im->images[i];
        char *arch = ft_arena_alloc(a, 24);
        uint8_t *data = ft_arena_alloc(a, x->n_bytes + 1);
        if (!arch || !data)
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cuda kernels: out of memory");
        memcpy(data, x->data, x->n_bytes);
        data[x->n_bytes] = 0;
        snprintf(arch, 24, "%s_%u", x->is_ptx ? "compute" : "sm", x->sm);
        if (x->is_ptx) {
            Ftplan__CudaPtx *p = ft_arena_alloc(a, sizeof(*p));
            if (!p)
                return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cuda kernels: out of memory");
            *p = (Ftplan__CudaPtx)FTPLAN__CUDA_PTX__INIT;
            p->arch = arch;
            p->text = (char *)data; /* NUL-terminated: PTX text, its NUL dropped */
            ptx[n_ptx++] = p;
        } else {
            Ftplan__CudaImage *c = ft_arena_alloc(a, sizeof(*c));
            if (!c)
                return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cuda kernels: out of memory");
            *c = (Ftplan__CudaImage)FTPLAN__CUDA_IMAGE__INIT;
            c->arch = arch;
            c->cubin.data = data;
            c->cubin.len = x->n_bytes;
            cub[n_cub++] = c;
        }
    }
    plan->cuda_images = cub;
    plan->n_cuda_images = n_cub;
    plan->cuda_ptx = ptx;
    plan->n_cuda_ptx = n_ptx;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_kernels_cuda(const ft_ir_model_t *pm, const ft_compile_options_t *opts,
                                   ft_arena_t *a, Ftplan__Plan *plan)
{
    char list[FT_COMPILE_MAX_CUDA_ARCHS * 8] = "";
    for (uint32_t i = 0; i < opts->n_cuda_archs; i++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%ssm_%u", i ? "," : "",
                 opts->cuda_archs[i]);
    ft_cg_cuda_spec_t spec;
    ft_cg_cuda_source_t src;
    ft_cg_cuda_images_t im;
    memset(&src, 0, sizeof(src));
    memset(&im, 0, sizeof(im));
    ft_kernels_stage(opts, "cuda kernels: NVRTC for %s", list);
    ft_status_t st = ft_cg_cuda_spec_from_ir(pm, &spec);
    if (!st)
        st = ft_cg_cuda_emit(&spec, &src);
    if (!st)
        st = ft_cg_cuda_compile(&src, opts->cuda_archs, opts->n_cuda_archs, &im);
    if (!st)
        st = ft_kernels_store_cuda(&im, a, plan);
    ft_cg_cuda_images_free(&im);
    ft_cg_cuda_source_free(&src);
    return st ? ft_status_annotate(st, "%s: cuda kernels (%s)", pm->source_name, list) : FT_OK;
}

ft_status_t ft_compile_kernels(const ft_ir_model_t *model, const ft_packed_weights_t *pw,
                               const ft_compile_options_t *opts, ft_arena_t *arena,
                               Ftplan__Plan *plan)
{
    if (!opts->cpu_isa && !opts->n_cuda_archs)
        return FT_OK;
    if (opts->n_cuda_archs > FT_COMPILE_MAX_CUDA_ARCHS)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "cuda kernels: %u targets, at most %u",
                              opts->n_cuda_archs, FT_COMPILE_MAX_CUDA_ARCHS);
    ft_ir_model_t pm;
    ft_ir_tensor_t *tensors = NULL;
    ft_status_t st = ft_kernels_packed_view(model, pw, &pm, &tensors);
    if (!st && opts->cpu_isa)
        st = ft_kernels_cpu(&pm, pw, opts, arena, plan);
    if (!st && opts->n_cuda_archs)
        st = ft_kernels_cuda(&pm, opts, arena, plan);
    free(tensors);
    return st;
}
