/* ft_kernel_abi.h: the contract between the compiler (ftc, codegen/) and
 * the code it emits, and between that code and the runtime that loads it.
 *
 * A CPU kernel module is a shared object with one exported entry function,
 * FT_KABI_ENTRY_SYMBOL, of type ft_kabi_entry_fn. The runtime calls it once
 * after loading, passing its own ABI version and the host services; the
 * module refuses (returns nonzero) when the versions differ and otherwise
 * fills a table of kernels keyed by (op, format, rows, cols).
 *
 * This header is copied verbatim into every emitted source (the emitted C
 * includes nothing of freetoken's), so it uses only the C standard headers.
 * Any change to a type or signature below bumps FT_KABI_VERSION. */
#ifndef FT_KERNEL_ABI_H
#define FT_KERNEL_ABI_H

#include <stddef.h>
#include <stdint.h>

#define FT_KABI_VERSION 5u
#define FT_KABI_ENTRY_SYMBOL "ft_kernel_module_entry"
/* Data symbols the runtime reads before it runs any code of the module:
 * const uint32_t (the module's FT_KABI_VERSION) and const char[] (its ISA,
 * which the CPU must support before the entry function may run). */
#define FT_KABI_ABI_SYMBOL "ft_kernel_module_abi"
#define FT_KABI_ISA_SYMBOL "ft_kernel_module_isa"

/* Weight formats: the numbers of runtime/format/dtype.h (ft_dtype_t). */
enum {
    FT_KABI_FMT_F32 = 1,
    FT_KABI_FMT_F16 = 2,
    FT_KABI_FMT_BF16 = 3,
    FT_KABI_FMT_Q4_0 = 16,
    FT_KABI_FMT_Q8_0 = 20,
    FT_KABI_FMT_Q4_K = 24,
    FT_KABI_FMT_Q6_K = 26,
    FT_KABI_FMT_Q8_K = 27, /* activations only */
};

/* A weight format key with this bit set: the matrix's rows are stored in
 * groups of 16 interleaved as runtime/format/wlayout.h's
 * FT_WLAYOUT_Q8_0_R16 describes (Q8_0 only; rows a multiple of 16): the
 * kernel reads that layout, w_row_bytes is still the plain row's bytes
 * and group g starts at byte g * 16 * w_row_bytes. Rows [r0, r1) may
 * start and end inside a group. Since ABI 5. */
#define FT_KABI_LAYOUT_R16 0x10000u

typedef enum ft_kabi_op {
    /* y = W x over prepared activation rows (ft_kabi_matmul_fn). */
    FT_KABI_OP_MATMUL = 1,
    /* One MoE expert: down(silu(gate x) * up x) (ft_kabi_expert_fn). */
    FT_KABI_OP_EXPERT = 2,
    /* RMSNorm fused into the next product's activation preparation
     * (ft_kabi_norm_prepare_fn). Since ABI 2. */
    FT_KABI_OP_NORM_PREPARE = 3,
    /* Router matvec + softmax + top-k + weights per token
     * (ft_kabi_router_fn). Since ABI 2. */
    FT_KABI_OP_ROUTER = 4,
    /* One token's causal attention over the KV cache for one KV head and
     * the query heads that share it: key format F32 (ft_kabi_attn_fn,
     * since ABI 2) or F16 (ft_kabi_attn_f16_fn, since ABI 3). */
    FT_KABI_OP_ATTN = 5,
    /* The Gated DeltaNet recurrence of a run of value heads over prepared
     * tokens (ft_kabi_deltanet_fn). Since ABI 4. */
    FT_KABI_OP_DELTANET = 6,
    /* Multi-head latent attention of one head over a run of tokens, the
     * absorbed or the expanded form (ft_kabi_mla_fn). Since ABI 5. */
    FT_KABI_OP_MLA = 7,
} ft_kabi_op_t;

/* FT_KABI_OP_MLA's format_aux: the RoPE part of a query head and the value
 * head's width, both below 65536. */
#define FT_KABI_MLA_AUX(rope, v) ((uint32_t)(rope) | (uint32_t)(v) << 16)

/* FT_KABI_OP_DELTANET's format_aux: the key heads, with this bit set when
 * value head h reads key head h % n_k_heads (tiled) rather than
 * h / (n_v_heads / n_k_heads) (grouped). */
#define FT_KABI_DELTANET_TILED 0x80000000u

/* y[t * ldy + r] = dot(W row r, prepared activation row t) for r in
 * [r0, r1) and t in [0, n_tok). W is [rows, cols] row-major with rows of
 * w_row_bytes bytes; xp holds n_tok activation rows prepared as the
 * runtime's ft_cpu_act_prepare does (Q8_0 blocks for Q8_0/Q4_0 weights,
 * Q8_K for Q4_K/Q6_K, float32 for F32/F16/BF16). rows and cols are the
 * table key: the kernel is only valid for that shape. */
typedef void (*ft_kabi_matmul_fn)(const void *w, size_t w_row_bytes, const void *xp,
                                  uint32_t n_tok, uint32_t r0, uint32_t r1, float *y,
                                  size_t ldy);

/* One expert over n_tok tokens. Key: format = gate/up format, format_aux =
 * down format, rows = expert ffn, cols = d_model. w_gate/w_up: [ffn, d];
 * w_down: [d, ffn]; xp: n_tok rows of d prepared for the gate format.
 * Scratch: g and u [n_tok, ffn] floats, ap n_tok rows of ffn prepared for
 * the down format. out: [n_tok, d] floats (overwritten). */
typedef void (*ft_kabi_expert_fn)(const void *w_gate, const void *w_up, const void *w_down,
                                  const void *xp, uint32_t n_tok, float *g, float *u, void *ap,
                                  float *out);

/* RMSNorm + activation preparation in one pass over each row: for n_rows
 * rows of x (cols floats each, row stride ldx floats), h = x * (float)(1 /
 * sqrt(sum(x^2 in double, in index order) / cols + eps)) * w, prepared
 * for weight format `format` as ft_kabi_prepare_fn does, into out (n_rows
 * consecutive prepared rows). The same float operations in the same order
 * as the runtime's ft_op_rmsnorm followed by its activation preparation:
 * the bytes are identical for finite inputs. Key: format = the weight
 * format of the product that follows, rows = 0, cols = the row length. */
typedef void (*ft_kabi_norm_prepare_fn)(const float *x, size_t ldx, const float *w, float eps,
                                        uint32_t n_rows, void *out);

/* The MoE router for n_tok tokens: logits = W xp (this module's matmul of
 * the key's shape), softmax over the rows (experts), the k largest (ties:
 * the lower index first, descending) into sel[t * ld_sel + j], and their
 * probabilities into sel_w (divided by their sum when norm_topk != 0).
 * probs: scratch of n_tok * rows floats, left holding the probabilities.
 * xp: n_tok prepared rows as for the matmul. The runtime's softmax and
 * top-k, operation for operation. Key: format = the router's weight
 * format, rows = experts, cols = d_model. */
typedef void (*ft_kabi_router_fn)(const void *w, size_t w_row_bytes, const void *xp,
                                  uint32_t n_tok, uint32_t k, int norm_topk, float *probs,
                                  int32_t *sel, float *sel_w, size_t ld_sel);

/* One token's attention for one KV head: for each of the `rows` query
 * heads g sharing it (q: rows x cols floats), scores over the keys
 * p < n_keys = dot(q_g, K_p) * scale, softmax, out_g = sum_p w_p V_p.
 * K_p is at k + p * kv_stride floats, V_p at v + p * kv_stride. scores:
 * scratch, rows rows of ld_scores >= n_keys floats. out: rows x cols
 * floats (overwritten). The float operations and their order are the
 * runtime's reference attention (eight-lane partial sums for the dot,
 * libm expf), so the result is bit-identical to it. Key: format = F32
 * (the KV cache), rows = query heads per KV head, cols = head_dim. */
typedef void (*ft_kabi_attn_fn)(const float *q, const float *k, const float *v, size_t kv_stride,
                                uint32_t n_keys, float scale, float *scores, size_t ld_scores,
                                float *out);

/* ft_kabi_attn_fn over a KV cache of IEEE half floats (the plan's
 * kv_format F16): K_p is at k + p * kv_stride halves, V_p at v + p *
 * kv_stride. Each element is widened to float (exact) and then takes the
 * same float operations in the same order, so the result is bit-identical
 * to the runtime's reference attention over that cache. Key: format = F16,
 * rows and cols as for ft_kabi_attn_fn. Since ABI 3. */
typedef void (*ft_kabi_attn_f16_fn)(const float *q, const uint16_t *k, const uint16_t *v,
                                    size_t kv_stride, uint32_t n_keys, float scale, float *scores,
                                    size_t ld_scores, float *out);

/* The Gated DeltaNet recurrence (the runtime's ft_op_deltanet_token after
 * its conv and norms) of value heads [h0, h1) over n_tok tokens in order:
 * per token t and head h (key head kh as the key's tiling says), with q,
 * k, v the head's slices of y row t (y + t * ldy: q [n_k_heads][cols] |
 * k [n_k_heads][cols] | v [rows][cols], q and k already L2-normalised)
 * and S = s + h * cols * cols (S[i][j], i over v, j over k),
 *   S *= exp(g[t * rows + h]);  d = beta[t * rows + h] (v - S k);
 *   S += d k^T;  out[t * ldo + h * cols + i] = (S q)[i] / sqrt(cols).
 * Sums run in float in the kernel's own order (SIMD lanes, fused
 * multiply-adds): the result agrees with the reference, which sums in
 * double, to float rounding (test_deltanet_gen states the bound). Heads
 * are independent: disjoint [h0, h1) may run on separate threads. Key:
 * format = F32 (the state), format_aux = n_k_heads (| FT_KABI_DELTANET_TILED),
 * rows = n_v_heads, cols = head_dim. Since ABI 4. */
typedef void (*ft_kabi_deltanet_fn)(const float *y, size_t ldy, const float *g, const float *beta,
                                    uint32_t n_tok, uint32_t h0, uint32_t h1, float *s, float *out,
                                    size_t ldo);

/* One head of DeepSeek's multi-head latent attention (the runtime's
 * ft_op_mla_absorbed / ft_op_mla_decompress + ft_op_mla_expanded, after
 * RoPE) for n_tok query rows: row t is q + t * ldq, [q_nope (NOPE) |
 * q_rope (ROPE)], and attends to the compressed cache rows 0 .. n_keys[t]
 * - 1 of g (row j at g + j * (R + ROPE): [c_j (R) | k_rope_j (ROPE)]). wk is
 * the head's W_kb [NOPE][R], wv its W_vb [V][R], row-major float32.
 *   expanded == 0 (absorbed): qc = wk^T q_nope, s_j = scale (qc . c_j +
 *     q_rope . k_rope_j), softmax, oc = sum_j p_j c_j, out = wv oc;
 *   expanded != 0: k_j = wk c_j and v_j = wv c_j once for every key the
 *     run reads, then s_j = scale (q_nope . k_j + q_rope . k_rope_j),
 *     softmax, out = sum_j p_j v_j.
 * out row t (V floats) is out + t * ldo. scratch: (max n_keys) (NOPE + V +
 * 1) + 2 R floats. Sums run in float (SIMD lanes, fused multiply-adds);
 * the reference sums in double, so the two agree to float rounding
 * (test_mla_gen states the bound). Heads are independent: the runtime
 * runs heads on separate threads, one call per head. Key: format = F32
 * (wk, wv, g), format_aux = FT_KABI_MLA_AUX(ROPE, V), rows = NOPE, cols =
 * R. Since ABI 5. */
typedef void (*ft_kabi_mla_fn)(const float *wk, const float *wv, const float *q, size_t ldq,
                               const float *g, const uint32_t *n_keys, uint32_t n_tok, int expanded,
                               float scale, float *scratch, float *out, size_t ldo);

/* Activation preparation the runtime lends the module, so the module's
 * activations are quantized with exactly the runtime's rounding:
 * n_rows rows of cols floats (row stride ldx floats) -> prepared rows. */
typedef void (*ft_kabi_prepare_fn)(uint32_t wformat, const float *x, size_t ldx,
                                   uint32_t n_rows, uint32_t cols, void *out);

typedef struct ft_kabi_host {
    uint32_t abi_version; /* FT_KABI_VERSION the runtime was built with */
    ft_kabi_prepare_fn act_prepare;
} ft_kabi_host_t;

typedef struct ft_kabi_entry {
    uint32_t op;         /* ft_kabi_op_t */
    uint32_t format;     /* FT_KABI_FMT_* of the weights (gate/up for experts) */
    uint32_t format_aux; /* experts: the down projection's format; DeltaNet:
                          * its key heads (above); else 0 */
    uint32_t rows, cols;
    const char *name;    /* the emitted function's name, for messages */
    void (*fn)(void);    /* cast to the op's function type */
} ft_kabi_entry_t;

typedef struct ft_kabi_table {
    uint32_t abi_version; /* FT_KABI_VERSION the module was emitted with */
    const char *isa;      /* "avx512", "avx2" or "portable" */
    uint32_t n_entries;
    const ft_kabi_entry_t *entries; /* static storage of the module */
} ft_kabi_table_t;

/* Returns 0 and fills *out, or nonzero when host->abi_version differs
 * from the module's (the table is then left with abi_version set only). */
typedef int (*ft_kabi_entry_fn)(const ft_kabi_host_t *host, ft_kabi_table_t *out);

#endif
