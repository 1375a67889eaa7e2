/* The quantization mixes of llama.cpp's llama-quantize, decided per tensor
 * as its llama_tensor_get_type does (src/llama-quant.cpp, read in
 * JohannesGaessler/llama.cpp at 5a44f27; docs/quant-mixes.md lists the
 * rules). Only the branches that the file types here reach, for the
 * architectures freetoken imports, without an importance matrix:
 *
 *   output (or token_embd when the model has no output matrix):
 *       Q8_0 when its rows are not whole blocks of the base type or the
 *       base type is Q8_0, else Q6_K;
 *   attn_v: Q3_K_M: Q5_K for the first two attn_v tensors, Q4_K after;
 *       Q4_K_M, Q5_K_M: Q6_K where use_more_bits(i, n) over the attn_v
 *       tensors (i-th of n, file order = layer order); Q8_0 when the model
 *       has exactly 8 experts (any of these types);
 *   attn_k: Q8_0 with exactly 8 experts;
 *   ffn_down (dense, experts, shared experts), per layer i of n:
 *       Q3_K_M: Q5_K for i < n/16, else Q4_K; Q4_K_M, Q5_K_M: Q6_K where
 *       use_more_bits(i, n);
 *   attn_output: Q3_K_M: Q4_K, and with exactly 8 experts Q5_K for
 *       Q3_K_M and Q4_K_M;
 *   everything else: the base type (Q3_K, Q4_K, Q5_K, Q6_K, Q8_0).
 * use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2.
 * A type whose block does not divide the row length falls back as llama's
 * does (Q2_K/Q3_K -> IQ4_NL, Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0),
 * then to F16. Left out: Falcon's rules and the 70B attn_v bump (no such
 * architecture here), and the quantizer's list of tensors it never
 * quantizes beyond what the caller keeps (norms, biases, routers) and the
 * short convolution of recurrent layers (kept in its source format). */
#include "quant_mix.h"

#include <strings.h>

static const char *const ft_quant_mix_names[FT_QUANT_MIX_COUNT] = {
    [FT_QUANT_MIX_NONE] = "none",     [FT_QUANT_MIX_Q3_K_M] = "q3_k_m",
    [FT_QUANT_MIX_Q4_K_M] = "q4_k_m", [FT_QUANT_MIX_Q5_K_M] = "q5_k_m",
    [FT_QUANT_MIX_Q6_K] = "q6_k",     [FT_QUANT_MIX_Q8_0] = "q8_0",
};

ft_quant_mix_t ft_quant_mix_from_name(const char *name)
{
    for (int i = FT_QUANT_MIX_Q3_K_M; i <= FT_QUANT_MIX_Q5_K_M; i++)
        if (strcasecmp(name, ft_quant_mix_names[i]) == 0)
            return (ft_quant_mix_t)i;
    return FT_QUANT_MIX_NONE;
}

const char *ft_quant_mix_name(ft_quant_mix_t mix)
{
    return mix > FT_QUANT_MIX_NONE && mix < FT_QUANT_MIX_COUNT ? ft_quant_mix_names[mix] : "none";
}

static ft_dtype_t ft_quant_mix_base(ft_quant_mix_t mix)
{
    switch (mix) {
    case FT_QUANT_MIX_Q3_K_M: return FT_DTYPE_Q3_K;
    case FT_QUANT_MIX_Q4_K_M: return FT_DTYPE_Q4_K;
    case FT_QUANT_MIX_Q5_K_M: return FT_DTYPE_Q5_K;
    case FT_QUANT_MIX_Q6_K: return FT_DTYPE_Q6_K;
    case FT_QUANT_MIX_Q8_0: return FT_DTYPE_Q8_0;
    default: return FT_DTYPE_INVALID;
    }
}

static int ft_quant_mix_more_bits(int i, int n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* The model's number of experts (0 without MoE layers). */
static uint32_t ft_quant_mix_experts(const ft_ir_model_t *m)
{
    for (uint32_t i = 0; i < m->n_tensors; i++)
        if (m->tensors[i].role == FT_ROLE_FFN_GATE_EXPS && m->tensors[i].n_dims == 3)
            return (uint32_t)m->tensors[i].shape[0];
    return 0;
}

/* t's index among the tensors of its role (in layer order) and their count. */
static void ft_quant_mix_rank(const ft_ir_model_t *m, const ft_ir_tensor_t *t, int *i, int *n)
{
    *i = 0;
    *n = 0;
    for (uint32_t k = 0; k < m->n_tensors; k++) {
        const ft_ir_tensor_t *o = &m->tensors[k];
        if (o->role != t->role)
            continue;
        (*n)++;
        if (o->layer < t->layer)
            (*i)++;
    }
}

static int ft_quant_mix_has_output(const ft_ir_model_t *m)
{
    for (uint32_t i = 0; i < m->n_tensors; i++)
        if (m->tensors[i].role == FT_ROLE_OUTPUT)
            return 1;
    return 0;
}

static int ft_quant_mix_fits(ft_dtype_t d, uint64_t cols)
{
    return cols % ft_dtype_info(d)->block_elems == 0;
}

/* llama's convert_incompatible_tensor fallbacks for the types reached here. */
static ft_dtype_t ft_quant_mix_fallback(ft_dtype_t d, uint64_t cols)
{
    if (ft_quant_mix_fits(d, cols))
        return d;
    switch (d) {
    case FT_DTYPE_Q2_K: case FT_DTYPE_Q3_K: case FT_DTYPE_IQ4_XS: d = FT_DTYPE_IQ4_NL; break;
    case FT_DTYPE_Q4_K: d = FT_DTYPE_Q5_0; break;
    case FT_DTYPE_Q5_K: d = FT_DTYPE_Q5_1; break;
    case FT_DTYPE_Q6_K: d = FT_DTYPE_Q8_0; break;
    default: break;
    }
    return ft_quant_mix_fits(d, cols) ? d : FT_DTYPE_F16;
}

ft_dtype_t ft_quant_mix_dtype(const ft_ir_model_t *m, const ft_ir_tensor_t *t, ft_quant_mix_t mix)
{
    const ft_dtype_t base = ft_quant_mix_base(mix);
    if (base == FT_DTYPE_INVALID || t->n_dims < 2)
        return t->dtype;
    if (t->role == FT_ROLE_SSM_CONV)
        return t->dtype; /* llama-quantize keeps ssm_conv1d */
    const uint64_t cols = t->shape[t->n_dims - 1];
    const uint32_t n_expert = ft_quant_mix_experts(m);
    const int n_layer = (int)m->hp.n_layers, layer = t->layer;
    ft_dtype_t d = base;
    if (t->role == FT_ROLE_OUTPUT || (t->role == FT_ROLE_TOKEN_EMBD && !ft_quant_mix_has_output(m))) {
        d = !ft_quant_mix_fits(base, cols) || base == FT_DTYPE_Q8_0 ? FT_DTYPE_Q8_0 : FT_DTYPE_Q6_K;
    } else if (t->role == FT_ROLE_ATTN_V) {
        int i, n;
        ft_quant_mix_rank(m, t, &i, &n);
        if (mix == FT_QUANT_MIX_Q3_K_M)
            d = i < 2 ? FT_DTYPE_Q5_K : FT_DTYPE_Q4_K;
        else if ((mix == FT_QUANT_MIX_Q4_K_M || mix == FT_QUANT_MIX_Q5_K_M) && ft_quant_mix_more_bits(i, n))
            d = FT_DTYPE_Q6_K;
        if (n_expert == 8)
            d = FT_DTYPE_Q8_0;
    } else if (t->role == FT_ROLE_ATTN_K) {
        if (n_expert == 8)
            d = FT_DTYPE_Q8_0;
    } else if (t->role == FT_ROLE_FFN_DOWN || t->role == FT_ROLE_FFN_DOWN_EXPS ||
               t->role == FT_ROLE_FFN_DOWN_SHEXP) {
        if (mix == FT_QUANT_MIX_Q3_K_M)
            d = layer < n_layer / 16 ? FT_DTYPE_Q5_K : FT_DTYPE_Q4_K;
        else if ((mix == FT_QUANT_MIX_Q4_K_M || mix == FT_QUANT_MIX_Q5_K_M) &&
                 ft_quant_mix_more_bits(layer, n_layer))
            d = FT_DTYPE_Q6_K;
    } else if (t->role == FT_ROLE_ATTN_O) {
        if (n_expert == 8 && (mix == FT_QUANT_MIX_Q3_K_M || mix == FT_QUANT_MIX_Q4_K_M))
            d = FT_DTYPE_Q5_K;
        else if (n_expert != 8 && mix == FT_QUANT_MIX_Q3_K_M)
            d = FT_DTYPE_Q4_K;
    }
    return ft_quant_mix_fallback(d, cols);
}
