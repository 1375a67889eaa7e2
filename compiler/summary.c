#include "summary.h"

#include "../runtime/format/wlayout.h"

#include "plan_report.h"
#include "schedule_report.h"

#include "../runtime/format/bundle.h"
#include "../runtime/plan/from_plan.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static void ft_summary_first_block(ft_summary_t *s, uint32_t n_heads, uint32_t n_kv, uint32_t head_dim)
{
    s->n_heads = n_heads;
    s->n_kv_heads = n_kv;
    s->head_dim = head_dim;
}

static const char *const ft_summary_groups[FT_SUMMARY_N_GROUPS] = {
    "embeddings", "attention", "recurrent", "experts", "shared experts",
    "dense ffn",  "router",    "output",    "norms",   "other"};

const char *ft_summary_group_name(int group)
{
    return group >= 0 && group < FT_SUMMARY_N_GROUPS ? ft_summary_groups[group] : "other";
}

int ft_summary_role_group(ft_tensor_role_t role)
{
    switch (role) {
    case FT_ROLE_TOKEN_EMBD: return 0;
    case FT_ROLE_ATTN_Q: case FT_ROLE_ATTN_K: case FT_ROLE_ATTN_V: case FT_ROLE_ATTN_O:
    case FT_ROLE_ATTN_GATE:
        return 1;
    case FT_ROLE_SSM_QKV: case FT_ROLE_SSM_CONV: case FT_ROLE_SSM_DT_BIAS: case FT_ROLE_SSM_A:
    case FT_ROLE_SSM_BETA: case FT_ROLE_SSM_ALPHA: case FT_ROLE_SSM_OUT:
        return 2;
    case FT_ROLE_FFN_GATE_EXPS: case FT_ROLE_FFN_UP_EXPS: case FT_ROLE_FFN_DOWN_EXPS: return 3;
    case FT_ROLE_FFN_GATE_SHEXP: case FT_ROLE_FFN_UP_SHEXP: case FT_ROLE_FFN_DOWN_SHEXP: return 4;
    case FT_ROLE_FFN_GATE: case FT_ROLE_FFN_UP: case FT_ROLE_FFN_DOWN: return 5;
    case FT_ROLE_FFN_ROUTER: case FT_ROLE_FFN_ROUTER_BIAS: case FT_ROLE_FFN_EXP_PROBS_B:
    case FT_ROLE_FFN_GATE_INP_SHEXP:
        return 6;
    case FT_ROLE_OUTPUT: return 7;
    case FT_ROLE_OUTPUT_NORM: case FT_ROLE_ATTN_NORM: case FT_ROLE_FFN_NORM: case FT_ROLE_ATTN_Q_NORM:
    case FT_ROLE_ATTN_K_NORM: case FT_ROLE_SSM_NORM:
        return 8;
    default: return 9;
    }
}

static void ft_summary_count(ft_summary_t *s, ft_summary_tensor_t *t)
{
    if ((int)t->dtype > 0 && t->dtype < FT_DTYPE_COUNT) {
        s->format_counts[t->dtype]++;
        s->group_format_counts[ft_summary_role_group(t->role)][t->dtype]++;
    }
    s->weight_bytes += t->bytes;
}

ft_status_t ft_summary_from_ir(const ft_ir_model_t *m, ft_summary_t *s)
{
    memset(s, 0, sizeof(*s));
    s->source_format = m->source_format;
    s->source_name = m->source_name;
    s->arch = ft_arch_name(m->hp.arch);
    s->n_layers = m->hp.n_layers;
    s->d_model = m->hp.d_model;
    s->vocab_size = m->hp.vocab_size;
    s->context_length = m->hp.context_length;
    s->rope_theta = m->hp.rope_theta;
    s->norm_eps = m->hp.norm_eps;
    if (m->hp.n_layers) {
        const ft_ir_block_t *b = &m->blocks[0];
        ft_summary_first_block(s, b->attn.n_heads, b->attn.n_kv_heads, b->attn.head_dim);
        if (b->attn.kind == FT_ATTN_MLA) {
            s->kv_lora_rank = b->attn.kv_lora_rank;
            s->q_lora_rank = b->attn.q_lora_rank;
            s->nope_head_dim = b->attn.nope_head_dim;
        }
        for (uint32_t l = 0; l < m->hp.n_layers; l++)
            if (m->blocks[l].is_moe) {
                s->n_experts = m->blocks[l].moe.n_experts;
                s->n_experts_used = m->blocks[l].moe.n_experts_used;
                s->expert_ffn = m->blocks[l].moe.expert_ffn;
                break;
            }
    }
    ft_ir_param_counts(m, &s->total_params, &s->active_params);
    s->tensors = calloc(m->n_tensors ? m->n_tensors : 1, sizeof(*s->tensors));
    if (!s->tensors)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    s->n_tensors = m->n_tensors;
    for (uint32_t i = 0; i < m->n_tensors; i++) {
        const ft_ir_tensor_t *t = &m->tensors[i];
        ft_summary_tensor_t *st = &s->tensors[i];
        st->name = t->name;
        st->role = t->role;
        st->dtype = t->dtype;
        st->n_dims = t->n_dims;
        memcpy(st->shape, t->shape, sizeof(st->shape));
        if (t->xform == FT_IR_XFORM_MXFP4_HF) /* gate and up share their HF source */
            ft_dtype_row_bytes(t->dtype, ft_ir_tensor_elems(t), &st->bytes);
        else
            for (uint32_t p = 0; p < t->n_pieces; p++)
                st->bytes += t->pieces[p].n_bytes;
        ft_summary_count(s, st);
    }
    s->tok_model = m->tok.model;
    s->tok_pre = m->tok.pre;
    s->n_tokens = m->tok.n_tokens;
    s->n_merges = m->tok.n_merges;
    s->bos_id = m->tok.bos_id;
    s->eos_id = m->tok.eos_id;
    return FT_OK;
}

ft_status_t ft_summary_from_plan(const Ftplan__Plan *plan, const uint8_t *plan_file,
                                 uint64_t plan_bytes, ft_summary_t *s)
{
    memset(s, 0, sizeof(*s));
    s->is_bundle = 1;
    const Ftplan__Hparams *hp = plan->hparams; /* validated: present */
    s->source_format = plan->source ? plan->source->format : "";
    s->source_name = plan->source ? plan->source->name : "";
    s->arch = ft_arch_name((ft_arch_t)hp->arch);
    s->n_layers = hp->n_layers;
    s->d_model = hp->d_model;
    s->vocab_size = hp->vocab_size;
    s->context_length = hp->context_length;
    s->rope_theta = hp->rope_theta;
    s->norm_eps = hp->norm_eps;
    s->total_params = hp->total_params;
    s->active_params = hp->active_params;
    if (plan->n_blocks && plan->blocks[0]->attn) {
        const Ftplan__Attention *a = plan->blocks[0]->attn;
        ft_summary_first_block(s, a->n_heads, a->n_kv_heads, a->head_dim);
        if (a->kind == FTPLAN__ATTN_KIND__ATTN_MLA) {
            s->kv_lora_rank = a->kv_lora_rank;
            s->q_lora_rank = a->q_lora_rank;
            s->nope_head_dim = a->nope_head_dim;
        }
    }
    for (size_t l = 0; l < plan->n_blocks; l++)
        if (plan->blocks[l]->is_moe && plan->blocks[l]->moe) {
            s->n_experts = plan->blocks[l]->moe->n_experts;
            s->n_experts_used = plan->blocks[l]->moe->n_experts_used;
            s->expert_ffn = plan->blocks[l]->moe->expert_ffn;
            break;
        }
    s->tensors = calloc(plan->n_tensors ? plan->n_tensors : 1, sizeof(*s->tensors));
    if (!s->tensors)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    s->n_tensors = (uint32_t)plan->n_tensors;
    for (size_t i = 0; i < plan->n_tensors; i++) {
        const Ftplan__Tensor *t = plan->tensors[i];
        ft_summary_tensor_t *st = &s->tensors[i];
        st->name = t->name;
        st->role = (ft_tensor_role_t)t->role; /* plan.proto's TensorRole mirrors ir.h's */
        st->dtype = (ft_dtype_t)t->format;
        st->n_dims = (uint32_t)t->n_shape;
        for (size_t d = 0; d < t->n_shape && d < FT_MAX_DIMS; d++)
            st->shape[d] = t->shape[d];
        /* An expert stack's size is one expert's slice. */
        st->bytes = t->expert_stride && t->n_shape ? t->size * t->shape[0] : t->size;
        st->offset = t->offset;
        st->layout = t->layout;
        ft_summary_count(s, st);
    }
    if (plan->tokenizer) {
        s->tok_model = plan->tokenizer->model;
        s->tok_pre = plan->tokenizer->pre;
        s->n_tokens = (uint32_t)plan->tokenizer->n_tokens;
        s->n_merges = (uint32_t)plan->tokenizer->n_merges;
        s->bos_id = plan->tokenizer->bos_id;
        s->eos_id = plan->tokenizer->eos_id;
    }
    s->plan_bytes = plan_bytes;
    ft_bundle_ids(plan, plan_file, plan_bytes, s->plan_hash, s->weights_hash);
    if (plan->n_weight_files) s->weights_file_bytes = plan->weight_files[0]->size;
    s->n_expert_blocks = (uint32_t)plan->n_expert_blocks;
    s->plan = plan;
    return FT_OK;
}

void ft_summary_release(ft_summary_t *s)
{
    free(s->tensors);
    s->tensors = NULL;
}

static void ft_print_count(FILE *out, const char *label, uint64_t n)
{
    if (n >= 1000000000ull)
        fprintf(out, "%s%.2f B", label, (double)n / 1e9);
    else if (n >= 1000000ull)
        fprintf(out, "%s%.2f M", label, (double)n / 1e6);
    else
        fprintf(out, "%s%" PRIu64, label, n);
}

static void ft_print_bytes(FILE *out, uint64_t n)
{
    if (n >= (1ull << 30))
        fprintf(out, "%.2f GiB", (double)n / (double)(1ull << 30));
    else if (n >= (1ull << 20))
        fprintf(out, "%.2f MiB", (double)n / (double)(1ull << 20));
    else
        fprintf(out, "%.1f KiB", (double)n / 1024.0);
}

static void ft_summary_print_kernels(const Ftplan__Plan *p, FILE *out);

void ft_summary_print(const ft_summary_t *s, int with_tensors, FILE *out)
{
    fprintf(out, "%-11s%s, from %s %s\n", s->is_bundle ? "bundle" : "model", s->arch,
            s->source_format, s->source_name);
    fprintf(out, "%-11s%u layers, d_model %u, vocab %u, context %u\n", "shape", s->n_layers,
            s->d_model, s->vocab_size, s->context_length);
    fprintf(out, "%-11s%u heads, %u KV heads, head_dim %u, rope theta %g, norm eps %g\n",
            "attention", s->n_heads, s->n_kv_heads, s->head_dim, (double)s->rope_theta,
            (double)s->norm_eps);
    if (s->kv_lora_rank)
        fprintf(out, "%-11slatent (MLA): a cached row of kv rank %u + rope %u per token and layer, q rank %u\n",
                "", s->kv_lora_rank, s->head_dim - s->nope_head_dim, s->q_lora_rank);
    fprintf(out, "%-11s%u per layer, %u used per token, expert FFN %u\n", "experts", s->n_experts,
            s->n_experts_used, s->expert_ffn);
    ft_print_count(out, "params     ", s->total_params);
    ft_print_count(out, " total, ", s->active_params);
    fprintf(out, " active per token\n");
    fprintf(out, "%-11s%u:", "tensors", s->n_tensors);
    for (int d = 1; d < FT_DTYPE_COUNT; d++)
        if (s->format_counts[d])
            fprintf(out, " %s x %u", ft_dtype_name((ft_dtype_t)d), s->format_counts[d]);
    fputc('\n', out);
    /* the formats per group of roles, one line each */
    int first = 1;
    for (int g = 0; g < FT_SUMMARY_N_GROUPS; g++) {
        int any = 0;
        for (int d = 1; d < FT_DTYPE_COUNT; d++)
            if (s->group_format_counts[g][d]) {
                if (!any)
                    fprintf(out, "%-11s%-15s", first ? "formats" : "", ft_summary_group_name(g));
                fprintf(out, "%s%s x %u", any ? ", " : "", ft_dtype_name((ft_dtype_t)d),
                        s->group_format_counts[g][d]);
                any = 1;
            }
        if (any) {
            fputc('\n', out);
            first = 0;
        }
    }
    fprintf(out, "%-11s", "weights");
    ft_print_bytes(out, s->weight_bytes);
    fprintf(out, "\n%-11s%s (pre %s), %u tokens, %u merges, bos %d, eos %d\n", "tokenizer",
            s->tok_model && *s->tok_model ? s->tok_model : "none",
            s->tok_pre && *s->tok_pre ? s->tok_pre : "-", s->n_tokens, s->n_merges, s->bos_id,
            s->eos_id);
    if (s->is_bundle) {
        fprintf(out, "%-11splan.ftp ", "files");
        ft_print_bytes(out, s->plan_bytes);
        fprintf(out, " (xxh3 %s), weights.ftw ", s->plan_hash);
        ft_print_bytes(out, s->weights_file_bytes);
        fprintf(out, " (xxh128 %s), %u expert blocks\n", s->weights_hash, s->n_expert_blocks);
        if (s->plan) {
            const ft_dtype_t kv = ft_plan_kv_dtype(s->plan);
            fprintf(out, "%-11s%s, %u bytes an element (kv_format)\n", "kv cache", ft_dtype_name(kv),
                    kv == FT_DTYPE_F16 ? 2u : 4u);
            ft_summary_print_kernels(s->plan, out);
        }
        if (s->plan)
            ft_plan_report_print(s->plan, out);
    }
    if (!with_tensors)
        return;
    for (uint32_t i = 0; i < s->n_tensors; i++) {
        const ft_summary_tensor_t *t = &s->tensors[i];
        fprintf(out, "  %-32s %-6s [", t->name, ft_dtype_name(t->dtype));
        for (uint32_t d = 0; d < t->n_dims; d++)
            fprintf(out, "%s%" PRIu64, d ? ", " : "", t->shape[d]);
        fprintf(out, "] %" PRIu64 " bytes", t->bytes);
        if (s->is_bundle)
            fprintf(out, " at %" PRIu64, t->offset);
        if (s->is_bundle && t->layout != FT_WLAYOUT_ROWS)
            fprintf(out, ", rows %s", ft_wlayout_name(t->layout));
        fputc('\n', out);
    }
}

/* The plan's kernel modules: one line for the CPU module, one for CUDA. */
static void ft_summary_print_kernels(const Ftplan__Plan *p, FILE *out)
{
    const Ftplan__CpuModule *cm = p->cpu_module;
    if (cm) {
        fprintf(out, "%-11s%s, %zu kernels, ", "cpu", cm->isa, cm->n_kernels);
        ft_print_bytes(out, cm->so.len);
        size_t n_r16 = 0;
        for (size_t i = 0; i < p->n_tensors; i++)
            n_r16 += p->tensors[i]->layout == FT_WLAYOUT_Q8_0_R16;
        if (n_r16)
            fprintf(out, ", %zu matrices repacked for it (rows %s)", n_r16,
                    ft_wlayout_name(FT_WLAYOUT_Q8_0_R16));
        fputc('\n', out);
    } else {
        fprintf(out, "%-11snone (the reference kernels run)\n", "cpu");
    }
    fprintf(out, "%-11s", "cuda");
    for (size_t i = 0; i < p->n_cuda_images; i++)
        fprintf(out, "%s%s", i ? ", " : "", p->cuda_images[i]->arch);
    for (size_t i = 0; i < p->n_cuda_ptx; i++)
        fprintf(out, " + PTX %s", p->cuda_ptx[i]->arch);
    fputs(p->n_cuda_images ? "\n" : "none\n", out);
}

/* "cpu_isa": the CPU module's ISA or null; "cuda_archs": the cubins'
 * targets; "cuda_ptx": the PTX targets. */
static void ft_summary_json_kernels(const Ftplan__Plan *p, json_t *o)
{
    json_object_set_new(o, "cpu_isa", p->cpu_module ? json_string(p->cpu_module->isa) : json_null());
    json_object_set_new(o, "cpu_kernels",
                        json_integer(p->cpu_module ? (json_int_t)p->cpu_module->n_kernels : 0));
    json_t *archs = json_array(), *ptx = json_array();
    for (size_t i = 0; archs && i < p->n_cuda_images; i++)
        json_array_append_new(archs, json_string(p->cuda_images[i]->arch));
    for (size_t i = 0; ptx && i < p->n_cuda_ptx; i++)
        json_array_append_new(ptx, json_string(p->cuda_ptx[i]->arch));
    json_object_set_new(o, "cuda_archs", archs);
    json_object_set_new(o, "cuda_ptx", ptx);
}

ft_status_t ft_summary_print_json(const ft_summary_t *s, int with_tensors, FILE *out)
{
    json_t *o = json_object();
    json_t *formats = json_object();
    if (!o || !formats)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    json_object_set_new(o, "kind", json_string(s->is_bundle ? "bundle" : "model"));
    json_object_set_new(o, "source_format", json_string(s->source_format ? s->source_format : ""));
    json_object_set_new(o, "source_name", json_string(s->source_name ? s->source_name : ""));
    json_object_set_new(o, "arch", json_string(s->arch));
    json_object_set_new(o, "n_layers", json_integer(s->n_layers));
    json_object_set_new(o, "d_model", json_integer(s->d_model));
    json_object_set_new(o, "n_heads", json_integer(s->n_heads));
    json_object_set_new(o, "n_kv_heads", json_integer(s->n_kv_heads));
    json_object_set_new(o, "head_dim", json_integer(s->head_dim));
    json_object_set_new(o, "n_experts", json_integer(s->n_experts));
    json_object_set_new(o, "n_experts_used", json_integer(s->n_experts_used));
    json_object_set_new(o, "expert_ffn", json_integer(s->expert_ffn));
    json_object_set_new(o, "vocab_size", json_integer(s->vocab_size));
    json_object_set_new(o, "context_length", json_integer(s->context_length));
    json_object_set_new(o, "rope_theta", json_real(s->rope_theta));
    json_object_set_new(o, "norm_eps", json_real(s->norm_eps));
    json_object_set_new(o, "total_params", json_integer((json_int_t)s->total_params));
    json_object_set_new(o, "active_params", json_integer((json_int_t)s->active_params));
    for (int d = 1; d < FT_DTYPE_COUNT; d++)
        if (s->format_counts[d])
            json_object_set_new(formats, ft_dtype_name((ft_dtype_t)d), json_integer(s->format_counts[d]));
    json_object_set_new(o, "tensor_formats", formats);
    json_t *groups = json_object();
    for (int g = 0; groups && g < FT_SUMMARY_N_GROUPS; g++) {
        json_t *gf = NULL;
        for (int d = 1; d < FT_DTYPE_COUNT; d++)
            if (s->group_format_counts[g][d]) {
                if (!gf)
                    gf = json_object();
                json_object_set_new(gf, ft_dtype_name((ft_dtype_t)d), json_integer(s->group_format_counts[g][d]));
            }
        if (gf)
            json_object_set_new(groups, ft_summary_group_name(g), gf);
    }
    json_object_set_new(o, "role_formats", groups);
    json_object_set_new(o, "n_tensors", json_integer(s->n_tensors));
    json_object_set_new(o, "weight_bytes", json_integer((json_int_t)s->weight_bytes));
    json_object_set_new(o, "tokenizer", json_pack("{s:s, s:s, s:i, s:i, s:i, s:i}", "model",
                                                  s->tok_model ? s->tok_model : "", "pre",
                                                  s->tok_pre ? s->tok_pre : "", "n_tokens",
                                                  (int)s->n_tokens, "n_merges", (int)s->n_merges,
                                                  "bos_id", (int)s->bos_id, "eos_id", (int)s->eos_id));
    if (s->is_bundle) {
        json_object_set_new(o, "plan_bytes", json_integer((json_int_t)s->plan_bytes));
        json_object_set_new(o, "plan_hash", json_string(s->plan_hash));
        json_object_set_new(o, "weights_bytes", json_integer((json_int_t)s->weights_file_bytes));
        json_object_set_new(o, "weights_hash", json_string(s->weights_hash));
        json_object_set_new(o, "n_expert_blocks", json_integer(s->n_expert_blocks));
        if (s->plan) {
            const ft_dtype_t kv = ft_plan_kv_dtype(s->plan);
            json_object_set_new(o, "kv_format", json_string(ft_dtype_name(kv)));
            json_object_set_new(o, "kv_elem_bytes", json_integer(kv == FT_DTYPE_F16 ? 2 : 4));
            ft_summary_json_kernels(s->plan, o);
        }
        ft_status_t st = s->plan ? ft_plan_report_json(s->plan, o) : FT_OK;
        if (!st && s->plan)
            st = ft_schedule_json(s->plan, o);
        if (st) {
            json_decref(o);
            return st;
        }
    }
    if (with_tensors) {
        json_t *arr = json_array();
        for (uint32_t i = 0; i < s->n_tensors; i++) {
            const ft_summary_tensor_t *t = &s->tensors[i];
            json_t *shape = json_array();
            for (uint32_t d = 0; d < t->n_dims; d++)
                json_array_append_new(shape, json_integer((json_int_t)t->shape[d]));
            json_t *jt = json_pack("{s:s, s:s, s:o, s:I}", "name", t->name, "format",
                                   ft_dtype_name(t->dtype), "shape", shape, "bytes",
                                   (json_int_t)t->bytes);
            if (s->is_bundle) {
                json_object_set_new(jt, "offset", json_integer((json_int_t)t->offset));
                const char *ln = ft_wlayout_name(t->layout);
                json_object_set_new(jt, "layout", json_string(ln ? ln : "unknown"));
            }
            json_array_append_new(arr, jt);
        }
        json_object_set_new(o, "tensors", arr);
    }
    int rc = json_dumpf(o, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
    fputc('\n', out);
    json_decref(o);
    return rc == 0 ? FT_OK : ft_status_make(FT_STATUS_IO, "cannot write JSON output");
}
