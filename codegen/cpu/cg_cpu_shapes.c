/* The kernels a model needs: its distinct matrix shapes and formats, read
 * from the IR's tensor table, one fused expert per expert shape, and the
 * ABI 2 fusions: RMSNorm + preparation for the products that follow a
 * norm (attention q/k/v, router, output), the router with its softmax and
 * top-k, and attention per (query heads per KV head, head_dim); ABI 4's
 * Gated DeltaNet recurrence per (value heads, key heads, tiling, head_dim);
 * ABI 5's latent attention per (q_nope, RoPE, kv_lora, value widths). */
#include "cg_cpu_internal.h"

#include <stdlib.h>

static int ft_cg_role_is_matmul(ft_tensor_role_t r)
{
    switch (r) {
    case FT_ROLE_OUTPUT: case FT_ROLE_ATTN_Q: case FT_ROLE_ATTN_K: case FT_ROLE_ATTN_V:
    case FT_ROLE_ATTN_O: case FT_ROLE_FFN_ROUTER: case FT_ROLE_FFN_GATE: case FT_ROLE_FFN_UP:
    case FT_ROLE_FFN_DOWN: case FT_ROLE_FFN_GATE_EXPS: case FT_ROLE_FFN_UP_EXPS:
    case FT_ROLE_FFN_DOWN_EXPS: case FT_ROLE_FFN_GATE_SHEXP: case FT_ROLE_FFN_UP_SHEXP:
    case FT_ROLE_FFN_DOWN_SHEXP:
        return 1;
    default:
        return 0;
    }
}

/* Appends k unless present or unsupported (the runtime falls back then). */
static void ft_cg_add(ft_cg_kreq_t *v, uint32_t *n, ft_cg_kreq_t k)
{
    if (!ft_cg_cpu_format_supported(k.format) ||
        (k.op == FT_KABI_OP_EXPERT && !ft_cg_cpu_format_supported(k.format_aux)))
        return;
    /* elements per block (dtype.h's table); format_aux is 0 but for experts */
    const ft_dtype_info_t *fi = ft_dtype_info((ft_dtype_t)(k.format & ~FT_KABI_LAYOUT_R16));
    const ft_dtype_info_t *fa = ft_dtype_info((ft_dtype_t)(k.format_aux & ~FT_KABI_LAYOUT_R16));
    const uint32_t blk = fi->block_elems, blk_aux = fa ? fa->block_elems : 1;
    if (k.rows == 0 || k.cols == 0 || k.cols % blk || (k.op == FT_KABI_OP_EXPERT && k.rows % blk_aux) ||
        (k.op == FT_KABI_OP_ATTN && (uint64_t)k.rows * k.cols > 8192))
        return;
    for (uint32_t i = 0; i < *n; i++)
        if (v[i].op == k.op && v[i].format == k.format && v[i].format_aux == k.format_aux &&
            v[i].rows == k.rows && v[i].cols == k.cols)
            return;
    v[(*n)++] = k;
}

static const ft_ir_tensor_t *ft_cg_find(const ft_ir_model_t *m, int32_t layer, ft_tensor_role_t role,
                                        uint32_t *index)
{
    for (uint32_t i = 0; i < m->n_tensors; i++)
        if (m->tensors[i].layer == layer && m->tensors[i].role == role) {
            *index = i;
            return &m->tensors[i];
        }
    return NULL;
}

ft_status_t ft_cg_cpu_kernels(const ft_ir_model_t *m, const ft_dtype_t *tensor_formats,
                              const uint32_t *tensor_layouts, ft_cg_cpu_kernel_t **out, uint32_t *out_n)
{
    *out = NULL;
    *out_n = 0;
    if (!m)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "codegen: no model");
    /* at most a matmul, a norm and a router per tensor, an expert, two
     * attentions (f32 and f16 KV) and a DeltaNet per layer */
    const size_t cap = 3 * (size_t)m->n_tensors + 4 * (size_t)m->hp.n_layers + 1;
    ft_cg_kreq_t *v = calloc(cap, sizeof(*v));
    if (!v)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "codegen: %zu kernel requests", cap);
    uint32_t n = 0;
#define FT_CG_FMT(i) ((uint32_t)(tensor_formats ? tensor_formats[i] : m->tensors[i].dtype))
    /* a product's key: its format and layout bit (FT_WLAYOUT_Q8_0_R16 = 1) */
#define FT_CG_KFMT(i) (FT_CG_FMT(i) | (tensor_layouts && tensor_layouts[i] == 1u ? FT_KABI_LAYOUT_R16 : 0u))
    for (uint32_t i = 0; i < m->n_tensors; i++) {
        const ft_ir_tensor_t *t = &m->tensors[i];
        if (!ft_cg_role_is_matmul(t->role) || t->n_dims < 2 || t->n_dims > 3 ||
            t->shape[t->n_dims - 2] > UINT32_MAX || t->shape[t->n_dims - 1] > UINT32_MAX)
            continue;
        ft_cg_add(v, &n, (ft_cg_kreq_t){FT_KABI_OP_MATMUL, FT_CG_KFMT(i), 0,
                                        (uint32_t)t->shape[t->n_dims - 2],
                                        (uint32_t)t->shape[t->n_dims - 1]});
    }
    for (uint32_t l = 0; l < m->hp.n_layers; l++) {
        uint32_t ig = 0, iu = 0, id = 0;
        const ft_ir_tensor_t *g = ft_cg_find(m, (int32_t)l, FT_ROLE_FFN_GATE_EXPS, &ig);
        const ft_ir_tensor_t *u = ft_cg_find(m, (int32_t)l, FT_ROLE_FFN_UP_EXPS, &iu);
        const ft_ir_tensor_t *d = ft_cg_find(m, (int32_t)l, FT_ROLE_FFN_DOWN_EXPS, &id);
        if (!g || !u || !d || g->n_dims != 3 || u->n_dims != 3 || d->n_dims != 3 ||
            FT_CG_KFMT(ig) != FT_CG_KFMT(iu) || g->shape[1] != u->shape[1] || g->shape[2] != u->shape[2] ||
            d->shape[1] != g->shape[2] || d->shape[2] != g->shape[1] || g->shape[1] > UINT32_MAX ||
            g->shape[2] > UINT32_MAX)
            continue;
        ft_cg_add(v, &n, (ft_cg_kreq_t){FT_KABI_OP_EXPERT, FT_CG_KFMT(ig), FT_CG_KFMT(id),
                                        (uint32_t)g->shape[1], (uint32_t)g->shape[2]});
    }
    for (uint32_t i = 0; i < m->n_tensors; i++) {
        const ft_ir_tensor_t *t = &m->tensors[i];
        const int normed = t->role == FT_ROLE_ATTN_Q || t->role == FT_ROLE_FFN_ROUTER ||
                           t->role == FT_ROLE_OUTPUT || t->role == FT_ROLE_FFN_GATE_EXPS ||
                           (t->role == FT_ROLE_TOKEN_EMBD && m->hp.tie_embeddings);
        const uint32_t nd = t->n_dims;
        if (!normed || nd < 2 || nd > 3 || t->shape[nd - 2] > UINT32_MAX || t->shape[nd - 1] > UINT32_MAX)
            continue;
        const uint32_t rows = (uint32_t)t->shape[nd - 2], cols = (uint32_t)t->shape[nd - 1];
        ft_cg_add(v, &n, (ft_cg_kreq_t){FT_KABI_OP_NORM_PREPARE, FT_CG_FMT(i), 0, cols, cols});
        if (t->role == FT_ROLE_FFN_ROUTER)
            ft_cg_add(v, &n, (ft_cg_kreq_t){FT_KABI_OP_ROUTER, FT_CG_FMT(i), 0, rows, cols});
    }
    for (uint32_t l = 0; m->blocks && l < m->hp.n_layers; l++) {
        const ft_ir_attention_t *a = &m->blocks[l].attn;
        /* the recurrence per (value heads, key heads, tiling, head_dim) */
        if (a->kind == FT_ATTN_GATED_DELTANET && a->n_kv_heads && a->n_heads % a->n_kv_heads == 0 &&
            a->n_kv_heads < FT_KABI_DELTANET_TILED && a->n_heads <= 4096 && a->head_dim <= 1024)
            ft_cg_add(v, &n, (ft_cg_kreq_t){FT_KABI_OP_DELTANET, FT_KABI_FMT_F32,
                                            a->n_kv_heads | (a->heads_tiled ? FT_KABI_DELTANET_TILED : 0),
                                            a->n_heads, a->head_dim});
        /* MLA per (q_nope, RoPE, kv_lora, values): W_kb / W_vb widened per head, f32 */
        if (a->kind == FT_ATTN_MLA && a->nope_head_dim && a->nope_head_dim <= 4096 && m->hp.rope_dim &&
            m->hp.rope_dim <= 4096 && a->kv_lora_rank && a->kv_lora_rank <= 16384 && a->value_head_dim &&
            a->value_head_dim <= 4096) {
            ft_cg_add(v, &n, (ft_cg_kreq_t){FT_KABI_OP_MLA, FT_KABI_FMT_F32,
                                            FT_KABI_MLA_AUX(m->hp.rope_dim, a->value_head_dim),
                                            a->nope_head_dim, a->kv_lora_rank});
            continue;
        }
        /* both KV element types: the runtime binds the plan's kv_format */
        for (int kv16 = 0; kv16 < 2; kv16++)
            if (a->n_kv_heads && a->n_heads % a->n_kv_heads == 0 && a->head_dim == a->value_head_dim)
                ft_cg_add(v, &n, (ft_cg_kreq_t){FT_KABI_OP_ATTN, kv16 ? FT_KABI_FMT_F16 : FT_KABI_FMT_F32, 0,
                                                a->n_heads / a->n_kv_heads, a->head_dim});
    }
#undef FT_CG_KFMT
#undef FT_CG_FMT
    *out = v;
    *out_n = n;
    return FT_OK;
}

ft_status_t ft_cg_cpu_emit(const ft_ir_model_t *m, const ft_dtype_t *tensor_formats,
                           const uint32_t *tensor_layouts, const char *isa, char **out_source)
{
    *out_source = NULL;
    ft_cg_kreq_t *v = NULL;
    uint32_t n = 0;
    ft_status_t st = ft_cg_cpu_kernels(m, tensor_formats, tensor_layouts, &v, &n);
    if (!st)
        st = ft_cg_cpu_emit_kernels(v, n, isa, NULL, 0, out_source);
    free(v);
    return st;
}
