/* Small float32 operations of the forward pass that are not matrix
 * products: normalization, rotary embedding, softmax, activation. */
#ifndef FT_EXEC_OPS_H
#define FT_EXEC_OPS_H

#include <stddef.h>
#include <stdint.h>

/* out = x / sqrt(mean(x^2) + eps) * w, n elements (out may be x). */
void ft_op_rmsnorm(float *out, const float *x, const float *w, uint32_t n, float eps);

/* NeoX rotary embedding of one head in place: pairs (i, i + rope_dim/2)
 * for i < rope_dim/2 rotate by pos * inv_freq[i]; dims past rope_dim stay. */
void ft_op_rope_neox(float *head, uint32_t rope_dim, const float *inv_freq, uint32_t pos);

/* The original (GPT-J, llama.cpp "normal") rotary embedding of one head:
 * adjacent pairs (2i, 2i + 1) for i < rope_dim/2, otherwise as above. */
void ft_op_rope_norm(float *head, uint32_t rope_dim, const float *inv_freq, uint32_t pos);

/* In-place softmax over n values; returns nothing, never divides by 0. */
void ft_op_softmax(float *x, uint32_t n);

/* Softmax with a sink logit in the denominator (attention sinks):
 * x[i] = exp(x[i]) / (sum_j exp(x[j]) + exp(sink)), computed from the
 * largest of x and the sink. */
void ft_op_softmax_sink(float *x, uint32_t n, float sink);

/* g[i] = silu(g[i]) * u[i]. */
void ft_op_swiglu(float *g, const float *u, uint32_t n);

/* g[i] = sigmoid(g[i]) * x[i]: the gated attention output. */
void ft_op_sigmoid_mul(float *g, const float *x, uint32_t n);

/* gpt-oss's clamped SwiGLU: g' = min(g, limit), u' = clamp(u, -limit,
 * limit), g[i] = g' * sigmoid(alpha g') * (u' + 1). */
void ft_op_swiglu_oai(float *g, const float *u, uint32_t n, float alpha, float limit);

/* Indices of the k largest values of x[0..n) (ties: the lower index first),
 * in descending order of value. */
void ft_op_topk(const float *x, uint32_t n, uint32_t k, int32_t *out_idx);

/* ---- Multi-head latent attention (op_mla.c) ----------------------------- */

#define FT_MLA_MAX_ROW 8192u /* kv_lora_rank + rope of a compressed cache row, at most */

/* One latent attention layer's head shape: n_heads heads, each q/k head
 * nope + rope wide, values v wide, a compressed KV of kv_lora; the softmax
 * scale. */
typedef struct ft_mla_shape {
    uint32_t n_heads, nope, rope, kv_lora, v;
    float scale;
} ft_mla_shape_t;

/* One head of one query over n_pos positions in the absorbed form: wk
 * [nope][kv_lora] (W_kb), wv [v][kv_lora] (W_vb), q [nope + rope] (its
 * RoPE part rotated), g [n_pos][kv_lora + rope] the compressed rows (c,
 * then the rotated RoPE key); scratch: 2 kv_lora + n_pos doubles; out [v]. */
void ft_op_mla_absorbed(const ft_mla_shape_t *sh, const float *wk, const float *wv, const float *q,
                        const float *g, uint32_t n_pos, double *scratch, float *out);
/* The expanded form: first the positions' keys kn [n_pos][nope] = W_kb c_j
 * and values v [n_pos][v] = W_vb c_j of one head, then each query over
 * them (and the RoPE keys in g); scratch: n_pos + v doubles. The two forms
 * agree to float rounding (tests/unit/test_mla_kernel.c states how far). */
void ft_op_mla_decompress(const ft_mla_shape_t *sh, const float *wk, const float *wv, const float *g,
                          uint32_t n_pos, float *kn, float *v);
void ft_op_mla_expanded(const ft_mla_shape_t *sh, const float *q, const float *kn, const float *v,
                        const float *g, uint32_t n_pos, double *scratch, float *out);

/* ---- Gated DeltaNet (op_deltanet.c) ------------------------------------- */

/* One linear-attention layer's shape: n_v_heads value heads, n_k_heads key
 * heads (whole groups), head_dim both sides, a causal conv of conv_kernel
 * taps (>= 2) over the 2 * n_k_heads + n_v_heads heads' channels; value
 * head h reads key head h % n_k_heads when heads_tiled, else
 * h / (n_v_heads / n_k_heads); eps: the L2 norm's floor. */
typedef struct ft_deltanet_shape {
    uint32_t n_v_heads, n_k_heads, head_dim, conv_kernel;
    int heads_tiled;
    float eps;
} ft_deltanet_shape_t;

/* The conv's channels: q | k | v. */
size_t ft_deltanet_channels(const ft_deltanet_shape_t *sh);

/* Bytes of one sequence's state: the conv's last conv_kernel - 1 inputs
 * [conv_kernel - 1][channels] (oldest first), then S [n_v_heads][head_dim
 * (v)][head_dim (k)], all f32. Zero bytes are the state before token 0. */
size_t ft_deltanet_state_bytes(const ft_deltanet_shape_t *sh);

/* One token: qkv [channels] the projections before the conv, b and a
 * [n_v_heads] beta's logits and alpha; conv_w [channels][conv_kernel],
 * dt_bias and A [n_v_heads] (A = -exp(A_log)). Updates state (as above),
 * uses y [channels] as scratch and writes out [n_v_heads * head_dim]: the
 * layer's output before its gated RMSNorm. */
void ft_op_deltanet_token(const ft_deltanet_shape_t *sh, const float *conv_w, const float *dt_bias,
                          const float *A, const float *qkv, const float *b, const float *a,
                          float *state, float *y, float *out);

/* ---- the chunked form (op_deltanet_chunk.c) ------------------------------ */

/* Tokens per chunk, and the shortest step the executor runs chunked (with
 * the generated kernels when the module has no DeltaNet kernel for the
 * layer, kernel ABI 4; the reference kernels stay sequential). */
#define FT_DELTANET_CHUNK 64u
#define FT_DELTANET_CHUNK_MIN_TOKENS 16u

/* The token-by-token part of n tokens (rows of qkv, b, a as above): the
 * conv + SiLU advancing state's window, q and k L2-normalised, into y
 * [n][channels]; g = A softplus(a + dt_bias) and beta = sigmoid(b) into g
 * and beta [n][n_v_heads]. */
void ft_op_deltanet_prepare(const ft_deltanet_shape_t *sh, const float *conv_w,
                            const float *dt_bias, const float *A, const float *qkv, const float *b,
                            const float *a, uint32_t n, float *state, float *y, float *g,
                            float *beta);

/* Floats of scratch one head's chunked recurrence needs. */
size_t ft_deltanet_chunk_scratch_floats(const ft_deltanet_shape_t *sh);

/* Value head h's recurrence over the n prepared tokens in chunks of
 * FT_DELTANET_CHUNK: its S in state advances, its head_dim outputs of
 * each token go to out [n][n_v_heads * head_dim]. Heads are independent
 * (one thread each). Agrees with ft_op_deltanet_token to float rounding
 * (test_deltanet_kernel states the bound). */
void ft_op_deltanet_chunked_head(const ft_deltanet_shape_t *sh, uint32_t h, const float *y,
                                 const float *g, const float *beta, uint32_t n, float *state,
                                 float *scratch, float *out);

#endif
