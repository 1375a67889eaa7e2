/* The executor: one step of tokens through the plan's op schedule. It
 * walks the bound ops (program.h) in order and runs each on the CPU's
 * kernels: the prologue over every token, each block, then the epilogue
 * over the rows whose logits are asked for. It knows ops, not models.
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
#include "ops.h"

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
            return;
        }
    }
    ft_fwd_linear(s, x->w, ys, x->n_w, st->buf[x->in[0]], st->n);
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

static void ft_run_add(ft_step_t *st, const ft_xop_t *x)
{
    const float *in = st->buf[x->in[0]];
    float *out = st->buf[x->out[0]];
    for (size_t i = 0; i < (size_t)st->n * x->width; i++)
        out[i] += in[i];
}

static void ft_run_op(ft_step_t *st, const ft_xop_t *x, const int32_t *tokens)
{
    ft_session_t *s = st->s;
    switch (x->kind) {
    case FTPLAN__OP_KIND__OP_EMBED:
        ft_run_embed(st, x, tokens);
        break;
    case FTPLAN__OP_KIND__OP_RMSNORM:
        ft_prep_clear(s);
        ft_run_rmsnorm(st, x);
        return;
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
        return;
    case FTPLAN__OP_KIND__OP_ADD:
        ft_run_add(st, x);
        break;
    case FTPLAN__OP_KIND__OP_ROUTER: {
        const int prepared = ft_prep_find(s, x, x->L->router.dtype) == 1;
        ft_xop_router(st, x, prepared);
        if (!prepared)
            ft_prep_clear(s); /* the router product prepared its rows into xp */
        return;
    }
    case FTPLAN__OP_KIND__OP_MOE: {
        const int where = ft_prep_find(s, x, x->L->gate.dtype);
        const uint8_t *rows = where == 1   ? (const uint8_t *)s->xp
                              : where == 2 ? (const uint8_t *)st->buf[x->in[0]]
                                           : NULL;
        ft_xop_moe(st, x, x->L->gate.dtype == x->L->up.dtype ? rows : NULL);
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
}

static void ft_run_list(ft_step_t *st, const ft_xops_t *list, const int32_t *tokens)
{
    for (uint32_t i = 0; i < list->n; i++)
        ft_run_op(st, &list->ops[i], tokens);
}

void ft_forward_chunk(ft_session_t *s, const int32_t *tokens, uint32_t n, float *all_logits)
{
    const ft_model_t *m = s->m;
    const ft_program_t *p = m->prog;
    s->use_generated = s->engine->kmod && n >= s->engine->gen_min_tokens;
    ft_prep_clear(s);
    ft_step_t st = {.s = s, .n = n, .pos0 = s->n_past};
    for (uint32_t b = 0; b < p->n_buffers; b++)
        st.buf[b] = s->bufs[b];
    ft_run_list(&st, &p->prologue, tokens);
    ft_offload_t *off = s->engine->offload;
    if (off)
        ft_offload_step_begin(off);
    for (uint32_t l = 0; l < p->n_blocks; l++)
        ft_run_list(&st, &p->blocks[l], tokens);
    if (off)
        ft_offload_step_end(off, n);
    if (s->engine->routing)
        s->engine->routing_tokens += n;
    /* The epilogue: every row's logits when asked for, else the last's. */
    const uint32_t first = all_logits ? 0 : n - 1;
    ft_prep_clear(s);
    st.n = n - first;
    st.pos0 = s->n_past + first;
    for (uint32_t b = 0; b < p->n_buffers; b++)
        st.buf[b] = s->bufs[b] ? s->bufs[b] + (size_t)first * p->widths[b] : NULL;
    st.buf[p->logits_buf] = all_logits ? all_logits : s->logits;
    ft_run_list(&st, &p->epilogue, tokens + first);
    if (all_logits)
        memcpy(s->logits, all_logits + (size_t)(n - 1) * m->vocab_size, m->vocab_size * sizeof(float));
    s->n_past += n;
    s->has_logits = 1;
}
