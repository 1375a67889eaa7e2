/* The lowering shared by the pre-norm GQA decoders with a routed MoE FFN
 * (Qwen3-MoE, Mixtral, GLM-4.5): per block
 *
 *   h = rmsnorm(x) ; q, k, v = h Wq, h Wk, h Wv [+ biases] ; [q/k head norms] ;
 *   rope(q, k) ; kv append ; att = attention(q) [with sinks] ;
 *   [g = h Wg ; g = sigmoid(g) * att ; (the gated output: a GLU of act
 *   SIGMOID; Wo then reads g)] ; x += att Wo [+ bias] ;
 *   h = rmsnorm(x) ; route(h [+ logit bias]) ; x += moe(h) [expert biases]
 *
 * (the ROUTER op takes the layer's selection bias as a second weight when
 * the IR has one; a block with shared experts runs them, ungated, on the
 * same h between the ROUTER and the MOE:
 *
 *   h = rmsnorm(x) ; route(h) ; g, u = h Wg_sh, h Wu_sh ; g = act(g) * u ;
 *   x += g Wd_sh ; x += moe(h)
 *
 * so x gets the shared expert's output first, then the routed experts':
 * the MOE stays the block's last op, as the device's graph segments and
 * the expert dispatch expect, and the norm's consumers stay contiguous.)
 *
 * or, in a dense block (Qwen3-MoE's mlp_only_layers), after the attention
 *
 *   h = rmsnorm(x) ; g, u = h Wg, h Wu ; g = act(g) * u ; x += g Wd
 *
 * and around the blocks the token embedding and the output head. What
 * differs between the families is data the IR already holds (q/k norm,
 * the RoPE style, the router's renormalization), so one function serves
 * them; a family with another block shape gets its own lowering. */
#include "lowering.h"

#include <string.h>

#define FT_LOWER_MAX_FFN_WIDTHS 8

typedef struct ft_lower_bufs {
    uint32_t x, h, q, k, v, att, o, logits;
    uint32_t gate; /* the attention output gate's rows; ~0u: no layer has one */
    uint32_t sh_gate; /* the shared expert's one-float sigmoid gate; ~0u: none */
    /* Gated DeltaNet blocks (all of one shape): the conv's q | k | v rows,
     * z, beta's logits, alpha and the output; ~0u: no such block. */
    uint32_t dn_qkv, dn_z, dn_b, dn_a, dn_o;
    /* Latent attention blocks (all of one shape): the low-rank q, the
     * compressed KV, the RoPE key and the heads' values; ~0u: none. */
    uint32_t mla_qa, mla_c, mla_kr, mla_o;
    /* A dense FFN's gate and up rows, one pair per distinct width. */
    uint32_t n_ffn, ffn_width[FT_LOWER_MAX_FFN_WIDTHS], fg[FT_LOWER_MAX_FFN_WIDTHS], fu[FT_LOWER_MAX_FFN_WIDTHS];
} ft_lower_bufs_t;

/* The width of block l's dense FFN, or of its shared experts together
 * (one wide ungated FFN), or 0. */
static uint32_t ft_lower_ffn_width(const ft_ir_block_t *blk)
{
    return blk->is_moe ? blk->moe.n_shared_experts * blk->moe.shared_ffn : blk->dense_ffn;
}

/* The index of the gate/up buffer pair of this width. */
static uint32_t ft_lower_ffn_pair(const ft_lower_bufs_t *b, uint32_t width)
{
    uint32_t j = 0;
    while (j < b->n_ffn && b->ffn_width[j] != width)
        j++;
    return j;
}

FT_WARN_UNUSED static ft_status_t ft_lower_buffers(const ft_ir_model_t *m, ft_ir_schedule_t *s, ft_lower_bufs_t *b)
{
    uint32_t q_dim = 0, kv_dim = 0;
    int gated = 0, sh_gated = 0;
    const ft_ir_attention_t *dn = NULL, *mla = NULL;
    for (uint32_t l = 0; l < m->hp.n_layers; l++) {
        const ft_ir_attention_t *a = &m->blocks[l].attn;
        if (a->kind == FT_ATTN_MLA) {
            if (mla && (mla->n_heads != a->n_heads || mla->head_dim != a->head_dim ||
                        mla->value_head_dim != a->value_head_dim || mla->kv_lora_rank != a->kv_lora_rank ||
                        mla->q_lora_rank != a->q_lora_rank))
                return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: layer %u: latent attention layers of different "
                                      "shapes", m->source_name, l);
            mla = a;
        }
        sh_gated |= m->blocks[l].is_moe && m->blocks[l].moe.shared_gate;
        if (a->kind == FT_ATTN_GATED_DELTANET) {
            if (dn && (dn->n_heads != a->n_heads || dn->n_kv_heads != a->n_kv_heads ||
                       dn->head_dim != a->head_dim))
                return ft_status_make(FT_STATUS_UNSUPPORTED,
                                      "%s: layer %u: Gated DeltaNet layers of different "
                                      "shapes",
                                      m->source_name, l);
            dn = a;
            continue;
        }
        if (a->n_heads * a->head_dim > q_dim)
            q_dim = a->n_heads * a->head_dim;
        if (a->n_kv_heads * a->head_dim > kv_dim)
            kv_dim = a->n_kv_heads * a->head_dim;
        gated |= a->has_out_gate;
    }
    const uint32_t d = m->hp.d_model;
    ft_status_t st;
    if ((st = ft_sched_buffer(s, "x", FT_BUF_ACTIVATION, d, &b->x)) ||
        (st = ft_sched_buffer(s, "h", FT_BUF_ACTIVATION, d, &b->h)) ||
        (st = ft_sched_buffer(s, "q", FT_BUF_ACTIVATION, q_dim, &b->q)) ||
        (st = ft_sched_buffer(s, "k", FT_BUF_ACTIVATION, kv_dim, &b->k)) ||
        (st = ft_sched_buffer(s, "v", FT_BUF_ACTIVATION, kv_dim, &b->v)) ||
        (st = ft_sched_buffer(s, "att", FT_BUF_ACTIVATION, q_dim, &b->att)) ||
        (st = ft_sched_buffer(s, "o", FT_BUF_ACTIVATION, d, &b->o)) ||
        (st = ft_sched_buffer(s, "logits", FT_BUF_LOGITS, m->hp.vocab_size, &b->logits)))
        return st;
    b->gate = ~0u;
    /* as wide as att, which the GLU multiplies row for row */
    if (gated && (st = ft_sched_buffer(s, "att_gate", FT_BUF_ACTIVATION, q_dim, &b->gate)))
        return st;
    b->sh_gate = ~0u;
    if (sh_gated && (st = ft_sched_buffer(s, "sh_gate", FT_BUF_ACTIVATION, 1, &b->sh_gate)))
        return st;
    b->dn_qkv = b->dn_z = b->dn_b = b->dn_a = b->dn_o = ~0u;
    if (dn) {
        const uint32_t o = dn->n_heads * dn->head_dim,
                       ch = (2 * dn->n_kv_heads + dn->n_heads) * dn->head_dim;
        if ((st = ft_sched_buffer(s, "dn_qkv", FT_BUF_ACTIVATION, ch, &b->dn_qkv)) ||
            (st = ft_sched_buffer(s, "dn_z", FT_BUF_ACTIVATION, o, &b->dn_z)) ||
            (st = ft_sched_buffer(s, "dn_b", FT_BUF_ACTIVATION, dn->n_heads, &b->dn_b)) ||
            (st = ft_sched_buffer(s, "dn_a", FT_BUF_ACTIVATION, dn->n_heads, &b->dn_a)) ||
            (st = ft_sched_buffer(s, "dn_o", FT_BUF_ACTIVATION, o, &b->dn_o)))
            return st;
    }
    b->mla_qa = b->mla_c = b->mla_kr = b->mla_o = ~0u;
    if (mla && ((mla->q_lora_rank && (st = ft_sched_buffer(s, "mla_qa", FT_BUF_ACTIVATION, mla->q_lora_rank,
                                                            &b->mla_qa))) ||
                (st = ft_sched_buffer(s, "mla_c", FT_BUF_ACTIVATION, mla->kv_lora_rank, &b->mla_c)) ||
                (st = ft_sched_buffer(s, "mla_kr", FT_BUF_ACTIVATION, m->hp.rope_dim, &b->mla_kr)) ||
                (st = ft_sched_buffer(s, "mla_o", FT_BUF_ACTIVATION, mla->n_heads * mla->value_head_dim,
                                      &b->mla_o))))
        return st;
    b->n_ffn = 0;
    for (uint32_t l = 0; l < m->hp.n_layers; l++) {
        const uint32_t w = ft_lower_ffn_width(&m->blocks[l]);
        uint32_t j = 0;
        while (j < b->n_ffn && b->ffn_width[j] != w)
            j++;
        if (!w || j < b->n_ffn)
            continue;
        if (b->n_ffn == FT_LOWER_MAX_FFN_WIDTHS)
            return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: dense FFN layers of more than %u widths",
                                  m->source_name, FT_LOWER_MAX_FFN_WIDTHS);
        /* Names the schedule keeps (it stores the pointers). */
        static const char *const g[FT_LOWER_MAX_FFN_WIDTHS] = {"ffn_g", "ffn_g1", "ffn_g2", "ffn_g3",
                                                               "ffn_g4", "ffn_g5", "ffn_g6", "ffn_g7"};
        static const char *const u[FT_LOWER_MAX_FFN_WIDTHS] = {"ffn_u", "ffn_u1", "ffn_u2", "ffn_u3",
                                                               "ffn_u4", "ffn_u5", "ffn_u6", "ffn_u7"};
        b->ffn_width[j] = w;
        if ((st = ft_sched_buffer(s, g[j], FT_BUF_ACTIVATION, w, &b->fg[j])) ||
            (st = ft_sched_buffer(s, u[j], FT_BUF_ACTIVATION, w, &b->fu[j])))
            return st;
        b->n_ffn++;
    }
    return FT_OK;
}

/* An op reading `in` and writing `out` (either may be ~0u: none). */
static ft_ir_op_t ft_op(ft_op_kind_t kind, uint32_t in, uint32_t out)
{
    ft_ir_op_t op;
    memset(&op, 0, sizeof(op));
    op.kind = kind;
    if (in != ~0u)
        op.inputs[op.n_inputs++] = in;
    if (out != ~0u)
        op.outputs[op.n_outputs++] = out;
    return op;
}

FT_WARN_UNUSED static ft_status_t ft_op_weight(const ft_ir_model_t *m, ft_ir_op_t *op, ft_tensor_role_t role, int32_t layer)
{
    return ft_sched_weight(m, role, layer, &op->weights[op->n_weights++]);
}

/* The bias of the op's last weight, when the model has a tensor of this
 * role in the layer (biases are optional per projection: Qwen2 has q/k/v
 * biases, gpt-oss all four). The op's list fills with FT_OP_NO_BIAS. */
static void ft_op_bias(const ft_ir_model_t *m, ft_ir_op_t *op, ft_tensor_role_t role, int32_t layer)
{
    const ft_ir_tensor_t *t = ft_ir_find(m, role, layer);
    if (!t)
        return;
    while (op->n_biases < op->n_weights)
        op->biases[op->n_biases++] = FT_OP_NO_BIAS;
    op->biases[op->n_weights - 1] = (uint32_t)(t - m->tensors);
}

/* Pads a LINEAR's biases to one per weight once it has any. */
static void ft_op_biases_done(ft_ir_op_t *op)
{
    while (op->n_biases && op->n_biases < op->n_weights)
        op->biases[op->n_biases++] = FT_OP_NO_BIAS;
}

FT_WARN_UNUSED static ft_status_t ft_lower_attention(const ft_ir_model_t *m, uint32_t l, const ft_lower_bufs_t *b,
                                      ft_ir_ops_t *ops)
{
    const ft_ir_attention_t *a = &m->blocks[l].attn;
    const int32_t li = (int32_t)l;
    ft_status_t st;
    ft_ir_op_t norm = ft_op(FT_OP_RMSNORM, b->x, b->h);
    norm.eps = m->hp.norm_eps;
    if ((st = ft_op_weight(m, &norm, FT_ROLE_ATTN_NORM, li)) || (st = ft_sched_push(m, ops, &norm)))
        return st;
    ft_ir_op_t qkv = ft_op(FT_OP_LINEAR, b->h, b->q);
    qkv.outputs[qkv.n_outputs++] = b->k;
    qkv.outputs[qkv.n_outputs++] = b->v;
    const ft_tensor_role_t qkv_roles[3] = {FT_ROLE_ATTN_Q, FT_ROLE_ATTN_K, FT_ROLE_ATTN_V};
    const ft_tensor_role_t qkv_bias[3] = {FT_ROLE_ATTN_Q_BIAS, FT_ROLE_ATTN_K_BIAS, FT_ROLE_ATTN_V_BIAS};
    for (int j = 0; j < 3; j++) {
        if ((st = ft_op_weight(m, &qkv, qkv_roles[j], li)))
            return st;
        ft_op_bias(m, &qkv, qkv_bias[j], li);
    }
    ft_op_biases_done(&qkv);
    if ((st = ft_sched_push(m, ops, &qkv)))
        return st;
    if (a->qk_norm) {
        const uint32_t bufs[2] = {b->q, b->k};
        const ft_tensor_role_t roles[2] = {FT_ROLE_ATTN_Q_NORM, FT_ROLE_ATTN_K_NORM};
        for (int i = 0; i < 2; i++) {
            ft_ir_op_t hn = ft_op(FT_OP_HEAD_NORM, bufs[i], ~0u);
            hn.eps = m->hp.norm_eps;
            hn.head_dim = a->head_dim;
            hn.n_heads = i == 0 ? a->n_heads : a->n_kv_heads;
            if (a->qk_norm_full) { /* one "head" as wide as the projection (OLMoE, MiniMax-M2) */
                hn.head_dim *= hn.n_heads;
                hn.n_heads = 1;
            }
            if ((st = ft_op_weight(m, &hn, roles[i], li)) || (st = ft_sched_push(m, ops, &hn)))
                return st;
        }
    }
    ft_ir_op_t rope = ft_op(FT_OP_ROPE, b->q, ~0u);
    rope.inputs[rope.n_inputs++] = b->k;
    rope.rope = m->hp.rope;
    rope.rope_dim = m->hp.rope_dim;
    rope.rope_theta = m->hp.rope_theta;
    rope.n_heads = a->n_heads;
    rope.n_kv_heads = a->n_kv_heads;
    rope.head_dim = a->head_dim;
    rope.rope_yarn_factor = m->hp.rope_yarn_factor;
    rope.rope_yarn_orig_ctx = m->hp.rope_yarn_orig_ctx;
    rope.rope_yarn_beta_fast = m->hp.rope_yarn_beta_fast;
    rope.rope_yarn_beta_slow = m->hp.rope_yarn_beta_slow;
    ft_ir_op_t kv = ft_op(FT_OP_KV_APPEND, b->k, ~0u);
    kv.inputs[kv.n_inputs++] = b->v;
    kv.n_kv_heads = a->n_kv_heads;
    kv.head_dim = a->head_dim;
    ft_ir_op_t att = ft_op(FT_OP_ATTENTION, b->q, b->att);
    att.n_heads = a->n_heads;
    att.n_kv_heads = a->n_kv_heads;
    att.head_dim = a->head_dim;
    att.sliding_window = a->sliding_window;
    const ft_ir_tensor_t *sinks = ft_ir_find(m, FT_ROLE_ATTN_SINKS, li);
    if (sinks)
        att.weights[att.n_weights++] = (uint32_t)(sinks - m->tensors);
    if ((st = ft_sched_push(m, ops, &rope)) || (st = ft_sched_push(m, ops, &kv)) || (st = ft_sched_push(m, ops, &att)))
        return st;
    uint32_t att_out = b->att;
    if (a->has_out_gate) {
        /* Its own LINEAR on h (the q/k/v LINEAR's outputs are full), then
         * g = sigmoid(g) * att in g, which Wo reads. */
        ft_ir_op_t g = ft_op(FT_OP_LINEAR, b->h, b->gate);
        ft_ir_op_t glu = ft_op(FT_OP_GLU, b->gate, b->gate);
        glu.inputs[glu.n_inputs++] = b->att;
        glu.act = FT_ACT_SIGMOID;
        if ((st = ft_op_weight(m, &g, FT_ROLE_ATTN_GATE, li)) || (st = ft_sched_push(m, ops, &g)) ||
            (st = ft_sched_push(m, ops, &glu)))
            return st;
        att_out = b->gate;
    }
    ft_ir_op_t wo = ft_op(FT_OP_LINEAR, att_out, b->o);
    ft_ir_op_t add = ft_op(FT_OP_ADD, b->o, b->x);
    if ((st = ft_op_weight(m, &wo, FT_ROLE_ATTN_O, li)))
        return st;
    ft_op_bias(m, &wo, FT_ROLE_ATTN_O_BIAS, li);
    if ((st = ft_sched_push(m, ops, &wo)) || (st = ft_sched_push(m, ops, &add)))
        return st;
    return FT_OK;
}

/* A Gated DeltaNet block's mixer (Qwen3.5/3.6, Qwen3-Next):
 *
 *   h = rmsnorm(x) ; qkv, z, b = h Wqkv, h Wz, h Wbeta ; a = h Walpha ;
 *   o = deltanet(qkv, b, a) [conv state + S in the session] ;
 *   o = head_rmsnorm(o) ; z = silu(z) * o ; x += z Wout
 *
 * the gated RMSNorm as a HEAD_NORM and a GLU of the existing ops. */
FT_WARN_UNUSED static ft_status_t ft_lower_deltanet(const ft_ir_model_t *m, uint32_t l,
                                                    const ft_lower_bufs_t *b, ft_ir_ops_t *ops)
{
    const ft_ir_attention_t *a = &m->blocks[l].attn;
    const int32_t li = (int32_t)l;
    ft_status_t st;
    ft_ir_op_t norm = ft_op(FT_OP_RMSNORM, b->x, b->h);
    norm.eps = m->hp.norm_eps;
    ft_ir_op_t in = ft_op(FT_OP_LINEAR, b->h, b->dn_qkv);
    in.outputs[in.n_outputs++] = b->dn_z;
    in.outputs[in.n_outputs++] = b->dn_b;
    ft_ir_op_t alpha = ft_op(FT_OP_LINEAR, b->h, b->dn_a);
    ft_ir_op_t dn = ft_op(FT_OP_DELTANET, b->dn_qkv, b->dn_o);
    dn.inputs[dn.n_inputs++] = b->dn_b;
    dn.inputs[dn.n_inputs++] = b->dn_a;
    dn.n_heads = a->n_heads;
    dn.n_kv_heads = a->n_kv_heads;
    dn.head_dim = a->head_dim;
    dn.conv_kernel = a->conv_kernel;
    dn.heads_tiled = a->heads_tiled;
    dn.eps = m->hp.norm_eps;
    ft_ir_op_t hn = ft_op(FT_OP_HEAD_NORM, b->dn_o, ~0u);
    hn.eps = m->hp.norm_eps;
    hn.n_heads = a->n_heads;
    hn.head_dim = a->head_dim;
    ft_ir_op_t glu = ft_op(FT_OP_GLU, b->dn_z, b->dn_z);
    glu.inputs[glu.n_inputs++] = b->dn_o;
    glu.act = FT_ACT_SILU;
    ft_ir_op_t out = ft_op(FT_OP_LINEAR, b->dn_z, b->o);
    ft_ir_op_t add = ft_op(FT_OP_ADD, b->o, b->x);
    if ((st = ft_op_weight(m, &norm, FT_ROLE_ATTN_NORM, li)) ||
        (st = ft_op_weight(m, &in, FT_ROLE_SSM_QKV, li)) ||
        (st = ft_op_weight(m, &in, FT_ROLE_ATTN_GATE, li)) ||
        (st = ft_op_weight(m, &in, FT_ROLE_SSM_BETA, li)) ||
        (st = ft_op_weight(m, &alpha, FT_ROLE_SSM_ALPHA, li)) ||
        (st = ft_op_weight(m, &dn, FT_ROLE_SSM_CONV, li)) ||
        (st = ft_op_weight(m, &dn, FT_ROLE_SSM_DT_BIAS, li)) ||
        (st = ft_op_weight(m, &dn, FT_ROLE_SSM_A, li)) ||
        (st = ft_op_weight(m, &hn, FT_ROLE_SSM_NORM, li)) ||
        (st = ft_op_weight(m, &out, FT_ROLE_SSM_OUT, li)))
        return st;
    const ft_ir_op_t *seq[] = {&norm, &in, &alpha, &dn, &hn, &glu, &out, &add};
    for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++)
        if ((st = ft_sched_push(m, ops, seq[i]))) return st;
    return FT_OK;
}

/* A multi-head latent attention block's mixer (DeepSeek V2/V3):
 *
 *   h = rmsnorm(x) ; qa = h Wq_a ; head_rmsnorm(qa) ; q = qa Wq_b  (or q = h Wq) ;
 *   c, kr = h Wkv_a, h Wk_rope ; head_rmsnorm(c) ;
 *   o = mla(q, c, kr) [RoPE on q's and kr's rope parts, the row c | kr into
 *                      the cache, attention through W_kb and W_vb] ;
 *   x += o Wo
 *
 * (a norm over one whole vector is a HEAD_NORM of one head). */
FT_WARN_UNUSED static ft_status_t ft_lower_mla(const ft_ir_model_t *m, uint32_t l, const ft_lower_bufs_t *b,
                                               ft_ir_ops_t *ops)
{
    const ft_ir_attention_t *a = &m->blocks[l].attn;
    const int32_t li = (int32_t)l;
    ft_status_t st;
    ft_ir_op_t norm = ft_op(FT_OP_RMSNORM, b->x, b->h);
    norm.eps = m->hp.norm_eps;
    if ((st = ft_op_weight(m, &norm, FT_ROLE_ATTN_NORM, li)) || (st = ft_sched_push(m, ops, &norm)))
        return st;
    if (a->q_lora_rank) {
        ft_ir_op_t qa = ft_op(FT_OP_LINEAR, b->h, b->mla_qa);
        ft_ir_op_t qn = ft_op(FT_OP_HEAD_NORM, b->mla_qa, ~0u);
        qn.eps = m->hp.norm_eps;
        qn.n_heads = 1;
        qn.head_dim = a->q_lora_rank;
        ft_ir_op_t qb = ft_op(FT_OP_LINEAR, b->mla_qa, b->q);
        if ((st = ft_op_weight(m, &qa, FT_ROLE_ATTN_Q_A, li)) || (st = ft_sched_push(m, ops, &qa)) ||
            (st = ft_op_weight(m, &qn, FT_ROLE_ATTN_Q_A_NORM, li)) || (st = ft_sched_push(m, ops, &qn)) ||
            (st = ft_op_weight(m, &qb, FT_ROLE_ATTN_Q_B, li)) || (st = ft_sched_push(m, ops, &qb)))
            return st;
    } else {
        ft_ir_op_t q = ft_op(FT_OP_LINEAR, b->h, b->q);
        if ((st = ft_op_weight(m, &q, FT_ROLE_ATTN_Q, li)) || (st = ft_sched_push(m, ops, &q)))
            return st;
    }
    ft_ir_op_t kv = ft_op(FT_OP_LINEAR, b->h, b->mla_c);
    kv.outputs[kv.n_outputs++] = b->mla_kr;
    ft_ir_op_t cn = ft_op(FT_OP_HEAD_NORM, b->mla_c, ~0u);
    cn.eps = m->hp.norm_eps;
    cn.n_heads = 1;
    cn.head_dim = a->kv_lora_rank;
    ft_ir_op_t att = ft_op(FT_OP_MLA, b->q, b->mla_o);
    att.inputs[att.n_inputs++] = b->mla_c;
    att.inputs[att.n_inputs++] = b->mla_kr;
    att.n_heads = a->n_heads;
    att.n_kv_heads = 1;
    att.head_dim = a->head_dim;
    att.value_head_dim = a->value_head_dim;
    att.kv_lora_rank = a->kv_lora_rank;
    att.attn_scale = a->attn_scale;
    att.rope = m->hp.rope;
    att.rope_dim = m->hp.rope_dim;
    att.rope_theta = m->hp.rope_theta;
    att.rope_yarn_factor = m->hp.rope_yarn_factor;
    att.rope_yarn_orig_ctx = m->hp.rope_yarn_orig_ctx;
    att.rope_yarn_beta_fast = m->hp.rope_yarn_beta_fast;
    att.rope_yarn_beta_slow = m->hp.rope_yarn_beta_slow;
    att.rope_mscale = m->hp.rope_yarn_mscale;
    ft_ir_op_t wo = ft_op(FT_OP_LINEAR, b->mla_o, b->o);
    ft_ir_op_t add = ft_op(FT_OP_ADD, b->o, b->x);
    if ((st = ft_op_weight(m, &kv, FT_ROLE_ATTN_KV_A, li)) || (st = ft_op_weight(m, &kv, FT_ROLE_ATTN_K_ROPE, li)) ||
        (st = ft_sched_push(m, ops, &kv)) || (st = ft_op_weight(m, &cn, FT_ROLE_ATTN_KV_A_NORM, li)) ||
        (st = ft_sched_push(m, ops, &cn)) || (st = ft_op_weight(m, &att, ft_ir_find(m, FT_ROLE_ATTN_K_B_T, li) ? FT_ROLE_ATTN_K_B_T : FT_ROLE_ATTN_K_B,
                           li)) ||
        (st = ft_op_weight(m, &att, FT_ROLE_ATTN_V_B, li)) || (st = ft_sched_push(m, ops, &att)) ||
        (st = ft_op_weight(m, &wo, FT_ROLE_ATTN_O, li)) || (st = ft_sched_push(m, ops, &wo)) ||
        (st = ft_sched_push(m, ops, &add)))
        return st;
    return FT_OK;
}

/* An ungated FFN of h into x: gate and up together, the gated
 * activation, down, and the residual add; roles[3]: its gate, up, down. */
FT_WARN_UNUSED static ft_status_t ft_lower_ffn(const ft_ir_model_t *m, uint32_t l, const ft_lower_bufs_t *b,
                                               const ft_tensor_role_t *roles, ft_ir_ops_t *ops)
{
    const ft_ir_block_t *blk = &m->blocks[l];
    const int32_t li = (int32_t)l;
    const uint32_t j = ft_lower_ffn_pair(b, ft_lower_ffn_width(blk));
    if (j == b->n_ffn)
        return ft_status_make(FT_STATUS_INTERNAL, "%s: layer %u: no buffers for its FFN", m->source_name, l);
    ft_status_t st;
    ft_ir_op_t gu = ft_op(FT_OP_LINEAR, b->h, b->fg[j]);
    gu.outputs[gu.n_outputs++] = b->fu[j];
    ft_ir_op_t glu = ft_op(FT_OP_GLU, b->fg[j], b->fg[j]);
    glu.inputs[glu.n_inputs++] = b->fu[j];
    glu.act = blk->act;
    ft_ir_op_t down = ft_op(FT_OP_LINEAR, b->fg[j], b->o);
    ft_ir_op_t add = ft_op(FT_OP_ADD, b->o, b->x);
    if ((st = ft_op_weight(m, &gu, roles[0], li)) || (st = ft_op_weight(m, &gu, roles[1], li)) ||
        (st = ft_sched_push(m, ops, &gu)) || (st = ft_sched_push(m, ops, &glu)) ||
        (st = ft_op_weight(m, &down, roles[2], li)) || (st = ft_sched_push(m, ops, &down)))
        return st;
    if (blk->is_moe && blk->moe.shared_gate && roles[0] == FT_ROLE_FFN_GATE_SHEXP) {
        /* o *= sigmoid(w . h): a one-row LINEAR and the one-float GLU */
        ft_ir_op_t g = ft_op(FT_OP_LINEAR, b->h, b->sh_gate);
        ft_ir_op_t gate = ft_op(FT_OP_GLU, b->sh_gate, b->o);
        gate.inputs[gate.n_inputs++] = b->o;
        gate.act = FT_ACT_SIGMOID;
        if ((st = ft_op_weight(m, &g, FT_ROLE_FFN_GATE_INP_SHEXP, li)) ||
            (st = ft_sched_push(m, ops, &g)) || (st = ft_sched_push(m, ops, &gate)))
            return st;
    }
    return ft_sched_push(m, ops, &add);
}

FT_WARN_UNUSED static ft_status_t ft_lower_moe(const ft_ir_model_t *m, uint32_t l, const ft_lower_bufs_t *b, ft_ir_ops_t *ops)
{
    const ft_ir_block_t *blk = &m->blocks[l];
    const int32_t li = (int32_t)l;
    ft_status_t st;
    ft_ir_op_t norm = ft_op(FT_OP_RMSNORM, b->x, b->h);
    norm.eps = m->hp.norm_eps;
    ft_ir_op_t router = ft_op(FT_OP_ROUTER, b->h, ~0u);
    router.n_experts = blk->moe.n_experts;
    router.n_experts_used = blk->moe.n_experts_used;
    router.scoring = blk->moe.scoring;
    router.norm_topk_prob = blk->moe.norm_topk_prob;
    router.n_groups = blk->moe.n_groups;
    router.n_groups_used = blk->moe.n_groups_used;
    router.routed_scaling = blk->moe.routed_scaling != 0.0f ? blk->moe.routed_scaling : 1.0f;
    ft_ir_op_t moe = ft_op(FT_OP_MOE, b->h, b->x);
    moe.n_experts = blk->moe.n_experts;
    moe.n_experts_used = blk->moe.n_experts_used;
    moe.expert_ffn = blk->moe.expert_ffn;
    moe.act = blk->act;
    moe.act_alpha = blk->act_alpha;
    moe.act_limit = blk->act_limit;
    if ((st = ft_op_weight(m, &norm, FT_ROLE_FFN_NORM, li)) || (st = ft_sched_push(m, ops, &norm)) ||
        (st = ft_op_weight(m, &router, FT_ROLE_FFN_ROUTER, li)))
        return st;
    ft_op_bias(m, &router, FT_ROLE_FFN_ROUTER_BIAS, li); /* gpt-oss: the logits' bias */
    /* The selection bias (DeepSeek-V3 / GLM-4.5), when the layer has one. */
    if ((ft_ir_find(m, FT_ROLE_FFN_EXP_PROBS_B, li) && (st = ft_op_weight(m, &router, FT_ROLE_FFN_EXP_PROBS_B, li))) ||
        (st = ft_sched_push(m, ops, &router)))
        return st;
    /* The shared experts (ungated; a gated one, as Qwen2-MoE's, would need
     * its gate here), added to x before the routed experts. */
    static const ft_tensor_role_t shared[3] = {FT_ROLE_FFN_GATE_SHEXP, FT_ROLE_FFN_UP_SHEXP,
                                               FT_ROLE_FFN_DOWN_SHEXP};
    if (ft_lower_ffn_width(blk) && (st = ft_lower_ffn(m, l, b, shared, ops)))
        return st;
    const ft_tensor_role_t stacks[3] = {FT_ROLE_FFN_GATE_EXPS, FT_ROLE_FFN_UP_EXPS, FT_ROLE_FFN_DOWN_EXPS};
    const ft_tensor_role_t stack_bias[3] = {FT_ROLE_FFN_GATE_EXPS_BIAS, FT_ROLE_FFN_UP_EXPS_BIAS,
                                            FT_ROLE_FFN_DOWN_EXPS_BIAS};
    for (int j = 0; j < 3; j++) {
        if ((st = ft_op_weight(m, &moe, stacks[j], li)))
            return st;
        ft_op_bias(m, &moe, stack_bias[j], li);
    }
    ft_op_biases_done(&moe);
    if ((st = ft_sched_push(m, ops, &moe)))
        return st;
    return FT_OK;
}

/* A dense block's FFN: its norm, then the FFN. */
FT_WARN_UNUSED static ft_status_t ft_lower_dense(const ft_ir_model_t *m, uint32_t l, const ft_lower_bufs_t *b,
                                                 ft_ir_ops_t *ops)
{
    static const ft_tensor_role_t roles[3] = {FT_ROLE_FFN_GATE, FT_ROLE_FFN_UP, FT_ROLE_FFN_DOWN};
    ft_ir_op_t norm = ft_op(FT_OP_RMSNORM, b->x, b->h);
    norm.eps = m->hp.norm_eps;
    ft_status_t st;
    if ((st = ft_op_weight(m, &norm, FT_ROLE_FFN_NORM, (int32_t)l)) || (st = ft_sched_push(m, ops, &norm)))
        return st;
    return ft_lower_ffn(m, l, b, roles, ops);
}

ft_status_t ft_lower_moe_decoder(const ft_ir_model_t *m, ft_ir_schedule_t *s)
{
    ft_lower_bufs_t b;
    ft_status_t st = ft_sched_init(s, m, m->hp.n_layers);
    if (!st)
        st = ft_lower_buffers(m, s, &b);
    if (st)
        return st;
    ft_ir_op_t embd = ft_op(FT_OP_EMBED, ~0u, b.x);
    if ((st = ft_op_weight(m, &embd, FT_ROLE_TOKEN_EMBD, -1)) || (st = ft_sched_push(m, &s->prologue, &embd)))
        return st;
    for (uint32_t l = 0; l < m->hp.n_layers; l++) {
        const int recurrent = m->blocks[l].attn.kind == FT_ATTN_GATED_DELTANET;
        const int mla = m->blocks[l].attn.kind == FT_ATTN_MLA;
        if ((st = recurrent ? ft_lower_deltanet(m, l, &b, &s->blocks[l])
                  : mla     ? ft_lower_mla(m, l, &b, &s->blocks[l])
                            : ft_lower_attention(m, l, &b, &s->blocks[l])) ||
            (st = m->blocks[l].is_moe ? ft_lower_moe(m, l, &b, &s->blocks[l])
                                      : ft_lower_dense(m, l, &b, &s->blocks[l])))
            return st;
    }
    ft_ir_op_t norm = ft_op(FT_OP_RMSNORM, b.x, b.h);
    norm.eps = m->hp.norm_eps;
    ft_ir_op_t head = ft_op(FT_OP_LINEAR, b.h, b.logits);
    if ((st = ft_op_weight(m, &norm, FT_ROLE_OUTPUT_NORM, -1)) || (st = ft_sched_push(m, &s->epilogue, &norm)))
        return st;
    /* Tied embeddings: the head is the embedding matrix. */
    st = ft_op_weight(m, &head, m->hp.tie_embeddings ? FT_ROLE_TOKEN_EMBD : FT_ROLE_OUTPUT, -1);
    return st ? st : ft_sched_push(m, &s->epilogue, &head);
}
