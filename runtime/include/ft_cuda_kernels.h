/* ft_cuda_kernels.h: the naming contract between codegen/cuda's emitter
 * and the CUDA backend's launcher: the weight formats the CUDA templates
 * compute and the short name each takes in an emitted kernel's name
 * ("ft_gemv_q4_k_k2048"), and the name of every kernel either side names:
 * the matrix products, norms, RoPE, attention, router, the shared
 * element-wise and data-movement kernels. One table, read by both sides
 * (the emitter names each kernel it writes through it, the launcher each
 * kernel it binds); it lives in the runtime
 * (backends/cuda/cuda_kernel_names.c) because the launcher must find the
 * kernels the compiler emitted.
 *
 * Versioned with the kernel ABI: a change to a name here is a change to
 * what emitted CUDA modules export, and bumps FT_KABI_VERSION
 * (ft_kernel_abi.h). Self-contained: only the C standard headers. */
#ifndef FT_CUDA_KERNELS_H
#define FT_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* The format's name in kernel names, or NULL when the CUDA templates do
 * not compute weights of that format (the formats runtime/format/dtype.c's
 * table flags FT_DTYPE_FLAG_CUDA; the name is the table's). dtype is a
 * weight format number: the value of runtime/format/dtype.h's ft_dtype_t,
 * which ft_kernel_abi.h mirrors as FT_KABI_FMT_* (the numbers are
 * _Static_assert'ed equal in runtime/format/dtype_mirrors.c). */
const char *ft_cuda_kernel_format(uint32_t dtype);

/* The RoPE kernel for heads of head_dim floats whose first rope_dim rotate:
 * "ft_rope_neox_h<head_dim>_r<rope_dim>" when neox != 0 (pairs (i, i +
 * rope_dim / 2), the plan's ROPE_NEOX) or "ft_rope_norm_h<head_dim>_r<rope_dim>"
 * when neox == 0 (adjacent pairs (2i, 2i + 1), ROPE_NORM: GGUF llama and
 * Mixtral). Every CUDA module has both. Both take (float *x, int n_heads,
 * const int *pos, int n_tok) and launch on grid (n_tok, n_heads), block
 * rope_dim / 2: x is [n_tok][n_heads][head_dim] in place, pos[t] token t's
 * position. Writes the NUL-terminated name to out (n_out bytes); returns
 * its length, or -1 when it does not fit (out then holds "" if n_out > 0). */
int ft_cuda_kernel_rope_name(int neox, uint32_t head_dim, uint32_t rope_dim, char *out,
                             size_t n_out);

/* The name-building functions below write the NUL-terminated name to out
 * (n_out bytes) and return its length, or -1 when it does not fit or the
 * arguments name no kernel (out then holds "" if n_out > 0). */

/* The RoPE kernels that read their frequencies from a table instead of
 * computing theta^(-2i / rope_dim) (YaRN, whose frequencies and cos/sin
 * scale program.c computes): "ft_rope_tab_neox_h<HD>_r<RD>" and
 * "ft_rope_tab_norm_h<HD>_r<RD>", taking (float *x, int n_heads, const int
 * *pos, int n_tok, const float *inv_freq, float mscale) on the plain
 * kernels' grid; cos and sin are times mscale. */
int ft_cuda_kernel_rope_table_name(int neox, uint32_t head_dim, uint32_t rope_dim, char *out,
                                   size_t n_out);

/* Matrix products over weights of format dtype with cols columns:
 * "ft_gemv_<fmt>_k<cols>" (one token), "ft_gemv_experts_<fmt>_k<cols>"
 * (one token, grouped over expert slots), "ft_gemm_<fmt>_k<cols>" (token
 * tiles). -1 also for a format without CUDA kernels. */
typedef enum ft_cuda_matmul_kind {
    FT_CUDA_GEMV = 0,
    FT_CUDA_GEMV_EXPERTS = 1,
    FT_CUDA_GEMM = 2,
} ft_cuda_matmul_kind_t;
int ft_cuda_kernel_matmul_name(ft_cuda_matmul_kind_t kind, uint32_t dtype, uint32_t cols, char *out,
                               size_t n_out);

/* RMSNorm over rows of d floats: "ft_rmsnorm_d<d>". */
int ft_cuda_kernel_rmsnorm_name(uint32_t d, char *out, size_t n_out);

/* Decode attention for heads of head_dim over n_heads query and n_kv_heads
 * KV heads: "ft_attn_decode[_pos][_sink][_f16]_h<HD>_q<NH>_kv<NKV>". The
 * flags: FT_CUDA_ATTN_POS reads the key count from device memory (pos[0] +
 * 1: the decode graphs' form), FT_CUDA_ATTN_F16 reads an f16 KV cache,
 * FT_CUDA_ATTN_SINKS takes one more argument, const float *sinks
 * [n_heads], each head's sink logit in its softmax denominator. */
enum { FT_CUDA_ATTN_POS = 1, FT_CUDA_ATTN_F16 = 2, FT_CUDA_ATTN_SINKS = 4 };
int ft_cuda_kernel_attn_name(unsigned flags, uint32_t head_dim, uint32_t n_heads,
                             uint32_t n_kv_heads, char *out, size_t n_out);

/* The router's choice of k of n_experts: "ft_router_topk_e<NE>_k<K>"
 * (softmax top-k, the module's norm_topk_prob), or with ext != 0
 * "ft_router_ext_e<NE>_k<K>": softmax or sigmoid scores, an optional
 * selection bias, group-limited choice, renormalization and a scale, all
 * launch arguments (codegen/cuda/templates/variants.cuh). */
int ft_cuda_kernel_router_name(int ext, uint32_t n_experts, uint32_t k, char *out, size_t n_out);

/* The kernels whose names take no shape (written out in the templates,
 * or emitted once per module). */
#define FT_CUDA_KERNEL_KV_APPEND "ft_kv_append"
#define FT_CUDA_KERNEL_KV_APPEND_F16 "ft_kv_append_f16"
#define FT_CUDA_KERNEL_EXPERT_COPY "ft_expert_copy"
#define FT_CUDA_KERNEL_ROWS_GATHER "ft_rows_gather"
#define FT_CUDA_KERNEL_ROWS_SCATTER_ADD "ft_rows_scatter_add"
#define FT_CUDA_KERNEL_SWIGLU "ft_swiglu"
/* (g, u, h, n, alpha, limit): gpt-oss's clamped SwiGLU, as ft_op_swiglu_oai. */
#define FT_CUDA_KERNEL_SWIGLU_OAI "ft_swiglu_oai"
/* (g, u, h, n): h = sigmoid(g) * u, the gated attention output, as ft_op_sigmoid_mul. */
#define FT_CUDA_KERNEL_SIGMOID_MUL "ft_sigmoid_mul"
/* (y, b, sel, n_rows, cols): y[r] += b + (sel ? sel[r] : 0) * cols. */
#define FT_CUDA_KERNEL_BIAS_ADD "ft_bias_add"
/* Gated DeltaNet, one token (templates/deltanet.cuh): (x, w, window, y, C, K)
 * the causal conv + SiLU of C channels, one thread each; (y, b, a, dt_bias,
 * A, S, out, hd, n_k, n_v, tiled, eps) the recurrence, one block of
 * FT_CUDA_DELTANET_THREADS per value head. */
#define FT_CUDA_KERNEL_DELTANET_CONV "ft_deltanet_conv"
#define FT_CUDA_KERNEL_DELTANET_RECUR "ft_deltanet_recur"
#define FT_CUDA_DELTANET_THREADS 128u
#define FT_CUDA_DELTANET_MAX_HD 1024u
/* (g, h, n_rows, cols): h[r] *= sigmoid(g[r]), the shared expert's gate. */
#define FT_CUDA_KERNEL_SIGMOID_BCAST "ft_sigmoid_bcast_mul"

#endif
