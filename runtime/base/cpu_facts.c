#include "cpu_facts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The value after "key<spaces>:" on a /proc/cpuinfo line, or NULL. */
static const char *ft_cpuinfo_value(const char *line, const char *key)
{
    size_t n = strlen(key);
    if (strncmp(line, key, n) != 0) return NULL;
    const char *p = line + n;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p != ':') return NULL;
    p++;
    while (*p == ' ')
        p++;
    return p;
}

/* cpuinfo flag -> the profile's name. x86 flags keep their names; arm64
 * "Features" are renamed to the usual ones. */
static const char *const ft_isa_map[][2] = {
    {"sse4_2", "sse4_2"},
    {"avx", "avx"},
    {"avx2", "avx2"},
    {"fma", "fma"},
    {"f16c", "f16c"},
    {"avx_vnni", "avx_vnni"},
    {"avx512f", "avx512f"},
    {"avx512bw", "avx512bw"},
    {"avx512vl", "avx512vl"},
    {"avx512_vnni", "avx512_vnni"},
    {"avx512_bf16", "avx512_bf16"},
    {"avx512_fp16", "avx512_fp16"},
    {"amx_tile", "amx"},
    {"amx_bf16", "amx_bf16"},
    {"amx_int8", "amx_int8"},
    {"asimd", "neon"},
    {"asimddp", "dotprod"},
    {"i8mm", "i8mm"},
    {"bf16", "bf16"},
    {"sve", "sve"},
    {"sve2", "sve2"},
    {"fphp", "fp16"},
};

/* The whole word want in the space-separated list flags. */
static int ft_has_flag(const char *flags, const char *want)
{
    const size_t wn = strlen(want);
    for (const char *p = flags; (p = strstr(p, want)) != NULL; p += wn)
        if ((p == flags || p[-1] == ' ' || p[-1] == '\t') &&
            (p[wn] == 0 || p[wn] == ' ' || p[wn] == '\t'))
            return 1;
    return 0;
}

static void ft_cpu_isa(ft_cpu_facts_t *out, const char *flags)
{
    const size_t n_map = sizeof(ft_isa_map) / sizeof(ft_isa_map[0]);
    _Static_assert(sizeof(ft_isa_map) / sizeof(ft_isa_map[0]) <= FT_CPU_FACTS_MAX_ISA,
                   "isa[] too small");
    for (size_t i = 0; i < n_map; i++)
        if (ft_has_flag(flags, ft_isa_map[i][0])) out->isa[out->n_isa++] = ft_isa_map[i][1];
}

/* Model and flags from the first processor's block; physical cores as the
 * number of distinct (physical id, core id) pairs. Returns that number. */
static uint32_t ft_cpuinfo(const char *path, ft_cpu_facts_t *out)
{
    FILE *fp = fopen(path, "r");
    if (!fp) return 0;
    char line[8192];
    int have_flags = 0, phys = -1;
    uint32_t pairs[1024], n_pairs = 0;
    while (fgets(line, sizeof(line), fp)) {
        line[strcspn(line, "\n")] = 0;
        const char *v;
        if (!out->model[0] &&
            ((v = ft_cpuinfo_value(line, "model name")) || (v = ft_cpuinfo_value(line, "Model")) ||
             (v = ft_cpuinfo_value(line, "Hardware"))))
            snprintf(out->model, sizeof(out->model), "%s", v);
        if (!have_flags &&
            ((v = ft_cpuinfo_value(line, "flags")) || (v = ft_cpuinfo_value(line, "Features")))) {
            have_flags = 1;
            ft_cpu_isa(out, v);
        }
        if ((v = ft_cpuinfo_value(line, "physical id"))) phys = atoi(v);
        if ((v = ft_cpuinfo_value(line, "core id")) && n_pairs < 1024) {
            uint32_t key = ((uint32_t)phys << 16) ^ (uint32_t)atoi(v);
            uint32_t k = 0;
            while (k < n_pairs && pairs[k] != key)
                k++;
            if (k == n_pairs) pairs[n_pairs++] = key;
        }
    }
    fclose(fp);
    return n_pairs;
}

void ft_cpu_facts_read(const char *cpuinfo, ft_cpu_facts_t *out)
{
    memset(out, 0, sizeof(*out));
    uint32_t physical = ft_cpuinfo(cpuinfo ? cpuinfo : FT_CPU_FACTS_CPUINFO, out);
    if (!out->model[0]) snprintf(out->model, sizeof(out->model), "unknown CPU");
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    out->n_cores = online < 1 ? 1 : (uint32_t)online;
    out->n_physical_cores = physical == 0 || physical > out->n_cores ? out->n_cores : physical;
    out->ram_bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}
