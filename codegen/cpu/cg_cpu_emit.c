/* Emits the C source of a CPU kernel module: the ABI header and the kernel
 * templates for the ISA, then one small wrapper per kernel with its shape
 * as constants (the templates are always_inline, so each wrapper is a
 * specialized copy), then the entry table read back through libclang. */
#include "cg_cpu_internal.h"
#include "../../runtime/format/iq_grids.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char ft_cg_abi_header[], ft_cg_tpl_common[], ft_cg_tpl_rowloop[],
    ft_cg_tpl_quants[], ft_cg_tpl_tiled[], ft_cg_tpl_avx512[], ft_cg_tpl_avx2[],
    ft_cg_tpl_portable[], ft_cg_tpl_fused[], ft_cg_tpl_deltanet[], ft_cg_tpl_mla[];

/* The formats the templates compute are those dtype.h's table flags
 * FT_DTYPE_FLAG_CPU_GEN; the table gives their names (the templates'
 * ftt_matmul_<name>) and block geometry. */
typedef ft_dtype_info_t ft_cg_fmt_t;

static const ft_cg_fmt_t *ft_cg_fmt(uint32_t fmt)
{
    fmt &= ~FT_KABI_LAYOUT_R16; /* the layout changes where blocks are, not what */
    const ft_dtype_t t = (ft_dtype_t)fmt;
    return fmt < FT_DTYPE_COUNT && ft_dtype_has(t, FT_DTYPE_FLAG_CPU_GEN) ? ft_dtype_info(t) : NULL;
}

/* The templates' name of a weight format key: ftt_matmul_<name>. */
static const char *ft_cg_fname(uint32_t fmt)
{
    return fmt & FT_KABI_LAYOUT_R16 ? "q8_0_r16" : ft_cg_fmt(fmt)->name;
}

/* A key with FT_KABI_LAYOUT_R16: Q8_0 only, and only the AVX-512
 * template has the kernel. */
static int ft_cg_layout_ok(uint32_t fmt, const char *isa)
{
    return !(fmt & FT_KABI_LAYOUT_R16) ||
           ((fmt & ~FT_KABI_LAYOUT_R16) == FT_KABI_FMT_Q8_0 && !strcmp(isa, "avx512"));
}

int ft_cg_cpu_format_supported(uint32_t fmt)
{
    return ft_cg_fmt(fmt) != NULL;
}

int ft_cg_cpu_isa_valid(const char *isa)
{
    return isa && (!strcmp(isa, "avx512") || !strcmp(isa, "avx2") || !strcmp(isa, "portable"));
}

const char *ft_cg_cpu_host_isa(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni"))
        return "avx512";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return "avx2";
#endif
    return "portable";
}

static const char *ft_cg_template(const char *name, const ft_cg_template_t *ov, uint32_t n_ov)
{
    for (uint32_t i = 0; i < n_ov; i++)
        if (!strcmp(ov[i].name, name))
            return ov[i].text;
    if (!strcmp(name, "common")) return ft_cg_tpl_common;
    if (!strcmp(name, "rowloop")) return ft_cg_tpl_rowloop;
    if (!strcmp(name, "quants")) return ft_cg_tpl_quants;
    if (!strcmp(name, "tiled")) return ft_cg_tpl_tiled;
    if (!strcmp(name, "avx512")) return ft_cg_tpl_avx512;
    if (!strcmp(name, "avx2")) return ft_cg_tpl_avx2;
    if (!strcmp(name, "fused")) return ft_cg_tpl_fused;
    if (!strcmp(name, "deltanet")) return ft_cg_tpl_deltanet;
    if (!strcmp(name, "mla")) return ft_cg_tpl_mla;
    return ft_cg_tpl_portable;
}

/* How activations are prepared for weight format fmt (the table's
 * cpu_act, as the runtime's ft_cpu_act_type): 0 float32 rows, 1 Q8_0
 * blocks, 2 Q8_K super-blocks, the templates' encoding; and the bytes of
 * one prepared row of cols elements. fmt is one ft_cg_fmt accepts. */
static ft_dtype_t ft_cg_act_type(uint32_t fmt)
{
    return ft_cg_fmt(fmt)->cpu_act;
}

static int ft_cg_act_kind(uint32_t fmt)
{
    const ft_dtype_t at = ft_cg_act_type(fmt);
    return at == FT_DTYPE_Q8_0 ? 1 : at == FT_DTYPE_Q8_K ? 2 : 0;
}

static uint64_t ft_cg_act_row_bytes(uint32_t fmt, uint32_t cols)
{
    const ft_dtype_info_t *a = ft_dtype_info(ft_cg_act_type(fmt));
    return (uint64_t)cols / a->block_elems * a->block_bytes;
}

FT_WARN_UNUSED static ft_status_t ft_cg_check_req(const ft_cg_kreq_t *k, const char *isa)
{
    const int layouts = k->op == FT_KABI_OP_MATMUL || k->op == FT_KABI_OP_EXPERT;
    if (!ft_cg_layout_ok(k->format, isa) || (k->op == FT_KABI_OP_EXPERT && !ft_cg_layout_ok(k->format_aux, isa)) ||
        (!layouts && (k->format & FT_KABI_LAYOUT_R16)))
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "codegen: kernel op %u format %#x/%#x: rows interleaved by 16 are generated "
                              "for Q8_0 products on avx512 only (ISA %s)",
                              k->op, k->format, k->format_aux, isa);
    const ft_cg_fmt_t *f = ft_cg_fmt(k->format);
    const ft_cg_fmt_t *fa = k->op == FT_KABI_OP_EXPERT ? ft_cg_fmt(k->format_aux) : f;
    if (k->op == FT_KABI_OP_DELTANET) {
        const uint32_t hk = k->format_aux & ~FT_KABI_DELTANET_TILED;
        if (k->format != FT_KABI_FMT_F32 || hk == 0 || k->rows == 0 || k->rows % hk ||
            k->cols == 0 || k->rows > 4096 || k->cols > 1024)
            return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                                  "codegen: DeltaNet kernel of %u value heads, %u key heads of %u "
                                  "(format %u) is not generated",
                                  k->rows, hk, k->cols, k->format);
        return FT_OK;
    }
    if (k->op == FT_KABI_OP_MLA) {
        const uint32_t rope = k->format_aux & 0xffffu, v = k->format_aux >> 16;
        if (k->format != FT_KABI_FMT_F32 || k->rows == 0 || k->rows > 4096 || k->cols == 0 ||
            k->cols > 16384 || rope == 0 || rope > 4096 || v == 0 || v > 4096)
            return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                                  "codegen: MLA kernel of q_nope %u, RoPE %u, kv_lora %u, values %u "
                                  "(format %u) is not generated",
                                  k->rows, rope, k->cols, v, k->format);
        return FT_OK;
    }
    const int op_ok = k->op >= FT_KABI_OP_MATMUL && k->op <= FT_KABI_OP_ATTN &&
                      (k->op == FT_KABI_OP_EXPERT || k->format_aux == 0) &&
                      (k->op != FT_KABI_OP_ATTN || k->format == FT_KABI_FMT_F32 || k->format == FT_KABI_FMT_F16);
    if (!f || !fa || !op_ok)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "codegen: kernel op %u format %u/%u is not generated",
                              k->op, k->format, k->format_aux);
    /* experts: gate/up [rows=ffn, cols=d] in f, down [d, ffn] in fa */
    const uint32_t down_cols = k->op == FT_KABI_OP_EXPERT ? k->rows : k->cols;
    if (k->rows == 0 || k->cols == 0 || k->cols % f->block_elems || down_cols % fa->block_elems ||
        k->rows > (1u << 24) || k->cols > (1u << 24))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "codegen: %s kernel shape %u x %u does not fit the %s block of %u",
                              f->name, k->rows, k->cols, fa->name, fa->block_elems);
    /* norms key rows = cols; attention keeps G x head_dim floats on the stack */
    if ((k->op == FT_KABI_OP_NORM_PREPARE && k->rows != k->cols) ||
        (k->op == FT_KABI_OP_ATTN && (uint64_t)k->rows * k->cols > 8192))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "codegen: op %u shape %u x %u is not generated",
                              k->op, k->rows, k->cols);
    return FT_OK;
}

static void ft_cg_emit_norm_prepare(FILE *o, const ft_cg_kreq_t *k)
{
    fprintf(o, "FTK_META(\"ft_kernel op=%u fmt=%u aux=0 rows=%u cols=%u\")\n", k->op, k->format, k->rows,
            k->cols);
    fprintf(o, "static void ftk_norm_prepare_%s_%u(const float *x, size_t ldx, const float *w, float eps,\n"
               "    uint32_t n_rows, void *out)\n{\n",
            ft_cg_fmt(k->format)->name, k->cols);
    fprintf(o, "    ftt_norm_prepare(%d, %uu, %lluu, x, ldx, w, eps, n_rows, out);\n}\n\n",
            ft_cg_act_kind(k->format), k->cols, (unsigned long long)ft_cg_act_row_bytes(k->format, k->cols));
}

static void ft_cg_emit_router(FILE *o, const ft_cg_kreq_t *k)
{
    const char *fn = ft_cg_fmt(k->format)->name;
    fprintf(o, "FTK_META(\"ft_kernel op=%u fmt=%u aux=0 rows=%u cols=%u\")\n", k->op, k->format, k->rows,
            k->cols);
    fprintf(o, "static void ftk_router_%s_%ux%u(const void *w, size_t w_row_bytes, const void *xp,\n"
               "    uint32_t n_tok, uint32_t k, int norm_topk, float *probs, int32_t *sel, float *sel_w,\n"
               "    size_t ld_sel)\n{\n",
            fn, k->rows, k->cols);
    fprintf(o, "    if (k == 0 || k > %uu)\n        return;\n", k->rows);
    fprintf(o, "    ftt_matmul_%s(%uu, w, w_row_bytes, xp, n_tok, 0, %uu, probs, %uu);\n", fn, k->cols, k->rows,
            k->rows);
    fprintf(o, "    ftt_router_tail(%uu, probs, n_tok, k, norm_topk, sel, sel_w, ld_sel);\n}\n\n", k->rows);
}

/* Attention over an f32 or an f16 KV cache (the key's format): both are
 * emitted for every shape, the runtime binds the one of the plan's
 * kv_format. */
static void ft_cg_emit_attn(FILE *o, const ft_cg_kreq_t *k)
{
    const int kv16 = k->format == FT_KABI_FMT_F16;
    const char *et = kv16 ? "uint16_t" : "float";
    fprintf(o, "FTK_META(\"ft_kernel op=%u fmt=%u aux=0 rows=%u cols=%u\")\n", k->op, k->format, k->rows,
            k->cols);
    fprintf(o, "static void ftk_attn_%s_%ux%u(const float *q, const %s *k, const %s *v, size_t kv_stride,\n"
               "    uint32_t n_keys, float scale, float *scores, size_t ld_scores, float *out)\n{\n",
            kv16 ? "f16" : "f32", k->rows, k->cols, et, et);
    fprintf(o, "    ftt_attn(%uu, %uu, %d, q, k, v, kv_stride, n_keys, scale, scores, ld_scores, out);\n}\n\n",
            k->rows, k->cols, kv16);
}

/* The DeltaNet recurrence with the layer's heads and head_dim as constants. */
static void ft_cg_emit_deltanet(FILE *o, const ft_cg_kreq_t *k)
{
    const uint32_t hk = k->format_aux & ~FT_KABI_DELTANET_TILED;
    const int tiled = (k->format_aux & FT_KABI_DELTANET_TILED) != 0;
    fprintf(o, "FTK_META(\"ft_kernel op=%u fmt=%u aux=%u rows=%u cols=%u\")\n", k->op, k->format,
            k->format_aux, k->rows, k->cols);
    fprintf(o, "static void ftk_deltanet_%uv%uk%s_%u(const float *y, size_t ldy, const float *g,\n"
               "    const float *beta, uint32_t n_tok, uint32_t h0, uint32_t h1, float *s, float *out,\n"
               "    size_t ldo)\n{\n",
            k->rows, hk, tiled ? "t" : "g", k->cols);
    fprintf(o, "    ftt_deltanet(%uu, %uu, %d, %uu, y, ldy, g, beta, n_tok, h0, h1, s, out, ldo);\n}\n\n",
            k->rows, hk, tiled, k->cols);
}

/* One MLA head with the layer's widths as constants. */
static void ft_cg_emit_mla(FILE *o, const ft_cg_kreq_t *k)
{
    const uint32_t rope = k->format_aux & 0xffffu, v = k->format_aux >> 16;
    fprintf(o, "FTK_META(\"ft_kernel op=%u fmt=%u aux=%u rows=%u cols=%u\")\n", k->op, k->format,
            k->format_aux, k->rows, k->cols);
    fprintf(o, "static void ftk_mla_n%ur%uc%uv%u(const float *wk, const float *wv, const float *q,\n"
               "    size_t ldq, const float *g, const uint32_t *n_keys, uint32_t n_tok, int expanded,\n"
               "    float scale, float *scratch, float *out, size_t ldo)\n{\n",
            k->rows, rope, k->cols, v);
    fprintf(o, "    ftt_mla(%uu, %uu, %uu, %uu, wk, wv, q, ldq, g, n_keys, n_tok, expanded, scale, scratch,\n"
               "            out, ldo);\n}\n\n",
            k->rows, rope, k->cols, v);
}

static void ft_cg_emit_matmul(FILE *o, const ft_cg_kreq_t *k)
{
    const char *fn = ft_cg_fname(k->format);
    fprintf(o, "FTK_META(\"ft_kernel op=%u fmt=%u aux=0 rows=%u cols=%u\")\n", k->op, k->format,
            k->rows, k->cols);
    fprintf(o, "static void ftk_matmul_%s_%ux%u(const void *w, size_t w_row_bytes, const void *xp,\n"
               "    uint32_t n_tok, uint32_t r0, uint32_t r1, float *y, size_t ldy)\n{\n",
            fn, k->rows, k->cols);
    fprintf(o, "    if (r1 > %uu)\n        r1 = %uu;\n    if (r0 >= r1)\n        return;\n", k->rows, k->rows);
    fprintf(o, "    ftt_matmul_%s(%uu, w, w_row_bytes, xp, n_tok, r0, r1, y, ldy);\n}\n\n", fn, k->cols);
}

static void ft_cg_emit_expert(FILE *o, const ft_cg_kreq_t *k)
{
    const ft_cg_fmt_t *f = ft_cg_fmt(k->format), *fd = ft_cg_fmt(k->format_aux);
    const uint32_t ffn = k->rows, d = k->cols;
    const uint64_t gu_rb = (uint64_t)d / f->block_elems * f->block_bytes;
    const uint64_t dn_rb = (uint64_t)ffn / fd->block_elems * fd->block_bytes;
    fprintf(o, "FTK_META(\"ft_kernel op=%u fmt=%u aux=%u rows=%u cols=%u\")\n", k->op, k->format,
            k->format_aux, ffn, d);
    fprintf(o, "static void ftk_expert_%s_%s_%ux%u(const void *w_gate, const void *w_up,\n"
               "    const void *w_down, const void *xp, uint32_t n_tok, float *g, float *u, void *ap,\n"
               "    float *out)\n{\n",
            ft_cg_fname(k->format), ft_cg_fname(k->format_aux), ffn, d);
    fprintf(o, "    ftt_matmul_%s(%uu, w_gate, %lluu, xp, n_tok, 0, %uu, g, %uu);\n", ft_cg_fname(k->format), d,
            (unsigned long long)gu_rb, ffn, ffn);
    fprintf(o, "    ftt_matmul_%s(%uu, w_up, %lluu, xp, n_tok, 0, %uu, u, %uu);\n", ft_cg_fname(k->format), d,
            (unsigned long long)gu_rb, ffn, ffn);
    /* SwiGLU exactly as the runtime's ft_op_swiglu */
    fprintf(o, "    for (size_t i = 0; i < (size_t)n_tok * %uu; i++)\n"
               "        g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];\n", ffn);
    /* the down input prepared by the template's quantizers (the runtime's
     * rounding, bit for bit), float rows through the host */
    const int dk = ft_cg_act_kind(k->format_aux);
    if (dk == 0)
        fprintf(o, "    ftt_host->act_prepare(%uu, g, %uu, n_tok, %uu, ap);\n", k->format_aux & ~FT_KABI_LAYOUT_R16, ffn, ffn);
    else
        fprintf(o, "    for (uint32_t t = 0; t < n_tok; t++)\n"
                   "        ftt_quant_%s(g + (size_t)t * %uu, (uint8_t *)ap + (size_t)t * %lluu, %uu);\n",
                ft_dtype_name(ft_cg_act_type(k->format_aux)), ffn,
                (unsigned long long)ft_cg_act_row_bytes(k->format_aux, ffn), ffn);
    fprintf(o, "    ftt_matmul_%s(%uu, w_down, %lluu, ap, n_tok, 0, %uu, out, %uu);\n}\n\n", ft_cg_fname(k->format_aux),
            ffn, (unsigned long long)dn_rb, d, d);
}

/* ggml's IQ codebooks (runtime/format/iq_grids.h) as static tables of
 * the module, written only when a kernel computes an IQ grid format (they
 * are 21 KiB); the quants template reads them under FTT_HAVE_IQ_GRIDS. */
static void ft_cg_emit_u64s(FILE *o, const char *name, const uint64_t *v, size_t n)
{
    fprintf(o, "static const uint64_t %s[%zu] = {", name, n);
    for (size_t i = 0; i < n; i++)
        fprintf(o, "%s0x%016llxull,", i % 4 ? " " : "\n    ", (unsigned long long)v[i]);
    fputs("\n};\n", o);
}

static void ft_cg_emit_u32s(FILE *o, const char *name, const uint32_t *v, size_t n)
{
    fprintf(o, "static const uint32_t %s[%zu] = {", name, n);
    for (size_t i = 0; i < n; i++)
        fprintf(o, "%s0x%08xu,", i % 8 ? " " : "\n    ", v[i]);
    fputs("\n};\n", o);
}

static void ft_cg_emit_iq_grids(FILE *o)
{
    fputs("\n/* ---- ggml's IQ codebooks ---- */\n#define FTT_HAVE_IQ_GRIDS 1\n", o);
    fputs("static const uint8_t ftt_ksigns_iq2xs[128] = {", o);
    for (size_t i = 0; i < 128; i++)
        fprintf(o, "%s%u,", i % 16 ? " " : "\n    ", ft_ksigns_iq2xs[i]);
    fputs("\n};\n", o);
    ft_cg_emit_u64s(o, "ftt_iq2xxs_grid", ft_iq2xxs_grid, 256);
    ft_cg_emit_u64s(o, "ftt_iq2xs_grid", ft_iq2xs_grid, 512);
    ft_cg_emit_u64s(o, "ftt_iq2s_grid", ft_iq2s_grid, 1024);
    ft_cg_emit_u32s(o, "ftt_iq3xxs_grid", ft_iq3xxs_grid, 256);
    ft_cg_emit_u32s(o, "ftt_iq3s_grid", ft_iq3s_grid, 512);
    fputs("static const uint16_t ftt_iq1s_kgrid[2048] = {", o);
    for (size_t i = 0; i < 2048; i++)
        fprintf(o, "%s0x%04x,", i % 12 ? " " : "\n    ", ft_iq1s_kgrid[i]);
    fputs("\n};\n", o);
}

static int ft_cg_needs_iq_grids(const ft_cg_kreq_t *reqs, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if ((reqs[i].op != FT_KABI_OP_ATTN && reqs[i].op != FT_KABI_OP_DELTANET && reqs[i].op != FT_KABI_OP_MLA &&
             ft_iq_is_grid((ft_dtype_t)reqs[i].format)) ||
            (reqs[i].op == FT_KABI_OP_EXPERT && ft_iq_is_grid((ft_dtype_t)reqs[i].format_aux)))
            return 1;
    return 0;
}

static void ft_cg_emit_prologue(FILE *o, const char *isa, const ft_cg_template_t *ov, uint32_t n_ov,
                                int iq_grids)
{
    fprintf(o, "/* generated by ftc, do not edit.\n * CPU kernel module, ISA %s, ABI %u. */\n\n", isa,
            FT_KABI_VERSION);
    fputs(ft_cg_abi_header, o);
    if (iq_grids)
        ft_cg_emit_iq_grids(o);
    const int simd = strcmp(isa, "portable") != 0;
    const char *order[] = {"common", "rowloop", "quants", simd ? "tiled" : NULL, simd ? isa : "portable",
                           "fused", "deltanet", "mla"};
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        if (!order[i])
            continue;
        fprintf(o, "\n/* ---- template %s ---- */\n", order[i]);
        fputs(ft_cg_template(order[i], ov, n_ov), o);
    }
    fputs("\n/* ---- kernels ---- */\n\n", o);
}

ft_status_t ft_cg_cpu_emit_kernels(const ft_cg_kreq_t *reqs, uint32_t n, const char *isa,
                                   const ft_cg_template_t *override, uint32_t n_override,
                                   char **out_source)
{
    *out_source = NULL;
    if (!ft_cg_cpu_isa_valid(isa))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "codegen: unknown ISA '%s' (avx512, avx2 or portable)", isa ? isa : "(null)");
    for (uint32_t i = 0; i < n; i++) {
        ft_status_t st = ft_cg_check_req(&reqs[i], isa);
        if (st)
            return ft_status_annotate(st, "kernel %u", i);
    }
    char *body = NULL;
    size_t body_len = 0;
    FILE *o = open_memstream(&body, &body_len);
    if (!o)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "codegen: open_memstream failed");
    ft_cg_emit_prologue(o, isa, override, n_override, ft_cg_needs_iq_grids(reqs, n));
    for (uint32_t i = 0; i < n; i++) {
        switch (reqs[i].op) {
        case FT_KABI_OP_MATMUL: ft_cg_emit_matmul(o, &reqs[i]); break;
        case FT_KABI_OP_EXPERT: ft_cg_emit_expert(o, &reqs[i]); break;
        case FT_KABI_OP_NORM_PREPARE: ft_cg_emit_norm_prepare(o, &reqs[i]); break;
        case FT_KABI_OP_ROUTER: ft_cg_emit_router(o, &reqs[i]); break;
        case FT_KABI_OP_DELTANET: ft_cg_emit_deltanet(o, &reqs[i]); break;
        case FT_KABI_OP_MLA: ft_cg_emit_mla(o, &reqs[i]); break;
        default: ft_cg_emit_attn(o, &reqs[i]); break;
        }
    }
    if (fclose(o) != 0 || !body) {
        free(body);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "codegen: writing the kernel source failed");
    }
    /* The entry table lists the kernels libclang finds in the source, with
     * their keys read from the annotations: what is compiled is what the
     * table says. Parsing also reports any error in the templates. */
    char *table = NULL;
    ft_status_t st = ft_cg_cpu_entry_table(body, isa, &table);
    if (st) {
        free(body);
        return st;
    }
    const size_t tl = strlen(table);
    char *src = malloc(body_len + tl + 1);
    if (!src) {
        free(body);
        free(table);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "codegen: %zu bytes of source", body_len + tl);
    }
    memcpy(src, body, body_len);
    memcpy(src + body_len, table, tl + 1);
    free(body);
    free(table);
    st = ft_cg_cpu_check(src, isa);
    if (st) {
        free(src);
        return st;
    }
    *out_source = src;
    return FT_OK;
}

void ft_cg_cpu_function_at(const char *source, uint32_t line, char *buf, size_t buf_len)
{
    snprintf(buf, buf_len, "?");
    /* Start of each line up to `line`; the innermost definition is the last
     * line at column 0 that names an ftk_/ftt_ function before it. */
    const char *p = source;
    for (uint32_t l = 1; p && *p && l <= line; l++) {
        const char *end = strchr(p, '\n');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len && p[0] != ' ' && p[0] != '#' && p[0] != '/' && p[0] != '}' && p[0] != '{') {
            const char *paren = memchr(p, '(', len);
            const char *name = NULL;
            for (const char *q = p; paren && q < paren; q++)
                if ((!strncmp(q, "ftk_", 4) || !strncmp(q, "ftt_", 4)) && (q == p || q[-1] == ' ' || q[-1] == '*'))
                    name = q;
            if (name) {
                size_t nl = 0;
                while (name + nl < p + len && (name[nl] == '_' || (name[nl] >= 'a' && name[nl] <= 'z') ||
                                                (name[nl] >= '0' && name[nl] <= '9')))
                    nl++;
                snprintf(buf, buf_len, "%.*s", (int)nl, name);
            }
        }
        p = end ? end + 1 : NULL;
    }
}
