/* The model IR: what a model is, independent of the file it came from.
 * Hyperparameters, one block description per layer, the tensor table
 * (canonical names, roles, formats, shapes, where the bytes are) and the
 * tokenizer. Built by models/ from an ft_src_model_t; lowered by the
 * compiler into a plan + FTW weights.
 *
 * Enum values mirror runtime/format/plan.proto and never change. */
#ifndef FT_IR_IR_H
#define FT_IR_IR_H

#include "freetoken.h"
#include "../runtime/base/arena.h"
#include "../runtime/format/dtype.h"
#include "source.h"
#include "tokenizer_ir.h"

#include <stdint.h>
#include <stdio.h>

typedef enum ft_arch {
    FT_ARCH_UNKNOWN = 0,
    FT_ARCH_QWEN3MOE = 1,
    FT_ARCH_MIXTRAL = 2,   /* GGUF "llama" with experts, HF MixtralForCausalLM */
    FT_ARCH_GPT_OSS = 3,   /* GGUF "gpt-oss", HF GptOssForCausalLM */
    FT_ARCH_GLM4MOE = 4,   /* GLM-4.5/4.6/4.7: GGUF "glm4moe", HF Glm4MoeForCausalLM */
    FT_ARCH_QWEN35MOE = 5, /* Qwen3.5/3.6 MoE hybrids: GGUF "qwen35moe" */
    FT_ARCH_QWEN3NEXT = 6, /* Qwen3-Next: GGUF "qwen3next" */
    FT_ARCH_OLMOE = 7,     /* OLMoE: GGUF "olmoe", HF OlmoeForCausalLM */
    FT_ARCH_DEEPSEEK2 = 8, /* DeepSeek V3/R1: GGUF "deepseek2", HF DeepseekV3ForCausalLM */
    FT_ARCH_MINIMAX_M2 = 9, /* MiniMax-M2: GGUF "minimax-m2", HF MiniMaxM2ForCausalLM */
} ft_arch_t;

typedef enum ft_norm_kind { FT_NORM_RMS = 0, FT_NORM_LAYER = 1 } ft_norm_kind_t;
typedef enum ft_rope_kind { FT_ROPE_NONE = 0, FT_ROPE_NORM = 1, FT_ROPE_NEOX = 2 } ft_rope_kind_t;
typedef enum ft_attn_kind {
    FT_ATTN_NONE = 0,
    FT_ATTN_GQA = 1,
    FT_ATTN_MLA = 2,
    FT_ATTN_GATED_DELTANET = 3,
} ft_attn_kind_t;
typedef enum ft_router_scoring { FT_ROUTER_SOFTMAX = 0, FT_ROUTER_SIGMOID = 1 } ft_router_scoring_t;
/* FT_ACT_SIGMOID gates, it is no FFN activation: GLU with it is
 * sigmoid(inputs[0]) * inputs[1] (the gated attention output). */
typedef enum ft_activation {
    FT_ACT_SILU = 0,
    FT_ACT_GELU = 1,
    FT_ACT_SWIGLU_OAI = 2,
    FT_ACT_SIGMOID = 3,
} ft_activation_t;

typedef enum ft_tensor_role {
    FT_ROLE_UNKNOWN = 0,
    FT_ROLE_TOKEN_EMBD = 1,
    FT_ROLE_OUTPUT_NORM = 2,
    FT_ROLE_OUTPUT = 3,
    FT_ROLE_ATTN_NORM = 4,
    FT_ROLE_ATTN_Q = 5,
    FT_ROLE_ATTN_K = 6,
    FT_ROLE_ATTN_V = 7,
    FT_ROLE_ATTN_O = 8,
    FT_ROLE_ATTN_Q_NORM = 9,
    FT_ROLE_ATTN_K_NORM = 10,
    FT_ROLE_FFN_NORM = 11,
    FT_ROLE_FFN_ROUTER = 12,
    FT_ROLE_FFN_GATE_EXPS = 13,
    FT_ROLE_FFN_UP_EXPS = 14,
    FT_ROLE_FFN_DOWN_EXPS = 15,
    FT_ROLE_FFN_GATE = 16,
    FT_ROLE_FFN_UP = 17,
    FT_ROLE_FFN_DOWN = 18,
    FT_ROLE_ATTN_Q_BIAS = 19, /* a bias vector of its projection's rows (optional) */
    FT_ROLE_ATTN_K_BIAS = 20,
    FT_ROLE_ATTN_V_BIAS = 21,
    FT_ROLE_ATTN_O_BIAS = 22,
    FT_ROLE_ATTN_SINKS = 23,         /* [n_heads] sink logits (optional) */
    FT_ROLE_FFN_ROUTER_BIAS = 24,    /* [n_experts] (optional) */
    FT_ROLE_FFN_GATE_EXPS_BIAS = 25, /* [n_experts, ffn] (optional, with the other two) */
    FT_ROLE_FFN_UP_EXPS_BIAS = 26,
    FT_ROLE_FFN_DOWN_EXPS_BIAS = 27, /* [n_experts, d_model] */
    FT_ROLE_FFN_EXP_PROBS_B =
        30, /* [n_experts] router selection bias (DeepSeek-V3 e_score_correction_bias) */
    /* The ungated shared expert beside the routed ones (DeepSeek-V3,
     * GLM-4.5): [n_shared * shared_ffn, d] x2 and [d, n_shared * shared_ffn]. */
    FT_ROLE_FFN_GATE_SHEXP = 31,
    FT_ROLE_FFN_UP_SHEXP = 32,
    FT_ROLE_FFN_DOWN_SHEXP = 33,
    /* The attention output gate (Qwen3-Next, Qwen3.5/3.6 full-attention
     * layers): [n_heads * value_head_dim, d_model], the gate rows of the
     * checkpoint's q projection (stored interleaved with q per head there;
     * the importer splits them); o = attention * sigmoid(gate h). */
    FT_ROLE_ATTN_GATE = 34,
    /* Gated DeltaNet blocks (attn.kind FT_ATTN_GATED_DELTANET): n_heads value
     * heads (Hv), n_kv_heads key heads (Hk), head_dim = value_head_dim (hd),
     * conv = 2 * Hk * hd + Hv * hd channels. z, the output norm's gate, is
     * FT_ROLE_ATTN_GATE [Hv * hd, d_model]; the input norm FT_ROLE_ATTN_NORM. */
    FT_ROLE_SSM_QKV = 35,     /* [conv, d_model]: rows q | k | v */
    FT_ROLE_SSM_CONV = 36,    /* [conv, conv_kernel] */
    FT_ROLE_SSM_DT_BIAS = 37, /* [Hv] */
    FT_ROLE_SSM_A = 38,       /* [Hv]: -exp(A_log) as llama.cpp's converter stores it */
    FT_ROLE_SSM_BETA = 39,    /* [Hv, d_model] */
    FT_ROLE_SSM_ALPHA = 40,   /* [Hv, d_model] */
    FT_ROLE_SSM_NORM = 41,    /* [hd] the gated RMSNorm's weight, every head's */
    FT_ROLE_SSM_OUT = 42,     /* [d_model, Hv * hd] */
    /* [1, d_model]: the shared expert's output times sigmoid(this . h)
     * (Qwen3.5/3.6, Qwen3-Next; GGUF stores it as a vector [d_model]). */
    FT_ROLE_FFN_GATE_INP_SHEXP = 43,
    /* Multi-head latent attention (attn.kind FT_ATTN_MLA, DeepSeek V2/V3):
     * H heads, q/k head_dim = nope + rope (rope = hp.rope_dim), value
     * heads of value_head_dim, a compressed KV of kv_lora_rank. */
    FT_ROLE_ATTN_Q_A = 44,      /* [q_lora_rank, d_model] (with q_lora_rank; else ATTN_Q) */
    FT_ROLE_ATTN_Q_A_NORM = 45, /* [q_lora_rank] */
    FT_ROLE_ATTN_Q_B = 46,      /* [H * head_dim, q_lora_rank]: per head q_nope | q_rope */
    FT_ROLE_ATTN_KV_A = 47,     /* [kv_lora_rank, d_model]: the compressed KV's rows of kv_a_mqa */
    FT_ROLE_ATTN_K_ROPE = 48,   /* [rope, d_model]: the shared RoPE key's rows of kv_a_mqa */
    FT_ROLE_ATTN_KV_A_NORM = 49, /* [kv_lora_rank] */
    /* k_nope = W_kb c per head: [H * nope, kv_lora_rank] (rows of kv_b) */
    FT_ROLE_ATTN_K_B = 50,
    /* v = W_vb c per head: [H * value_head_dim, kv_lora_rank] (rows of kv_b,
     * or llama.cpp's attn_v_b [H, value_head_dim, kv_lora_rank], the same) */
    FT_ROLE_ATTN_V_B = 51,
    /* W_kb transposed per head: [H * kv_lora_rank, nope] (llama.cpp's
     * attn_k_b [H, kv_lora_rank, nope]), instead of ATTN_K_B */
    FT_ROLE_ATTN_K_B_T = 52,
    FT_ROLE_COUNT
} ft_tensor_role_t;

typedef struct ft_ir_hparams {
    ft_arch_t arch;
    const char *arch_name;
    uint32_t n_layers, d_model, vocab_size, context_length;
    float norm_eps;
    ft_norm_kind_t norm;
    /* The RoPE pairing of the q/k weights as stored (NORM: (2i, 2i+1);
     * NEOX: (i, i + rope_dim/2)). Mixtral from GGUF is NORM on the rows
     * llama.cpp's converter permuted, from HF NEOX on the originals. */
    ft_rope_kind_t rope;
    float rope_theta;
    uint32_t rope_dim;
    /* YaRN context extension (0: none): factor, original context and the
     * ramp's rotations, as llama.cpp's rope_yarn uses them. */
    float rope_yarn_factor;
    uint32_t rope_yarn_orig_ctx;
    float rope_yarn_beta_fast, rope_yarn_beta_slow;
    /* YaRN's cos/sin scale where a family sets it (DeepSeek: mscale(factor,
     * mscale) / mscale(factor, mscale_all_dim)); 0: llama.cpp's
     * 1 + 0.1 ln(factor). */
    float rope_yarn_mscale;
    int tie_embeddings;
    /* Multi-token-prediction blocks the checkpoint carries after the
     * n_layers it runs (GLM-4.5 nextn): their tensors are skipped. */
    uint32_t n_mtp_layers;
} ft_ir_hparams_t;

typedef struct ft_ir_attention {
    ft_attn_kind_t kind;
    uint32_t n_heads, n_kv_heads, head_dim, value_head_dim;
    int qk_norm;
    /* The q and k norms span the whole projection (OLMoE, MiniMax-M2):
     * weights [n_heads * head_dim] and [n_kv_heads * head_dim], one RMS over
     * each row, instead of one [head_dim] weight per head. With qk_norm. */
    int qk_norm_full;
    uint32_t sliding_window; /* tokens a query sees; 0: all (full attention) */
    int has_sinks; /* a per-head sink logit in the softmax (FT_ROLE_ATTN_SINKS) */
    int has_bias; /* any of the q/k/v/o projections has a bias (FT_ROLE_ATTN_*_BIAS) */
    int has_out_gate; /* the output is gated: attention * sigmoid(W_gate h) (FT_ROLE_ATTN_GATE) */
    /* FT_ATTN_GATED_DELTANET: the causal conv's taps, and whether value head
     * h reads key head h % n_kv_heads (tiled: Qwen3.5/3.6) or
     * h / (n_heads / n_kv_heads) (grouped: Qwen3-Next). */
    uint32_t conv_kernel;
    int heads_tiled;
    /* FT_ATTN_MLA: the low-rank q (0: a plain q projection), the compressed
     * KV's rank, the part of each q/k head without RoPE (head_dim = nope +
     * hp.rope_dim), and the softmax scale (DeepSeek's YaRN mscale^2 /
     * sqrt(head_dim); 0: 1 / sqrt(head_dim)). */
    uint32_t q_lora_rank, kv_lora_rank, nope_head_dim;
    float attn_scale;
} ft_ir_attention_t;

typedef struct ft_ir_moe {
    uint32_t n_experts, n_experts_used, expert_ffn;
    uint32_t n_shared_experts, shared_ffn;
    ft_router_scoring_t scoring;
    int norm_topk_prob, has_router_bias;
    float routed_scaling;
    uint32_t n_groups, n_groups_used; /* group-limited routing (DeepSeek-V3 n_group, topk_group); 0: none */
    int has_sel_bias; /* a router selection bias (FT_ROLE_FFN_EXP_PROBS_B) is required */
    int shared_gate; /* the shared experts' output times sigmoid(w . h) (FT_ROLE_FFN_GATE_INP_SHEXP)
                      */
} ft_ir_moe_t;

typedef struct ft_ir_block {
    ft_ir_attention_t attn;
    int is_moe;
    ft_ir_moe_t moe;
    uint32_t dense_ffn;
    ft_activation_t act;
    float act_alpha, act_limit; /* FT_ACT_SWIGLU_OAI's constants (gpt-oss: 1.702, 7) */
} ft_ir_block_t;

/* A contiguous byte range of a source file. A tensor's data is its pieces
 * concatenated in order (HF checkpoints store one piece per expert). */
typedef struct ft_ir_piece {
    uint32_t file; /* index into ft_ir_model_t.files */
    uint64_t offset;
    uint64_t n_bytes;
} ft_ir_piece_t;

/* How the float scales of a scaled FP8 checkpoint tensor (F8_E4M3 values
 * whose real value is value * scale) cover it, per 2-D matrix (a piece):
 * one per 128 x 128 tile (DeepSeek's "weight_scale_inv" [ceil(rows / 128),
 * ceil(cols / 128)]), one per row (compressed-tensors' "weight_scale"
 * [rows, 1]) or one for the matrix ("weight_scale" [] or [1]). */
typedef enum ft_ir_scale_kind {
    FT_IR_SCALE_NONE = 0,
    FT_IR_SCALE_TILE128,
    FT_IR_SCALE_ROW,
    FT_IR_SCALE_TENSOR,
} ft_ir_scale_kind_t;
/* A change of values the packer applies to every row it reads (in f32),
 * for what an HF checkpoint stores differently from the runtime's (and the
 * GGUF converters') convention (ir_xform.c). */
typedef enum ft_ir_xform {
    FT_IR_XFORM_NONE = 0,
    FT_IR_XFORM_ADD_ONE = 1, /* w + 1: Qwen3.5/3.6 and Qwen3-Next's zero-centred RMSNorm weights */
    FT_IR_XFORM_NEG_EXP = 2, /* -exp(w): Gated DeltaNet's A from HF's A_log */
    /* MXFP4 rows assembled from HF's separate *_blocks (pieces[0]: per
     * source row, 16-byte blocks holding elements 2j | 2j+1 << 4 in byte j)
     * and *_scales (pieces[1]: one E8M0 byte a block), the source row of
     * each row chosen by the tensor's interleave (gpt-oss's experts): the
     * bits moved into the runtime's 17-byte blocks, nothing re-rounded. */
    FT_IR_XFORM_MXFP4_HF = 3,
    /* f32/f16/bf16 rows whose columns are every step-th of a source row
     * step times as wide, from column first (gpt-oss's gate_up_proj_bias:
     * gate and up alternate). One piece: the source rows. */
    FT_IR_XFORM_DEINTERLEAVE = 4,
} ft_ir_xform_t;

/* Which source row (FT_IR_XFORM_MXFP4_HF) or columns
 * (FT_IR_XFORM_DEINTERLEAVE) an IR row reads: for MXFP4_HF row r reads
 * source row (r / group) * group * step + (r % group) * step + first. */
typedef struct ft_ir_interleave {
    uint64_t group;
    uint32_t step, first;
} ft_ir_interleave_t;

/* Columns regrouped in every row (after the xform): the row holds
 * tile_k * tile_r blocks of tile_elems, and output block r * tile_k + k is
 * input block k * tile_r + r. HF's Qwen3.5 value heads are grouped by key
 * head (k * R + r); the runtime, like llama.cpp's converter, reads them
 * tiled (r * Hk + k). tile_elems 0: no regrouping. */
typedef struct ft_ir_tiling {
    uint32_t tile_k, tile_r, tile_elems;
} ft_ir_tiling_t;

typedef struct ft_ir_tensor {
    const char *name; /* canonical, GGUF-style: "blk.3.ffn_up_exps.weight" */
    ft_tensor_role_t role;
    int32_t layer;    /* -1 for global tensors */
    ft_dtype_t dtype; /* as stored in the source */
    uint32_t n_dims;
    uint64_t shape[FT_MAX_DIMS]; /* row-major, outermost first */
    uint32_t n_pieces;
    ft_ir_piece_t *pieces;
    /* Scaled FP8 (dtype F8_E4M3, HF only): the scales of piece p are
     * scale_pieces[p], float32 or bf16 (scale_dtype), laid out as
     * scale_kind says; the packer writes FP8 blocks with them. */
    ft_ir_scale_kind_t scale_kind;
    ft_dtype_t scale_dtype;
    const char *scale_name; /* the first piece's scale tensor, for messages */
    ft_ir_piece_t *scale_pieces;
    /* Per piece, the source row its first row is within the matrix its
     * scales cover (a range of rows of a scaled matrix: DeepSeek's
     * kv_a_proj_with_mqa and kv_b_proj split per part and head); NULL when
     * every piece starts a matrix. TILE128 row r of piece p reads tile row
     * (scale_row0[p] + r) / 128, ROW scale scale_row0[p] + r. */
    uint64_t *scale_row0;
    ft_ir_xform_t xform;   /* FT_IR_XFORM_NONE: the values as stored */
    ft_ir_tiling_t tiling; /* tile_elems 0: the columns as stored */
    ft_ir_interleave_t il; /* FT_IR_XFORM_MXFP4_HF and FT_IR_XFORM_DEINTERLEAVE */
} ft_ir_tensor_t;

/* Whether t's rows must be rewritten (ADD_ONE, NEG_EXP or a tiling: rows
 * read as f32, ft_ir_rewrite_row) on the way in. MXFP4_HF and
 * DEINTERLEAVE tensors are read by ft_ir_mxfp4_hf_row and
 * ft_ir_deinterleave_row instead. */
int ft_ir_tensor_rewritten(const ft_ir_tensor_t *t);

/* Row r of an FT_IR_XFORM_MXFP4_HF tensor into out (its MXFP4 row bytes),
 * from the bytes of its two pieces. */
void ft_ir_mxfp4_hf_row(const ft_ir_tensor_t *t, const uint8_t *blocks, const uint8_t *scales,
                        uint64_t r, uint8_t *out);

/* The source rows an MXFP4_HF tensor's pieces must hold. */
uint64_t ft_ir_mxfp4_hf_src_rows(const ft_ir_tensor_t *t);

/* An FT_IR_XFORM_DEINTERLEAVE row: n output values from src (n * step
 * f32 values of the source row). */
void ft_ir_deinterleave_row(const ft_ir_tensor_t *t, const float *src, float *out, uint64_t n);

/* Applies t's xform and tiling to one row of n f32 values in place;
 * scratch holds n floats. */
void ft_ir_rewrite_row(const ft_ir_tensor_t *t, float *row, float *scratch, uint64_t n);

typedef struct ft_ir_model {
    ft_arena_t *arena; /* owns everything below */
    const char *source_format; /* "gguf" | "safetensors" */
    const char *source_name;   /* base name of the file or directory */
    ft_ir_hparams_t hp;
    ft_ir_block_t *blocks; /* [hp.n_layers] */
    uint32_t n_tensors;
    ft_ir_tensor_t *tensors;
    uint32_t n_files;
    ft_src_file_t *files;
    ft_ir_tokenizer_t tok;
} ft_ir_model_t;

FT_WARN_UNUSED ft_status_t ft_ir_model_create(ft_ir_model_t **out_model);
void ft_ir_model_destroy(ft_ir_model_t *model);

const char *ft_tensor_role_name(ft_tensor_role_t role);
const char *ft_arch_name(ft_arch_t arch);

/* The tensor with this role in this layer (-1: global), or NULL. */
const ft_ir_tensor_t *ft_ir_find(const ft_ir_model_t *model, ft_tensor_role_t role, int32_t layer);

/* Element count of a tensor (never overflows for a validated model). */
uint64_t ft_ir_tensor_elems(const ft_ir_tensor_t *t);

/* Parameters: all of them, and those one token touches (every tensor
 * except the experts a token does not route to). */
void ft_ir_param_counts(const ft_ir_model_t *model, uint64_t *out_total, uint64_t *out_active);

/* Checks that every tensor the blocks need exists with the shape the
 * hyperparameters imply, and that byte sizes agree with formats. */
FT_WARN_UNUSED ft_status_t ft_ir_model_validate(const ft_ir_model_t *model);

/* A stable text rendering of everything but where the bytes come from
 * (files, offsets): two imports of the same weights print the same text,
 * except hp.rope where the layouts store q/k rows differently (Mixtral:
 * GGUF NORM, HF NEOX). */
void ft_ir_model_print(const ft_ir_model_t *model, FILE *out);

#endif
