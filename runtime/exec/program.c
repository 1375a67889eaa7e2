/* Binding the plan's op schedule (program.h): weights, buffers and
 * parameters per op, shapes checked against each other, then the CPU
 * fusions the kernel module offers. */
#include "program.h"

#include "../backends/cpu/cpu_module.h"
#include "../backends/cpu/kernels.h"
#include "../base/alloc.h"
#include "../format/convert.h"
#include "../format/plan_validate.h"

#include <math.h>
#include <string.h>

typedef struct ft_bind_ctx {
    const ft_bundle_t *b;
    const ft_model_t *m;
    ft_program_t *p;
    const char *where; /* the plan file */
    const char *list;  /* "prologue", "block", "epilogue" */
    int32_t layer;
    float *inv_freq;   /* next free entries of p->inv_freq */
    float *bias;       /* next free entries of p->bias_floats */
} ft_bind_ctx_t;

#define FT_BIND_ERR(fmt, ...)                                                                            \
    ft_status_make(FT_STATUS_UNSUPPORTED, "%s: schedule %s %d op %zu (%s): " fmt, c->where, c->list,     \
                   (int)c->layer, i, ft_plan_op_kind_name(op->kind), __VA_ARGS__)

static uint32_t ft_width(const ft_bind_ctx_t *c, uint32_t buf)
{
    return c->p->widths[buf];
}

/* The op's weight j as an f32 vector of n elements. */
FT_WARN_UNUSED static ft_status_t ft_bind_vec_at(const ft_bind_ctx_t *c, const Ftplan__Op *op, size_t i, size_t j,
                                                 uint32_t n, const float **out)
{
    const Ftplan__Tensor *t = c->b->plan->tensors[op->weights[j]];
    if (t->format != FTPLAN__WEIGHT_FORMAT__WF_F32 || t->n_shape != 1 || t->shape[0] != n)
        return FT_BIND_ERR("tensor '%s' is not an f32 vector of %u elements", t->name, n);
    const uint8_t *p;
    ft_status_t st = ft_ftw_range(c->b->weight_files[t->file], t->offset, (uint64_t)n * 4, &p);
    *out = (const float *)p; /* FTW offsets are 4096-aligned */
    return st;
}

FT_WARN_UNUSED static ft_status_t ft_bind_vec(const ft_bind_ctx_t *c, const Ftplan__Op *op, size_t i, uint32_t n,
                                              const float **out)
{
    return ft_bind_vec_at(c, op, i, 0, n, out);
}

/* The shapes of one op's matrices against its buffers. */
FT_WARN_UNUSED static ft_status_t ft_bind_mats(const ft_bind_ctx_t *c, const Ftplan__Op *op, size_t i, ft_xop_t *x)
{
    for (size_t j = 0; j < op->n_weights; j++) {
        x->w[j] = &c->m->mats[op->weights[j]];
        if (!x->w[j]->data)
            return FT_BIND_ERR("weight %zu is not a matrix", j);
    }
    if (op->kind == FTPLAN__OP_KIND__OP_EMBED && x->w[0]->cols != ft_width(c, x->out[0]))
        return FT_BIND_ERR("embedding rows of %u for a buffer of width %u", x->w[0]->cols, ft_width(c, x->out[0]));
    if (op->kind != FTPLAN__OP_KIND__OP_LINEAR)
        return FT_OK;
    for (uint32_t j = 0; j < x->n_w; j++)
        if (x->w[j]->cols != ft_width(c, x->in[0]) || x->w[j]->rows != ft_width(c, x->out[j]))
            return FT_BIND_ERR("weight %u is [%u, %u] between buffers of width %u and %u", j, x->w[j]->rows,
                               x->w[j]->cols, ft_width(c, x->in[0]), ft_width(c, x->out[j]));
    return FT_OK;
}

/* Plan tensor ti, an f32, f16 or bf16 vector (or [experts, rows] stack)
 * of n elements (validated), widened to f32 into the program's next free
 * floats. */
FT_WARN_UNUSED static ft_status_t ft_bind_widened(ft_bind_ctx_t *c, const Ftplan__Op *op, size_t i, uint32_t ti,
                                                  uint32_t n, const char *what, const float **out)
{
    const Ftplan__Tensor *t = c->b->plan->tensors[ti];
    uint64_t n_bytes;
    const uint8_t *src;
    const uint64_t elems = t->n_shape == 1 ? t->shape[0] : t->n_shape == 2 ? t->shape[0] * t->shape[1] : 0;
    if (elems != n || !ft_dtype_row_bytes((ft_dtype_t)t->format, n, &n_bytes))
        return FT_BIND_ERR("%s '%s' is not a vector of %u elements", what, t->name, n);
    ft_status_t st = ft_ftw_range(c->b->weight_files[t->file], t->offset, n_bytes, &src);
    if (!st)
        st = ft_convert_row(FT_DTYPE_F32, c->bias, (ft_dtype_t)t->format, src, n);
    if (st)
        return ft_status_annotate(st, "%s: %s '%s'", c->where, what, t->name);
    *out = c->bias;
    c->bias += n;
    return FT_OK;
}

/* A LINEAR's biases (plan_validate_schedule.c checked each is an f32, f16
 * or bf16 vector of its weight's rows), widened to f32 once here. */
FT_WARN_UNUSED static ft_status_t ft_bind_biases(ft_bind_ctx_t *c, const Ftplan__Op *op, size_t i, ft_xop_t *x)
{
    ft_status_t st = FT_OK;
    for (size_t j = 0; j < op->n_biases && !st; j++)
        if (op->biases[j] != FT_PLAN_NO_BIAS)
            st = ft_bind_widened(c, op, i, op->biases[j], x->w[j]->rows, "bias", &x->bias[j]);
    return st;
}

/* A ROPE op's frequencies into inv_freq [rope_dim / 2]; returns the scale
 * of its cos and sin. Plain RoPE: theta^(-2k/d), scale 1. YaRN as
 * llama.cpp's rope_yarn computes it (ggml-cpu/ops.cpp, ext_factor 1,
 * attn_factor 1), which HF's _compute_yarn_parameters equals when it
 * truncates the correction range (truncate, its default):
 *   corr(b)  = d ln(orig_ctx / (2 pi b)) / (2 ln theta)
 *   low      = max(0, floor(corr(beta_fast))), high = min(d - 1, ceil(corr(beta_slow)))
 *   ramp_k   = 1 - clamp((k - low) / max(0.001, high - low), 0, 1)
 *   f_k      = theta^(-2k/d) (extrapolated), f_k / factor (interpolated)
 *   inv_freq = f_k / factor * (1 - ramp_k) + f_k * ramp_k
 *   scale    = 1 + 0.1 ln(factor)   (cos and sin both) */
static float ft_rope_freqs(const Ftplan__Op *op, float *inv_freq)
{
    const double d = op->rope_dim, theta = op->rope_theta, factor = op->rope_yarn_factor;
    double low = 0.0, high = 0.0;
    if (factor != 0.0) {
        const double pi = 3.14159265358979323846, lb = 2.0 * log(theta), ctx = op->rope_yarn_orig_ctx;
        low = floor(d * log(ctx / (2.0 * pi * op->rope_yarn_beta_fast)) / lb);
        high = ceil(d * log(ctx / (2.0 * pi * op->rope_yarn_beta_slow)) / lb);
        low = low > 0.0 ? low : 0.0;
        high = high < d - 1.0 ? high : d - 1.0;
    }
    for (uint32_t k = 0; k < op->rope_dim / 2; k++) {
        const double f = pow(theta, -2.0 * k / d);
        if (factor == 0.0) {
            inv_freq[k] = (float)f;
            continue;
        }
        double y = (k - low) / (high - low > 0.001 ? high - low : 0.001);
        y = y < 0.0 ? 0.0 : y > 1.0 ? 1.0 : y;
        const double ramp = 1.0 - y;
        inv_freq[k] = (float)(f / factor * (1.0 - ramp) + f * ramp);
    }
    return factor != 0.0 ? (float)(1.0 + 0.1 * log(factor)) : 1.0f;
}

/* An MLA: its buffers against its heads, W_kb (either layout, by the
 * tensor's role) and W_vb, RoPE's table, and the cache rows' width. */
FT_WARN_UNUSED static ft_status_t ft_bind_mla(ft_bind_ctx_t *c, const Ftplan__Op *op, size_t i, ft_xop_t *x)
{
    if (c->layer < 0)
        return FT_BIND_ERR("%s", "the KV cache belongs to a block: not in the prologue or epilogue");
    const uint32_t H = op->n_heads, hd = op->head_dim, rope = op->rope_dim, r = op->kv_lora_rank,
                   v = op->value_head_dim, nope = hd - rope; /* validated: rope < head_dim */
    if (ft_width(c, x->in[0]) != (uint64_t)H * hd || ft_width(c, x->in[1]) != r || ft_width(c, x->in[2]) != rope ||
        ft_width(c, x->out[0]) != (uint64_t)H * v)
        return FT_BIND_ERR("%u heads of %u (rope %u), kv_lora_rank %u and values of %u do not fit buffers of "
                           "width %u, %u, %u -> %u", H, hd, rope, r, v, ft_width(c, x->in[0]),
                           ft_width(c, x->in[1]), ft_width(c, x->in[2]), ft_width(c, x->out[0]));
    if ((uint64_t)r + rope > FT_MLA_MAX_ROW || (r + rope + 1) / 2 > c->p->max_kv_width)
        return FT_BIND_ERR("a compressed row of %u + %u (at most %u, in K and V rows of %u)", r, rope,
                           FT_MLA_MAX_ROW, c->p->max_kv_width);
    x->mla_kb_t = c->b->plan->tensors[op->weights[0]]->role == FTPLAN__TENSOR_ROLE__ROLE_ATTN_K_B_T;
    const ft_mat_t *kb = x->w[0], *vb = x->w[1];
    if ((x->mla_kb_t ? kb->rows != (uint64_t)H * r || kb->cols != nope
                     : kb->rows != (uint64_t)H * nope || kb->cols != r) ||
        vb->rows != (uint64_t)H * v || vb->cols != r)
        return FT_BIND_ERR("W_kb [%u, %u] and W_vb [%u, %u] are not %u heads' [%u, %u]%s and [%u, %u]", kb->rows,
                           kb->cols, vb->rows, vb->cols, H, x->mla_kb_t ? r : nope, x->mla_kb_t ? nope : r,
                           x->mla_kb_t ? " (transposed)" : "", v, r);
    if (rope / 2 > FT_ROPE_MSCALE_MAX_HALF)
        return FT_BIND_ERR("RoPE over %u dims (at most %u)", rope, 2 * FT_ROPE_MSCALE_MAX_HALF);
    x->rope_neox = op->rope == FTPLAN__ROPE_KIND__ROPE_NEOX;
    x->rope_dim = rope;
    x->inv_freq = c->inv_freq;
    x->rope_mscale = ft_rope_freqs(op, c->inv_freq);
    if (op->rope_mscale != 0.0f)
        x->rope_mscale = op->rope_mscale; /* the family's own (DeepSeek's) */
    c->inv_freq += rope / 2;
    x->mla_kv_lora = r;
    x->mla_v_dim = v;
    x->mla_scale = op->attn_scale != 0.0f ? op->attn_scale : (float)(1.0 / sqrt((double)hd));
    return FT_OK;
}

/* A DELTANET: its buffers' widths against its heads, its taps, dt_bias
 * and A widened to f32, and the next slice of the recurrent state. */
FT_WARN_UNUSED static ft_status_t ft_bind_deltanet(ft_bind_ctx_t *c, const Ftplan__Op *op, size_t i,
                                                   ft_xop_t *x)
{
    if (c->layer < 0)
        return FT_BIND_ERR(
            "%s", "the recurrent state belongs to a block: not in the prologue or epilogue");
    ft_deltanet_shape_t *sh = &x->dn;
    *sh = (ft_deltanet_shape_t){op->n_heads,     op->n_kv_heads,  op->head_dim,
                                op->conv_kernel, op->heads_tiled, op->eps};
    const size_t C = ft_deltanet_channels(sh); /* validated sizes: no overflow */
    const uint64_t o = (uint64_t)op->n_heads * op->head_dim;
    if (ft_width(c, x->in[0]) != C || ft_width(c, x->in[1]) != op->n_heads ||
        ft_width(c, x->in[2]) != op->n_heads || ft_width(c, x->out[0]) != o)
        return FT_BIND_ERR(
            "buffers of width %u, %u, %u -> %u for %u value and %u key heads of %u (want %zu, %u, "
            "%u -> %llu)",
            ft_width(c, x->in[0]), ft_width(c, x->in[1]), ft_width(c, x->in[2]),
            ft_width(c, x->out[0]), op->n_heads, op->n_kv_heads, op->head_dim, C, op->n_heads,
            op->n_heads, (unsigned long long)o);
    ft_status_t st;
    if ((st = ft_bind_widened(c, op, i, op->weights[0], (uint32_t)(C * op->conv_kernel),
                              "conv taps", &x->dn_conv)) ||
        (st = ft_bind_widened(c, op, i, op->weights[1], op->n_heads, "dt_bias", &x->dn_dt_bias)) ||
        (st = ft_bind_widened(c, op, i, op->weights[2], op->n_heads, "A", &x->dn_a)))
        return st;
    x->rstate_off = c->p->rstate_bytes;
    x->rstate_bytes = ft_deltanet_state_bytes(sh);
    c->p->rstate_bytes += (x->rstate_bytes + 63) & ~(size_t)63;
    if (C > c->p->max_dn_channels) c->p->max_dn_channels = (uint32_t)C;
    if (op->n_heads > c->p->max_dn_heads) c->p->max_dn_heads = op->n_heads;
    if (ft_deltanet_chunk_scratch_floats(sh) > c->p->max_dn_chunk_scratch)
        c->p->max_dn_chunk_scratch = ft_deltanet_chunk_scratch_floats(sh);
    return FT_OK;
}

/* Kind-specific parameters and shape checks. */
FT_WARN_UNUSED static ft_status_t ft_bind_params(ft_bind_ctx_t *c, const Ftplan__Op *op, size_t i, ft_xop_t *x)
{
    const uint32_t w_in = x->n_in ? ft_width(c, x->in[0]) : 0, w_out = x->n_out ? ft_width(c, x->out[0]) : 0;
    const uint32_t q_w = op->n_heads * op->head_dim, kv_w = op->n_kv_heads * op->head_dim;
    switch (op->kind) {
    case FTPLAN__OP_KIND__OP_RMSNORM:
        x->width = w_in;
        if (w_out != w_in)
            return FT_BIND_ERR("buffers of width %u and %u", w_in, w_out);
        return ft_bind_vec(c, op, i, w_in, &x->vec);
    case FTPLAN__OP_KIND__OP_HEAD_NORM:
        if (q_w != w_in)
            return FT_BIND_ERR("%u heads of %u for a buffer of width %u", op->n_heads, op->head_dim, w_in);
        return ft_bind_vec(c, op, i, op->head_dim, &x->vec);
    case FTPLAN__OP_KIND__OP_ROPE:
        if (q_w != w_in || kv_w != ft_width(c, x->in[1]))
            return FT_BIND_ERR("%u and %u heads of %u for buffers of width %u and %u", op->n_heads,
                               op->n_kv_heads, op->head_dim, w_in, ft_width(c, x->in[1]));
        x->rope_neox = op->rope == FTPLAN__ROPE_KIND__ROPE_NEOX;
        x->rope_dim = op->rope_dim;
        x->inv_freq = c->inv_freq;
        x->rope_mscale = ft_rope_freqs(op, c->inv_freq);
        c->inv_freq += op->rope_dim / 2;
        if (x->rope_mscale != 1.0f && op->rope_dim / 2 > FT_ROPE_MSCALE_MAX_HALF)
            return FT_BIND_ERR("YaRN over %u rotated dims (at most %u)", op->rope_dim, 2 * FT_ROPE_MSCALE_MAX_HALF);
        return FT_OK;
    case FTPLAN__OP_KIND__OP_KV_APPEND:
    case FTPLAN__OP_KIND__OP_ATTENTION:
        if (c->layer < 0)
            return FT_BIND_ERR("%s", "the KV cache belongs to a block: not in the prologue or epilogue");
        if (op->kind == FTPLAN__OP_KIND__OP_KV_APPEND
                ? kv_w != w_in || kv_w != ft_width(c, x->in[1]) || x->in[0] != c->p->kv_buf
                : q_w != w_in || q_w != w_out)
            return FT_BIND_ERR("%u/%u heads of %u do not fit the buffers", op->n_heads, op->n_kv_heads,
                               op->head_dim);
        x->sliding_window = op->sliding_window;
        if (op->kind == FTPLAN__OP_KIND__OP_ATTENTION && op->n_weights)
            return ft_bind_widened(c, op, i, op->weights[0], op->n_heads, "sinks", &x->sinks);
        return FT_OK;
    case FTPLAN__OP_KIND__OP_ADD:
        x->width = w_in;
        return w_in == w_out ? FT_OK : FT_BIND_ERR("buffers of width %u and %u", w_in, w_out);
    case FTPLAN__OP_KIND__OP_GLU:
        x->width = w_in;
        x->act = op->act;
        if (op->act == FTPLAN__ACTIVATION__ACT_SIGMOID && w_in == 1 && ft_width(c, x->in[1]) > 1) {
            /* the one-float gate scales inputs[1] in place */
            x->glu_bcast = 1;
            x->width = ft_width(c, x->in[1]);
            return x->out[0] == x->in[1]
                       ? FT_OK
                       : FT_BIND_ERR("%s", "a one-float sigmoid gate scales its input in place "
                                           "(outputs[0] = inputs[1])");
        }
        x->act_alpha = op->act_alpha;
        x->act_limit = op->act_limit;
        if (op->act != FTPLAN__ACTIVATION__ACT_SILU && op->act != FTPLAN__ACTIVATION__ACT_SWIGLU_OAI &&
            op->act != FTPLAN__ACTIVATION__ACT_SIGMOID)
            return FT_BIND_ERR("%s", "only SwiGLU (ACT_SILU), clamped SwiGLU (ACT_SWIGLU_OAI) and the sigmoid "
                                     "gate (ACT_SIGMOID) run here");
        if (ft_width(c, x->in[1]) != w_in || w_out != w_in)
            return FT_BIND_ERR("buffers of width %u, %u and %u", w_in, ft_width(c, x->in[1]), w_out);
        return FT_OK;
    case FTPLAN__OP_KIND__OP_DELTANET:
        return ft_bind_deltanet(c, op, i, x);
    case FTPLAN__OP_KIND__OP_MLA:
        return ft_bind_mla(c, op, i, x);
    case FTPLAN__OP_KIND__OP_ROUTER:
    case FTPLAN__OP_KIND__OP_MOE:
        if (c->layer < 0)
            return FT_BIND_ERR("%s", "experts belong to a block");
        x->L = &c->m->layers[c->layer];
        x->scoring = op->scoring == FTPLAN__ROUTER_SCORING__ROUTER_SIGMOID;
        x->n_groups = op->n_groups;
        x->n_groups_used = op->n_groups_used;
        x->routed_scaling = op->routed_scaling != 0.0f ? op->routed_scaling : 1.0f;
        x->act = op->act;
        x->act_alpha = op->act_alpha;
        x->act_limit = op->act_limit;
        if (op->kind == FTPLAN__OP_KIND__OP_MOE && op->act != FTPLAN__ACTIVATION__ACT_SILU &&
            op->act != FTPLAN__ACTIVATION__ACT_SWIGLU_OAI)
            return FT_BIND_ERR("%s", "only SwiGLU and clamped SwiGLU (ACT_SWIGLU_OAI) experts run here");
        if (w_in != c->m->d_model || (x->n_out && w_out != c->m->d_model) ||
            x->L->router.cols != c->m->d_model || x->L->router.rows != op->n_experts ||
            x->L->n_used != op->n_experts_used)
            return FT_BIND_ERR("%s", "router or experts do not match the block's buffers");
        if (op->kind == FTPLAN__OP_KIND__OP_ROUTER && op->n_weights == 2) {
            ft_status_t st = ft_bind_vec_at(c, op, i, 1, op->n_experts, &x->sel_bias);
            if (st) return st;
        }
        if (op->kind == FTPLAN__OP_KIND__OP_ROUTER && op->n_biases && op->biases[0] != FT_PLAN_NO_BIAS)
            return ft_bind_widened(c, op, i, op->biases[0], op->n_experts, "router bias", &x->bias[0]);
        if (op->kind == FTPLAN__OP_KIND__OP_MOE) {
            const uint32_t rows[3] = {x->L->gate.rows, x->L->up.rows, x->L->down.rows};
            ft_status_t st = FT_OK;
            for (size_t j = 0; j < op->n_biases && j < 3 && !st; j++)
                if (op->biases[j] != FT_PLAN_NO_BIAS)
                    st = ft_bind_widened(c, op, i, op->biases[j], op->n_experts * rows[j], "expert bias",
                                         &x->bias[j]);
            return st;
        }
        return FT_OK;
    default:
        return FT_OK;
    }
}

FT_WARN_UNUSED static ft_status_t ft_bind_list(ft_bind_ctx_t *c, Ftplan__Op *const *ops, size_t n, const ft_allocator_t *a,
                                ft_xops_t *out)
{
    out->n = (uint32_t)n;
    out->ops = ft_mem_calloc(a, n ? n : 1, sizeof(ft_xop_t));
    if (!out->ops)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory for the schedule", c->where);
    for (size_t i = 0; i < n; i++) {
        const Ftplan__Op *op = ops[i];
        ft_xop_t *x = &out->ops[i];
        x->kind = op->kind;
        x->id = c->p->n_ops++;
        x->layer = c->layer;
        x->n_in = (uint32_t)op->n_inputs;
        x->n_out = (uint32_t)op->n_outputs;
        x->n_w = (uint32_t)op->n_weights;
        for (uint32_t j = 0; j < x->n_in; j++) /* protobuf-c leaves empty lists NULL */
            x->in[j] = op->inputs[j];
        for (uint32_t j = 0; j < x->n_out; j++)
            x->out[j] = op->outputs[j];
        x->eps = op->eps;
        x->n_heads = op->n_heads;
        x->n_kv_heads = op->n_kv_heads;
        x->head_dim = op->head_dim;
        x->next_type = FT_DTYPE_INVALID;
        for (uint32_t j = 0; j < x->n_out; j++)
            if (c->p->widths[x->out[j]] && c->b->plan->schedule->buffers[x->out[j]]->kind ==
                                              FTPLAN__BUFFER_KIND__BUF_LOGITS && op->kind != FTPLAN__OP_KIND__OP_LINEAR)
                return FT_BIND_ERR("%s", "only a LINEAR writes the logits");
        ft_status_t st;
        if (op->kind == FTPLAN__OP_KIND__OP_HEAD_NORM && op->n_heads == 0)
            return FT_BIND_ERR("%s", "no heads");
        if (op->kind == FTPLAN__OP_KIND__OP_LINEAR || op->kind == FTPLAN__OP_KIND__OP_EMBED ||
            op->kind == FTPLAN__OP_KIND__OP_MLA)
            if ((st = ft_bind_mats(c, op, i, x)) || (st = ft_bind_biases(c, op, i, x)))
                return st;
        if ((st = ft_bind_params(c, op, i, x)))
            return st;
    }
    return FT_OK;
}

/* Room for every ROPE op's frequency table. */
static size_t ft_rope_floats(const Ftplan__Schedule *s)
{
    size_t n = 0;
    for (size_t l = 0; l < s->n_blocks; l++)
        for (size_t i = 0; i < s->blocks[l]->n_ops; i++)
            if (s->blocks[l]->ops[i]->kind == FTPLAN__OP_KIND__OP_ROPE ||
                s->blocks[l]->ops[i]->kind == FTPLAN__OP_KIND__OP_MLA)
                n += s->blocks[l]->ops[i]->rope_dim / 2;
    return n;
}

/* Room for every LINEAR bias (its weight's rows, validated), every
 * ATTENTION's sinks (its heads) and every DELTANET's vectors as f32. */
static size_t ft_bias_floats(const Ftplan__Plan *plan)
{
    const Ftplan__Schedule *s = plan->schedule;
    size_t n = 0;
    Ftplan__Op *const *lists[2] = {s->prologue, s->epilogue};
    const size_t n_lists[2] = {s->n_prologue, s->n_epilogue};
    for (size_t l = 0; l < s->n_blocks + 2; l++) {
        Ftplan__Op *const *ops = l < s->n_blocks ? s->blocks[l]->ops : lists[l - s->n_blocks];
        const size_t n_ops = l < s->n_blocks ? s->blocks[l]->n_ops : n_lists[l - s->n_blocks];
        for (size_t i = 0; i < n_ops; i++) {
            for (size_t j = 0; j < ops[i]->n_biases; j++)
                if (ops[i]->biases[j] != FT_PLAN_NO_BIAS) {
                    const Ftplan__Tensor *t = plan->tensors[ops[i]->biases[j]];
                    n += (size_t)t->shape[0] * (t->n_shape == 2 ? (size_t)t->shape[1] : 1);
                }
            if (ops[i]->kind == FTPLAN__OP_KIND__OP_ATTENTION && ops[i]->n_weights)
                n += ops[i]->n_heads; /* the sinks */
            if (ops[i]->kind ==
                FTPLAN__OP_KIND__OP_DELTANET) /* taps, dt_bias, A (validated shapes) */
                n += (size_t)plan->tensors[ops[i]->weights[0]]->shape[0] * ops[i]->conv_kernel +
                     2 * (size_t)ops[i]->n_heads;
        }
    }
    return n;
}

/* The KV append's K buffer: the cache rows are its width. */
static int32_t ft_kv_buffer(const Ftplan__Schedule *s)
{
    for (size_t l = 0; l < s->n_blocks; l++)
        for (size_t i = 0; i < s->blocks[l]->n_ops; i++)
            if (s->blocks[l]->ops[i]->kind == FTPLAN__OP_KIND__OP_KV_APPEND)
                return (int32_t)s->blocks[l]->ops[i]->inputs[0];
    return -1;
}

/* The K (and V) row width an MLA needs: half its compressed row, rounded
 * up; 0 without MLA ops. */
static uint32_t ft_mla_kv_width(const Ftplan__Schedule *s)
{
    uint64_t w = 0;
    for (size_t l = 0; l < s->n_blocks; l++)
        for (size_t i = 0; i < s->blocks[l]->n_ops; i++) {
            const Ftplan__Op *op = s->blocks[l]->ops[i];
            const uint64_t half = ((uint64_t)op->kv_lora_rank + op->rope_dim + 1) / 2;
            if (op->kind == FTPLAN__OP_KIND__OP_MLA && half > w)
                w = half;
        }
    return w > FT_MLA_MAX_ROW ? FT_MLA_MAX_ROW : (uint32_t)w;
}

ft_status_t ft_program_create(const ft_bundle_t *b, const ft_model_t *m, const ft_allocator_t *a,
                              ft_program_t **out)
{
    *out = NULL;
    const Ftplan__Schedule *s = b->plan->schedule;
    const char *where = b->plan_file->path;
    ft_program_t *p = ft_mem_calloc(a, 1, sizeof(*p));
    if (!p)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", where);
    ft_status_t st = FT_OK;
    p->n_buffers = (uint32_t)s->n_buffers;
    p->n_blocks = (uint32_t)s->n_blocks;
    p->widths = ft_mem_calloc(a, p->n_buffers, sizeof(uint32_t));
    p->blocks = ft_mem_calloc(a, p->n_blocks ? p->n_blocks : 1, sizeof(ft_xops_t));
    p->inv_freq = ft_mem_calloc(a, ft_rope_floats(s) + 1, sizeof(float));
    p->bias_floats = ft_mem_calloc(a, ft_bias_floats(b->plan) + 1, sizeof(float));
    if (!p->widths || !p->blocks || !p->inv_freq || !p->bias_floats) {
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", where);
        goto fail;
    }
    p->logits_buf = -1;
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        p->widths[i] = s->buffers[i]->width;
        if (s->buffers[i]->kind == FTPLAN__BUFFER_KIND__BUF_LOGITS) {
            if (p->logits_buf >= 0 || p->widths[i] != m->vocab_size) {
                st = ft_status_make(FT_STATUS_UNSUPPORTED, "%s: the schedule needs one logits buffer of the "
                                    "vocabulary's width %u", where, m->vocab_size);
                goto fail;
            }
            p->logits_buf = (int32_t)i;
        }
    }
    const int32_t kv = ft_kv_buffer(s);
    const uint32_t mla_w = ft_mla_kv_width(s);
    if (p->logits_buf < 0 || (kv < 0 && !mla_w)) {
        st = ft_status_make(FT_STATUS_UNSUPPORTED, "%s: the schedule has no %s", where,
                            p->logits_buf < 0 ? "logits buffer" : "KV_APPEND or MLA op");
        goto fail;
    }
    p->kv_buf = kv < 0 ? UINT32_MAX : (uint32_t)kv;
    p->max_kv_width = kv < 0 ? 0 : p->widths[kv];
    if (mla_w > p->max_kv_width) /* a compressed row over a layer's K and V rows */
        p->max_kv_width = mla_w;
    ft_bind_ctx_t c = {b, m, p, where, "prologue", -1, p->inv_freq, p->bias_floats};
    if ((st = ft_bind_list(&c, s->prologue, s->n_prologue, a, &p->prologue)))
        goto fail;
    c.list = "block";
    for (uint32_t l = 0; l < p->n_blocks; l++) {
        c.layer = (int32_t)l;
        if ((st = ft_bind_list(&c, s->blocks[l]->ops, s->blocks[l]->n_ops, a, &p->blocks[l])))
            goto fail;
        for (uint32_t i = 0; i < p->blocks[l].n; i++)
            if (p->blocks[l].ops[i].kind == FTPLAN__OP_KIND__OP_ATTENTION) {
                const uint32_t g = p->blocks[l].ops[i].n_heads / p->blocks[l].ops[i].n_kv_heads;
                p->max_group = g > p->max_group ? g : p->max_group;
            }
    }
    c.list = "epilogue";
    c.layer = -1;
    if ((st = ft_bind_list(&c, s->epilogue, s->n_epilogue, a, &p->epilogue)))
        goto fail;
    ft_program_bind_kernels(p, m, NULL); /* what needs no module: attention preparing for wo */
    *out = p;
    return FT_OK;
fail:
    ft_program_destroy(p, a);
    return st;
}

void ft_program_destroy(ft_program_t *p, const ft_allocator_t *a)
{
    if (!p)
        return;
    ft_mem_free(a, p->prologue.ops);
    ft_mem_free(a, p->epilogue.ops);
    for (uint32_t l = 0; p->blocks && l < p->n_blocks; l++)
        ft_mem_free(a, p->blocks[l].ops);
    ft_mem_free(a, p->blocks);
    ft_mem_free(a, p->widths);
    ft_mem_free(a, p->inv_freq);
    ft_mem_free(a, p->bias_floats);
    ft_mem_free(a, p);
}

/* ---- fusions ------------------------------------------------------------ */

/* The activation format an op wants its input in, or INVALID when it
 * cannot take prepared rows (mixed formats, an op that needs floats). */
static ft_dtype_t ft_input_type(const ft_xop_t *x)
{
    switch (x->kind) {
    case FTPLAN__OP_KIND__OP_LINEAR:
        for (uint32_t j = 1; j < x->n_w; j++)
            if (x->w[j]->dtype != x->w[0]->dtype)
                return FT_DTYPE_INVALID;
        return x->w[0]->dtype;
    case FTPLAN__OP_KIND__OP_ROUTER:
        return x->L->router.dtype;
    case FTPLAN__OP_KIND__OP_MOE:
        return x->L->gate.dtype == x->L->up.dtype ? x->L->gate.dtype : FT_DTYPE_INVALID;
    default:
        return FT_DTYPE_INVALID;
    }
}

static int ft_reads(const ft_xop_t *x, uint32_t buf)
{
    for (uint32_t j = 0; j < x->n_in; j++)
        if (x->in[j] == buf)
            return 1;
    return 0;
}

static int ft_writes(const ft_xop_t *x, uint32_t buf)
{
    for (uint32_t j = 0; j < x->n_out; j++)
        if (x->out[j] == buf)
            return 1;
    return x->kind == FTPLAN__OP_KIND__OP_HEAD_NORM || x->kind == FTPLAN__OP_KIND__OP_ROPE ? ft_reads(x, buf) : 0;
}

/* RMSNORM at ops[i]: fused with the preparation of its output when the
 * ops right after it are all that read it (until it is written again) and
 * they want at most two activation formats, each with a fused kernel.
 * The first format goes to xp, a second into the output buffer's memory
 * (a prepared row never takes more bytes than its floats). */
static void ft_bind_norm(ft_xop_t *ops, uint32_t n, uint32_t i, const ft_cpu_module_t *mod)
{
    ft_xop_t *x = &ops[i];
    x->n_prep = 0;
    if (!mod)
        return;
    const uint32_t buf = x->out[0];
    ft_dtype_t types[2];
    uint32_t n_types = 0, j = i + 1;
    for (; j < n && ft_reads(&ops[j], buf); j++) {
        const ft_dtype_t t = ft_input_type(&ops[j]);
        if (t == FT_DTYPE_INVALID)
            return;
        if ((n_types > 0 && types[0] == t) || (n_types > 1 && types[1] == t))
            continue;
        /* A second format only for experts: their gather reads bytes. */
        if (n_types == 2 || (n_types == 1 && ops[j].kind != FTPLAN__OP_KIND__OP_MOE))
            return;
        types[n_types++] = t;
    }
    if (j == i + 1)
        return;
    for (; j < n && !ft_writes(&ops[j], buf); j++)
        if (ft_reads(&ops[j], buf))
            return; /* a later reader wants the floats */
    for (uint32_t k = 0; k < n_types; k++)
        if (!(x->prep_fn[k] = ft_cpu_module_find_norm_prepare(mod, types[k], x->width)))
            return;
    memcpy(x->prep_type, types, n_types * sizeof(types[0]));
    x->n_prep = n_types;
}

/* ATTENTION at ops[i]: the next op a single-format LINEAR of its output
 * whose activation blocks the items' slices (group x head_dim floats) can
 * be prepared in: each item prepares its own slice. */
static void ft_bind_attention(ft_xop_t *ops, uint32_t n, uint32_t i, const ft_cpu_module_t *mod, ft_dtype_t kv)
{
    ft_xop_t *x = &ops[i];
    const uint32_t group = x->n_heads / x->n_kv_heads;
    /* The generated kernels (ABI 3) have no sink term: with sinks the
     * reference loop runs, still preparing for the next op below. */
    x->attn_kernel = kv == FT_DTYPE_F32 && !x->sinks ? ft_cpu_module_find_attn(mod, group, x->head_dim) : NULL;
    x->attn_kernel_f16 = kv == FT_DTYPE_F16 && !x->sinks ? ft_cpu_module_find_attn_f16(mod, group, x->head_dim)
                                                          : NULL;
    x->prepare_next = 0;
    if (i + 1 >= n || ops[i + 1].kind != FTPLAN__OP_KIND__OP_LINEAR || ops[i + 1].n_w != 1 ||
        ops[i + 1].in[0] != x->out[0])
        return;
    const ft_dtype_t wt = ops[i + 1].w[0]->dtype, at = ft_cpu_act_type(wt);
    const uint32_t slice = x->n_heads / x->n_kv_heads * x->head_dim;
    const ft_dtype_info_t *ai = ft_dtype_info(at);
    const uint32_t blk = ai ? ai->block_elems : 1; /* the activation format's block */
    for (uint32_t j = i + 2; j < n && !ft_writes(&ops[j], x->out[0]); j++)
        if (ft_reads(&ops[j], x->out[0]))
            return;
    x->prepare_next = slice % blk == 0;
    x->next_type = wt;
}

static void ft_bind_ops(ft_xops_t *l, const ft_model_t *m, const ft_cpu_module_t *mod)
{
    for (uint32_t i = 0; i < l->n; i++)
        if (l->ops[i].kind == FTPLAN__OP_KIND__OP_RMSNORM)
            ft_bind_norm(l->ops, l->n, i, mod);
        else if (l->ops[i].kind == FTPLAN__OP_KIND__OP_ATTENTION)
            ft_bind_attention(l->ops, l->n, i, mod, m->kv_dtype);
        else if (l->ops[i].kind == FTPLAN__OP_KIND__OP_DELTANET) {
            const ft_deltanet_shape_t *sh = &l->ops[i].dn;
            l->ops[i].dn_kernel = ft_cpu_module_find_deltanet(mod, sh->n_v_heads, sh->n_k_heads,
                                                              sh->heads_tiled, sh->head_dim);
        } else if (l->ops[i].kind == FTPLAN__OP_KIND__OP_MLA) {
            const ft_xop_t *x = &l->ops[i];
            l->ops[i].mla_kernel = ft_cpu_module_find_mla(mod, x->head_dim - x->rope_dim, x->rope_dim,
                                                          x->mla_kv_lora, x->mla_v_dim);
        }
}

void ft_program_bind_kernels(ft_program_t *p, const ft_model_t *m, const ft_cpu_module_t *mod)
{
    ft_bind_ops(&p->prologue, m, mod);
    for (uint32_t l = 0; l < p->n_blocks; l++)
        ft_bind_ops(&p->blocks[l], m, mod);
    ft_bind_ops(&p->epilogue, m, mod);
}
