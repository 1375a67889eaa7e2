/* CPU facts: model, ISA flags, cores and RAM (base/cpu_facts.h, the reader
 * ft bench shares), caches (/sys/devices/system/cpu/cpu0/cache). */
#include "figure.h"
#include "profiler.h"

#include "base/cpu_facts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FT_HWP_CACHE_DIR "/sys/devices/system/cpu/cpu0/cache"

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
    ft_cpu_facts_t f;
    ft_cpu_facts_read(NULL, &f);
    if (cpu->model != protobuf_c_empty_string) free(cpu->model);
    if (!(cpu->model = ft_hwp_strdup(f.model)))
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cpu facts: out of memory");
    for (uint32_t i = 0; i < f.n_isa; i++)
        if (ft_hwp_push(&cpu->isa, &cpu->n_isa, ft_hwp_strdup(f.isa[i]), 0))
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cpu facts: out of memory");
    cpu->n_cores =
        ft_hwp_figure1((double)f.n_cores, FTHW__SOURCE__MEASURED, "sysconf(_SC_NPROCESSORS_ONLN)");
    cpu->n_physical_cores = ft_hwp_figure1((double)f.n_physical_cores, FTHW__SOURCE__MEASURED,
                                           "distinct core ids in /proc/cpuinfo");
    cpu->ram_bytes = ft_hwp_figure1((double)f.ram_bytes, FTHW__SOURCE__MEASURED,
                                    "sysconf(_SC_PHYS_PAGES * _SC_PAGESIZE)");
    if (!cpu->n_cores || !cpu->n_physical_cores || !cpu->ram_bytes)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cpu facts: out of memory");
    return ft_hwp_caches(cpu);
}
