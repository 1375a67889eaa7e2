/* The model as the runtime sees it: a view of every weight matrix the op
 * schedule takes (inside the mapped FTW files; nothing is copied), the
 * bound schedule (program.h) the executor walks, and per block a summary
 * of its attention and expert weights for the code that works per block
 * (the MOE op on the CPU and on a device, the sim's clock). Built from a
 * validated plan's schedule; every tensor an op touches is checked here
 * once (shape, format computable, bytes in the file), so the executor
 * itself does no checking. */
#ifndef FT_EXEC_MODEL_H
#define FT_EXEC_MODEL_H

#include "freetoken.h"
#include "../format/bundle.h"
#include "../format/dtype.h"
#include "ft_kernel_abi.h"

#include <stddef.h>
#include <stdint.h>

/* A weight matrix [rows, cols], or a stack of n_experts such matrices. */
typedef struct ft_mat {
    ft_dtype_t dtype;
    uint32_t rows, cols;
    size_t row_bytes;
    const uint8_t *data;    /* the matrix, or expert 0 of a stack */
    uint64_t expert_stride; /* bytes from one expert's matrix to the next; 0 if plain */
    uint32_t n_experts;     /* 1 for plain matrices */
    uint32_t layout;        /* ft_wlayout_t (format/wlayout.h): how the rows are arranged */
    ft_kabi_matmul_fn kernel; /* the plan's generated kernel for this shape, or NULL:
                                 the reference kernel (set by the engine) */
} ft_mat_t;

static inline const uint8_t *ft_mat_expert(const ft_mat_t *m, uint32_t e)
{
    return m->data + (uint64_t)e * m->expert_stride;
}

/* y[t * ldy + r] = dot(row r of the matrix at w (mat's shape, format and
 * layout: the matrix, or one expert's of a stack), prepared activation
 * row t) for r in [r0, r1), t < n_tok: the plan's generated kernel when
 * mat has one and gen is set, else the reference kernels (which see the
 * rows of a non-rows layout one at a time, as ft_wlayout_unpack_group
 * gives them back: the same bytes, so the same results as the rows
 * layout). mat_mul.c. */
void ft_mat_mul(const ft_mat_t *mat, int gen, const uint8_t *w, const void *xp, uint32_t n_tok, uint32_t r0,
                uint32_t r1, float *y, size_t ldy);

/* Rows per unit when a product's rows are split across threads: at least
 * `grain`, and a whole group of the layout's rows. */
uint32_t ft_mat_grain(const ft_mat_t *mat, uint32_t grain);

static inline uint64_t ft_mat_bytes(const ft_mat_t *m)
{
    return (uint64_t)m->rows * m->row_bytes;
}

/* One block, as gathered from its ops (model.c): the attention weights of
 * its LINEAR / RMSNORM / HEAD_NORM ops, and its ROUTER and MOE ops'
 * experts. Fields a block's ops do not have stay NULL / 0 (q_norm without
 * a HEAD_NORM). */
typedef struct ft_layer {
    uint32_t n_heads, n_kv_heads, head_dim;
    uint32_t n_experts, n_used, expert_ffn;
    int norm_topk_prob;
    const float *attn_norm, *ffn_norm; /* [d_model] */
    const float *q_norm, *k_norm;      /* [head_dim] */
    ft_mat_t wq, wk, wv, wo;
    /* a latent attention block's (MLA) other matrices' bytes, every one read
     * per token: q_a, q_b (or q), kv_a and k_rope, W_kb, W_vb */
    uint64_t mla_bytes;
    ft_mat_t router;                   /* [n_experts, d_model] */
    ft_mat_t gate, up, down;           /* stacks: [ffn, d], [ffn, d], [d, ffn] */
    /* The FTW expert block: expert e's gate, up and down together are the
     * blob [blob0 + e * blob_stride, + blob_stride), the unit one copy moves;
     * the matrices sit at these offsets inside it. */
    const uint8_t *blob0;
    uint64_t blob_stride;
    uint64_t off_gate, off_up, off_down;
    ft_kabi_expert_fn expert_kernel; /* fused gate + up + SwiGLU + down, or NULL */
    /* The plan's fusions (ABI 2), or NULL: the unfused path. */
    ft_kabi_norm_prepare_fn attn_norm_prepare; /* attn_norm + preparation for wq's format */
    ft_kabi_norm_prepare_fn ffn_norm_prepare;  /* ffn_norm + preparation for the router's */
    ft_kabi_norm_prepare_fn ffn_norm_prepare_experts; /* ... for the experts' (gate = up) */
    ft_kabi_router_fn router_kernel;           /* router + softmax + top-k + weights */
    ft_kabi_attn_fn attn_kernel;               /* attention per (token, KV head), f32 KV */
    ft_kabi_attn_f16_fn attn_kernel_f16;       /* the same over an f16 KV cache */
} ft_layer_t;

typedef struct ft_model {
    uint32_t n_layers, d_model, vocab_size, context_length;
    float norm_eps, rope_theta;
    uint32_t rope_dim; /* of the blocks' ROPE ops (the last one's) */
    int rope_neox;     /* 1: every ROPE op rotates NeoX halves */
    const float *output_norm; /* [d_model] */
    ft_mat_t tok_embd;        /* [vocab, d_model] */
    ft_mat_t output;          /* [vocab, d_model]; the embedding when tied */
    ft_layer_t *layers;
    uint32_t n_mats;
    ft_mat_t *mats;           /* [n_mats = plan tensors]: the matrices ops take (rows 0 elsewhere) */
    struct ft_program *prog;  /* the bound op schedule */
    ft_kabi_norm_prepare_fn output_norm_prepare; /* output_norm + preparation, or NULL */
    /* Largest per-layer sizes, for sizing buffers. */
    uint32_t max_q_dim, max_kv_dim, max_heads, max_experts, max_used, max_ffn;
    uint32_t max_group; /* query heads per KV head */
    /* The KV cache's element (the plan's kv_format): FT_DTYPE_F32 or
     * FT_DTYPE_F16, kv_elem_bytes 4 or 2, on every backend. */
    ft_dtype_t kv_dtype;
    uint32_t kv_elem_bytes;
    uint64_t weight_bytes;           /* every weight in the bundle */
    uint64_t weight_bytes_per_token; /* what one decoded token reads */
} ft_model_t;

/* Builds the model view of an open bundle; a bundle that this runtime
 * cannot execute (an architecture, attention or format it does not have)
 * is refused naming what is missing. */
FT_WARN_UNUSED ft_status_t ft_model_create(const ft_bundle_t *bundle, const ft_allocator_t *alloc,
                            ft_model_t **out_model);
void ft_model_destroy(ft_model_t *model, const ft_allocator_t *alloc);

/* Points every matrix, expert and fusion that the kernel module has a
 * kernel for at it (mod NULL: clears them all, the reference kernels).
 * A fusion is bound only where the forward pass can use it: the norm
 * before attention when q, k and v share a format. */
typedef struct ft_cpu_module ft_cpu_module_t;
void ft_model_bind_kernels(ft_model_t *model, const ft_cpu_module_t *mod);

#endif
