#include "plan_report.h"

#include <inttypes.h>
#include <string.h>

static const char *const ft_report_bottleneck[] = {"DRAM", "PCIe", "GPU", "CPU compute"};

float ft_plan_report_decode_qstar(const Ftplan__Plan *plan, size_t l)
{
    const Ftplan__Partition *p = plan->partition;
    return p->qstar[l * p->n_bucket_tokens];
}

static const char *ft_report_bottleneck_name(int b)
{
    return b >= 0 && b < 4 ? ft_report_bottleneck[b] : "unknown";
}

static double ft_report_mib(uint64_t b)
{
    return (double)b / (double)(1u << 20);
}

static double ft_report_share(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static void ft_report_machine(const Ftplan__Plan *plan, FILE *out)
{
    const Fthw__Profile *hw = plan->hw_profile;
    const Ftplan__Budget *b = plan->budget;
    fprintf(out, "\nplanned for %s", hw->machine && *hw->machine ? hw->machine : "(unnamed)");
    if (hw->n_gpus && hw->gpus[0]->name && *hw->gpus[0]->name &&
        !(hw->machine && strstr(hw->machine, hw->gpus[0]->name)))
        fprintf(out, " (%s)", hw->gpus[0]->name);
    fprintf(out, ": VRAM budget %.2f MiB, RAM budget %.2f MiB, ctx %u, batch %u\n",
            ft_report_mib(b->vram_bytes), ft_report_mib(b->ram_bytes), b->ctx, b->batch);
}

static void ft_report_regions(const Ftplan__Partition *p, uint64_t vram, FILE *out)
{
    const struct {
        const char *label;
        uint64_t bytes;
    } r[] = {{"dense weights", p->vram_dense}, {"pinned experts", p->vram_pinned},
             {"LRU expert slots", p->vram_slots}, {"KV pages", p->vram_kv},
             {"stream buffers", p->vram_stream}, {"scratch", p->vram_scratch}};
    fprintf(out, "  %-18s %12s %7s\n", "VRAM region", "MiB", "share");
    for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
        fprintf(out, "  %-18s %12.2f %6.1f%%\n", r[i].label, ft_report_mib(r[i].bytes),
                ft_report_share(r[i].bytes, vram));
    fprintf(out, "  %-18s %12.2f %6.1f%%\n", "used", ft_report_mib(p->vram_used),
            ft_report_share(p->vram_used, vram));
    fprintf(out, "  %-18s %12.2f %6.1f%%\n", "free", ft_report_mib(vram - p->vram_used),
            ft_report_share(vram - p->vram_used, vram));
}

static void ft_report_layers(const Ftplan__Plan *plan, FILE *out)
{
    const Ftplan__Partition *p = plan->partition;
    fprintf(out, "  %-6s %-5s %-9s %-9s %-8s\n", "layer", "where", "q* (GPU)", "q* (CPU)",
            "hit rate");
    for (size_t l = 0; l < plan->n_blocks; l++) {
        if (!plan->blocks[l]->is_moe) {
            fprintf(out, "  %-6zu %-5s %-9s %-9s %-8s\n", l, l < p->n_gpu_layers ? "GPU" : "CPU",
                    "-", "-", "-");
            continue;
        }
        float q = ft_plan_report_decode_qstar(plan, l);
        fprintf(out, "  %-6zu %-5s %8.1f%% %8.1f%% %7.1f%%\n", l,
                l < p->n_gpu_layers ? "GPU" : "CPU", 100.0 * q, 100.0 * (1.0 - q),
                100.0 * p->hit_rate[l]);
    }
}

void ft_plan_report_print(const Ftplan__Plan *plan, FILE *out)
{
    const Ftplan__Partition *p = plan->partition;
    const Ftplan__Calibration *c = plan->calibration;
    if (p) {
        ft_report_machine(plan, out);
        ft_report_regions(p, plan->budget->vram_bytes, out);
        fprintf(out, "  host RAM needed %.2f MiB of %.2f MiB (mapped weights %.2f MiB)\n",
                ft_report_mib(p->ram_needed), ft_report_mib(plan->budget->ram_bytes),
                ft_report_mib(p->ram_weights));
        fprintf(out, "  %u LRU slots of %.3f MiB, %u pinned experts; %u of %u layers on the "
                "GPU%s%s%s\n",
                p->n_slots, ft_report_mib(p->slot_bytes), p->n_pinned, p->n_gpu_layers,
                plan->hparams->n_layers, p->output_on_gpu ? ", output head resident" : "",
                p->cpu_only ? " (CPU only)" : "", p->unified ? " (unified memory)" : "");
        fprintf(out, "  decode q*: share of missed experts copied to the GPU (rest computed on "
                "the CPU)\n");
        ft_report_layers(plan, out);
        if (p->prefill_stream_tokens == UINT32_MAX)
            fprintf(out, "  prefill never streams whole layers\n");
        else /* the runtime streams batches of at least this many (and 2+) tokens */
            fprintf(out, "  prefill streams whole layers from %u tokens\n",
                    p->prefill_stream_tokens > 2 ? p->prefill_stream_tokens : 2);
        fprintf(out, "  predicted decode %.1f tok/s, prefill %.1f tok/s (predicted from the "
                "profile, not measured)\n",
                p->predicted_decode_tok_s, p->predicted_prefill_tok_s);
        fprintf(out, "  bottleneck %s\n", ft_report_bottleneck_name(p->bottleneck));
        if (p->note && *p->note)
            fprintf(out, "  note: %s\n", p->note);
    }
    if (c)
        fprintf(out, "%scalibrated on %s: %" PRIu64 " tokens\n", p ? "  " : "",
                c->source && *c->source ? c->source : "(unnamed)", c->n_tokens);
}

static json_t *ft_report_u64(uint64_t v)
{
    return json_integer((json_int_t)v);
}

static json_t *ft_report_regions_json(const Ftplan__Partition *p)
{
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "dense", ft_report_u64(p->vram_dense),
                     "pinned", ft_report_u64(p->vram_pinned), "slots",
                     ft_report_u64(p->vram_slots), "kv", ft_report_u64(p->vram_kv), "stream",
                     ft_report_u64(p->vram_stream), "scratch", ft_report_u64(p->vram_scratch));
}

/* Per layer arrays: decode q* (null on dense layers) and hit rates. */
static void ft_report_layers_json(const Ftplan__Plan *plan, json_t *o)
{
    const Ftplan__Partition *p = plan->partition;
    json_t *q = json_array(), *h = json_array(), *buckets = json_array(), *table = json_array();
    for (size_t l = 0; l < plan->n_blocks; l++) {
        json_array_append_new(q, plan->blocks[l]->is_moe
                                     ? json_real(ft_plan_report_decode_qstar(plan, l))
                                     : json_null());
        json_array_append_new(h, json_real(p->hit_rate[l]));
        json_t *row = json_array();
        for (size_t b = 0; b < p->n_bucket_tokens; b++)
            json_array_append_new(row, json_real(p->qstar[l * p->n_bucket_tokens + b]));
        json_array_append_new(table, row);
    }
    for (size_t b = 0; b < p->n_bucket_tokens; b++)
        json_array_append_new(buckets, json_integer(p->bucket_tokens[b]));
    json_object_set_new(o, "qstar", q);
    json_object_set_new(o, "qstar_buckets", buckets);
    json_object_set_new(o, "qstar_table", table);
    json_object_set_new(o, "hit_rate", h);
}

ft_status_t ft_plan_report_json(const Ftplan__Plan *plan, json_t *o)
{
    const Ftplan__Partition *p = plan->partition;
    const Ftplan__Calibration *c = plan->calibration;
    json_object_set_new(o, "has_partition", json_boolean(p != NULL));
    json_object_set_new(o, "calibration_tokens", ft_report_u64(c ? c->n_tokens : 0));
    if (!p)
        return FT_OK;
    json_t *regions = ft_report_regions_json(p);
    if (!regions)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    json_object_set_new(o, "hw_machine", json_string(plan->hw_profile->machine
                                                         ? plan->hw_profile->machine : ""));
    json_object_set_new(o, "vram_budget", ft_report_u64(plan->budget->vram_bytes));
    json_object_set_new(o, "ram_budget", ft_report_u64(plan->budget->ram_bytes));
    json_object_set_new(o, "ctx", json_integer(plan->budget->ctx));
    json_object_set_new(o, "vram_regions", regions);
    json_object_set_new(o, "vram_used", ft_report_u64(p->vram_used));
    json_object_set_new(o, "ram_needed", ft_report_u64(p->ram_needed));
    json_object_set_new(o, "ram_weights", ft_report_u64(p->ram_weights));
    json_object_set_new(o, "slot_bytes", ft_report_u64(p->slot_bytes));
    json_object_set_new(o, "n_slots", json_integer(p->n_slots));
    json_object_set_new(o, "n_pinned", json_integer(p->n_pinned));
    json_object_set_new(o, "n_gpu_layers", json_integer(p->n_gpu_layers));
    json_object_set_new(o, "output_on_gpu", json_boolean(p->output_on_gpu));
    json_object_set_new(o, "cpu_only", json_boolean(p->cpu_only));
    ft_report_layers_json(plan, o);
    json_object_set_new(o, "prefill_stream_tokens", json_integer(p->prefill_stream_tokens));
    json_object_set_new(o, "predicted", json_true());
    json_object_set_new(o, "predicted_decode_tok_s", json_real(p->predicted_decode_tok_s));
    json_object_set_new(o, "predicted_prefill_tok_s", json_real(p->predicted_prefill_tok_s));
    json_object_set_new(o, "bottleneck", json_string(ft_report_bottleneck_name(p->bottleneck)));
    json_object_set_new(o, "plan_note", json_string(p->note ? p->note : ""));
    return FT_OK;
}
