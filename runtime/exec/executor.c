/* The executor: one step of tokens through the plan's op schedule. It
 * walks the bound ops (program.h) in order, the prologue over every
 * token, each block, then the epilogue over the rows whose logits are
 * asked for, and hands each op to the engine's backend: the CPU's kernels
 * (cpu), the CPU's kernels with the modelled device's clock (sim), or the
 * device's kernels (cuda: dev_ops.c). On cpu and sim the buffers it reads
 * and writes are the session's, allocated from the engine's device
 * (session.c); neither device has kernels of its own, so the CPU's are
 * called here. It knows ops, not models.
 *
 * Prepared activations: an RMSNORM the program fused with the preparation
 * for its consumers, or an ATTENTION that prepares its output for the
 * LINEAR after it, leaves rows in s->xp (and a second format in the
 * buffer's memory); s->xp_buf / alt_buf say whose they are, so each
 * consumer takes them instead of floats. Anything that writes the buffer
 * or prepares other rows into xp ends that. */
#include "forward.h"
#include "forward_internal.h"

#include "../backends/cpu/kernels.h"
#include "dev_engine.h"
#include "ops.h"

#include <math.h>
#include <string.h>

static void ft_prep_clear(ft_session_t *s)
{
    s->xp_buf = s->alt_buf = -1;
}

/* Whether x's input is prepared for format t in xp (1), in the buffer's
 * memory (2), or not (0). */
static int ft_prep_find(const ft_session_t *s, const ft_xop_t *x, ft_dtype_t t)
{
    if (s->xp_buf == (int32_t)x->in[0] && s->xp_type == t)
        return 1;
    if (s->alt_buf == (int32_t)x->in[0] && s->alt_type == t)
        return 2;
    return 0;
}

static void ft_run_rmsnorm(ft_step_t *st, const ft_xop_t *x)
{
    ft_session_t *s = st->s;
    const float *in = st->buf[x->in[0]];
    float *out = st->buf[x->out[0]];
    if (s->use_generated && x->n_prep) {
        ft_fwd_norm_prepare(s, x->prep_fn[0], in, x->vec, x->eps, x->width, x->prep_type[0], st->n, s->xp);
        s->xp_buf = (int32_t)x->out[0];
        s->xp_type = x->prep_type[0];
        if (x->n_prep == 2) {
            ft_fwd_norm_prepare(s, x->prep_fn[1], in, x->vec, x->eps, x->width, x->prep_type[1], st->n, out);
            s->alt_buf = (int32_t)x->out[0];
            s->alt_type = x->prep_type[1];
        }
        return;
    }
    for (uint32_t t = 0; t < st->n; t++)
        ft_op_rmsnorm(out + (size_t)t * x->width, in + (size_t)t * x->width, x->vec, x->width, x->eps);
}

/* Each output row += its weight's bias, after the product (whichever
 * kernel computed it), as llama.cpp and PyTorch add it. */
static void ft_run_biases(ft_step_t *st, const ft_xop_t *x, float *const *ys)
{
    for (uint32_t j = 0; j < x->n_w; j++) {
        const float *b = x->bias[j];
        const uint32_t rows = x->w[j]->rows;
        for (uint32_t t = 0; b && t < st->n; t++) {
            float *y = ys[j] + (size_t)t * rows;
            for (uint32_t r = 0; r < rows; r++)
                y[r] += b[r];
        }
    }
}

static void ft_run_linear(ft_step_t *st, const ft_xop_t *x)
{
    ft_session_t *s = st->s;
    float *ys[FT_XOP_MAX_ARGS];
    for (uint32_t j = 0; j < x->n_w; j++)
        ys[j] = st->buf[x->out[j]];
    if (ft_prep_find(s, x, x->w[0]->dtype) == 1) {
        int one_format = 1;
        for (uint32_t j = 1; j < x->n_w; j++)
            one_format &= x->w[j]->dtype == x->w[0]->dtype;
        if (one_format) {
            ft_fwd_linear_prepared(s, x->w, ys, x->n_w, st->n);
            ft_run_biases(st, x, ys);
            return;
        }
    }
    ft_fwd_linear(s, x->w, ys, x->n_w, st->buf[x->in[0]], st->n);
    ft_run_biases(st, x, ys);
    ft_prep_clear(s); /* xp now holds this op's input */
}

static void ft_run_embed(ft_step_t *st, const ft_xop_t *x, const int32_t *tokens)
{
    const ft_mat_t *e = x->w[0];
    float *out = st->buf[x->out[0]];
    for (uint32_t t = 0; t < st->n; t++)
        ft_cpu_dequantize_row(e->dtype, e->data + (size_t)tokens[t] * e->row_bytes, out + (size_t)t * e->cols,
                              e->cols);
}

/* out = act(gate) * up, row for row (out may be the gate): SwiGLU, the
 * clamped one, or sigmoid (the gated attention output). */
static void ft_run_glu(ft_step_t *st, const ft_xop_t *x)
{
    float *out = st->buf[x->out[0]];
    if (x->glu_bcast) { /* out = inputs[1]: each row times its token's sigmoid(gate) */
        const float *g = st->buf[x->in[0]];
        for (uint32_t t = 0; t < st->n; t++) {
            const float sg = 1.0f / (1.0f + expf(-g[t]));
            for (uint32_t i = 0; i < x->width; i++)
                out[(size_t)t * x->width + i] *= sg;
        }
        return;
    }
    const size_t n = (size_t)st->n * x->width;
    if (out != st->buf[x->in[0]])
        memcpy(out, st->buf[x->in[0]], n * sizeof(float));
    if (x->act == FTPLAN__ACTIVATION__ACT_SWIGLU_OAI)
        ft_op_swiglu_oai(out, st->buf[x->in[1]], (uint32_t)n, x->act_alpha, x->act_limit);
    else if (x->act == FTPLAN__ACTIVATION__ACT_SIGMOID)
        ft_op_sigmoid_mul(out, st->buf[x->in[1]], (uint32_t)n);
    else
        ft_op_swiglu(out, st->buf[x->in[1]], (uint32_t)n);
}

typedef struct ft_dn_ctx {
    ft_step_t *st;
    const ft_xop_t *x;
    float *state;
} ft_dn_ctx_t;

/* The chunked recurrence, value heads split over the pool's threads. */
static void ft_dn_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    const ft_dn_ctx_t *c = ctx;
    ft_session_t *s = c->st->s;
    const ft_program_t *p = s->m->prog;
    for (uint32_t h = ti; h < c->x->dn.n_v_heads; h += nt)
        ft_op_deltanet_chunked_head(&c->x->dn, h, s->dn_rows, s->dn_g, s->dn_beta, c->st->n,
                                    c->state, s->dn_chunk + (size_t)ti * p->max_dn_chunk_scratch,
                                    c->st->buf[c->x->out[0]]);
}

/* Gated DeltaNet over the step's tokens in order, each reading and
 * advancing the layer's slice of the session's recurrent state: token by
 * token (the reference kernel), or, with the generated kernels and a step
 * of at least FT_DELTANET_CHUNK_MIN_TOKENS, in the chunked form (equal to
 * float rounding: ops.h) with the heads on the thread pool. */
static void ft_run_deltanet(ft_step_t *st, const ft_xop_t *x)
{
    ft_session_t *s = st->s;
    float *state = (float *)(s->rstate + x->rstate_off);
    const size_t C = ft_deltanet_channels(&x->dn), H = x->dn.n_v_heads, o = H * x->dn.head_dim;
    if (s->use_generated && st->n >= FT_DELTANET_CHUNK_MIN_TOKENS) {
        ft_op_deltanet_prepare(&x->dn, x->dn_conv, x->dn_dt_bias, x->dn_a, st->buf[x->in[0]],
                               st->buf[x->in[1]], st->buf[x->in[2]], st->n, state, s->dn_rows,
                               s->dn_g, s->dn_beta);
        ft_dn_ctx_t c = {st, x, state};
        ft_threadpool_run(s->engine->pool, ft_dn_worker, &c);
        return;
    }
    for (uint32_t t = 0; t < st->n; t++)
        ft_op_deltanet_token(&x->dn, x->dn_conv, x->dn_dt_bias, x->dn_a, st->buf[x->in[0]] + t * C,
                             st->buf[x->in[1]] + t * H, st->buf[x->in[2]] + t * H, state,
                             s->dn_scratch, st->buf[x->out[0]] + t * o);
}

static void ft_run_add(ft_step_t *st, const ft_xop_t *x)
{
    const float *in = st->buf[x->in[0]];
    float *out = st->buf[x->out[0]];
    for (size_t i = 0; i < (size_t)st->n * x->width; i++)
        out[i] += in[i];
}

FT_WARN_UNUSED static ft_status_t ft_run_op(ft_step_t *st, const ft_xop_t *x, const int32_t *tokens)
{
    ft_session_t *s = st->s;
    switch (x->kind) {
    case FTPLAN__OP_KIND__OP_EMBED:
        ft_run_embed(st, x, tokens);
        break;
    case FTPLAN__OP_KIND__OP_RMSNORM:
        ft_prep_clear(s);
        ft_run_rmsnorm(st, x);
        return FT_OK;
    case FTPLAN__OP_KIND__OP_LINEAR:
        ft_run_linear(st, x);
        break;
    case FTPLAN__OP_KIND__OP_HEAD_NORM:
        ft_xop_head_norm(st, x);
        break;
    case FTPLAN__OP_KIND__OP_ROPE:
        ft_xop_rope(st, x);
        break;
    case FTPLAN__OP_KIND__OP_KV_APPEND:
        ft_xop_kv_append(st, x);
        break;
    case FTPLAN__OP_KIND__OP_ATTENTION:
        ft_xop_attention(st, x);
        ft_prep_clear(s);
        if (x->prepare_next) {
            s->xp_buf = (int32_t)x->out[0];
            s->xp_type = x->next_type;
        }
        return FT_OK;
    case FTPLAN__OP_KIND__OP_ADD:
        ft_run_add(st, x);
        break;
    case FTPLAN__OP_KIND__OP_GLU:
        ft_run_glu(st, x);
        break;
    case FTPLAN__OP_KIND__OP_DELTANET:
        ft_run_deltanet(st, x);
        break;
    case FTPLAN__OP_KIND__OP_ROUTER: {
        const int prepared = ft_prep_find(s, x, x->L->router.dtype) == 1;
        ft_xop_router(st, x, prepared);
        if (!prepared)
            ft_prep_clear(s); /* the router product prepared its rows into xp */
        return FT_OK;
    }
    case FTPLAN__OP_KIND__OP_MOE: {
        const int where = ft_prep_find(s, x, x->L->gate.dtype);
        const uint8_t *rows = where == 1   ? (const uint8_t *)s->xp
                              : where == 2 ? (const uint8_t *)st->buf[x->in[0]]
                                           : NULL;
        ft_status_t r = ft_xop_moe(st, x, x->L->gate.dtype == x->L->up.dtype ? rows : NULL, st->off);
        if (r) return r;
        break;
    }
    default:
        break;
    }
    /* What this op wrote is no longer what was prepared. */
    for (uint32_t j = 0; j < x->n_out; j++) {
        if (s->xp_buf == (int32_t)x->out[j])
            s->xp_buf = -1;
        if (s->alt_buf == (int32_t)x->out[j])
            s->alt_buf = -1;
    }
    return FT_OK;
}

/* A backend as the executor sees it: a step begins, takes each op in
 * order (row0: the first row of the session's buffers the op computes;
 * the epilogue's LINEAR writes the logits from row 0), and ends, which
 * leaves the logits of rows [first, n) in logits and the last one's in
 * s->logits. */
typedef struct ft_target {
    ft_status_t (*begin)(ft_step_t *st, uint32_t first);
    ft_status_t (*op)(ft_step_t *st, const ft_xop_t *x, const int32_t *tokens);
    ft_status_t (*end)(ft_step_t *st, float *logits);
} ft_target_t;

/* ---- cpu ------------------------------------------------------------------ */

FT_WARN_UNUSED static ft_status_t ft_cpu_begin(ft_step_t *st, uint32_t first)
{
    (void)first;
    ft_prep_clear(st->s);
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_cpu_op(ft_step_t *st, const ft_xop_t *x, const int32_t *tokens)
{
    return ft_run_op(st, x, tokens);
}

FT_WARN_UNUSED static ft_status_t ft_cpu_end(ft_step_t *st, float *logits)
{
    (void)st;
    (void)logits;
    return FT_OK;
}

static const ft_target_t ft_cpu_target = {ft_cpu_begin, ft_cpu_op, ft_cpu_end};

/* ---- sim: the CPU's numerics, the modelled device's clock --------------- */

FT_WARN_UNUSED static ft_status_t ft_sim_begin(ft_step_t *st, uint32_t first)
{
    st->off = st->s->engine->offload;
    ft_offload_step_begin(st->off);
    return ft_cpu_begin(st, first);
}

FT_WARN_UNUSED static ft_status_t ft_sim_op(ft_step_t *st, const ft_xop_t *x, const int32_t *tokens)
{
    if (x->kind == FTPLAN__OP_KIND__OP_ROUTER) /* the device's attention and router of the block */
        ft_offload_attention(st->off, (uint32_t)x->layer, st->n);
    return ft_run_op(st, x, tokens);
}

FT_WARN_UNUSED static ft_status_t ft_sim_end(ft_step_t *st, float *logits)
{
    (void)logits;
    ft_offload_step_end(st->off, st->n_step);
    return FT_OK;
}

static const ft_target_t ft_sim_target = {ft_sim_begin, ft_sim_op, ft_sim_end};

/* ---- a device through the device interface (dev_ops.c) ------------------- */

FT_WARN_UNUSED static ft_status_t ft_dev_begin(ft_step_t *st, uint32_t first)
{
    ft_session_t *s = st->s;
    return ft_dev_step_begin(s->dev, st->n, s->n_past, first, s->engine->routing);
}

FT_WARN_UNUSED static ft_status_t ft_dev_op(ft_step_t *st, const ft_xop_t *x, const int32_t *tokens)
{
    return ft_dev_run_op(st->s->dev, x, tokens, st->row0, st->n);
}

FT_WARN_UNUSED static ft_status_t ft_dev_end(ft_step_t *st, float *logits)
{
    return ft_dev_step_end(st->s->dev, logits, st->s->logits);
}

static const ft_target_t ft_dev_target = {ft_dev_begin, ft_dev_op, ft_dev_end};

/* ---- the walk --------------------------------------------------------------- */

FT_WARN_UNUSED static ft_status_t ft_run_list(const ft_target_t *t, ft_step_t *st, const ft_xops_t *list,
                                             const int32_t *tokens)
{
    ft_status_t e = FT_OK;
    for (uint32_t i = 0; i < list->n && !e; i++)
        e = t->op(st, &list->ops[i], tokens);
    return e;
}

ft_status_t ft_forward_chunk(ft_session_t *s, const int32_t *tokens, uint32_t n, float *all_logits)
{
    const ft_model_t *m = s->m;
    const ft_program_t *p = m->prog;
    const ft_target_t *t = s->dev ? &ft_dev_target : s->engine->offload ? &ft_sim_target : &ft_cpu_target;
    s->use_generated = s->engine->kmod && n >= s->engine->gen_min_tokens;
    /* The epilogue: every row's logits when asked for, else the last's. */
    const uint32_t first = all_logits ? 0 : n - 1;
    ft_step_t st = {.s = s, .n = n, .n_step = n, .pos0 = s->n_past, .row0 = 0};
    for (uint32_t b = 0; b < p->n_buffers; b++)
        st.buf[b] = s->bufs[b];
    ft_status_t e = t->begin(&st, first);
    if (!e) e = ft_run_list(t, &st, &p->prologue, tokens);
    for (uint32_t l = 0; l < p->n_blocks && !e; l++)
        e = ft_run_list(t, &st, &p->blocks[l], tokens);
    if (!e) {
        ft_prep_clear(s);
        st.n = n - first;
        st.pos0 = s->n_past + first;
        st.row0 = first;
        for (uint32_t b = 0; b < p->n_buffers; b++)
            st.buf[b] = s->bufs[b] ? s->bufs[b] + (size_t)first * p->widths[b] : NULL;
        st.buf[p->logits_buf] = all_logits ? all_logits : s->logits;
        e = ft_run_list(t, &st, &p->epilogue, tokens + first);
    }
    if (!e) e = t->end(&st, all_logits);
    if (e) return e;
    if (s->engine->routing)
        s->engine->routing_tokens += n;
    if (all_logits && !s->dev)
        memcpy(s->logits, all_logits + (size_t)(n - 1) * m->vocab_size, m->vocab_size * sizeof(float));
    s->n_past += n;
    s->has_logits = 1;
    return FT_OK;
}
