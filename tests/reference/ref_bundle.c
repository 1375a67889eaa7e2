#include "ref_bundle.h"

#include "compile.h"
#include "import.h"

#include <stdio.h>
#include <sys/stat.h>

ft_status_t ft_ref_build_bundle(const ft_fixture_opts_t *o, ft_ref_source_t from, ft_dtype_t format,
                                const char *work_dir, char *out_bundle, size_t cap)
{
    return ft_ref_build_bundle_kv(o, from, format, FT_DTYPE_F32, work_dir, out_bundle, cap);
}

ft_status_t ft_ref_build_bundle_kv(const ft_fixture_opts_t *o, ft_ref_source_t from, ft_dtype_t format,
                                   ft_dtype_t kv_format, const char *work_dir, char *out_bundle, size_t cap)
{
    char src[4096];
    ft_status_t st;
    mkdir(work_dir, 0755);
    if (from == FT_REF_FROM_HF) {
        snprintf(src, sizeof(src), "%s/hf", work_dir);
        st = ft_fixture_write_hf(o, src, 1);
    } else {
        snprintf(src, sizeof(src), "%s/model.gguf", work_dir);
        st = ft_fixture_write_gguf(o, src);
    }
    if (st) return st;
    snprintf(out_bundle, cap, "%s/bundle-%s-%s%s", work_dir,
             format == FT_DTYPE_INVALID ? "source" : ft_dtype_name(format),
             from == FT_REF_FROM_HF ? "hf" : "gguf", kv_format == FT_DTYPE_F16 ? "-kvf16" : "");
    ft_ir_model_t *m = NULL;
    if ((st = ft_import_model(src, &m))) return st;
    ft_compile_options_t copts;
    ft_compile_options_init(&copts);
    copts.format = format;
    copts.kv_format = kv_format;
    st = ft_compile_bundle(m, &copts, out_bundle);
    ft_ir_model_destroy(m);
    return st;
}

ft_status_t ft_ref_build_cuda_bundle_ir(const ft_ir_model_t *m, const char *out_bundle)
{
    ft_compile_options_t co;
    ft_compile_options_init(&co);
    co.format = FT_DTYPE_F32;
    co.kv_format = FT_DTYPE_F32; /* the float64 reference at 1e-4: an exact cache */
    co.cuda_archs[0] = 90;
    co.n_cuda_archs = 1;
    return ft_compile_bundle(m, &co, out_bundle);
}

ft_status_t ft_ref_build_cuda_bundle(const char *src, const char *out_bundle)
{
    ft_ir_model_t *m = NULL;
    ft_status_t st = ft_import_model(src, &m);
    if (st) return st;
    st = ft_ref_build_cuda_bundle_ir(m, out_bundle);
    ft_ir_model_destroy(m);
    return st;
}

void ft_ref_wide_opts(ft_fixture_opts_t *o)
{
    ft_fixture_opts_init(o);
    o->d_model = 256;
    o->n_heads = 4;
    o->n_kv_heads = 2;
    o->head_dim = 64;
    o->n_experts = 4;
    o->n_experts_used = 2;
    o->expert_ffn = 256;
    o->dense_ffn = 512;
}
