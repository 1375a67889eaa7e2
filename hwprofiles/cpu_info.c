/* CPU facts: model, ISA flags (/proc/cpuinfo), cores and RAM (sysconf),
 * caches (/sys/devices/system/cpu/cpu0/cache). */
#include "figure.h"
#include "profiler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FT_HWP_CPUINFO "/proc/cpuinfo"
#define FT_HWP_CACHE_DIR "/sys/devices/system/cpu/cpu0/cache"

/* The value after "key<spaces>:" on a /proc/cpuinfo line, or NULL. */
static const char *ft_hwp_cpuinfo_value(const char *line, const char *key)
{
    size_t n = strlen(key);
    if (strncmp(line, key, n) != 0)
        return NULL;
    const char *p = line + n;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p != ':')
        return NULL;
    p++;
    while (*p == ' ')
        p++;
    return p;
}

/* cpuinfo flag -> the profile's name. x86 flags keep their names; arm64
 * "Features" are renamed to the usual ones. */
static const char *const ft_hwp_isa_map[][2] = {
    {"sse4_2", "sse4_2"},           {"avx", "avx"},
    {"avx2", "avx2"},               {"fma", "fma"},
    {"f16c", "f16c"},               {"avx_vnni", "avx_vnni"},
    {"avx512f", "avx512f"},         {"avx512bw", "avx512bw"},
    {"avx512vl", "avx512vl"},       {"avx512_vnni", "avx512_vnni"},
    {"avx512_bf16", "avx512_bf16"}, {"avx512_fp16", "avx512_fp16"},
    {"amx_tile", "amx"},            {"amx_bf16", "amx_bf16"},
    {"amx_int8", "amx_int8"},       {"asimd", "neon"},
    {"asimddp", "dotprod"},         {"i8mm", "i8mm"},
    {"bf16", "bf16"},               {"sve", "sve"},
    {"sve2", "sve2"},               {"fphp", "fp16"},
};

static int ft_hwp_isa(Fthw__Cpu *cpu, const char *flags)
{
    size_t n_map = sizeof(ft_hwp_isa_map) / sizeof(ft_hwp_isa_map[0]);
    for (size_t i = 0; i < n_map; i++) {
        const char *want = ft_hwp_isa_map[i][0];
        size_t wn = strlen(want);
        for (const char *p = flags; (p = strstr(p, want)) != NULL; p += wn) {
            int starts = p == flags || p[-1] == ' ';
            int ends = p[wn] == 0 || p[wn] == ' ' || p[wn] == '\n';
            if (starts && ends) {
                if (ft_hwp_push(&cpu->isa, &cpu->n_isa, ft_hwp_strdup(ft_hwp_isa_map[i][1]), 0))
                    return -1;
                break;
            }
        }
    }
    return 0;
}

/* Model and flags from the first processor's block; physical cores as the
 * number of distinct (physical id, core id) pairs. */
FT_WARN_UNUSED static ft_status_t ft_hwp_cpuinfo(Fthw__Cpu *cpu, uint32_t *out_physical)
{
    *out_physical = 0;
    FILE *fp = fopen(FT_HWP_CPUINFO, "r");
    if (!fp)
        return FT_OK; /* not Linux, or /proc not mounted: no model, no flags */
    char line[8192];
    int have_flags = 0, phys = -1;
    uint32_t pairs[1024], n_pairs = 0;
    ft_status_t st = FT_OK;
    while (fgets(line, sizeof(line), fp)) {
        line[strcspn(line, "\n")] = 0;
        const char *v;
        if (!cpu->model || !*cpu->model) {
            if ((v = ft_hwp_cpuinfo_value(line, "model name")) ||
                (v = ft_hwp_cpuinfo_value(line, "Model")) ||
                (v = ft_hwp_cpuinfo_value(line, "Hardware"))) {
                free(cpu->model == protobuf_c_empty_string ? NULL : cpu->model);
                if (!(cpu->model = ft_hwp_strdup(v)))
                    goto oom;
            }
        }
        if (!have_flags && ((v = ft_hwp_cpuinfo_value(line, "flags")) ||
                            (v = ft_hwp_cpuinfo_value(line, "Features")))) {
            have_flags = 1;
            if (ft_hwp_isa(cpu, v))
                goto oom;
        }
        if ((v = ft_hwp_cpuinfo_value(line, "physical id")))
            phys = atoi(v);
        if ((v = ft_hwp_cpuinfo_value(line, "core id")) && n_pairs < 1024) {
            uint32_t key = ((uint32_t)phys << 16) ^ (uint32_t)atoi(v);
            uint32_t k = 0;
            while (k < n_pairs && pairs[k] != key)
                k++;
            if (k == n_pairs)
                pairs[n_pairs++] = key;
        }
    }
    *out_physical = n_pairs;
    fclose(fp);
    return st;
oom:
    fclose(fp);
    return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "reading " FT_HWP_CPUINFO ": out of memory");
}

/* First line of a sysfs file, or "" when it cannot be read. */
static void ft_hwp_read_line(const char *path, char *buf, size_t cap)
{
    buf[0] = 0;
    FILE *fp = fopen(path, "r");
    if (!fp)
        return;
    if (!fgets(buf, (int)cap, fp))
        buf[0] = 0;
    buf[strcspn(buf, "\n")] = 0;
    fclose(fp);
}

/* "48K", "1024K", "32M" -> bytes. */
static uint64_t ft_hwp_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end == 'K')
        v <<= 10;
    else if (*end == 'M')
        v <<= 20;
    else if (*end == 'G')
        v <<= 30;
    return v;
}

/* "0-1,4,6-7" -> 5. */
static uint32_t ft_hwp_count_list(const char *s)
{
    uint32_t n = 0;
    while (*s) {
        char *end;
        unsigned long a = strtoul(s, &end, 10), b = a;
        if (end == s)
            break;
        if (*end == '-')
            b = strtoul(end + 1, &end, 10);
        if (b >= a && b - a < 1u << 20)
            n += (uint32_t)(b - a + 1);
        s = *end == ',' ? end + 1 : end;
        if (*s && *s != ',' && (*s < '0' || *s > '9'))
            break;
    }
    return n;
}

FT_WARN_UNUSED static ft_status_t ft_hwp_caches(Fthw__Cpu *cpu)
{
    for (int i = 0; i < 16; i++) {
        char path[128], level[16], type[32], size[32], shared[256];
        snprintf(path, sizeof(path), FT_HWP_CACHE_DIR "/index%d/level", i);
        ft_hwp_read_line(path, level, sizeof(level));
        if (!level[0])
            break;
        snprintf(path, sizeof(path), FT_HWP_CACHE_DIR "/index%d/type", i);
        ft_hwp_read_line(path, type, sizeof(type));
        snprintf(path, sizeof(path), FT_HWP_CACHE_DIR "/index%d/size", i);
        ft_hwp_read_line(path, size, sizeof(size));
        snprintf(path, sizeof(path), FT_HWP_CACHE_DIR "/index%d/shared_cpu_list", i);
        ft_hwp_read_line(path, shared, sizeof(shared));
        Fthw__Cache *c = malloc(sizeof(*c));
        if (!c)
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cache facts: out of memory");
        fthw__cache__init(c);
        c->level = (uint32_t)atoi(level);
        c->shared_by_cpus = ft_hwp_count_list(shared);
        snprintf(path, sizeof(path), "sysfs cpu0/cache/index%d/size", i);
        c->type = ft_hwp_strdup(type);
        c->size_bytes = ft_hwp_figure1((double)ft_hwp_size(size), FTHW__SOURCE__MEASURED, path);
        if (!c->type || !c->size_bytes) {
            fthw__cache__free_unpacked(c, NULL);
            c = NULL;
        }
        if (ft_hwp_push(&cpu->caches, &cpu->n_caches, c, 1))
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cache facts: out of memory");
    }
    return FT_OK;
}

ft_status_t ft_hwp_cpu_facts(Fthw__Cpu *cpu)
{
    uint32_t physical;
    ft_status_t st = ft_hwp_cpuinfo(cpu, &physical);
    if (st)
        return st;
    if (!cpu->model || !*cpu->model) {
        if (cpu->model != protobuf_c_empty_string)
            free(cpu->model);
        if (!(cpu->model = ft_hwp_strdup("unknown CPU")))
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cpu facts: out of memory");
    }
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (online < 1)
        online = 1;
    if (physical == 0 || physical > (uint32_t)online)
        physical = (uint32_t)online;
    cpu->n_cores = ft_hwp_figure1((double)online, FTHW__SOURCE__MEASURED, "sysconf(_SC_NPROCESSORS_ONLN)");
    cpu->n_physical_cores =
        ft_hwp_figure1((double)physical, FTHW__SOURCE__MEASURED, "distinct core ids in /proc/cpuinfo");
    cpu->ram_bytes = ft_hwp_figure1(pages > 0 && page > 0 ? (double)pages * (double)page : 0,
                                    FTHW__SOURCE__MEASURED, "sysconf(_SC_PHYS_PAGES * _SC_PAGESIZE)");
    if (!cpu->n_cores || !cpu->n_physical_cores || !cpu->ram_bytes)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cpu facts: out of memory");
    return ft_hwp_caches(cpu);
}
