/* Model shape for `ftc plan`: config.json, a qwen3moe GGUF header, or any
 * other GGUF's imported IR -> ft_plan_model_t. */
#include "plan_model.h"

#include "gguf.h"
#include "hf_internal.h"
#include "import.h"
#include "weights_pack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The dense format a config.json implies when the user names none. */
static ft_dtype_t ft_pm_hf_dense(const ft_meta_t *meta)
{
    const char *q = ft_meta_get_string(meta, "quantization_config.quant_method");
    /* An FP8 checkpoint compiles to our FP8 blocks (E4M3 + a scale per 128). */
    if (q && strcmp(q, "fp8") == 0) return FT_DTYPE_FP8;
    static const char *const keys[] = {"torch_dtype", "dtype", "text_config.torch_dtype",
                                       "text_config.dtype"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const char *t = ft_meta_get_string(meta, keys[i]);
        if (!t) continue;
        if (strcmp(t, "float16") == 0) return FT_DTYPE_F16;
        if (strcmp(t, "float32") == 0) return FT_DTYPE_F32;
        if (strcmp(t, "bfloat16") == 0) return FT_DTYPE_BF16;
    }
    return FT_DTYPE_BF16;
}

static ft_dtype_t ft_pm_hf_expert(const ft_meta_t *meta, ft_dtype_t dense)
{
    const char *q = ft_meta_get_string(meta, "quantization_config.quant_method");
    const char *e = ft_meta_get_string(meta, "expert_dtype");
    if ((q && strcmp(q, "mxfp4") == 0) || (e && strcmp(e, "fp4") == 0)) return FT_DTYPE_MXFP4;
    return dense;
}

/* Fills unset formats from the checkpoint's defaults. */
static void ft_pm_formats(const ft_plan_model_opts_t *opts, ft_dtype_t ckpt_expert,
                          ft_dtype_t ckpt_dense, ft_plan_model_info_t *info)
{
    ft_dtype_t e = opts ? opts->expert_format : FT_DTYPE_INVALID;
    ft_dtype_t d = opts ? opts->dense_format : FT_DTYPE_INVALID;
    info->expert_format = e != FT_DTYPE_INVALID ? e : ckpt_expert;
    if (d == FT_DTYPE_INVALID) d = (e != FT_DTYPE_INVALID && e != FT_DTYPE_MXFP4) ? e : ckpt_dense;
    info->dense_format = d;
}

FT_WARN_UNUSED static ft_status_t ft_pm_from_config(const char *file, const ft_plan_model_opts_t *opts,
                                     ft_plan_model_t **out, ft_plan_model_info_t *info)
{
    char *json = NULL;
    uint64_t len = 0;
    ft_status_t st = ft_hf_read_file(file, FT_HF_MAX_CONFIG_BYTES, &json, &len);
    if (st) return st;
    ft_arena_t *arena = NULL;
    if ((st = ft_arena_create(0, &arena))) {
        free(json);
        return st;
    }
    ft_meta_t meta;
    ft_meta_init(&meta, arena);
    st = ft_hf_config_parse(&meta, file, json, len);
    free(json);
    if (!st) {
        ft_dtype_t dense = ft_pm_hf_dense(&meta);
        ft_pm_formats(opts, ft_pm_hf_expert(&meta, dense), dense, info);
        st = ft_model_shape(&meta, file, 0, info->expert_format, info->dense_format, out);
    }
    ft_meta_release(&meta);
    ft_arena_destroy(arena);
    return st;
}

/* GGUF keeps the vocabulary in tokenizer arrays and says nothing about
 * tied embeddings: both come from the tensor table. */
FT_WARN_UNUSED static ft_status_t ft_pm_gguf_meta(ft_src_model_t *src, const char *arch)
{
    char key[96];
    const ft_src_tensor_t *embd = ft_src_find_tensor(src, "token_embd.weight");
    snprintf(key, sizeof(key), "%s.vocab_size", arch);
    if (!ft_meta_find(&src->meta, key)) {
        if (!embd || embd->n_dims != 2)
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: no 2-D tensor 'token_embd.weight' to size the vocabulary",
                                  src->path);
        ft_status_t st = ft_meta_add_int(&src->meta, key, (int64_t)embd->shape[0]);
        if (st) return st;
    }
    snprintf(key, sizeof(key), "%s.tie_word_embeddings", arch);
    return ft_meta_add_bool(&src->meta, key, ft_src_find_tensor(src, "output.weight") == NULL);
}

static ft_dtype_t ft_pm_tensor_dtype(const ft_src_model_t *src, const char *name, ft_dtype_t dflt)
{
    const ft_src_tensor_t *t = ft_src_find_tensor(src, name);
    return t && t->dtype != FT_DTYPE_INVALID ? t->dtype : dflt;
}

/* The shape of an imported model under a quantization mix: each tensor
 * in the format the compiler would write it in (ft_pack_target_dtype with
 * the mix), so the plan predicts what `ftc compile --format MIX` builds. */
FT_WARN_UNUSED static ft_status_t ft_pm_mix_shape(const ft_ir_model_t *ir, ft_quant_mix_t mix,
                                                  ft_plan_model_t **out, ft_plan_model_info_t *info)
{
    ft_compile_options_t copts;
    ft_compile_options_init(&copts);
    copts.format = FT_DTYPE_INVALID;
    copts.mix = mix;
    ft_dtype_t *formats = calloc(ir->n_tensors ? ir->n_tensors : 1, sizeof(*formats));
    if (!formats) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "ftc plan: out of memory");
    ft_dtype_t expert = FT_DTYPE_INVALID, dense = FT_DTYPE_INVALID;
    for (uint32_t i = 0; i < ir->n_tensors; i++) {
        const ft_ir_tensor_t *t = &ir->tensors[i];
        formats[i] = ft_pack_target_dtype(ir, t, &copts);
        if (t->role == FT_ROLE_FFN_UP_EXPS && expert == FT_DTYPE_INVALID) expert = formats[i];
        if (t->role == FT_ROLE_ATTN_Q && dense == FT_DTYPE_INVALID) dense = formats[i];
    }
    /* reported: the mix's base type where the model has such matrices */
    info->expert_format = expert != FT_DTYPE_INVALID ? expert : dense;
    info->dense_format = dense != FT_DTYPE_INVALID ? dense : info->expert_format;
    if (info->dense_format == FT_DTYPE_INVALID) info->expert_format = info->dense_format = FT_DTYPE_F16;
    info->mix = mix;
    ft_status_t st = ft_model_shape_from_ir_formats(ir, info->expert_format, info->dense_format, formats, out);
    free(formats);
    return st;
}

/* A checkpoint with a tensor table (GGUF file or HF directory) under a
 * mix: planned from its imported IR. */
FT_WARN_UNUSED static ft_status_t ft_pm_from_ir_mix(const char *path, const ft_plan_model_opts_t *opts,
                                                    ft_plan_model_t **out, ft_plan_model_info_t *info)
{
    ft_ir_model_t *ir = NULL;
    ft_status_t st = ft_import_model(path, &ir);
    if (st) return st;
    info->from_gguf = strcmp(ir->source_format, "gguf") == 0;
    st = ft_pm_mix_shape(ir, opts->mix, out, info);
    ft_ir_model_destroy(ir);
    return st;
}

/* A GGUF of another family than qwen3moe: its shape from the imported IR
 * (models/shape_ir.c: the tensor table as the importer takes it apart,
 * KV only for full-attention layers, a window's ring or a recurrent
 * state as a fixed per-sequence state), not a second description of the
 * family's tensors. The checkpoint's formats: its first expert stack's
 * and its first other layer matrix's. */
FT_WARN_UNUSED static ft_status_t ft_pm_from_gguf_ir(const char *path, const ft_plan_model_opts_t *opts,
                                                     ft_plan_model_t **out, ft_plan_model_info_t *info)
{
    ft_ir_model_t *ir = NULL;
    ft_status_t st = ft_import_model(path, &ir);
    if (st) return st;
    ft_dtype_t dense = FT_DTYPE_INVALID, expert = FT_DTYPE_INVALID;
    for (uint32_t i = 0; i < ir->n_tensors; i++) {
        const ft_ir_tensor_t *t = &ir->tensors[i];
        if (t->layer < 0) continue;
        if (t->role == FT_ROLE_FFN_GATE_EXPS || t->role == FT_ROLE_FFN_UP_EXPS ||
            t->role == FT_ROLE_FFN_DOWN_EXPS) {
            if (expert == FT_DTYPE_INVALID) expert = t->dtype;
        } else if (t->n_dims == 2 && t->role != FT_ROLE_FFN_ROUTER && t->role != FT_ROLE_SSM_CONV &&
                   t->role != FT_ROLE_FFN_GATE_INP_SHEXP && t->role != FT_ROLE_FFN_GATE_EXPS_BIAS &&
                   t->role != FT_ROLE_FFN_UP_EXPS_BIAS && t->role != FT_ROLE_FFN_DOWN_EXPS_BIAS &&
                   dense == FT_DTYPE_INVALID) {
            dense = t->dtype;
        }
    }
    if (dense == FT_DTYPE_INVALID) dense = FT_DTYPE_F16;
    if (expert == FT_DTYPE_INVALID) expert = dense;
    ft_pm_formats(opts, expert, dense, info);
    info->from_gguf = 1;
    st = ft_model_shape_from_ir(ir, info->expert_format, info->dense_format, out);
    ft_ir_model_destroy(ir);
    return st;
}

FT_WARN_UNUSED static ft_status_t ft_pm_from_gguf(const char *path, const ft_plan_model_opts_t *opts,
                                   ft_plan_model_t **out, ft_plan_model_info_t *info)
{
    ft_src_model_t *src = NULL;
    ft_status_t st = ft_gguf_import(path, &src);
    if (st) return st;
    const char *arch = ft_meta_get_string(&src->meta, "general.architecture");
    if (!arch)
        st = ft_status_make(FT_STATUS_FORMAT, "%s: required key 'general.architecture' is missing",
                            path);
    if (!st && strcmp(arch, "qwen3moe") != 0) {
        ft_src_model_destroy(src);
        return ft_pm_from_gguf_ir(path, opts, out, info);
    }
    if (!st) st = ft_pm_gguf_meta(src, arch);
    if (!st) {
        ft_dtype_t dense = ft_pm_tensor_dtype(src, "blk.0.attn_q.weight", FT_DTYPE_F16);
        ft_dtype_t expert = ft_pm_tensor_dtype(src, "blk.0.ffn_up_exps.weight", dense);
        ft_pm_formats(opts, expert, dense, info);
        info->from_gguf = 1;
        st = ft_model_shape(&src->meta, path, 1, info->expert_format, info->dense_format, out);
    }
    ft_src_model_destroy(src);
    return st;
}

ft_status_t ft_plan_model_load(const char *path, const ft_plan_model_opts_t *opts,
                               ft_plan_model_t **out_shape, ft_plan_model_info_t *out_info)
{
    memset(out_info, 0, sizeof(*out_info));
    *out_shape = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return ft_status_make(FT_STATUS_IO, "%s: no such file or directory", path);
    if (opts && opts->mix != FT_QUANT_MIX_NONE) {
        if (opts->expert_format != FT_DTYPE_INVALID || opts->dense_format != FT_DTYPE_INVALID)
            return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                                  "%s: the mix %s sets every matrix's format; it takes no "
                                  "--dense-format or second --format",
                                  path, ft_quant_mix_name(opts->mix));
        if (!S_ISDIR(sb.st_mode)) {
            FILE *f = fopen(path, "rb");
            char magic[4] = {0};
            size_t got = f ? fread(magic, 1, 4, f) : 0;
            if (f) fclose(f);
            if (got != 4 || memcmp(magic, "GGUF", 4) != 0)
                return ft_status_make(FT_STATUS_UNSUPPORTED,
                                      "%s: the mix %s chooses formats per tensor, so it needs the "
                                      "checkpoint's tensor table (a GGUF file, or an HF directory "
                                      "with its safetensors); a config.json alone names no tensors",
                                      path, ft_quant_mix_name(opts->mix));
        }
        return ft_pm_from_ir_mix(path, opts, out_shape, out_info);
    }
    if (S_ISDIR(sb.st_mode)) {
        char file[4096];
        int n = snprintf(file, sizeof(file), "%s/config.json", path);
        if (n < 0 || (size_t)n >= sizeof(file))
            return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "%.200s...: path too long", path);
        return ft_pm_from_config(file, opts, out_shape, out_info);
    }
    /* A file: GGUF by its magic, else a config.json. */
    FILE *f = fopen(path, "rb");
    if (!f) return ft_status_make(FT_STATUS_IO, "%s: cannot open", path);
    char magic[4] = {0};
    size_t got = fread(magic, 1, 4, f);
    fclose(f);
    if (got == 4 && memcmp(magic, "GGUF", 4) == 0)
        return ft_pm_from_gguf(path, opts, out_shape, out_info);
    return ft_pm_from_config(path, opts, out_shape, out_info);
}
