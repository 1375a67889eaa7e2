/* CUDA code generation: emits CUDA C specialized to one model's shapes and
 * weight formats from the templates in codegen/cuda/templates/, and
 * compiles it with NVRTC into one cubin per target architecture plus PTX
 * for the lowest one (the driver JIT-compiles it for newer GPUs).
 *
 * Emitted kernels (extern "C", names stable for the runtime's launcher):
 *   ft_gemv_<fmt>_k<cols>(w, x, y, rows)                    one row per warp
 *   ft_gemv_experts_<fmt>_k<cols>(slots, w_offset, x, x_stride, y, rows)
 *   ft_gemm_<fmt>_k<cols>(w, x, ldx, y, ldy, rows, n_tok)   prefill tiles
 *   ft_rmsnorm_d<D>(x, w, y, n_rows)   for d_model and head_dim (q/k norm)
 *   ft_rope_neox_h<HD>_r<RD>(x, n_heads, pos, n_tok)   pairs (i, i + RD/2)
 *   ft_rope_norm_h<HD>_r<RD>(x, n_heads, pos, n_tok)   pairs (2i, 2i + 1)
 *       (both in every module; names from ft_cuda_kernel_rope_name)
 *   ft_attn_decode_h<HD>_q<NH>_kv<NKV>(q, k, v, kv_stride, n_pos, scratch,
 *                                      max_pos, out)   f32 KV cache
 *   ft_attn_decode_f16_h<HD>_q<NH>_kv<NKV>(...)        f16 KV cache
 *   ft_router_topk_e<NE>_k<K>(logits, n_tok, ids, weights)
 *   ft_attn_decode_pos_h<HD>_q<NH>_kv<NKV>(q, k, v, kv_stride, pos, scratch,
 *                                          max_pos, out)  n_pos = pos[0] + 1
 *   ft_attn_decode_pos_f16_h<HD>_q<NH>_kv<NKV>(...)    f16 KV cache
 *   ft_kv_append(k, v, k_cache, v_cache, kv_dim, pos, n_tok)
 *   ft_kv_append_f16(...)   the same into an f16 cache (round to nearest even)
 * Both KV element types are emitted; the runtime binds the plan's kv_format.
 *   ft_expert_copy, ft_rows_gather, ft_rows_scatter_add, ft_swiglu
 * Only where the model has the variant (spec.variants):
 *   ft_bias_add(y, b, sel, n_rows, cols)
 *   ft_swiglu_oai(g, u, h, n, alpha, limit)
 *   ft_sigmoid_mul(g, u, h, n)   h = sigmoid(g) * u: the gated attention output
 *   ft_deltanet_conv, ft_deltanet_recur   Gated DeltaNet, one token (deltanet.cuh)
 *   ft_sigmoid_bcast_mul(g, h, n_rows, cols)   the shared expert's sigmoid gate
 *   ft_attn_decode[_pos]_sink[_f16]_h<HD>_q<NH>_kv<NKV>(..., out, sinks)
 *   ft_rope_tab_{neox,norm}_h<HD>_r<RD>(x, n_heads, pos, n_tok, inv_freq, mscale)
 *   ft_router_ext_e<NE>_k<K>(logits, n_tok, ids, weights, sel_bias, scoring,
 *                            n_groups, n_groups_used, scale, norm)
 * Every name comes from the one table, runtime/include/ft_cuda_kernels.h.
 * Launch shapes are in cuda_codegen's kernel table (ft_cg_cuda_kernel_t).
 * Generated source carries a "do not edit" banner and is never committed.
 * Compiler side only: the runtime never links NVRTC. */
#ifndef FT_CODEGEN_CUDA_CODEGEN_H
#define FT_CODEGEN_CUDA_CODEGEN_H

#include "freetoken.h"
#include "ir.h"

#include <stddef.h>
#include <stdint.h>

enum { FT_CG_CUDA_MAX_MATMULS = 32, FT_CG_CUDA_MAX_ARCHS = 16 };

typedef enum ft_cg_cuda_op {
    FT_CG_CUDA_OP_GEMV = 0,
    FT_CG_CUDA_OP_GEMV_EXPERTS = 1,
    FT_CG_CUDA_OP_GEMM = 2,
    FT_CG_CUDA_OP_RMSNORM = 3,
    FT_CG_CUDA_OP_ROPE = 4,
    FT_CG_CUDA_OP_ATTN_DECODE = 5,
    FT_CG_CUDA_OP_ROUTER_TOPK = 6,
    FT_CG_CUDA_OP_EXPERT_COPY = 7,
    FT_CG_CUDA_OP_ROWS_GATHER = 8,
    FT_CG_CUDA_OP_ROWS_SCATTER_ADD = 9,
    FT_CG_CUDA_OP_SWIGLU = 10,
    FT_CG_CUDA_OP_KV_APPEND = 11,
    FT_CG_CUDA_OP_ATTN_DECODE_POS = 12,
    FT_CG_CUDA_OP_ROPE_NORM = 13,  /* adjacent pairs; FT_CG_CUDA_OP_ROPE: NeoX pairs */
    FT_CG_CUDA_OP_ROPE_TABLE = 14, /* either layout, frequencies and scale from the launch (YaRN) */
    FT_CG_CUDA_OP_ROUTER_EXT = 15, /* sigmoid/grouped/biased/scaled routing */
    FT_CG_CUDA_OP_BIAS_ADD = 16,
    FT_CG_CUDA_OP_SWIGLU_OAI = 17,
    FT_CG_CUDA_OP_SIGMOID_MUL = 18,
    FT_CG_CUDA_OP_DELTANET_CONV = 19,
    FT_CG_CUDA_OP_DELTANET_RECUR = 20,
    FT_CG_CUDA_OP_SIGMOID_BCAST = 21,
} ft_cg_cuda_op_t;

/* The op variants a model needs kernels for beyond the plain decoder's
 * (ft_cg_cuda_spec_t.variants; templates/variants.cuh). */
enum {
    FT_CG_CUDA_VAR_BIAS = 1,       /* LINEAR, router logit or expert biases: ft_bias_add */
    FT_CG_CUDA_VAR_SWIGLU_OAI = 2, /* clamped SwiGLU: ft_swiglu_oai */
    FT_CG_CUDA_VAR_SINKS = 4,      /* attention sinks: the ft_attn_decode*_sink* forms */
    FT_CG_CUDA_VAR_ROPE_TABLE = 8, /* YaRN RoPE: ft_rope_tab_{neox,norm} */
    FT_CG_CUDA_VAR_ROUTER_EXT =
        16, /* sigmoid, grouped, selection-biased or scaled router: ft_router_ext */
    FT_CG_CUDA_VAR_OUT_GATE = 32, /* the gated attention output: ft_sigmoid_mul */
    FT_CG_CUDA_VAR_DELTANET = 64, /* Gated DeltaNet layers: ft_deltanet_conv, ft_deltanet_recur */
    FT_CG_CUDA_VAR_SHARED_GATE = 128 /* a sigmoid-gated shared expert: ft_sigmoid_bcast_mul */
};

/* One weight matrix shape the model multiplies by: format and columns
 * (the reduction length). experts != 0: also emit the grouped GEMV. */
typedef struct ft_cg_cuda_matmul {
    ft_dtype_t wtype;
    uint32_t cols;
    int experts;
} ft_cg_cuda_matmul_t;

/* What the emitter specializes on: a Qwen3-MoE- or Mixtral-style decoder
 * (the RoPE pair layout is not in it: every module has both kernels). */
typedef struct ft_cg_cuda_spec {
    uint32_t d_model;
    uint32_t n_heads, n_kv_heads, head_dim, rope_dim;
    double rope_theta;
    float norm_eps;
    /* q/k norms over the whole projection (OLMoE, MiniMax-M2): RMSNorm
     * kernels of n_heads * head_dim and n_kv_heads * head_dim too */
    int qk_norm_full;
    /* latent attention (DeepSeek): RMSNorm kernels of its q and KV ranks */
    uint32_t q_lora_rank, kv_lora_rank;
    uint32_t n_experts, n_experts_used; /* 0 experts: no router kernel */
    int norm_topk_prob;
    unsigned variants; /* FT_CG_CUDA_VAR_* */
    uint32_t dn_head_dim; /* Gated DeltaNet layers' head size (its gated norm's width), or 0 */
    uint32_t n_matmuls;
    ft_cg_cuda_matmul_t matmuls[FT_CG_CUDA_MAX_MATMULS];
} ft_cg_cuda_spec_t;

/* The spec of an IR model: every projection's format and columns (expert
 * tensors marked), uniform attention and MoE shapes. UNSUPPORTED names the
 * tensor or layer the CUDA kernels cannot compute (a format other than
 * F32/F16/BF16/Q8_0/Q4_0/Q4_K/Q6_K, layers with differing head shapes), or
 * a model without RMSNorm or without RoPE (FT_ROPE_NORM and FT_ROPE_NEOX
 * both have kernels). */
FT_WARN_UNUSED ft_status_t ft_cg_cuda_spec_from_ir(const ft_ir_model_t *model, ft_cg_cuda_spec_t *out_spec);

/* 1 when the CUDA templates compute weight format wtype. */
int ft_cg_cuda_supports(ft_dtype_t wtype);

typedef struct ft_cg_cuda_kernel {
    char name[64];
    ft_cg_cuda_op_t op;
    ft_dtype_t wtype;       /* matmuls; FT_DTYPE_F16 for the f16-KV attention and KV
                               append; FT_DTYPE_INVALID otherwise */
    uint32_t cols;          /* matmuls: reduction length; norms: D */
    uint32_t block_threads; /* blockDim.x to launch with */
} ft_cg_cuda_kernel_t;

/* Emitted lines [first_line, last_line] (1-based) came from template
 * `name`: compile diagnostics are attributed through this table. */
typedef struct ft_cg_cuda_section {
    char name[64]; /* "template common" or "kernel ft_gemv_q8_0_k2048" */
    uint32_t first_line, last_line;
} ft_cg_cuda_section_t;

typedef struct ft_cg_cuda_source {
    char *text; /* NUL-terminated CUDA C, owned */
    size_t len;
    uint32_t n_kernels;
    ft_cg_cuda_kernel_t *kernels; /* owned */
    uint32_t n_sections;
    ft_cg_cuda_section_t *sections; /* owned */
    size_t cap_text;                /* bytes allocated for text */
    uint32_t n_lines;               /* lines emitted so far */
} ft_cg_cuda_source_t;

/* Emits the CUDA C for spec into out_source (filled; release with
 * ft_cg_cuda_source_free). Deterministic: same spec, same bytes. */
FT_WARN_UNUSED ft_status_t ft_cg_cuda_emit(const ft_cg_cuda_spec_t *spec, ft_cg_cuda_source_t *out_source);
void ft_cg_cuda_source_free(ft_cg_cuda_source_t *source);

/* Adds a template section to an emitted source (used by tests to inject a
 * deliberately broken template; the emitter uses it for the real ones). */
FT_WARN_UNUSED ft_status_t ft_cg_cuda_source_append(ft_cg_cuda_source_t *source, const char *section_name,
                                     const char *text);

/* Compiled images: one cubin per target ("sm_90") and PTX for the lowest
 * target ("compute_80"). */
typedef struct ft_cg_cuda_image {
    uint32_t sm;   /* 10 * major + minor: 80, 86, 89, 90, 100, 120 */
    int is_ptx;    /* 0: cubin (ELF), 1: PTX text (NUL included) */
    uint8_t *data; /* owned */
    size_t n_bytes;
} ft_cg_cuda_image_t;

typedef struct ft_cg_cuda_images {
    uint32_t n_images;
    ft_cg_cuda_image_t images[FT_CG_CUDA_MAX_ARCHS + 1];
} ft_cg_cuda_images_t;

/* The default targets: sm_80, sm_86, sm_89, sm_90, sm_100, sm_120. */
extern const uint32_t ft_cg_cuda_default_archs[6];

/* Parses "sm_80,sm_90" (or "80,90") into archs (at most max entries,
 * ascending, no duplicates). INVALID_ARGUMENT names the bad item. */
FT_WARN_UNUSED ft_status_t ft_cg_cuda_parse_archs(const char *list, uint32_t *archs, uint32_t max,
                                   uint32_t *out_n);

/* 1 when this build can compile (NVRTC found at configure time). */
int ft_cg_cuda_nvrtc_available(void);

/* Compiles source for each of the n archs into a cubin, plus PTX for the
 * lowest, into out_images (filled; release with ft_cg_cuda_images_free,
 * also after a failure). UNAVAILABLE when built without NVRTC. A compile
 * error returns FORMAT with the target, the template section and kernels
 * the first error falls in, and NVRTC's log. */
FT_WARN_UNUSED ft_status_t ft_cg_cuda_compile(const ft_cg_cuda_source_t *source, const uint32_t *archs, uint32_t n,
                               ft_cg_cuda_images_t *out_images);
void ft_cg_cuda_images_free(ft_cg_cuda_images_t *images);

#endif
