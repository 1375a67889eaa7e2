/* A float64 forward pass of Qwen3-MoE, Mixtral and GLM-4.5, read from a compiled
 * bundle or straight from an imported IR (its source files): the oracle
 * the runtime's logits are tested against.
 *
 * Loading dequantizes every weight of the bundle to double through
 * runtime/format/convert.h (so a quantized bundle is computed with exactly
 * the weights the runtime reads, widened), and everything after that is
 * plain double arithmetic, one token position at a time, with a growing
 * KV cache of doubles:
 *
 *   x = embedding row of the token
 *   per layer:
 *     h = RMSNorm(x) * attn_norm
 *     q, k, v = Wq h + bq, Wk h + bk, Wv h + bv (biases where the model has
 *       them); per-head RMSNorm of q, k (q_norm, k_norm; Qwen3-MoE,
 *       GLM-4.5), or one RMSNorm over all of q and one over all of k
 *       (OLMoE)
 *     RoPE on q, k at the token's position: NeoX (pairs (i, i + d/2)), or
 *       interleaved (pairs (2i, 2i+1)) for weights in llama.cpp's permuted
 *       llama layout (Mixtral from GGUF)
 *     causal GQA attention (kv head = q head / (n_heads / n_kv_heads)),
 *       scores scaled by 1/sqrt(head_dim), softmax over positions 0..pos
 *       (with a sliding window W: pos - W + 1 .. pos; with sinks, exp(sink_h)
 *       joins each head's denominator)
 *     attn *= sigmoid(Wgate h)   (the gated output, when the layer has it)
 *   or, in a Gated DeltaNet layer (Qwen3.5/3.6), with a state per layer:
 *     qkv, z, b, a = Wqkv h, Wz h, Wbeta h, Walpha h
 *     y = silu(causal depthwise conv of the last conv_kernel qkv rows)
 *     q, k (key heads) L2-normalised (eps: the norm eps), v (value heads)
 *     per value head: g = A softplus(a + dt_bias), S = exp(g) S,
 *       S += k (sigmoid(b) (v - S k))^T, o = S q / sqrt(head_dim)
 *     o = RMSNorm(o per head) * ssm_norm * silu(z); x += Wout o
 *     x += Wo attn + bo
 *     h = RMSNorm(x) * ffn_norm
 *     p = softmax(Wr h) (or sigmoid) over all experts; the n_experts_used
 *       largest of p + sel_bias (the selection bias, 0 without one; ties:
 *       lower index; with expert groups, among the groups whose two best
 *       biased scores sum highest); their weights the unbiased p,
 *       renormalized to sum 1 when norm_topk_prob, times routed_scaling
 *     x += down_sh(silu(gate_sh h) * up_sh h)   (shared experts, when present;
 *       times sigmoid(w_sh . h) when gated)
 *     x += sum_e p_e * down_e(silu(gate_e h) * up_e h)
 *     (gpt-oss: logits W_r h + b_r, the top k logits' softmax as weights,
 *     gate/up/down biases, g' = min(g, 7), u' = clamp(u, -7, 7),
 *     act = g' sigmoid(1.702 g') (u' + 1); YaRN RoPE; sinks)
 *   logits = Woutput (RMSNorm(x) * output_norm)   (Wembd when tied)
 *
 * Test code only: errors are ft_status_t, and memory is plain malloc. */
#ifndef FT_REF_FORWARD_H
#define FT_REF_FORWARD_H

#include "freetoken.h"
#include "../../runtime/format/dtype.h"

#include <stdint.h>

typedef struct ft_ref_layer {
    uint32_t n_heads, n_kv_heads, head_dim, value_head_dim;
    uint32_t n_experts, n_experts_used, expert_ffn;
    int norm_topk_prob;
    int sigmoid;             /* scores: 1 sigmoid, 0 softmax */
    uint32_t n_groups, n_groups_used; /* group-limited choice (sum of each group's two best); 0: none */
    double routed_scaling;   /* the chosen weights times this (1 after loading) */
    int qk_norm;             /* q_norm / k_norm present and applied */
    int qk_norm_full;        /* ... over the whole projection (OLMoE, MiniMax-M2), not per head */
    uint32_t sliding_window; /* a query sees its last this many positions; 0: all */
    double *attn_norm;       /* [d_model] */
    double *wq;              /* [n_heads * head_dim, d_model] */
    double *wk;              /* [n_kv_heads * head_dim, d_model] */
    double *wv;              /* [n_kv_heads * value_head_dim, d_model] */
    double *wo;              /* [d_model, n_heads * value_head_dim] */
    double *bq, *bk, *bv, *bo; /* the projections' biases (their rows), or NULL: none */
    double *sinks;           /* [n_heads] sink logits in each head's softmax, or NULL */
    double *w_gate;          /* [n_heads * value_head_dim, d_model] the output gate, or NULL */
    /* gpt-oss: the router's logit bias [n_experts] (the weights are then
     * the softmax of the chosen logits), the experts' biases [E][F], [E][F],
     * [E][d] (NULL: none) and the clamped SwiGLU when act_oai. */
    double *router_bias, *b_gate, *b_up, *b_down;
    int act_oai;
    double act_alpha, act_limit;
    double *q_norm, *k_norm; /* [head_dim] ([n_heads / n_kv_heads * head_dim] when qk_norm_full);
                                NULL without qk_norm */
    double *ffn_norm;        /* [d_model] */
    double *router;          /* [n_experts, d_model] */
    double *sel_bias;        /* [n_experts] added to the scores for the choice only; NULL: none */
    double *gate, *up;       /* [n_experts, expert_ffn, d_model] */
    double *down;            /* [n_experts, d_model, expert_ffn] */
    /* The shared experts as one ungated FFN of shared_ffn (0: none), added
     * to x before the routed experts' outputs. */
    uint32_t shared_ffn;
    double *sh_gate, *sh_up; /* [shared_ffn, d_model] */
    double *sh_down;         /* [d_model, shared_ffn] */
    /* The shared experts' gate (Qwen3.5/3.6): their output times
     * sigmoid(sh_gate_inp . h); NULL: ungated. [d_model] */
    double *sh_gate_inp;
    ft_dtype_t fmt_sh_gate_inp;
    /* A Gated DeltaNet block (deltanet 1) instead of attention: n_heads
     * value heads and n_kv_heads key heads of head_dim, value head h reading
     * key head h % n_kv_heads (heads_tiled) or h / (n_heads / n_kv_heads);
     * C = (2 n_kv_heads + n_heads) head_dim conv channels. */
    int deltanet, heads_tiled;
    uint32_t conv_kernel;
    double *dn_qkv;     /* [C, d_model] */
    double *dn_z;       /* [n_heads * head_dim, d_model] */
    double *dn_beta;    /* [n_heads, d_model] */
    double *dn_alpha;   /* [n_heads, d_model] */
    double *dn_conv;    /* [C, conv_kernel] */
    double *dn_dt_bias; /* [n_heads] */
    double *dn_a;       /* [n_heads] = -exp(A_log) */
    double *dn_norm;    /* [head_dim] */
    double *dn_out;     /* [d_model, n_heads * head_dim] */
    ft_dtype_t fmt_dn_qkv, fmt_dn_z, fmt_dn_beta, fmt_dn_alpha, fmt_dn_out;
    /* Multi-head latent attention (mla 1, DeepSeek V2/V3) instead of
     * q/k/v: head_dim = nope + the model's rope_dim, value_head_dim wide
     * values, n_kv_heads 1; q = Wq_b rmsnorm(Wq_a h) (q_lora > 0) or Wq h,
     * per head [q_nope | q_rope]; c = rmsnorm(Wkv_a h), kr = Wk_rope h;
     * RoPE on q_rope and kr; the cache row [c | kr]; per head the expanded
     * form (ref_mla.h) with softmax scale attn_scale; then Wo. wkb is
     * [n_heads * nope][kv_lora] whatever the checkpoint's layout. */
    int mla;
    uint32_t q_lora, kv_lora, nope;
    double attn_scale;
    double *wq_a, *q_a_norm, *wq_b, *wkv_a, *wk_rope, *kv_a_norm, *wkb, *wvb;
    ft_dtype_t fmt_wq_a, fmt_wq_b, fmt_wkv_a, fmt_wk_rope;
    /* The bundle's storage format of each matrix (see emulate_act_quant). */
    ft_dtype_t fmt_wq, fmt_wk, fmt_wv, fmt_wo, fmt_w_gate, fmt_router, fmt_gate, fmt_up, fmt_down;
    ft_dtype_t fmt_sh_gate, fmt_sh_up, fmt_sh_down;
} ft_ref_layer_t;

typedef struct ft_ref_model {
    uint32_t n_layers, d_model, vocab_size, context_length;
    double norm_eps, rope_theta;
    uint32_t rope_dim;
    int rope_interleaved; /* 1: pairs (2i, 2i+1) (ft_ref_rope_norm); 0: NeoX */
    /* YaRN (gpt-oss; factor 0: none): llama.cpp's rope_yarn frequencies and
     * cos/sin scale 1 + 0.1 ln factor. */
    double rope_yarn_factor, rope_yarn_beta_fast, rope_yarn_beta_slow;
    uint32_t rope_yarn_orig_ctx;
    double rope_yarn_mscale; /* the cos/sin scale where the family sets it (DeepSeek); 0: 1 + 0.1 ln factor */
    int tie_embeddings;
    double *tok_embd;       /* [vocab_size, d_model] */
    double *output_norm;    /* [d_model] */
    double *output;         /* [vocab_size, d_model]; == tok_embd when tied */
    ft_ref_layer_t *layers; /* [n_layers] */
    ft_dtype_t fmt_output;
    /* 0 after loading. When set, the input vector of every product with a
     * block-quantized matrix is first rounded the way the runtime's CPU
     * kernels round activations (kernels.h): to float32, then through
     * Q8_0 blocks for Q8_0 and Q4_0 weights, Q8_K blocks for Q4_K and Q6_K
     * (exactly, with convert.h's ggml-identical quantizers). The product
     * itself stays in double. This removes the runtime's one deliberate
     * approximation, leaving float32 arithmetic as the only difference. */
    int emulate_act_quant;
} ft_ref_model_t;

/* Opens the bundle (a directory or its plan.ftp), checks that it is a
 * Qwen3-MoE model this reference computes (RMS norms, NeoX RoPE, GQA with
 * q/k norms and no biases, softmax-routed MoE in every layer, SiLU), and
 * dequantizes every weight to double. The bundle is closed again before
 * returning. Free with ft_ref_model_free. */
ft_status_t ft_ref_model_load(const char *bundle_path, ft_ref_model_t **out_model);
void ft_ref_model_free(ft_ref_model_t *model);

struct ft_ir_model;
/* The same, from an imported (validated) IR: each tensor's bytes are read
 * from its source files' pieces and dequantized to double. Accepts
 * qwen3moe and mixtral IR under the same checks as ft_ref_model_load
 * (q/k norms optional, NeoX or interleaved RoPE, no sliding window). Lets
 * the oracle run on models whose bundles the runtime cannot hold yet. */
ft_status_t ft_ref_model_from_ir(const struct ft_ir_model *ir, ft_ref_model_t **out_model);

/* One sequence: its KV cache (doubles) for up to n_ctx positions. */
typedef struct ft_ref_session ft_ref_session_t;

ft_status_t ft_ref_session_create(const ft_ref_model_t *model, uint32_t n_ctx,
                                  ft_ref_session_t **out_session);
void ft_ref_session_free(ft_ref_session_t *session);
uint32_t ft_ref_session_n_past(const ft_ref_session_t *session);

/* How close the routing of position pos came to choosing other experts:
 * over all layers, the smallest gap between the last chosen expert's
 * probability and the best unchosen one's (INFINITY when every expert is
 * used, or pos has not been evaluated). A runtime whose router inputs
 * differ by more than this may legitimately route differently there. */
double ft_ref_session_route_margin(const ft_ref_session_t *session, uint32_t pos);

/* 1 when two sessions (of models with the same layer shapes) chose the same
 * experts for position pos in every layer. */
int ft_ref_session_same_routes(const ft_ref_session_t *a, const ft_ref_session_t *b, uint32_t pos);

/* Appends n tokens and writes their logits (n x vocab_size doubles, row per
 * position) to logits_out when it is not NULL. Errors: n == 0, a token id
 * outside [0, vocab_size), more positions than n_ctx; nothing is appended
 * then. */
ft_status_t ft_ref_session_eval(ft_ref_session_t *session, const int32_t *tokens, uint32_t n,
                                double *logits_out);

/* A fresh sequence of n tokens: logits_out receives n x vocab_size. */
ft_status_t ft_ref_eval(const ft_ref_model_t *model, const int32_t *tokens, uint32_t n,
                        double *logits_out);

#endif
