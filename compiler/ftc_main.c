/* ftc: the freetoken compiler driver: inspect, compile, verify, profile,
 * plan (their help, and the man page's text, is ftc_help.c).
 *
 * Human output by default, --json for machines; progress on stderr when
 * stderr is a terminal. Exit codes: 0 ok, 1 failure, 2 usage. */
#include "../runtime/format/bundle.h"
#include "../runtime/plan/hw_profile.h"
#include "cmd_profile.h"
#include "cmd_plan.h"
#include "compile.h"
#include "cuda_codegen.h"
#include "../codegen/cpu/cg_cpu.h"
#include "ftc_help.h"
#include "import.h"
#include "plan_report.h"
#include "schedule_report.h"
#include "summary.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int ftc_fail(ft_status_t st)
{
    fprintf(stderr, "ftc: error: %s\n", ft_status_message(st));
    ft_status_free(st);
    return 1;
}

static double ftc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Progress on a terminal, at most ~10 updates a second. */
static void ftc_progress(void *user, const char *stage, uint64_t done, uint64_t total)
{
    static double last;
    double now = ftc_now();
    if (done < total && now - last < 0.1)
        return;
    last = now;
    double t0 = *(const double *)user;
    double mib = (double)done / (1 << 20);
    fprintf(stderr, "\r%s: %.1f / %.1f MiB (%3.0f%%), %.0f MiB/s   ", stage, mib,
            (double)total / (1 << 20), total ? 100.0 * (double)done / (double)total : 100.0,
            now > t0 ? mib / (now - t0) : 0.0);
    if (done >= total)
        fputc('\n', stderr);
}

static int ftc_inspect(int argc, char **argv)
{
    int json = 0, tensors = 0, ir = 0, schedule = 0;
    const char *svg = NULL;
    static const struct option longopts[] = {
        {"json", no_argument, 0, 'j'}, {"tensors", no_argument, 0, 't'}, {"ir", no_argument, 0, 'i'},
        {"schedule", no_argument, 0, 'S'}, {"svg", required_argument, 0, 's'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 't': tensors = 1; break;
        case 'i': ir = 1; break;
        case 'S': schedule = 1; break;
        case 's': svg = optarg; break;
        case 'h':
            return ftc_help_print("inspect");
        default:
            ftc_help_usage("inspect", stderr);
            return 2;
        }
    }
    if (optind + 1 != argc) {
        fputs("ftc inspect: exactly one MODEL_OR_BUNDLE is needed\n", stderr);
        return 2;
    }
    const char *path = argv[optind];
    if (svg && !ft_bundle_is_bundle(path)) {
        fputs("ftc inspect: --svg draws a compiled bundle's partition\n", stderr);
        return 2;
    }
    ft_summary_t s;
    ft_status_t st;
    if (ft_bundle_is_bundle(path)) {
        if (ir) {
            fputs("ftc inspect: --ir is for models, not bundles\n", stderr);
            return 2;
        }
        if (schedule && json) {
            fputs("ftc inspect: --json always includes the schedule; --schedule is its text form\n", stderr);
            return 2;
        }
        ft_bundle_t *b = NULL;
        if ((st = ft_bundle_open(path, &b)))
            return ftc_fail(st);
        if (svg && (st = ft_plan_svg_write(b->plan, svg))) {
            ft_bundle_close(b);
            return ftc_fail(st);
        }
        if (schedule) {
            ft_schedule_print(b->plan, stdout);
            ft_bundle_close(b);
            return 0;
        }
        st = ft_summary_from_plan(b->plan, b->plan_file->data, b->plan_file->size, &s);
        if (!st)
            st = json ? ft_summary_print_json(&s, tensors, stdout) : (ft_summary_print(&s, tensors, stdout), FT_OK);
        ft_summary_release(&s);
        ft_bundle_close(b);
        return st ? ftc_fail(st) : 0;
    }
    if (schedule) {
        fputs("ftc inspect: --schedule shows a compiled bundle's program\n", stderr);
        return 2;
    }
    ft_ir_model_t *m = NULL;
    if ((st = ft_import_model(path, &m)))
        return ftc_fail(st);
    if (ir) {
        ft_ir_model_print(m, stdout);
    } else {
        st = ft_summary_from_ir(m, &s);
        if (!st)
            st = json ? ft_summary_print_json(&s, tensors, stdout) : (ft_summary_print(&s, tensors, stdout), FT_OK);
        ft_summary_release(&s);
    }
    ft_ir_model_destroy(m);
    return st ? ftc_fail(st) : 0;
}

/* Kernel build steps on a terminal: one line each. */
static void ftc_stage(void *user, const char *what)
{
    double t0 = *(const double *)user;
    fprintf(stderr, "%s (at %.1f s)\n", what, ftc_now() - t0);
}

/* Calibration progress on a terminal: tokens evaluated of the total. */
static void ftc_calib_progress(void *user, const char *stage, uint64_t done, uint64_t total)
{
    static double last;
    double now = ftc_now();
    if (done < total && now - last < 0.1)
        return;
    last = now;
    double t0 = *(const double *)user;
    fprintf(stderr, "\r%s: %llu / %llu tokens (%3.0f%%), %.0f tok/s   ", stage,
            (unsigned long long)done, (unsigned long long)total,
            total ? 100.0 * (double)done / (double)total : 100.0,
            now > t0 ? (double)done / (now - t0) : 0.0);
    if (done >= total)
        fputc('\n', stderr);
}

static int ftc_compile_bad(const char *what, const char *arg)
{
    fprintf(stderr, "ftc compile: %s '%s'\n", what, arg);
    return 2;
}

/* Parses compile's options into opts; 0 when parsed, else the exit code. */
static int ftc_compile_args(int argc, char **argv, ft_compile_options_t *opts,
                            const char **out_dir, const char **hw, int *json, int *quiet)
{
    static const struct option longopts[] = {
        {"output", required_argument, 0, 'o'}, {"format", required_argument, 0, 'f'},
        {"json", no_argument, 0, 'j'},          {"quiet", no_argument, 0, 'q'},
        {"hw", required_argument, 0, 'w'},      {"vram", required_argument, 0, 'v'},
        {"ram", required_argument, 0, 'r'},     {"ctx", required_argument, 0, 'c'},
        {"calibrate", required_argument, 0, 'k'}, {"help", no_argument, 0, 'h'},
        {"cpu-isa", required_argument, 0, 'I'}, {"cuda-arch", required_argument, 0, 'A'},
        {"kv", required_argument, 0, 'K'},      {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "o:f:qh", longopts, NULL)) != -1) {
        char *end = NULL;
        unsigned long long v;
        switch (c) {
        case 'o': *out_dir = optarg; break;
        case 'f':
            opts->format = ft_dtype_from_name(optarg);
            opts->mix = ft_quant_mix_from_name(optarg);
            if (opts->mix == FT_QUANT_MIX_NONE && !ft_dtype_has(opts->format, FT_DTYPE_FLAG_WEIGHT)) {
                char list[256], what[340];
                snprintf(what, sizeof(what), "--format: expected a mix (q3_k_m, q4_k_m or q5_k_m) or %s, not",
                         ft_dtype_list(FT_DTYPE_FLAG_WEIGHT, "or", list, sizeof(list)));
                return ftc_compile_bad(what, optarg);
            }
            break;
        case 'K':
            if (strcmp(optarg, "f16") == 0)
                opts->kv_format = FT_DTYPE_F16;
            else if (strcmp(optarg, "f32") == 0)
                opts->kv_format = FT_DTYPE_F32;
            else
                return ftc_compile_bad("--kv: expected f16 or f32, not", optarg);
            break;
        case 'j': *json = 1; break;
        case 'q': *quiet = 1; break;
        case 'w': *hw = optarg; break;
        case 'v':
            if (!ftc_parse_size(optarg, &opts->budget.vram_bytes))
                return ftc_compile_bad("--vram: not a size:", optarg);
            break;
        case 'r':
            if (!ftc_parse_size(optarg, &opts->budget.ram_bytes))
                return ftc_compile_bad("--ram: not a size:", optarg);
            break;
        case 'c':
            v = strtoull(optarg, &end, 10);
            if (optarg[0] < '0' || optarg[0] > '9' || *end || v == 0 || v > (1u << 26))
                return ftc_compile_bad("--ctx: not a token count in [1, 2^26]:", optarg);
            opts->budget.ctx = (uint32_t)v;
            break;
        case 'k': opts->calibrate_path = optarg; break;
        case 'I':
            if (strcmp(optarg, "none") == 0)
                opts->cpu_isa = NULL;
            else if (ft_cg_cpu_isa_valid(optarg))
                opts->cpu_isa = optarg;
            else
                return ftc_compile_bad("--cpu-isa: expected avx512, avx2, portable or none, not",
                                       optarg);
            break;
        case 'A':
            if (strcmp(optarg, "none") == 0) {
                opts->n_cuda_archs = 0;
            } else {
                ft_status_t st = ft_cg_cuda_parse_archs(optarg, opts->cuda_archs,
                                                        FT_COMPILE_MAX_CUDA_ARCHS, &opts->n_cuda_archs);
                if (st) {
                    fprintf(stderr, "ftc compile: --cuda-arch: %s\n", ft_status_message(st));
                    ft_status_free(st);
                    return 2;
                }
                if (!ft_cg_cuda_nvrtc_available()) {
                    fputs("ftc compile: --cuda-arch: this ftc was built without NVRTC "
                          "(configure with -DFT_CUDA=ON), use --cuda-arch none\n", stderr);
                    return 2;
                }
            }
            break;
        case 'h':
            ftc_help_print("compile");
            return -1;
        default:
            ftc_help_usage("compile", stderr);
            return 2;
        }
    }
    if (optind + 1 != argc || !*out_dir) {
        fputs("ftc compile: MODEL and -o BUNDLE_DIR are needed\n", stderr);
        return 2;
    }
    if (!*hw && (opts->budget.vram_bytes || opts->budget.ram_bytes || opts->budget.ctx)) {
        fputs("ftc compile: --vram, --ram and --ctx plan for a machine: give --hw PROFILE\n",
              stderr);
        return 2;
    }
    return 0;
}

static int ftc_compile(int argc, char **argv)
{
    const char *out_dir = NULL, *hw = NULL;
    int json = 0, quiet = 0;
    ft_compile_options_t opts;
    ft_compile_options_init(&opts);
    if (ft_cg_cuda_nvrtc_available()) { /* CUDA kernels by default where they can be built */
        memcpy(opts.cuda_archs, ft_cg_cuda_default_archs, sizeof(ft_cg_cuda_default_archs));
        opts.n_cuda_archs = sizeof(ft_cg_cuda_default_archs) / sizeof(ft_cg_cuda_default_archs[0]);
    }
    int rc = ftc_compile_args(argc, argv, &opts, &out_dir, &hw, &json, &quiet);
    if (rc)
        return rc < 0 ? 0 : rc;
    Fthw__Profile *profile = NULL;
    ft_status_t st;
    if (hw && (st = ft_hw_profile_load(hw, &profile)))
        return ftc_fail(st);
    opts.hw_profile = profile;
    double t0 = ftc_now();
    if (!quiet && !json && isatty(2)) {
        opts.progress = ftc_progress;
        opts.progress_user = &t0;
        opts.calibrate_progress = ftc_calib_progress;
        opts.calibrate_user = &t0;
        opts.stage = ftc_stage;
    }
    ft_ir_model_t *m = NULL;
    st = ft_import_model(argv[optind], &m);
    if (!st)
        st = ft_compile_bundle(m, &opts, out_dir);
    ft_ir_model_destroy(m);
    if (profile)
        fthw__profile__free_unpacked(profile, NULL);
    if (st)
        return ftc_fail(st);
    double secs = ftc_now() - t0;
    ft_bundle_t *b = NULL;
    if ((st = ft_bundle_open(out_dir, &b)))
        return ftc_fail(ft_status_annotate(st, "reading back the bundle just written"));
    ft_summary_t s;
    if ((st = ft_summary_from_plan(b->plan, b->plan_file->data, b->plan_file->size, &s))) {
        ft_bundle_close(b);
        return ftc_fail(st);
    }
    if (json)
        printf("{\"bundle\": \"%s\", \"plan_bytes\": %llu, \"plan_hash\": \"%s\", "
               "\"weights_bytes\": %llu, \"weights_hash\": \"%s\", \"seconds\": %.3f}\n",
               out_dir, (unsigned long long)s.plan_bytes, s.plan_hash,
               (unsigned long long)s.weights_file_bytes, s.weights_hash, secs);
    else if (!quiet)
        printf("compiled %s -> %s: plan.ftp %llu bytes, weights.ftw %llu bytes, %.2f s\n",
               argv[optind], out_dir, (unsigned long long)s.plan_bytes,
               (unsigned long long)s.weights_file_bytes, secs);
    ft_summary_release(&s);
    ft_bundle_close(b);
    return 0;
}

static int ftc_verify(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
        return ftc_help_print("verify");
    if (argc != 2 || argv[1][0] == '-') {
        fputs("ftc verify: exactly one BUNDLE is needed\n", stderr);
        return 2;
    }
    ft_bundle_t *b = NULL;
    ft_status_t st = ft_bundle_open(argv[1], &b);
    if (!st)
        st = ft_bundle_verify(b);
    ft_bundle_close(b);
    if (st)
        return ftc_fail(st);
    printf("%s: ok (plan and weights agree, weight hash verified)\n", argv[1]);
    return 0;
}

static int ftc_version(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
        return ftc_help_print("version");
    if (argc > 1) {
        fputs("ftc version: takes no arguments\n", stderr);
        return 2;
    }
    printf("ftc %s\n", FT_PRODUCER_VERSION);
    return 0;
}

static int ftc_help(int argc, char **argv)
{
    if (argc == 1) {
        ftc_help_overview(stdout);
        return 0;
    }
    const int self = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0;
    if (argc > 2 || !ftc_help_find(self ? "help" : argv[1])) {
        fprintf(stderr, "ftc help: no command '%s'; ftc help lists them\n", argv[1]);
        return 2;
    }
    return ftc_help_print(self ? "help" : argv[1]);
}

/* The commands; each has its help in ftc_help.c (test_cli_help.sh checks
 * that every command the overview lists runs). */
static const struct {
    const char *name;
    int (*main)(int argc, char **argv);
} ftc_commands[] = {
    {"inspect", ftc_inspect},     {"compile", ftc_compile}, {"verify", ftc_verify},
    {"profile", ftc_cmd_profile}, {"plan", ftc_cmd_plan},   {"version", ftc_version},
    {"help", ftc_help},
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        ftc_help_overview(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0) cmd = "version";
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) cmd = "help";
    for (size_t i = 0; i < sizeof(ftc_commands) / sizeof(ftc_commands[0]); i++)
        if (strcmp(cmd, ftc_commands[i].name) == 0) return ftc_commands[i].main(argc - 1, argv + 1);
    fprintf(stderr, "ftc: unknown command '%s'\n\n", cmd);
    ftc_help_overview(stderr);
    return 2;
}
