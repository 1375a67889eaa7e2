/* ftc plan MODEL --hw PROFILE [--vram SIZE] [--ram SIZE] [--ctx N]
 *          [--format F] [--dense-format F] [--json]
 *
 * Plans a model for a machine from its config.json or GGUF header alone:
 * does it fit, how VRAM is partitioned, predicted tok/s and what limits
 * them. Every speed printed here is a prediction from the profile. */
#include "cmd_plan.h"

#include "ftc_help.h"
#include "plan_model.h"
#include "../runtime/plan/hw_profile.h"

#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int ftc_parse_size(const char *s, uint64_t *out)
{
    /* The number: digits with an optional fraction, nothing strtod would
     * also take (signs, hex, exponents, inf). */
    const char *end = s;
    while (end && *end >= '0' && *end <= '9')
        end++;
    if (!s || end == s) return 0;
    if (*end == '.') {
        const char *frac = ++end;
        while (*end >= '0' && *end <= '9')
            end++;
        if (end == frac) return 0;
    }
    double v = strtod(s, NULL);
    if (!(v > 0) || !isfinite(v)) return 0;
    static const struct {
        const char *unit;
        double mult;
    } units[] = {{"", 1.0},     {"b", 1.0},      {"k", 0x1p10},   {"kib", 0x1p10}, {"kb", 1e3},
                 {"m", 0x1p20}, {"mib", 0x1p20}, {"mb", 1e6},     {"g", 0x1p30},   {"gib", 0x1p30},
                 {"gb", 1e9},   {"t", 0x1p40},   {"tib", 0x1p40}, {"tb", 1e12}};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcasecmp(end, units[i].unit) != 0) continue;
        double bytes = v * units[i].mult;
        if (bytes < 1.0 || bytes >= 0x1p63) return 0;
        *out = (uint64_t)bytes;
        return 1;
    }
    return 0;
}

typedef struct ftc_plan_args {
    const char *model, *hw;
    ft_plan_budget_t budget;
    ft_plan_model_opts_t fmt;
    int json;
} ftc_plan_args_t;

static int ftc_plan_bad(const char *what, const char *arg)
{
    fprintf(stderr, "ftc plan: %s '%s'\n", what, arg);
    ftc_help_usage("plan", stderr);
    return 2;
}

/* 0 when parsed, else the exit code (2 usage, or 0 for --help). */
static int ftc_plan_args(int argc, char **argv, ftc_plan_args_t *a, int *done)
{
    static const struct option longopts[] = {{"hw", required_argument, 0, 'w'},
                                             {"vram", required_argument, 0, 'v'},
                                             {"ram", required_argument, 0, 'r'},
                                             {"ctx", required_argument, 0, 'c'},
                                             {"format", required_argument, 0, 'f'},
                                             {"dense-format", required_argument, 0, 'd'},
                                             {"json", no_argument, 0, 'j'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    memset(a, 0, sizeof(*a));
    a->budget.ctx = 4096;
    a->budget.batch = 1;
    *done = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        uint64_t v;
        char *end = NULL;
        switch (c) {
        case 'w':
            a->hw = optarg;
            break;
        case 'v':
            if (!ftc_parse_size(optarg, &a->budget.vram_bytes))
                return ftc_plan_bad("--vram: not a size:", optarg);
            break;
        case 'r':
            if (!ftc_parse_size(optarg, &a->budget.ram_bytes))
                return ftc_plan_bad("--ram: not a size:", optarg);
            break;
        case 'c':
            v = strtoull(optarg, &end, 10);
            if (optarg[0] < '0' || optarg[0] > '9' || *end || v == 0 || v > (1u << 30))
                return ftc_plan_bad("--ctx: not a token count in [1, 2^30]:", optarg);
            a->budget.ctx = (uint32_t)v;
            break;
        case 'f':
        case 'd': {
            if (c == 'f' && ft_quant_mix_from_name(optarg) != FT_QUANT_MIX_NONE) {
                a->fmt.mix = ft_quant_mix_from_name(optarg);
                break;
            }
            ft_dtype_t t = ft_dtype_from_name(optarg);
            const ft_dtype_info_t *info = ft_dtype_info(t);
            if (!info || (info->block_elems == 1 && t != FT_DTYPE_F32 && t != FT_DTYPE_F16 &&
                          t != FT_DTYPE_BF16 && t != FT_DTYPE_F8_E4M3 && t != FT_DTYPE_F8_E5M2))
                return ftc_plan_bad("not a weight format:", optarg);
            *(c == 'f' ? &a->fmt.expert_format : &a->fmt.dense_format) = t;
            break;
        }
        case 'j':
            a->json = 1;
            break;
        case 'h':
            ftc_help_print("plan");
            *done = 1;
            return 0;
        default:
            ftc_help_usage("plan", stderr);
            return 2;
        }
    }
    if (optind + 1 != argc || !a->hw) {
        fputs("ftc plan: one MODEL and --hw PROFILE are needed\n", stderr);
        ftc_help_usage("plan", stderr);
        return 2;
    }
    a->model = argv[optind];
    return 0;
}

static double ftc_gib(uint64_t b)
{
    return (double)b / (double)(1ull << 30);
}

static double ftc_mean_hit(const ft_plan_model_t *m, const ft_plan_result_t *r)
{
    double s = 0;
    uint32_t n = 0;
    for (uint32_t l = 0; r->hit_rate && l < m->n_layers; l++)
        if (m->layers[l].is_moe) {
            s += r->hit_rate[l];
            n++;
        }
    return n ? s / n : 1.0;
}

static void ftc_plan_print(const ftc_plan_args_t *a, const ft_plan_model_t *m,
                           const ft_plan_model_info_t *mi, const ft_hw_t *hw,
                           const ft_plan_result_t *r)
{
    ft_shape_totals_t t;
    ft_model_shape_totals(m, &t);
    printf("model:    %s (%s, %u layers, %.1f B parameters, %.2f B active per token)\n", a->model,
           m->arch, m->n_layers, (double)t.params * 1e-9, (double)t.active_params * 1e-9);
    if (mi->mix != FT_QUANT_MIX_NONE)
        printf("weights:  %.2f GiB (mix %s: experts %s, other weights %s, some matrices higher); "
               "%.2f GiB read per token\n",
               ftc_gib(t.weight_bytes), ft_quant_mix_name(mi->mix), ft_dtype_name(mi->expert_format),
               ft_dtype_name(mi->dense_format), ftc_gib(t.active_bytes));
    else
        printf("weights:  %.2f GiB (experts %s, other weights %s); %.2f GiB read per token\n",
               ftc_gib(t.weight_bytes), ft_dtype_name(mi->expert_format),
               ft_dtype_name(mi->dense_format), ftc_gib(t.active_bytes));
    printf(
        "cache:    %llu bytes of KV per token (f16) + %.1f MiB fixed state per sequence; ctx %u\n",
        (unsigned long long)t.kv_bytes_per_token, (double)t.state_bytes / (1 << 20), a->budget.ctx);
    printf("machine:  %s%s%s, DRAM %.0f GB/s, RAM %.1f GiB", hw->n_gpus ? hw->gpu.name : "no GPU",
           hw->cpu_name[0] ? " + " : "", hw->cpu_name, hw->dram_gbs, ftc_gib(hw->ram_bytes));
    if (hw->n_gpus)
        printf(", VRAM %.1f GiB, H2D %.1f GB/s", ftc_gib(hw->gpu.vram_bytes), hw->gpu.h2d_gbs);
    printf("\n\n");
    printf("budget:   VRAM %.2f GiB, RAM %.2f GiB\n", ftc_gib(r->vram_budget),
           ftc_gib(r->ram_budget));
    if (r->fits)
        printf("fits:     yes\n");
    else
        printf("fits:     NO: %s\n", r->why);
    if (r->ram_needed > r->ram_budget)
        printf("          host RAM short by %.2f GiB (needs %.2f GiB)\n",
               ftc_gib(r->ram_needed - r->ram_budget), ftc_gib(r->ram_needed));
    if (r->note[0]) printf("note:     %s\n", r->note);
    printf("\nVRAM partition          GiB   detail\n");
    printf("  dense weights    %10.2f\n", ftc_gib(r->vram_dense));
    printf("  pinned experts   %10.2f   %u experts\n", ftc_gib(r->vram_pinned), r->n_pinned);
    printf("  LRU expert slots %10.2f   %u slots of %.2f MiB\n", ftc_gib(r->vram_slots), r->n_slots,
           (double)r->slot_bytes / (1 << 20));
    printf("  KV pages         %10.2f\n", ftc_gib(r->vram_kv));
    printf("  stream buffers   %10.2f\n", ftc_gib(r->vram_stream));
    printf("  scratch          %10.2f\n", ftc_gib(r->vram_scratch));
    printf("  total            %10.2f\n", ftc_gib(r->vram_dense + r->vram_pinned + r->vram_slots +
                                                  r->vram_kv + r->vram_stream + r->vram_scratch));
    printf("host RAM needed    %10.2f   of which mapped weights %.2f\n", ftc_gib(r->ram_needed),
           ftc_gib(r->ram_weights));
    printf("layers on the GPU: %u of %u%s%s\n", r->n_gpu_layers, m->n_layers,
           r->output_on_gpu ? ", output head resident" : "",
           r->cpu_only  ? " (CPU only)"
           : r->unified ? " (unified memory: read in place)"
                        : "");
    printf("\nexpected expert hit rate (mean over MoE layers): %.1f%%\n",
           100.0 * ftc_mean_hit(m, r));
    if (r->prefill_stream_tokens == UINT32_MAX)
        printf("prefill never streams whole layers (no streaming buffers, or streaming never wins)\n");
    else
        printf("prefill streams whole layers from %u tokens per batch\n", r->prefill_stream_tokens);
    printf("predicted decode:  %.1f tok/s (predicted from the profile, not measured)\n",
           r->predicted_decode_tok_s);
    printf("predicted prefill: %.1f tok/s (predicted)\n", r->predicted_prefill_tok_s);
    printf("bottleneck:        %s (decode ms per token: DRAM %.2f, PCIe %.2f, GPU %.2f, CPU %.2f;"
           " %.1f MiB copied per token)\n",
           ft_bottleneck_name(r->bottleneck), 1e3 * r->decode_s[FT_BOTTLENECK_DRAM],
           1e3 * r->decode_s[FT_BOTTLENECK_PCIE], 1e3 * r->decode_s[FT_BOTTLENECK_GPU],
           1e3 * r->decode_s[FT_BOTTLENECK_CPU], r->copy_bytes_per_token / (1 << 20));
}

static json_t *ftc_u64(uint64_t v)
{
    return json_integer((json_int_t)v);
}

static int ftc_plan_json(const ftc_plan_args_t *a, const ft_plan_model_t *m,
                         const ft_plan_model_info_t *mi, const ft_plan_result_t *r)
{
    ft_shape_totals_t t;
    ft_model_shape_totals(m, &t);
    json_t *o = json_object();
    json_object_set_new(o, "fits", json_boolean(r->fits));
    json_object_set_new(o, "why", json_string(r->fits ? "" : r->why));
    json_object_set_new(o, "predicted", json_true());
    json_object_set_new(o, "predicted_decode_tok_s", json_real(r->predicted_decode_tok_s));
    json_object_set_new(o, "predicted_prefill_tok_s", json_real(r->predicted_prefill_tok_s));
    json_object_set_new(o, "bottleneck", json_string(ft_bottleneck_name(r->bottleneck)));
    json_object_set_new(o, "model", json_string(a->model));
    json_object_set_new(o, "arch", json_string(m->arch));
    json_object_set_new(o, "n_layers", json_integer(m->n_layers));
    json_object_set_new(o, "expert_format", json_string(ft_dtype_name(mi->expert_format)));
    json_object_set_new(o, "dense_format", json_string(ft_dtype_name(mi->dense_format)));
    json_object_set_new(o, "mix", mi->mix != FT_QUANT_MIX_NONE ? json_string(ft_quant_mix_name(mi->mix)) : json_null());
    json_object_set_new(o, "params", ftc_u64(t.params));
    json_object_set_new(o, "active_params", ftc_u64(t.active_params));
    json_object_set_new(o, "weight_bytes", ftc_u64(t.weight_bytes));
    json_object_set_new(o, "active_bytes_per_token", ftc_u64(t.active_bytes));
    json_object_set_new(o, "kv_bytes_per_token", ftc_u64(t.kv_bytes_per_token));
    json_object_set_new(o, "state_bytes", ftc_u64(t.state_bytes));
    json_object_set_new(o, "ctx", json_integer(a->budget.ctx));
    json_object_set_new(o, "vram_budget", ftc_u64(r->vram_budget));
    json_object_set_new(o, "ram_budget", ftc_u64(r->ram_budget));
    json_object_set_new(o, "vram_used", ftc_u64(r->vram_used));
    json_object_set_new(o, "ram_weights", ftc_u64(r->ram_weights));
    json_object_set_new(o, "ram_shortfall",
                        ftc_u64(r->ram_needed > r->ram_budget ? r->ram_needed - r->ram_budget : 0));
    json_object_set_new(o, "n_gpu_layers", json_integer(r->n_gpu_layers));
    json_object_set_new(o, "note", json_string(r->note));
    json_object_set_new(o, "copy_bytes_per_token", json_real(r->copy_bytes_per_token));
    json_t *ds = json_object();
    for (int b = 0; b < 4; b++)
        json_object_set_new(ds, ft_bottleneck_name((ft_bottleneck_t)b), json_real(r->decode_s[b]));
    json_object_set_new(o, "decode_s_by_resource", ds);
    json_object_set_new(o, "vram_dense", ftc_u64(r->vram_dense));
    json_object_set_new(o, "vram_pinned", ftc_u64(r->vram_pinned));
    json_object_set_new(o, "vram_slots", ftc_u64(r->vram_slots));
    json_object_set_new(o, "vram_kv", ftc_u64(r->vram_kv));
    json_object_set_new(o, "vram_stream", ftc_u64(r->vram_stream));
    json_object_set_new(o, "vram_scratch", ftc_u64(r->vram_scratch));
    json_object_set_new(o, "slot_bytes", ftc_u64(r->slot_bytes));
    json_object_set_new(o, "n_slots", json_integer(r->n_slots));
    json_object_set_new(o, "n_pinned", json_integer(r->n_pinned));
    json_object_set_new(o, "ram_needed", ftc_u64(r->ram_needed));
    json_object_set_new(o, "hit_rate_mean", json_real(ftc_mean_hit(m, r)));
    json_object_set_new(o, "prefill_stream_tokens", json_integer(r->prefill_stream_tokens));
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    json_decref(o);
    if (!s) {
        fputs("ftc plan: out of memory\n", stderr);
        return 1;
    }
    puts(s);
    free(s);
    return 0;
}

int ftc_cmd_plan(int argc, char **argv)
{
    ftc_plan_args_t a;
    int done = 0, rc = ftc_plan_args(argc, argv, &a, &done);
    if (rc || done) return rc;
    ft_hw_t hw;
    ft_plan_model_t *m = NULL;
    ft_plan_model_info_t mi;
    ft_status_t st = ft_hw_load(a.hw, &hw);
    if (!st) st = ft_plan_model_load(a.model, &a.fmt, &m, &mi);
    ft_plan_result_t r;
    memset(&r, 0, sizeof(r));
    if (!st) st = ft_planner_solve(m, &hw, &a.budget, &r);
    if (st) {
        fprintf(stderr, "ftc: error: %s\n", ft_status_message(st));
        ft_status_free(st);
        ft_model_shape_free(m);
        return 1;
    }
    if (a.json)
        rc = ftc_plan_json(&a, m, &mi, &r);
    else
        ftc_plan_print(&a, m, &mi, &hw, &r);
    if (!r.fits && !a.json) fprintf(stderr, "ftc plan: the model does not fit: %s\n", r.why);
    int fits = r.fits;
    ft_plan_result_release(&r);
    ft_model_shape_free(m);
    return rc ? rc : fits ? 0 : 1;
}
