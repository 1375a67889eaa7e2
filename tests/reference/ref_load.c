/* Loading the reference model: find each tensor of the plan by role and
 * layer, check its shape, and dequantize it row by row to double with the
 * reference's own dequantizer (ref_dequant.c, not the runtime's). */
#include "ref_dequant.h"
#include "ref_forward.h"

#include "../../runtime/format/bundle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const Ftplan__Tensor *ref_find(const Ftplan__Plan *plan, Ftplan__TensorRole role, int layer)
{
    for (size_t i = 0; i < plan->n_tensors; i++)
        if (plan->tensors[i]->role == role && plan->tensors[i]->layer == layer)
            return plan->tensors[i];
    return NULL;
}

/* Rows stored in the plan's layout 1 (runtime/format/wlayout.h, read from
 * its definition there, not through the runtime's code): groups of 16
 * rows; in a group, block b of row j has its fp16 scale at b*544 + 2j and
 * its quant c at b*544 + 32 + (c/4)*64 + 4j + c%4, stored as q + 128. */
static ft_status_t ref_rows_r16(const uint8_t *p, ft_dtype_t dt, uint64_t n_rows, uint64_t cols,
                                uint64_t row_bytes, double *out)
{
    if (dt != FT_DTYPE_Q8_0 || n_rows % 16 || cols % 32)
        return ft_status_make(FT_STATUS_FORMAT, "layout 1 holds Q8_0 rows in groups of 16");
    uint8_t *row = malloc(row_bytes);
    if (!row) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    ft_status_t st = FT_OK;
    for (uint64_t r = 0; r < n_rows && !st; r++) {
        const uint8_t *g = p + (r / 16) * 16 * row_bytes;
        const uint64_t j = r % 16;
        for (uint64_t b = 0; b < cols / 32; b++) {
            row[b * 34] = g[b * 544 + 2 * j];
            row[b * 34 + 1] = g[b * 544 + 2 * j + 1];
            for (uint64_t c = 0; c < 32; c++)
                row[b * 34 + 2 + c] = (uint8_t)(g[b * 544 + 32 + (c / 4) * 64 + 4 * j + c % 4] - 128u);
        }
        st = ft_ref_dequant_row(dt, row, cols, out + r * cols);
    }
    free(row);
    return st;
}

/* Dequantizes n_rows rows of cols elements starting at file offset `at`. */
static ft_status_t ref_rows(const ft_bundle_t *b, const Ftplan__Tensor *t, uint64_t at,
                            uint64_t n_rows, uint64_t cols, double *out)
{
    const ft_dtype_t dt = (ft_dtype_t)t->format;
    const uint64_t row_bytes = ft_ref_row_bytes(dt, cols);
    if (!row_bytes)
        return ft_status_make(FT_STATUS_FORMAT, "tensor '%s': bad row of %llu %s elements", t->name,
                              (unsigned long long)cols, ft_dtype_name(dt));
    const uint8_t *p;
    ft_status_t st = ft_ftw_range(b->weight_files[t->file], at, n_rows * row_bytes, &p);
    if (!st && t->layout == 1) /* Q8_0 rows interleaved by 16: put each row back */
        return ft_status_annotate(ref_rows_r16(p, dt, n_rows, cols, row_bytes, out), "tensor '%s'", t->name);
    if (!st && t->layout != 0)
        st = ft_status_make(FT_STATUS_UNSUPPORTED, "layout %u", t->layout);
    for (uint64_t r = 0; r < n_rows && !st; r++)
        st = ft_ref_dequant_row(dt, p + r * row_bytes, cols, out + r * cols);
    return ft_status_annotate(st, "tensor '%s'", t->name);
}

/* Loads the tensor of this role and layer, which must have exactly the
 * shape dims[0..n_dims) (an expert stack: [n_experts, rows, cols]). */
static ft_status_t ref_tensor(const ft_bundle_t *b, Ftplan__TensorRole role, int layer,
                              uint32_t n_dims, const uint64_t *dims, double **out,
                              ft_dtype_t *out_fmt)
{
    *out = NULL;
    const Ftplan__Tensor *t = ref_find(b->plan, role, layer);
    if (!t)
        return ft_status_make(FT_STATUS_FORMAT, "no tensor of role %d in layer %d", (int)role,
                              layer);
    if (out_fmt) *out_fmt = (ft_dtype_t)t->format;
    int same = t->n_shape == n_dims;
    for (uint32_t d = 0; same && d < n_dims; d++)
        same = t->shape[d] == dims[d];
    if (!same || (n_dims == 3) != (t->expert_stride != 0))
        return ft_status_make(FT_STATUS_MISMATCH, "tensor '%s': unexpected shape or layout",
                              t->name);
    uint64_t n = 1;
    for (uint32_t d = 0; d < n_dims; d++)
        n *= dims[d]; /* small test models: no overflow */
    double *w = malloc(n * sizeof(double));
    if (!w) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "tensor '%s': out of memory", t->name);
    const uint64_t cols = dims[n_dims - 1];
    ft_status_t st;
    if (n_dims == 3) {
        const uint64_t slice = dims[1] * cols;
        st = FT_OK;
        for (uint64_t e = 0; e < dims[0] && !st; e++)
            st = ref_rows(b, t, t->offset + e * t->expert_stride, dims[1], cols, w + e * slice);
    } else {
        st = ref_rows(b, t, t->offset, n / cols, cols, w);
    }
    if (st) {
        free(w);
        return st;
    }
    *out = w;
    return FT_OK;
}

/* Vectors (norm weights), matrices and expert stacks; matrices record
 * their storage format in *fmt. */
#define REF_T1(role, layer, a, out) ref_tensor(b, role, layer, 1, (uint64_t[]){a}, out, NULL)
#define REF_T2(role, layer, a, c, out, fmt)                                                        \
    ref_tensor(b, role, layer, 2, (uint64_t[]){a, c}, out, fmt)
#define REF_T3(role, layer, a, r, c, out, fmt)                                                     \
    ref_tensor(b, role, layer, 3, (uint64_t[]){a, r, c}, out, fmt)

/* Refuses a block this reference does not compute. */
static ft_status_t ref_block_check(const Ftplan__Block *blk, uint32_t l)
{
    const Ftplan__Attention *a = blk->attn;
    const Ftplan__Moe *m = blk->moe;
    if (!a || a->kind != FTPLAN__ATTN_KIND__ATTN_GQA || !a->qk_norm || a->sliding_window ||
        a->has_sinks || a->has_bias || a->has_out_gate || !a->n_kv_heads || a->n_heads % a->n_kv_heads)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "layer %u: only GQA with q/k norms and no bias, sinks, output gate or window", l);
    if (!blk->is_moe || !m || m->scoring != FTPLAN__ROUTER_SCORING__ROUTER_SOFTMAX ||
        m->n_shared_experts || m->has_router_bias ||
        (m->routed_scaling != 0.0f && m->routed_scaling != 1.0f) ||
        blk->act != FTPLAN__ACTIVATION__ACT_SILU || !m->n_experts_used ||
        m->n_experts_used > m->n_experts)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "layer %u: only softmax-routed SiLU MoE without shared experts", l);
    return FT_OK;
}

static ft_status_t ref_load_layer(const ft_bundle_t *b, uint32_t l, ft_ref_model_t *m)
{
    const Ftplan__Block *blk = b->plan->blocks[l];
    ft_status_t st = ref_block_check(blk, l);
    if (st) return st;
    ft_ref_layer_t *L = &m->layers[l];
    L->n_heads = blk->attn->n_heads;
    L->n_kv_heads = blk->attn->n_kv_heads;
    L->head_dim = blk->attn->head_dim;
    L->value_head_dim = blk->attn->value_head_dim ? blk->attn->value_head_dim : L->head_dim;
    L->n_experts = blk->moe->n_experts;
    L->n_experts_used = blk->moe->n_experts_used;
    L->expert_ffn = blk->moe->expert_ffn;
    L->norm_topk_prob = blk->moe->norm_topk_prob;
    L->routed_scaling = 1.0;
    L->qk_norm = 1; /* ref_block_check: a qwen3moe bundle always has them */
    if (L->head_dim < m->rope_dim || m->rope_dim % 2)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "layer %u: rope_dim %u vs head_dim %u", l,
                              m->rope_dim, L->head_dim);
    const uint64_t d = m->d_model, hd = L->head_dim, vd = L->value_head_dim;
    const uint64_t E = L->n_experts, F = L->expert_ffn;
    const int li = (int)l;
    if ((st = REF_T1(FTPLAN__TENSOR_ROLE__ROLE_ATTN_NORM, li, d, &L->attn_norm)) ||
        (st = REF_T2(FTPLAN__TENSOR_ROLE__ROLE_ATTN_Q, li, L->n_heads * hd, d, &L->wq,
                     &L->fmt_wq)) ||
        (st = REF_T2(FTPLAN__TENSOR_ROLE__ROLE_ATTN_K, li, L->n_kv_heads * hd, d, &L->wk,
                     &L->fmt_wk)) ||
        (st = REF_T2(FTPLAN__TENSOR_ROLE__ROLE_ATTN_V, li, L->n_kv_heads * vd, d, &L->wv,
                     &L->fmt_wv)) ||
        (st = REF_T2(FTPLAN__TENSOR_ROLE__ROLE_ATTN_O, li, d, L->n_heads * vd, &L->wo,
                     &L->fmt_wo)) ||
        (st = REF_T1(FTPLAN__TENSOR_ROLE__ROLE_ATTN_Q_NORM, li, hd, &L->q_norm)) ||
        (st = REF_T1(FTPLAN__TENSOR_ROLE__ROLE_ATTN_K_NORM, li, hd, &L->k_norm)) ||
        (st = REF_T1(FTPLAN__TENSOR_ROLE__ROLE_FFN_NORM, li, d, &L->ffn_norm)) ||
        (st = REF_T2(FTPLAN__TENSOR_ROLE__ROLE_FFN_ROUTER, li, E, d, &L->router, &L->fmt_router)) ||
        (st = REF_T3(FTPLAN__TENSOR_ROLE__ROLE_FFN_GATE_EXPS, li, E, F, d, &L->gate,
                     &L->fmt_gate)) ||
        (st = REF_T3(FTPLAN__TENSOR_ROLE__ROLE_FFN_UP_EXPS, li, E, F, d, &L->up, &L->fmt_up)) ||
        (st = REF_T3(FTPLAN__TENSOR_ROLE__ROLE_FFN_DOWN_EXPS, li, E, d, F, &L->down, &L->fmt_down)))
        return st;
    return FT_OK;
}

static ft_status_t ref_load(const ft_bundle_t *b, ft_ref_model_t *m)
{
    const Ftplan__Hparams *hp = b->plan->hparams;
    if (hp->arch != FTPLAN__ARCH__ARCH_QWEN3MOE || hp->norm != FTPLAN__NORM_KIND__NORM_RMS ||
        hp->rope != FTPLAN__ROPE_KIND__ROPE_NEOX)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "only qwen3moe with RMS norms and NeoX RoPE");
    m->n_layers = hp->n_layers;
    m->d_model = hp->d_model;
    m->vocab_size = hp->vocab_size;
    m->context_length = hp->context_length;
    m->norm_eps = hp->norm_eps;
    m->rope_theta = hp->rope_theta;
    m->rope_dim = hp->rope_dim;
    m->tie_embeddings = hp->tie_embeddings;
    const uint64_t d = m->d_model, V = m->vocab_size;
    ft_status_t st;
    if ((st = REF_T2(FTPLAN__TENSOR_ROLE__ROLE_TOKEN_EMBD, -1, V, d, &m->tok_embd, NULL)) ||
        (st = REF_T1(FTPLAN__TENSOR_ROLE__ROLE_OUTPUT_NORM, -1, d, &m->output_norm)))
        return st;
    if (m->tie_embeddings) {
        m->output = m->tok_embd;
        m->fmt_output =
            (ft_dtype_t)ref_find(b->plan, FTPLAN__TENSOR_ROLE__ROLE_TOKEN_EMBD, -1)->format;
    } else if ((st =
                    REF_T2(FTPLAN__TENSOR_ROLE__ROLE_OUTPUT, -1, V, d, &m->output, &m->fmt_output)))
        return st;
    m->layers = calloc(m->n_layers ? m->n_layers : 1, sizeof(*m->layers));
    if (!m->layers) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    for (uint32_t l = 0; l < m->n_layers; l++)
        if ((st = ref_load_layer(b, l, m))) return st;
    return FT_OK;
}

ft_status_t ft_ref_model_load(const char *bundle_path, ft_ref_model_t **out_model)
{
    *out_model = NULL;
    ft_bundle_t *b = NULL;
    ft_status_t st = ft_bundle_open(bundle_path, &b);
    if (st) return st;
    ft_ref_model_t *m = calloc(1, sizeof(*m));
    if (!m)
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    else
        st = ref_load(b, m);
    ft_bundle_close(b);
    if (st) {
        ft_ref_model_free(m);
        return ft_status_annotate(st, "%s: reference model", bundle_path);
    }
    *out_model = m;
    return FT_OK;
}

void ft_ref_model_free(ft_ref_model_t *m)
{
    if (!m) return;
    for (uint32_t l = 0; m->layers && l < m->n_layers; l++) {
        ft_ref_layer_t *L = &m->layers[l];
        double *all[] = {
            L->attn_norm,   L->wq,       L->wk,          L->wv,     L->wo,       L->q_norm,
            L->k_norm,      L->ffn_norm, L->router,      L->gate,   L->up,       L->down,
            L->bq,          L->bk,       L->bv,          L->bo,     L->sinks,    L->w_gate,
            L->router_bias, L->b_gate,   L->b_up,        L->b_down, L->sel_bias, L->sh_gate,
            L->sh_up,       L->sh_down,  L->sh_gate_inp, L->dn_qkv, L->dn_z,     L->dn_beta,
            L->dn_alpha,    L->dn_conv,  L->dn_dt_bias,  L->dn_a,   L->dn_norm,  L->dn_out,
            L->wq_a,        L->q_a_norm, L->wq_b,        L->wkv_a,  L->wk_rope,  L->kv_a_norm,
            L->wkb,         L->wvb};
        for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
            free(all[i]);
    }
    free(m->layers);
    if (m->output != m->tok_embd) free(m->output);
    free(m->tok_embd);
    free(m->output_norm);
    free(m);
}
