/* Multi-head latent attention (DeepSeek V2/V3) in double, for the float64
 * reference forward (ref_forward.c) and the MLA tests: one head's
 * attention over a compressed cache in both forms, and RoPE with YaRN over
 * either pairing. Test code only. */
#ifndef FT_REF_MLA_H
#define FT_REF_MLA_H

#include <stdint.h>

typedef struct ft_ref_mla_dims {
    uint32_t nope, rope, kv_lora, v; /* a q/k head is nope + rope wide */
    double scale;                    /* the softmax scale */
} ft_ref_mla_dims_t;

/* Head h over positions 0 .. n_pos - 1, rows [n_pos][kv_lora + rope] each
 * [c_j | kr_j] (kr rotated), q [nope + rope] (its RoPE part rotated),
 * wkb_h [nope][kv_lora] and wvb_h [v][kv_lora] this head's matrices;
 * out [v]. The expanded form decompresses every position (k_j = [W_kb c_j |
 * kr_j], v_j = W_vb c_j) and attends over them; the absorbed form takes q
 * into the compressed space (W_kb^T q_nope), attends over the rows and
 * decompresses the weighted sum once (W_vb). Both allocate n_pos doubles;
 * 0 when out of memory. */
int ft_ref_mla_head_expanded(const ft_ref_mla_dims_t *dm, const double *wkb_h, const double *wvb_h,
                             const double *q, const double *rows, uint32_t n_pos, double *out);
int ft_ref_mla_head_absorbed(const ft_ref_mla_dims_t *dm, const double *wkb_h, const double *wvb_h,
                             const double *q, const double *rows, uint32_t n_pos, double *out);

/* RoPE of rope_dim floats at x, adjacent pairs (interleaved) or NeoX
 * halves, at position pos; factor 0: plain theta^(-2i/d), else YaRN's
 * frequencies (llama.cpp's rope_yarn, as ref_forward.c's) with cos and
 * sin times mscale. */
void ft_ref_mla_rope(double *x, uint32_t rope_dim, int interleaved, uint32_t pos, double theta, double factor,
                     uint32_t orig_ctx, double beta_fast, double beta_slow, double mscale);

#endif
