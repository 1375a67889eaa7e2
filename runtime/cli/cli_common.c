#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int ft_cli_fail(ft_status_t st)
{
    fprintf(stderr, "ft: error: %s\n", ft_status_message(st));
    ft_status_free(st);
    return 1;
}

double ft_cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

ft_status_t ft_cli_parse_tokens(const char *s, int32_t **out_ids, uint32_t *out_n)
{
    *out_ids = NULL;
    *out_n = 0;
    size_t cap = 1;
    for (const char *p = s; *p; p++)
        cap += *p == ',';
    int32_t *ids = malloc(cap * sizeof(int32_t));
    if (!ids)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    uint32_t n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < INT32_MIN || v > INT32_MAX || (*end && *end != ',')) {
            free(ids);
            return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                                  "token list: '%s' is not a comma-separated list of integers (at character %ld)",
                                  s, (long)(p - s));
        }
        ids[n++] = (int32_t)v;
        p = *end ? end + 1 : end;
    }
    if (n == 0) {
        free(ids);
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "token list is empty");
    }
    *out_ids = ids;
    *out_n = n;
    return FT_OK;
}

ft_status_t ft_cli_parse_u32(const char *name, const char *s, uint32_t *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (end == s || *end || errno || v > UINT32_MAX || s[0] == '-')
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "%s: '%s' is not a non-negative integer", name, s);
    *out = (uint32_t)v;
    return FT_OK;
}

ft_status_t ft_cli_parse_float(const char *name, const char *s, float *out)
{
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (end == s || *end || errno)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "%s: '%s' is not a number", name, s);
    *out = v;
    return FT_OK;
}

void ft_cli_json_string(FILE *out, const char *s, size_t n)
{
    fputc('"', out);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (c < 0x20)
                fprintf(out, "\\u%04x", c);
            else
                fputc(c, out);
        }
    }
    fputc('"', out);
}

ft_status_t ft_cli_parse_size(const char *name, const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v >= 0) || s[0] == '-')
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "%s: '%s' is not a size (e.g. 512M, 8G)", name, s);
    double mult = 1;
    switch (*end) {
    case 'k': case 'K': mult = 1024.0; end++; break;
    case 'm': case 'M': mult = 1048576.0; end++; break;
    case 'g': case 'G': mult = 1073741824.0; end++; break;
    case 't': case 'T': mult = 1099511627776.0; end++; break;
    default: break;
    }
    if (mult > 1 && (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0 || strcmp(end, "b") == 0))
        end += strlen(end);
    if (*end)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "%s: '%s' is not a size (e.g. 512M, 8G)", name, s);
    double bytes = floor(v * mult);
    if (bytes > 9.0e18)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: '%s' is too large", name, s);
    *out = (uint64_t)bytes;
    return FT_OK;
}

ft_status_t ft_cli_parse_backend(const char *s, ft_backend_kind_t *out)
{
    if (strcmp(s, "cpu") == 0)
        *out = FT_BACKEND_CPU;
    else if (strcmp(s, "sim") == 0)
        *out = FT_BACKEND_SIM;
    else if (strcmp(s, "cuda") == 0)
        *out = FT_BACKEND_CUDA;
    else
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "--backend: '%s': expected cpu, sim or cuda", s);
    return FT_OK;
}

ft_status_t ft_cli_open_engine(const char *bundle, ft_engine_options_t *eo, ft_engine_t **out)
{
    ft_status_t st = ft_engine_open(bundle, eo, out);
    if (st && eo->backend == FT_BACKEND_CUDA && ft_status_code(st) == FT_STATUS_UNAVAILABLE) {
        fprintf(stderr, "ft: %s; running on the cpu backend\n", ft_status_message(st));
        ft_status_free(st);
        eo->backend = FT_BACKEND_CPU;
        st = ft_engine_open(bundle, eo, out);
    }
    /* The plan is authoritative: when the open solved the partition instead
     * of taking the stored one, say so once. */
    ft_engine_stats_t es;
    if (!st) {
        ft_engine_stats(*out, &es);
        if (es.plan_note && es.plan_note[0])
            fprintf(stderr, "ft: %s\n", es.plan_note);
        if (es.verify_note && es.verify_note[0])
            fprintf(stderr, "ft: %s\n", es.verify_note);
    }
    return st;
}

int ft_cli_engine_option(int c, const char *arg, ft_engine_options_t *eo, ft_status_t *st)
{
    switch (c) {
    case 0x100: *st = ft_cli_parse_u32("--threads", arg, &eo->n_threads); return 1;
    case 0x101: *st = ft_cli_parse_backend(arg, &eo->backend); return 1;
    case 0x102: eo->hw_profile = arg; *st = FT_OK; return 1;
    case 0x103: *st = ft_cli_parse_size("--vram", arg, &eo->vram_bytes); return 1;
    case 0x106: *st = ft_cli_parse_size("--kv-budget", arg, &eo->kv_budget_bytes); return 1;
    case 0x104:
        *st = FT_OK;
        if (strcmp(arg, "auto") == 0)
            eo->kernels = FT_KERNELS_AUTO;
        else if (strcmp(arg, "generated") == 0)
            eo->kernels = FT_KERNELS_GENERATED;
        else if (strcmp(arg, "reference") == 0)
            eo->kernels = FT_KERNELS_REFERENCE;
        else
            *st = ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                                 "--kernels: '%s': expected auto, generated or reference", arg);
        return 1;
    case 0x105:
        *st = FT_OK;
        if (strcmp(arg, "lazy") == 0)
            eo->verify = FT_VERIFY_LAZY;
        else if (strcmp(arg, "full") == 0)
            eo->verify = FT_VERIFY_FULL;
        else if (strcmp(arg, "off") == 0)
            eo->verify = FT_VERIFY_OFF;
        else
            *st = ft_status_make(FT_STATUS_INVALID_ARGUMENT, "--verify: '%s': expected lazy, full or off", arg);
        return 1;
    default: return 0;
    }
}
