/* The fake driver's kernel table: every kernel name codegen/cuda's emitter
 * produces (cuda_codegen.h lists them), parsed back into its template
 * arguments, with the emulator that runs it and its parameter sizes.
 *
 *   name                                   dims[]
 *   ft_gemv_<fmt>_k<cols>                  {cols}           wtype = fmt
 *   ft_gemv_experts_<fmt>_k<cols>          {cols}           wtype = fmt
 *   ft_gemm_<fmt>_k<cols>                  {cols}           wtype = fmt
 *   ft_rmsnorm_d<D>                        {D}
 *   ft_rope_neox_h<HD>_r<RD>               {HD, RD}
 *   ft_rope_norm_h<HD>_r<RD>               {HD, RD}
 *   ft_attn_decode_h<HD>_q<NH>_kv<NKV>     {HD, NH, NKV}
 *   ft_attn_decode_f16_h<HD>_q<NH>_kv<NKV> {HD, NH, NKV}    wtype = f16 (KV)
 *   (and the _pos_ forms of both, and the _sink forms of all four:
 *    ft_attn_decode[_pos]_sink[_f16]_h..., sinks = 1)
 *   ft_router_topk_e<NE>_k<K>              {NE, K}
 *   ft_router_ext_e<NE>_k<K>               {NE, K}
 *   ft_rope_tab_neox_h<HD>_r<RD>, ft_rope_tab_norm_h<HD>_r<RD>  {HD, RD}
 *   ft_bias_add, ft_swiglu_oai, ft_sigmoid_mul
 *   ft_deltanet_conv, ft_deltanet_recur, ft_sigmoid_bcast_mul
 *   ft_kv_append, ft_kv_append_f16
 *   ft_expert_copy, ft_rows_gather, ft_rows_scatter_add, ft_swiglu
 *   ft_empty (the profiler's launch-latency kernel: does nothing)
 *
 * <fmt> is any format name ft_dtype_from_name knows whose rows
 * ft_dequantize_row can expand (ft_quant_supported), so a format the
 * runtime learns works here without a change. */
#include "fake_cuda.h"

#include "format/convert.h"

#include <string.h>

/* Reads a decimal in [1, max] from *s up to a non-digit; advances *s. */
static int ft_fake_number(const char **s, uint32_t max, uint32_t *out)
{
    uint64_t v = 0;
    const char *p = *s;
    if (*p < '1' || *p > '9') return 0; /* no sign, no leading zero */
    for (; *p >= '0' && *p <= '9'; p++) {
        v = v * 10 + (uint64_t)(*p - '0');
        if (v > max) return 0;
    }
    *s = p;
    *out = (uint32_t)v;
    return 1;
}

/* "<fmt>_k<cols>": the format name ends at the last "_k". */
static int ft_fake_parse_matmul(const char *rest, ft_fake_kernel_t *k)
{
    const char *kpos = NULL;
    for (const char *p = strstr(rest, "_k"); p; p = strstr(p + 1, "_k"))
        kpos = p;
    if (!kpos || kpos == rest || (size_t)(kpos - rest) >= 16) return 0;
    char fmt[16];
    memcpy(fmt, rest, (size_t)(kpos - rest));
    fmt[kpos - rest] = 0;
    const char *p = kpos + 2;
    uint32_t cols;
    if (!ft_fake_number(&p, 1u << 20, &cols) || *p) return 0;
    const ft_dtype_t t = ft_dtype_from_name(fmt);
    const ft_dtype_info_t *info = ft_dtype_info(t);
    if (!info || !ft_quant_supported(t) || strcmp(info->name, fmt) != 0) return 0;
    if (cols % 32 || cols % info->block_elems) return 0;
    k->wtype = t;
    k->dims[0] = cols;
    return 1;
}

static int ft_fake_parse_rmsnorm(const char *rest, ft_fake_kernel_t *k)
{
    return ft_fake_number(&rest, 1u << 20, &k->dims[0]) && !*rest;
}

static int ft_fake_parse_rope(const char *rest, ft_fake_kernel_t *k)
{
    if (!ft_fake_number(&rest, 1024, &k->dims[0]) || strncmp(rest, "_r", 2) != 0) return 0;
    rest += 2;
    return ft_fake_number(&rest, k->dims[0], &k->dims[1]) && !*rest && k->dims[1] % 2 == 0;
}

static int ft_fake_parse_attn(const char *rest, ft_fake_kernel_t *k)
{
    if (!ft_fake_number(&rest, 1024, &k->dims[0]) || strncmp(rest, "_q", 2) != 0) return 0;
    rest += 2;
    if (!ft_fake_number(&rest, 4096, &k->dims[1]) || strncmp(rest, "_kv", 3) != 0) return 0;
    rest += 3;
    return ft_fake_number(&rest, k->dims[1], &k->dims[2]) && !*rest && k->dims[1] % k->dims[2] == 0;
}

/* The f16-KV forms: the same shape, the cache's element in wtype. */
static int ft_fake_parse_attn_f16(const char *rest, ft_fake_kernel_t *k)
{
    if (!ft_fake_parse_attn(rest, k)) return 0;
    k->wtype = FT_DTYPE_F16;
    return 1;
}

/* The forms with sink logits. */
static int ft_fake_parse_attn_sink(const char *rest, ft_fake_kernel_t *k)
{
    return ft_fake_parse_attn(rest, k) && (k->sinks = 1);
}

static int ft_fake_parse_attn_sink_f16(const char *rest, ft_fake_kernel_t *k)
{
    return ft_fake_parse_attn_f16(rest, k) && (k->sinks = 1);
}

static int ft_fake_parse_router(const char *rest, ft_fake_kernel_t *k)
{
    if (!ft_fake_number(&rest, 1024, &k->dims[0]) || strncmp(rest, "_k", 2) != 0) return 0;
    rest += 2;
    return ft_fake_number(&rest, 32, &k->dims[1]) && !*rest && k->dims[1] <= k->dims[0];
}

static int ft_fake_run_empty(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    return FT_FAKE_SUCCESS;
}

/* Longer prefixes first where one extends another (gemv_experts, gemv). */
static const ft_fake_kind_t ft_fake_kinds[] = {
    /* (slots, w_offset, x, x_stride, y, rows) */
    {"ft_gemv_experts_",
     0,
     0,
     ft_fake_parse_matmul,
     ft_fake_run_gemv_experts,
     6,
     {8, 8, 8, 8, 8, 4}},
    /* (w, x, y, rows) */
    {"ft_gemv_", 0, 0, ft_fake_parse_matmul, ft_fake_run_gemv, 4, {8, 8, 8, 4}},
    /* (w, x, ldx, y, ldy, rows, n_tok) */
    {"ft_gemm_", 0, 0, ft_fake_parse_matmul, ft_fake_run_gemm, 7, {8, 8, 4, 8, 4, 4, 4}},
    /* (x, w, y, n_rows) */
    {"ft_rmsnorm_d", 0, 1, ft_fake_parse_rmsnorm, ft_fake_run_rmsnorm, 4, {8, 8, 8, 4}},
    /* (x, n_heads, pos, n_tok) */
    {"ft_rope_neox_h", 0, 1, ft_fake_parse_rope, ft_fake_run_rope, 4, {8, 4, 8, 4}},
    {"ft_rope_norm_h", 0, 1, ft_fake_parse_rope, ft_fake_run_rope_norm, 4, {8, 4, 8, 4}},
    /* (q, k, v, kv_stride, n_pos, scratch, max_pos, out) */
    {"ft_attn_decode_h",
     0,
     0,
     ft_fake_parse_attn,
     ft_fake_run_attn_decode,
     8,
     {8, 8, 8, 4, 4, 8, 4, 8}},
    /* (q, k, v, kv_stride, pos, scratch, max_pos, out): n_pos = pos[0] + 1 */
    {"ft_attn_decode_pos_h",
     0,
     0,
     ft_fake_parse_attn,
     ft_fake_run_attn_decode_pos,
     8,
     {8, 8, 8, 4, 8, 8, 4, 8}},
    /* the same over an f16 cache */
    {"ft_attn_decode_f16_h",
     0,
     0,
     ft_fake_parse_attn_f16,
     ft_fake_run_attn_decode,
     8,
     {8, 8, 8, 4, 4, 8, 4, 8}},
    {"ft_attn_decode_pos_f16_h",
     0,
     0,
     ft_fake_parse_attn_f16,
     ft_fake_run_attn_decode_pos,
     8,
     {8, 8, 8, 4, 8, 8, 4, 8}},
    /* the four forms with sinks: (..., out, sinks) */
    {"ft_attn_decode_sink_h",
     0,
     0,
     ft_fake_parse_attn_sink,
     ft_fake_run_attn_decode,
     9,
     {8, 8, 8, 4, 4, 8, 4, 8, 8}},
    {"ft_attn_decode_pos_sink_h",
     0,
     0,
     ft_fake_parse_attn_sink,
     ft_fake_run_attn_decode_pos,
     9,
     {8, 8, 8, 4, 8, 8, 4, 8, 8}},
    {"ft_attn_decode_sink_f16_h",
     0,
     0,
     ft_fake_parse_attn_sink_f16,
     ft_fake_run_attn_decode,
     9,
     {8, 8, 8, 4, 4, 8, 4, 8, 8}},
    {"ft_attn_decode_pos_sink_f16_h",
     0,
     0,
     ft_fake_parse_attn_sink_f16,
     ft_fake_run_attn_decode_pos,
     9,
     {8, 8, 8, 4, 8, 8, 4, 8, 8}},
    /* (x, n_heads, pos, n_tok, inv_freq, mscale) */
    {"ft_rope_tab_neox_h",
     0,
     0,
     ft_fake_parse_rope,
     ft_fake_run_rope_tab_neox,
     6,
     {8, 4, 8, 4, 8, 4}},
    {"ft_rope_tab_norm_h",
     0,
     0,
     ft_fake_parse_rope,
     ft_fake_run_rope_tab_norm,
     6,
     {8, 4, 8, 4, 8, 4}},
    /* (logits, n_tok, ids, weights, sel_bias, scoring, n_groups, n_groups_used, scale, norm) */
    {"ft_router_ext_e",
     0,
     0,
     ft_fake_parse_router,
     ft_fake_run_router_ext,
     10,
     {8, 4, 8, 8, 8, 4, 4, 4, 4, 4}},
    /* (y, b, sel, n_rows, cols) */
    {"ft_bias_add", 1, 0, NULL, ft_fake_run_bias_add, 5, {8, 8, 8, 4, 4}},
    /* (g, u, h, n, alpha, limit) */
    {"ft_swiglu_oai", 1, 0, NULL, ft_fake_run_swiglu_oai, 6, {8, 8, 8, 4, 4, 4}},
    /* (g, u, h, n) */
    {"ft_sigmoid_mul", 1, 0, NULL, ft_fake_run_sigmoid_mul, 4, {8, 8, 8, 4}},
    /* (x, w, window, y, C, K) */
    {"ft_deltanet_conv", 1, 0, NULL, ft_fake_run_deltanet_conv, 6, {8, 8, 8, 8, 4, 4}},
    /* (y, b, a, dt_bias, A, S, out, hd, n_k, n_v, tiled, eps) */
    {"ft_deltanet_recur",
     1,
     0,
     NULL,
     ft_fake_run_deltanet_recur,
     12,
     {8, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4}},
    /* (g, h, n_rows, cols) */
    {"ft_sigmoid_bcast_mul", 1, 0, NULL, ft_fake_run_sigmoid_bcast_mul, 4, {8, 8, 4, 4}},
    /* (k, v, k_cache, v_cache, kv_dim, pos, n_tok) */
    {"ft_kv_append", 1, 0, NULL, ft_fake_run_kv_append, 7, {8, 8, 8, 8, 4, 8, 4}},
    {"ft_kv_append_f16", 1, 0, NULL, ft_fake_run_kv_append_f16, 7, {8, 8, 8, 8, 4, 8, 4}},
    /* (logits, n_tok, ids, weights) */
    {"ft_router_topk_e", 0, 1, ft_fake_parse_router, ft_fake_run_router_topk, 4, {8, 4, 8, 8}},
    /* (src, dst, n_bytes) */
    {"ft_expert_copy", 1, 0, NULL, ft_fake_run_expert_copy, 3, {8, 8, 8}},
    /* (x, ldx, idx, n, out, cols) */
    {"ft_rows_gather", 1, 0, NULL, ft_fake_run_rows_gather, 6, {8, 4, 8, 4, 8, 4}},
    /* (in, idx, weight, n, y, ldy, cols) */
    {"ft_rows_scatter_add", 1, 0, NULL, ft_fake_run_rows_scatter_add, 7, {8, 8, 8, 4, 8, 4, 4}},
    /* (g, u, h, n) */
    {"ft_swiglu", 1, 0, NULL, ft_fake_run_swiglu, 4, {8, 8, 8, 4}},
    /* () the profiler's launch-latency kernel (hwprofiles/gpu_measure.c) */
    {"ft_empty", 1, 0, NULL, ft_fake_run_empty, 0, {0}},
};

int ft_fake_kernel_parse(const char *name, ft_fake_kernel_t *k)
{
    memset(k, 0, sizeof(*k));
    for (size_t i = 0; i < sizeof(ft_fake_kinds) / sizeof(ft_fake_kinds[0]); i++) {
        const ft_fake_kind_t *kind = &ft_fake_kinds[i];
        const size_t n = strlen(kind->prefix);
        if (strncmp(name, kind->prefix, n) != 0) continue;
        if (kind->exact ? name[n] == 0 : kind->parse(name + n, k)) {
            k->kind = kind;
            return 1;
        }
        memset(k, 0, sizeof(*k));
    }
    return 0;
}

int ft_fake_kernel_run(const ft_fake_kernel_t *k, const ft_fake_launch_t *l)
{
    if (!k->kind) return FT_FAKE_ERROR_INVALID_HANDLE;
    if (k->kind->needs_spec && !k->spec.present) return FT_FAKE_ERROR_NOT_SUPPORTED;
    for (int i = 0; i < 3; i++)
        if (!l->grid[i] || !l->block[i]) return FT_FAKE_ERROR_INVALID_VALUE;
    if ((uint64_t)l->block[0] * l->block[1] * l->block[2] > 1024)
        return FT_FAKE_ERROR_INVALID_VALUE;
    for (uint32_t i = 0; i < k->kind->n_args; i++)
        if (!l->params || !l->params[i]) return FT_FAKE_ERROR_INVALID_VALUE;
    return k->kind->run(k, l);
}

float ft_fake_warp_sum(float v[32])
{
    /* ft_warp_sum: for o = 16 .. 1, every lane adds lane ^ o's value. */
    for (int o = 16; o > 0; o >>= 1) {
        float t[32];
        for (int i = 0; i < 32; i++)
            t[i] = v[i] + v[i ^ o];
        memcpy(v, t, sizeof(t));
    }
    return v[0];
}

uint32_t ft_fake_block_warps(const ft_fake_launch_t *l)
{
    return l->block[0] % 32 || l->block[1] != 1 || l->block[2] != 1 ? 0 : l->block[0] / 32;
}
