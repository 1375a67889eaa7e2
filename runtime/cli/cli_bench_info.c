/* ft bench --json's reproducibility record (cli_bench_info.h). Keys:
 *
 *   bundle   path, plan_hash, weights_hash (as ftc inspect --json reports
 *            them), plan_bytes, weights_bytes, arch, source (the model's
 *            file name), producer (the ftc that compiled it)
 *   machine  cpu_model, n_cores, n_physical_cores, isa, ram_bytes, os,
 *            arch, and dram_read_gbs (median, min, max, runs) measured in
 *            this run
 *   profile  the machine the plan was solved for (source "bundle") or the
 *            --hw profile the sim or cuda backend used (source "hw", path):
 *            machine, tool, quick, cpu_model, n_cores, isa, ram_bytes,
 *            dram_read_gbs, gpus (name, cc, vram_bytes, h2d_gbs); null
 *            when there is none
 *   build    version, revision, compiler, build_type, c_flags, system,
 *            cmake_options
 *   argv     the command line */
#include "cli_bench_info.h"

#include "cli.h"

#include "base/cpu_facts.h"
#include "format/bundle.h"
#include "plan/hw_profile.h"

#include "ft_build_info.h"
#include "ft_build_revision.h"

#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

char *ft_cli_bench_argv_json(int argc, char *const *argv)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    fputs("[\"ft\"", f);
    for (int i = 0; i < argc; i++) {
        fputs(", ", f);
        ft_cli_json_string(f, argv[i], strlen(argv[i]));
    }
    fputc(']', f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

static void ft_info_key_string(FILE *f, const char *key, const char *value)
{
    fprintf(f, "\"%s\": ", key);
    ft_cli_json_string(f, value ? value : "", value ? strlen(value) : 0);
}

static void ft_info_bundle(FILE *f, const char *path, const ft_bundle_t *b)
{
    const Ftplan__Plan *p = b->plan;
    char plan_hex[FT_BUNDLE_PLAN_HEX_BYTES], weights_hex[FT_BUNDLE_WEIGHTS_HEX_BYTES];
    ft_bundle_ids(p, b->plan_file->data, b->plan_file->size, plan_hex, weights_hex);
    fputs(", \"bundle\": {", f);
    ft_info_key_string(f, "path", path);
    fprintf(f,
            ", \"plan_hash\": \"%s\", \"weights_hash\": \"%s\", \"plan_bytes\": %llu, "
            "\"weights_bytes\": %llu, ",
            plan_hex, weights_hex, (unsigned long long)b->plan_file->size,
            (unsigned long long)(p->n_weight_files ? p->weight_files[0]->size : 0));
    ft_info_key_string(f, "arch", p->hparams ? p->hparams->arch_name : "");
    fputs(", ", f);
    ft_info_key_string(f, "source", p->source ? p->source->name : "");
    fputs(", ", f);
    ft_info_key_string(f, "producer", p->producer);
    fputc('}', f);
}

static void ft_info_isa(FILE *f, const char *const *isa, size_t n)
{
    fputs("\"isa\": [", f);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ", " : "", f);
        ft_cli_json_string(f, isa[i], strlen(isa[i]));
    }
    fputc(']', f);
}

/* This machine, as the OS describes it, and its DRAM bandwidth now. */
static void ft_info_machine(FILE *f, const ft_membw_result_t *bw)
{
    ft_cpu_facts_t c;
    ft_cpu_facts_read(NULL, &c);
    struct utsname u;
    char os[2 * sizeof(u.sysname) + 2] = "";
    const char *arch = "";
    if (uname(&u) == 0) {
        snprintf(os, sizeof(os), "%s %s", u.sysname, u.release);
        arch = u.machine;
    }
    fputs(", \"machine\": {", f);
    ft_info_key_string(f, "cpu_model", c.model);
    fprintf(f, ", \"n_cores\": %u, \"n_physical_cores\": %u, ", c.n_cores, c.n_physical_cores);
    ft_info_isa(f, c.isa, c.n_isa);
    fprintf(f, ", \"ram_bytes\": %llu, ", (unsigned long long)c.ram_bytes);
    ft_info_key_string(f, "os", os);
    fputs(", ", f);
    ft_info_key_string(f, "arch", arch);
    fprintf(f,
            ", \"dram_read_gbs\": %.3f, \"dram_read_gbs_min\": %.3f, \"dram_read_gbs_max\": %.3f, "
            "\"dram_runs\": %u}",
            bw->median_gbs, bw->min_gbs, bw->max_gbs, bw->n_runs);
}

static double ft_info_median(const Fthw__Figure *fig)
{
    return fig ? fig->median : 0.0;
}

static void ft_info_profile(FILE *f, const Fthw__Profile *p, const char *hw_path)
{
    fputs(", \"profile\": ", f);
    if (!p) {
        fputs("null", f);
        return;
    }
    fprintf(f, "{\"source\": \"%s\", \"path\": ", hw_path ? "hw" : "bundle");
    if (hw_path)
        ft_cli_json_string(f, hw_path, strlen(hw_path));
    else
        fputs("null", f);
    fputs(", ", f);
    ft_info_key_string(f, "machine", p->machine);
    fputs(", ", f);
    ft_info_key_string(f, "tool", p->tool);
    fprintf(f, ", \"quick\": %s", p->quick ? "true" : "false");
    const Fthw__Cpu *c = p->cpu;
    if (c) {
        fputs(", ", f);
        ft_info_key_string(f, "cpu_model", c->model);
        fprintf(f, ", \"n_cores\": %.0f, ", ft_info_median(c->n_cores));
        ft_info_isa(f, (const char *const *)c->isa, c->n_isa);
        fprintf(f, ", \"ram_bytes\": %.0f, \"dram_read_gbs\": %.3f", ft_info_median(c->ram_bytes),
                ft_info_median(c->dram_read_gbs));
    }
    fputs(", \"gpus\": [", f);
    for (size_t i = 0; i < p->n_gpus; i++) {
        const Fthw__Gpu *g = p->gpus[i];
        fprintf(f, "%s{", i ? ", " : "");
        ft_info_key_string(f, "name", g->name);
        fprintf(f, ", \"cc\": \"%u.%u\", \"vram_bytes\": %.0f, \"h2d_gbs\": %.3f}", g->cc_major,
                g->cc_minor, ft_info_median(g->vram_total_bytes), ft_info_median(g->h2d_gbs));
    }
    fputs("]}", f);
}

static void ft_info_build(FILE *f)
{
    fputs(", \"build\": {\"version\": \"" FT_BUILD_VERSION "\", \"revision\": \"" FT_BUILD_REVISION
          "\", \"compiler\": \"" FT_BUILD_COMPILER "\", \"build_type\": \"" FT_BUILD_TYPE
          "\", \"c_flags\": \"" FT_BUILD_C_FLAGS "\", \"system\": \"" FT_BUILD_SYSTEM
          "\", \"cmake_options\": {" FT_BUILD_OPTIONS_JSON "}}",
          f);
}

ft_status_t ft_cli_bench_info(const ft_bench_info_in_t *in, char **out)
{
    *out = NULL;
    ft_bundle_t *b = NULL;
    Fthw__Profile *hw = NULL;
    char *buf = NULL;
    size_t len = 0;
    ft_status_t st = ft_bundle_open(in->bundle, &b);
    const int use_hw = in->hw_modelled && in->hw_path;
    if (!st && use_hw) st = ft_hw_profile_load(in->hw_path, &hw);
    FILE *f = st ? NULL : open_memstream(&buf, &len);
    if (!st && !f) st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "bench record: out of memory");
    if (!st) {
        ft_info_bundle(f, in->bundle, b);
        ft_info_machine(f, in->dram);
        ft_info_profile(f, use_hw ? hw : b->plan->hw_profile, use_hw ? in->hw_path : NULL);
        ft_info_build(f);
        fprintf(f, ", \"argv\": %s", in->argv_json);
        if (fclose(f) != 0)
            st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "bench record: out of memory");
    }
    if (!st)
        *out = buf;
    else
        free(buf);
    if (hw) fthw__profile__free_unpacked(hw, NULL);
    ft_bundle_close(b);
    return st;
}
