/* The executor: one step of tokens through the plan's op schedule. It
 * walks the bound ops (program.h) in order, the prologue over every
 * token, each block, then the epilogue over the rows whose logits are
 * asked for, and hands each op to the engine's backend: the CPU's kernels
 * (cpu), the CPU's kernels with the modelled device's clock (sim), or the
 * device's kernels (cuda: dev_ops.c). On cpu and sim the buffers it reads
 * and writes are the engine's step workspace (work.c), allocated from the
 * engine's device; neither device has kernels of its own, so the CPU's are
 * called here. On cuda the device keeps its own workspace (dev_work.c).
 * A pass carries the rows of several sessions on every backend. It knows
 * ops, not models.
 *
 * Prepared activations: an RMSNORM the program fused with the preparation
 * for its consumers, or an ATTENTION that prepares its output for the
 * LINEAR after it, leaves rows in s->xp (and a second format in the
 * buffer's memory); s->xp_buf / alt_buf say whose they are, so each
 * consumer takes them instead of floats. Anything that writes the buffer
 * or prepares other rows into xp ends that. */
#include "exec_api.h"
#include "forward_internal.h"

#include "../backends/cpu/kernels.h"
#include "dev_engine.h"
#include "ops.h"

#include <math.h>
#include <string.h>

static void ft_prep_clear(ft_work_t *w)
{
    w->xp_buf = w->alt_buf = -1;
}

/* Whether x's input is prepared for format t in xp (1), in the buffer's
 * memory (2), or not (0). */
static int ft_prep_find(const ft_work_t *w, const ft_xop_t *x, ft_dtype_t t)
{
    if (w->xp_buf == (int32_t)x->in[0] && w->xp_type == t) return 1;
    if (w->alt_buf == (int32_t)x->in[0] && w->alt_type == t) return 2;
    return 0;
}

static void ft_run_rmsnorm(ft_step_t *st, const ft_xop_t *x)
{
    ft_work_t *w = st->w;
    const float *in = st->buf[x->in[0]];
    float *out = st->buf[x->out[0]];
    if (w->use_generated && x->n_prep) {
        ft_fwd_norm_prepare(st, x->prep_fn[0], in, x->vec, x->eps, x->width, x->prep_type[0], st->n,
                            w->xp);
        w->xp_buf = (int32_t)x->out[0];
        w->xp_type = x->prep_type[0];
        if (x->n_prep == 2) {
            ft_fwd_norm_prepare(st, x->prep_fn[1], in, x->vec, x->eps, x->width, x->prep_type[1],
                                st->n, out);
            w->alt_buf = (int32_t)x->out[0];
            w->alt_type = x->prep_type[1];
        }
        return;
    }
    for (uint32_t t = 0; t < st->n; t++)
        ft_op_rmsnorm(out + (size_t)t * x->width, in + (size_t)t * x->width, x->vec, x->width,
                      x->eps);
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
    ft_work_t *w = st->w;
    float *ys[FT_XOP_MAX_ARGS];
    for (uint32_t j = 0; j < x->n_w; j++)
        ys[j] = st->buf[x->out[j]];
    if (ft_prep_find(w, x, x->w[0]->dtype) == 1) {
        int one_format = 1;
        for (uint32_t j = 1; j < x->n_w; j++)
            one_format &= x->w[j]->dtype == x->w[0]->dtype;
        if (one_format) {
            ft_fwd_linear_prepared(st, x->w, ys, x->n_w, st->n);
            ft_run_biases(st, x, ys);
            return;
        }
    }
    ft_fwd_linear(st, x->w, ys, x->n_w, st->buf[x->in[0]], st->n);
    ft_run_biases(st, x, ys);
    ft_prep_clear(w); /* xp now holds this op's input */
}

static void ft_run_embed(ft_step_t *st, const ft_xop_t *x, const int32_t *tokens)
{
    const ft_mat_t *e = x->w[0];
    float *out = st->buf[x->out[0]];
    for (uint32_t t = 0; t < st->n; t++)
        ft_cpu_dequantize_row(e->dtype, e->data + (size_t)tokens[t] * e->row_bytes,
                              out + (size_t)t * e->cols, e->cols);
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
    if (out != st->buf[x->in[0]]) memcpy(out, st->buf[x->in[0]], n * sizeof(float));
    if (x->act == FTPLAN__ACTIVATION__ACT_SWIGLU_OAI)
        ft_op_swiglu_oai(out, st->buf[x->in[1]], (uint32_t)n, x->act_alpha, x->act_limit);
    else if (x->act == FTPLAN__ACTIVATION__ACT_SIGMOID)
        ft_op_sigmoid_mul(out, st->buf[x->in[1]], (uint32_t)n);
    else
        ft_op_swiglu(out, st->buf[x->in[1]], (uint32_t)n);
}

typedef struct ft_dn_ctx {
    const ft_xop_t *x;
    ft_session_t *s;
    float *state;
    uint32_t n;
    float *out; /* the run's first output row */
} ft_dn_ctx_t;

/* The chunked recurrence, value heads split over the pool's threads. */
static void ft_dn_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    const ft_dn_ctx_t *c = ctx;
    ft_session_t *s = c->s;
    const ft_program_t *p = s->m->prog;
    for (uint32_t h = ti; h < c->x->dn.n_v_heads; h += nt)
        ft_op_deltanet_chunked_head(&c->x->dn, h, s->dn_rows, s->dn_g, s->dn_beta, c->n, c->state,
                                    s->dn_chunk + (size_t)ti * p->max_dn_chunk_scratch, c->out);
}

/* The module's recurrence (ABI 4), a share of the value heads per thread. */
static void ft_dn_gen_worker(void *ctx, uint32_t ti, uint32_t nt)
{
    const ft_dn_ctx_t *c = ctx;
    const ft_deltanet_shape_t *sh = &c->x->dn;
    const uint32_t H = sh->n_v_heads, h0 = (uint32_t)((uint64_t)H * ti / nt),
                   h1 = (uint32_t)((uint64_t)H * (ti + 1) / nt);
    if (h0 >= h1) return;
    const size_t C = ft_deltanet_channels(sh);
    float *S = c->state + (size_t)(sh->conv_kernel - 1) * C;
    c->x->dn_kernel(c->s->dn_rows, C, c->s->dn_g, c->s->dn_beta, c->n, h0, h1, S, c->out,
                    (size_t)H * sh->head_dim);
}

/* Gated DeltaNet over the pass's tokens in order, each reading and
 * advancing the layer's slice of its own session's recurrent state. A
 * session's rows are consecutive and in position order: each such run goes
 * token by token (the reference kernel) or, with the generated kernels,
 * through the conv and norms (ft_op_deltanet_prepare) and then the module's
 * recurrence for the layer's shape (any run; with a SIMD module also when
 * the step's products run the reference kernels, as auto does at decode
 * for avx2: the kernel is the faster there), else in the
 * chunked form for a run of at least FT_DELTANET_CHUNK_MIN_TOKENS; both
 * equal the reference to float rounding (ops.h, ft_kernel_abi.h) and run
 * the heads on the thread pool. The choice is the run's, so a session's
 * results are those of running alone. */
static void ft_run_deltanet(ft_step_t *st, const ft_xop_t *x)
{
    const size_t C = ft_deltanet_channels(&x->dn), H = x->dn.n_v_heads, o = H * x->dn.head_dim;
    for (uint32_t t0 = 0, t1; t0 < st->n; t0 = t1) {
        ft_session_t *s = st->w->row_s[st->row0 + t0];
        for (t1 = t0 + 1; t1 < st->n && st->w->row_s[st->row0 + t1] == s;)
            t1++;
        float *state = (float *)(s->rstate + x->rstate_off);
        const float *in0 = st->buf[x->in[0]] + t0 * C, *in1 = st->buf[x->in[1]] + t0 * H,
                    *in2 = st->buf[x->in[2]] + t0 * H;
        float *out = st->buf[x->out[0]] + t0 * o;
        const uint32_t n = t1 - t0;
        if (x->dn_kernel && (st->w->use_generated || st->e->dn_every)) {
            ft_op_deltanet_prepare(&x->dn, x->dn_conv, x->dn_dt_bias, x->dn_a, in0, in1, in2, n, state,
                                   s->dn_rows, s->dn_g, s->dn_beta);
            ft_dn_ctx_t c = {x, s, state, n, out};
            ft_threadpool_run(st->e->pool, ft_dn_gen_worker, &c);
            continue;
        }
        if (st->w->use_generated && n >= FT_DELTANET_CHUNK_MIN_TOKENS) {
            ft_op_deltanet_prepare(&x->dn, x->dn_conv, x->dn_dt_bias, x->dn_a, in0, in1, in2, n, state,
                                   s->dn_rows, s->dn_g, s->dn_beta);
            ft_dn_ctx_t c = {x, s, state, n, out};
            ft_threadpool_run(st->e->pool, ft_dn_worker, &c);
            continue;
        }
        for (uint32_t t = 0; t < n; t++)
            ft_op_deltanet_token(&x->dn, x->dn_conv, x->dn_dt_bias, x->dn_a, in0 + t * C, in1 + t * H,
                                 in2 + t * H, state, s->dn_scratch, out + t * o);
    }
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
    ft_work_t *w = st->w;
    switch (x->kind) {
    case FTPLAN__OP_KIND__OP_EMBED:
        ft_run_embed(st, x, tokens);
        break;
    case FTPLAN__OP_KIND__OP_RMSNORM:
        ft_prep_clear(w);
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
        ft_prep_clear(w);
        if (x->prepare_next) {
            w->xp_buf = (int32_t)x->out[0];
            w->xp_type = x->next_type;
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
    case FTPLAN__OP_KIND__OP_MLA: { /* RoPE rotated its q and k_rope inputs in place */
        ft_status_t s = ft_xop_mla(st, x);
        ft_prep_clear(w);
        if (s) return s;
        break;
    }
    case FTPLAN__OP_KIND__OP_ROUTER: {
        const int prepared = ft_prep_find(w, x, x->L->router.dtype) == 1;
        ft_xop_router(st, x, prepared);
        if (!prepared) ft_prep_clear(w); /* the router product prepared its rows into xp */
        return FT_OK;
    }
    case FTPLAN__OP_KIND__OP_MOE: {
        const int where = ft_prep_find(w, x, x->L->gate.dtype);
        const uint8_t *rows = where == 1   ? (const uint8_t *)w->xp
                              : where == 2 ? (const uint8_t *)st->buf[x->in[0]]
                                           : NULL;
        ft_status_t r =
            ft_xop_moe(st, x, x->L->gate.dtype == x->L->up.dtype ? rows : NULL, st->off);
        if (r) return r;
        break;
    }
    default:
        break;
    }
    /* What this op wrote is no longer what was prepared. */
    for (uint32_t j = 0; j < x->n_out; j++) {
        if (w->xp_buf == (int32_t)x->out[j]) w->xp_buf = -1;
        if (w->alt_buf == (int32_t)x->out[j]) w->alt_buf = -1;
    }
    return FT_OK;
}

/* ---- a device through the device interface (dev_ops.c) ------------------- */

FT_WARN_UNUSED static ft_status_t ft_run_dev_list(ft_dev_engine_t *ce, const ft_xops_t *list,
                                                  const int32_t *tokens, uint32_t row0, uint32_t n)
{
    ft_status_t e = FT_OK;
    for (uint32_t i = 0; i < list->n && !e; i++)
        e = ft_dev_run_op(ce, &list->ops[i], tokens, row0, n);
    return e;
}

/* One pass of the items through the device's kernels, their rows one
 * after another in the device's workspace (dev_ops.c): the prologue and
 * the blocks over all rows, the epilogue per item over the rows whose
 * logits it asks for (all of them into out_rows, else the last one's
 * into the session's logits). The items are all one-token steps or all
 * chunks of several (ft_dev_step_begin). */
FT_WARN_UNUSED static ft_status_t ft_forward_dev_pass(ft_engine_t *e, const ft_exec_item_t *items,
                                                      uint32_t n_items, int cpu_gen)
{
    ft_dev_engine_t *ce = e->dev;
    const ft_program_t *p = e->model->prog;
    ft_dev_item_t di[FT_EXEC_MAX_ITEMS];
    float *all[FT_EXEC_MAX_ITEMS], *last[FT_EXEC_MAX_ITEMS];
    int32_t *tok = ft_dev_engine_tokens(ce);
    uint32_t R = 0;
    for (uint32_t k = 0; k < n_items; k++) {
        const ft_exec_item_t *it = &items[k];
        di[k] = (ft_dev_item_t){it->s->dev, it->n, it->s->n_past, it->out_rows ? 0 : it->n - 1};
        all[k] = it->out_rows;
        last[k] = it->s->logits;
        memcpy(tok + R, it->tokens, (size_t)it->n * sizeof(int32_t));
        R += it->n;
    }
    ft_status_t err = ft_dev_step_begin(ce, di, n_items, cpu_gen, e->routing);
    if (!err) err = ft_run_dev_list(ce, &p->prologue, tok, 0, R);
    for (uint32_t l = 0; l < p->n_blocks && !err; l++)
        err = ft_run_dev_list(ce, &p->blocks[l], tok, 0, R);
    for (uint32_t k = 0; k < n_items && !err; k++) {
        uint32_t r0, n;
        ft_dev_epilogue_item(ce, k, &r0, &n);
        err = ft_run_dev_list(ce, &p->epilogue, tok + r0, r0, n);
    }
    if (!err) err = ft_dev_step_end(ce, all, last);
    return err;
}

/* ---- cpu and sim: one pass over the rows of several sessions ------------ */

FT_WARN_UNUSED static ft_status_t ft_run_list(ft_step_t *st, const ft_xops_t *list,
                                              const int32_t *tokens)
{
    ft_status_t e = FT_OK;
    for (uint32_t i = 0; i < list->n && !e; i++) {
        const ft_xop_t *x = &list->ops[i];
        /* sim: the modelled device's attention and router of the block */
        if (st->off && x->kind == FTPLAN__OP_KIND__OP_ROUTER)
            ft_offload_attention(st->off, (uint32_t)x->layer, st->n);
        e = ft_run_op(st, x, tokens);
    }
    return e;
}

/* Moves the rows the epilogue computes to the front of each buffer it
 * reads or writes: rows [r0 + first, r0 + n) of each item in `order`, the
 * order the pass laid them out in (the items whose logits are the last
 * row's first: their logits go to the workspace's rows, one per item;
 * then each item that asks for every row). Rows only move towards the
 * front, so in that order memmove keeps every row. Returns the rows kept. */
static uint32_t ft_compact_rows(const ft_program_t *p, ft_work_t *w, const ft_exec_item_t *items,
                                const uint32_t *order, uint32_t n_items, const uint32_t *row0)
{
    uint8_t touched[FT_STEP_MAX_BUFFERS] = {0};
    for (uint32_t i = 0; i < p->epilogue.n; i++) {
        const ft_xop_t *x = &p->epilogue.ops[i];
        for (uint32_t j = 0; j < x->n_in; j++)
            touched[x->in[j]] = 1;
        for (uint32_t j = 0; j < x->n_out; j++)
            touched[x->out[j]] = 1;
    }
    uint32_t dst = 0;
    for (uint32_t k = 0; k < n_items; k++) {
        const ft_exec_item_t *it = &items[order[k]];
        const uint32_t first = it->out_rows ? 0 : it->n - 1, src = row0[order[k]] + first,
                       rows = it->n - first;
        for (uint32_t b = 0; b < p->n_buffers && src != dst; b++)
            if (touched[b] && w->bufs[b])
                memmove(w->bufs[b] + (size_t)dst * p->widths[b],
                        w->bufs[b] + (size_t)src * p->widths[b],
                        (size_t)rows * p->widths[b] * sizeof(float));
        dst += rows;
    }
    return dst;
}

/* The epilogue over rows [r, r + n) of the compacted buffers, its logits
 * into out. */
FT_WARN_UNUSED static ft_status_t ft_run_epilogue(ft_step_t *st, const ft_program_t *p, uint32_t r,
                                                  uint32_t n, float *out)
{
    ft_prep_clear(st->w);
    st->n = n;
    st->row0 = r;
    for (uint32_t b = 0; b < p->n_buffers; b++)
        st->buf[b] = st->w->bufs[b] ? st->w->bufs[b] + (size_t)r * p->widths[b] : NULL;
    st->buf[p->logits_buf] = out;
    return ft_run_list(st, &p->epilogue, NULL);
}

/* One pass: the items' rows one after another in the workspace (their sum
 * at most w->rows, at most w->items of them), every op over all rows,
 * each row-wise op reading its row's own session. */
FT_WARN_UNUSED static ft_status_t ft_forward_pass(ft_engine_t *e, const ft_exec_item_t *items,
                                                  uint32_t n_items, int use_generated)
{
    const ft_model_t *m = e->model;
    const ft_program_t *p = m->prog;
    ft_work_t *w = e->work;
    /* Rows in the order the epilogue wants them (ft_compact_rows): the
     * items whose logits are the last row's, then those asking for all. */
    uint32_t row0[FT_EXEC_MAX_ITEMS], order[FT_EXEC_MAX_ITEMS], R = 0, n_last = 0;
    for (uint32_t i = 0; i < n_items; i++)
        if (!items[i].out_rows) order[n_last++] = i;
    for (uint32_t i = 0, k = n_last; i < n_items; i++)
        if (items[i].out_rows) order[k++] = i;
    for (uint32_t k = 0; k < n_items; k++) {
        const ft_exec_item_t *it = &items[order[k]];
        row0[order[k]] = R;
        for (uint32_t t = 0; t < it->n; t++) {
            w->row_s[R + t] = it->s;
            w->row_pos[R + t] = it->s->n_past + t;
            w->tok[R + t] = it->tokens[t];
        }
        R += it->n;
    }
    w->use_generated = use_generated;
    ft_prep_clear(w);
    ft_step_t st = {.e = e, .w = w, .n = R, .n_step = R, .row0 = 0, .off = e->offload};
    for (uint32_t b = 0; b < p->n_buffers; b++)
        st.buf[b] = w->bufs[b];
    if (st.off) ft_offload_step_begin(st.off);
    ft_status_t err = ft_run_list(&st, &p->prologue, w->tok);
    for (uint32_t l = 0; l < p->n_blocks && !err; l++)
        err = ft_run_list(&st, &p->blocks[l], w->tok);
    /* The epilogue: the last row of each item, together, then every row of
     * the items that ask for all their logits, each into its own rows. */
    if (!err) {
        ft_compact_rows(p, w, items, order, n_items, row0);
        if (n_last) err = ft_run_epilogue(&st, p, 0, n_last, w->logits);
        for (uint32_t k = n_last, r = n_last; k < n_items && !err; k++) {
            const ft_exec_item_t *it = &items[order[k]];
            err = ft_run_epilogue(&st, p, r, it->n, it->out_rows);
            r += it->n;
        }
    }
    if (st.off) ft_offload_step_end(st.off, R);
    if (err) return err;
    for (uint32_t k = 0; k < n_items; k++) {
        const ft_exec_item_t *it = &items[order[k]];
        const float *last = k < n_last ? w->logits + (size_t)k * m->vocab_size
                                       : it->out_rows + (size_t)(it->n - 1) * m->vocab_size;
        memcpy(it->s->logits, last, m->vocab_size * sizeof(float));
    }
    return FT_OK;
}

int ft_exec_uses_generated(const ft_engine_t *e, uint32_t n)
{
    return e->kmod && n >= e->gen_min_tokens;
}

/* The session has taken n more tokens and has the last one's logits. */
static void ft_forward_done(ft_session_t *s, uint32_t n)
{
    if (s->engine->routing) s->engine->routing_tokens += n;
    s->n_past += n;
    s->has_logits = 1;
}

/* The device: passes of the items whose rows take the same kernels alone
 * (one-token steps, or chunks of several whose CPU experts take the same
 * kernels), each within the device's workspace. */
FT_WARN_UNUSED static ft_status_t ft_exec_step_dev(ft_engine_t *e, const ft_exec_item_t *items,
                                                   uint32_t n_items)
{
    const uint32_t max_rows = ft_dev_engine_pass_rows(e->dev),
                   max_items = ft_dev_engine_pass_items(e->dev);
    for (int key = 0; key < 3; key++) { /* 0, 1: chunks with reference / generated CPU experts; 2: decode */
        ft_exec_item_t pass[FT_EXEC_MAX_ITEMS];
        uint32_t n_pass = 0, rows = 0;
        for (uint32_t i = 0; i <= n_items; i++) {
            const int last = i == n_items;
            const ft_exec_item_t *it = last ? NULL : &items[i];
            if (it && (it->n == 1 ? 2 : ft_exec_uses_generated(e, it->n)) != key) continue;
            if (n_pass && (last || rows + it->n > max_rows || n_pass == max_items ||
                           n_pass == FT_EXEC_MAX_ITEMS)) {
                ft_status_t err =
                    ft_forward_dev_pass(e, pass, n_pass, key == 2 ? ft_exec_uses_generated(e, 1) : key);
                if (err) return err;
                for (uint32_t k = 0; k < n_pass; k++)
                    ft_forward_done(pass[k].s, pass[k].n);
                n_pass = rows = 0;
            }
            if (it) {
                pass[n_pass++] = *it;
                rows += it->n;
            }
        }
    }
    return FT_OK;
}

ft_status_t ft_exec_step(ft_engine_t *e, const ft_exec_item_t *items, uint32_t n_items)
{
    if (e->dev) return ft_exec_step_dev(e, items, n_items);
    /* Every item's KV pages first (the scheduler prepared them already:
     * then this only checks), so a full pool stops the step before it
     * computes anything. */
    for (uint32_t i = 0; i < n_items; i++) {
        ft_status_t err = ft_exec_session_prepare(items[i].s, items[i].n);
        if (err) return err;
    }
    /* Passes of the items that share a kernel path (a row's results are
     * those of its item alone whatever else is in the pass, as long as its
     * path is the one it would take alone), each within the workspace. */
    for (int gen = 1; gen >= 0; gen--) {
        ft_exec_item_t pass[FT_EXEC_MAX_ITEMS];
        uint32_t n_pass = 0, rows = 0;
        for (uint32_t i = 0; i <= n_items; i++) {
            const int last = i == n_items;
            const ft_exec_item_t *it = last ? NULL : &items[i];
            if (it && ft_exec_uses_generated(e, it->n) != gen) continue;
            if (n_pass && (last || rows + it->n > e->work->rows || n_pass == e->work->items ||
                           n_pass == FT_EXEC_MAX_ITEMS)) {
                ft_status_t err = ft_forward_pass(e, pass, n_pass, gen);
                if (err) return err;
                for (uint32_t k = 0; k < n_pass; k++)
                    ft_forward_done(pass[k].s, pass[k].n);
                n_pass = rows = 0;
            }
            if (it) {
                pass[n_pass++] = *it;
                rows += it->n;
            }
        }
    }
    return FT_OK;
}
