/* ftc profile: measures this machine and writes the hardware profile.
 * The text form goes to -o FILE (or to stdout); --json prints the profile
 * as JSON on stdout; a human summary goes to stdout when the profile went
 * to a file, else to stderr. Progress on stderr when it is a terminal. */
#include "cmd_profile.h"
#include "ftc_help.h"
#include "profile_json.h"

#include "../hwprofiles/profiler.h"
#include "../runtime/format/textproto.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void ftc_profile_progress(void *user, const char *stage, double fraction)
{
    (void)user;
    fprintf(stderr, "\r\033[Kprofiling: %3.0f%% %s", fraction * 100.0, stage);
    if (fraction >= 1.0)
        fputc('\n', stderr);
    fflush(stderr);
}

static double ftc_med(const Fthw__Figure *f) { return f ? f->median : 0.0; }

static void ftc_profile_summary(const Fthw__Profile *p, FILE *out)
{
    const Fthw__Cpu *c = p->cpu;
    fprintf(out, "CPU: %s, %.0f logical / %.0f physical cores, %.1f GiB RAM\n", c->model,
            ftc_med(c->n_cores), ftc_med(c->n_physical_cores), ftc_med(c->ram_bytes) / (1 << 30));
    fprintf(out, "ISA:");
    for (size_t i = 0; i < c->n_isa; i++)
        fprintf(out, " %s", c->isa[i]);
    fprintf(out, "\ncaches:");
    for (size_t i = 0; i < c->n_caches; i++)
        fprintf(out, " L%u %s %.0f KiB;", c->caches[i]->level, c->caches[i]->type,
                ftc_med(c->caches[i]->size_bytes) / 1024);
    const Fthw__Figure *d = c->dram_read_gbs, *d1 = c->dram_read_1t_gbs;
    fprintf(out, "\nDRAM read: %.2f GB/s all threads (%.2f..%.2f, %u runs), %.2f GB/s one thread\n",
            ftc_med(d), d ? d->min : 0, d ? d->max : 0, d ? d->n_runs : 0, ftc_med(d1));
    fprintf(out, "CPU expert GEMV (weight GB/s, 1 token, all threads; fraction of DRAM read):\n");
    for (size_t i = 0; i < c->n_gemv; i++) {
        const Fthw__GemvRate *g = c->gemv[i];
        fprintf(out, "  %-5s %4ux%-4u %7.2f GB/s  %3.0f%%\n", g->format, g->rows, g->cols,
                ftc_med(g->weight_gbs), ftc_med(d) > 0 ? 100.0 * ftc_med(g->weight_gbs) / ftc_med(d) : 0.0);
    }
    for (size_t i = 0; i < p->n_gpus; i++) {
        const Fthw__Gpu *g = p->gpus[i];
        fprintf(out, "GPU %zu: %s (cc %u.%u), %.1f / %.1f GiB free; device memory %.0f GB/s\n", i, g->name,
                g->cc_major, g->cc_minor, ftc_med(g->vram_free_bytes) / (1 << 30),
                ftc_med(g->vram_total_bytes) / (1 << 30), ftc_med(g->hbm_gbs));
        fprintf(out, "  H2D %.2f GB/s, D2H %.2f GB/s, gather %.2f GB/s, launch %.2f us\n", ftc_med(g->h2d_gbs),
                ftc_med(g->d2h_gbs), ftc_med(g->gather_gbs), ftc_med(g->launch_us));
        fprintf(out, "  together: H2D %.2f GB/s while CPU GEMV %.2f GB/s\n", ftc_med(g->h2d_overlap_gbs),
                ftc_med(g->cpu_gemv_overlap_gbs));
    }
    if (p->n_gpus == 0)
        fprintf(out, "%s\n", p->gpu_note && *p->gpu_note ? p->gpu_note : "no GPU");
}

static int ftc_profile_write(const Fthw__Profile *p, const char *path)
{
    char *text = NULL;
    size_t len = 0;
    ft_status_t st = ft_textproto_print(&p->base,
                                        "Hardware profile written by `ftc profile` (hwprofile.proto).\n"
                                        "Bandwidths in GB/s (1e9 bytes/s), times in microseconds, sizes in bytes.",
                                        &text, &len);
    if (st) {
        fprintf(stderr, "ftc profile: error: %s\n", ft_status_message(st));
        ft_status_free(st);
        return 1;
    }
    FILE *fp = path ? fopen(path, "w") : stdout;
    int rc = 0;
    if (!fp || fwrite(text, 1, len, fp) != len || (path && fclose(fp) != 0)) {
        fprintf(stderr, "ftc profile: error: cannot write %s\n", path ? path : "stdout");
        rc = 1;
    }
    free(text);
    return rc;
}

int ftc_cmd_profile(int argc, char **argv)
{
    const char *out_path = NULL;
    int json = 0;
    ft_profile_options_t opts;
    ft_profile_options_init(&opts);
    static const struct option longopts[] = {
        {"output", required_argument, 0, 'o'}, {"quick", no_argument, 0, 'q'},
        {"json", no_argument, 0, 'j'},          {"threads", required_argument, 0, 't'},
        {"no-gpu", no_argument, 0, 'n'},        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': out_path = optarg; break;
        case 'q': opts.quick = 1; break;
        case 'j': json = 1; break;
        case 't': {
            char *end;
            unsigned long n = strtoul(optarg, &end, 10);
            if (*end || n == 0 || n > 1024) {
                fprintf(stderr, "ftc profile: --threads %s: expected 1..1024\n", optarg);
                return 2;
            }
            opts.n_threads = (uint32_t)n;
            break;
        }
        case 'n': opts.skip_gpu = 1; break;
        case 'h':
            return ftc_help_print("profile");
        default:
            ftc_help_usage("profile", stderr);
            return 2;
        }
    }
    if (optind != argc) {
        ftc_help_usage("profile", stderr);
        return 2;
    }
    if (isatty(2))
        opts.progress = ftc_profile_progress;
    Fthw__Profile *p = NULL;
    ft_status_t st = ft_profile_measure(&opts, &p);
    if (st) {
        fprintf(stderr, "ftc profile: error: %s\n", ft_status_message(st));
        ft_status_free(st);
        return 1;
    }
    int rc = 0;
    if (out_path || !json)
        rc = ftc_profile_write(p, out_path);
    if (!rc && json) {
        json_t *j = ft_profile_to_json(p);
        if (!j || json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(6)) != 0) {
            fputs("ftc profile: error: cannot write JSON\n", stderr);
            rc = 1;
        }
        fputc('\n', stdout);
        json_decref(j);
    }
    if (!rc)
        ftc_profile_summary(p, out_path && !json ? stdout : stderr);
    fthw__profile__free_unpacked(p, NULL);
    return rc;
}
